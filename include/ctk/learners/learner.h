// CNTK's learners (sgd, momentum_sgd, adam, ...) with CNTK 2.7's semantics: gradients arrive summed over
// the minibatch; a learning rate applies per minibatch (no reference size), or per `minibatch_size`
// samples (the reference size it was tuned for, 1 for per-sample rates) and is then scaled to the actual
// minibatch; momentum is unit-gain by default and is raised to actualMB/R with a reference size R.
// Schedules: ctk/learners/schedules.h. See docs/training.md.
#pragma once

#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ctk/core/dictionary.h"
#include "ctk/graph/initializer.h"
#include "ctk/graph/variable.h"
#include "ctk/learners/schedules.h"

namespace ctk {

// The options every learner takes (CNTK's AdditionalLearningOptions).
struct LearnerOptions {
    double l1_regularization_weight = 0.0;
    double l2_regularization_weight = 0.0;
    TrainingParameterSchedule gaussian_noise_injection_std_dev{0.0};
    double gradient_clipping_threshold_per_sample = std::numeric_limits<double>::infinity();
    bool gradient_clipping_with_truncation = true;
    // CNTK's legacy "compatible mode": the gradient is divided by the actual minibatch size first.
    bool use_mean_gradient = false;
    // Seed of the noise stream; kSentinelSeed draws one from set_fixed_random_seed's sequence when the
    // learner is made (CNTK draws a random seed per learner). The stream's offset is checkpointed.
    uint64_t gaussian_noise_injection_seed = kSentinelSeed;
};

using GradientMap = std::unordered_map<Variable, Tensor, VariableHash>;

class Learner {
public:
    virtual ~Learner() = default;
    // One update protocol, in three parts (every learner, and every caller, goes through them; subclasses
    // customise the protected steps below, never the protocol): begin_update() does the host work
    // (schedules, counters) and writes the step's scalars where the parameters live (`sweep_end`: this
    // minibatch ends a sweep over the data, counted by end_update()); apply_update() only
    // queues the update (for ctk's rules, kernels that read the scalars through fixed addresses: what a
    // CUDA Graph recording of a training step keeps); end_update() advances the counters. begin_update()
    // returns false (and changes nothing, counters included) when the count is 0 or, as in CNTK, when the
    // scheduled learning rate is 0; then the other two are not called. apply_update() returns false when
    // the learner says learning has stopped (a Python learner's update returning False).
    bool begin_update(int64_t minibatch_sample_count, bool sweep_end = false);
    bool apply_update(const GradientMap& gradients, int64_t minibatch_sample_count);
    void end_update(int64_t minibatch_sample_count);
    // The three parts in one call, from gradients summed over `minibatch_sample_count` samples, with the
    // gradients checked before anything changes: parameters missing from `gradients` are left alone;
    // ShapeError for a gradient of the wrong shape, NotImplementedError for f16/bf16 and DeviceError for a
    // gradient on another device than its parameter. The update runs where the parameter lives (CPU or
    // GPU: the same rules, the same bits). Returns false where begin_update() or apply_update() would.
    bool update(const GradientMap& gradients, int64_t minibatch_sample_count, bool sweep_end = false);
    // Why apply_update() cannot be recorded, empty when it can: an update written in Python or as a graph,
    // Gaussian noise (drawn on the host each step).
    virtual std::string recording_refusal() const;
    // Appends what apply_update() writes and reads besides the parameters and gradients (state, scratch
    // and step-scalar tensors, by address): a recording of it is valid while these stay the same.
    void add_recording_key(std::vector<int64_t>& words) const;

    const std::vector<Variable>& parameters() const { return parameters_; }
    // The learning rate (as scheduled, before scaling to the minibatch) in force now.
    virtual double learning_rate() const;
    const TrainingParameterSchedule& learning_rate_schedule() const { return lr_; }
    virtual void reset_learning_rate(const TrainingParameterSchedule& lr);
    int64_t total_number_of_samples_seen() const { return samples_seen_; }
    int64_t total_number_of_minibatches_seen() const { return minibatches_seen_; }
    int64_t sweeps_seen() const { return sweeps_seen_; }

