// Internals shared by the learner files: AdaGrad's and RMSProp's mean multiplier and the factories'
// argument checks. The rules, the kernels that run them where a parameter lives and their dtype dispatch
// are the kernel layer's (ctk/kernels/update_rules.h, ctk/kernels/rule_kernels.h).
#pragma once

#include <cstdint>
#include <vector>

#include "ctk/core/error.h"
#include "ctk/core/parallel.h"
#include "ctk/kernels/rule_kernels.h"
#include "ctk/learners.h"

namespace ctk::detail {

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
