// The learners' per-element rules (CNTK 2.7's dense update formulas, see the learner files) as functors
// over raw pointers, so that one definition runs on the CPU (a parallel loop, rule_kernels.h) and on a GPU
// (a grid-stride kernel, src/kernels/update_rules.cu). The GPU file is compiled without FMA contraction and
// the math below is IEEE on both sides (sqrt and division correctly rounded), so a step gives the same bits
// on either device. Rules returning a value are summed by sum_rule_tensor (the mean multipliers, the clipping
// norm), into a scalar that stays on the device for the rules that read it next.
//
// Values that change from step to step (rates, momenta, bias corrections: the `const T*` fields named
// "per step" below) are read from the learner's step scalars, written where the parameter lives before
// the step's kernels are queued (Learner::prepare_step). The kernels themselves are then the same at every
// step, so a CUDA Graph can record them once. Values fixed for the learner's life stay plain arguments.
#pragma once

#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define CTK_HOST_DEVICE __host__ __device__
#else
#define CTK_HOST_DEVICE
#endif

namespace ctk::detail::rules {

template <typename T>
CTK_HOST_DEVICE inline T root(T x) {
    if constexpr (sizeof(T) == 4)
        return ::sqrtf(x);
    else
        return ::sqrt(x);
}
template <typename T>
CTK_HOST_DEVICE inline T magnitude(T x) {
    if constexpr (sizeof(T) == 4)
        return ::fabsf(x);
    else
        return ::fabs(x);
}
// std::min/std::max/std::clamp exactly (which operand wins on ties and NaN), usable in device code.
template <typename T>
CTK_HOST_DEVICE inline T lesser(T a, T b) {
    return b < a ? b : a;
}
template <typename T>
CTK_HOST_DEVICE inline T greater(T a, T b) {
    return a < b ? b : a;
}

// ---- the Learner base: the gradient the rule sees, and the post-step adjustments ----

// o = clip(g * scale) + l2 * w (clip: to [-limit, limit] when `clip_elements`).
template <typename T>
struct PrepareGradient {
    const T* g;
    const T* w;
    T* o;
    const T *scale, *limit, *l2;  // per step
    bool clip_elements;
    CTK_HOST_DEVICE void operator()(int64_t i) const {
        const T lim = *limit;
        T v = g[i] * *scale;
        if (clip_elements) v = v < -lim ? -lim : (lim < v ? lim : v);
        o[i] = v + *l2 * w[i];
    }
};

// The gradient scale after a rescaling clip (one element, i = 0): scale * (limit / norm) when the norm
// of the scaled gradient, scale * sqrt(sum of g^2), passes the limit, else the scale itself.
template <typename T>
struct ClipScale {
    const double *sum_of_squares, *scale, *limit;
    T* out;
    CTK_HOST_DEVICE void operator()(int64_t) const {
        const double s = *scale, norm = s * root(*sum_of_squares);
        *out = static_cast<T>(norm > *limit ? s * (*limit / norm) : s);
    }
};

// A rate divided by a mean multiplier (one element, i = 0): rate / ave with ave = sum / n rounded to T
// (CNTK kept it in ElemType), 1 when n = 0.
template <typename T>
struct MeanMultipliedRate {
    const double *sum, *rate;
    T* out;
    double n;
    CTK_HOST_DEVICE void operator()(int64_t) const {
        const double ave = n > 0 ? static_cast<double>(static_cast<T>(*sum / n)) : 1.0;
        *out = static_cast<T>(*rate / ave);
    }
};

// g^2 in double (the Frobenius norm for rescaling clips).
template <typename T>
struct GradientSquare {
    const T* g;
    CTK_HOST_DEVICE double operator()(int64_t i) const {
        return static_cast<double>(g[i]) * static_cast<double>(g[i]);
    }
};

// w += z (Gaussian noise injection; z drawn on the host).
template <typename T>
struct AddNoise {
    T* w;
    const T* z;
    CTK_HOST_DEVICE void operator()(int64_t i) const { w[i] += z[i]; }
};

// The L1 proximal step: soft-threshold by t.
template <typename T>
struct SoftThreshold {
    T* w;
    const T* threshold;  // per step
    CTK_HOST_DEVICE void operator()(int64_t i) const {
        const T t = *threshold;
        const T v = w[i];
        w[i] = v > t ? v - t : (v < -t ? v + t : T(0));
    }
};

// ---- SGD family ----

template <typename T>
struct SgdStep {
    T* w;
    const T* g;
    const T* rate;  // per step
    CTK_HOST_DEVICE void operator()(int64_t i) const { w[i] -= *rate * g[i]; }
};

// sg = m * sg + step * g; w -= sg (Nesterov: w -= m * sg + step * g).
template <typename T>
struct MomentumStep {
    T* w;
    T* sg;
    const T* g;
    const T *momentum, *step_size;  // per step
    bool nesterov;
    CTK_HOST_DEVICE void operator()(int64_t i) const {
        const T m = *momentum, step = *step_size;
        const T v = m * sg[i] + step * g[i];
        sg[i] = v;
        if (nesterov)
            w[i] -= m * v + step * g[i];
        else
            w[i] -= v;
    }
};

// ---- adaptive learners ----

// AdaGrad: acc += g^2, returning 1 / sqrt(acc + floor) (summed for the mean multiplier).
template <typename T>
struct AdaGradAccumulate {
    T* acc;
    const T* g;
    T floor;
    CTK_HOST_DEVICE double operator()(int64_t i) const {
        acc[i] += g[i] * g[i];
        return static_cast<double>(T(1) / root(acc[i] + floor));
    }
};

template <typename T>
struct AdaGradStep {
    T* w;
    const T* acc;
    const T* g;
    const T* rate;  // per step
    T floor;
    CTK_HOST_DEVICE void operator()(int64_t i) const { w[i] -= *rate * (g[i] / root(acc[i] + floor)); }
};

template <typename T>
struct FSAdaGradStep {
    T* w;
    T* ada;
    T* mom;
    const T* grad;
    const T *momentum, *variance_momentum, *unit_gain_factor, *rate, *multiplier;  // per step
    CTK_HOST_DEVICE void operator()(int64_t i) const {
        const T m = *momentum, vm = *variance_momentum, ugf = *unit_gain_factor, mul = *multiplier;
        T g = grad[i];
        const T sq = vm * ada[i] + (T(1) - vm) * g * g;
        ada[i] = sq;
        if (sq != T(0)) g *= lesser(mul * (T(1) / root(sq)), T(10));
        if (m > T(0)) {
            g = m * mom[i] + ugf * g;
            mom[i] = g;
        }
        w[i] -= g * *rate;
    }
};

template <typename T>
struct AdamStep {
    T* w;
    T* ada;
    T* mom;
    const T* grad;
    const T *momentum, *variance_momentum, *unit_gain_factor, *rate, *bias_correction;  // per step
    T eps;
    bool adamax;
    CTK_HOST_DEVICE void operator()(int64_t i) const {
        const T m = *momentum, vm = *variance_momentum, ugf = *unit_gain_factor, bias = *bias_correction;
        T g = grad[i];
        T d;
        if (!adamax) {
            const T sq = vm * ada[i] + (T(1) - vm) * g * g;
            ada[i] = sq;
            d = root(sq);
        } else {
            d = ada[i] = greater(vm * ada[i], magnitude(g));
        }
        const T scale = bias * (T(1) / (d + eps));
        g = m * mom[i] + ugf * g;
        mom[i] = g;
        w[i] -= g * scale * *rate;
    }
};

// RMSProp's per-element state update, returning the element's step size a = step / sqrt(v + floor).
template <typename T>
struct RMSPropState {
    T* avars;
    T* signs;
    T* steps;
    const T* g;
    T gamma, one_minus_gamma, inc, dec, hi, lo, floor;
    const T* initialized;  // per step: zero while the learner is on its first minibatch
    CTK_HOST_DEVICE T operator()(int64_t i) const {
        if (*initialized == T(0)) {
            avars[i] = g[i] * g[i];
            signs[i] = T(0);
            steps[i] = T(0.02);
        }
        avars[i] = gamma * avars[i] + one_minus_gamma * (g[i] * g[i]);
        const int sign = (T(0) < g[i]) - (g[i] < T(0));
        if (signs[i] * T(sign) > T(0))
            steps[i] = lesser(steps[i] * inc, hi);
        else
            steps[i] = greater(steps[i] * dec, lo);
        signs[i] = T(sign);
        return steps[i] / root(avars[i] + floor);
    }
};

// The state update summed for the mean multiplier (first pass of RMSProp with need_ave_multiplier).
template <typename T>
struct RMSPropStateSum {
    RMSPropState<T> state;
    CTK_HOST_DEVICE double operator()(int64_t i) const { return static_cast<double>(state(i)); }
};

// w -= rate * g * a: with `update_state` the state advances here (one pass), else it was advanced by
// RMSPropStateSum and a is recomputed from it.
template <typename T>
struct RMSPropStep {
    RMSPropState<T> state;
    T* w;
    const T* rate;  // per step
    bool update_state;
    CTK_HOST_DEVICE void operator()(int64_t i) const {
        const T a = update_state ? state(i) : state.steps[i] / root(state.avars[i] + state.floor);
        w[i] -= *rate * (state.g[i] * a);
    }
};

template <typename T>
struct AdaDeltaStep {
    T* w;
    T* ada;
    T* dx2;
    const T* grad;
    T rho, eps;
    const T* rate;  // per step
    CTK_HOST_DEVICE void operator()(int64_t i) const {
        const T g = grad[i];
        const T sq = rho * ada[i] + (T(1) - rho) * g * g;
        ada[i] = sq;
        const T dx = -root(dx2[i] + eps) / root(sq + eps) * g;
        dx2[i] = rho * dx2[i] + (T(1) - rho) * dx * dx;
        w[i] += *rate * dx;
    }
};

}  // namespace ctk::detail::rules

// Every rule template, for the explicit GPU instantiations (each in float and double).
#define CTK_LEARNER_APPLY_RULES(X) \
    X(ClipScale)                   \
    X(MeanMultipliedRate)          \
    X(PrepareGradient)             \
    X(AddNoise)                    \
    X(SoftThreshold)               \
    X(SgdStep)                     \
    X(MomentumStep)                \
    X(AdaGradAccumulate)           \
    X(AdaGradStep)                 \
    X(FSAdaGradStep)               \
    X(AdamStep)                    \
    X(RMSPropStep)                 \
    X(AdaDeltaStep)
#define CTK_LEARNER_SUM_RULES(X) \
    X(GradientSquare)            \
    X(AdaGradAccumulate)         \
    X(RMSPropStateSum)
