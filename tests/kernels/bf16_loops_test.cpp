// The dense bf16 loops (src/kernels/cpu/bf16_loops.h) that ReLU, its gradient and plus take on dense
// bf16 tensors give the generic element-wise loops' bits: every bf16 value as x and as the gradient,
// row-major and channels-last, with a strided view (which takes the generic loop) as the reference.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "ctk/ctk.h"
#include "kernels/cpu/bf16_loops.h"

namespace {

using namespace ctk;

// A [2, 65536] bf16 tensor: row 0 every bit pattern in order, row 1 the same shuffled by a fixed stride.
Tensor every_bf16() {
    Tensor t = Tensor::empty(Shape{2, 65536}, DataType::bf16);
    BFloat16* p = t.data<BFloat16>();
    for (uint32_t i = 0; i < 65536; ++i) {
        p[i] = BFloat16::from_bits(static_cast<uint16_t>(i));
        p[65536 + i] = BFloat16::from_bits(static_cast<uint16_t>(i * 40503u));
    }
    return t;
}

std::vector<uint16_t> bits_of(const Tensor& t) {
    Tensor c = t.contiguous();
    std::vector<uint16_t> v(static_cast<size_t>(c.numel()));
    std::memcpy(v.data(), c.raw_data(), v.size() * 2);
    return v;
}

// The same values as a strided view: [65536, 2] permuted, so the generic loops run.
Tensor strided(const Tensor& t) {
    return t.permute({1, 0}).contiguous().permute({1, 0});
}

TEST(Bf16Loops, DenseRowMajorGivesTheGenericLoopsBits) {
    const Tensor x = every_bf16();
    const Tensor xs = strided(x);
    ASSERT_FALSE(xs.is_contiguous());
    EXPECT_EQ(bits_of(relu(x)), bits_of(relu(xs)));
    // Gradient from y = relu(x): y's row 0 against every dy of row 1, and the other way round.
    const Tensor y = relu(x), dy = x.permute({0, 1}).contiguous();
    const Tensor swapped = Tensor::empty(Shape{2, 65536}, DataType::bf16);
    std::memcpy(swapped.raw_data(), static_cast<const char*>(dy.raw_data()) + 65536 * 2, 65536 * 2);
    std::memcpy(static_cast<char*>(swapped.raw_data()) + 65536 * 2, dy.raw_data(), 65536 * 2);
    for (const Tensor* g : {&dy, &swapped}) {
        EXPECT_EQ(bits_of(unary_backward(OpKind::relu, x, y, *g)),
                  bits_of(unary_backward(OpKind::relu, xs, strided(y), strided(*g))));
        EXPECT_EQ(bits_of(plus(x, *g)), bits_of(plus(xs, strided(*g))));
    }
}

TEST(Bf16Loops, ChannelsLastKeepsItsLayoutAndBits) {
    const Tensor flat = every_bf16();  // 131072 values as [8, 16, 32, 32]
    const Shape shape{8, 16, 32, 32};
    Tensor row_major = Tensor::empty(shape, DataType::bf16);
    std::memcpy(row_major.raw_data(), flat.raw_data(), static_cast<size_t>(flat.numel()) * 2);
    Tensor cl = empty_channels_last(shape, DataType::bf16);
    cl.copy_from(row_major);
    ASSERT_TRUE(is_channels_last(cl));
    const Tensor y = relu(cl);
    EXPECT_TRUE(is_channels_last(y));
    EXPECT_EQ(bits_of(y), bits_of(relu(row_major)));
    EXPECT_EQ(bits_of(plus(cl, y)), bits_of(plus(row_major, relu(row_major))));
    EXPECT_EQ(bits_of(unary_backward(OpKind::relu, cl, y, cl)),
              bits_of(unary_backward(OpKind::relu, row_major, relu(row_major), row_major)));
}

TEST(Bf16Loops, RawLoopsOnShortAndOddLengths) {
    // Every length up to 70 (the clones' vector bodies and tails), in place as well.
    std::vector<uint16_t> x(70), y(70), z(70);
    for (int i = 0; i < 70; ++i)
        x[static_cast<size_t>(i)] = static_cast<uint16_t>(0x3f80 + (i % 2 ? 0x8000 : 0) + i);
    for (int64_t n = 0; n <= 70; ++n) {
        cpu::bf16::relu(y.data(), x.data(), n);
        cpu::bf16::add(z.data(), x.data(), y.data(), n);
        for (int64_t i = 0; i < n; ++i) {
            const auto k = static_cast<size_t>(i);
            const float xv = static_cast<float>(BFloat16::from_bits(x[k]));
            EXPECT_EQ(y[k], BFloat16(xv < 0 ? 0.0f : xv).bits) << n << " " << i;
            EXPECT_EQ(z[k], BFloat16(xv + (xv < 0 ? 0.0f : xv)).bits) << n << " " << i;
        }
    }
    std::vector<uint16_t> g = x;
    cpu::bf16::relu_grad(g.data(), y.data(), g.data(), 70);  // dx over dy
    for (size_t k = 0; k < 70; ++k) EXPECT_EQ(g[k], k % 2 ? 0 : x[k]) << k;
}

}  // namespace