    // Called with (key, value) when a scheduled value changes, e.g. ("Learning rate per minibatch", 0.1)
    // or ("Learning rate per 1 samples", 0.01) and ("Momentum per minibatch", 0.9): ProgressPrinter prints
    // "{key}: {value}" as CNTK does.
    using ValueReporter = std::function<void(const std::string& key, double value)>;
    virtual void add_value_reporter(ValueReporter r) { reporters_.push_back(std::move(r)); }

    // Zeroes the per-parameter state (momentum, Adam's moments, ...): CNTK's ResetSmoothedGradients,
    // which block momentum calls after each block. Learners whose state is not ctk's tensors (an update
    // written in Python or as a graph) keep theirs.
    virtual void reset_smoothed_gradients();

    // Everything needed to continue bit-identically: counters, schedules and per-parameter state
    // (smoothed gradients), keyed by parameter uid. restore() checks shapes and names what differs.
    virtual Dictionary checkpoint_state() const;
    virtual void restore_from_checkpoint(const Dictionary& state);

protected:
    Learner(std::vector<Variable> parameters, TrainingParameterSchedule lr, LearnerOptions options,
            const char* name);
    // The protocol's steps. ctk's learners keep the defaults, which apply their update rules; a learner
    // whose update is one computation over all parameters (a graph, a Python method) overrides them.
    // Whether this minibatch updates anything (a count of 0, or CNTK's learning rate of 0, does not); the
    // default reports the schedules. Throws ValueError for a negative count.
    virtual bool takes_step(int64_t minibatch_sample_count);
    // The checks on the gradients before anything changes (update() runs them first).
    virtual void check_gradients(const GradientMap& gradients) const;
    // Host work before the update: on_minibatch(), then the step's scalars written.
    virtual void prepare_step(int64_t mb_size);
    // The update of every parameter in `gradients`: the default runs each one's rule (preprocess,
    // update_parameter, postprocess). Returns false when learning has stopped.
    virtual bool apply_step(const GradientMap& gradients, int64_t mb_size);
    // The per-parameter update. `gradient` is the preprocessed gradient (mean-scaled, L2 added, clipped);
    // `state` holds the learner's per-parameter tensors (allocated by state_tensors()). The step's scalars
    // (the effective, minibatch-scaled learning rate in kLearningRate, the subclass's own from
    // step_scalars()) are read through step_scalar(); a value computed from the parameter's own data (a
    // mean multiplier) is written where the parameter lives, to derived_scalar(), by a rule.
    virtual void update_parameter(const Variable& p, Tensor& value, const Tensor& gradient,
                                  std::vector<Tensor>& state, int64_t mb_size) = 0;
    // The step's scalars: the base's slots, then each subclass's from kFirstSubclassSlot on.
    // kZero: always 0, the L2 weight and L1 threshold of parameters without regularization.
    enum StepSlot {
        kLearningRate,
        kGradientScale,
        kClipLimit,
        kL2Weight,
        kL1Threshold,
        kZero,
        kFirstSubclassSlot
    };
    static constexpr int kMaxStepSlots = 16;
    // Fills the subclass's slots (slots[kFirstSubclassSlot...]) for a step of `mb_size` samples with
    // effective learning rate `lr`, after on_minibatch(). Called once per step, before any kernel.
    virtual void step_scalars(int64_t /*mb_size*/, double /*lr*/, double* /*slots*/) {}
    // Where this step's value of `slot` lives for a parameter like `value` (its device, as its dtype), and
    // the same value in double there.
    template <typename T>
    const T* step_scalar(const Tensor& value, int slot) const {
        return static_cast<const T*>(step_scalar_address(value.device(), value.dtype(), slot));
    }
    const double* step_scalar64(const Tensor& value, int slot) const {
        return static_cast<const double*>(step_scalar_address(value.device(), DataType::f64, slot));
    }
    // This step's host value of a slot (for decisions the kernels do not make).
    double step_value(int slot) const { return step_values_[static_cast<size_t>(slot)]; }
    // Per-parameter scalars computed where `p` lives from its own data at each step (kept with the
    // parameter, so a recorded update writes and reads the same addresses at every replay).
    enum DerivedScalar { kClipScale, kMeanMultipliedRate, kDerivedScalars };
    template <typename T>
    T* derived_scalar(const Variable& p, const Tensor& value, int index) {
        return static_cast<T*>(derived_scalar_address(p, value, index));
    }
    // The refusal shared by the learners whose update is made of ctk's rules (Gaussian noise).
    std::string options_recording_refusal() const;
    // The number of state tensors (same shape and dtype as the parameter) this learner keeps per parameter.
    virtual int state_tensors() const { return 0; }
    // Called once per minibatch before the parameters are updated (CNTK's UpdateOnMinibatch): learners
    // with learner-wide counters (adam, fsadagrad, rmsprop) advance them here.
    virtual void on_minibatch(int64_t /*mb_size*/) {}
    void report(const std::string& key, double value) const;
    // Reports lr (and subclasses' momentum) when it changes; called before each update.
    virtual void report_schedules();
    // Reports "<name> per minibatch" / "<name> per N samples" when the schedule's current value differs
    // from `last` (NaN: never reported), and updates `last`.
    void report_schedule(const TrainingParameterSchedule& s, const char* name, double& last) const;
    // The scheduled value of `s` at the current sample/sweep count.
    double current_value(const TrainingParameterSchedule& s) const {
        return s.at(samples_seen_, sweeps_seen_);
    }
    // CNTK's LearningRate(mbSize): the rate applied to the preprocessed gradient.
    double effective_learning_rate(int64_t mb_size) const;
    // CNTK's MomentumValueForMB: m^(mb/R) with reference size R, else m.
    double momentum_for(const TrainingParameterSchedule& s, int64_t mb_size) const;
    bool compatible_mode() const { return options_.use_mean_gradient; }
    // Whether the step begun last ends a sweep over the data (begin_update's sweep_end).
    bool step_ends_sweep() const { return step_sweep_end_; }

