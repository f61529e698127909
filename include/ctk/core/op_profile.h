// The op profile: where a step's time goes, per op (forward and backward apart), on the host and on the
// GPU, and how often the host waited for a GPU inside each. Off unless CTK_PROFILE_OPS=1 or
// set_op_profile(true); off, it costs one branch per op. It is a diagnostic for finding what makes a
// step slow (bench/ctk_bench prints it): GPU times come from CUDA events recorded around each op on the
// device's stream, which adds a little host time per op, and nothing is timed while a CUDA Graph records.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "ctk/core/device.h"

namespace ctk {

struct OpProfileEntry {
    std::string label;  // "convolution forward", "batch_normalization backward", "learner update", ...
    int64_t calls = 0;
    double host_ms = 0.0;    // host time inside the op's dispatch (waits included)
    double gpu_ms = 0.0;     // GPU time between the events around it (0 on the CPU)
    int64_t host_waits = 0;  // times the host waited for a GPU inside it (synchronize, event waits)
    double wait_ms = 0.0;    // host time spent in those waits
};

bool op_profile_enabled();
void set_op_profile(bool on);
void reset_op_profile();
// The entries so far, most GPU time first (then most host time). Waits for the GPU work it timed.
std::vector<OpProfileEntry> op_profile();
// The entries as a table, every figure divided by `steps` (per step), with totals.
std::string op_profile_table(int64_t steps);

// While on, the host waits for the GPU at the end of each timed op, so that host times hold the op's GPU
// work too (CNTK's profiler's sync_gpu, ctk/train/profiler.h).
void set_op_profile_gpu_sync(bool on);

namespace detail {

// Times what runs while it lives under `label` (the string must outlive the profile: a literal or an
// op's name kept by the graph); nested scopes count inside their own label only.
class OpProfileScope {
public:
    OpProfileScope(const char* label, const char* phase, Device device);
    ~OpProfileScope();
    OpProfileScope(const OpProfileScope&) = delete;
    OpProfileScope& operator=(const OpProfileScope&) = delete;

    struct Open;  // what an open scope has counted so far (op_profile.cpp)

private:
    Open* open_ = nullptr;  // null while profiling is off
};

// Counts a host wait for a GPU against the innermost open scope on this thread.
void note_host_wait(double seconds);

// Runs `wait` (a host wait for a GPU: cuda::synchronize, Event::synchronize) and, while profiling is on,
// counts it with its duration.
template <typename Wait>
void host_wait(Wait&& wait) {
    if (!op_profile_enabled()) return wait();
    const auto t0 = std::chrono::steady_clock::now();
    wait();
    note_host_wait(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace detail
}  // namespace ctk
