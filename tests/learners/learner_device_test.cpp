// Every learner rule run where its parameter lives: the same steps on the CPU and on another device give
// the same bits (the rules are shared, and the GPU file is compiled without FMA contraction). Built twice:
// learner_device_test uses the logical device CPU:1 (the device plumbing: state, scratch, checkpoints);
// learner_gpu_test (CTK_LEARNER_TEST_GPU, label gpu) uses every GPU and skips without one.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ctk/core/cuda.h"
#include "ctk/core/rng.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/learners.h"

namespace ctk {
namespace {

struct LearnerCase {
    std::string name;
    std::function<LearnerPtr(const Variable&)> make;
    bool exact_sum = true;  // false: a mean multiplier or norm is summed in another order on a GPU
};

LearnerOptions clipped(bool truncate) {
    LearnerOptions o;
    o.gradient_clipping_threshold_per_sample = 0.05;
    o.gradient_clipping_with_truncation = truncate;
    o.l2_regularization_weight = 0.001;
    return o;
}

std::vector<LearnerCase> learner_cases() {
    const auto lr = learning_parameter_schedule_per_sample(0.01);
    const auto m = momentum_schedule(0.9);
    LearnerOptions noisy;
    noisy.gaussian_noise_injection_std_dev = TrainingParameterSchedule(0.01);
    noisy.gaussian_noise_injection_seed = 5;
    noisy.l1_regularization_weight = 0.01;
    return {
        {"sgd", [=](const Variable& p) { return sgd({p}, lr); }},
        {"sgd_truncated_l2", [=](const Variable& p) { return sgd({p}, lr, clipped(true)); }},
        {"sgd_norm_clipped", [=](const Variable& p) { return sgd({p}, lr, clipped(false)); }, false},
        {"sgd_noise_l1", [=](const Variable& p) { return sgd({p}, lr, noisy); }},
        {"momentum", [=](const Variable& p) { return momentum_sgd({p}, lr, m); }},
        {"nesterov", [=](const Variable& p) { return nesterov({p}, lr, m, false); }},
        {"adagrad", [=](const Variable& p) { return adagrad({p}, lr, false); }},
        {"adagrad_mean", [=](const Variable& p) { return adagrad({p}, lr, true); }, false},
        {"fsadagrad", [=](const Variable& p) { return fsadagrad({p}, lr, m); }},
        {"adam", [=](const Variable& p) { return adam({p}, lr, m); }},
        {"adamax",
         [=](const Variable& p) { return adam({p}, lr, m, true, momentum_schedule(0.999), 1e-8, true); }},
        {"rmsprop", [=](const Variable& p) { return rmsprop({p}, lr, 0.95, 1.2, 0.7, 10.0, 1e-4, false); }},
        {"rmsprop_mean",
         [=](const Variable& p) { return rmsprop({p}, lr, 0.95, 1.2, 0.7, 10.0, 1e-4, true); }, false},
        {"adadelta", [=](const Variable& p) { return adadelta({p}, lr); }},
    };
}

Tensor random_tensor(int64_t n, DataType dtype, uint64_t seed) {
    Tensor t = Tensor::empty(Shape{n}, DataType::f64);
    Generator(seed).normal(t, 0.0, 1.0);
    return t.to(dtype);
}

// Three steps on `device` (the parameter and its gradients there); the parameter's values, on the host.
Tensor run_steps(const LearnerCase& c, DataType dtype, Device device, int64_t n) {
    Variable p = parameter_from(random_tensor(n, dtype, 1).to(device), "w");
    LearnerPtr l = c.make(p);
    for (int k = 0; k < 3; ++k) {
        const Tensor g = random_tensor(n, dtype, 10 + static_cast<uint64_t>(k));
        EXPECT_TRUE(l->update({{p, g.to(device)}}, 16 + 8 * k));
    }
    EXPECT_EQ(p.value().device(), device) << c.name;
    // A checkpoint taken on the device restores on it and continues exactly.
    const Dictionary state = l->checkpoint_state();
    l->restore_from_checkpoint(state);
    EXPECT_TRUE(l->update({{p, random_tensor(n, dtype, 20).to(device)}}, 8));
    return p.value().to(Device::cpu());
}

void expect_same_steps(Device device, double tol_inexact) {
    // Large enough for several GPU blocks and several CPU work items; odd, so no vector width divides it.
    const int64_t n = 100003;
    for (const LearnerCase& c : learner_cases())
        for (DataType dtype : {DataType::f32, DataType::f64}) {
            const Tensor want = run_steps(c, dtype, Device::cpu(), n).to(DataType::f64);
            const Tensor got = run_steps(c, dtype, device, n).to(DataType::f64);
            const auto a = got.to_vector<double>(), e = want.to_vector<double>();
            const double tol = c.exact_sum ? 0.0 : tol_inexact;
            int64_t bad = 0;
            for (size_t i = 0; i < a.size(); ++i)
                if (!(std::abs(a[i] - e[i]) <= tol * std::max(1.0, std::abs(e[i])))) ++bad;
            EXPECT_EQ(bad, 0) << c.name << " (" << dtype_name(dtype) << ") on " << device.to_string() << ": "
                              << bad << " elements differ from the CPU's";
        }
}

// Four steps through update(), or through begin_update/apply_update/end_update (the Trainer's split when
// it records the updates in a CUDA Graph: the step's scalars are written first, the kernels read them);
// the minibatch size changes every step, so do the scalars. The parameter's values, on the host.
Tensor run_steps_split(const LearnerCase& c, DataType dtype, Device device, int64_t n, bool split) {
    Variable p = parameter_from(random_tensor(n, dtype, 1).to(device), "w");
    LearnerPtr l = c.make(p);
    int64_t samples = 0;
    for (int k = 0; k < 4; ++k) {
        const Tensor g = random_tensor(n, dtype, 10 + static_cast<uint64_t>(k)).to(device);
        const int64_t mb = 16 + 8 * k;
        samples += mb;
        if (!split) {
            EXPECT_TRUE(l->update({{p, g}}, mb, k == 2));
            continue;
        }
        EXPECT_TRUE(l->begin_update(mb, k == 2)) << c.name;
        l->apply_update({{p, g}}, mb);
        l->end_update(mb);
    }
    EXPECT_EQ(l->total_number_of_samples_seen(), samples) << c.name;
    EXPECT_EQ(l->total_number_of_minibatches_seen(), 4) << c.name;
    EXPECT_EQ(l->sweeps_seen(), 1) << c.name;
    return p.value().to(Device::cpu()).to(DataType::f64);
}

void expect_split_steps_match(Device device) {
    const int64_t n = 4099;
    for (const LearnerCase& c : learner_cases())
        for (DataType dtype : {DataType::f32, DataType::f64})
            EXPECT_EQ(run_steps_split(c, dtype, device, n, true).to_vector<double>(),
                      run_steps_split(c, dtype, device, n, false).to_vector<double>())
                << c.name << " (" << dtype_name(dtype) << ") on " << device.to_string();
}

}  // namespace

#ifndef CTK_LEARNER_TEST_GPU
TEST(LearnerSteps, WhichUpdatesCanBeRecordedAndWhyNot) {
    Variable p = parameter_from(Tensor::zeros(Shape{3}, DataType::f32), "w");
    // Clipping by the norm and the mean multipliers are computed where the parameter lives: recorded too.
    const std::map<std::string, std::string> refused = {{"sgd_noise_l1", "Gaussian noise"}};
    for (const LearnerCase& c : learner_cases()) {
        const std::string why = c.make(p)->recording_refusal();
        auto it = refused.find(c.name);
        if (it == refused.end())
            EXPECT_EQ(why, "") << c.name;
        else
            EXPECT_NE(why.find(it->second), std::string::npos) << c.name << ": " << why;
    }
    // An update written as a graph is not made of the rules.
    const LearnerPtr u = universal(
        [](const std::vector<Variable>& ps, const std::vector<Variable>& gs) {
            return combine({assign(ps[0], minus(ps[0], gs[0]))});
        },
        {p});
    EXPECT_NE(u->recording_refusal().find("not made of ctk's update rules"), std::string::npos)
        << u->recording_refusal();
}

TEST(LearnerSteps, BeginUpdateSkipsWhereUpdateDoes) {
    Variable p = parameter_from(Tensor::ones(Shape{3}, DataType::f32), "w");
    // A rate of 0 for the first 4 samples, then 0.5.
    auto l = sgd({p}, learning_parameter_schedule(std::vector<double>{0.0, 0.5}, 0, 4));
    EXPECT_FALSE(l->begin_update(0));
    EXPECT_FALSE(l->begin_update(4));
    EXPECT_EQ(l->total_number_of_samples_seen(), 0);
    EXPECT_FALSE(l->update({{p, Tensor::ones(Shape{3})}}, 4));
    // The counters moved on only through updates that ran: still at 0, the rate still 0.
    EXPECT_EQ(l->learning_rate(), 0.0);
    EXPECT_THROW(l->begin_update(-1), ValueError);
}

TEST(LearnerSteps, ParametersOfTwoDtypesReadTheStepScalarsOfTheirOwn) {
    // One learner over an f32 and an f64 parameter: a block of step scalars per dtype, each giving what
    // a learner over that parameter alone gives.
    const auto lr = learning_parameter_schedule_per_sample(0.01);
    auto run = [&](bool together) {
        Variable a = parameter_from(random_tensor(300, DataType::f32, 1), "a");
        Variable b = parameter_from(random_tensor(200, DataType::f64, 2), "b");
        std::vector<LearnerPtr> ls;
        if (together)
            ls = {adam({a, b}, lr, momentum_schedule(0.9))};
        else
            ls = {adam({a}, lr, momentum_schedule(0.9)), adam({b}, lr, momentum_schedule(0.9))};
        for (int k = 0; k < 3; ++k) {
            const GradientMap g{{a, random_tensor(300, DataType::f32, 10 + static_cast<uint64_t>(k))},
                                {b, random_tensor(200, DataType::f64, 20 + static_cast<uint64_t>(k))}};
            for (const LearnerPtr& l : ls) {
                GradientMap mine;
                for (const Variable& p : l->parameters()) mine.emplace(p, g.at(p));
                EXPECT_TRUE(l->update(mine, 16 + k));
            }
        }
        return std::make_pair(a.value().to_vector<float>(), b.value().to_vector<double>());
    };
    EXPECT_EQ(run(true), run(false));
}

TEST(LearnerSteps, TheRecordingKeyNamesTheStateAndChangesWhenARestoreReplacesIt) {
    Variable p = parameter_from(random_tensor(64, DataType::f32, 1), "w");
    auto l = adam({p}, learning_parameter_schedule(0.01), momentum_schedule(0.9));
    EXPECT_TRUE(l->update({{p, random_tensor(64, DataType::f32, 2)}}, 8));
    std::vector<int64_t> before, again, restored;
    l->add_recording_key(before);
    EXPECT_GE(before.size(), 3u);  // two state tensors and the step-scalar block
    EXPECT_TRUE(l->update({{p, random_tensor(64, DataType::f32, 3)}}, 8));
    l->add_recording_key(again);
    EXPECT_EQ(before, again);  // steps update the state in place
    l->restore_from_checkpoint(l->checkpoint_state());
    l->add_recording_key(restored);
    EXPECT_NE(before, restored);  // new state tensors: a recording of the old ones is stale
}

TEST(LearnerOnDevice, TheSplitUpdateGivesUpdatesBits) {
    expect_split_steps_match(Device::cpu());
    expect_split_steps_match(Device::cpu(1));
}

TEST(LearnerOnDevice, EveryRuleGivesTheCpuBitsOnAnotherDevice) {
    expect_same_steps(Device::cpu(1), 0.0);
}

TEST(LearnerOnDevice, GradientOnAnotherDeviceThanItsParameterIsRefused) {
    Variable p = parameter_from(Tensor::zeros(Shape{3}, DataType::f32, Device::cpu(1)), "w");
    auto l = sgd({p}, learning_parameter_schedule(0.1));
    try {
        l->update({{p, Tensor::ones(Shape{3})}}, 1);
        FAIL() << "no error";
    } catch (const DeviceError& e) {
        EXPECT_NE(std::string(e.what()).find("CPU:1"), std::string::npos) << e.what();
    }
    EXPECT_EQ(p.value().to_vector<float>(), std::vector<float>(3, 0.0f));  // unchanged
}
#else
TEST(LearnerOnGpu, EveryRuleGivesTheCpuBits) {
    if (!cuda::is_available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
    // The mean multipliers and the clipping norm are sums in another order on the GPU: a last-bit
    // difference there can move every element by one rounding.
    for (int d = 0; d < cuda::device_count(); ++d) expect_same_steps(Device::cuda(d), 1e-6);
}

TEST(LearnerOnGpu, TheSplitUpdateGivesUpdatesBits) {
    if (!cuda::is_available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
    for (int d = 0; d < cuda::device_count(); ++d) expect_split_steps_match(Device::cuda(d));
}
#endif

}  // namespace ctk
