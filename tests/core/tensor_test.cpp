// Tensor views (no copies), copies, conversions and the errors for bad views.
#include <gtest/gtest.h>

#include "ctk/core/error.h"
#include "ctk/core/tensor.h"

using namespace ctk;

TEST(Tensor, FactoriesAndAccess) {
    Tensor t = Tensor::arange(Shape{2, 3});
    EXPECT_EQ(t.numel(), 6);
    EXPECT_TRUE(t.is_contiguous());
    EXPECT_EQ(t.at({1, 2}), 5.0);
    t.set({0, 1}, 7.5);
    EXPECT_EQ(t.at({0, 1}), 7.5);
    EXPECT_EQ(Tensor::full(Shape{2}, 3.0, DataType::f64).to_vector<double>(), (std::vector<double>{3, 3}));
    EXPECT_EQ(Tensor::scalar(4.0).item(), 4.0);
    EXPECT_THROW(t.data<double>(), TypeError);
    EXPECT_THROW(t.at({2, 0}), IndexError);
    EXPECT_THROW(Tensor::from_vector<float>({1, 2, 3}, Shape{2, 2}), ShapeError);
    EXPECT_EQ(t.to_string(), "Tensor(float32, [2, 3], CPU)");
}

TEST(Tensor, SliceSelectAreViews) {
    Tensor t = Tensor::arange(Shape{4, 5});
    Tensor s = t.slice(1, 1, 5, 2);  // columns 1, 3
    EXPECT_EQ(s.shape(), (Shape{4, 2}));
    EXPECT_TRUE(s.shares_storage(t));
    EXPECT_FALSE(s.is_contiguous());
    EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, 3, 6, 8, 11, 13, 16, 18}));
    Tensor r = t.select(0, -1);
    EXPECT_EQ(r.to_vector<float>(), (std::vector<float>{15, 16, 17, 18, 19}));
    s.set({0, 0}, 100);
    EXPECT_EQ(t.at({0, 1}), 100);
    EXPECT_EQ(t.slice(0, 3, 1).numel(), 0);  // empty slice
    EXPECT_THROW(t.slice(2, 0, 1), ValueError);
    EXPECT_THROW(t.slice(0, 0, 1, 0), ValueError);
}

TEST(Tensor, TransposePermuteBroadcast) {
    Tensor t = Tensor::arange(Shape{2, 3});
    Tensor tt = t.transpose(0, 1);
    EXPECT_EQ(tt.shape(), (Shape{3, 2}));
    EXPECT_EQ(tt.to_vector<float>(), (std::vector<float>{0, 3, 1, 4, 2, 5}));
    EXPECT_TRUE(tt.shares_storage(t));
    Tensor c = tt.contiguous();
    EXPECT_TRUE(c.is_contiguous());
    EXPECT_FALSE(c.shares_storage(t));
    EXPECT_THROW(t.permute({0, 0}), ValueError);
    Tensor row = Tensor::arange(Shape{3});
    Tensor b = row.broadcast_to(Shape{2, 3});
    EXPECT_EQ(b.strides(), (Dims{0, 1}));
    EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{0, 1, 2, 0, 1, 2}));
    EXPECT_THROW(row.broadcast_to(Shape{2, 4}), ShapeError);
    EXPECT_EQ(row.expand_dims(0).shape(), (Shape{1, 3}));
    EXPECT_EQ(row.expand_dims(-1).shape(), (Shape{3, 1}));
    EXPECT_EQ(row.expand_dims(0).squeeze(0).shape(), (Shape{3}));
    EXPECT_THROW(row.squeeze(0), ShapeError);
}

