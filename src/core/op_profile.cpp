// The op profile (declared in ctk/core/op_profile.h).
#include "ctk/core/op_profile.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "ctk/core/cuda.h"
#include "ctk/core/error.h"

namespace ctk {

namespace {

using Clock = std::chrono::steady_clock;

std::atomic<bool>& enabled_flag() {
    static std::atomic<bool> on = [] {
        const char* v = std::getenv("CTK_PROFILE_OPS");
        return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
    }();
    return on;
}

struct Totals {
    int64_t calls = 0;
    double host_s = 0.0, gpu_ms = 0.0, wait_s = 0.0;
    int64_t waits = 0;
};

// A scope's events, read once the GPU has passed them (reading at once would wait for the GPU at every
// op and change what is measured).
struct Pending {
    std::string key;
    std::unique_ptr<cuda::Event> start, end;
};

struct Profile {
    std::mutex mutex;
    std::map<std::string, Totals> totals;
    std::vector<Pending> pending;
    std::map<int, std::vector<std::unique_ptr<cuda::Event>>> free_events;  // per device index
};

Profile& profile() {
    static Profile* p = new Profile;  // never destroyed: scopes may close during static destruction
    return *p;
}

constexpr size_t kMaxPending = 4096;

std::atomic<bool> g_sync_gpu{false};  // the host waits for the GPU at the end of each op

thread_local bool t_flushing = false;  // the profiler's own waits are nobody's

std::unique_ptr<cuda::Event> take_event(Profile& p, Device device) {
    {
        std::lock_guard<std::mutex> lock(p.mutex);
        auto& pool = p.free_events[device.index];
        if (!pool.empty()) {
            auto e = std::move(pool.back());
            pool.pop_back();
            return e;
        }
    }
    return std::make_unique<cuda::Event>(device);
}

// Keeps the profiler's own waits off the scope open on this thread, however the wait ends.
struct FlushingGuard {
    FlushingGuard() { t_flushing = true; }
    ~FlushingGuard() { t_flushing = false; }
};

// Reads pending pairs' GPU times and returns their events to the pool: all of them (waiting for the last),
// or with `finished_only` those the GPU has passed, from the oldest on, without waiting. A pair whose read
// throws (a sticky CUDA error) is dropped with the rest of the batch taken; the pending list stays valid.
void flush_locked(Profile& p, bool finished_only = false) {
    FlushingGuard guard;
    size_t done = 0;
    try {
        for (; done < p.pending.size(); ++done) {
            Pending& q = p.pending[done];
            if (finished_only && !q.end->ready()) break;
            q.end->synchronize();
            p.totals[q.key].gpu_ms += static_cast<double>(q.start->elapsed_ms(*q.end));
            const int index = q.start->device().index;
            p.free_events[index].push_back(std::move(q.start));
            p.free_events[index].push_back(std::move(q.end));
        }
    } catch (...) {
        p.pending.erase(p.pending.begin(), p.pending.begin() + static_cast<std::ptrdiff_t>(done + 1));
        throw;
    }
    p.pending.erase(p.pending.begin(), p.pending.begin() + static_cast<std::ptrdiff_t>(done));
}

}  // namespace

bool op_profile_enabled() {
    return enabled_flag().load(std::memory_order_relaxed);
}

void set_op_profile(bool on) {
    enabled_flag().store(on, std::memory_order_relaxed);
}

void reset_op_profile() {
    Profile& p = profile();
    std::lock_guard<std::mutex> lock(p.mutex);
    flush_locked(p);
    p.totals.clear();
}

std::vector<OpProfileEntry> op_profile() {
    Profile& p = profile();
    std::lock_guard<std::mutex> lock(p.mutex);
    flush_locked(p);
    std::vector<OpProfileEntry> out;
    for (const auto& [key, t] : p.totals)
        out.push_back({key, t.calls, t.host_s * 1e3, t.gpu_ms, t.waits, t.wait_s * 1e3});
    std::sort(out.begin(), out.end(), [](const OpProfileEntry& a, const OpProfileEntry& b) {
        return a.gpu_ms != b.gpu_ms ? a.gpu_ms > b.gpu_ms : a.host_ms > b.host_ms;
    });
    return out;
}

std::string op_profile_table(int64_t steps) {
    const double n = static_cast<double>(std::max<int64_t>(steps, 1));
    std::string out;
    char line[256];
    std::snprintf(line, sizeof line, "%-44s %9s %10s %10s %9s %10s\n", "op (per step)", "calls", "host ms",
                  "GPU ms", "waits", "wait ms");
    out += line;
    OpProfileEntry sum{"total", 0, 0.0, 0.0, 0, 0.0};
    for (const OpProfileEntry& e : op_profile()) {
        std::snprintf(line, sizeof line, "%-44s %9.1f %10.3f %10.3f %9.2f %10.3f\n", e.label.c_str(),
                      static_cast<double>(e.calls) / n, e.host_ms / n, e.gpu_ms / n,
                      static_cast<double>(e.host_waits) / n, e.wait_ms / n);
        out += line;
        sum.calls += e.calls;
        sum.host_ms += e.host_ms;
        sum.gpu_ms += e.gpu_ms;
        sum.host_waits += e.host_waits;
        sum.wait_ms += e.wait_ms;
    }
    std::snprintf(line, sizeof line, "%-44s %9.1f %10.3f %10.3f %9.2f %10.3f\n", "total (scopes may nest)",
                  static_cast<double>(sum.calls) / n, sum.host_ms / n, sum.gpu_ms / n,
                  static_cast<double>(sum.host_waits) / n, sum.wait_ms / n);
    out += line;
    return out;
}

void set_op_profile_gpu_sync(bool on) {
    g_sync_gpu.store(on, std::memory_order_relaxed);
}

namespace detail {

struct OpProfileScope::Open {
    std::string key;
    Clock::time_point t0;
    int64_t waits = 0;
    double wait_s = 0.0;
    Open* parent = nullptr;
    std::unique_ptr<cuda::Event> start;
};

namespace {
thread_local OpProfileScope::Open* t_innermost = nullptr;
}

OpProfileScope::OpProfileScope(const char* label, const char* phase, Device device) {
    if (!op_profile_enabled()) return;
    auto open = std::make_unique<Open>();
    open->key = std::string(label) + " " + phase;
    // Nothing is timed on the GPU while a CUDA Graph records: an event in the recording would be replayed.
    // Nor when the events fail (a sticky CUDA error): the op runs on, and reports its own error.
    if (device.is_cuda() && !cuda::recording_on_this_thread()) {
        try {
            auto start = take_event(profile(), device);
            start->record();
            open->start = std::move(start);
        } catch (...) {
        }
    }
    open->parent = t_innermost;
    open_ = open.release();
    t_innermost = open_;
    open_->t0 = Clock::now();
}

OpProfileScope::~OpProfileScope() {
    if (!open_) return;
    const double host_s = std::chrono::duration<double>(Clock::now() - open_->t0).count();
    std::unique_ptr<Open> open(open_);
    t_innermost = open->parent;
    Profile& p = profile();
    try {
        std::unique_ptr<cuda::Event> end;
        double synced_s = 0.0;
        if (open->start) {
            end = take_event(p, open->start->device());
            end->record();
            if (g_sync_gpu.load(std::memory_order_relaxed)) {
                // CNTK's sync_gpu: the op's host time takes in its GPU work (not counted as its wait).
                FlushingGuard guard;
                end->synchronize();
                synced_s = std::chrono::duration<double>(Clock::now() - open->t0).count() - host_s;
            }
        }
        std::lock_guard<std::mutex> lock(p.mutex);
        Totals& t = p.totals[open->key];
        t.calls += 1;
        t.host_s += host_s + synced_s;
        t.waits += open->waits;
        t.wait_s += open->wait_s;
        if (end) {
            p.pending.push_back({open->key, std::move(open->start), std::move(end)});
            // Only what the GPU has already passed: waiting here would drain its queue mid-step. Past
            // four times the limit (the GPU far behind) everything is read.
            if (p.pending.size() >= kMaxPending) flush_locked(p, p.pending.size() < 4 * kMaxPending);
        }
    } catch (...) {  // a diagnostic must not turn a step's error into a terminate()
    }
}

void note_host_wait(double seconds) {
    if (t_flushing || !t_innermost) return;
    t_innermost->waits += 1;
    t_innermost->wait_s += seconds;
}

}  // namespace detail
}  // namespace ctk
