// The kernels behind CNTK's learners: an update rule (update_rules.h: one host/device functor per rule)
// applied to every element where a parameter lives (a parallel loop on the CPU, a grid-stride kernel on a
// GPU, on an explicit stream), the sum of a rule's values (thread-count independent on the CPU, a fixed
// tree on a GPU) and the step scalars the rules read. The learners (src/learners) call these; the rules
// are the same bits on either device.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ctk/core/cuda.h"
#include "ctk/core/error.h"
#include "ctk/core/parallel.h"
#include "ctk/core/tensor.h"
#include "ctk/kernels/update_rules.h"

namespace ctk::detail {

// Elements per parallel work item; loops below this size run inline.
inline constexpr int64_t kLearnerGrain = 1 << 15;
// Reductions sum fixed chunks of this size in parallel, then the chunk sums in order, so the result does
// not depend on the thread count.
inline constexpr int64_t kReduceChunk = 1 << 14;

// Calls fn(T{}) with T = float or double for `dtype`; other dtypes throw NotImplementedError naming `who`.
template <typename Fn>
void dispatch_rule_dtype(DataType dtype, const char* who, Fn&& fn) {
    switch (dtype) {
        case DataType::f32:
            fn(float{});
            return;
        case DataType::f64:
            fn(double{});
            return;
        default:
            CTK_THROW(NotImplementedError, who, ": parameters of dtype ", dtype_name(dtype),
                      " are not supported yet (float32 and float64 are)");
    }
}

// Runs fn(i) for every i in [0, n) in parallel.
template <typename Fn>
void for_each_element(int64_t n, Fn&& fn) {
    parallel_for(0, n, kLearnerGrain, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) fn(i);
    });
}

// Sum over i in [0, n) of fn(i) (which may also write element i), in double, thread-count independent.
template <typename Fn>
double sum_elements(int64_t n, std::vector<double>& partials, Fn&& fn) {
    const int64_t chunks = (n + kReduceChunk - 1) / kReduceChunk;
    partials.assign(static_cast<size_t>(chunks), 0.0);
    parallel_for(0, chunks, 1, [&](int64_t cb, int64_t ce) {
        for (int64_t c = cb; c < ce; ++c) {
            double s = 0;
            const int64_t e = std::min(n, (c + 1) * kReduceChunk);
            for (int64_t i = c * kReduceChunk; i < e; ++i) s += fn(i);
            partials[static_cast<size_t>(c)] = s;
        }
    });
    double total = 0;
    for (double s : partials) total += s;
    return total;
}

#if CTK_HAVE_CUDA
// src/kernels/update_rules.cu: rule(i) for i in [0, n) on `stream` (a stream of `device`), and the sum of
// its values (in double, by a fixed-order tree, as an f64 scalar tensor on the device: nothing is read
// back). Instantiated for the rules in update_rules.h.
template <typename Rule>
void cuda_apply_rule(Device device, void* stream, int64_t n, const Rule& rule);
template <typename Rule>
Tensor cuda_sum_rule(Device device, void* stream, int64_t n, const Rule& rule);
#endif

// rule(i) for every i in [0, n), where `on` (the parameter) lives.
template <typename Rule>
void apply_rule(const Tensor& on, int64_t n, const Rule& rule) {
    if (on.device().is_cpu()) return for_each_element(n, rule);
#if CTK_HAVE_CUDA
    cuda_apply_rule(on.device(), cuda::stream(on.device()), n, rule);
#else
    CTK_THROW(DeviceError, "update rules: no kernels for ", on.device().to_string(), " in this build");
#endif
}

// The sum of rule(i) (which may also write element i) over [0, n), as an f64 scalar tensor where `on`
// lives (for the rules that read it next there).
template <typename Rule>
Tensor sum_rule_tensor(const Tensor& on, int64_t n, std::vector<double>& partials, const Rule& rule) {
    if (on.device().is_cpu())
        return Tensor::full(Shape{}, sum_elements(n, partials, rule), DataType::f64, on.device());
#if CTK_HAVE_CUDA
    return cuda_sum_rule(on.device(), cuda::stream(on.device()), n, rule);
#else
    CTK_THROW(DeviceError, "update rules: no kernels for ", on.device().to_string(), " in this build");
#endif
}

#if CTK_HAVE_CUDA
// src/kernels/update_rules.cu: dst[i] <- values[i] (as dst's dtype) for i < n, by a kernel that carries
// the values as its arguments, queued on `stream` (of dst's device). Throws DeviceError while the stream
// records a graph.
void cuda_write_scalars(const Tensor& dst, void* stream, const double* values, int n);
#endif

// dst[0..n) <- values (converted to dst's dtype, f32 or f64) where dst lives, in queue order with the
// kernels there. At most 16 values.
inline void write_scalars(const Tensor& dst, const double* values, int n) {
    if (dst.device().is_cpu()) {
        dispatch_rule_dtype(dst.dtype(), "learner step scalars", [&](auto tag) {
            using T = decltype(tag);
            T* out = dst.data<T>();
            for (int i = 0; i < n; ++i) out[i] = static_cast<T>(values[i]);
        });
        return;
    }
#if CTK_HAVE_CUDA
    cuda_write_scalars(dst, cuda::stream(dst.device()), values, n);
#else
    CTK_THROW(DeviceError, "update rules: no kernels for ", dst.device().to_string(), " in this build");
#endif
}

}  // namespace ctk::detail
