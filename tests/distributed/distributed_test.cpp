// Distributed training in one process: CNTK's quantizer on hand-checked vectors (1 and 2 bits, column
// statistics, residuals, packing at every width), stripes, the one-worker communicator, the learners'
// argument checks and CNTK's rules for the learners of one Trainer. The multi-worker behaviour is in
// mpi_test.cpp, run under mpiexec.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ctk/distributed/learners.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/graph/initializer.h"
#include "ctk/train.h"
#include "distributed/quantization.h"
#include "distributed/quantized_learner.h"

namespace ctk::distributed {
namespace {

// The reference's 4 x 2 gradient, column by column (column j is the j-th run of 4 values).
const std::vector<float> kColumns{0.3f, -0.1f, 0.5f, -0.4f, -0.2f, 0.6f, 0.0f, -0.8f};

std::vector<float> round_trip(const std::vector<float>& value, std::vector<float>& residual, int bits) {
    std::string wire;
    detail::quantize_columns(value.data(), residual.data(), 4, 2, bits, wire);
    EXPECT_EQ(static_cast<int64_t>(wire.size()), 2 * detail::quantized_column_bytes<float>(4, bits));
    std::vector<float> out(value.size());
    const char* in = wire.data();
    detail::dequantize_columns(in, wire.data() + wire.size(), out.data(), 4, 2, bits, false);
    EXPECT_EQ(in, wire.data() + wire.size());
    return out;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "element " << i;
}

TEST(Quantization, OneBitReproducesTheReferenceVectors) {
    std::vector<float> residual(8, 0.0f);
    const std::vector<float> out = round_trip(kColumns, residual, 1);
    // Each value becomes the mean of its column's negative or non-negative values.
    expect_near_all(out, {0.4f, -0.25f, 0.4f, -0.25f, -0.5f, 0.3f, 0.3f, -0.5f}, 1e-7f);
    expect_near_all(residual, {-0.1f, 0.15f, 0.1f, -0.15f, 0.3f, 0.3f, -0.3f, -0.3f}, 1e-7f);
    // The ranges on the wire: column 0 (-0.575, 0.725), column 1 (-0.9, 0.7).
    std::string wire;
    std::vector<float> r(8, 0.0f);
    detail::quantize_columns(kColumns.data(), r.data(), 4, 2, 1, wire);
    float range[2];
    std::memcpy(range, wire.data(), sizeof(range));
    EXPECT_NEAR(range[0], -0.575f, 1e-7f);
    EXPECT_NEAR(range[1], 0.725f, 1e-7f);
    std::memcpy(range, wire.data() + detail::quantized_column_bytes<float>(4, 1), sizeof(range));
    EXPECT_NEAR(range[0], -0.9f, 1e-7f);
    EXPECT_NEAR(range[1], 0.7f, 1e-7f);
}

TEST(Quantization, TwoBitsUseFourStandardDeviationsAndCntksTopLevel) {
    std::vector<float> residual(8, 0.0f);
    const std::vector<float> out = round_trip(kColumns, residual, 2);
    expect_near_all(out, {0.0f, 0.0f, 0.9521905f, 0.0f, 0.0f, 0.0f, 0.0f, -1.3597386f}, 2e-6f);
    // Error feedback: what was not sent is kept.
    for (size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(residual[i], kColumns[i] - out[i], 1e-7f);
    // CNTK's quirk: the top code (3 of 0..3) reconstructs above the range, at 3.5 * 8 sigma / 3 - 4 sigma
    // = 5.33 sigma (a value can reach 4 sigma only in a column of more than 16 rows).
    std::vector<float> big(20, 0.0f), r(20, 0.0f), back(20);
    big[0] = 100.0f;
    std::string wire;
    detail::quantize_columns(big.data(), r.data(), 20, 1, 2, wire);
    const char* in = wire.data();
    detail::dequantize_columns(in, wire.data() + wire.size(), back.data(), 20, 1, 2, false);
    const float sigma = std::sqrt(100.0f * 100.0f / 20.0f);
    EXPECT_NEAR(back[0], 3.5f * (8 * sigma / 3) - 4 * sigma, 1e-4f);
    EXPECT_GT(back[0], 4 * sigma);
}

TEST(Quantization, ResidualsCarryWhatWasNotSentSoTheSumsConverge) {
    // Sending the same gradient many times: the dequantized values sum to the true sum (error feedback),
    // at every width, and zero columns stay exactly zero.
    const std::vector<float> g{0.7f, -0.05f, 0.2f, 0.01f, 0.0f, 0.0f, 0.0f, 0.0f};
    for (int bits : {1, 2, 4, 8, 16}) {
        std::vector<float> residual(8, 0.0f), total(8, 0.0f);
        const int steps = 200;
        for (int s = 0; s < steps; ++s) {
            const std::vector<float> out = round_trip(g, residual, bits);
            for (size_t i = 0; i < 8; ++i) total[i] += out[i];
        }
        for (size_t i = 0; i < 8; ++i)
            EXPECT_NEAR(total[i] / steps, g[i], 0.01f) << bits << " bits, element " << i;
        for (size_t i = 4; i < 8; ++i) EXPECT_EQ(total[i], 0.0f) << bits << " bits";
    }
    // More bits, less error in one step.
    double previous = 1e9;
    for (int bits : {2, 4, 8, 16}) {
        std::vector<float> residual(8, 0.0f);
        const std::vector<float> out = round_trip(kColumns, residual, bits);
        double err = 0;
        for (size_t i = 0; i < 8; ++i) err += std::fabs(out[i] - kColumns[i]);
        EXPECT_LT(err, previous) << bits << " bits";
        previous = err;
    }
    EXPECT_LT(previous, 1e-3);
}

TEST(Quantization, TruncatedMessagesAreRejected) {
    std::vector<float> residual(8, 0.0f);
    std::string wire;
    detail::quantize_columns(kColumns.data(), residual.data(), 4, 2, 1, wire);
    std::vector<float> out(8);
    const char* in = wire.data();
    EXPECT_THROW(detail::dequantize_columns(in, wire.data() + wire.size() - 1, out.data(), 4, 2, 1, false),
                 IOError);
}

TEST(Quantization, MatrixViewAndStripesAreCntks) {
    EXPECT_EQ(detail::matrix_view(Shape{784, 200}).rows, 200);  // the innermost (last Python) dim
    EXPECT_EQ(detail::matrix_view(Shape{784, 200}).cols, 784);
    EXPECT_EQ(detail::matrix_view(Shape{200}).cols, 1);
    EXPECT_EQ(detail::matrix_view(Shape{2, 4}).rows, 4);  // the reference's vectors keep CNTK's view
    EXPECT_EQ(detail::cntk_matrix_view(Shape{8, 3, 5, 5}).rows, 5);
    EXPECT_EQ(detail::matrix_view(Shape{}).rows, 1);
    // ctk folds short columns: a 3x3 kernel's columns hold 3 values in CNTK's view.
    EXPECT_EQ(detail::matrix_view(Shape{48, 32, 3, 3}).rows, 288);
    EXPECT_EQ(detail::matrix_view(Shape{48, 32, 3, 3}).cols, 48);
    EXPECT_EQ(detail::matrix_view(Shape{32, 1, 5, 5}).rows, 800);  // the whole tensor
    EXPECT_EQ(detail::matrix_view(Shape{96, 10}).rows, 960);
    EXPECT_EQ(detail::matrix_view(Shape{64, 3, 3, 96}).rows, 288);
    EXPECT_EQ(detail::matrix_view(Shape{32, 1, 1}).rows, 32);
    ::setenv("CTK_QUANTIZATION_COLUMNS", "cntk", 1);
    EXPECT_EQ(detail::matrix_view(Shape{48, 32, 3, 3}).rows, 3);
    ::setenv("CTK_QUANTIZATION_COLUMNS", "bogus", 1);
    EXPECT_THROW(detail::matrix_view(Shape{48, 32, 3, 3}), ValueError);
    ::unsetenv("CTK_QUANTIZATION_COLUMNS");
    // 10 columns over 4 workers: 3, 3, 2, 2; one column over 2 workers: worker 1 owns none.
    const int64_t begins[] = {0, 3, 6, 8}, counts[] = {3, 3, 2, 2};
    for (int64_t k = 0; k < 4; ++k) {
        EXPECT_EQ(detail::stripe_of(10, 4, k).begin, begins[k]);
        EXPECT_EQ(detail::stripe_of(10, 4, k).count, counts[k]);
    }
    EXPECT_EQ(detail::stripe_of(1, 2, 1).count, 0);
}

TEST(Communicator, OneProcessIsWorkerZeroOfOne) {
    CommunicatorPtr c = Communicator::world();
    EXPECT_EQ(c->rank(), 0);
    EXPECT_EQ(c->num_workers(), 1);
    EXPECT_TRUE(c->is_main());
    ASSERT_EQ(c->workers().size(), 1u);
    EXPECT_EQ(c->current_worker().global_rank, 0);
    EXPECT_FALSE(c->current_worker().host_id.empty());
    std::vector<double> v{1.5, -2};
    c->all_reduce(v);
    EXPECT_EQ(v, (std::vector<double>{1.5, -2}));
    EXPECT_EQ(c->all_gather("x"), std::vector<std::string>{"x"});
    EXPECT_THROW(c->gather("x", 1), ValueError);
    EXPECT_FALSE(Communicator::launched_distributed());
}

TEST(DistributedLearner, ArgumentsAreCheckedAsCntkChecked) {
    Variable w = parameter({3}, constant_initializer(0.0), DataType::f32, "w");
    LearnerPtr local = sgd({w}, learning_parameter_schedule(0.1));
    EXPECT_THROW(data_parallel_distributed_learner(local, 0, 0), ValueError);
    EXPECT_THROW(data_parallel_distributed_learner(local, 0, 3), ValueError);
    EXPECT_THROW(data_parallel_distributed_learner(local, 0, 6), ValueError);
    EXPECT_THROW(data_parallel_distributed_learner(local, -1), ValueError);
    EXPECT_THROW(data_parallel_distributed_learner(nullptr), ValueError);
    EXPECT_THROW(data_parallel_distributed_learner(local, 0, 32, true), Error);
    for (int64_t bits : {1, 2, 4, 8, 16, 32, 33, 64}) {
        DistributedLearnerPtr d = data_parallel_distributed_learner(local, 0, bits);
        EXPECT_EQ(d->quantized(), bits < 32) << bits;
        EXPECT_EQ(d->parameters().size(), 1u);
        EXPECT_EQ(d->minibatch_size_scale_factor(), 1);
    }
    EXPECT_THROW(data_parallel_distributed_learner(data_parallel_distributed_learner(local)), ValueError);
    // Stepped by a Trainer only.
    EXPECT_THROW(data_parallel_distributed_learner(local)->update(GradientMap{}, 1), ValueError);
}

TEST(DistributedLearner, TrainerRulesAreCntks) {
    Variable x = input_variable({2}, DataType::f32, false, false, default_batch_axes(), "x");
    Variable a = parameter({2}, constant_initializer(0.5), DataType::f32, "a");
    Variable b = parameter({2}, constant_initializer(0.5), DataType::f32, "b");
    FunctionPtr loss = reduce_sum(element_times(element_times(x, a), b)->output(), {Axis::all_static_axes()});
    auto lr = learning_parameter_schedule(0.1);
    EXPECT_THROW(
        Trainer(nullptr, loss, nullptr, {data_parallel_distributed_learner(sgd({a}, lr)), sgd({b}, lr)}),
        ValueError);
    EXPECT_THROW(Trainer(nullptr, loss, nullptr,
                         {data_parallel_distributed_learner(sgd({a}, lr), 10),
                          data_parallel_distributed_learner(sgd({b}, lr), 20)}),
                 ValueError);
    EXPECT_THROW(Trainer(nullptr, loss, nullptr,
                         {data_parallel_distributed_learner(sgd({a}, lr), 0, 1),
                          data_parallel_distributed_learner(sgd({b}, lr))}),
                 ValueError);
    // In one process a data-parallel Trainer trains exactly as the plain one.
    Variable c = parameter({2}, constant_initializer(0.5), DataType::f32, "c");
    Variable b2 = parameter({2}, constant_initializer(0.5), DataType::f32, "b2");
    FunctionPtr loss2 =
        reduce_sum(element_times(element_times(x, c), b2)->output(), {Axis::all_static_axes()});
    Trainer plain(nullptr, loss, nullptr, {sgd({a, b}, lr)});
    Trainer dist(nullptr, loss2, nullptr, {data_parallel_distributed_learner(sgd({c}, lr))});
    Tensor xv = Tensor::from_vector<float>({1, 2, 3, 4}, {2, 2});
    EXPECT_TRUE(plain.train_minibatch({{x, Value(xv)}}));
    EXPECT_TRUE(dist.train_minibatch({{x, Value(xv)}}));
    EXPECT_EQ(dist.previous_minibatch_sample_count(), 2);
    EXPECT_EQ(a.value().to_vector<float>(), c.value().to_vector<float>());
    EXPECT_EQ(dist.parameter_learners()[0]->total_number_of_samples_seen(), 2);
    EXPECT_FALSE(dist.train_minibatch(MinibatchArguments{}));  // the job had no samples
}

TEST(BlockMomentum, TwoCombinationsFollowTheHandComputation) {
    // The reference's trace: two workers, bm = 0.5, block learning rate 1, Nesterov.
    std::vector<double> last{1.0}, smoothed{0.0};
    detail::combine_block(last, {(1.0 - 0.8) + (1.0 - 0.6)}, smoothed, 0.5, 1.0, true);
    EXPECT_NEAR(smoothed[0], 0.3, 1e-15);
    EXPECT_NEAR(last[0], 0.55, 1e-15);
    detail::combine_block(last, {(0.55 - 0.5) + (0.55 - 0.45)}, smoothed, 0.5, 1.0, true);
    EXPECT_NEAR(smoothed[0], 0.225, 1e-15);
    EXPECT_NEAR(last[0], 0.2125, 1e-15);
    // Without Nesterov the step is D alone.
    std::vector<double> plain{1.0}, d{0.0};
    detail::combine_block(plain, {0.6}, d, 0.5, 1.0, false);
    EXPECT_NEAR(plain[0], 0.7, 1e-15);
}

TEST(BlockMomentum, ArgumentsAreCheckedAsCntkChecked) {
    Variable w = parameter({3}, constant_initializer(0.0), DataType::f32, "w");
    LearnerPtr local = momentum_sgd({w}, learning_parameter_schedule(0.1), momentum_schedule(0.9));
    EXPECT_THROW(block_momentum_distributed_learner(local, 0), ValueError);  // "Sync period is too small."
    EXPECT_THROW(block_momentum_distributed_learner(local, 100, -5.0), ValueError);  // bm > 1
    DistributedLearnerPtr d = block_momentum_distributed_learner(local, 100);
    EXPECT_EQ(d->minibatch_size_scale_factor(), 1);  // N, one worker here
    EXPECT_FALSE(d->quantized());
    // CNTK's ResetSmoothedGradients: the local learner's momentum is zeroed.
    Tensor g = Tensor::full(Shape{3}, 1.0);
    local->update({{w, g}}, 1);
    local->update({{w, g}}, 1);
    const std::vector<float> with_momentum = w.value().to_vector<float>();
    local->reset_smoothed_gradients();
    w.set_value(Tensor::zeros(Shape{3}));
    local->update({{w, g}}, 1);
    EXPECT_NEAR(w.value().to_vector<float>()[0], -0.1f * (1 - 0.9f), 1e-6f);  // unit-gain, from zero momentum
    EXPECT_NE(with_momentum[0], w.value().to_vector<float>()[0]);
}

}  // namespace
}  // namespace ctk::distributed
