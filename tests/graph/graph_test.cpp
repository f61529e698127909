// The graph API: variables and initializers, shape inference and its errors, graph queries, clone,
// placeholders, blocks, sequences with padding, and the executor's bookkeeping.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include "ctk/ctk.h"
#include "graph/graph_test_util.h"

using namespace ctk;
using ctk::test::error_of;

namespace {
Tensor batch(std::vector<float> v, Dims dims) {
    return Tensor::from_vector(v, Shape(std::move(dims)));
}
}  // namespace

TEST(Variable, KindsShapesAndNotation) {
    Variable x = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "x");
    EXPECT_TRUE(x.is_input());
    EXPECT_EQ(x.to_string(), "Input('x', [#], [3])");
    Variable s =
        sequence_input_variable({2, 2}, DataType::f32, false, false, Axis::default_dynamic_axis(), "s");
    EXPECT_EQ(s.to_string(), "Input('s', [#, *], [2 x 2])");
    EXPECT_TRUE(s.has_sequence_axis());
    Variable w = parameter({kInferredDim, 4}, glorot_uniform(), DataType::f32, "W");
    EXPECT_TRUE(w.has_inferred_dims());
    EXPECT_NE(error_of([&] { w.value(); }).find("inferred"), std::string::npos);
    // An input's inferred dim is a free one (CNTK ran such inputs on whatever size the data has).
    EXPECT_EQ(input_variable({kInferredDim, 3}).shape(), (Dims{kFreeDim, 3}));
    EXPECT_NE(
        error_of([] { input_variable({3}, DataType::f32, false, false, {Axis::default_dynamic_axis()}); }),
        "");
}

TEST(Initializer, CntkScalingRules) {
    // glorot_uniform on a Dense weight [in 100, out 50]: U(-sqrt(6/150), sqrt(6/150)).
    Variable w = parameter({100, 50}, glorot_uniform(1.0, kSentinelRank, kSentinelRank, 7));
    auto v = w.value().to_vector<float>();
    const double bound = std::sqrt(6.0 / 150.0);
    double max_abs = 0, mean = 0;
    for (float e : v) max_abs = std::max(max_abs, std::fabs(double(e))), mean += e;
    EXPECT_LE(max_abs, bound);
    EXPECT_GT(max_abs, 0.95 * bound);
    EXPECT_NEAR(mean / v.size(), 0.0, 0.02);
    // he_normal on a convolution kernel [K 8, C 4, 3, 3] with filter_rank 2, output_rank -1: fan_in 36.
    Variable k = parameter({8, 4, 3, 3}, he_normal(1.0, -1, 2, 3));
    auto kv = k.value().to_vector<float>();
    double var = 0;
    for (float e : kv) var += double(e) * e;
    EXPECT_NEAR(var / kv.size(), 2.0 / 36.0, 0.02);
    // The same seed gives the same value; the sentinel draws a fresh seed per parameter.
    EXPECT_EQ(parameter({4}, uniform(1.0, 5)).value().to_vector<float>(),
              parameter({4}, uniform(1.0, 5)).value().to_vector<float>());
    EXPECT_NE(parameter({4}, uniform(1.0)).value().to_vector<float>(),
              parameter({4}, uniform(1.0)).value().to_vector<float>());
    EXPECT_NE(error_of([] { parameter({2, 3}, glorot_uniform(1.0, 2, 1)).value(); }), "");
    Variable b = parameter({3, 3, 4, 4}, bilinear(4, 4));
    EXPECT_NEAR(b.value().at({1, 1, 1, 1}), 0.64, 1e-6);  // (1 - 0.5/2.5)^2
    EXPECT_EQ(b.value().at({0, 1, 1, 1}), 0.0);
}

TEST(ShapeInference, ParameterDimsInferredAtFirstUse) {
    Variable x = input_variable({2, 3});
    Variable w = parameter({kInferredDim, 5});
    FunctionPtr z = times(x, w, 1, 0);  // infer_input_rank_to_map 0: W takes all of x's static axes
    EXPECT_EQ(w.shape(), (Dims{2, 3, 5}));
    EXPECT_EQ(z->output().shape(), (Dims{5}));
    Variable b = parameter({kInferredDim});
    FunctionPtr y = plus(z, b);
    EXPECT_EQ(b.shape(), (Dims{5}));
    EXPECT_EQ(y->output().dynamic_axes().size(), 1u);
}

