// The layers library: inferred parameter shapes, forward values against hand computations, parameter
// sharing when a layer is applied twice, default_options, and the ConvNet_MNIST parameter count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ctk/kernels/tensor_ops.h"
#include "ctk/layers.h"
#include "ctk/train.h"

namespace ctk {
namespace {

using namespace layers;

Tensor eval1(const FunctionPtr& f, const Variable& x, const Tensor& xv) {
    return f->eval({{x, Value(xv)}}).begin()->second.data();
}

Variable find_param(const FunctionPtr& f, const std::string& name) {
    for (const Variable& p : f->parameters())
        if (p.name() == name) return p;
    return {};
}

TEST(Layers, DenseInfersItsInputDimAndComputesXWPlusB) {
    set_fixed_random_seed(1);
    FunctionPtr layer = Dense({3}, ActivationFn([](const Variable& v) { return relu(v); }));
    EXPECT_EQ(layer->op_name(), "Dense");
    Variable x = input_variable({4}, DataType::f32, false, false, default_batch_axes(), "x");
    FunctionPtr y = call(layer, x);
    EXPECT_EQ(y->output().shape(), (Dims{3}));
    Variable W = find_param(y, "W"), b = find_param(y, "b");
    ASSERT_TRUE(W.defined() && b.defined());
    EXPECT_EQ(W.shape(), (Dims{4, 3}));
    EXPECT_EQ(b.shape(), (Dims{3}));
    b.set_value(Tensor::from_vector<float>({0.5f, -100.f, 0.f}, {3}));
    Tensor xv = Tensor::from_vector<float>({1, 2, 3, 4, -1, 0, 1, 0}, {2, 4});
    Tensor got = eval1(y, x, xv);
    Tensor want = relu(plus(matmul(xv, W.value()), b.value()));
    EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
    EXPECT_EQ(got.at({0, 1}), 0.0);  // the -100 bias is cut by relu
    // Glorot uniform with CNTK's fans: |W| <= sqrt(6 / (4 + 3)).
    for (float w : W.value().to_vector<float>()) EXPECT_LE(std::abs(w), std::sqrt(6.0 / 7.0));
}

TEST(Layers, DenseOverSeveralInputAxesAndInputRank) {
    Variable x = input_variable({2, 5});
    FunctionPtr all = call(Dense({7}), x);  // W takes all of x's axes
    EXPECT_EQ(find_param(all, "W").shape(), (Dims{2, 5, 7}));
    EXPECT_EQ(all->output().shape(), (Dims{7}));
    FunctionPtr last = call(Dense({7}, std::nullopt, std::nullopt, 1), x);  // only the last axis
    EXPECT_EQ(find_param(last, "W").shape(), (Dims{5, 7}));
    EXPECT_EQ(last->output().shape(), (Dims{2, 7}));
    FunctionPtr no_bias = call(Dense({7}, std::nullopt, std::nullopt, std::nullopt, false), x);
    EXPECT_EQ(no_bias->parameters().size(), 1u);
    // map_rank 1: the first axis is mapped, the rest contracted ([3] x [2, 5] -> [3, 7] per sample).
    Variable x3 = input_variable({3, 2, 5});
    FunctionPtr mapped =
        call(Dense({7}, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, 1), x3);
    EXPECT_EQ(find_param(mapped, "W").shape(), (Dims{2, 5, 7}));
    EXPECT_EQ(mapped->output().shape(), (Dims{3, 7}));
    EXPECT_THROW(Dense({7}, std::nullopt, std::nullopt, 1, std::nullopt, std::nullopt, 1), ValueError);
}

TEST(Layers, ApplyingALayerTwiceSharesItsParameters) {
    FunctionPtr layer = Dense({2});
    Variable a = input_variable({3}), b = input_variable({3});
    FunctionPtr ya = call(layer, a), yb = call(layer, b);
    ASSERT_EQ(ya->parameters().size(), 2u);
    EXPECT_EQ(ya->parameters(), yb->parameters());
    Tensor v = Tensor::from_vector<float>({1, 2, 3}, {1, 3});
    EXPECT_EQ(eval1(ya, a, v).to_vector<float>(), eval1(yb, b, v).to_vector<float>());
}

TEST(Layers, DefaultOptionsApplyAndNest) {
    Variable x = input_variable({2});
    Tensor v = Tensor::from_vector<float>({-5, -5}, {1, 2});
    {
        default_options outer({.activation = ActivationFn([](const Variable& u) { return relu(u); }),
                               .init = constant_initializer(1.0)});
        FunctionPtr y = call(Dense({2}), x);
        EXPECT_EQ(eval1(y, x, v).to_vector<float>(), (std::vector<float>{0, 0}));  // relu(-10)
        {
            default_options inner({.bias = false});
            FunctionPtr z = call(Dense({2}), x);
            EXPECT_EQ(z->parameters().size(), 1u);
            EXPECT_EQ(eval1(z, x, v).to_vector<float>(), (std::vector<float>{0, 0}));
        }
        // An explicit argument wins over the defaults.
        FunctionPtr w = call(Dense({2}, ActivationFn()), x);
        EXPECT_EQ(eval1(w, x, v).to_vector<float>(), (std::vector<float>{-10, -10}));
    }
    FunctionPtr plain = call(Dense({2}, std::nullopt, constant_initializer(1.0)), x);
    EXPECT_EQ(eval1(plain, x, v).to_vector<float>(), (std::vector<float>{-10, -10}));
}

// CNTK's ConvNet_MNIST: the shapes and the parameter count its log prints.
TEST(Layers, ConvNetMnistShapesAndParameterCount) {
    Variable x = input_variable({1, 28, 28}, DataType::f32, false, false, default_batch_axes(), "features");
    FunctionPtr scaled = element_times(constant(0.00390625), x);
    FunctionPtr z;
    {
        default_options opts(
            {.activation = ActivationFn([](const Variable& u) { return relu(u); }), .pad = false});
        ConvolutionOptions padded;
        padded.pad = true;
        FunctionPtr conv1 = call(Convolution2D({5, 5}, 32, padded), scaled);
        EXPECT_EQ(conv1->output().shape(), (Dims{32, 28, 28}));
        FunctionPtr pool1 = call(MaxPooling({3, 3}, {2, 2}), conv1);
        EXPECT_EQ(pool1->output().shape(), (Dims{32, 13, 13}));
        FunctionPtr conv2 = call(Convolution2D({3, 3}, 48), pool1);
        EXPECT_EQ(conv2->output().shape(), (Dims{48, 11, 11}));
        FunctionPtr pool2 = call(MaxPooling({3, 3}, {2, 2}), conv2);
        FunctionPtr conv3 = call(Convolution2D({3, 3}, 64), pool2);
        EXPECT_EQ(conv3->output().shape(), (Dims{64, 3, 3}));
        FunctionPtr f4 = call(Dense({96}), conv3);
        FunctionPtr drop4 = call(Dropout(0.5), f4);
        z = call(Dense({10}, ActivationFn()), drop4);
    }
    EXPECT_EQ(z->output().shape(), (Dims{10}));
    EXPECT_EQ(log_number_of_parameters(z, false), "Training 98778 parameters in 10 parameter tensors.");
    Variable W1;
    for (const Variable& p : z->parameters())
        if (p.shape() == Dims{32, 1, 5, 5}) W1 = p;
    ASSERT_TRUE(W1.defined());
    // Glorot uniform over CNTK's convolution fans: fan_in = 1*5*5, fan_out = 32*5*5.
    const double bound = std::sqrt(6.0 / (25.0 + 800.0));
    double max_abs = 0;
    for (float w : W1.value().to_vector<float>()) max_abs = std::max(max_abs, double(std::abs(w)));
    EXPECT_LE(max_abs, bound);
    EXPECT_GT(max_abs, 0.8 * bound);
}

// CNTK's example: the filter [4, 2, 1] along a sequence of scalars; stride 2 with pad gives ceil(T / 2)
// frames on a new sequence axis, stride 1 with pad keeps x's own.
TEST(Layers, SequentialConvolutionRunsAlongTheSequenceAxis) {
    Variable x = sequence_input_variable(Dims{});
    ConvolutionOptions o;
    o.reduction_rank = 0;
    o.bias = false;
    o.pad = false;
    o.init = initial_values(Tensor::from_vector(std::vector<float>{4, 2, 1}, {3}));
    FunctionPtr y = call(SequentialConvolution({3}, 0, o), x);
    EXPECT_EQ(y->output().shape(), Dims{});
    EXPECT_EQ(find_param(y, "W").shape(), (Dims{1, 1, 3}));
    Value in = Value::from_sequences({Tensor::from_vector(std::vector<float>{2, 6, 4, 8, 6}, {5}),
                                      Tensor::from_vector(std::vector<float>{1, 2, 3}, {3})});
    ValueMap out = y->eval({{x, in}});
    const Value& v = out.at(y->output());
    EXPECT_EQ(v.layout()->lengths(), (std::vector<int64_t>{3, 1}));
    EXPECT_EQ(v.data().select(0, 0).to_vector<float>(), (std::vector<float>{24, 40, 38}));
    EXPECT_EQ(v.data().select(0, 1).slice(0, 0, 1).to_vector<float>(), (std::vector<float>{11}));
    EXPECT_NE(y->output().dynamic_axes(), x.dynamic_axes());

    o.pad = true;
    o.strides = {2};
    FunctionPtr strided = call(SequentialConvolution({3}, 0, o), x);
    EXPECT_EQ(strided->eval({{x, in}}).at(strided->output()).layout()->lengths(),
              (std::vector<int64_t>{3, 2}));
    o.strides = {1};
    FunctionPtr same = call(SequentialConvolution({3}, 2, o), x);
    EXPECT_EQ(same->output().dynamic_axes(), x.dynamic_axes());
    EXPECT_EQ(same->output().shape(), (Dims{2}));
    o.groups = 2;
    EXPECT_THROW(SequentialConvolution({3}, 2, o), NotImplementedError);
}

TEST(Layers, ConvolutionMatchesTheOp) {
    Variable x = input_variable({2, 5, 5});
    ConvolutionOptions o;
    o.strides = {2};
    o.pad = true;
    FunctionPtr y = call(Convolution({3, 3}, 4, o), x);
    EXPECT_EQ(y->output().shape(), (Dims{4, 3, 3}));
    Variable W = find_param(y, "W"), b = find_param(y, "b");
    EXPECT_EQ(W.shape(), (Dims{4, 2, 3, 3}));
    EXPECT_EQ(b.shape(), (Dims{4, 1, 1}));
    b.set_value(Tensor::full({4, 1, 1}, 0.25));
    Variable W2 = constant(W.value());
    FunctionPtr ref =
        plus(convolution(W2, x, {1, 2, 2}, {false, true, true}), constant(Tensor::full({4, 1, 1}, 0.25)));
    Tensor xv = Tensor::arange({1, 2, 5, 5});
    EXPECT_EQ(eval1(y, x, xv).to_vector<float>(), eval1(ref, x, xv).to_vector<float>());
}

TEST(Layers, PoolingGlobalPoolingAndDropout) {
    Variable x = input_variable({1, 4, 4});
    Tensor xv = Tensor::arange({1, 1, 4, 4});
    EXPECT_EQ(eval1(call(MaxPooling({2, 2}, {2, 2}), x), x, xv).to_vector<float>(),
              (std::vector<float>{5, 7, 13, 15}));
    EXPECT_EQ(eval1(call(AveragePooling({2, 2}, {2, 2}), x), x, xv).to_vector<float>(),
              (std::vector<float>{2.5, 4.5, 10.5, 12.5}));
    FunctionPtr gmax = call(GlobalMaxPooling(), x);
    EXPECT_EQ(gmax->output().shape(), (Dims{1, 1, 1}));
    EXPECT_EQ(eval1(gmax, x, xv).item(), 15.0);
    EXPECT_EQ(eval1(call(GlobalAveragePooling(), x), x, xv).item(), 7.5);
    // Dropout is the identity at inference.
    EXPECT_EQ(eval1(call(Dropout(0.5), x), x, xv).to_vector<float>(), xv.to_vector<float>());
    EXPECT_THROW(Dropout(0.5, 0.5), ValueError);
    EXPECT_THROW(Dropout(), ValueError);
    EXPECT_THROW(Dropout(1.0), ValueError);
}

TEST(Layers, MaxUnpoolingPutsThePooledMaximaBackInPlace) {
    Variable x = input_variable({2, 4, 6});
    std::vector<float> in(48);
    for (int i = 0; i < 48; ++i) in[static_cast<size_t>(i)] = static_cast<float>((i * 7) % 48);  // no ties
    const Tensor xv = Tensor::from_vector<float>(in, {1, 2, 4, 6});
    FunctionPtr pooled = call(MaxPooling({2, 2}, {2, 2}), x);
    FunctionPtr layer = MaxUnpooling({2, 2}, {2, 2});
    EXPECT_EQ(layer->op_name(), "MaxUnpooling");
    FunctionPtr y = call(layer, pooled, x);
    EXPECT_EQ(y->output().shape(), (Dims{2, 4, 6}));
    const Tensor got = eval1(y, x, xv);
    for (int64_t c = 0; c < 2; ++c)
        for (int64_t i = 0; i < 4; ++i)
            for (int64_t j = 0; j < 6; ++j) {
                double window_max = 0;
                for (int64_t a = 0; a < 2; ++a)
                    for (int64_t b = 0; b < 2; ++b)
                        window_max = std::max(window_max, xv.at({0, c, i / 2 * 2 + a, j / 2 * 2 + b}));
                const double v = xv.at({0, c, i, j});
                EXPECT_EQ(got.at({0, c, i, j}), v == window_max ? v : 0.0) << c << " " << i << " " << j;
            }
    // Pooling the unpooled values gives the pooled ones back.
    EXPECT_EQ(eval1(call(MaxPooling({2, 2}, {2, 2}), y), x, xv).to_vector<float>(),
              eval1(pooled, x, xv).to_vector<float>());
    // The operand must be what the window makes of pooling_input: a 3x3 window pools [2, 4, 6] to [2, 1, 2].
    try {
        call(MaxUnpooling({3, 3}, {3, 3}), pooled, x);
        ADD_FAILURE() << "expected a ShapeError";
    } catch (const ShapeError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("[2 x 1 x 2]"), std::string::npos) << m;
        EXPECT_NE(m.find("[2 x 4 x 6]"), std::string::npos) << m;
    }
}

TEST(Layers, LayerNormalizationAgainstHandComputation) {
    Variable x = input_variable({4});
    FunctionPtr y = call(LayerNormalization(2.0, 0.5, 1e-5), x);
    std::vector<float> in{1, 2, 3, 6};
    Tensor got = eval1(y, x, Tensor::from_vector<float>(in, {1, 4}));
    const double mean = 3.0, sd = std::sqrt((4 + 1 + 0 + 9) / 4.0);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(got.at({0, i}), (in[i] - mean) / (sd + 1e-5) * 2.0 + 0.5, 1e-5);
}

TEST(Layers, BatchNormalizationInfersItsStatisticsShape) {
    Variable x = input_variable({3, 2, 2});
    FunctionPtr spatial = call(BatchNormalization(1), x);
    for (const Variable& p : spatial->parameters()) EXPECT_EQ(p.shape(), (Dims{3})) << p.to_string();
    FunctionPtr dense = call(BatchNormalization(), x);
    for (const Variable& p : dense->parameters()) EXPECT_EQ(p.shape(), (Dims{3, 2, 2})) << p.to_string();
    EXPECT_THROW(BatchNormalization(2), ValueError);
}

TEST(Layers, EmbeddingStabilizerLabelActivation) {
    Variable x = input_variable({3});
    FunctionPtr e = call(Embedding({2}, constant_initializer(0.5)), x);
    EXPECT_EQ(find_param(e, "E").shape(), (Dims{3, 2}));
    Tensor one_hot = Tensor::from_vector<float>({0, 1, 0}, {1, 3});
    EXPECT_EQ(eval1(e, x, one_hot).to_vector<float>(), (std::vector<float>{0.5, 0.5}));
    Tensor table = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2});
    EXPECT_EQ(eval1(call(Embedding({}, std::nullopt, table), x), x, one_hot).to_vector<float>(),
              (std::vector<float>{3, 4}));
    // The stabilizer starts as the identity.
    Tensor v = Tensor::from_vector<float>({1, -2, 3}, {1, 3});
    Tensor s = eval1(call(Stabilizer(), x), x, v);
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(s.at({0, i}), v.at({0, i}), 1e-5);
    FunctionPtr labelled = call(Label("hidden"), x);
    EXPECT_NE(labelled->find_by_name("hidden", true), nullptr);
    EXPECT_EQ(eval1(call(Activation([](const Variable& u) { return relu(u); }), x), x, v).to_vector<float>(),
              (std::vector<float>{1, 0, 3}));
}

