// DataType sizes and names, and f16/bf16 rounding against exact expectations.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "ctk/core/dtype.h"
#include "ctk/core/error.h"
#include "ctk/core/tensor.h"

using namespace ctk;

TEST(DType, SizesAndNames) {
    EXPECT_EQ(size_of(DataType::f32), 4u);
    EXPECT_EQ(size_of(DataType::f64), 8u);
    EXPECT_EQ(size_of(DataType::f16), 2u);
    EXPECT_EQ(size_of(DataType::bf16), 2u);
    EXPECT_EQ(size_of(DataType::i32), 4u);
    EXPECT_EQ(size_of(DataType::i64), 8u);
    EXPECT_EQ(size_of(DataType::u8), 1u);
    for (int i = 0; i < kNumDataTypes; ++i) {
        auto d = static_cast<DataType>(i);
        EXPECT_EQ(dtype_from_name(dtype_name(d)), d);
    }
    EXPECT_THROW(dtype_from_name("float128"), ValueError);
    EXPECT_TRUE(is_floating(DataType::bf16));
    EXPECT_FALSE(is_floating(DataType::i64));
}

TEST(Half, ExactValuesRoundTrip) {
    for (float v : {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f /*2^-14*/, 5.9604645e-8f /*2^-24*/}) {
        EXPECT_EQ(static_cast<float>(Half(v)), v) << v;
    }
    EXPECT_EQ(Half(1.0f).bits, 0x3c00);
    EXPECT_EQ(Half(-2.0f).bits, 0xc000);
    EXPECT_EQ(Half(65504.0f).bits, 0x7bff);
    EXPECT_EQ(Half(5.9604645e-8f).bits, 0x0001);  // smallest subnormal
}

TEST(Half, RoundsToNearestEven) {
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1.0).
    EXPECT_EQ(Half(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);
    // 1 + 3*2^-11 is halfway between 1+2^-10 (odd) and 1+2^-9 (even): rounds up.
    EXPECT_EQ(Half(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);
    // just above halfway rounds up
    EXPECT_EQ(Half(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)).bits, 0x3c01);
    // subnormal halfway: 1.5 * 2^-24 ties to even 2 * 2^-24
    EXPECT_EQ(Half(1.5f * std::ldexp(1.0f, -24)).bits, 0x0002);
    EXPECT_EQ(Half(0.5f * std::ldexp(1.0f, -24)).bits, 0x0000);  // tie to even zero
    EXPECT_EQ(Half(0.51f * std::ldexp(1.0f, -24)).bits, 0x0001);
}

TEST(Half, OverflowInfinityNaN) {
    EXPECT_EQ(Half(65519.0f).bits, 0x7bff);  // below the rounding boundary
    EXPECT_EQ(Half(65520.0f).bits, 0x7c00);  // rounds to infinity
    EXPECT_EQ(Half(1e10f).bits, 0x7c00);
    EXPECT_EQ(Half(-std::numeric_limits<float>::infinity()).bits, 0xfc00);
    EXPECT_TRUE(std::isnan(static_cast<float>(Half(std::nanf("")))));
    EXPECT_TRUE(std::isinf(static_cast<float>(Half::from_bits(0x7c00))));
}

TEST(Half, AllBitPatternsRoundTrip) {
    for (uint32_t b = 0; b < 0x10000; ++b) {
        Half h = Half::from_bits(static_cast<uint16_t>(b));
        float f = static_cast<float>(h);
        if (std::isnan(f)) continue;
        ASSERT_EQ(Half(f).bits, b) << std::hex << b;
    }
}