TEST(ShapeInference, ContradictionsNameTheFunctionsAndShapes) {
    Variable x = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "features");
    Variable w = parameter({4, 2}, glorot_uniform(), DataType::f32, "W");
    std::string e = error_of([&] { times(x, w, 1, -1, "layer1"); });
    EXPECT_NE(e.find("Times 'layer1'"), std::string::npos) << e;
    EXPECT_NE(e.find("Input('features', [#], [3])"), std::string::npos) << e;
    EXPECT_NE(e.find("Parameter('W', [], [4 x 2])"), std::string::npos) << e;
    e = error_of([&] { plus(x, parameter({4}), "p"); });
    EXPECT_NE(e.find("do not broadcast"), std::string::npos) << e;
    Variable s = sequence_input_variable({3});
    // A batch value broadcasts along a sequence's frames (CNTK's auto-broadcast); two sequence axes do not.
    EXPECT_EQ(plus(x, s)->output().dynamic_axes(), s.dynamic_axes());
    Variable other = sequence_input_variable({3}, DataType::f32, false, false, Axis::dynamic("otherAxis"));
    e = error_of([&] { plus(other, s); });
    EXPECT_NE(e.find("different dynamic axes"), std::string::npos) << e;
    e = error_of([&] { reduce_sum(s, {Axis::default_batch_axis()}); });
    EXPECT_NE(e.find("sequence axis"), std::string::npos) << e;
    e = error_of([&] { softmax(x, Axis(2)); });
    EXPECT_NE(e.find("out of range"), std::string::npos) << e;
}

TEST(Graph, QueriesFindByNameAndCombine) {
    Variable x = input_variable({2}, DataType::f32, false, false, default_batch_axes(), "x");
    Variable w = parameter({2, 3}, glorot_uniform(), DataType::f32, "W");
    Variable b = parameter({3}, constant_initializer(0.5), DataType::f32, "b");
    FunctionPtr h = plus(times(x, w, 1, -1, "t"), b, "h");
    FunctionPtr z = relu(h, "z");
    EXPECT_EQ(z->arguments(), std::vector<Variable>{x});
    EXPECT_EQ(z->parameters().size(), 2u);
    ASSERT_NE(z->find_by_name("t"), nullptr);
    EXPECT_EQ(z->find_by_name("t")->op_name(), "Times");
    EXPECT_EQ(z->find_by_name("nope"), nullptr);
    FunctionPtr both = combine({h, z});
    EXPECT_EQ(both->outputs().size(), 2u);
    ValueMap out = both->eval({{x, Value(batch({1, 2}, {1, 2}))}});
    EXPECT_EQ(out.size(), 2u);
    Tensor hv = out.at(h->output()).data(), zv = out.at(z->output()).data();
    for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(zv.at({0, j}), std::max(0.0, hv.at({0, j})));
}

TEST(Graph, EvalChecksArguments) {
    Variable x = input_variable({2}, DataType::f32, false, false, default_batch_axes(), "x");
    FunctionPtr z = negate(x);
    EXPECT_NE(error_of([&] { z->eval({}); }).find("no value given for argument Input('x'"),
              std::string::npos);
    std::string e = error_of([&] { z->eval({{x, Value(batch({1, 2, 3}, {1, 3}))}}); });
    EXPECT_NE(e.find("sample dim 0 is 3, expected 2"), std::string::npos) << e;
}

TEST(Graph, CloneShareFreezeAndSubstitute) {
    Variable x = input_variable({2});
    Variable w = parameter({2, 2}, uniform(1.0, 11), DataType::f32, "W");
    FunctionPtr z = times(x, w);
    FunctionPtr shared = z->clone(CloneMethod::share);
    EXPECT_EQ(shared->parameters()[0], w);
    FunctionPtr cloned = z->clone(CloneMethod::clone);
    ASSERT_EQ(cloned->parameters().size(), 1u);
    EXPECT_NE(cloned->parameters()[0], w);
    EXPECT_EQ(cloned->parameters()[0].value().to_vector<float>(), w.value().to_vector<float>());
    FunctionPtr frozen = z->clone(CloneMethod::freeze);
    EXPECT_TRUE(frozen->parameters().empty());
    EXPECT_EQ(frozen->constants().size(), 1u);
    Variable x2 = input_variable({2});
    FunctionPtr moved = z->clone(CloneMethod::share, {{x, x2}});
    EXPECT_EQ(moved->arguments(), std::vector<Variable>{x2});
}

TEST(Graph, PlaceholdersBindAndReinfer) {
    Variable p = placeholder("p");
    FunctionPtr f = relu(plus(p, constant(1.0)));
    EXPECT_FALSE(f->output().shape_known());
    Variable x = input_variable({3});
    EXPECT_NE(error_of([&] { f->eval({}); }).find("is not bound"), std::string::npos);
    f->replace_placeholders({{p, x}});
    EXPECT_EQ(f->output().shape(), (Dims{3}));
    auto out = f->eval({{x, Value(batch({-3, 0, 2}, {1, 3}))}});
    EXPECT_EQ(out.begin()->second.data().to_vector<float>(), (std::vector<float>{0, 1, 3}));
    // Calling a Function binds its placeholders on a copy.
    Variable q = placeholder("q");
    FunctionPtr g = element_times(q, q);
    Variable y = input_variable({2});
    FunctionPtr gy = (*g)({y});
    EXPECT_EQ(gy->output().shape(), (Dims{2}));
    EXPECT_FALSE(g->output().shape_known());
}

