// Dense bf16 loops for the element-wise ops that fill a bf16 training step: ReLU, its gradient and the
// residual add. The generic element-wise loops are compiled for the baseline ISA (SSE2), where
// widening bf16 to float and rounding it back take more shuffles than the arithmetic; these take
// target_clones' AVX-512 or AVX2 variant. Same rounding (to nearest even, NaN kept quiet) and so the
// same bits as the generic loops. Arrays are raw bf16 bits, `n` elements each, and may alias.
#pragma once

#include <cstdint>

namespace ctk::cpu::bf16 {

void relu(uint16_t* y, const uint16_t* x, int64_t n);                            // x < 0 ? 0 : x
void relu_grad(uint16_t* dx, const uint16_t* y, const uint16_t* dy, int64_t n);  // y > 0 ? dy : 0
void add(uint16_t* z, const uint16_t* a, const uint16_t* b, int64_t n);

}  // namespace ctk::cpu::bf16
