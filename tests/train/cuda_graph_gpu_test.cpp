// Training steps replayed from a CUDA Graph (Trainer::set_cuda_graph) against the same steps run
// directly on the same GPU: the same kernels in the same order, so the same bits (in deterministic mode,
// so that cuDNN's choice cannot differ between runs); minibatches of another size run directly in
// between; graphs that cannot be recorded say why and still train right. Label gpu: skips without a GPU.
#include <gtest/gtest.h>

#include "ctk/cuda.h"
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

// Steps of 16 samples, with one of 5 at step 4 (an epoch's last minibatch).
TrainingRun train(Device device, bool graph, bool dropout, int steps = 9) {
    set_fixed_random_seed(5);
    const testing::SmallConvNet n = testing::small_convnet(dropout);
    auto learner =
        momentum_sgd(n.z->parameters(), learning_parameter_schedule_per_sample(0.02), momentum_schedule(0.9));
    Trainer trainer(n.z, n.loss, n.metric, {learner});
    trainer.set_cuda_graph(graph);
    TrainingRun r;
    for (int step = 0; step < steps; ++step) {
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
