// The element-wise ops' math and their gradients, written once for the CPU and CUDA kernels
// (cpu/elementwise.cpp, cuda/elementwise.cu): each takes the op as a value, and a kernel that passes a
// constant (the CPU's per-op loops) gets the switch folded away. Values are computed in the compute type
// C (float for f16 and bf16 data, as on both devices, so 16-bit results round once, from the same float).
// CNTK's conventions for log, sqrt, reciprocal, division and pow are in cntk_math.h.
#pragma once

#include <cmath>

#include "ctk/kernels/kernel_op_list.h"
#include "kernels/cntk_math.h"

namespace ctk::elementwise_math {

// Always inlined on the host too: the CPU kernels call these with a constant op inside their loops, and
// only an inlined switch folds to the one formula.
#if defined(__CUDACC__)
#define CTK_ELEMENTWISE_HD __host__ __device__ __forceinline__
#else
#define CTK_ELEMENTWISE_HD inline __attribute__((always_inline))
#endif

// The host pass takes std's float overloads (plain exp(float) would compute in double); the device pass
// takes CUDA's.
#if defined(__CUDA_ARCH__)
#define CTK_ELEMENTWISE_STD
#else
#define CTK_ELEMENTWISE_STD                                                                                  \
    using std::acos, std::asin, std::asinh, std::atan, std::atanh, std::ceil, std::cos, std::cosh, std::erf, \
        std::exp, std::expm1, std::fabs, std::floor, std::log1p, std::sin, std::sinh, std::sqrt, std::tan,   \
        std::tanh
#endif

// The logistic function without overflow for large |x| (the fused recurrent cells use it too, so both
// paths give the same numbers).
template <typename C>
CTK_ELEMENTWISE_HD C sigmoid_of(C x) {
    CTK_ELEMENTWISE_STD;
    if (x >= C(0)) return C(1) / (C(1) + exp(-x));
    const C e = exp(x);
    return e / (C(1) + e);
}

template <typename C>
CTK_ELEMENTWISE_HD C max_of(C a, C b) {
    return a < b ? b : a;
}
template <typename C>
CTK_ELEMENTWISE_HD C min_of(C a, C b) {
    return b < a ? b : a;
}

// y = op(v); alpha and beta are the op's scalars (elu's alpha, selu's scale and alpha, leaky_relu's
// slope, hard_sigmoid's slope and offset, clip's bounds).
template <typename C>
CTK_ELEMENTWISE_HD C unary_value(OpKind op, C v, C alpha, C beta) {
    CTK_ELEMENTWISE_STD;
    switch (op) {
        case OpKind::negate:
            return -v;
        case OpKind::abs:
            return fabs(v);
        case OpKind::sqrt:
            return cntk_math::sqrt_of(v);
        case OpKind::square:
            return v * v;
        case OpKind::exp:
            return exp(v);
        case OpKind::log:
            return cntk_math::log_of(v);
        case OpKind::floor:
            return floor(v);
        case OpKind::ceil:
            return ceil(v);
        case OpKind::round:
            return floor(v + C(0.5));  // CNTK rounds halves up: round(-0.5) = 0
        case OpKind::sin:
            return sin(v);
        case OpKind::cos:
            return cos(v);
        case OpKind::tan:
            return tan(v);
        case OpKind::asin:
            return asin(v);
        case OpKind::acos:
            return acos(v);
        case OpKind::atan:
            return atan(v);
        case OpKind::sinh:
            return sinh(v);
        case OpKind::cosh:
            return cosh(v);
        case OpKind::tanh:
            return tanh(v);
        case OpKind::asinh:
            return asinh(v);
        case OpKind::erf:
            return erf(v);
        case OpKind::atanh:
            return atanh(v);
        case OpKind::reciprocal:
            return cntk_math::reciprocal_of(v);
        case OpKind::sigmoid:
            return sigmoid_of(v);
        case OpKind::relu:
            return v < C(0) ? C(0) : v;
        case OpKind::elu:
            return v > C(0) ? v : alpha * expm1(v);
        case OpKind::selu:  // alpha: the scale, beta: the ELU alpha
            return v > C(0) ? alpha * v : alpha * beta * expm1(v);
        case OpKind::leaky_relu:
            return v > C(0) ? v : alpha * v;
        case OpKind::softplus:
            return max_of(v, C(0)) + log1p(exp(-fabs(v)));
        case OpKind::softsign:
            return v / (C(1) + fabs(v));
        case OpKind::hard_sigmoid:
            return min_of(C(1), max_of(C(0), alpha * v + beta));
        case OpKind::element_not:
            return v == C(0) ? C(1) : C(0);
        case OpKind::clip: {
            // NumPy's order, the upper bound last (min > max gives max everywhere, as CNTK's tests expect).
            const C low = v < alpha ? alpha : v;
            return low > beta ? beta : low;
        }
        default:
            return v;
    }
}

// dx from x, y = op(x) and dy. Rules that read only y let a training step free x (relu, sigmoid, tanh,
// exp, sqrt, reciprocal, tan).
template <typename C>
CTK_ELEMENTWISE_HD C unary_grad(OpKind op, C x, C y, C g, C alpha, C beta) {
    CTK_ELEMENTWISE_STD;
    const C one(1), zero(0);
    switch (op) {
        case OpKind::negate:
            return -g;
        case OpKind::abs:
            return x > zero ? g : (x < zero ? -g : zero);
        case OpKind::sqrt:
            return g / (C(2) * y);
        case OpKind::square:
            return C(2) * x * g;
        case OpKind::exp:
            return y * g;
        case OpKind::log:
            return cntk_math::log_grad(x, g);
        case OpKind::floor:
        case OpKind::ceil:
        case OpKind::round:
        case OpKind::element_not:
            return zero;
        case OpKind::sin:
            return cos(x) * g;
        case OpKind::cos:
            return -sin(x) * g;
        case OpKind::tan:
            return (one + y * y) * g;
        case OpKind::asin:
            return g / sqrt(one - x * x);
        case OpKind::acos:
            return -g / sqrt(one - x * x);
        case OpKind::atan:
            return g / (one + x * x);
        case OpKind::sinh:
            return cosh(x) * g;
        case OpKind::cosh:
            return sinh(x) * g;
        case OpKind::tanh:
            return (one - y * y) * g;
        case OpKind::asinh:
            return g / sqrt(x * x + one);
        case OpKind::erf:  // 2 / sqrt(pi) exp(-x^2)
            return C(1.1283791670955126) * exp(-x * x) * g;
        case OpKind::atanh:
            return g / (one - x * x);
        case OpKind::reciprocal:
            return -y * y * g;
        case OpKind::sigmoid:
            return y * (one - y) * g;
        case OpKind::relu:  // from y (y > 0 exactly where x > 0)
            return y > zero ? g : zero;
        case OpKind::elu:
            return x > zero ? g : (y + alpha) * g;
        case OpKind::selu:  // at x = 0 the positive side's slope, as CNTK (and leaky_relu below)
            return x >= zero ? alpha * g : (y + alpha * beta) * g;
        case OpKind::leaky_relu:
            return x >= zero ? g : alpha * g;
        case OpKind::softplus:
            return sigmoid_of(x) * g;
        case OpKind::softsign: {
            const C d = one + fabs(x);
            return g / (d * d);
        }
        case OpKind::hard_sigmoid: {
            const C v = alpha * x + beta;
            return (v > zero && v < one) ? alpha * g : zero;
        }
        case OpKind::clip:
            return (x >= alpha && x <= beta) ? g : zero;
        default:
            return zero;
    }
}

template <typename C>
CTK_ELEMENTWISE_HD C binary_value(OpKind op, C x, C y) {
    CTK_ELEMENTWISE_STD;
    const C one(1), zero(0);
    switch (op) {
        case OpKind::plus:
            return x + y;
        case OpKind::minus:
            return x - y;
        case OpKind::element_times:
            return x * y;
        case OpKind::element_divide:
            return cntk_math::divide(x, y);
        case OpKind::pow:
            return cntk_math::pow_of(x, y);
        case OpKind::element_max:  // NaN propagates, as in NumPy's maximum
            return (x > y || x != x) ? x : y;
        case OpKind::element_min:
            return (x < y || x != x) ? x : y;
        case OpKind::log_add_exp: {
            const C m = max_of(x, y);
            if (m == C(-INFINITY)) return m;
            return m + log1p(exp(-fabs(x - y)));
        }
        case OpKind::equal:
            return x == y ? one : zero;
        case OpKind::not_equal:
            return x != y ? one : zero;
        case OpKind::less:
            return x < y ? one : zero;
        case OpKind::less_equal:
            return x <= y ? one : zero;
        case OpKind::greater:
            return x > y ? one : zero;
        case OpKind::greater_equal:
            return x >= y ? one : zero;
        case OpKind::element_and:
            return (x != zero && y != zero) ? one : zero;
        case OpKind::element_or:
            return (x != zero || y != zero) ? one : zero;
        case OpKind::element_xor:
            return ((x != zero) != (y != zero)) ? one : zero;
        case OpKind::param_relu:
            return x > zero ? x : y * x;
        default:
            return zero;
    }
}

#undef CTK_ELEMENTWISE_STD
#undef CTK_ELEMENTWISE_HD

}  // namespace ctk::elementwise_math