TEST(Tensor, ViewAndReshape) {
    Tensor t = Tensor::arange(Shape{2, 3, 4});
    Tensor v = t.view({6, -1});
    EXPECT_EQ(v.shape(), (Shape{6, 4}));
    EXPECT_TRUE(v.shares_storage(t));
    EXPECT_EQ(t.view({2, 1, 12, 1}).shape(), (Shape{2, 1, 12, 1}));
    // a column slice keeps rows separate: [2, 3, 2] -> [6, 2] is a view, [12] is not
    Tensor s = t.slice(2, 0, 2);
    EXPECT_EQ(s.view({6, 2}).to_vector<float>(), s.contiguous().view({6, 2}).to_vector<float>());
    EXPECT_THROW(s.view({12}), ShapeError);
    Tensor r = s.reshape({12});
    EXPECT_FALSE(r.shares_storage(t));
    EXPECT_EQ(r.to_vector<float>(), s.contiguous().to_vector<float>());
    // a transposed tensor cannot be flattened without a copy
    EXPECT_THROW(t.transpose(0, 2).view({24}), ShapeError);
    EXPECT_THROW(t.view({5, -1}), ShapeError);
    EXPECT_THROW(t.view({-1, -1}), ShapeError);
    EXPECT_THROW(t.reshape({7}), ShapeError);
    EXPECT_EQ(Tensor::empty(Shape{0, 3}).view({3, 0}).shape(), (Shape{3, 0}));
}

TEST(Tensor, AsStridedBoundsAreChecked) {
    Tensor t = Tensor::arange(Shape{10});
    Tensor w = t.as_strided(Shape{3, 4}, Dims{2, 1}, 1);  // overlapping windows are fine
    EXPECT_EQ(w.at({2, 3}), 8.0);
    EXPECT_THROW(t.as_strided(Shape{3, 4}, Dims{3, 1}, 1), IndexError);
    EXPECT_THROW(t.as_strided(Shape{2}, Dims{-1}, 0), IndexError);
    EXPECT_THROW(t.as_strided(Shape{2}, Dims{1, 1}, 0), ShapeError);
}

TEST(Tensor, WrapChecksBoundsAndAlignment) {
    auto buf = std::make_shared<std::vector<float>>(6, 1.0f);
    Tensor w = Tensor::wrap(buf->data(), 24, Shape{2, 3}, Dims{3, 1}, DataType::f32, Device::cpu(), buf);
    EXPECT_EQ(w.at({1, 2}), 1.0);
    EXPECT_THROW(Tensor::wrap(buf->data(), 24, Shape{2, 4}, Dims{4, 1}, DataType::f32, Device::cpu(), buf),
                 IndexError);
    char* misaligned = reinterpret_cast<char*>(buf->data()) + 1;
    EXPECT_THROW(Tensor::wrap(misaligned, 20, Shape{2}, Dims{1}, DataType::f32, Device::cpu(), buf),
                 ValueError);
}

TEST(Tensor, CopyConvertsAndBroadcasts) {
    Tensor t = Tensor::arange(Shape{2, 3}, DataType::f64);
    Tensor f = t.to(DataType::bf16).to(DataType::f32);
    EXPECT_EQ(f.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
    Tensor h = t.to(DataType::f16);
    EXPECT_EQ(h.at({1, 1}), 4.0);
    Tensor i = Tensor::from_vector<double>({1.7, -2.2}, Shape{2}).to(DataType::i64);
    EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{1, -2}));
    Tensor dst = Tensor::zeros(Shape{2, 3});
    dst.copy_from(Tensor::from_vector<float>({1, 2, 3}, Shape{3}));
    EXPECT_EQ(dst.to_vector<float>(), (std::vector<float>{1, 2, 3, 1, 2, 3}));
    EXPECT_THROW(dst.copy_from(Tensor::zeros(Shape{2})), ShapeError);
    // copying into a strided view writes only the view
    Tensor big = Tensor::zeros(Shape{3, 4});
    Tensor sub = big.slice(1, 1, 3);
    sub.fill(9);
    EXPECT_EQ(big.to_vector<float>(), (std::vector<float>{0, 9, 9, 0, 0, 9, 9, 0, 0, 9, 9, 0}));
}

TEST(Tensor, LargeStridedCopyMatchesElementwise) {
    Tensor t = Tensor::arange(Shape{64, 33, 17}, DataType::f64);
    Tensor p = t.permute({2, 0, 1}).contiguous();
    for (int64_t a = 0; a < 17; a += 5)
        for (int64_t b = 0; b < 64; b += 7)
            for (int64_t c = 0; c < 33; c += 4) ASSERT_EQ(p.at({a, b, c}), t.at({b, c, a}));
}
