// The layers library: inferred parameter shapes, forward values against hand computations, parameter
// sharing when a layer is applied twice, default_options, and the ConvNet_MNIST parameter count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "ctk/layers.h"
#include "ctk/ops.h"
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
