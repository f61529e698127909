// FastDivmod (kernels/cuda/fast_divmod.h) against the integer division it replaces in the CUDA kernels'
// index math: every divisor up to 4096 with numerators around each multiple, the divisors that make the
// magic number largest, and random pairs over the whole supported range (numerators below 2^31).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>

#include "kernels/cuda/fast_divmod.h"

namespace ctk::cuda {
namespace {

void expect_exact(const FastDivmod& f, uint32_t d, uint32_t n) {
    ASSERT_EQ(f.div(n), n / d) << n << " / " << d;
    ASSERT_EQ(f.mod(n), n % d) << n << " % " << d;
}

TEST(FastDivmod, SmallDivisorsAroundEveryMultiple) {
    for (uint32_t d = 1; d <= 4096; ++d) {
        const FastDivmod f(d);
        for (uint32_t m = 0; m < 64; ++m)
            for (int64_t delta = -1; delta <= 1; ++delta) {
                const int64_t n = int64_t(m) * d + delta;
                if (n >= 0) expect_exact(f, d, static_cast<uint32_t>(n));
            }
        expect_exact(f, d, (1u << 31) - 1);
        expect_exact(f, d, (1u << 31) - 1 - ((1u << 31) - 1) % d);  // the largest multiple below 2^31
    }
}

TEST(FastDivmod, PowersOfTwoAndTheirNeighbours) {
    for (int k = 0; k < 31; ++k)
        for (int64_t delta = -1; delta <= 1; ++delta) {
            const int64_t d = (int64_t(1) << k) + delta;
            if (d < 1 || d >= (int64_t(1) << 31)) continue;
            const FastDivmod f(static_cast<uint32_t>(d));
            for (uint32_t n : {0u, 1u, static_cast<uint32_t>(d - 1), static_cast<uint32_t>(d),
                               static_cast<uint32_t>(d + 1), (1u << 30) + 7u, (1u << 31) - 1})
                if (n < (1u << 31)) expect_exact(f, static_cast<uint32_t>(d), n);
        }
}

TEST(FastDivmod, RandomPairsBelowTwoToThe31) {
    std::mt19937 rng(20261126);
    std::uniform_int_distribution<uint32_t> numerator(0, (1u << 31) - 1);
    for (int i = 0; i < 2000; ++i) {
        // Divisors spread over every magnitude: a random bit length, then a random value of it.
        const int bits = static_cast<int>(rng() % 31) + 1;
        const uint32_t d = std::max<uint32_t>(1, rng() & ((1u << bits) - 1));
        const FastDivmod f(d);
        for (int j = 0; j < 500; ++j) expect_exact(f, d, numerator(rng));
    }
}

}  // namespace
}  // namespace ctk::cuda
