// CNTK's numeric conventions for the element-wise ops whose plain C++ math would give -inf, NaN or inf,
// written once for the CPU and CUDA kernels so both devices give the same numbers. CNTK 2.7 computed
// (Math/TensorOps.h): log(x) = -85.1 for x < 1e-37 (and its gradient g * exp(-log x), finite there);
// sqrt(x) = sqrt(max(x, 0)); reciprocal(0) = 0; a / b = a * reciprocal(b), so x / 0 = 0 (CNTK's
// ElementDivide is a block of ElementTimes and Reciprocal); pow(0, e) = 0 for e != 0, a negative base
// takes only integer exponents (NaN otherwise), and d pow / d exponent is 0 where the base is <= 0.
// Scripts and models trained with CNTK count on these (a log-loss of a zero probability stays finite).
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define CTK_MATH_HD __host__ __device__ __forceinline__
#else
#define CTK_MATH_HD inline
#endif

namespace ctk::cntk_math {

// The host pass takes std's float overloads (plain log(float) would compute in double); the device pass
// takes CUDA's.
#if defined(__CUDA_ARCH__)
#define CTK_MATH_STD
#else
#define CTK_MATH_STD using std::exp, std::floor, std::fmod, std::log, std::pow, std::sqrt
#endif

// CNTK's EPS_IN_LOG and LOG_OF_EPS_IN_LOG (float constants, used for every element type).
constexpr float kLogEps = 1e-37f;
constexpr float kLogOfLogEps = -85.1f;

template <typename C>
CTK_MATH_HD C log_of(C x) {
    CTK_MATH_STD;
    return x < C(kLogEps) ? C(kLogOfLogEps) : log(x);
}

// d log / dx from the output, as CNTK: g * exp(-y). Below kLogEps y is -85.1, so the gradient is a
// large finite number where 1/x would be inf.
template <typename C>
CTK_MATH_HD C log_grad(C x, C g) {
    CTK_MATH_STD;
    return x < C(kLogEps) ? g * exp(-C(kLogOfLogEps)) : g / x;
}

template <typename C>
CTK_MATH_HD C sqrt_of(C x) {
    CTK_MATH_STD;
    return sqrt(x > C(0) ? x : C(0));
}

template <typename C>
CTK_MATH_HD C reciprocal_of(C x) {
    return x == C(0) ? C(0) : C(1) / x;
}

template <typename C>
CTK_MATH_HD C divide(C a, C b) {
    return b == C(0) ? C(0) : a / b;
}

template <typename C>
CTK_MATH_HD C pow_of(C base, C exponent) {
    CTK_MATH_STD;
    if (exponent == C(0)) return C(1);
    if (base == C(0)) return C(0);
    if (base > C(0)) return pow(base, exponent);
    const C whole = floor(exponent);
    if (whole != exponent) return C(NAN);
    // A negative base to an integer power: |base|^e, negative for odd e. fmod keeps this exact for
    // exponents past the int range, where CNTK's int cast overflowed.
    const C magnitude = pow(-base, exponent);
    return fmod(whole, C(2)) == C(0) ? magnitude : -magnitude;
}

}  // namespace ctk::cntk_math
