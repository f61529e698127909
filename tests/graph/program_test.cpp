// Program: a compiled forward and backward gives the gradients Function::grad gives, tells of each
// gradient as soon as it is final (the last layer's first), plans its memory so that repeated runs take
// only what they hand out from the allocator, and refuses at compile time what cannot run.
#include <gtest/gtest.h>

#include "ctk/core/storage.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/graph/program.h"
#include "graph/graph_test_util.h"

using namespace ctk;

namespace {

Tensor ramp(const Dims& dims, double scale) {
    Tensor t = Tensor::empty(Shape(dims));
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(scale * ((i * 37 % 17) - 8) / 8.0);
    return t;
}

struct Mlp {
    Variable x = input_variable({6}, DataType::f32, false, false, default_batch_axes(), "x");
    Variable y = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "y");
    Variable w1 = parameter_from(ramp({6, 5}, 0.3), "W1");
    Variable b1 = parameter_from(ramp({5}, 0.1), "b1");
    Variable w2 = parameter_from(ramp({5, 3}, 0.5), "W2");
    FunctionPtr z = times(relu(plus(times(x, w1)->output(), b1)->output())->output(), w2);
    FunctionPtr loss = reduce_sum(cross_entropy_with_softmax(z->output(), y)->output(), {Axis::all_axes()});
    ValueMap args() const {
        Tensor labels = Tensor::zeros(Shape{4, 3});
        for (int64_t n = 0; n < 4; ++n) labels.set({n, n % 3}, 1.0);
        return {{x, Value(ramp({4, 6}, 1.0))}, {y, Value(labels)}};
    }
};

void expect_near(const Tensor& a, const Tensor& b) {
    const auto va = a.to_vector<double>(), vb = b.to_vector<double>();
    ASSERT_EQ(va.size(), vb.size());
    for (size_t i = 0; i < va.size(); ++i) EXPECT_NEAR(va[i], vb[i], 1e-6) << i;
}

}  // namespace

TEST(Program, GradientsMatchFunctionGrad) {
    Mlp m;
    Program p({m.loss->output()}, {m.w1, m.b1, m.w2}, {Device::cpu()});
    EXPECT_GT(p.num_steps(), 4);
    const Program::Result r = p.run(m.args());
    const ValueMap expected = m.loss->grad(m.args(), {m.w1, m.b1, m.w2}, {}, Device::cpu());
    for (const Variable& w : {m.w1, m.b1, m.w2}) expect_near(r.gradients.at(w).data(), expected.at(w).data());
    const ValueMap loss = m.loss->eval(m.args(), {}, Device::cpu());
    expect_near(r.outputs.at(m.loss->output()).data(), loss.at(m.loss->output()).data());
}

// Function::forward's plans live outside the Function (src/graph/plan_cache.cpp), keyed by its address:
// Functions made and dropped one after another (which reuse addresses) each evaluate their own graph,
// and evaluating one Function again reuses its plan with the values of this call.
TEST(Program, EveryFunctionEvaluatesItsOwnGraphThroughThePlanCache) {
    Variable x = input_variable({2}, DataType::f32, false, false, default_batch_axes(), "x");
    const ValueMap args{{x, Value(Tensor::from_vector<float>({1.0f, 2.0f}, Shape{1, 2}))}};
    for (int i = 0; i < 200; ++i) {
        FunctionPtr f = plus(x, constant(Tensor::full(Shape{2}, double(i), DataType::f32)));
        for (int again = 0; again < 2; ++again) {
            const Tensor y = f->eval(args, {}, Device::cpu()).at(f->output()).data();
            ASSERT_EQ(y.to_vector<float>(), (std::vector<float>{1.0f + i, 2.0f + i})) << i;
        }
    }
}

TEST(Program, TellsOfEachGradientWhenItIsFinal) {
    Mlp m;
    Program p({m.loss->output()}, {m.w1, m.b1, m.w2}, {Device::cpu()});
    std::vector<std::string> order;
    ValueMap heard;
    Program::RunOptions o;
    o.on_gradient_ready = [&](const Variable& v, const Value& g) {
        order.push_back(v.name());
        heard.emplace(v, Value(g.data().clone()));
    };
    const Program::Result r = p.run(m.args(), o);
    // The last layer's gradient is final before backward reaches the first layer.
    ASSERT_EQ(order, (std::vector<std::string>{"W2", "b1", "W1"}));
    for (const Variable& w : {m.w1, m.b1, m.w2}) expect_near(heard.at(w).data(), r.gradients.at(w).data());
    // Known before any run (distributed workers group gradients by it).
    std::vector<std::string> known;
    for (const Variable& v : p.gradient_order()) known.push_back(v.name());
    EXPECT_EQ(known, order);
}

