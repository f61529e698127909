// Trainer (one minibatch at a time: a compiled Program's forward and backward, the learners, CNTK's
// accounting and checkpoints) and Evaluator (its test half). See docs/training.md.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctk/core/dictionary.h"
#include "ctk/graph/function.h"
#include "ctk/graph/mixed_precision.h"
#include "ctk/graph/program.h"
#include "ctk/io/minibatch_source.h"
#include "ctk/learners/learner.h"
#include "ctk/train/progress.h"

namespace ctk {

namespace detail {
class StepGraph;
}
namespace distributed {
class Communicator;
class DistributedLearner;
}  // namespace distributed

// Arguments of one minibatch: a Value per input variable, or reader data per input variable.
using MinibatchArguments = std::unordered_map<Variable, Value, VariableHash>;
using StreamMap = std::unordered_map<Variable, std::string, VariableHash>;  // input -> stream name
// Binds reader data to inputs (bind_input with the stream's samples reshaped to the input's sample
// shape), on `device` when given.
MinibatchArguments bind_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                                  const StreamMap& input_map, std::optional<Device> device = std::nullopt);

// CNTK's Evaluator: the test half of a Trainer, for a metric (or any per-sample Function) alone.
class Evaluator {
public:
    explicit Evaluator(FunctionPtr metric, std::vector<ProgressWriterPtr> progress_writers = {});
    // The average of the metric over the minibatch's samples (inference mode), computed on `device`; an
    // empty minibatch gives NaN (CNTK's 0 / 0).
    double test_minibatch(const MinibatchArguments& arguments, Device device = default_device());
    double test_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                          const StreamMap& input_map, Device device = default_device());
    // CNTK's distributed evaluation (its test_minibatch with distributed = true): each worker tests its
    // part of the minibatch (empty arguments: none) and the metric's sum and sample count are summed
    // over `workers` before anything is reported; every worker must call it as often.
    double test_minibatch(const MinibatchArguments& arguments, Device device,
                          const std::shared_ptr<distributed::Communicator>& workers);
    // The samples (the job's, under distributed evaluation) of the last test_minibatch.
    int64_t previous_minibatch_sample_count() const { return prev_samples_; }
    void summarize_test_progress();
    const FunctionPtr& evaluation_function() const { return metric_; }

private:
    FunctionPtr metric_, aggregate_, combined_;
    std::vector<ProgressWriterPtr> writers_;
    double acc_ = 0;
    int64_t prev_samples_ = 0;
};

class Trainer {
public:
    // loss and metric are per-sample Functions (metric may be null); the Trainer sums them over the
    // minibatch (padding excluded) as CNTK does. Every learner parameter must be a parameter of the loss's
    // graph; model may be null (CNTK's Trainer(None, criterion, ...)).
    // With mixed_precision enabled, training steps run autocast()'s rewrite of the graph (parameters
    // stay f32 and are shared) and, for f16, scale the loss (see mixed_precision.h); reported losses
    // and metrics are the unscaled f32 sums, and test_minibatch evaluates the original graph. Unset:
    // the environment's CTK_MIXED_PRECISION (bf16, f16; unset or "off": off), so that CNTK scripts
    // can train in mixed precision unchanged.
    Trainer(FunctionPtr model, FunctionPtr loss, FunctionPtr metric, std::vector<LearnerPtr> learners,
            std::vector<ProgressWriterPtr> progress_writers = {},
            std::optional<MixedPrecision> mixed_precision = std::nullopt);

