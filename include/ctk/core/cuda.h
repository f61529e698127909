// The CUDA runtime as ctk sees it: devices, their properties, one stream per device, synchronization.
// Declared in every build; without CUDA (CTK_HAVE_CUDA undefined) device_count() is 0 and the rest
// throws DeviceError. No CUDA type appears here, so users need no CUDA headers.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "ctk/core/device.h"
#include "ctk/core/dtype.h"
#include "ctk/core/shape.h"

namespace ctk {
class Tensor;
}

namespace ctk::cuda {

// True when this build has the CUDA backend compiled in.
bool is_built();
// Number of usable GPUs: 0 without the backend, without a driver or without a GPU. Never throws.
int device_count();
bool is_available();
// Why device_count() is 0, in words ("this build of ctk has no CUDA backend", "no CUDA driver is
// installed", "CUDA driver found but no GPU", ...); empty when GPUs are available.
std::string unavailable_reason();

// The CUDA version the installed driver supports (e.g. 13000 for 13.0), or 0 without a driver.
int driver_version();
// The CUDA runtime version this binary was built with and links (e.g. 13000).
int runtime_version();

struct DeviceProperties {
    int index = 0;
    std::string name;
    int major = 0;  // compute capability
    int minor = 0;
    int multiprocessors = 0;
    int64_t total_memory = 0;  // bytes
    int64_t free_memory = 0;   // bytes, when queried
    int l2_cache_bytes = 0;
};
DeviceProperties properties(int device);

// Throws DeviceError naming the device when `device` is not a usable GPU of this process.
void check_device(Device device);

// The stream every ctk kernel on `device` runs on (created on first use, non-blocking with respect to
// the legacy default stream). Work on one device is ordered on this stream, which is what lets the
// caching allocator reuse a freed block at once. Returned as void* (a cudaStream_t).
void* stream(Device device);
// Waits until all work queued on the device's ctk stream is done; rethrows an asynchronous kernel
// error as DeviceError.
void synchronize(Device device);

// A CUDA event on a device's ctk stream: record() marks the point the stream has reached; synchronize()
// waits for it, ready() asks without waiting, and elapsed_ms() times the stream between two records.
// The executor uses events to order work and to time steps without stalling the host.
class Event {
public:
    explicit Event(Device device);
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    void record();
    void synchronize() const;
    bool ready() const;
    float elapsed_ms(const Event& later) const;  // both recorded, `later` after this one
    Device device() const { return device_; }

private:
    Device device_;
    void* event_ = nullptr;  // cudaEvent_t
};

// A CUDA Graph: the work a function queues on a device's ctk stream, recorded once (nothing runs while
// it is recorded) and then replayed with one launch, which saves the host the cost of queuing every
// kernel again. The recorded kernels keep the addresses and the scalar arguments they were queued with,
// so a replay computes from the same tensors: the caller refills the inputs in place between replays,
// and whatever varies between runs in another way (a random seed, a learning rate in a kernel argument)
// must not be part of the work. Tensors allocated during the capture come from a memory pool that only
// this graph uses (they hold the graph's results after each replay and may be kept); blocks freed during
// the capture that were allocated before it are held until the graph is destroyed. Without the CUDA
// backend capture() returns null with the reason.
// True while cuda::Graph::capture records work on this thread (lazily made process-wide state must not
// come from the recording's memory then).
bool recording_on_this_thread();

class Graph {
public:
    // Records `work` on `device`. Work that cannot be recorded (a wait for the GPU, a read of a GPU value
    // on the host, a copy from pageable host memory, ...) or that throws gives null and the reason in
    // *why_not; nothing of it has run, so the caller runs it the ordinary way.
    static std::unique_ptr<Graph> capture(Device device, const std::function<void()>& work,
                                          std::string* why_not);
    ~Graph();  // waits for the graph's replays, then gives its pool back to the device's cache
    Graph(const Graph&) = delete;
    Graph& operator=(const Graph&) = delete;
    // Queues the whole graph on the device's ctk stream (the host returns at once).
    void replay();
    Device device() const { return device_; }
    int64_t num_nodes() const { return num_nodes_; }

private:
    explicit Graph(Device device) : device_(device) {}
    Device device_;
    void* graph_ = nullptr;  // cudaGraph_t
    void* exec_ = nullptr;   // cudaGraphExec_t
    int pool_ = 0;           // the allocator's capture pool
    int64_t num_nodes_ = 0;
};

// A CPU tensor in page-locked (pinned) host memory: copies from it to a GPU run asynchronously on the
// ctk stream (the host returns at once and the copy overlaps compute) at full PCIe/NVLink speed. Blocks
// are cached; a freed block is reused only once every copy queued before its release has finished, so
// dropping the tensor right after `to(gpu)` is safe. Without the CUDA backend (or a GPU) this returns an
// ordinary CPU tensor.
Tensor pinned_empty(const Shape& shape, DataType dtype);
bool is_pinned(const Tensor& t);
// A copy of `host` on `device` that does not wait: from a pinned tensor the copy is only queued on the
// device's ctk stream (work queued after it sees the data; the host must not write `host` until the
// stream has passed it: an Event or synchronize() tells). From other memory it is Tensor::to(device).
Tensor to_device_async(const Tensor& host, Device device);
// A copy of the GPU tensor `t` in pinned host memory that does not wait: the copy is queued on t's
// device's ctk stream, behind the work that makes t, and `done` (an Event of that device) is recorded
// after it. The host may read the result once done.synchronize() returns, while later work still runs.
Tensor to_host_async(const Tensor& t, Event& done);

// Whether f32 matrix products may use TF32 tensor cores (10-bit mantissa inputs, f32 accumulation):
// several times faster on Ampere and Hopper, but not f32-exact. Off by default, as in CNTK.
void set_allow_tf32(bool allow);
bool allow_tf32();

// Deterministic algorithms only (CNTK's force_deterministic_algorithms): cuDNN candidates that are not
// bit-reproducible are skipped. Off by default.
void set_deterministic(bool deterministic);
bool deterministic();

}  // namespace ctk::cuda
