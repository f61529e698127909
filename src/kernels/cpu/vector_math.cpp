// SLEEF's vector functions behind one dispatch (vector_math.h): the widest ISA's table, chosen once.
// The SSE2 loops (every x86-64 CPU has SSE2) are compiled here; the wider ones in their own files, with
// their ISA's flags.
#include "kernels/cpu/vector_math.h"

#include "kernels/cpu/vector_math_loops.h"

CTK_VMATH_TABLE(sse2_table, "sse2", 4, __m128, Sleef_expf4_u10sse2, Sleef_tanhf4_u10sse2)

namespace ctk::cpu::vmath {

namespace {
const detail::Table& table() {
    static const detail::Table t = [] {
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f")) return detail::avx512_table();
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return detail::avx2_table();
        return detail::sse2_table();
    }();
    return t;
}
}  // namespace

void exp(float* y, const float* x, int64_t n) {
    table().exp(y, x, n);
}
void tanh(float* y, const float* x, int64_t n) {
    table().tanh(y, x, n);
}
void sigmoid(float* y, const float* x, int64_t n) {
    table().sigmoid(y, x, n);
}
float max(const float* x, int64_t n) {
    return table().max(x, n);
}
double sum(const float* x, int64_t n) {
    return table().sum(x, n);
}
int64_t argmax(const float* x, int64_t n) {
    return table().argmax(x, n);
}
const char* isa() {
    return table().isa;
}

}  // namespace ctk::cpu::vmath