TEST(Graph, BlocksLookLikeOneOpAndExecuteInline) {
    Variable p = placeholder("in");
    Variable w = parameter({3, 2}, uniform(1.0, 4), DataType::f32, "W");
    FunctionPtr inner = relu(times(p, w));
    Variable x = input_variable({3});
    FunctionPtr dense = as_block(inner, {{p, x}}, "Dense", "d1");
    EXPECT_EQ(dense->op_name(), "Dense");
    EXPECT_EQ(dense->output().shape(), (Dims{2}));
    EXPECT_EQ(dense->parameters(), std::vector<Variable>{w});
    EXPECT_EQ(dense->arguments(), std::vector<Variable>{x});
    Tensor xv = batch({1, -1, 2, 0.5, 0.5, 0.5}, {2, 3});
    Tensor got = dense->eval({{x, Value(xv)}}).begin()->second.data();
    Tensor want = relu(matmul(xv, w.value()));
    EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
    auto g = dense->grad({{x, Value(xv)}}, {w});
    EXPECT_EQ(g.at(w).data().shape(), Shape({3, 2}));
    ASSERT_NE(dense->find_by_name("d1"), nullptr);
}

TEST(Graph, LoopWithoutDelayIsRejected) {
    Variable p = placeholder("p");
    Variable x = input_variable({2});
    FunctionPtr a = plus(x, p);
    FunctionPtr b = tanh(a);
    b->replace_placeholders({{p, b->output()}});
    std::string e = error_of([&] { b->eval({{x, Value(batch({1, 2}, {1, 2}))}}); });
    EXPECT_NE(e.find("loop"), std::string::npos) << e;
}

TEST(Sequences, PaddingIsIgnoredByGradientsAndReductions) {
    Variable s = sequence_input_variable({2});
    Variable w = parameter({2, 1}, constant_initializer(1.0));
    FunctionPtr z = reduce_sum(times(s, w), {Axis::all_axes()});
    Value v = Value::from_sequences({batch({1, 2, 3, 4}, {2, 2}), batch({5, 6}, {1, 2})});
    // Poison the padding: it must not leak anywhere.
    Tensor poisoned = v.data();
    poisoned.set({1, 1, 0}, 1e30);
    poisoned.set({1, 1, 1}, NAN);
    Tensor total = z->eval({{s, v}}).begin()->second.data();
    EXPECT_FLOAT_EQ(total.item(), 21.0f);
    auto g = z->grad({{s, v}}, {w, s});
    EXPECT_EQ(g.at(w).data().to_vector<float>(), (std::vector<float>{9, 12}));
    EXPECT_EQ(g.at(s).data().at({1, 1, 0}), 0.0);
    EXPECT_EQ(g.at(s).data().at({1, 1, 1}), 0.0);
    EXPECT_EQ(Value::from_sequences({batch({1, 2}, {1, 2})}).sequence(0).shape(), Shape({1, 2}));
    EXPECT_NE(error_of([&] {
                  Value::from_sequences({batch({1, 2}, {1, 2}), batch({1, 2, 3}, {1, 3})});
              }),
              "");
}

TEST(Executor, BackwardFromIntermediatesAndPeakMemory) {
    Variable x = input_variable({4}, DataType::f64);
    FunctionPtr h = tanh(x, "h");
    FunctionPtr y = reduce_sum(square(h), {Axis::all_axes()});
    Tensor xv = Tensor::from_vector<double>({0.1, -0.2, 0.3, 0.4}, Shape{1, 4});
    ValueMap outs{{y->output(), Value()}};
    auto state = y->forward({{x, Value(xv)}}, outs, {y->output()});
    EXPECT_GT(state->peak_bytes(), 0);
    auto g =
        y->backward(*state, {{y->output(), Value(Tensor::ones(Shape{}, DataType::f64))}}, {h->output(), x});
    for (int i = 0; i < 4; ++i) {
        const double t = std::tanh(xv.at({0, i}));
        EXPECT_NEAR(g.at(h->output()).data().at({0, i}), 2 * t, 1e-12);
        EXPECT_NEAR(g.at(x).data().at({0, i}), 2 * t * (1 - t * t), 1e-12);
    }
    // eval releases intermediates: its peak is below the retained forward's.
    ValueMap outs2{{y->output(), Value()}};
    auto eval_state = y->forward({{x, Value(xv)}}, outs2, {}, false);
    EXPECT_LE(eval_state->peak_bytes(), state->peak_bytes());
}

TEST(Dropout, TrainingDropsAndScalesReproducibly) {
    Variable x = input_variable({1000});
    FunctionPtr d = dropout(x, 0.25, 42);
    Tensor ones = Tensor::ones(Shape{1, 1000});
    ValueMap o1{{d->output(), Value()}};
    d->forward({{x, Value(ones)}}, o1, {}, true);
    auto v = o1.at(d->output()).data().to_vector<float>();
    int zeros = 0;
    for (float e : v) {
        if (e == 0)
            ++zeros;
        else
            EXPECT_FLOAT_EQ(e, 1.0f / 0.75f);
    }
    EXPECT_GT(zeros, 180);
    EXPECT_LT(zeros, 320);
    // A fresh Function with the same seed draws the same first mask.
    FunctionPtr d2 = dropout(x, 0.25, 42);
    ValueMap o2{{d2->output(), Value()}};
    d2->forward({{x, Value(ones)}}, o2, {}, true);
    EXPECT_EQ(o2.at(d2->output()).data().to_vector<float>(), v);
    // Inference is the identity.
    EXPECT_EQ(d->eval({{x, Value(ones)}}).begin()->second.data().to_vector<float>(), ones.to_vector<float>());
}

