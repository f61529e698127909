// Channels-last activations on the CPU (ctk/core/tensor.h): the layout helpers, and a convolution block's
// forward and backward (convolution, batch normalization, relu, residual add, max and average pooling,
// 1-D, 2-D and 3-D, a cropped pooling window, a row-major gradient meeting a channels-last activation)
// giving the same values with the layout on and off, with the layout kept between the ops.
#include <gtest/gtest.h>

#include <cmath>

#include "ctk/ctk.h"
#include "ctk/kernels/cpu_info.h"

using namespace ctk;

namespace {

Tensor random(const Shape& s, uint64_t seed, double lo = -1.0, double hi = 1.0) {
    Generator g(seed);
    Tensor t = Tensor::empty(s, DataType::f32);
    g.uniform(t, lo, hi);
    return t;
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
    EXPECT_EQ(a.shape(), b.shape());
    const std::vector<double> x = a.to_vector<double>(), y = b.to_vector<double>();
    double m = 0;
    for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
    return m;
}

class LayoutGuard {
public:
    explicit LayoutGuard(bool on) { set_cpu_channels_last(on); }
    ~LayoutGuard() { set_cpu_channels_last(true); }
};

// Everything a ResNet block computes, forward and backward, for one layout setting.
struct BlockResult {
    Tensor y, pooled, avg, dx, dw, dscale;
    bool conv_channels_last = false, kept = false;
};

BlockResult run_block(bool channels_last, const Shape& xs, int64_t out_channels) {
    LayoutGuard guard(channels_last);
    const int spatial = xs.rank() - 2;
    Dims ks{out_channels, xs[1]};
    for (int i = 0; i < spatial; ++i) ks.push_back(3);
    const Tensor x = random(xs, 1), w = random(Shape(ks), 2, -0.3, 0.3);
    const Tensor scale = random(Shape{out_channels}, 3, 0.5, 1.5), bias = random(Shape{out_channels}, 4);
    ConvAttrs ca;
    ca.strides = Dims(static_cast<size_t>(spatial), 1);
    ca.dilation = Dims(static_cast<size_t>(spatial), 1);
    ca.pad_lo = ca.pad_hi = Dims(static_cast<size_t>(spatial), 1);
    BlockResult r;
    const Tensor c = convolution(x, w, Tensor(), ca);
    r.conv_channels_last = is_channels_last(c);
    const BatchNormAttrs ba{1e-5, true};
    const BatchNormResult bn = batch_norm_training(c, scale, bias, ba);
    const Tensor a = relu(bn.y);
    const Tensor sum = plus(a, c);  // a residual add
    r.y = sum;
    r.kept = is_channels_last(bn.y) && is_channels_last(a) && is_channels_last(sum);
    PoolAttrs pa;
    pa.kernel = Dims(static_cast<size_t>(spatial), 2);
    pa.strides = Dims(static_cast<size_t>(spatial), 2);
    pa.pad_lo = Dims(static_cast<size_t>(spatial), 0);
    pa.pad_hi = Dims(static_cast<size_t>(spatial), -1);  // crops the last cell: a strided view inside
    const PoolResult p = pooling(sum, pa, true);
    r.pooled = p.y;
    pa.kind = PoolKind::average;
    pa.pad_hi = Dims(static_cast<size_t>(spatial), 0);
    r.avg = pooling(sum, pa, false).y;
    // Backward, with a row-major gradient entering (as one from a dense layer would).
    pa.kind = PoolKind::max;
    pa.pad_hi = Dims(static_cast<size_t>(spatial), -1);
    const Tensor dp = random(p.y.shape(), 5);
    const Tensor dsum = pooling_backward(dp, sum, p.workspace, pa);
    const Tensor da = unary_backward(OpKind::relu, bn.y, a, dsum, {});
    const BatchNormGrads g = batch_norm_backward(c, da, scale, bn.mean, bn.var, ba);
    const Tensor dc = plus(g.dx, dsum);
    r.dx = convolution_backward_data(dc, w, x.shape(), ca);
    r.dw = convolution_backward_weights(x, dc, w.shape(), ca, false).dw;
    r.dscale = g.dscale;
    r.kept = r.kept &&
             (!channels_last || (is_channels_last(dsum) && is_channels_last(g.dx) && is_channels_last(r.dx)));
    return r;
}

}  // namespace

