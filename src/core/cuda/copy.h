// Internal: copies where either side lives on a GPU (Tensor::copy_from calls this), and the strided
// device-to-device copy with dtype conversion that the cast and permute kernels share.
#pragma once

#include "ctk/tensor.h"

namespace ctk::cuda::detail {

// dst <- src, broadcasting src to dst's shape and converting its dtype; either may be on a GPU.
// Returns when dst may be read by the host (for a CPU dst) or by later work on dst's ctk stream, and the
// host may write src again. `async`: a host-to-device copy from pinned memory returns as soon as it is
// queued (the caller keeps the host buffer unchanged until the stream has passed the copy).
void copy_tensor(const Tensor& src, const Tensor& dst, bool async = false);

// dst <- src on one GPU: same shape (src may be a broadcast view), any strides, any dtypes.
void copy_on_device(const Tensor& src, const Tensor& dst);

}  // namespace ctk::cuda::detail