TEST(BatchNormalization, RunningStatisticsFollowTheTimeConstant) {
    // Two batches of 4: [1, 2, 3, 4] (mean 2.5) then [5, 6, 7, 8] (mean 6.5); both have the unbiased
    // variance 5/3. The first batch is taken whole whatever the time constant (the count is 0); the
    // second is blended by 1 (T = 0), 1 - exp(-4 / T) (T = 4), 0 (T = inf: frozen) or 4 / (4 + 4) (T < 0:
    // the cumulative average), as CNTK's BatchNormalizationNode weighs it.
    const double e = std::exp(-1.0);
    for (auto [tc, second_mean] :
         {std::pair{0.0, 6.5}, std::pair{4.0, 2.5 * e + 6.5 * (1 - e)},
          std::pair{std::numeric_limits<double>::infinity(), 2.5}, std::pair{-1.0, 4.5}}) {
        Variable x = input_variable({1});
        Variable scale = parameter({1}, constant_initializer(1.0)),
                 bias = parameter({1}, constant_initializer(0.0));
        Variable mean = constant({1}, 0.0), var = constant({1}, 1.0), count = constant(0.0);
        FunctionPtr bn = batch_normalization(x, scale, bias, mean, var, count, false, tc);
        ValueMap o{{bn->output(), Value()}};
        bn->forward({{x, Value(batch({1, 2, 3, 4}, {4, 1}))}}, o, {}, true);
        EXPECT_FLOAT_EQ(mean.value().item(), 2.5f) << "T = " << tc;
        EXPECT_NEAR(var.value().item(), 5.0 / 3.0, 1e-6) << "unbiased, T = " << tc;
        EXPECT_FLOAT_EQ(count.value().item(), 4.0f);
        bn->forward({{x, Value(batch({5, 6, 7, 8}, {4, 1}))}}, o, {}, true);
        EXPECT_NEAR(mean.value().item(), second_mean, 1e-5) << "T = " << tc;
        EXPECT_NEAR(var.value().item(), 5.0 / 3.0, 1e-5) << "T = " << tc;
        EXPECT_FLOAT_EQ(count.value().item(), 8.0f);
    }
}

TEST(BatchNormalization, TheTimeConstantCountsSamplesNotPixels) {
    // Spatial batch norm over [C = 1, W = 2] images: a batch of two images is 2 samples (4 values). With
    // T = 4 the second batch is blended by 1 - exp(-2 / 4), and the count grows by 2 per batch, as in
    // CNTK; the variance is unbiased over the 4 values.
    Variable x = input_variable({1, 2});
    Variable scale = parameter({1}, constant_initializer(1.0)),
             bias = parameter({1}, constant_initializer(0.0));
    Variable mean = constant({1}, 0.0), var = constant({1}, 1.0), count = constant(0.0);
    FunctionPtr bn = batch_normalization(x, scale, bias, mean, var, count, true, 4.0);
    ValueMap o{{bn->output(), Value()}};
    bn->forward({{x, Value(batch({1, 2, 3, 4}, {2, 1, 2}))}}, o, {}, true);
    EXPECT_FLOAT_EQ(mean.value().item(), 2.5f);
    EXPECT_NEAR(var.value().item(), 5.0 / 3.0, 1e-6);
    EXPECT_FLOAT_EQ(count.value().item(), 2.0f);
    bn->forward({{x, Value(batch({5, 6, 7, 8}, {2, 1, 2}))}}, o, {}, true);
    const double w = 1 - std::exp(-0.5);
    EXPECT_NEAR(mean.value().item(), 2.5 * (1 - w) + 6.5 * w, 1e-5);
    EXPECT_FLOAT_EQ(count.value().item(), 4.0f);
}

TEST(Recurrence, ErrorsNameTheLoop) {
    Variable x = sequence_input_variable({2});
    Variable w = parameter({2, 2}, uniform(1.0, 9));
    // past and future delays in one loop
    Variable p = placeholder("p");
    FunctionPtr h =
        tanh(plus(times(x, w), plus(sequence::past_value(p), sequence::future_value(p))), "mixed");
    h->replace_placeholders({{p, h->output()}});
    Value v = Value::from_sequences({Tensor::ones(Shape{2, 2})});
    std::string e = error_of([&] { h->eval({{x, v}}); });
    EXPECT_NE(e.find("mixes past_value and future_value"), std::string::npos) << e;
    // an op that looks across frames cannot sit inside a loop
    Variable q = placeholder("q");
    FunctionPtr g = plus(x, sequence::past_value(sequence::broadcast_as(sequence::reduce_sum(q), x)), "g");
    g->replace_placeholders({{q, g->output()}});
    e = error_of([&] { g->eval({{x, v}}); });
    EXPECT_NE(e.find("cannot be inside a recurrent loop"), std::string::npos) << e;
    // sequence ops on non-sequences fail at construction
    e = error_of([&] { sequence::past_value(input_variable({2})); });
    EXPECT_NE(e.find("is not a sequence"), std::string::npos) << e;
}

