// Vectorised exp, tanh and the logistic function over contiguous f32 arrays: SLEEF's 1-ulp vector
// functions (the library PyTorch uses for the same job) on the widest ISA this CPU has (AVX-512F,
// AVX2 with FMA, else SSE2), chosen once at start-up. libm's scalar expf/tanhf cost 5-10 ns an element,
// which made the transcendental ops of a softmax over a 10k vocabulary and of recurrent cells' gates
// the largest part of their time. Every element goes through the same vector function (a tail is
// padded), so a value never depends on where it sits in the array. `y` may alias `x`.
#pragma once

#include <cstdint>

namespace ctk::cpu::vmath {

void exp(float* y, const float* x, int64_t n);
void tanh(float* y, const float* x, int64_t n);
void sigmoid(float* y, const float* x, int64_t n);  // 1 / (1 + exp(-x)), without overflow
// The largest element (-inf when empty; NaNs skipped, as std::max skips them), and the sum in double,
// both in an order fixed by the ISA (so the same on every run of one machine).
float max(const float* x, int64_t n);
double sum(const float* x, int64_t n);
// The index of the first maximum, or of the first NaN when there is one (argmax's rule); 0 when empty.
int64_t argmax(const float* x, int64_t n);
// "avx512f", "avx2" or "sse2": the variant in use (for ctk info and tests).
const char* isa();

}  // namespace ctk::cpu::vmath
