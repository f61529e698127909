// Internal: copies where either side lives on a GPU (Tensor::copy_from calls this), and the strided
// device-to-device copy with dtype conversion that the cast and permute kernels share.
#pragma once

#include "ctk/core/tensor.h"

namespace ctk::cuda::detail {

// dst <- src, broadcasting src to dst's shape and converting its dtype; either may be on a GPU.
// Returns when dst may be read by the host (for a CPU dst) or by later work on dst's ctk stream, and the
// host may write src again. `async`: a host-to-device copy from pinned memory returns as soon as it is
// queued (the caller keeps the host buffer unchanged until the stream has passed the copy).
void copy_tensor(const Tensor& src, const Tensor& dst, bool async = false);

// dst <- src on one GPU: same shape (src may be a broadcast view), any strides, any dtypes.
void copy_on_device(const Tensor& src, const Tensor& dst);

// A copy of the contiguous host tensor `host` in page-locked memory, to upload from: the pinned cache
// keeps the block from reuse until work queued before its release has run. Blocks come in powers of two
// (4 KiB and up), so that uploads of ever-changing sizes (sequence masks) reuse a few blocks. Undefined
// when `host` is larger than kMaxStagedUpload or no GPU is usable.
inline constexpr size_t kMaxStagedUpload = size_t(4) << 20;
Tensor staged_for_upload(const Tensor& host);

// Throws DeviceError when `device`'s ctk stream is recording a CUDA Graph: a copy between host and device
// memory would be replayed long after its host buffer was freed or reused (pinned blocks are recycled
// too), and a read on the host would never see the data. `what` names the operation.
void check_not_capturing(Device device, const char* what);

// Every element of the GPU tensor dst (any strides) <- value, by a kernel that takes the value as an
// argument: nothing is staged through host memory (a pageable upload may stall the host until the
// stream drains), and a CUDA Graph capture records the fill like any kernel.
void fill(const Tensor& dst, double value);

}  // namespace ctk::cuda::detail
