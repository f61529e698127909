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

// The contiguous case, 16 bytes per operand per step: each thread loads one 16-byte vector of every
// array operand (a broadcast scalar is read once), applies f to the elements in registers, and stores one
// vector. Element-wise kernels are bound by memory traffic, and 16-byte accesses are what reaches the
// device's bandwidth (4x f32, 8x bf16). `stride` is E (an array) or 0 (a scalar) per operand; operand 0
// is the output. Pointers of array operands are 16-byte aligned (checked by the launcher).
template <int N, int E, typename F>
__global__ void map_vector_kernel(Ptrs<N> ptrs, std::array<int64_t, N> stride, int64_t vectors, F f) {
    constexpr int kPer = 16 / E;
    for (int64_t v = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; v < vectors;
         v += int64_t(gridDim.x) * blockDim.x) {
        uint4 buf[N];
#pragma unroll
        for (int k = 1; k < N; ++k) {
            if (stride[k] != 0) {
                buf[k] = reinterpret_cast<const uint4*>(ptrs.p[k])[v];
            } else {
                char* b = reinterpret_cast<char*>(&buf[k]);
#pragma unroll
                for (int e = 0; e < kPer; ++e)
#pragma unroll
                    for (int byte = 0; byte < E; ++byte) b[e * E + byte] = ptrs.p[k][byte];
            }
        }
#pragma unroll
        for (int e = 0; e < kPer; ++e) {
            char* q[N];
#pragma unroll
            for (int k = 0; k < N; ++k) q[k] = reinterpret_cast<char*>(&buf[k]) + e * E;
            f(q);
        }
        reinterpret_cast<uint4*>(ptrs.p[0])[v] = buf[0];
    }
}

// Launches the vector kernel when every operand is an array of E-byte elements or a scalar and the arrays
// are 16-byte aligned; the last n % (16 / E) elements take the scalar kernel. False when the layout does
// not allow it.
template <int N, int E, typename F>
bool try_vector(const Ptrs<N>& ptrs, const std::array<int64_t, N>& s, int64_t n, F f, cudaStream_t stream) {
    for (int k = 0; k < N; ++k) {
        if (s[k] != E && !(k > 0 && s[k] == 0)) return false;
        if (s[k] != 0 && reinterpret_cast<uintptr_t>(ptrs.p[k]) % 16 != 0) return false;
    }
    constexpr int kPer = 16 / E;
    const int64_t vectors = n / kPer;
    if (vectors == 0) return false;
    map_vector_kernel<N, E><<<grid_for(vectors), 256, 0, stream>>>(ptrs, s, vectors, f);
    CTK_CUDA_LAUNCH_CHECK();
    const int64_t done = vectors * kPer;
    if (done < n) {
        Ptrs<N> tail = ptrs;
        for (int k = 0; k < N; ++k) tail.p[k] += done * s[k];
        map_linear_kernel<N><<<1, 256, 0, stream>>>(tail, s, n - done, f);
        CTK_CUDA_LAUNCH_CHECK();
    }
    return true;
}

// A functor that declares `using element = T;` works on operands that all hold T: its contiguous case
// may vectorize (and only that one vector kernel is compiled for it).
template <typename F>
constexpr int element_bytes() {
    if constexpr (requires { typename F::element; })
        return sizeof(typename F::element);
    else
        return 0;
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
        constexpr int E = element_bytes<F>();
        if constexpr (E == 2 || E == 4 || E == 8)
            if (try_vector<N, E>(ptrs, s, n, f, stream)) return;
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
