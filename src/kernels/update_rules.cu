// The learners' rules (ctk/kernels/update_rules.h) on a GPU: one grid-stride kernel per rule, on the
// stream the caller passes (rule_kernels.h). This file is compiled with --fmad=false so that the products and
// sums round exactly as on the CPU; a learner step is bound by memory traffic, so contraction would buy
// nothing.
#include <cuda_runtime_api.h>

#include "core/cuda/copy.h"
#include "core/cuda/cuda_check.h"
#include "ctk/core/cuda.h"
#include "ctk/core/tensor.h"
#include "ctk/kernels/rule_kernels.h"
#include "ctk/kernels/tensor_ops.h"

namespace ctk::detail {

namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
    const int64_t b = (n + kThreads - 1) / kThreads;
    return static_cast<int>(b < 4096 ? (b > 0 ? b : 1) : 4096);
}

template <typename Rule>
__global__ void apply_kernel(int64_t n, Rule rule) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x)
        rule(i);
}

template <typename Rule>
__global__ void values_kernel(int64_t n, Rule rule, double* out) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x)
        out[i] = static_cast<double>(rule(i));
}

struct ScalarArgs {
    double values[16];
};

template <typename T>
__global__ void write_scalars_kernel(T* dst, ScalarArgs args, int n) {
    if (threadIdx.x < n) dst[threadIdx.x] = static_cast<T>(args.values[threadIdx.x]);
}

}  // namespace

// The values travel as the kernel's arguments: no host buffer has to outlive the call, nothing waits.
void cuda_write_scalars(const Tensor& dst, void* stream, const double* values, int n) {
    CTK_CHECK(n >= 0 && n <= 16 && n <= dst.numel(), ValueError, "learner step scalars: ", n,
              " values for a block of ", dst.numel());
    if (n == 0) return;
    const Device device = dst.device();
    cuda::detail::check_not_capturing(device, "writing a learner's step scalars");
    ScalarArgs args{};
    for (int i = 0; i < n; ++i) args.values[i] = values[i];
    cuda::detail::set_device(device.index);
    dispatch_rule_dtype(dst.dtype(), "learner step scalars", [&](auto tag) {
        using T = decltype(tag);
        write_scalars_kernel<T><<<1, 32, 0, static_cast<cudaStream_t>(stream)>>>(dst.data<T>(), args, n);
    });
    CTK_CUDA_CHECK(cudaGetLastError());
}

template <typename Rule>
void cuda_apply_rule(Device device, void* stream, int64_t n, const Rule& rule) {
    if (n == 0) return;
    cuda::detail::set_device(device.index);
    apply_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(n, rule);
    CTK_CUDA_CHECK(cudaGetLastError());
}

// The values go to a scratch vector and ctk's own reduction sums them (a fixed tree, no atomics).
template <typename Rule>
Tensor cuda_sum_rule(Device device, void* stream, int64_t n, const Rule& rule) {
    if (n == 0) return Tensor::zeros(Shape{}, DataType::f64, device);
    Tensor values = Tensor::empty(Shape{n}, DataType::f64, device);
    cuda::detail::set_device(device.index);
    values_kernel<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(n, rule,
                                                                                     values.data<double>());
    CTK_CUDA_CHECK(cudaGetLastError());
    return reduce_sum(values);
}

#define CTK_INSTANTIATE_APPLY(R)                                                                    \
    template void cuda_apply_rule<rules::R<float>>(Device, void*, int64_t, const rules::R<float>&); \
    template void cuda_apply_rule<rules::R<double>>(Device, void*, int64_t, const rules::R<double>&);
#define CTK_INSTANTIATE_SUM(R)                                                                      \
    template Tensor cuda_sum_rule<rules::R<float>>(Device, void*, int64_t, const rules::R<float>&); \
    template Tensor cuda_sum_rule<rules::R<double>>(Device, void*, int64_t, const rules::R<double>&);
CTK_LEARNER_APPLY_RULES(CTK_INSTANTIATE_APPLY)
CTK_LEARNER_SUM_RULES(CTK_INSTANTIATE_SUM)

}  // namespace ctk::detail
