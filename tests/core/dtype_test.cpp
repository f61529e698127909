// DataType sizes and names, and f16/bf16 rounding against exact expectations.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ctk/core/dtype.h"
#include "ctk/core/error.h"

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