TEST(Layers, SequentialForResNetBlockAndClique) {
    Variable x = input_variable({2});
    FunctionPtr seq =
        Sequential(For(3, [](int) { return Dense({2}, std::nullopt, constant_initializer(1.0)); }));
    FunctionPtr y = call(seq, x);
    EXPECT_EQ(y->parameters().size(), 6u);
    Tensor v = Tensor::from_vector<float>({1, 2}, {1, 2});
    EXPECT_EQ(eval1(y, x, v).to_vector<float>(), (std::vector<float>{12, 12}));  // all-ones weights: 3, 6, 12
    FunctionPtr res =
        call(ResNetBlock(Dense({2}, std::nullopt, constant_initializer(1.0), std::nullopt, false)), x);
    EXPECT_EQ(eval1(res, x, v).to_vector<float>(), (std::vector<float>{4, 5}));
    FunctionPtr clique =
        call(SequentialClique({Dense({2}, std::nullopt, constant_initializer(1.0), std::nullopt, false),
                               Dense({2}, std::nullopt, constant_initializer(1.0), std::nullopt, false)}),
             x);
    // f1(x) = [3, 3]; f2(x + f1) = sum([4, 5]) = [9, 9].
    EXPECT_EQ(eval1(clique, x, v).to_vector<float>(), (std::vector<float>{9, 9}));
    EXPECT_THROW(Sequential({}), ValueError);
    EXPECT_THROW(Dense({}), ValueError);
}

}  // namespace
}  // namespace ctk

