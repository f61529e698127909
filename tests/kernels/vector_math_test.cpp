// The vectorised exp/tanh/sigmoid and row reductions (src/kernels/cpu/vector_math.h) against float64
// references, over every length that exercises the vector body and its padded tail, with CNTK-relevant
// special values (±inf, NaN, large arguments that overflow a naive sigmoid).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/vector_math.h"

namespace {

using ctk::cpu::vmath::argmax;
namespace vm = ctk::cpu::vmath;

std::vector<float> samples(int64_t n, uint32_t seed, float scale) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(-scale, scale);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = u(gen);
    return v;
}

// |a - b| in units of float's spacing at b (0 when both are the same non-finite value).
double ulps(float a, double b) {
    if (std::isnan(b)) return std::isnan(a) ? 0.0 : 1e30;
    if (std::isinf(b)) return a == static_cast<float>(b) ? 0.0 : 1e30;
    const float bf = static_cast<float>(b);
    const double spacing =
        std::max(std::nextafter(std::abs(bf), std::numeric_limits<float>::infinity()) - std::abs(bf),
                 std::numeric_limits<float>::denorm_min());
    return std::abs(static_cast<double>(a) - b) / spacing;
}

void check_map(void (*fn)(float*, const float*, int64_t), double (*ref)(double), float scale,
               const char* name) {
    for (int64_t n = 0; n <= 40; ++n) {
        std::vector<float> x = samples(n, static_cast<uint32_t>(n) + 1, scale), y(static_cast<size_t>(n));
        fn(y.data(), x.data(), n);
        for (int64_t i = 0; i < n; ++i)
            EXPECT_LE(ulps(y[static_cast<size_t>(i)], ref(x[static_cast<size_t>(i)])), 2.0)
                << name << "(" << x[static_cast<size_t>(i)] << ") at " << i << " of " << n;
    }
    // In place, on a long array.
    std::vector<float> x = samples(1000, 99, scale), y = x;
    fn(y.data(), y.data(), 1000);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_LE(ulps(y[i], ref(x[i])), 2.0) << name << " in place";
}

double sigmoid64(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}

TEST(VectorMath, ExpTanhSigmoidWithinTwoUlpsOfFloat64) {
    check_map(
        vm::exp, [](double x) { return std::exp(x); }, 80.0f, "exp");
    check_map(
        vm::tanh, [](double x) { return std::tanh(x); }, 12.0f, "tanh");
    check_map(
        vm::tanh, [](double x) { return std::tanh(x); }, 1e-3f, "tanh near 0");
    check_map(vm::sigmoid, sigmoid64, 100.0f, "sigmoid");
    check_map(vm::sigmoid, sigmoid64, 2.0f, "sigmoid near 0");
}

TEST(VectorMath, SpecialValues) {
    const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> x{inf, -inf, nan, 0.0f, -0.0f, 100.0f, -100.0f, -1e30f, 1e30f}, y(x.size());
    vm::exp(y.data(), x.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(y[0], inf);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_EQ(y[3], 1.0f);
    EXPECT_EQ(y[5], inf);
    EXPECT_LE(ulps(y[6], std::exp(-100.0)), 2.0);  // a denormal
    vm::sigmoid(y.data(), x.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_TRUE(std::isnan(y[2]));
    EXPECT_EQ(y[3], 0.5f);
    EXPECT_EQ(y[5], 1.0f);
    EXPECT_EQ(y[7], 0.0f);  // no overflow for large negative arguments
    vm::tanh(y.data(), x.data(), static_cast<int64_t>(x.size()));
    EXPECT_EQ(y[0], 1.0f);
    EXPECT_EQ(y[1], -1.0f);
    EXPECT_TRUE(std::isnan(y[2]));
}

TEST(VectorMath, MaxSumArgmaxMatchTheScalarRules) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    for (int64_t n = 0; n <= 70; ++n) {
        std::vector<float> x = samples(n, static_cast<uint32_t>(n) + 7, 5.0f);
        float m = -std::numeric_limits<float>::infinity();
        double s = 0;
        int64_t first = 0;
        for (int64_t i = 0; i < n; ++i) {
            m = std::max(m, x[static_cast<size_t>(i)]);
            s += x[static_cast<size_t>(i)];
            if (x[static_cast<size_t>(i)] > x[static_cast<size_t>(first)]) first = i;
        }
        EXPECT_EQ(vm::max(x.data(), n), m) << n;
        EXPECT_NEAR(vm::sum(x.data(), n), s, 1e-9 * std::max(1.0, std::abs(s))) << n;
        EXPECT_EQ(argmax(x.data(), n), first) << n;
        if (n >= 3) {
            // Ties: the first maximum wins, wherever the lanes split them.
            std::vector<float> t(static_cast<size_t>(n), 1.0f);
            t[static_cast<size_t>(n / 2)] = 2.0f;
            t[static_cast<size_t>(n - 1)] = 2.0f;
            EXPECT_EQ(argmax(t.data(), n), n / 2) << n;
            // A NaN wins over any number, the first NaN over later ones.
            t[static_cast<size_t>(n - 1)] = nan;
            t[static_cast<size_t>(n - 2)] = nan;
            EXPECT_EQ(argmax(t.data(), n), n - 2) << n;
            float skipping = -std::numeric_limits<float>::infinity();
            for (float v : t) skipping = std::max(skipping, v);
            EXPECT_EQ(vm::max(t.data(), n), skipping) << n;  // NaN skipped, as std::max skips it
        }
    }
    EXPECT_TRUE(std::string(vm::isa()) == "avx512f" || std::string(vm::isa()) == "avx2" ||
                std::string(vm::isa()) == "sse2");
}

// The kernels' branch-free bf16 store rounds as BFloat16(float) does (to nearest even, NaN kept quiet
// with its sign): every upper half of a float with the lower halves that decide the rounding.
TEST(Bf16Store, RoundsAsTheConstructor) {
    for (uint32_t hi = 0; hi <= 0xffffu; ++hi)
        for (uint32_t lo : {0x0000u, 0x0001u, 0x7fffu, 0x8000u, 0x8001u, 0xc000u, 0xffffu}) {
            const uint32_t u = (hi << 16) | lo;
            float f;
            std::memcpy(&f, &u, 4);
            ASSERT_EQ(ctk::cpu::store<ctk::BFloat16>(f).bits, ctk::BFloat16(f).bits) << std::hex << u;
        }
}

}  // namespace
