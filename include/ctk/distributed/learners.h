// CNTK's distributed learners: a local learner (sgd, momentum_sgd, adam, ...) whose updates see the whole
// job's minibatch. data_parallel_distributed_learner sums every worker's gradients (32-bit, or quantized
// to 1-16 bits with error feedback: "1-bit SGD"); a Trainer with one of them trains as one process would
// on the global minibatch. See docs/distributed.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ctk/distributed/communicator.h"
#include "ctk/learners.h"

namespace ctk::distributed {

// What a training step hands its distributed learner (CNTK's MinibatchInfo): this worker's sums on the
// way in, the job's on the way out (the Trainer reports those).
struct MinibatchInfo {
    bool at_end_of_data = false;   // this worker's reader had nothing left (an empty minibatch)
    bool at_end_of_sweep = false;  // this worker's minibatch ended a sweep
    int64_t number_of_samples = 0;
    double training_loss = 0;   // summed over the samples
    double eval_criterion = 0;  // summed over the samples
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

    // Called by the Trainer before its first step, on every worker: checks that every worker holds the
    // same parameters (names, shapes, dtypes: a mismatch is a ValueError naming the worker and the
    // parameter, on every worker) and gives them rank 0's values.
    void synchronize_start();
    // One step: `gradients` are this worker's (missing ones, all of them for an empty minibatch, count as
    // zeros), `info` its sums; both become the job's, and the local learner updates. Returns false when
    // nothing was updated (the job's count was 0: training has ended).
    virtual bool update(GradientMap& gradients, MinibatchInfo& info) = 0;
    // A distributed learner is stepped by its Trainer only (the step needs the loss and the count).
    bool update(const GradientMap& gradients, int64_t minibatch_sample_count,
                bool sweep_end = false) override;

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
    void update_parameter(const Variable&, Tensor&, const Tensor&, std::vector<Tensor>&, int64_t) override;
    // The local learner's gradients in parameter-uid order (CNTK's order, the same on every worker), zeros
    // for the missing ones, on the parameters' devices.
    std::vector<Tensor> ordered_gradients(GradientMap& gradients) const;
    // After warm start: every worker takes rank 0's parameters and local-learner state.
    void synchronize_from_main();

    LearnerPtr local_;
    CommunicatorPtr communicator_;
    int64_t distributed_after_;
    std::vector<Variable> by_uid_;  // parameters in uid order
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

}  // namespace ctk::distributed
