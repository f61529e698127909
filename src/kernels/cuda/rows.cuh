// Internal (CUDA sources only): views a tensor as contiguous rows for row-wise kernels (reductions, the
// softmax family): the reduced axes are moved last and the result made contiguous (a copy only when
// the layout needs it), and block-wide reductions over one row.
#pragma once

#include <algorithm>
#include <vector>

#include "kernels/cuda/cuda_common.cuh"

namespace ctk::cuda {

struct Rows {
    Tensor data;  // contiguous [rows, cols] in memory
    int64_t rows = 1, cols = 1;
    std::vector<int> order;  // the permutation applied to the source (kept axes, then `axes`)
};

// `axes` sorted and unique.
inline Rows as_rows(const Tensor& x, const std::vector<int>& axes) {
    Rows r;
    for (int i = 0; i < x.rank(); ++i)
        if (!std::binary_search(axes.begin(), axes.end(), i)) r.order.push_back(i);
    for (int a : axes) r.order.push_back(a);
    for (int i = 0; i < x.rank(); ++i) {
        if (std::binary_search(axes.begin(), axes.end(), i))
            r.cols *= x.shape()[i];
        else
            r.rows *= x.shape()[i];
    }
    r.data = x.permute(r.order).contiguous();
    return r;
}

// Threads per row block: a power of two between 32 and 256 that covers short rows without idle warps.
inline int row_block(int64_t cols) {
    int b = 32;
    while (b < 256 && b < cols) b *= 2;
    return b;
}

// Reduces v across the block with op (all threads get the result). `shared` holds blockDim/32 values.
template <typename C, typename Op>
__device__ __forceinline__ C block_reduce(C v, Op op, C* shared) {
    for (int o = 16; o > 0; o /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, warps = blockDim.x / 32;
    __syncthreads();  // `shared` may still be read by a previous call
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = shared[0];
    for (int w = 1; w < warps; ++w) v = op(v, shared[w]);
    return v;
}

// The rank orders of the arg-style kernels: true when (a, ia) ranks before (b, ib).
// Largest first, NaN above every number (argmax's and top_k's rule), lower index first among equals.
struct LargestFirst {
    template <typename C>
    __device__ bool operator()(C a, int64_t ia, C b, int64_t ib) const {
        const bool na = a != a, nb = b != b;
        if (na != nb) return na;
        if (!na && a != b) return a > b;
        return ia < ib;
    }
};
// Smallest first, NaN above every number (argmin's rule), lower index first among equals.
struct SmallestFirst {
    template <typename C>
    __device__ bool operator()(C a, int64_t ia, C b, int64_t ib) const {
        const bool na = a != a, nb = b != b;
        if (na != nb) return na;
        if (!na && a != b) return a < b;
        return ia < ib;
    }
};

// Folds candidate (v, j) into a thread's best pair (i < 0: none yet).
template <typename C, typename Before>
__device__ __forceinline__ void keep_best(C& best, int64_t& i, C v, int64_t j, Before before) {
    if (i < 0 || before(v, j, best, i)) {
        best = v;
        i = j;
    }
}

// The block's best pair under `before`, from every thread's candidate (index -1: none); every thread
// gets it. `sv` and `si` hold blockDim.x entries.
template <typename C, typename Before>
__device__ void block_best(C& v, int64_t& i, Before before, C* sv, int64_t* si) {
    sv[threadIdx.x] = v;
    si[threadIdx.x] = i;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
        if (threadIdx.x < s) {
            const int64_t ib = si[threadIdx.x + s];
            if (ib >= 0 &&
                (si[threadIdx.x] < 0 || before(sv[threadIdx.x + s], ib, sv[threadIdx.x], si[threadIdx.x]))) {
                sv[threadIdx.x] = sv[threadIdx.x + s];
                si[threadIdx.x] = ib;
            }
        }
        __syncthreads();
    }
    v = sv[0];
    i = si[0];
    __syncthreads();  // sv and si may be reused right away
}

}  // namespace ctk::cuda
