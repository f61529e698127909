// Internal (CUDA sources only): launches an element-wise functor over N strided operands of one shape
// (operand 0 is the output). After coalescing, a rank-1 plan (contiguous operands, or a broadcast scalar)
// takes a kernel without index arithmetic; other layouts decompose the linear index per element.
#pragma once

#include <array>

#include "kernels/cuda/cuda_common.cuh"

namespace ctk::cuda {

template <int N>
struct Ptrs {
    char* p[N];
};

template <int N, typename F>
__global__ void map_linear_kernel(Ptrs<N> ptrs, std::array<int64_t, N> stride, int64_t n, F f) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        char* q[N];
#pragma unroll
        for (int k = 0; k < N; ++k) q[k] = ptrs.p[k] + i * stride[k];
        f(q);
    }
}

template <int N, typename F>
__global__ void map_strided_kernel(Ptrs<N> ptrs, StridedOffsets<N> idx, int64_t n, F f) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t off[N];
        idx.offsets(i, off);
        char* q[N];
#pragma unroll
        for (int k = 0; k < N; ++k) q[k] = ptrs.p[k] + off[k];
        f(q);
    }
}

// Runs f over `shape` with operand k at base[k] advancing by strides[k] bytes per axis (0: stays put).
template <int N, typename F>
void launch_map_strided(const Dims& shape, const std::array<char*, N>& base,
                        const std::array<Dims, N>& strides, F f, cudaStream_t stream) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    if (n == 0) return;
    Ptrs<N> ptrs;
    for (int k = 0; k < N; ++k) ptrs.p[k] = base[k];
    auto plan = ::ctk::detail::make_strided_plan<N>(shape, strides);
    const unsigned grid = grid_for(n);
    if (plan.shape.size() == 1) {
        std::array<int64_t, N> s;
        for (int k = 0; k < N; ++k) s[k] = plan.byte_strides[k][0];
        map_linear_kernel<N><<<grid, 256, 0, stream>>>(ptrs, s, n, f);
    } else {
        map_strided_kernel<N><<<grid, 256, 0, stream>>>(ptrs, make_strided_offsets(plan), n, f);
    }
    CTK_CUDA_LAUNCH_CHECK();
}

// f is called on the device with char* q[N], the addresses of one element of each operand; operands
// broadcast to the shape of operand 0, the output.
template <int N, typename F>
void launch_map(const std::array<Tensor, N>& operands, F f, cudaStream_t stream) {
    const Tensor& out = operands[0];
    std::array<Dims, N> strides;
    std::array<char*, N> base;
    for (int k = 0; k < N; ++k) {
        Tensor v = operands[k].broadcast_to(out.shape());
        strides[k] = byte_strides(v);
        base[k] = static_cast<char*>(v.raw_data());
    }
    launch_map_strided<N>(out.shape().dims(), base, strides, f, stream);
}

}  // namespace ctk::cuda
