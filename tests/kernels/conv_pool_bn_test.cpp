// Convolution, pooling and batch normalization: typed errors whose messages name the op and shapes,
// CNTK's geometry (auto-padding, padding never winning a max), the f32 oneDNN backward kernels checked
// against the f64 direct loops, and the primitive cache under threads.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "ctk/ctk.h"

using namespace ctk;

namespace {

template <typename Fn>
void expect_error_mentions(Fn fn, std::initializer_list<const char*> parts) {
    try {
        fn();
        FAIL() << "no error thrown";
    } catch (const Error& e) {
        for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
}

Tensor random(const Shape& s, uint64_t seed, double lo = -1.0, double hi = 1.0) {
    Generator g(seed);
    Tensor t = Tensor::empty(s, DataType::f32);
    g.uniform(t, lo, hi);
    return t;
}

// Largest |a - b| relative to the largest |b| (at least 1): a scale-aware comparison for sums of
// many f32 products.
double max_rel_error(const Tensor& a, const Tensor& b) {
    EXPECT_EQ(a.shape(), b.shape());
    auto va = a.to_vector<double>(), vb = b.to_vector<double>();
    double err = 0, scale = 1;
    for (size_t i = 0; i < va.size(); ++i) {
        err = std::max(err, std::fabs(va[i] - vb[i]));
        scale = std::max(scale, std::fabs(vb[i]));
    }
    return err / scale;
}

ConvAttrs pads(Dims lo, Dims hi) {
    ConvAttrs a;
    a.pad_lo = std::move(lo);
    a.pad_hi = std::move(hi);
    return a;
}

}  // namespace

// ---- errors ----

TEST(ConvolutionErrors, ShapesAndTypes) {
    Tensor x = Tensor::zeros(Shape{1, 3, 5, 5}), w = Tensor::zeros(Shape{4, 3, 3, 3});
    // Mismatched channels.
    expect_error_mentions(
        [&] {
            convolution(x, Tensor::zeros(Shape{4, 2, 3, 3}), Tensor(), {});
        },
        {"convolution", "[1, 3, 5, 5]", "[4, 2, 3, 3]", "channels"});
    EXPECT_THROW(convolution(x, Tensor::zeros(Shape{4, 2, 3, 3}), Tensor(), {}), ShapeError);
    // Wrong weight rank.
    expect_error_mentions(
        [&] {
            convolution(x, Tensor::zeros(Shape{4, 3, 3}), Tensor(), {});
        },
        {"convolution", "[4, 3, 3]", "[1, 3, 5, 5]"});
    EXPECT_THROW(convolution(x, Tensor::zeros(Shape{4, 3, 3}), Tensor(), {}), ShapeError);
    // Kernel bigger than the padded input; padding makes it fit.
    Tensor big = Tensor::zeros(Shape{4, 3, 7, 7});
    expect_error_mentions(
        [&] {
            convolution(x, big, Tensor(), pads({0, 0}, {1, 1}));
        },
        {"convolution", "[4, 3, 7, 7]", "[1, 3, 5, 5]"});
    EXPECT_THROW(convolution(x, big, Tensor(), pads({0, 0}, {1, 1})), ShapeError);
    EXPECT_EQ(convolution(x, big, Tensor(), pads({1, 1}, {1, 1})).shape(), (Shape{1, 4, 1, 1}));
    EXPECT_THROW(conv_output_spatial(Shape{1, 3, 5, 5}, Shape{4, 3, 7, 7}, {}), ShapeError);
    // Wrong bias shape.
    expect_error_mentions([&] { convolution(x, w, Tensor::zeros(Shape{5}), {}); },
                          {"convolution", "[5]", "bias"});
    EXPECT_THROW(convolution(x, w, Tensor::zeros(Shape{5}), {}), ShapeError);
    // Integer input, and x and w of different dtypes.
    expect_error_mentions(
        [&] {
            convolution(Tensor::zeros(Shape{1, 3, 5, 5}, DataType::i32), w, Tensor(), {});
        },
        {"convolution", "int32", "[1, 3, 5, 5]"});
    EXPECT_THROW(convolution(Tensor::zeros(Shape{1, 3, 5, 5}, DataType::i32), w, Tensor(), {}), TypeError);
    expect_error_mentions(
        [&] {
            convolution(x, Tensor::zeros(Shape{4, 3, 3, 3}, DataType::f64), Tensor(), {});
        },
        {"convolution", "float32", "float64", "[4, 3, 3, 3]"});
    EXPECT_THROW(convolution(x, Tensor::zeros(Shape{4, 3, 3, 3}, DataType::f64), Tensor(), {}), TypeError);
    // x of rank 2 or 6, undefined operands.
    EXPECT_THROW(convolution(Tensor::zeros(Shape{3, 5}), w, Tensor(), {}), ShapeError);
    EXPECT_THROW(convolution(Tensor(), w, Tensor(), {}), ValueError);
}

TEST(ConvolutionErrors, Attributes) {
    Tensor x = Tensor::zeros(Shape{1, 4, 5, 5}), w = Tensor::zeros(Shape{6, 2, 3, 3});
    ConvAttrs a;
    a.groups = 2;
    EXPECT_EQ(convolution(x, w, Tensor(), a).shape(), (Shape{1, 6, 3, 3}));
    a.groups = 4;  // 4 does not divide 6 output channels
    expect_error_mentions([&] { convolution(x, w, Tensor(), a); }, {"convolution", "groups", "[6, 2, 3, 3]"});
    EXPECT_THROW(convolution(x, w, Tensor(), a), ShapeError);
    a.groups = 0;
    EXPECT_THROW(convolution(x, w, Tensor(), a), ValueError);
    ConvAttrs s;
    s.strides = {1, 1, 1};  // three entries for two spatial axes
    expect_error_mentions(
        [&] {
            convolution(x, Tensor::zeros(Shape{6, 4, 3, 3}), Tensor(), s);
        },
        {"convolution", "strides", "[1, 1, 1]"});
    EXPECT_THROW(convolution(x, Tensor::zeros(Shape{6, 4, 3, 3}), Tensor(), s), ValueError);
    s.strides = {0, 1};
    EXPECT_THROW(convolution(x, Tensor::zeros(Shape{6, 4, 3, 3}), Tensor(), s), ValueError);
    ConvAttrs d;
    d.dilation = {0, 1};
    EXPECT_THROW(convolution(x, Tensor::zeros(Shape{6, 4, 3, 3}), Tensor(), d), ValueError);
}

TEST(ConvolutionErrors, Backward) {
    Tensor w = Tensor::zeros(Shape{4, 3, 3, 3});
    Tensor dy = Tensor::zeros(Shape{2, 4, 4, 4});  // the output of a 5x5 input is 3x3
    expect_error_mentions(
        [&] {
            convolution_backward_data(dy, w, Shape{2, 3, 5, 5}, {});
        },
        {"convolution_backward_data", "[2, 4, 4, 4]", "[2, 4, 3, 3]"});
    EXPECT_THROW(convolution_backward_data(dy, w, Shape{2, 3, 5, 5}, {}), ShapeError);
    expect_error_mentions(
        [&] {
            convolution_backward_weights(Tensor::zeros(Shape{2, 3, 5, 5}), dy, w.shape(), {}, true);
        },
        {"convolution_backward_weights", "[2, 4, 4, 4]", "[2, 4, 3, 3]"});
    EXPECT_THROW(convolution_backward_weights(Tensor::zeros(Shape{2, 3, 5, 5}), dy, w.shape(), {}, true),
                 ShapeError);
    EXPECT_THROW(convolution_backward_weights(Tensor::zeros(Shape{2, 3, 5, 5}, DataType::f64),
                                              Tensor::zeros(Shape{2, 4, 3, 3}), w.shape(), {}, false),
                 TypeError);
}

TEST(PoolingErrors, ShapesAttributesAndWorkspace) {
    Tensor x = Tensor::zeros(Shape{1, 2, 4, 4});
    PoolAttrs a;
    a.kernel = {2, 2};
    a.strides = {2, 2};
    // Missing workspace for max-pooling backward.
    Tensor dy = Tensor::zeros(Shape{1, 2, 2, 2});
    expect_error_mentions([&] { pooling_backward(dy, x, Tensor(), a); },
                          {"pooling_backward", "workspace", "[1, 2, 4, 4]"});
    EXPECT_THROW(pooling_backward(dy, x, Tensor(), a), ValueError);
    EXPECT_THROW(pooling_backward(dy, x, Tensor::zeros(Shape{4}), a), TypeError);  // f32, not a workspace
    // Average pooling needs none.
    PoolAttrs avg = a;
    avg.kind = PoolKind::average;
    EXPECT_EQ(pooling_backward(dy, x, Tensor(), avg).shape(), x.shape());
    // A workspace from another geometry.
    Tensor other_ws = pooling(Tensor::zeros(Shape{1, 2, 6, 6}), a, true).workspace;
    EXPECT_THROW(pooling_backward(dy, x, other_ws, a), ValueError);
    // dy of the wrong shape.
    expect_error_mentions(
        [&] {
            pooling_backward(Tensor::zeros(Shape{1, 2, 3, 3}), x, Tensor(), avg);
        },
        {"pooling_backward", "[1, 2, 3, 3]", "[1, 2, 2, 2]"});
    // Kernel of the wrong length, bigger than the input, pads of a whole kernel.
    PoolAttrs k3 = a;
    k3.kernel = {2, 2, 2};
    expect_error_mentions([&] { pooling(x, k3, false); }, {"pooling", "kernel", "[2, 2, 2]", "[1, 2, 4, 4]"});
    EXPECT_THROW(pooling(x, k3, false), ValueError);
    PoolAttrs huge = a;
    huge.kernel = {5, 2};
    expect_error_mentions([&] { pooling(x, huge, false); }, {"pooling", "[5, 2]", "[1, 2, 4, 4]"});
    EXPECT_THROW(pooling(x, huge, false), ShapeError);
    PoolAttrs padded = a;
    padded.pad_lo = {2, 0};
    EXPECT_THROW(pooling(x, padded, false), ValueError);
    EXPECT_THROW(pooling(Tensor::zeros(Shape{1, 2, 4, 4}, DataType::i32), a, false), TypeError);
    EXPECT_THROW(pooling(Tensor::zeros(Shape{4, 4}), a, false), ShapeError);
}

TEST(BatchNormErrors, ParameterShapesAndTypes) {
    Tensor x = Tensor::zeros(Shape{2, 4, 3, 3}), p = Tensor::ones(Shape{4});
    BatchNormAttrs a;
    expect_error_mentions([&] { batch_norm_training(x, Tensor::ones(Shape{3}), p, a); },
                          {"batch_norm_training", "scale", "[3]", "[4]", "[2, 4, 3, 3]"});
    EXPECT_THROW(batch_norm_training(x, Tensor::ones(Shape{3}), p, a), ShapeError);
    // Per activation, parameters are shaped like one sample.
    BatchNormAttrs per_act{1e-5, false};
    expect_error_mentions([&] { batch_norm_training(x, p, p, per_act); },
                          {"batch_norm_training", "scale", "[4]", "[4, 3, 3]"});
    Tensor sample = Tensor::ones(Shape{4, 3, 3});
    EXPECT_EQ(batch_norm_training(x, sample, sample, per_act).mean.shape(), (Shape{4, 3, 3}));
    EXPECT_THROW(batch_norm_training(x, Tensor::ones(Shape{4}, DataType::f64), p, a), TypeError);
    EXPECT_THROW(batch_norm_training(Tensor::zeros(Shape{2, 4}, DataType::i32), p, p, a), TypeError);
    EXPECT_THROW(batch_norm_training(Tensor::zeros(Shape{8}), p, p, a), ShapeError);
    EXPECT_THROW(batch_norm_training(x, p, p, BatchNormAttrs{-1.0, true}), ValueError);
    expect_error_mentions(
        [&] {
            batch_norm_inference(x, p, p, p, Tensor::ones(Shape{4, 1}), a);
        },
        {"batch_norm_inference", "var", "[4, 1]"});
    EXPECT_THROW(batch_norm_inference(x, p, p, p, Tensor::ones(Shape{4, 1}), a), ShapeError);
    expect_error_mentions(
        [&] {
            batch_norm_backward(x, Tensor::zeros(Shape{2, 4, 3}), p, p, p, a);
        },
        {"batch_norm_backward", "dy", "[2, 4, 3]", "[2, 4, 3, 3]"});
    EXPECT_THROW(batch_norm_backward(x, Tensor::zeros(Shape{2, 4, 3}), p, p, p, a), ShapeError);
}

// ---- CNTK geometry ----

TEST(ConvolutionGeometry, CntkAutoPad) {
    struct Row {
        int64_t in, kernel, stride, dilation, lo, hi;
    };
    // Worked by hand from ConvolveGeometry's centring: out = ceil(in / stride), the first kernel
    // centre at (in - ((out - 1) * stride + 1)) / 2.
    for (const Row& r :
         {Row{5, 3, 1, 1, 1, 1}, Row{32, 3, 2, 1, 1, 0}, Row{6, 1, 3, 1, -1, -1}, Row{6, 2, 3, 1, -1, 0},
          Row{4, 2, 1, 1, 0, 1}, Row{8, 4, 3, 1, 1, 1}, Row{7, 1, 4, 1, -1, -1}, Row{9, 3, 2, 2, 2, 2},
          Row{16, 5, 1, 1, 2, 2}, Row{10, 2, 4, 1, 0, 0}}) {
        int64_t lo = 99, hi = 99;
        cntk_auto_pad(r.in, r.kernel, r.stride, r.dilation, lo, hi);
        EXPECT_EQ(lo, r.lo) << "in " << r.in << " kernel " << r.kernel << " stride " << r.stride;
        EXPECT_EQ(hi, r.hi) << "in " << r.in << " kernel " << r.kernel << " stride " << r.stride;
        // The output always has ceil(in / stride) cells.
        ConvAttrs a;
        a.strides = {r.stride};
        a.dilation = {r.dilation};
        a.pad_lo = {lo};
        a.pad_hi = {hi};
        EXPECT_EQ(conv_output_spatial(Shape{1, 1, r.in}, Shape{1, 1, r.kernel}, a),
                  (Dims{(r.in + r.stride - 1) / r.stride}));
    }
    int64_t lo, hi;
    EXPECT_THROW(cntk_auto_pad(5, 0, 1, 1, lo, hi), ValueError);
}

TEST(ConvolutionGeometry, NegativePadsCropTheInput) {
    // Pads -1/-1 with a 1-wide kernel and stride 3 read x[1] and x[4] of 6 cells.
    Tensor x = Tensor::arange(Shape{1, 1, 6}), w = Tensor::ones(Shape{1, 1, 1});
    ConvAttrs a = pads({-1}, {-1});
    a.strides = {3};
    EXPECT_EQ(convolution(x, w, Tensor(), a).to_vector<float>(), (std::vector<float>{1, 4}));
    // The gradient reaches only the cells that were read.
    Tensor dx = convolution_backward_data(Tensor::ones(Shape{1, 1, 2}), w, x.shape(), a);
    EXPECT_EQ(dx.to_vector<float>(), (std::vector<float>{0, 1, 0, 0, 1, 0}));
    EXPECT_EQ(convolution_backward_weights(x, Tensor::ones(Shape{1, 1, 2}), w.shape(), a, true).dw.item(),
              5.0);
}

TEST(PoolingGeometry, PaddingNeverWinsAndDivisors) {
    PoolAttrs a;
    a.kernel = {3, 3};
    a.strides = {1, 1};
    a.pad_lo = {1, 1};
    a.pad_hi = {1, 1};
    Tensor neg = Tensor::full(Shape{1, 1, 3, 3}, -2.0);
    for (float v : pooling(neg, a, false).y.to_vector<float>()) EXPECT_EQ(v, -2.0f);
    a.kind = PoolKind::average;
    Tensor ones = Tensor::ones(Shape{1, 1, 3, 3});
    a.include_pad = true;
    EXPECT_NEAR(pooling(ones, a, false).y.at({0, 0, 0, 0}), 4.0 / 9.0, 1e-6);  // corner: 4 of 9 cells are x
    a.include_pad = false;
    EXPECT_NEAR(pooling(ones, a, false).y.at({0, 0, 0, 0}), 1.0, 1e-6);
    // Only max pooling in training has a workspace.
    a.kind = PoolKind::max;
    EXPECT_FALSE(pooling(ones, a, false).workspace.defined());
    Tensor ws = pooling(ones, a, true).workspace;
    ASSERT_TRUE(ws.defined());
    EXPECT_EQ(ws.dtype(), DataType::u8);
}

// ---- the oneDNN f32 backward kernels against the f64 direct loops ----

struct ConvGeometryCase {
    Shape x, w;
    ConvAttrs attrs;
};

TEST(OneDnnVsReference, ConvolutionBackward) {
    auto make = [](Dims s, Dims d, Dims lo, Dims hi, int64_t g) {
        ConvAttrs a;
        a.strides = std::move(s);
        a.dilation = std::move(d);
        a.pad_lo = std::move(lo);
        a.pad_hi = std::move(hi);
        a.groups = g;
        return a;
    };
    const std::vector<ConvGeometryCase> cases = {
        {{4, 16, 10, 10}, {16, 16, 3, 3}, make({1, 1}, {1, 1}, {1, 1}, {1, 1}, 1)},  // blocked layouts
        {{4, 16, 10, 10}, {32, 16, 3, 3}, make({2, 2}, {1, 1}, {1, 1}, {1, 1}, 1)},
        {{2, 3, 9, 8}, {5, 3, 3, 2}, make({2, 1}, {2, 1}, {1, 0}, {2, 1}, 1)},
        {{2, 6, 7, 7}, {6, 2, 3, 3}, make({1, 1}, {1, 1}, {1, 1}, {1, 1}, 3)},
        {{2, 16, 6, 6}, {16, 1, 3, 3}, make({1, 1}, {1, 1}, {1, 1}, {1, 1}, 16)},  // depthwise
        {{3, 4, 11}, {6, 4, 3}, make({2}, {2}, {-1}, {1}, 1)},                     // 1-D, negative pad
        {{2, 3, 4, 5, 4}, {4, 3, 2, 3, 2}, make({1, 2, 1}, {1, 1, 2}, {1, 1, 0}, {0, 1, 1}, 1)},
    };
    uint64_t seed = 10;
    for (const auto& c : cases) {
        SCOPED_TRACE("x " + c.x.to_string() + " w " + c.w.to_string());
        Tensor x = random(c.x, ++seed), w = random(c.w, ++seed);
        Shape y_shape = convolution(x, w, Tensor(), c.attrs).shape();
        Tensor dy = random(y_shape, ++seed);
        Tensor dx32 = convolution_backward_data(dy, w, c.x, c.attrs);
        ConvWeightGrads g32 = convolution_backward_weights(x, dy, c.w, c.attrs, true);
        Tensor dx64 = convolution_backward_data(dy.to(DataType::f64), w.to(DataType::f64), c.x, c.attrs);
        ConvWeightGrads g64 =
            convolution_backward_weights(x.to(DataType::f64), dy.to(DataType::f64), c.w, c.attrs, true);
        EXPECT_EQ(dx32.dtype(), DataType::f32);
        EXPECT_LT(max_rel_error(dx32, dx64), 1e-5);
        EXPECT_LT(max_rel_error(g32.dw, g64.dw), 1e-5);
        EXPECT_LT(max_rel_error(g32.db, g64.db), 1e-5);
        // The forward too, with a bias.
        Tensor b = random(Shape{c.w[0]}, ++seed);
        EXPECT_LT(
            max_rel_error(convolution(x, w, b, c.attrs), convolution(x.to(DataType::f64), w.to(DataType::f64),
                                                                     b.to(DataType::f64), c.attrs)),
            1e-5);
    }
}

TEST(OneDnnVsReference, PoolingBackward) {
    for (PoolKind kind : {PoolKind::max, PoolKind::average}) {
        for (bool include_pad : {false, true}) {
            PoolAttrs a;
            a.kind = kind;
            a.include_pad = include_pad;
            a.kernel = {3, 2};
            a.strides = {2, 1};
            a.pad_lo = {1, 0};
            a.pad_hi = {1, 1};
            Tensor x = random(Shape{2, 16, 9, 8}, 3);
            PoolResult r32 = pooling(x, a, true);
            Tensor dy = random(r32.y.shape(), 4);
            Tensor x64 = x.to(DataType::f64);
            PoolResult r64 = pooling(x64, a, true);
            EXPECT_LT(max_rel_error(r32.y, r64.y), 1e-6);
            EXPECT_LT(max_rel_error(pooling_backward(dy, x, r32.workspace, a),
                                    pooling_backward(dy.to(DataType::f64), x64, r64.workspace, a)),
                      1e-6);
        }
    }
}

TEST(OneDnnVsReference, BatchNormBackward) {
    // Plain and blocked layouts (16+ channels), channel counts that do not fill a block, ranks 2 to 5.
    for (const Shape& xs :
         {Shape{8, 16, 5, 5}, Shape{6, 20, 7}, Shape{4, 3, 4, 5}, Shape{9, 40}, Shape{4, 24, 3, 2, 3}})
        for (bool spatial : {true, false}) {
            SCOPED_TRACE(xs.to_string() + (spatial ? " spatial" : " per activation"));
            BatchNormAttrs a{1e-5, spatial};
            Tensor x = random(xs, 5, -2, 3);
            Shape ps = spatial ? Shape{xs[1]} : Shape(Dims(xs.dims().begin() + 1, xs.dims().end()));
            Tensor scale = random(ps, 6, 0.5, 1.5), bias = random(ps, 7), dy = random(x.shape(), 8);
            auto f64 = [](const Tensor& t) { return t.to(DataType::f64); };
            BatchNormResult r32 = batch_norm_training(x, scale, bias, a);
            BatchNormResult r64 = batch_norm_training(f64(x), f64(scale), f64(bias), a);
            EXPECT_LT(max_rel_error(r32.y, r64.y), 1e-5);
            EXPECT_LT(max_rel_error(r32.mean, r64.mean), 1e-5);
            EXPECT_LT(max_rel_error(r32.var, r64.var), 1e-5);
            BatchNormGrads g32 = batch_norm_backward(x, dy, scale, r32.mean, r32.var, a);
            BatchNormGrads g64 = batch_norm_backward(f64(x), f64(dy), f64(scale), r64.mean, r64.var, a);
            EXPECT_LT(max_rel_error(g32.dx, g64.dx), 1e-5);
            EXPECT_LT(max_rel_error(g32.dscale, g64.dscale), 1e-5);
            EXPECT_LT(max_rel_error(g32.dbias, g64.dbias), 1e-5);
            Tensor y_inf = batch_norm_inference(x, scale, bias, r32.mean, r32.var, a);
            EXPECT_LT(max_rel_error(y_inf, r64.y), 1e-5);
        }
}

TEST(OneDnnVsReference, BatchNormFarFromZero) {
    // Data whose mean is 500 times its spread: a one-pass variance without the plain kernel's shift
    // would lose most of its digits in f32.
    for (const Shape& xs : {Shape{8, 16, 5, 5}, Shape{16, 3, 9}}) {
        SCOPED_TRACE(xs.to_string());
        const BatchNormAttrs a{1e-5, true};
        const Tensor x = random(xs, 11, 999, 1001);
        const Tensor scale = random(Shape{xs[1]}, 12, 0.5, 1.5), bias = random(Shape{xs[1]}, 13);
        const Tensor dy = random(xs, 14);
        auto f64 = [](const Tensor& t) { return t.to(DataType::f64); };
        const BatchNormResult r32 = batch_norm_training(x, scale, bias, a);
        const BatchNormResult r64 = batch_norm_training(f64(x), f64(scale), f64(bias), a);
        EXPECT_LT(max_rel_error(r32.var, r64.var), 1e-4);
        EXPECT_LT(max_rel_error(r32.y, r64.y), 1e-3);  // f32 holds x to 6e-5 of its spread here
        const BatchNormGrads g32 = batch_norm_backward(x, dy, scale, r32.mean, r32.var, a);
        const BatchNormGrads g64 = batch_norm_backward(f64(x), f64(dy), f64(scale), r64.mean, r64.var, a);
        EXPECT_LT(max_rel_error(g32.dx, g64.dx), 1e-3);
        EXPECT_LT(max_rel_error(g32.dscale, g64.dscale), 1e-3);
    }
}

TEST(OneDnnVsReference, Bf16AgainstF32) {
    // bf16 inputs hold exact values in f32 too, so only accumulation and the bf16 outputs differ.
    auto bf16 = [](const Tensor& t) { return t.to(DataType::bf16); };
    auto f32 = [](const Tensor& t) { return t.to(DataType::f32); };
    Tensor x = bf16(random(Shape{2, 16, 8, 8}, 1)), w = bf16(random(Shape{16, 16, 3, 3}, 2));
    Tensor b = bf16(random(Shape{16}, 3)), dy = bf16(random(Shape{2, 16, 8, 8}, 4));
    ConvAttrs a = pads({1, 1}, {1, 1});
    Tensor y = convolution(x, w, b, a);
    EXPECT_EQ(y.dtype(), DataType::bf16);
    EXPECT_LT(max_rel_error(y, convolution(f32(x), f32(w), f32(b), a)), 1e-2);
    EXPECT_LT(max_rel_error(convolution_backward_data(dy, w, x.shape(), a),
                            convolution_backward_data(f32(dy), f32(w), x.shape(), a)),
              1e-2);
    ConvWeightGrads g = convolution_backward_weights(x, dy, w.shape(), a, true);
    ConvWeightGrads g32 = convolution_backward_weights(f32(x), f32(dy), w.shape(), a, true);
    EXPECT_LT(max_rel_error(g.dw, g32.dw), 1e-2);
    EXPECT_LT(max_rel_error(g.db, g32.db), 1e-2);

    PoolAttrs p;
    p.kernel = {3, 3};
    p.strides = {2, 2};
    p.pad_lo = {1, 1};
    p.pad_hi = {1, 1};
    PoolResult r = pooling(x, p, true), r32 = pooling(f32(x), p, true);
    EXPECT_LT(max_rel_error(r.y, r32.y), 1e-6);  // a maximum of bf16 values is exact
    Tensor pdy = bf16(random(r.y.shape(), 5));
    // Overlapping windows add gradients in bf16.
    EXPECT_LT(max_rel_error(pooling_backward(pdy, x, r.workspace, p),
                            pooling_backward(f32(pdy), f32(x), r32.workspace, p)),
              1e-2);

    BatchNormAttrs bn;
    Tensor scale = bf16(random(Shape{16}, 6, 0.5, 1.5)), shift = bf16(random(Shape{16}, 7));
    BatchNormResult n16 = batch_norm_training(x, scale, shift, bn);
    BatchNormResult n32 = batch_norm_training(f32(x), f32(scale), f32(shift), bn);
    EXPECT_EQ(n16.mean.dtype(), DataType::bf16);
    EXPECT_LT(max_rel_error(n16.y, n32.y), 1e-2);
    EXPECT_LT(max_rel_error(n16.var, n32.var), 1e-2);
    BatchNormGrads d16 = batch_norm_backward(x, dy, scale, n16.mean, n16.var, bn);
    BatchNormGrads d32 = batch_norm_backward(f32(x), f32(dy), f32(scale), n32.mean, n32.var, bn);
    EXPECT_LT(max_rel_error(d16.dx, d32.dx), 2e-2);
    EXPECT_LT(max_rel_error(d16.dscale, d32.dscale), 2e-2);
    EXPECT_LT(max_rel_error(d16.dbias, d32.dbias), 2e-2);
}

TEST(ConvolutionGeometry, PadsWiderThanTheKernelAndEmptyBatches) {
    // Output cells that see padding only hold the bias.
    Tensor x = random(Shape{1, 2, 3, 3}, 1), w = random(Shape{2, 2, 2, 2}, 2), b = random(Shape{2}, 3);
    ConvAttrs a = pads({3, 0}, {1, 2});
    Tensor y = convolution(x, w, b, a);
    EXPECT_EQ(y.shape(), (Shape{1, 2, 6, 4}));
    EXPECT_LT(max_rel_error(y, convolution(x.to(DataType::f64), w.to(DataType::f64), b.to(DataType::f64), a)),
              1e-5);
    EXPECT_NEAR(y.at({0, 1, 0, 0}), b.at({1}), 1e-6);
    // An empty batch gives empty outputs and zero weight gradients.
    Tensor x0 = Tensor::zeros(Shape{0, 2, 3, 3});
    EXPECT_EQ(convolution(x0, w, b, a).shape(), (Shape{0, 2, 6, 4}));
    Tensor dy0 = Tensor::zeros(Shape{0, 2, 6, 4});
    EXPECT_EQ(convolution_backward_data(dy0, w, x0.shape(), a).shape(), x0.shape());
    EXPECT_EQ(convolution_backward_weights(x0, dy0, w.shape(), a, true).dw.to_vector<float>(),
              std::vector<float>(16, 0.0f));
    PoolAttrs p;
    p.kernel = {2, 2};
    EXPECT_EQ(pooling(x0, p, true).y.shape(), (Shape{0, 2, 2, 2}));
}

// ---- the primitive cache and scratch buffers ----

TEST(ConvolutionCache, RepeatableAcrossThreadsAndThreadCounts) {
    Tensor x = random(Shape{4, 16, 12, 12}, 21), w = random(Shape{32, 16, 3, 3}, 22),
           b = random(Shape{32}, 23);
    ConvAttrs a = pads({1, 1}, {1, 1});
    Tensor ref = convolution(x, w, b, a);
    EXPECT_EQ(max_rel_error(convolution(x, w, b, a), ref), 0.0);  // a cached plan gives the same result
    // Several threads run the same cached plan at once, each with its own scratch buffers.
    std::vector<Tensor> results(4);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < results.size(); ++i)
        threads.emplace_back([&, i] {
            for (int rep = 0; rep < 3; ++rep) results[i] = convolution(x, w, b, a);
        });
    for (auto& t : threads) t.join();
    for (const auto& r : results) EXPECT_EQ(max_rel_error(r, ref), 0.0);
    // Another thread count builds another plan; the result agrees up to summation order.
    ScopedNumThreads other(num_threads() == 1 ? 2 : 1);
    EXPECT_LT(max_rel_error(convolution(x, w, b, a), ref), 1e-6);
}
