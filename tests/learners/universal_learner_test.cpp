// The universal learner: an update written with graph ops (assign) reproduces sgd bit for bit, an
// AdaGrad-like rule keeps its accumulators in constants updated through assign, checkpoints carry those
// accumulators, and bad update functions or gradients are rejected with the parameter named.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ctk/graph/graph_ops.h"
#include "ctk/learners.h"

namespace ctk {
namespace {

using Vec = std::vector<double>;

const std::vector<Vec> kGradsW = {
    {0.8, -2.0, 0.0, 1.5, -0.3}, {1.2, 1.0, 0.0, -0.5, -0.9}, {-0.4, 3.0, 0.0, 2.5, -1.8}};
const std::vector<Vec> kGradsB = {{0.25, -0.5}, {1.0, 0.125}, {-2.0, 0.75}};
const std::vector<int64_t> kMb = {4, 2, 8};

struct Params {
    Variable w, b;
    std::vector<Variable> list() const { return {w, b}; }
};

Params make_params(DataType dtype) {
    auto make = [&](const Vec& v, const char* name) {
        return parameter_from(Tensor::from_vector<double>(v, Shape{int64_t(v.size())}).to(dtype), name);
    };
    return {make({0.5, -1.25, 2.0, 0.0, 3.0}, "w"), make({0.1, -0.2}, "b")};
}

GradientMap grads_at(const Params& p, int step, DataType dtype) {
    auto t = [&](const Vec& v) { return Tensor::from_vector<double>(v, Shape{int64_t(v.size())}).to(dtype); };
    return {{p.w, t(kGradsW[size_t(step)])}, {p.b, t(kGradsB[size_t(step)])}};
}

Vec values(const Variable& v) {
    return v.value().to(DataType::f64).to_vector<double>();
}

// SGD written as graph ops: p <- p - lr * g.
FunctionPtr sgd_update(const std::vector<Variable>& params, const std::vector<Variable>& grads, double lr) {
    std::vector<Variable> updates;
    for (size_t i = 0; i < params.size(); ++i) {
        const Variable& p = params[i];
        updates.push_back(assign(p, minus(p, element_times(constant(lr, p.dtype()), grads[i]))));
    }
    return combine(updates);
}

// CNTK's my_adagrad example, accumulating: a <- a + g*g; p <- p - 0.01 * g / sqrt(a + 1e-6).
FunctionPtr adagrad_update(const std::vector<Variable>& params, const std::vector<Variable>& grads) {
    std::vector<Variable> updates;
    for (size_t i = 0; i < params.size(); ++i) {
        const Variable& p = params[i];
        const Variable& g = grads[i];
        Variable a = constant(p.shape(), 0.0, p.dtype(), "accum");
        FunctionPtr accum_new = assign(a, plus(a, element_times(g, g)));
        FunctionPtr step = element_times(constant(0.01, p.dtype()),
                                         element_divide(g, sqrt(plus(accum_new, constant(1e-6, p.dtype())))));
        updates.push_back(assign(p, minus(p, step)));
    }
    return combine(updates);
}

void expect_near(const Vec& got, const Vec& want, double tol) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

}  // namespace

TEST(Universal, SgdWrittenWithAssignMatchesTheSgdLearnerBitForBit) {
    for (DataType dtype : {DataType::f64, DataType::f32}) {
        Params a = make_params(dtype), b = make_params(dtype);
        LearnerPtr plain = sgd(a.list(), learning_parameter_schedule_per_sample(0.05));
        LearnerPtr uni =
            universal([](const auto& p, const auto& g) { return sgd_update(p, g, 0.05); }, b.list());
        for (int k = 0; k < 3; ++k) {
            EXPECT_TRUE(plain->update(grads_at(a, k, dtype), kMb[size_t(k)]));
            EXPECT_TRUE(uni->update(grads_at(b, k, dtype), kMb[size_t(k)], k == 2));
            EXPECT_EQ(values(a.w), values(b.w)) << dtype_name(dtype) << " step " << k;
            EXPECT_EQ(values(a.b), values(b.b)) << dtype_name(dtype) << " step " << k;
        }
        EXPECT_EQ(uni->total_number_of_samples_seen(), 14);
        EXPECT_EQ(uni->total_number_of_minibatches_seen(), 3);
        EXPECT_EQ(uni->sweeps_seen(), 1);
    }
}

TEST(Universal, AdaGradLikeRuleKeepsItsAccumulatorsInConstants) {
    Params p = make_params(DataType::f64);
    LearnerPtr l = universal(adagrad_update, p.list());
    Vec w = values(p.w), acc(w.size(), 0.0);
    for (int k = 0; k < 3; ++k) {
        ASSERT_TRUE(l->update(grads_at(p, k, DataType::f64), kMb[size_t(k)]));
        for (size_t i = 0; i < w.size(); ++i) {
            const double g = kGradsW[size_t(k)][i];
            acc[i] += g * g;
            w[i] -= 0.01 * (g / std::sqrt(acc[i] + 1e-6));
        }
        expect_near(values(p.w), w, 1e-15);
    }
}

// One protocol for every learner: the three parts a Trainer calls (begin, apply, end) give update()'s
// values and counters for an update written as a graph too, and a half-protocol step changes nothing.
TEST(Universal, TheThreePartProtocolGivesUpdatesValues) {
    Params a = make_params(DataType::f64), b = make_params(DataType::f64);
    LearnerPtr whole = universal(adagrad_update, a.list()), split = universal(adagrad_update, b.list());
    for (int k = 0; k < 3; ++k) {
        ASSERT_TRUE(whole->update(grads_at(a, k, DataType::f64), kMb[size_t(k)], k == 1));
        ASSERT_TRUE(split->begin_update(kMb[size_t(k)], k == 1));
        ASSERT_TRUE(split->apply_update(grads_at(b, k, DataType::f64), kMb[size_t(k)]));
        split->end_update(kMb[size_t(k)]);
    }
    EXPECT_EQ(values(a.w), values(b.w));
    EXPECT_EQ(values(a.b), values(b.b));
    EXPECT_EQ(split->total_number_of_samples_seen(), 14);
    EXPECT_EQ(split->total_number_of_minibatches_seen(), 3);
    EXPECT_EQ(split->sweeps_seen(), 1);
    EXPECT_FALSE(split->begin_update(0));
    EXPECT_THROW(split->begin_update(-1), ValueError);
    // update() checks every gradient before anything changes: a missing one leaves the counters alone.
    GradientMap partial = grads_at(b, 0, DataType::f64);
    partial.erase(b.b);
    EXPECT_THROW(split->update(partial, 4), ValueError);
    EXPECT_EQ(split->total_number_of_minibatches_seen(), 3);
}

TEST(Universal, CheckpointCarriesTheAccumulatorsAndCounters) {
    Params a = make_params(DataType::f64), b = make_params(DataType::f64);
    LearnerPtr la = universal(adagrad_update, a.list());
    for (int k = 0; k < 2; ++k) la->update(grads_at(a, k, DataType::f64), kMb[size_t(k)]);
    const Dictionary state = la->checkpoint_state();
    // A fresh learner (zero accumulators) on parameters holding the same values, restored, continues alike.
    b.w.set_value(a.w.value());
    b.b.set_value(a.b.value());
    LearnerPtr lb = universal(adagrad_update, b.list());
    lb->restore_from_checkpoint(state);
    EXPECT_EQ(lb->total_number_of_samples_seen(), 6);
    EXPECT_EQ(lb->total_number_of_minibatches_seen(), 2);
    la->update(grads_at(a, 2, DataType::f64), kMb[2]);
    lb->update(grads_at(b, 2, DataType::f64), kMb[2]);
    EXPECT_EQ(values(a.w), values(b.w));
    EXPECT_EQ(values(a.b), values(b.b));

    // A state from an update function of another shape is refused, and the learner is left unchanged.
    Variable other = parameter_from(Tensor::zeros(Shape{3}, DataType::f64), "other");
    LearnerPtr lc = universal(adagrad_update, {other});
    EXPECT_THROW(lc->restore_from_checkpoint(state), ValueError);
    EXPECT_EQ(lc->total_number_of_samples_seen(), 0);
}

TEST(Universal, ReportsCntksFixedRateAndSkipsEmptyMinibatches) {
    Params p = make_params(DataType::f64);
    LearnerPtr l =
        universal([](const auto& ps, const auto& gs) { return sgd_update(ps, gs, 0.1); }, p.list());
    std::vector<std::string> lines;
    l->add_value_reporter(
        [&](const std::string& k, double v) { lines.push_back(k + ": " + std::to_string(v)); });
    const Vec before = values(p.w);
    EXPECT_FALSE(l->update(grads_at(p, 0, DataType::f64), 0));
    EXPECT_EQ(values(p.w), before);
    EXPECT_TRUE(l->update(grads_at(p, 0, DataType::f64), 4));
    EXPECT_TRUE(l->update(grads_at(p, 1, DataType::f64), 4));
    ASSERT_EQ(lines.size(), 1u);
    EXPECT_EQ(lines[0], "Learning rate per minibatch: 1.000000");
}

TEST(Universal, ErrorsNameTheParameter) {
    Params p = make_params(DataType::f64);
    // The update function must use every parameter.
    try {
        universal([](const auto& ps, const auto& gs) { return sgd_update({ps[0]}, {gs[0]}, 0.1); }, p.list());
        ADD_FAILURE() << "expected ValueError";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("does not use parameter Parameter('b'"), std::string::npos)
            << e.what();
    }
    // It may read no inputs besides the gradients.
    Variable x = input_variable({5}, DataType::f64, false, false, {}, "x");
    EXPECT_THROW(universal(
                     [&](const auto& ps, const auto& gs) {
                         return combine({assign(ps[0], plus(ps[0], x))->output(),
                                         sgd_update({ps[1]}, {gs[1]}, 0.1)->output()});
                     },
                     p.list()),
                 ValueError);
    EXPECT_THROW(universal([](const auto&, const auto&) { return FunctionPtr(); }, p.list()), ValueError);
    EXPECT_THROW(universal(adagrad_update, {parameter({kInferredDim, 2})}), ValueError);

    LearnerPtr l =
        universal([](const auto& ps, const auto& gs) { return sgd_update(ps, gs, 0.1); }, p.list());
    GradientMap g = grads_at(p, 0, DataType::f64);
    g.erase(p.b);
    try {
        l->update(g, 4);
        ADD_FAILURE() << "expected ValueError";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("no gradient for Parameter('b'"), std::string::npos) << e.what();
    }
    g = grads_at(p, 0, DataType::f64);
    g[p.b] = Tensor::zeros(Shape{3}, DataType::f64);
    EXPECT_THROW(l->update(g, 4), ShapeError);
    EXPECT_EQ(l->total_number_of_minibatches_seen(), 0);
}

}  // namespace ctk