    std::vector<Variable> parameters_;
    TrainingParameterSchedule lr_;
    LearnerOptions options_;
    const char* name_;
    int64_t samples_seen_ = 0, minibatches_seen_ = 0, sweeps_seen_ = 0;
    int64_t noise_draws_ = 0;
    bool step_sweep_end_ = false;
    std::unordered_map<Variable, std::vector<Tensor>, VariableHash> state_;
    std::vector<ValueReporter> reporters_;
    double last_reported_lr_ = std::numeric_limits<double>::quiet_NaN();
    uint64_t noise_seed_ = 0;

private:
    // The gradient the learner sees: `gradient` itself when no preprocessing applies, else a scratch
    // tensor (kept per parameter) holding the mean-scaled, clipped, L2-regularised gradient.
    const Tensor& preprocess(const Variable& p, const Tensor& value, const Tensor& gradient);
    // Noise injection, then the L1 proximal step (CNTK's PostProcess order).
    void postprocess(const Variable& p, Tensor& value);
    std::vector<Tensor>& state_for(const Variable& p, const Tensor& value);
    const Tensor* scalar_block(Device device, DataType dtype) const;
    const void* step_scalar_address(Device device, DataType dtype, int slot) const;
    void* derived_scalar_address(const Variable& p, const Tensor& value, int index);