TEST(ChannelsLast, LayoutHelpers) {
    EXPECT_EQ(channels_last_strides(Shape{2, 3, 4, 5}), (Dims{60, 1, 15, 3}));
    EXPECT_EQ(channels_last_strides(Shape{2, 3, 7}), (Dims{21, 1, 3}));
    const Tensor t = empty_channels_last(Shape{2, 3, 4, 5}, DataType::f32);
    EXPECT_TRUE(is_channels_last(t));
    EXPECT_FALSE(t.is_contiguous());
    EXPECT_FALSE(is_channels_last(Tensor::empty(Shape{2, 3, 4, 5})));
    // One channel (or one pixel) makes the layouts one: row-major wins.
    EXPECT_FALSE(is_channels_last(empty_channels_last(Shape{2, 1, 4, 5}, DataType::f32)));
    EXPECT_FALSE(is_channels_last(Tensor::empty(Shape{6, 4})));
    EXPECT_TRUE(is_channels_last(empty_in_layout_of(t, Shape{2, 3, 2, 2}, DataType::f32)));
    EXPECT_TRUE(empty_in_layout_of(t, Shape{6, 20}, DataType::f32).is_contiguous());
    EXPECT_THROW(channels_last_strides(Shape{2, 3}), ShapeError);
}

TEST(ChannelsLast, ElementWiseKeepsTheLayoutAndTheValues) {
    const Tensor a = random(Shape{2, 5, 3, 4}, 7), b = random(Shape{2, 5, 3, 4}, 8);
    Tensor ac = empty_channels_last(a.shape(), DataType::f32),
           bc = empty_channels_last(b.shape(), DataType::f32);
    ac.copy_from(a);
    bc.copy_from(b);
    const Tensor sum = plus(ac, bc);
    EXPECT_TRUE(is_channels_last(sum));
    EXPECT_EQ(max_abs_diff(sum, plus(a, b)), 0.0);
    const Tensor biased = plus(ac, random(Shape{5, 1, 1}, 9));  // a broadcast bias keeps it too
    EXPECT_TRUE(is_channels_last(biased));
    EXPECT_EQ(max_abs_diff(biased, plus(a, random(Shape{5, 1, 1}, 9))), 0.0);
    EXPECT_TRUE(is_channels_last(relu(ac)));
    EXPECT_EQ(max_abs_diff(relu(ac), relu(a)), 0.0);
    // The vectorised transcendentals read a channels-last operand as one array too.
    for (OpKind op : {OpKind::exp, OpKind::tanh, OpKind::sigmoid}) {
        const Tensor got = unary(op, ac, {});
        EXPECT_TRUE(is_channels_last(got));
        EXPECT_EQ(max_abs_diff(got, unary(op, a, {})), 0.0) << op_name(op);
    }
    EXPECT_EQ(max_abs_diff(ac.contiguous(), a), 0.0);
}

TEST(ChannelsLast, ConvolutionBlockMatchesRowMajor) {
    for (const Shape& xs : {Shape{4, 3, 9, 10}, Shape{3, 16, 12}, Shape{2, 4, 5, 6, 7}}) {
        SCOPED_TRACE(xs.to_string());
        const BlockResult on = run_block(true, xs, 20), off = run_block(false, xs, 20);
        EXPECT_TRUE(on.conv_channels_last);
        EXPECT_TRUE(on.kept);
        EXPECT_FALSE(off.conv_channels_last);
        EXPECT_LT(max_abs_diff(on.y, off.y), 1e-4);
        EXPECT_LT(max_abs_diff(on.pooled, off.pooled), 1e-4);
        EXPECT_LT(max_abs_diff(on.avg, off.avg), 1e-4);
        EXPECT_LT(max_abs_diff(on.dx, off.dx), 1e-3);
        EXPECT_LT(max_abs_diff(on.dw, off.dw), 1e-3);
        EXPECT_LT(max_abs_diff(on.dscale, off.dscale), 1e-3);
    }
}

