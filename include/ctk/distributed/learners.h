// CNTK's distributed learners around a local learner (sgd, momentum_sgd, adam, ...):
// data_parallel_distributed_learner sums every worker's gradients (32-bit, or quantized to 1-16 bits
// with error feedback: "1-bit SGD"), so that a Trainer with it trains as one process would on the global
// minibatch; block_momentum_distributed_learner (BMUF) combines models every block of samples instead.
// See docs/distributed.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "ctk/distributed/communicator.h"
#include "ctk/graph/program.h"
#include "ctk/learners/learner.h"

namespace ctk::distributed {

// What a training step hands its distributed learner (CNTK's MinibatchInfo): this worker's sums on the
// way in, the job's on the way out (the Trainer reports those).
struct MinibatchInfo {
    bool at_end_of_data = false;   // this worker's reader had nothing left (an empty minibatch)
    bool at_end_of_sweep = false;  // this worker's minibatch ended a sweep
    int64_t number_of_samples = 0;
    double training_loss = 0;   // summed over the samples
    double eval_criterion = 0;  // summed over the samples
    bool synchronized = false;  // out: the workers' gradients or models were combined in this step
};

// A Learner that trains with the other workers. Every worker's Trainer must call update() the same
// number of times (it holds collectives): a worker whose reader ran dry keeps stepping with empty
// minibatches, as CNTK's training_session does, and training ends when the job's count is 0.
class DistributedLearner : public Learner {
public:
    const CommunicatorPtr& communicator() const { return communicator_; }
    const LearnerPtr& local_learner() const { return local_; }
    // Samples (of the job) after which workers start to share updates; before, each trains alone on
    // the same, unpartitioned minibatches (CNTK's distributed_after warm start).
    int64_t distributed_after() const { return distributed_after_; }
    // How much bigger than the user's minibatch size a worker reads (block momentum: N).
    virtual int64_t minibatch_size_scale_factor() const { return 1; }
    // Whether aggregation is quantized (CNTK refused it among several learners).
    virtual bool quantized() const { return false; }
    // The gradient (or model) bytes this worker sent to the others in the last step: exact for the
    // quantized exchange; for a sum of N workers' full values, 2 (N - 1) / N of their bytes, what a ring
    // all-reduce sends and the least any all-reduce can (MPI's own choice may send more).
    int64_t bytes_sent_last_step() const { return bytes_sent_; }

    // Called by the Trainer before its first step, on every worker: checks that every worker holds the
    // same parameters (names, shapes, dtypes: a mismatch is a ValueError naming the worker and the
    // parameter, on every worker) and gives them rank 0's values.
    void synchronize_start();
    // One step: `gradients` are this worker's (missing ones, all of them for an empty minibatch, count as
    // zeros), `info` its sums; both become the job's, and the local learner updates. Returns false when
    // nothing was updated (the job's count was 0: training has ended).
    virtual bool update(GradientMap& gradients, MinibatchInfo& info) = 0;
    using Learner::update;  // Learner's protocol throws (takes_step below)
    // ctk's addition: a step's gradients may be exchanged while its backward still runs. Before each
    // backward the Trainer passes the order in which the gradients will become final
    // (Program::gradient_order) and gives the run what this returns; an empty function (the default):
    // everything is exchanged in update().
    virtual Program::GradientReady gradients_as_ready(const std::vector<Variable>& /*order*/) { return {}; }