// A double becomes a 16-bit float rounded once (as CUDA's __double2half and __double2bfloat16 do), not
// rounded to float first: 1 + 2^-11 + 2^-40 is above the midpoint between two halves, which float's
// rounding would land on exactly (and then tie to even, down).
TEST(Half, FromDoubleRoundsOnce) {
    const double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
    EXPECT_EQ(Half(static_cast<float>(above_tie)).bits, 0x3c00);  // what rounding twice gives
    EXPECT_EQ(Half::from_double(above_tie).bits, 0x3c01);
    EXPECT_EQ(Half::from_double(-above_tie).bits, 0xbc01);
    EXPECT_EQ(Half::from_double(1.0 + std::ldexp(1.0, -11)).bits, 0x3c00);  // an exact tie: to even
    EXPECT_EQ(Half::from_double(std::ldexp(0.5, -24) + std::ldexp(1.0, -60)).bits, 0x0001);
    EXPECT_EQ(Half::from_double(65520.0 - std::ldexp(1.0, -30)).bits, 0x7bff);
    EXPECT_EQ(Half::from_double(65520.0).bits, 0x7c00);
    EXPECT_EQ(Half::from_double(1e300).bits, 0x7c00);
    EXPECT_EQ(Half::from_double(-0.0).bits, 0x8000);
    EXPECT_EQ(Half::from_double(1e-300).bits, 0x0000);
    EXPECT_TRUE(std::isnan(static_cast<float>(Half::from_double(std::nan("")))));
    EXPECT_EQ(BFloat16::from_double(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)).bits, 0x3f81);
    EXPECT_EQ(BFloat16::from_double(1.0 + std::ldexp(1.0, -8)).bits, 0x3f80);
    // Tensors convert the same way (a cast, a fill).
    const Tensor t =
        Tensor::from_vector(std::vector<double>{above_tie, -above_tie}, Shape{2}).to(DataType::f16);
    EXPECT_EQ(t.data<Half>()[0].bits, 0x3c01);
    EXPECT_EQ(t.data<Half>()[1].bits, 0xbc01);
    EXPECT_EQ(Tensor::full(Shape{1}, above_tie, DataType::f16).data<Half>()[0].bits, 0x3c01);
}

// Against an independent reference: the nearest of the neighbouring halves, ties to the even one.
TEST(Half, FromDoubleIsTheNearestHalf) {
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> mantissa(1.0, 2.0);
    std::uniform_int_distribution<int> exponent(-26, 16);
    for (int i = 0; i < 200000; ++i) {
        const double d = (i % 2 ? -1.0 : 1.0) * std::ldexp(mantissa(rng), exponent(rng));
        const uint16_t guess = Half(static_cast<float>(d)).bits;
        uint16_t best = guess;
        double best_err = std::numeric_limits<double>::infinity();
        for (int delta = -1; delta <= 1; ++delta) {
            const auto bits = static_cast<uint16_t>(guess + delta);
            if (((bits >> 10) & 0x1f) == 0x1f) continue;  // inf/NaN
            if ((bits & 0x7fff) == 0 && delta != 0) continue;
            const double err = std::fabs(static_cast<double>(static_cast<float>(Half::from_bits(bits))) - d);
            if (err < best_err || (err == best_err && (bits & 1u) == 0)) {
                best = bits;
                best_err = err;
            }
        }
        if (std::fabs(d) >= 65520.0) best = static_cast<uint16_t>((d < 0 ? 0x8000 : 0) | 0x7c00);
        ASSERT_EQ(Half::from_double(d).bits, best) << std::hexfloat << d;
    }
}

TEST(BFloat16, Rounding) {
    EXPECT_EQ(BFloat16(1.0f).bits, 0x3f80);
    // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0)
    EXPECT_EQ(BFloat16(1.0f + std::ldexp(1.0f, -8)).bits, 0x3f80);
    EXPECT_EQ(BFloat16(1.0f + 3 * std::ldexp(1.0f, -8)).bits, 0x3f82);
    EXPECT_EQ(static_cast<float>(BFloat16(3.0f)), 3.0f);
    EXPECT_TRUE(std::isnan(static_cast<float>(BFloat16(std::nanf("")))));
    EXPECT_TRUE(std::isinf(static_cast<float>(BFloat16(std::numeric_limits<float>::infinity()))));
    // the largest finite float rounds up to infinity
    EXPECT_TRUE(std::isinf(static_cast<float>(BFloat16(std::numeric_limits<float>::max()))));
}