    // The step's scalars for one device and dtype, as prepare_step wrote them.
    struct ScalarBlock {
        Device device;
        DataType dtype;
        Tensor slots;
    };
    std::vector<ScalarBlock> scalar_blocks_;
    std::vector<double> step_values_ = std::vector<double>(kMaxStepSlots, 0.0);

    std::unordered_map<Variable, Tensor, VariableHash> gradient_scratch_, noise_scratch_, derived_scratch_;
    std::vector<double> partials_;  // per-chunk partial sums (fixed chunking, so thread-count independent)
};
using LearnerPtr = std::shared_ptr<Learner>;

LearnerPtr sgd(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
               const LearnerOptions& options = {});
LearnerPtr momentum_sgd(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                        const TrainingParameterSchedule& momentum, bool unit_gain = default_unit_gain_value(),
                        const LearnerOptions& options = {});
LearnerPtr nesterov(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                    const TrainingParameterSchedule& momentum, bool unit_gain = default_unit_gain_value(),
                    const LearnerOptions& options = {});
LearnerPtr adagrad(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                   bool need_ave_multiplier = true, const LearnerOptions& options = {});
// variance_momentum default: momentum_schedule_per_sample(0.9999986111120757), i.e. exp(-1/720000).
LearnerPtr fsadagrad(
    const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
    const TrainingParameterSchedule& momentum, bool unit_gain = default_unit_gain_value(),
    const TrainingParameterSchedule& variance_momentum = momentum_schedule_per_sample(0.9999986111120757),
    const LearnerOptions& options = {});
LearnerPtr adam(
    const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
    const TrainingParameterSchedule& momentum, bool unit_gain = default_unit_gain_value(),
    const TrainingParameterSchedule& variance_momentum = momentum_schedule_per_sample(0.9999986111120757),
    double epsilon = 1e-8, bool adamax = false, const LearnerOptions& options = {});
LearnerPtr rmsprop(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr, double gamma,
                   double inc, double dec, double max, double min, bool need_ave_multiplier = true,
                   const LearnerOptions& options = {});
LearnerPtr adadelta(const std::vector<Variable>& parameters,
                    const TrainingParameterSchedule& lr = learning_parameter_schedule_per_sample(1.0),
                    double rho = 0.95, double epsilon = 1e-8, const LearnerOptions& options = {});

// CNTK's universal learner: the update is written with graph ops. update_func(parameters, gradients)
// returns a Function (typically a combine of assign(p, new_value) ops, with any state kept in constants
// or parameters it creates); `gradients` are input Variables without dynamic axes, one per parameter with
// its shape and dtype. Each update binds them to the minibatch's gradients (summed over the minibatch, as
// the other learners get them) and evaluates the Function once, so its assigns take effect. As in CNTK
// there is no learning rate or LearnerOptions: the update function holds its own constants; the learner
// reports "Learning rate per minibatch: 1" (CNTK's fixed schedule) and counts samples, minibatches and
// sweeps. update() throws ValueError when a parameter's gradient is missing (the Function updates all
// parameters at once). The constructor throws ValueError when a parameter has inferred dims, when a
// parameter is not part of the Function, or when the Function has arguments other than `gradients`.
// checkpoint_state() also keeps the values of the Function's constants and of its parameters that are
// not the learner's (accumulators), in the Function's graph order.
using UniversalUpdateFunction = std::function<FunctionPtr(const std::vector<Variable>& parameters,
                                                          const std::vector<Variable>& gradients)>;
LearnerPtr universal(const UniversalUpdateFunction& update_func, const std::vector<Variable>& parameters);
// The same with the update already built over `gradients` (CNTK's C++ UniversalLearner and
// cntk_py.universal_learner): one per parameter, of its shape; an input is bound to the gradient, a
// constant or parameter (CNTK's tests use constants) takes the gradient as its value before each update.
LearnerPtr universal(const std::vector<Variable>& parameters, const std::vector<Variable>& gradients,
                     const FunctionPtr& update);

}  // namespace ctk
