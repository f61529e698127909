// Internals shared by the learner files: the learners' dtype dispatch, AdaGrad's and RMSProp's mean
// multiplier, and the factories' argument checks. The rules and the kernels that run them where a
// parameter lives are the kernel layer's (ctk/kernels/update_rules.h, ctk/kernels/rule_kernels.h).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "ctk/core/error.h"
#include "ctk/core/parallel.h"
#include "ctk/kernels/rule_kernels.h"
#include "ctk/learners.h"

namespace ctk::detail {

// Calls fn(T{}) with T = float or double for `dtype`; other dtypes throw NotImplementedError naming `who`.
template <typename Fn>
void dispatch_learner_dtype(DataType dtype, const char* who, Fn&& fn) {
    dispatch_rule_dtype(dtype, who, std::forward<Fn>(fn));
}

// `rate` divided by the mean of the values `sum` (a sum_rule_tensor over `on`) adds up, into `out`, where
// `on` lives: AdaGrad's and RMSProp's need_ave_multiplier.
template <typename T>
void mean_multiplied_rate(const Tensor& on, const Tensor& sum, const double* rate, T* out) {
    apply_rule(on, 1,
               rules::MeanMultipliedRate<T>{sum.data<double>(), rate, out, static_cast<double>(on.numel())});
}

// Momentum-like values must lie in [0, 1); throws ValueError naming the learner and the argument.
void check_momentum(const TrainingParameterSchedule& s, const char* learner, const char* argument);

}  // namespace ctk::detail