TEST(ChannelsLast, OffKeepsEveryActivationRowMajor) {
    LayoutGuard guard(false);
    EXPECT_FALSE(cpu_channels_last());
    ConvAttrs ca;
    const Tensor y = convolution(random(Shape{2, 3, 5, 5}, 1), random(Shape{4, 3, 3, 3}, 2), Tensor(), ca);
    EXPECT_TRUE(y.is_contiguous());
}

TEST(ChannelsLast, ReductionsInMemoryOrder) {
    const Tensor a = random(Shape{3, 5, 4, 6}, 21);
    Tensor ac = empty_channels_last(a.shape(), DataType::f32);
    ac.copy_from(a);
    for (const std::vector<int>& axes :
         std::vector<std::vector<int>>{{0, 2, 3}, {1}, {0}, {2, 3}, {0, 1, 2, 3}, {-1}})
        for (bool keep : {true, false}) {
            const Tensor got = reduce_sum(ac, axes, keep), want = reduce_sum(a, axes, keep);
            EXPECT_EQ(got.shape(), want.shape());
            EXPECT_LT(max_abs_diff(got, want), 1e-5);
            EXPECT_LT(max_abs_diff(reduce_max(ac, axes, keep), reduce_max(a, axes, keep)), 0.0 + 1e-12);
        }
    EXPECT_LT(max_abs_diff(sum_to_shape(ac, Shape{5, 1, 1}), sum_to_shape(a, Shape{5, 1, 1})), 1e-5);
}

TEST(ChannelsLast, OtherKernelsAndOperandsSeeTheRightLayout) {
    const Tensor a = random(Shape{2, 10, 6, 6}, 31);
    Tensor ac = empty_channels_last(a.shape(), DataType::f32);
    ac.copy_from(a);
    // f64 (the reference kernels) of a channels-last tensor: cast keeps the layout, pooling and batch
    // normalization then give row-major results with the right values.
    PoolAttrs pa;
    pa.kernel = {2, 2};
    pa.strides = {2, 2};
    pa.pad_lo = pa.pad_hi = {0, 0};
    const Tensor a64 = cast(ac, DataType::f64);
    EXPECT_LT(max_abs_diff(pooling(a64, pa, false).y, pooling(a.to(DataType::f64), pa, false).y), 1e-12);
    const Tensor s64 = Tensor::ones(Shape{10}, DataType::f64), b64 = Tensor::zeros(Shape{10}, DataType::f64);
    EXPECT_LT(max_abs_diff(batch_norm_training(a64, s64, b64, {}).y,
                           batch_norm_training(a.to(DataType::f64), s64, b64, {}).y),
              1e-12);
    // Global max pooling (a 1x1 map, both layouts at once) forward and backward: the workspace means
    // the same to both passes.
    pa.kernel = pa.strides = {6, 6};
    const PoolResult g = pooling(ac, pa, true), gr = pooling(a, pa, true);
    EXPECT_LT(max_abs_diff(g.y, gr.y), 1e-7);
    const Tensor dy = random(g.y.shape(), 32);
    EXPECT_LT(
        max_abs_diff(pooling_backward(dy, ac, g.workspace, pa), pooling_backward(dy, a, gr.workspace, pa)),
        1e-7);
    // Dropout draws the same mask for either layout (its stream is indexed by the row-major position).
    Generator g1(5), g2(5);
    EXPECT_EQ(max_abs_diff(dropout(ac, 0.5, g1).y, dropout(a, 0.5, g2).y), 0.0);
    // A channels-last weight is read as a weight.
    const Tensor w = random(Shape{4, 10, 3, 3}, 33);
    Tensor wc = empty_channels_last(w.shape(), DataType::f32);
    wc.copy_from(w);
    ConvAttrs ca;
    EXPECT_LT(max_abs_diff(convolution(a, wc, Tensor(), ca), convolution(a, w, Tensor(), ca)), 1e-5);
}