    // One step: forward, backward, learner updates, on `device` (CNTK's computeDevice: the parameters
    // move there and the learners update them there). Returns false when the minibatch is empty, or
    // when loss scaling skipped the update because a gradient was not finite.
    bool train_minibatch(const MinibatchArguments& arguments, bool is_sweep_end = false,
                         Device device = default_device());
    // The same, also filling `outputs` (any variables of the graph, e.g. the model's output) with the
    // values this step's forward computed, before the update (CNTK's outputsToFetch).
    bool train_minibatch(const MinibatchArguments& arguments, ValueMap& outputs, bool is_sweep_end = false,
                         Device device = default_device());
    bool train_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                         const StreamMap& input_map, Device device = default_device());
    // The average metric (or loss, without a metric) over the minibatch, in inference mode.
    double test_minibatch(const MinibatchArguments& arguments, Device device = default_device());
    double test_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                          const StreamMap& input_map, Device device = default_device());
    // CNTK's distributed evaluation (training_session's test and cross-validation under distributed
    // learners): each worker tests its part, the sums are the job's (Evaluator::test_minibatch).
    double test_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                          const StreamMap& input_map, Device device,
                          const std::shared_ptr<distributed::Communicator>& workers);
    const Evaluator& evaluator() const { return *evaluator_; }

    void summarize_training_progress();
    void summarize_test_progress();

    double previous_minibatch_loss_average() const;
    double previous_minibatch_evaluation_average() const;
    int64_t previous_minibatch_sample_count() const { return prev_samples_; }
    int64_t total_number_of_samples_seen() const { return total_samples_; }

    const FunctionPtr& model() const { return model_; }
    const FunctionPtr& loss_function() const { return loss_; }
    const FunctionPtr& evaluation_function() const { return metric_; }
    const std::vector<LearnerPtr>& parameter_learners() const { return learners_; }
    const std::vector<ProgressWriterPtr>& progress_writers() const { return writers_; }
    const MixedPrecision& mixed_precision() const { return mixed_; }
    // The loss scale of the next step (1 without loss scaling) and the steps loss scaling skipped.
    double loss_scale() const { return scaler_ ? scaler_->scale() : 1.0; }
    int64_t skipped_steps() const { return scaler_ ? scaler_->skipped_steps() : 0; }

    // CUDA Graphs (ctk's addition; off by default, or CTK_CUDA_GRAPH=1 for trainers of any script): on a
    // GPU, the forward, backward and parameter updates of a step are recorded once as a CUDA Graph and
    // then replayed with one launch while the minibatches keep their shapes, which saves the host queuing
    // hundreds of kernels per step. The second step of a shape is recorded (the first builds cuDNN's
    // choices, the learners' state and the like); a step of another shape (an epoch's last minibatch)
    // runs directly. Learning rates, momenta and bias corrections reach the recorded updates through the
    // learners' step scalars, rewritten before each replay. Results are the same bits as without. Not
    // recorded: graphs with random ops (dropout) or user functions, minibatches of sequences, and graphs
    // whose ops read GPU values on the host or upload host-built tensors (ranking ops, eye_like). The
    // updates stay outside (the rest is still replayed) under f16 loss scaling, and for learners that
    // need the host mid-update (Learner::recording_refusal). cuda_graph_status() says which applies. The
    // recorded graph keeps its own memory (about one step's activations) until the trainer is destroyed
    // or recording is turned off.
    void set_cuda_graph(bool on);
    bool cuda_graph() const { return cuda_graph_; }
    // Why the last step was not replayed from a graph, or why its updates ran outside it (empty when the
    // whole step was replayed), and the replays so far.
    std::string cuda_graph_status() const;
    int64_t cuda_graph_replays() const;

    // The training step's memory plan (memory_plan.h): a step is one run of a compiled Program inside
    // one Scope of its plan (binding, forward, backward, updates, accounting), so a step that repeats the
    // previous one takes nothing from the allocators but what outlives it. Empty before the first step;
    // steps recorded as CUDA Graphs keep the graph's own memory instead.
    MemoryPlanStats step_memory() const;

    // CNTK's layout: the model (parameter and constant values) as a CNTK v2 model file at `path`, and
    // the learner states, counters, random-stream positions and external state in `path.ckp` (a CNTK
    // Dictionary). Written so that a crash at any point leaves one whole checkpoint (see trainer.cpp).
    void save_checkpoint(const std::string& path, const Dictionary& external_state = {}) const;
    // Restores everything save_checkpoint wrote; returns the external state. Throws IOError naming the
    // file, or ValueError naming the parameter whose shape differs.
    Dictionary restore_from_checkpoint(const std::string& path);

    ~Trainer();
    Trainer(Trainer&&) noexcept;
    Trainer& operator=(Trainer&&) noexcept;

private:
    Variable step_variable(const Variable& v) const;  // v's counterpart in step_graph_
    // The compiled step for these outputs (the aggregate loss first) on `device`; made again when they,
    // the device or the graph change.
    Program& step_program(const std::vector<Variable>& outputs, Device device);
    // CNTK's rules for distributed learners (all or none, one distributed_after, one quantized alone).
    void check_distributed_learners();
    // The distributed learners' part of a step: they sum this worker's gradients, count, loss and metric
    // over the job and update; the Trainer reports the job's sums. Returns whether anything was updated.
    bool distributed_step(const ValueMap& gradients, int64_t samples, double loss,
                          std::optional<double> metric, bool sweep_end);
    // f16 loss scaling after backward: the gradients unscaled (exactly: powers of two), or, when one is
    // not finite on any worker, the step skipped and the scale backed off. Returns whether the step goes
    // on.
    bool unscale_gradients(ValueMap& gradients, double scale);
    // The local learners' updates of a step run directly (not recorded with it), through the Learner
    // protocol. Returns whether any learner updated.
    bool update_learners(const ValueMap& gradients, int64_t samples, bool sweep_end);
    // A step's counts and sums into the previous-minibatch values, the running sums and the writers.
    void account(int64_t samples, double loss, std::optional<double> metric);

    FunctionPtr model_, loss_, metric_;
    FunctionPtr aggregate_loss_, aggregate_metric_, combined_;
    // What training steps run: combined_ itself, or its autocast rewrite (map: combined_'s variables
    // to the rewrite's).
    FunctionPtr step_graph_;
    VariableMap step_map_;
    MixedPrecision mixed_;
    std::optional<LossScaler> scaler_;
    std::vector<LearnerPtr> learners_;
    std::vector<ProgressWriterPtr> writers_;
    std::vector<Variable> parameters_;
    int64_t prev_samples_ = 0, total_samples_ = 0;
    double prev_loss_ = 0, prev_metric_ = 0;
    // Running sums since the last summary, as CNTK's Trainer accumulates them for the writers.
    double acc_loss_ = 0, acc_metric_ = 0;
    std::unique_ptr<Evaluator> evaluator_;  // test_minibatch: the metric (or loss) in inference mode
    bool cuda_graph_ = false;
    std::string update_refusal_;  // why the last step's updates were not part of its graph
    std::unique_ptr<detail::StepGraph> recorded_step_;  // made at the first step on a GPU with cuda_graph_
    std::unique_ptr<Program> program_;
    std::vector<std::shared_ptr<distributed::DistributedLearner>> distributed_;  // all learners, or none
    bool distributed_started_ = false;  // the workers' parameters checked and made equal
    int64_t samples_at_sync_ = 0;       // total_samples_ at the last distributed sync
};

}  // namespace ctk