TEST(Recurrence, AccumulatesOverTimeAndRespectsLengths) {
    // h_t = h_{t-1} + x_t: a running sum; the last frame of each sequence is its total.
    Variable x = sequence_input_variable({1}, DataType::f64);
    Variable p = placeholder("p");
    FunctionPtr h = plus(x, sequence::past_value(p), "h");
    h->replace_placeholders({{p, h->output()}});
    FunctionPtr total = sequence::last(h);
    Value v = Value::from_sequences({Tensor::from_vector<double>({1, 2, 3}, Shape{3, 1}),
                                     Tensor::from_vector<double>({10}, Shape{1, 1})});
    Tensor got = total->eval({{x, v}}).begin()->second.data();
    EXPECT_EQ(got.to_vector<double>(), (std::vector<double>{6, 10}));
    auto g = total->grad({{x, v}}, {x});
    EXPECT_EQ(g.at(x).data().to_vector<double>(), (std::vector<double>{1, 1, 1, 1, 0, 0}));
}

TEST(Recurrence, CloneKeepsTheLoopAndGraphsAreFreed) {
    std::weak_ptr<Function> watch;
    {
        Variable x = sequence_input_variable({1}, DataType::f64);
        Variable p = placeholder("p");
        FunctionPtr h = plus(x, sequence::past_value(p), "h");
        h->replace_placeholders({{p, h->output()}});
        watch = h;
        FunctionPtr copy = h->clone(CloneMethod::share);
        Value v = Value::from_sequences({Tensor::from_vector<double>({1, 2, 3}, Shape{3, 1})});
        EXPECT_EQ(copy->eval({{x, v}}).begin()->second.data().to_vector<double>(),
                  (std::vector<double>{1, 3, 6}));
        EXPECT_EQ(h->eval({{x, v}}).begin()->second.data().to_vector<double>(),
                  (std::vector<double>{1, 3, 6}));
    }
    EXPECT_TRUE(watch.expired()) << "a recurrent graph (or its cached plan) keeps itself alive";
}

TEST(Random, DrawsFollowTheirDistributionAndAreReproducible) {
    FunctionPtr u = uniform_random({4000}, DataType::f64, 2.0, 4.0, 5);
    auto a = u->eval({}).begin()->second.data().to_vector<double>();
    double mean = 0, lo = 1e9, hi = -1e9;
    for (double v : a) mean += v, lo = std::min(lo, v), hi = std::max(hi, v);
    EXPECT_NEAR(mean / a.size(), 3.0, 0.05);
    EXPECT_GE(lo, 2.0);
    EXPECT_LT(hi, 4.0);
    // The next evaluation draws anew; a Function with the same seed repeats the first draw.
    EXPECT_NE(u->eval({}).begin()->second.data().to_vector<double>(), a);
    EXPECT_EQ(uniform_random({4000}, DataType::f64, 2.0, 4.0, 5)
                  ->eval({})
                  .begin()
                  ->second.data()
                  .to_vector<double>(),
              a);
    auto g = gumbel_random({20000}, DataType::f64, 1.0, 2.0, 3)
                 ->eval({})
                 .begin()
                 ->second.data()
                 .to_vector<double>();
    double gm = 0;
    for (double v : g) gm += v;
    EXPECT_NEAR(gm / g.size(), 1.0 + 2.0 * 0.5772156649, 0.06);  // loc + scale * Euler-Mascheroni
    Variable x = sequence_input_variable({3});
    FunctionPtr b = bernoulli_random_like(x, 0.25, 9);
    EXPECT_EQ(b->output().dynamic_axes().size(), 2u);
    Value v = Value::from_sequences({Tensor::ones(Shape{100, 3})});
    auto bits = b->eval({{x, v}}).begin()->second.data().to_vector<float>();
    double ones = 0;
    for (float e : bits) ones += e;
    EXPECT_NEAR(ones / bits.size(), 0.25, 0.06);
    EXPECT_NE(error_of([] { bernoulli_random({2}, DataType::f32, 1.5); }), "");
}

TEST(Executor, OneFunctionEvaluatesOnSeveralThreads) {
    Variable x = input_variable({8}, DataType::f64);
    Variable w = parameter({8, 4}, uniform(1.0, 21), DataType::f64);
    FunctionPtr z = softmax(times(x, w));
    Tensor xv = Tensor::ones(Shape{3, 8}, DataType::f64);
    const auto want = z->eval({{x, Value(xv)}}).begin()->second.data().to_vector<double>();
    std::vector<std::thread> threads;
    std::atomic<int> mismatches{0};
    for (int t = 0; t < 4; ++t)
        threads.emplace_back([&] {
            for (int i = 0; i < 50; ++i) {
                FunctionPtr fresh = z->clone(CloneMethod::share);  // new plans race with z's own
                if (z->eval({{x, Value(xv)}}).begin()->second.data().to_vector<double>() != want)
                    ++mismatches;
                if (fresh->eval({{x, Value(xv)}}).begin()->second.data().to_vector<double>() != want)
                    ++mismatches;
            }
        });
    for (auto& t : threads) t.join();
    EXPECT_EQ(mismatches.load(), 0);
}

