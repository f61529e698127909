// Training steps replayed from a CUDA Graph (Trainer::set_cuda_graph) against the same steps run
// directly on the same GPU: the same kernels in the same order, so the same bits (in deterministic mode,
// so that cuDNN's choice cannot differ between runs); minibatches of another size run directly in
// between; the learners' updates are replayed with their step scalars rewritten (changing rates, Adam's
// bias correction) or, where a learner needs the host, run outside; graphs that cannot be recorded say
// why and still train right. Label gpu: skips without a GPU.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "ctk/core/cuda.h"
#include "train/small_convnet.h"

namespace ctk {
namespace {

class CudaGraphTraining : public ::testing::Test {
protected:
    void SetUp() override {
        if (!cuda::is_available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
        cuda::set_deterministic(true);
    }
    void TearDown() override { cuda::set_deterministic(false); }
    const Device gpu = Device::cuda(0);
};

struct TrainingRun {
    std::vector<double> losses, metrics;
    std::vector<std::vector<double>> params;
    std::vector<std::string> status;
    int64_t replays = 0;
};

using MakeLearner = std::function<LearnerPtr(const std::vector<Variable>&)>;

LearnerPtr momentum_learner(const std::vector<Variable>& ps) {
    return momentum_sgd(ps, learning_parameter_schedule_per_sample(0.02), momentum_schedule(0.9));
}

// Steps of 16 samples, with one of 5 at step 4 (an epoch's last minibatch). `restore_at`: the trainer
// saves a checkpoint and restores it before that step (new learner state tensors).
TrainingRun train(Device device, bool graph, bool dropout, int steps = 9,
                  const MakeLearner& make = momentum_learner, int restore_at = -1) {
    set_fixed_random_seed(5);
    const testing::SmallConvNet n = testing::small_convnet(dropout);
    Trainer trainer(n.z, n.loss, n.metric, {make(n.z->parameters())});
    trainer.set_cuda_graph(graph);
    TrainingRun r;
    const std::string checkpoint = ::testing::TempDir() + "cuda_graph_gpu_test.model";
    for (int step = 0; step < steps; ++step) {
        if (step == restore_at) {
            trainer.save_checkpoint(checkpoint);
            trainer.restore_from_checkpoint(checkpoint);
        }
        MinibatchArguments mb = testing::row_band_minibatch(n, step, step == 4 ? 5 : 16);
        for (auto& [v, value] : mb) value = value.to(device);  // as next_minibatch(device) leaves it
        EXPECT_TRUE(trainer.train_minibatch(mb, false, device));
        r.losses.push_back(trainer.previous_minibatch_loss_average());
        r.metrics.push_back(trainer.previous_minibatch_evaluation_average());
        r.status.push_back(trainer.cuda_graph_status());
    }
    for (const Variable& p : n.z->parameters())
        r.params.push_back(p.value().to(DataType::f64).to_vector<double>());
    for (const Variable& c : n.z->constants())
        r.params.push_back(c.value().to(DataType::f64).to_vector<double>());
    r.replays = trainer.cuda_graph_replays();
    return r;
}

void expect_same_bits(const TrainingRun& a, const TrainingRun& b) {
    ASSERT_EQ(a.losses.size(), b.losses.size());
    for (size_t i = 0; i < a.losses.size(); ++i) {
        EXPECT_EQ(a.losses[i], b.losses[i]) << "step " << i;
        EXPECT_EQ(a.metrics[i], b.metrics[i]) << "step " << i;
    }
    ASSERT_EQ(a.params.size(), b.params.size());
    for (size_t p = 0; p < a.params.size(); ++p) EXPECT_EQ(a.params[p], b.params[p]) << "tensor " << p;
}

TEST_F(CudaGraphTraining, ReplayedStepsGiveTheDirectStepsBits) {
    const TrainingRun direct = train(gpu, false, false);
    const TrainingRun replayed = train(gpu, true, false);
    expect_same_bits(direct, replayed);
    // Step 0 warms up, step 1 is recorded and replayed, 2-3 replay, 4 (5 samples) runs directly and
    // warms its shape, 5-8 replay the 16-sample graph again (it was kept).
    EXPECT_EQ(replayed.replays, 7);
    EXPECT_NE(replayed.status[0].find("warming up"), std::string::npos) << replayed.status[0];
    for (int s : {1, 2, 3, 5, 6, 7, 8})
        EXPECT_EQ(replayed.status[static_cast<size_t>(s)], "") << "step " << s;
    EXPECT_NE(replayed.status[4].find("warming up"), std::string::npos) << replayed.status[4];
    EXPECT_EQ(direct.replays, 0);
}

TEST_F(CudaGraphTraining, AdamWithAChangingRateIsReplayedWithItsUpdates) {
    // The rate drops after 48 samples (from step 3 on, a replay); Adam's bias correction changes every step.
    const MakeLearner make = [](const std::vector<Variable>& ps) {
        return adam(ps, learning_parameter_schedule_per_sample(std::vector<double>{0.01, 0.002}, 48),
                    momentum_schedule(0.9));
    };
    const TrainingRun direct = train(gpu, false, false, 9, make);
    const TrainingRun replayed = train(gpu, true, false, 9, make);
    expect_same_bits(direct, replayed);
    EXPECT_EQ(replayed.replays, 7);
    for (int s : {1, 2, 3, 5, 6, 7, 8})
        EXPECT_EQ(replayed.status[static_cast<size_t>(s)], "") << "step " << s;
}

TEST_F(CudaGraphTraining, MeanMultipliersAndNormClippingAreReplayedWithTheirUpdates) {
    // AdaGrad's mean multiplier and the clipping norm are sums computed on the GPU and read there.
    LearnerOptions clip;
    clip.gradient_clipping_threshold_per_sample = 0.01;
    clip.gradient_clipping_with_truncation = false;
    const MakeLearner make = [clip](const std::vector<Variable>& ps) {
        return adagrad(ps, learning_parameter_schedule_per_sample(0.02), true, clip);
    };
    const TrainingRun direct = train(gpu, false, false, 6, make);
    const TrainingRun replayed = train(gpu, true, false, 6, make);
    expect_same_bits(direct, replayed);
    EXPECT_EQ(replayed.replays, 4);
    EXPECT_EQ(replayed.status[2], "");
}

TEST_F(CudaGraphTraining, LearnersThatNeedTheHostUpdateOutsideTheReplayedStep) {
    // Gaussian noise is drawn on the host at every step: forward and backward are replayed, the update
    // runs after them.
    LearnerOptions noisy;
    noisy.gaussian_noise_injection_std_dev = TrainingParameterSchedule(0.001);
    noisy.gaussian_noise_injection_seed = 3;
    const MakeLearner make = [noisy](const std::vector<Variable>& ps) {
        return sgd(ps, learning_parameter_schedule_per_sample(0.02), noisy);
    };
    const TrainingRun direct = train(gpu, false, false, 6, make);
    const TrainingRun replayed = train(gpu, true, false, 6, make);
    expect_same_bits(direct, replayed);
    EXPECT_EQ(replayed.replays, 4);
    EXPECT_NE(replayed.status[2].find("outside the graph"), std::string::npos) << replayed.status[2];
    EXPECT_NE(replayed.status[2].find("Gaussian noise"), std::string::npos) << replayed.status[2];
}

TEST_F(CudaGraphTraining, ARestoredCheckpointIsRecordedAgain) {
    // The restore gives the learner new state tensors: the old recording must not be replayed on them.
    const TrainingRun direct = train(gpu, false, false, 9, momentum_learner, 6);
    const TrainingRun replayed = train(gpu, true, false, 9, momentum_learner, 6);
    expect_same_bits(direct, replayed);
    EXPECT_NE(replayed.status[6].find("warming up"), std::string::npos) << replayed.status[6];
    EXPECT_EQ(replayed.status[8], "");
}

TEST_F(CudaGraphTraining, RandomOpsAreRefusedAndTrainAsBefore) {
    const TrainingRun direct = train(gpu, false, true, 4);
    const TrainingRun refused = train(gpu, true, true, 4);
    expect_same_bits(direct, refused);
    EXPECT_EQ(refused.replays, 0);
    EXPECT_NE(refused.status.back().find("random op"), std::string::npos) << refused.status.back();
}

TEST_F(CudaGraphTraining, ValuesSetBetweenReplaysAreSeen) {
    auto run = [&](bool graph) {
        set_fixed_random_seed(5);
        const testing::SmallConvNet n = testing::small_convnet(false);
        Trainer trainer(n.z, n.loss, n.metric,
                        {sgd(n.z->parameters(), learning_parameter_schedule_per_sample(0.02))});
        trainer.set_cuda_graph(graph);
        std::vector<double> losses;
        for (int s = 0; s < 4; ++s) {
            if (s == 2) {  // written in place, as a checkpoint restore does: the recording reads it
                const Variable w = n.z->parameters()[0];
                w.set_value(Tensor::full(Shape(w.shape()), 0.01, w.dtype()));
            }
            EXPECT_TRUE(trainer.train_minibatch(testing::row_band_minibatch(n, s), false, gpu));
            losses.push_back(trainer.previous_minibatch_loss_average());
        }
        EXPECT_EQ(trainer.cuda_graph_replays(), graph ? 3 : 0);
        return losses;
    };
    EXPECT_EQ(run(true), run(false));
}

TEST_F(CudaGraphTraining, OffGivesTheMemoryBack) {
    const testing::SmallConvNet n = testing::small_convnet(false);
    Trainer trainer(n.z, n.loss, n.metric,
                    {sgd(n.z->parameters(), learning_parameter_schedule_per_sample(0.02))});
    trainer.set_cuda_graph(true);
    for (int s = 0; s < 3; ++s) trainer.train_minibatch(testing::row_band_minibatch(n, s), false, gpu);
    EXPECT_EQ(trainer.cuda_graph_replays(), 2);
    trainer.set_cuda_graph(false);
    EXPECT_EQ(allocator_for(gpu).stats().bytes_in_graph_pools, 0);
    EXPECT_EQ(trainer.cuda_graph_status(), "CUDA Graphs are off");
}

}  // namespace
}  // namespace ctk
