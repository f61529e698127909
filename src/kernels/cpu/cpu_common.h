// Internal helpers shared by the CPU kernels: compute types for 16-bit floats and stride utilities.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/strided_loop.h"
#include "ctk/core/tensor.h"
#include "ctk/kernels/kernel_table.h"

namespace ctk::cpu {

// One clone of a function per ISA, the widest the CPU has chosen at load time (loops over plain arrays
// that the compiler vectorises for each).
#define CTK_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

// 16-bit floats are computed in float; everything else in its own type.
template <typename T>
using compute_t = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;

template <typename T>
inline compute_t<T> load(T v) {
    if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>)
        return static_cast<float>(v);
    else
        return v;
}
template <typename T>
inline T store(compute_t<T> v) {
    if constexpr (std::is_same_v<T, BFloat16>) {
        // BFloat16(v)'s rounding written without a branch (both results, then a select), so that loops
        // storing bf16 vectorise.
        uint32_t u;
        std::memcpy(&u, &v, 4);
        const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16, quiet_nan = (u >> 16) | 0x40u;
        return BFloat16::from_bits(
            static_cast<uint16_t>((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded));
    } else if constexpr (std::is_same_v<T, Half>) {
        return T(v);
    } else {
        return v;
    }
}

inline Dims byte_strides(const Tensor& t) {
    Dims s = t.strides();
    for (auto& x : s) x *= static_cast<int64_t>(t.element_size());
    return s;
}
inline char* bytes(const Tensor& t) {
    return static_cast<char*>(t.raw_data());
}

// Registers fn for `op` on the CPU for each dtype in Ts.
template <typename... Ts>
struct DTypes {};
using FloatTypes = DTypes<float, double, Half, BFloat16>;

// Family registration functions, one per kernel file (called from register.cpp).
void register_elementwise(KernelTable& t);
void register_reduce(KernelTable& t);
void register_softmax(KernelTable& t);
void register_matmul(KernelTable& t);
void register_convolution(KernelTable& t);
void register_pooling(KernelTable& t);
void register_batch_norm(KernelTable& t);
void register_dropout(KernelTable& t);
void register_indexing(KernelTable& t);
void register_roi_pooling(KernelTable& t);

}  // namespace ctk::cpu