TEST(FreeDimensions, ConvolutionAndPoolingTakeTheImageSizeFromEachMinibatch) {
    Variable x = input_variable({2, kFreeDim, kFreeDim}, DataType::f64);
    Variable w = parameter({3, 2, 3, 3}, uniform(1.0, 13), DataType::f64);
    FunctionPtr y = pooling(relu(convolution(w, x)), PoolingType::max, {2, 2}, {2, 2});
    EXPECT_EQ(y->output().shape(), (Dims{3, kFreeDim, kFreeDim}));
    for (auto [h, wd] : {std::pair<int64_t, int64_t>{6, 6}, {9, 7}}) {
        Tensor xv = Tensor::empty(Shape{2, 2, h, wd}, DataType::f64);
        Generator(3).uniform(xv, -1.0, 1.0);
        ConvAttrs a;
        a.strides = {1, 1};
        a.dilation = {1, 1};
        a.pad_lo = {1, 1};
        a.pad_hi = {1, 1};
        PoolAttrs p;
        p.kind = PoolKind::max;
        p.kernel = {2, 2};
        p.strides = {2, 2};
        p.pad_lo = {0, 0};
        p.pad_hi = {0, 0};
        Tensor want = pooling(relu(convolution(xv, w.value(), Tensor(), a)), p, false).y;
        Tensor got = y->eval({{x, Value(xv)}}).begin()->second.data();
        ASSERT_EQ(got.shape(), want.shape());
        EXPECT_EQ(got.to_vector<double>(), want.to_vector<double>());
        auto g = y->grad({{x, Value(xv)}}, {w});  // backward with the same run-time geometry
        EXPECT_EQ(g.at(w).data().shape(), Shape({3, 2, 3, 3}));
    }
    EXPECT_NE(error_of([] {
                  convolution(parameter({3, kInferredDim, 3, 3}), input_variable({kFreeDim, 5, 5}));
              }),
              "");
}

TEST(Assign, EvalWritesTheRefOnceTheEvaluationIsOver) {
    Variable p = parameter_from(Tensor::from_vector(std::vector<float>{1, 2, 3}, Shape{3}), "p");
    FunctionPtr next = assign(p, plus(p, constant(1.0)), "step");
    FunctionPtr reader = element_times(p, constant(2.0));  // reads p in the same evaluation
    FunctionPtr g = combine({next->output(), reader->output(), alias(p)->output()});
    ValueMap out = g->eval({});
    EXPECT_EQ(out.at(next->output()).data().to_vector<float>(), (std::vector<float>{2, 3, 4}));
    EXPECT_EQ(out.at(reader->output()).data().to_vector<float>(), (std::vector<float>{2, 4, 6}));
    // alias(p) hands out p's own storage: the evaluation's value must not change when p is written.
    EXPECT_EQ(out.at(g->outputs()[2]).data().to_vector<float>(), (std::vector<float>{1, 2, 3}));
    EXPECT_EQ(p.value().to_vector<float>(), (std::vector<float>{2, 3, 4}));
    // The next evaluation sees the new value.
    out = g->eval({});
    EXPECT_EQ(out.at(next->output()).data().to_vector<float>(), (std::vector<float>{3, 4, 5}));
    EXPECT_EQ(out.at(reader->output()).data().to_vector<float>(), (std::vector<float>{4, 6, 8}));
    EXPECT_EQ(p.value().to_vector<float>(), (std::vector<float>{3, 4, 5}));
}

TEST(Assign, TwoAssignsSwapAndConstantsAreAssignable) {
    Variable a = constant(Tensor::from_vector(std::vector<double>{1, 2}, Shape{2}), "a");
    Variable b = parameter_from(Tensor::from_vector(std::vector<double>{5, 6}, Shape{2}), "b");
    FunctionPtr g = combine({assign(a, b)->output(), assign(b, a)->output()});
    g->eval({});
    EXPECT_EQ(a.value().to_vector<double>(), (std::vector<double>{5, 6}));
    EXPECT_EQ(b.value().to_vector<double>(), (std::vector<double>{1, 2}));
}

TEST(Assign, WithBackwardTheWriteWaitsForBackwardAndGradientsPassToInput) {
    Variable q = parameter_from(Tensor::from_vector(std::vector<double>{0, 0}, Shape{2}), "q");
    Variable w = parameter_from(Tensor::from_vector(std::vector<double>{1, 2}, Shape{2}), "w");
    FunctionPtr f = assign(q, element_times(w, constant(3.0, DataType::f64)));
    ValueMap out{{f->output(), Value()}};
    auto state = f->forward({}, out, {f->output()}, true);
    EXPECT_EQ(q.value().to_vector<double>(), (std::vector<double>{0, 0}));  // backward may still follow
    Tensor ones = Tensor::ones(Shape{2}, DataType::f64);
    ValueMap grads = f->backward(*state, {{f->output(), Value(ones)}}, {w, q});
    EXPECT_EQ(grads.at(w).data().to_vector<double>(), (std::vector<double>{3, 3}));
    EXPECT_EQ(grads.at(q).data().to_vector<double>(), (std::vector<double>{0, 0}));
    EXPECT_EQ(q.value().to_vector<double>(), (std::vector<double>{3, 6}));
    // grad() is forward + backward: one write.
    w.set_value(Tensor::from_vector(std::vector<double>{2, 2}, Shape{2}));
    f->grad({}, {w});
    EXPECT_EQ(q.value().to_vector<double>(), (std::vector<double>{6, 6}));
}