    double learning_rate() const override { return local_->learning_rate(); }
    void reset_learning_rate(const TrainingParameterSchedule& lr) override {
        local_->reset_learning_rate(lr);
    }
    void add_value_reporter(ValueReporter r) override { local_->add_value_reporter(std::move(r)); }
    std::string recording_refusal() const override;
    Dictionary checkpoint_state() const override;
    void restore_from_checkpoint(const Dictionary& state) override;

protected:
    DistributedLearner(LearnerPtr local, CommunicatorPtr communicator, int64_t distributed_after,
                       const char* name);
    // A distributed learner is stepped by its Trainer only, through update(gradients, info) (the step
    // needs the job's loss and count): Learner's protocol (update(), begin_update()) throws ValueError.
    bool takes_step(int64_t minibatch_sample_count) override;
    void update_parameter(const Variable&, Tensor&, const Tensor&, std::vector<Tensor>&, int64_t) override;
    // The local learner's gradients in parameter-uid order (CNTK's order, the same on every worker), zeros
    // for the missing ones, on the parameters' devices.
    std::vector<Tensor> ordered_gradients(GradientMap& gradients) const;
    // After warm start: every worker takes rank 0's parameters and local-learner state.
    void synchronize_from_main();
    // True at the first step past distributed_after (the workers were alone until now, and are made
    // equal by synchronize_from_main when there was a warm start).
    bool start_sharing();
    // Replaces this worker's count, loss and metric in `info` by the job's sums.
    void sum_step_totals(MinibatchInfo& info);

    LearnerPtr local_;
    CommunicatorPtr communicator_;
    int64_t distributed_after_;
    // 2 (N - 1) / N of `bytes`: a ring all-reduce's traffic per worker.
    int64_t all_reduce_bytes(int64_t bytes) const;

    std::vector<Variable> by_uid_;  // parameters in uid order
    int64_t bytes_sent_ = 0;
    bool sharing_ = false;  // past distributed_after
};
using DistributedLearnerPtr = std::shared_ptr<DistributedLearner>;

// CNTK's data_parallel_distributed_learner: each step sums the workers' gradients, losses, metrics and
// sample counts, and the local learner updates with the sums, so that N workers train as one process on
// the N minibatches together. num_quantization_bits < 32 (1, 2, 4, 8 or 16) quantizes the gradients
// with error feedback and CNTK's stripe-wise exchange (docs/distributed.md); 32 or more is exact.
// use_async_buffered_parameter_update is refused, as CNTK refused it. Throws ValueError for 0 or a
// number of bits that is not a power of two.
DistributedLearnerPtr data_parallel_distributed_learner(LearnerPtr learner, int64_t distributed_after = 0,
                                                        int64_t num_quantization_bits = 32,
                                                        bool use_async_buffered_parameter_update = false,
                                                        CommunicatorPtr communicator = nullptr);

// CNTK's block_momentum_distributed_learner (BMUF, Chen and Huo, ICASSP 2016): each worker trains alone
// with its local learner on its part of the data (training_session reads N times the minibatch size,
// partitioned, so each worker gets about the user's size); every block_size samples of the job, the
// workers' models are combined: G = sum over workers of (W_last - W_w), D = bm D + (1 - bm) lr_b G,
// W = W_last - D (Nesterov: W = W_last - (1 + bm) D), with bm = exp(-samples in the block /
// time constant) and the time constant -block_size / ln(1 - 1/N) unless given (bm = 1 - 1/N: model
// averaging with block momentum). The local learner's momenta are zeroed after each combination when
// reset_sgd_momentum_after_aggregation. Every step also sums the workers' counts, losses and metrics (a
// few bytes), so that all workers decide blocks, checkpoints and the end together. Throws ValueError
// when block_size / N is 0 ("Sync period is too small.") or bm is outside [0, 1).
DistributedLearnerPtr block_momentum_distributed_learner(
    LearnerPtr learner, int64_t block_size, std::optional<double> block_momentum_as_time_constant = {},
    bool use_nestrov_momentum = true, bool reset_sgd_momentum_after_aggregation = true,
    double block_learning_rate = 1.0, int64_t distributed_after = 0, CommunicatorPtr communicator = nullptr);

namespace detail {
// One block's combination for one parameter, in place (the formulas above): `sum_of_differences` is G,
// `smoothed` D, `last` W_last (the new W on return, which is also the next block's W_last).
void combine_block(std::vector<double>& last, const std::vector<double>& sum_of_differences,
                   std::vector<double>& smoothed, double block_momentum, double block_learning_rate,
                   bool nesterov);
}  // namespace detail

}  // namespace ctk::distributed
