// Internal: the caching allocator of each GPU (the public face is allocator_for(Device::cuda(n))), and
// the private memory pools of CUDA Graph captures (graph.cpp).
#pragma once

#include "ctk/core/storage.h"

namespace ctk::cuda::detail {

Allocator& device_allocator(int device);

// While a capture pool is open, the allocations that the opening thread makes on `device` come from
// blocks of that pool only, and its frees of other blocks are held in the pool (the captured kernels
// may still read them): a graph's recorded addresses stay its own until release_capture_pool. Other
// threads allocate as usual. cudaMalloc runs in relaxed capture mode (an allocation is not stream work).
int open_capture_pool(int device);
// The capture is over; the pool stays reserved for its graph (freed blocks return to it).
void close_capture_pool(int device, int pool);
// The graph is gone and the device has finished its replays: the pool's free and held blocks go to the
// cache; its blocks still in use go there when freed.
void release_capture_pool(int device, int pool);

// While one lives, the allocations this thread makes come from the ordinary cache even during a
// capture: for process-wide state made lazily (a library's workspace) that must outlive every graph.
class OutsideCapturePool {
public:
    OutsideCapturePool();
    ~OutsideCapturePool();
    OutsideCapturePool(const OutsideCapturePool&) = delete;
    OutsideCapturePool& operator=(const OutsideCapturePool&) = delete;

private:
    bool previous_;
};

}  // namespace ctk::cuda::detail
