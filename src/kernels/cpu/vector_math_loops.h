// Internal to vector_math*.cpp: one ISA's loops over SLEEF's vector exp and tanh, instantiated by the
// file compiled for that ISA (vector_math_avx512.cpp, vector_math_avx2.cpp; SSE2 in vector_math.cpp).
// The vector type is GCC's vector extension, the same bits as the intrinsic type SLEEF takes.
#pragma once

#include <sleef.h>

#include <cstdint>
#include <cstring>

namespace ctk::cpu::vmath::detail {

struct Table {
    void (*exp)(float*, const float*, int64_t);
    void (*tanh)(float*, const float*, int64_t);
    void (*sigmoid)(float*, const float*, int64_t);
    float (*max)(const float*, int64_t);
    double (*sum)(const float*, int64_t);
    int64_t (*argmax)(const float*, int64_t);
    const char* isa;
};

Table avx512_table();
Table avx2_table();
Table sse2_table();

}  // namespace ctk::cpu::vmath::detail

// Defines the function `ISA_NAME` returning the table of loops (in an anonymous namespace) over W-wide
// vectors of intrinsic type INTRIN with SLEEF's functions EXP and TANH; ISA_STRING names the ISA.
#define CTK_VMATH_TABLE(ISA_NAME, ISA_STRING, W, INTRIN, EXP, TANH)                               \
    namespace {                                                                                   \
    typedef float Vec __attribute__((vector_size(W * 4)));                                        \
    inline Vec vexp(Vec v) {                                                                      \
        return reinterpret_cast<Vec>(EXP(reinterpret_cast<INTRIN>(v)));                           \
    }                                                                                             \
    inline Vec vtanh(Vec v) {                                                                     \
        return reinterpret_cast<Vec>(TANH(reinterpret_cast<INTRIN>(v)));                          \
    }                                                                                             \
    inline Vec vsigmoid(Vec v) { /* exp of -|x| only: no overflow */                              \
        const Vec a = v < 0 ? -v : v;                                                             \
        const Vec e = vexp(-a);                                                                   \
        const Vec r = 1.0f / (1.0f + e);                                                          \
        return v >= 0 ? r : e * r;                                                                \
    }                                                                                             \
    template <Vec (*F)(Vec)>                                                                      \
    void map(float* y, const float* x, int64_t n) {                                               \
        int64_t i = 0;                                                                            \
        for (; i + W <= n; i += W) {                                                              \
            Vec v;                                                                                \
            std::memcpy(&v, x + i, sizeof v);                                                     \
            v = F(v);                                                                             \
            std::memcpy(y + i, &v, sizeof v);                                                     \
        }                                                                                         \
        if (i < n) { /* the tail padded to a whole vector: the same function for every element */ \
            Vec v{};                                                                              \
            std::memcpy(&v, x + i, static_cast<size_t>(n - i) * sizeof(float));                   \
            v = F(v);                                                                             \
            std::memcpy(y + i, &v, static_cast<size_t>(n - i) * sizeof(float));                   \
        }                                                                                         \
    }                                                                                             \
    /* Lane-wise, then across lanes: a fixed order. A NaN is skipped, as std::max skips it. */    \
    float vmax(const float* x, int64_t n) {                                                       \
        float m = -__builtin_inff();                                                              \
        int64_t i = 0;                                                                            \
        if (n >= W) {                                                                             \
            Vec acc;                                                                              \
            std::memcpy(&acc, x, sizeof acc);                                                     \
            for (i = W; i + W <= n; i += W) {                                                     \
                Vec v;                                                                            \
                std::memcpy(&v, x + i, sizeof v);                                                 \
                acc = acc < v ? v : acc;                                                          \
            }                                                                                     \
            for (int k = 0; k < W; ++k) m = m < acc[k] ? acc[k] : m;                              \
        }                                                                                         \
        for (; i < n; ++i) m = m < x[i] ? x[i] : m;                                               \
        return m;                                                                                 \
    }                                                                                             \
    /* In double, W lanes, then across lanes and the tail: a fixed order. */                      \
    double vsum(const float* x, int64_t n) {                                                      \
        typedef double DVec __attribute__((vector_size(W * 8)));                                  \
        DVec acc{};                                                                               \
        int64_t i = 0;                                                                            \
        for (; i + W <= n; i += W) {                                                              \
            Vec v;                                                                                \
            std::memcpy(&v, x + i, sizeof v);                                                     \
            acc += __builtin_convertvector(v, DVec);                                              \
        }                                                                                         \
        double s = 0;                                                                             \
        for (int k = 0; k < W; ++k) s += acc[k];                                                  \
        for (; i < n; ++i) s += x[i];                                                             \
        return s;                                                                                 \
    }                                                                                             \
    /* Per lane the first maximum (or first NaN), then across lanes the smallest such index. */   \
    int64_t vargmax(const float* x, int64_t n) {                                                  \
        typedef int32_t IVec __attribute__((vector_size(W * 4)));                                 \
        int64_t best = 0;                                                                         \
        float best_v = n > 0 ? x[0] : 0.0f;                                                       \
        int64_t i = 0;                                                                            \
        if (n >= W && n < (int64_t{1} << 30)) {                                                   \
            Vec acc;                                                                              \
            std::memcpy(&acc, x, sizeof acc);                                                     \
            IVec idx, at;                                                                         \
            for (int k = 0; k < W; ++k) idx[k] = k, at[k] = k;                                    \
            for (i = W; i + W <= n; i += W) {                                                     \
                Vec v;                                                                            \
                std::memcpy(&v, x + i, sizeof v);                                                 \
                at += W;                                                                          \
                const IVec take = (v > acc) | ((v != v) & (acc == acc));                          \
                acc = take ? v : acc;                                                             \
                idx = take ? at : idx;                                                            \
            }                                                                                     \
            best = idx[0], best_v = acc[0];                                                       \
            for (int k = 1; k < W; ++k) {                                                         \
                const float v = acc[k];                                                           \
                const bool nan = v != v, best_nan = best_v != best_v;                             \
                if (nan ? !best_nan || idx[k] < best                                              \
                        : !best_nan && (v > best_v || (v == best_v && idx[k] < best)))            \
                    best = idx[k], best_v = v;                                                    \
            }                                                                                     \
        } else {                                                                                  \
            i = n > 0 ? 1 : 0;                                                                    \
        }                                                                                         \
        for (; i < n && best_v == best_v; ++i)                                                    \
            if (x[i] != x[i] || x[i] > best_v) best = i, best_v = x[i];                           \
        return best;                                                                              \
    }                                                                                             \
    }                                                                                             \
    ctk::cpu::vmath::detail::Table ctk::cpu::vmath::detail::ISA_NAME() {                          \
        return {map<vexp>, map<vtanh>, map<vsigmoid>, vmax, vsum, vargmax, ISA_STRING};           \
    }
