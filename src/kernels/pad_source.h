// Internal, shared by pad's CPU and CUDA kernels and its gradient (pad_grad in indexing.cpp): which cell
// a padded position copies along one axis.
#pragma once

#include <cstdint>

#include "ctk/kernels/kernel_op_list.h"

namespace ctk::detail {

#if defined(__CUDACC__)
#define CTK_PAD_HD __host__ __device__ inline
#else
#define CTK_PAD_HD inline
#endif

// Position p, relative to the start of an axis of n cells: p itself inside the axis, NumPy's mirror
// outside it (reflect leaves the edge out, symmetric repeats it), -1 for the constant fill. The callers
// have checked that the mirrors land inside the axis.
CTK_PAD_HD int64_t pad_source(int64_t p, int64_t n, PadMode mode) {
    if (p >= 0 && p < n) return p;
    if (mode == PadMode::reflect) return p < 0 ? -p : 2 * (n - 1) - p;
    if (mode == PadMode::symmetric) return p < 0 ? -p - 1 : 2 * n - 1 - p;
    return -1;
}

#undef CTK_PAD_HD

}  // namespace ctk::detail
