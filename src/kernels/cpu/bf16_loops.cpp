// Dense bf16 loops (bf16_loops.h), one clone per ISA.
#include "kernels/cpu/bf16_loops.h"

#include <cstring>

#include "kernels/cpu/cpu_common.h"

namespace ctk::cpu::bf16 {

namespace {

inline float widen(uint16_t bits) {
    const uint32_t u = static_cast<uint32_t>(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

inline uint16_t narrow(float f) {
    return store<BFloat16>(f).bits;
}

}  // namespace

CTK_VECTOR_CLONES void relu(uint16_t* y, const uint16_t* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float v = widen(x[i]);
        y[i] = narrow(v < 0.0f ? 0.0f : v);
    }
}

CTK_VECTOR_CLONES void relu_grad(uint16_t* dx, const uint16_t* y, const uint16_t* dy, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        const float g = widen(dy[i]);  // read whatever y says: a conditional read would not vectorise
        dx[i] = narrow(widen(y[i]) > 0.0f ? g : 0.0f);
    }
}

CTK_VECTOR_CLONES void add(uint16_t* z, const uint16_t* a, const uint16_t* b, int64_t n) {
    for (int64_t i = 0; i < n; ++i) z[i] = narrow(widen(a[i]) + widen(b[i]));
}

}  // namespace ctk::cpu::bf16
