// Division by a divisor that stays fixed for a whole kernel launch, as a multiply and a shift. A GPU has
// no integer divider: a 64-bit `/` or `%` is a software routine of about a hundred instructions, which
// in a per-element index computation (a channel from a flat index) costs more than the memory traffic.
// The divisor's magic number is made once on the host (Granlund and Montgomery's round-up method); the
// quotient is exact for every numerator below 2^31. Plain C++ beside CUDA so the CPU tests check it.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define CTK_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define CTK_HOST_DEVICE inline
#endif

namespace ctk::cuda {

// Numerators and the divisor must be below 2^31 (callers take another path for larger indices).
struct FastDivmod {
    uint32_t divisor = 1, magic = 1, shift = 0;

    FastDivmod() = default;
    explicit FastDivmod(uint32_t d) : divisor(d) {
        while ((uint64_t(1) << shift) < d) ++shift;  // the smallest shift with 2^shift >= d
        // magic = floor(2^32 (2^shift - d) / d) + 1: below 2^32 for every d < 2^31.
        magic = static_cast<uint32_t>(((uint64_t(1) << 32) * ((uint64_t(1) << shift) - d)) / d + 1);
    }

    CTK_HOST_DEVICE uint32_t div(uint32_t n) const {
#if defined(__CUDA_ARCH__)
        const uint32_t high = __umulhi(n, magic);
#else
        const uint32_t high = static_cast<uint32_t>((uint64_t(n) * magic) >> 32);
#endif
        return (high + n) >> shift;  // no overflow: high < n < 2^31
    }
    CTK_HOST_DEVICE uint32_t mod(uint32_t n) const {
        return n - div(n) * divisor;
    }
};

}  // namespace ctk::cuda