TEST(Assign, ErrorsNameTheFunctionAndShapes) {
    Variable p = parameter({3}, constant_initializer(0.0), DataType::f32, "p");
    std::string e = error_of([&] { assign(p, parameter({4}, constant_initializer(0.0)), "set"); });
    EXPECT_NE(e.find("Assign 'set'"), std::string::npos) << e;
    EXPECT_NE(e.find("Parameter('p', [], [3])"), std::string::npos) << e;
    EXPECT_NE(e.find("[4]"), std::string::npos) << e;
    EXPECT_THROW(assign(p, parameter({4}, constant_initializer(0.0))), ShapeError);
    EXPECT_THROW(assign(p, parameter({1}, constant_initializer(0.0))), ShapeError);  // no broadcasting
    Variable x = input_variable({3}, DataType::f32, false, false, {}, "x");
    e = error_of([&] { assign(x, p); });
    EXPECT_NE(e.find("must be a Parameter or Constant"), std::string::npos) << e;
    EXPECT_THROW(assign(x, p), ValueError);
    Variable xb = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "xb");
    e = error_of([&] { assign(p, xb); });
    EXPECT_NE(e.find("dynamic axes"), std::string::npos) << e;
    EXPECT_THROW(assign(p, xb), ValueError);
    EXPECT_THROW(assign(p, parameter({3}, constant_initializer(0.0), DataType::f64)), TypeError);
    // An inferred dim of ref takes input's.
    Variable r = parameter({kInferredDim}, constant_initializer(0.0));
    assign(r, p);
    EXPECT_EQ(r.shape(), (Dims{3}));
}

// A forward that keeps state for backward holds only what the backward rules read: times keeps its
// operands, plus (a bias) keeps nothing, relu keeps its output. So of x W1 -> + b1 -> relu -> W2 ->
// + b2 -> relu, the two times outputs and the two plus outputs go as soon as they are read.
TEST(Liveness, TrainingForwardKeepsOnlyWhatBackwardReads) {
    const int64_t n = 64, d = 256;
    Variable x = input_variable({d}, DataType::f32);
    Variable w1 = parameter({d, d}), w2 = parameter({d, d});
    Variable b1 = parameter({d}, constant_initializer(0.1)), b2 = parameter({d}, constant_initializer(0.1));
    FunctionPtr t1 = times(x, w1), p1 = plus(t1, b1), h1 = relu(p1);
    FunctionPtr t2 = times(h1, w2), p2 = plus(t2, b2), h2 = relu(p2);
    FunctionPtr loss = reduce_sum(h2);
    Tensor xv = Tensor::empty(Shape{n, d});
    Generator(3).uniform(xv, -1.0, 1.0);
    const int64_t act = n * d * 4;

    ValueMap outs{{loss->output(), Value()}};
    auto state = loss->forward({{x, Value(xv)}}, outs, {loss->output()}, true);
    // Live at once at most: relu1's output, times2's and plus2's outputs (then relu2's replaces times2's).
    EXPECT_LE(state->peak_bytes(), 3 * act + 1024);
    EXPECT_GE(state->peak_bytes(), 3 * act);
    Tensor ones = Tensor::ones(outs.at(loss->output()).data().shape());
    ValueMap g = loss->backward(*state, {{loss->output(), Value(ones)}}, {w1, w2, b1, b2});

    // The same gradients as from a graph whose every intermediate value is asked for (and so kept).
    ValueMap all{{loss->output(), Value()}};
    for (const FunctionPtr& f : {t1, p1, h1, t2, p2, h2}) all.emplace(f->output(), Value());
    auto kept = loss->forward({{x, Value(xv)}}, all, {loss->output()}, true);
    EXPECT_GE(kept->peak_bytes(), 6 * act);
    ValueMap g2 = loss->backward(*kept, {{loss->output(), Value(ones)}}, {w1, w2, b1, b2});
    for (const Variable& p : std::vector<Variable>{w1, w2, b1, b2})
        EXPECT_EQ(reduce_max(ctk::abs(minus(g.at(p).data(), g2.at(p).data()))).item(), 0.0) << p.to_string();
}

