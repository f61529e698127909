// Internal to the CUDA kernels (CUDA sources only): device element types, loads and stores in the
// compute type, launch helpers. 16-bit floats compute in float, like the CPU kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "core/cuda/cuda_check.h"
#include "core/cuda/strided.cuh"
#include "kernels/cuda/cuda_common.h"

namespace ctk::cuda {

using detail::grid_for;
using detail::make_strided_offsets;
using detail::StridedOffsets;

// The device type for a ctk element type (same bits).
template <typename T>
struct device_type {
    using type = T;
};
template <>
struct device_type<Half> {
    using type = __half;
};
template <>
struct device_type<BFloat16> {
    using type = __nv_bfloat16;
};
template <typename T>
using dev_t = typename device_type<T>::type;

template <typename D>
struct compute_type {
    using type = float;
};
template <>
struct compute_type<double> {
    using type = double;
};
template <typename D>
using comp_t = typename compute_type<D>::type;

__device__ __forceinline__ float to_comp(float v) {
    return v;
}
__device__ __forceinline__ double to_comp(double v) {
    return v;
}
__device__ __forceinline__ float to_comp(__half v) {
    return __half2float(v);
}
__device__ __forceinline__ float to_comp(__nv_bfloat16 v) {
    return __bfloat162float(v);
}

template <typename D>
__device__ __forceinline__ D from_comp(float v);
template <>
__device__ __forceinline__ float from_comp<float>(float v) {
    return v;
}
template <>
__device__ __forceinline__ __half from_comp<__half>(float v) {
    return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_comp<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}
template <typename D>
__device__ __forceinline__ D from_comp(double v) {
    return static_cast<D>(v);
}

inline Dims byte_strides(const Tensor& t) {
    Dims b = t.strides();
    for (auto& s : b) s *= static_cast<int64_t>(t.element_size());
    return b;
}

template <typename T>
T* ptr(const Tensor& t) {
    return static_cast<T*>(t.raw_data());
}

#define CTK_CUDA_LAUNCH_CHECK() CTK_CUDA_CHECK(cudaGetLastError())

}  // namespace ctk::cuda