TEST(Program, RepeatedRunsTakeOnlyWhatTheyHandOut) {
    Mlp m;
    Program p({m.loss->output(), m.z->output()}, {m.w1, m.b1, m.w2}, {Device::cpu()});
    const ValueMap args = m.args();
    Program::Result first = p.run(args);
    for (int run = 0; run < 3; ++run) {
        const int64_t before = cpu_allocator().stats().num_allocations;
        const Program::Result r = p.run(args);
        const int64_t made = cpu_allocator().stats().num_allocations - before;
        const MemoryPlanStats s = p.memory_stats();
        if (run == 0) continue;  // the second run may differ from the first (parameters moved, caches)
        EXPECT_EQ(s.last_run_misses, 0);
        EXPECT_EQ(made, s.escaped_blocks);
        EXPECT_LE(s.escaped_blocks, 5) << "the two outputs and three gradients";
        EXPECT_GT(s.planned_blocks, 10);
        EXPECT_GE(s.arena_bytes, s.planned_peak_bytes);
        for (const Variable& w : {m.w1, m.b1, m.w2})
            expect_near(r.gradients.at(w).data(), first.gradients.at(w).data());
    }
}

TEST(Program, RefusesAtCompileTime) {
    Mlp m;
    Variable other = parameter_from(ramp({2}, 1.0), "other");
    EXPECT_NE(test::error_of([&] { Program({m.loss->output()}, {other}); }).find("not upstream"),
              std::string::npos);
    EXPECT_NE(test::error_of([&] {
                  Program({m.loss->output()}, {m.w1, m.w1});
              }).find("twice"),
              std::string::npos);
    Variable ph = placeholder(Dims{3});
    FunctionPtr unbound = plus(ph, m.y);
    EXPECT_NE(test::error_of([&] { Program({unbound->output()}); }).find("not bound"), std::string::npos);
    EXPECT_THROW(Program({}), ValueError);
}

TEST(Program, RecurrentLoopUnderTheMemoryPlan) {
    Variable x = sequence_input_variable({2}, DataType::f32, false, false, Axis::default_dynamic_axis(), "x");
    Variable w = parameter_from(ramp({2, 2}, 0.4), "W");
    Variable h = placeholder(Dims{2}, default_sequence_axes());
    FunctionPtr step = tanh(plus(x, times(sequence::past_value(h)->output(), w)->output())->output());
    step->replace_placeholders({{h, step->output()}});
    FunctionPtr loss = reduce_sum(step->output(), {Axis::all_axes()});
    auto layout = std::make_shared<const SequenceLayout>(std::vector<int64_t>{3, 2});
    const ValueMap args{{x, Value(ramp({2, 3, 2}, 1.0), layout)}};
    Program p({loss->output()}, {w}, {Device::cpu()});
    const ValueMap expected = loss->grad(args, {w}, {}, Device::cpu());
    for (int run = 0; run < 3; ++run) expect_near(p.run(args).gradients.at(w).data(), expected.at(w).data());
    EXPECT_EQ(p.memory_stats().last_run_misses, 0);
}

TEST(Program, KnowsWhatItReadsAndWhatRulesOutACudaGraph) {
    Mlp m;
    Program plain({m.loss->output()}, {m.w1});
    EXPECT_EQ(plain.capture_refusal(), "");
    EXPECT_EQ(plain.parameters_and_constants().size(), 3u);
    FunctionPtr dropped = reduce_sum(dropout(m.z->output(), 0.5, 7, "drop")->output(), {Axis::all_axes()});
    Program random({dropped->output()}, {m.w2});
    EXPECT_NE(random.capture_refusal().find("Dropout 'drop' is a random op"), std::string::npos)
        << random.capture_refusal();
    EXPECT_NE(plain.id(), random.id());
}
