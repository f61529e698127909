// Error checking for CUDA runtime calls inside ctk: a failure becomes a DeviceError (or an
// OutOfMemoryError) that names the call, the CUDA error and where it happened.
#pragma once

#include <cuda_runtime_api.h>

#include "ctk/core/device.h"

namespace ctk::cuda::detail {

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);

// Makes `device` current on this thread (cheap when it already is).
void set_device(int device);

// The ctk stream of a device, typed.
cudaStream_t cuda_stream(Device device);
// The ctk stream of `device` if something made it already, else null; creates nothing and leaves the
// current device alone.
cudaStream_t existing_cuda_stream(int device);
// True on the thread whose work cuda::Graph::capture is recording (set by capture around the work).
bool this_thread_captures();
void set_this_thread_captures(bool on);

}  // namespace ctk::cuda::detail

#define CTK_CUDA_CHECK(call)                                                                 \
    do {                                                                                     \
        cudaError_t ctk_cuda_err_ = (call);                                                  \
        if (ctk_cuda_err_ != cudaSuccess)                                                    \
            ::ctk::cuda::detail::throw_cuda_error(ctk_cuda_err_, #call, __FILE__, __LINE__); \
    } while (0)