namespace ctk {
namespace {

using namespace layers;

// ---- recurrence: LSTM, GRU and RNNStep inside Recurrence and Fold against a float64 reference ----
namespace recurrent_ref {

using Mat = std::vector<std::vector<double>>;  // row-major [rows][cols]

Mat values(const Variable& p) {
    const Tensor t = p.value().to(DataType::f64).contiguous();
    const auto v = t.to_vector<double>();
    const int64_t cols = t.shape().rank() == 2 ? t.dim(1) : t.numel();
    const int64_t rows = t.numel() / cols;
    Mat m(static_cast<size_t>(rows), std::vector<double>(static_cast<size_t>(cols)));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) m[r][c] = v[static_cast<size_t>(r * cols + c)];
    return m;
}
std::vector<double> vec_times(const std::vector<double>& x, const Mat& w) {
    std::vector<double> out(w[0].size(), 0.0);
    for (size_t i = 0; i < x.size(); ++i)
        for (size_t j = 0; j < out.size(); ++j) out[j] += x[i] * w[i][j];
    return out;
}
double sig(double v) {
    return 1.0 / (1.0 + std::exp(-v));
}
}  // namespace recurrent_ref

TEST(Layers, LstmRecurrenceMatchesAFloat64Reference) {
    using namespace recurrent_ref;
    Variable x = sequence_input_variable({3}, DataType::f32, false, false, Axis::default_dynamic_axis(), "x");
    FunctionPtr lstm = LSTM({4}, RecurrentOptions{.init_bias = 0.1});
    FunctionPtr y = call(Recurrence(lstm), x);
    EXPECT_EQ(y->output().shape(), (Dims{4}));
    ASSERT_EQ(y->parameters().size(), 3u);  // W, H, b
    const Mat W = values(find_param(y, "W")), H = values(find_param(y, "H"));
    const std::vector<double> b = values(find_param(y, "b"))[0];
    EXPECT_EQ(W.size(), 3u);
    EXPECT_EQ(W[0].size(), 16u);
    // Two sequences of lengths 3 and 2.
    std::vector<Tensor> seqs{
        Tensor::from_vector<float>({0.5f, -1, 0.25f, 1, 0, -0.5f, 0.3f, 0.7f, -0.2f}, {3, 3}),
        Tensor::from_vector<float>({-0.4f, 0.9f, 0.1f, 0.0f, -0.8f, 0.6f}, {2, 3})};
    Value in = Value::from_sequences(seqs);
    ValueMap out = y->eval({{y->arguments()[0], in}});
    const Value& v = out.at(y->output());
    for (int64_t s = 0; s < 2; ++s) {
        const auto xs = seqs[static_cast<size_t>(s)].to_vector<float>();
        const int64_t len = seqs[static_cast<size_t>(s)].dim(0);
        const auto got = v.sequence(s).to_vector<float>();
        std::vector<double> h(4, 0.0), c(4, 0.0);
        for (int64_t t = 0; t < len; ++t) {
            std::vector<double> xt(xs.begin() + t * 3, xs.begin() + t * 3 + 3);
            auto px = vec_times(xt, W), ph = vec_times(h, H);
            std::vector<double> nh(4), nc(4);
            for (int k = 0; k < 4; ++k) {
                auto g = [&](int gate) { return b[gate * 4 + k] + px[gate * 4 + k] + ph[gate * 4 + k]; };
                const double it = sig(g(0)), cand = std::tanh(g(1)), ft = sig(g(2)), ot = sig(g(3));
                nc[k] = ft * c[k] + it * cand;
                nh[k] = ot * std::tanh(nc[k]);
            }
            h = nh, c = nc;
            for (int k = 0; k < 4; ++k)
                EXPECT_NEAR(got[static_cast<size_t>(t * 4 + k)], h[k], 1e-5) << s << " " << t;
        }
    }
}

TEST(Layers, GruFoldBackwardsAndRnnStepMatchAFloat64Reference) {
    using namespace recurrent_ref;
    Variable x = sequence_input_variable({2}, DataType::f32, false, false, Axis::default_dynamic_axis(), "x");
    FunctionPtr gru_fold = call(Fold(GRU({3}), /*go_backwards=*/true), x);
    FunctionPtr rnn = call(Recurrence(RNNStep({2})), x);
    EXPECT_FALSE(gru_fold->output().has_sequence_axis());
    const Mat W = values(find_param(gru_fold, "W")), H = values(find_param(gru_fold, "H")),
              H1 = values(find_param(gru_fold, "H1"));
    const Mat RW = values(find_param(rnn, "W")), RH = values(find_param(rnn, "H"));
    Tensor seq = Tensor::from_vector<float>({0.5f, -1, 0.25f, 1, 0, -0.5f, 0.3f, 0.7f}, {4, 2});
    Value in = Value::from_sequences({seq});
    const auto xs = seq.to_vector<float>();
    // GRU backwards from the last step; Fold keeps the state after the first step.
    std::vector<double> h(3, 0.0);
    for (int t = 3; t >= 0; --t) {
        std::vector<double> xt{xs[t * 2], xs[t * 2 + 1]};
        auto px = vec_times(xt, W), ph = vec_times(h, H);  // b = 0
        std::vector<double> z(3), r(3), rh(3);
        for (int k = 0; k < 3; ++k) {
            z[k] = sig(px[k] + ph[k]);
            r[k] = sig(px[3 + k] + ph[3 + k]);
            rh[k] = h[k] * r[k];
        }
        auto pr = vec_times(rh, H1);
        std::vector<double> nh(3);
        for (int k = 0; k < 3; ++k) nh[k] = (1 - z[k]) * std::tanh(px[6 + k] + pr[k]) + z[k] * h[k];
        h = nh;
    }
    const auto got =
        gru_fold->eval({{gru_fold->arguments()[0], in}}).at(gru_fold->output()).data().to_vector<float>();
    ASSERT_EQ(got.size(), 3u);
    for (int k = 0; k < 3; ++k) EXPECT_NEAR(got[static_cast<size_t>(k)], h[k], 1e-5);
    // RNNStep: sigmoid(x W + h H + b), forwards.
    const auto rgot = rnn->eval({{rnn->arguments()[0], in}}).at(rnn->output()).data().to_vector<float>();
    std::vector<double> rh(2, 0.0);
    for (int t = 0; t < 4; ++t) {
        std::vector<double> xt{xs[t * 2], xs[t * 2 + 1]};
        auto px = vec_times(xt, RW), ph = vec_times(rh, RH);
        for (int k = 0; k < 2; ++k) rh[k] = sig(px[k] + ph[k]);
        for (int k = 0; k < 2; ++k) EXPECT_NEAR(rgot[static_cast<size_t>(t * 2 + k)], rh[k], 1e-5);
    }
}

TEST(Layers, RecurrentLayersTrainAndReportBadArguments) {
    Variable x = sequence_input_variable({3}, DataType::f32, false, false, Axis::default_dynamic_axis(), "x");
    Variable label = input_variable({2}, DataType::f32, false, false, default_batch_axes(), "label");
    FunctionPtr lstm = LSTM(
        {4},
        RecurrentOptions{.cell_shape = Dims{5}, .use_peepholes = true, .enable_self_stabilization = true});
    FunctionPtr z = call(Dense({2}), call(Fold(lstm), x));
    FunctionPtr full = call(Recurrence(LSTM({4}), false, {}, true), x);
    EXPECT_EQ(full->outputs().size(), 2u);
    EXPECT_EQ(call(Fold(lstm), x)->output().shape(), (Dims{4}));  // the projection P [5, 4]
    FunctionPtr loss = cross_entropy_with_softmax(z, label);
    Trainer t(z, loss, nullptr, {sgd(z->parameters(), learning_parameter_schedule(0.1))});
    Value in = Value::from_sequences({Tensor::ones({3, 3}), Tensor::full({2, 3}, -1.0)});
    Tensor y = Tensor::from_vector<float>({1, 0, 0, 1}, {2, 2});
    double first = 0, last = 0;
    for (int i = 0; i < 30; ++i) {
        t.train_minibatch({{x, in}, {label, Value(y)}});
        (i == 0 ? first : last) = t.previous_minibatch_loss_average();
    }
    EXPECT_LT(last, first);
    EXPECT_THROW(LSTM({4, 2}), ValueError);
    EXPECT_THROW(GRU({3}, RecurrentOptions{.use_peepholes = true}), ValueError);
    EXPECT_THROW(Recurrence(Dense({3})), ValueError);
}

}  // namespace
}  // namespace ctk