// Sparse inputs in one-hot index form: times(x, W) gathers rows and its gradient scatters them back,
// with the same results as the dense one-hot rows; padded frames and -1 rows are zero.
TEST(OneHotInput, TimesGathersRowsAndMatchesDenseRows) {
    Variable x = sequence_input_variable({5}, DataType::f64, false, true);
    Variable w = parameter({5, 3}, glorot_uniform(), DataType::f64);
    FunctionPtr y = times(x, w);
    FunctionPtr loss = sequence::reduce_sum(reduce_sum(element_times(y, y)));
    Tensor idx = Tensor::from_vector<int64_t>({4, 0, -1, 2, 2, 9}, {2, 3});  // 9 sits in padding
    auto layout = std::make_shared<SequenceLayout>(std::vector<int64_t>{3, 2});
    Value sparse = Value::one_hot(idx, 5, DataType::f64, layout);
    EXPECT_TRUE(sparse.is_one_hot());
    EXPECT_EQ(sparse.shape(), (Shape{2, 3, 5}));
    EXPECT_EQ(sparse.one_hot_indices().to_vector<int64_t>(), (std::vector<int64_t>{4, 0, -1, 2, 2, -1}));
    Value dense(sparse.data().clone(), layout);  // the same rows, built densely
    std::vector<double> rows(30, 0.0);           // -1 (given, and padding) leaves a zero row
    for (auto [frame, cls] : {std::pair{0, 4}, {1, 0}, {3, 2}, {4, 2}})
        rows[static_cast<size_t>(frame * 5 + cls)] = 1;
    EXPECT_EQ(dense.data().contiguous().to_vector<double>(), rows);
    EXPECT_EQ(dense.data().at({0, 2, 0}), 0.0);
    EXPECT_EQ(dense.data().at({1, 1, 2}), 1.0);

    ValueMap gs = loss->grad({{x, sparse}}, {w});
    ValueMap gd = loss->grad({{x, dense}}, {w});
    EXPECT_LE(reduce_max(ctk::abs(minus(gs.at(w).data(), gd.at(w).data()))).item(), 1e-12);
    Tensor ys = y->eval({{x, sparse}}).at(y->output()).data();
    Tensor yd = y->eval({{x, dense}}).at(y->output()).data();
    for (int64_t s = 0; s < 2; ++s)
        for (int64_t t = 0; t < layout->lengths()[static_cast<size_t>(s)]; ++t)
            for (int64_t j = 0; j < 3; ++j) EXPECT_DOUBLE_EQ(ys.at({s, t, j}), yd.at({s, t, j}));
    EXPECT_EQ(ys.at({0, 2, 1}), 0.0);  // the -1 row
}

TEST(OneHotInput, ReshapedKeepsTheCheckedIndicesWithoutTheLayout) {
    auto layout = std::make_shared<SequenceLayout>(std::vector<int64_t>{1, 1, 1});
    Value seqs = Value::one_hot(Tensor::from_vector<int64_t>({3, -1, 0}, {3, 1}), 4, DataType::f32, layout);
    Value batch = seqs.one_hot_reshaped({3});
    EXPECT_TRUE(batch.is_one_hot());
    EXPECT_FALSE(batch.has_layout());
    EXPECT_EQ(batch.shape(), (Shape{3, 4}));
    EXPECT_EQ(batch.one_hot_indices().to_vector<int64_t>(), (std::vector<int64_t>{3, -1, 0}));
    EXPECT_EQ(batch.data().to_vector<float>(), (std::vector<float>{0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0}));
    EXPECT_THROW(Value(Tensor::zeros(Shape{3, 4})).one_hot_reshaped({3}), ValueError);
    EXPECT_THROW(seqs.one_hot_reshaped({4}), ShapeError);
}

TEST(OneHotInput, AnotherDtypeKeepsTheIndicesAndTheLayout) {
    auto layout = std::make_shared<SequenceLayout>(std::vector<int64_t>{2, 1});
    Value seqs = Value::one_hot(Tensor::from_vector<int64_t>({2, 0, 1, 7}, {2, 2}), 3, DataType::f32, layout);
    Value d = seqs.one_hot_as(DataType::f64);
    EXPECT_TRUE(d.is_one_hot());
    EXPECT_EQ(d.layout(), layout);
    EXPECT_EQ(d.dtype(), DataType::f64);
    EXPECT_EQ(d.one_hot_indices().to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 1, -1}));  // padding
    EXPECT_EQ(d.data().to_vector<double>(), (std::vector<double>{0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 0, 0}));
    EXPECT_THROW(seqs.one_hot_as(DataType::i64), TypeError);
    // An f32 one-hot input bound to an f64 variable takes the f64 rows.
    Variable x = sequence_input_variable({3}, DataType::f64);
    FunctionPtr y = reduce_sum(x, {Axis::all_static_axes()});
    EXPECT_EQ(y->eval({{x, seqs}}).at(y->output()).data().dtype(), DataType::f64);
}

TEST(OneHotInput, BadIndicesAndShapesAreRejected) {
    Tensor idx = Tensor::from_vector<int64_t>({1, 7}, {2});
    EXPECT_THROW(Value::one_hot(idx, 5), IndexError);
    EXPECT_THROW(Value::one_hot(Tensor::zeros(Shape{2}), 5), TypeError);  // indices must be int64
    Variable x = input_variable({4}, DataType::f32, false, true);
    FunctionPtr y = times(x, parameter({4, 2}));
    Value v = Value::one_hot(Tensor::from_vector<int64_t>({1, 2}, {2}), 5);
    try {
        y->eval({{x, v}});
        FAIL() << "expected ShapeError";
    } catch (const ShapeError& e) {
        EXPECT_NE(std::string(e.what()).find("sample shape [5]"), std::string::npos) << e.what();
    }
}
