// Internal, CUDA only: N strided operands over one coalesced shape, for device kernels. The host side
// coalesces dims with make_strided_plan (as the CPU loops do) and passes this struct by value.
#pragma once

#include <cuda_runtime.h>

#include <array>

#include "core/strided_loop.h"
#include "ctk/core/error.h"

namespace ctk::cuda::detail {

// After coalescing, real tensors rarely have more than 4 dims; ctk tensors are capped well below this.
constexpr int kMaxCudaDims = 12;

template <int N>
struct StridedOffsets {
    int rank = 1;
    int64_t sizes[kMaxCudaDims] = {1};
    int64_t strides[N][kMaxCudaDims] = {};  // bytes

    // Byte offsets of the element with row-major linear index `i`, innermost dim last.
    __device__ __forceinline__ void offsets(int64_t i, int64_t (&off)[N]) const {
        for (int k = 0; k < N; ++k) off[k] = 0;
        for (int d = rank - 1; d >= 0; --d) {
            int64_t idx = i % sizes[d];
            i /= sizes[d];
            for (int k = 0; k < N; ++k) off[k] += idx * strides[k][d];
        }
    }
};

template <int N>
StridedOffsets<N> make_strided_offsets(const ::ctk::detail::StridedPlan<N>& plan) {
    StridedOffsets<N> s;
    CTK_CHECK(plan.shape.size() <= static_cast<size_t>(kMaxCudaDims), NotImplementedError,
              "CUDA kernels take at most ", kMaxCudaDims, " non-mergeable dims, got ", plan.shape.size());
    s.rank = static_cast<int>(plan.shape.size());
    for (int d = 0; d < s.rank; ++d) {
        s.sizes[d] = plan.shape[static_cast<size_t>(d)];
        for (int k = 0; k < N; ++k)
            s.strides[k][d] = plan.byte_strides[static_cast<size_t>(k)][static_cast<size_t>(d)];
    }
    return s;
}

// Grid size for a grid-stride loop over n elements.
inline unsigned grid_for(int64_t n, int block = 256) {
    int64_t blocks = (n + block - 1) / block;
    return static_cast<unsigned>(std::max<int64_t>(1, std::min<int64_t>(blocks, 65535 * 8)));
}

}  // namespace ctk::cuda::detail
