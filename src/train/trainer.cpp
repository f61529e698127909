// Trainer and Evaluator-style testing: the loss and metric summed over the minibatch (padding excluded),
// one forward/backward per step, learner updates, progress accounting and checkpoints.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <unordered_set>

#include "ctk/core/cuda.h"
#include "ctk/core/op_profile.h"
#include "ctk/distributed/communicator.h"
#include "ctk/distributed/learners.h"
#include "ctk/formats/model.h"
#include "ctk/graph/bind.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/graph/user_function.h"
#include "ctk/kernels/tensor_ops.h"
#include "ctk/train/trainer.h"
#include "train/step_graph.h"
#include "train/step_profile.h"

namespace ctk {

namespace {
// The number of samples a per-sample Value holds: its real frames, or its batch size.
int64_t sample_count(const Value& v, const Variable& of) {
    if (v.has_layout()) return v.layout()->num_frames();
    if (of.has_batch_axis()) return v.data().rank() > 0 ? v.data().dim(0) : 1;
    return 1;
}
double scalar_of(const Value& v) {
    return v.data().to(DataType::f64).to(Device::cpu()).contiguous().item();
}
// A scalar on its way to the host. On a GPU its copy is queued right behind the work that makes it, and
// get() waits for that work only: the trainer reads the loss after queuing the backward and the update,
// so train_minibatch returns while the GPU still runs them and the next minibatch is read meanwhile.
class HostScalar {
public:
    explicit HostScalar(const Value& v) {
        if (!v.defined()) return;
        const Tensor& t = v.data();
        if (!t.device().is_cuda()) {
            value_ = v;
            return;
        }
        done_ = std::make_unique<cuda::Event>(t.device());
        value_ = Value(cuda::to_host_async(t, *done_));
    }
    double get() const {
        if (done_) done_->synchronize();
        return scalar_of(value_);
    }

private:
    Value value_;
    std::unique_ptr<cuda::Event> done_;
};
// True when a reader's minibatch holds no sequences (a worker's part can be empty).
bool holds_no_sequences(const std::unordered_map<std::string, MinibatchData>& minibatch) {
    for (const auto& [name, data] : minibatch) {
        const Value& v = data.data;
        if (!v.defined() || v.shape().rank() == 0 || v.shape().dims()[0] != 0) return false;
    }
    return true;
}
std::string known_streams(const std::unordered_map<std::string, MinibatchData>& mb) {
    std::vector<std::string> names;
    for (const auto& [name, data] : mb) names.push_back("'" + name + "'");
    std::sort(names.begin(), names.end());
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}
}  // namespace

MinibatchArguments bind_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                                  const StreamMap& input_map, std::optional<Device> device) {
    MinibatchArguments args;
    if (minibatch.empty()) return args;
    for (const auto& [input, stream] : input_map) {
        auto it = minibatch.find(stream);
        CTK_CHECK(it != minibatch.end(), ValueError, "the minibatch has no stream '", stream, "' for input ",
                  input.to_string(), "; its streams are ", known_streams(minibatch));
        args.emplace(input,
                     bind_input(input, it->second.data,
                                BindOptions{.device = device, .reshape_samples = true, .stream = stream}));
    }
    return args;
}

Trainer::Trainer(FunctionPtr model, FunctionPtr loss, FunctionPtr metric, std::vector<LearnerPtr> learners,
                 std::vector<ProgressWriterPtr> progress_writers,
                 std::optional<MixedPrecision> mixed_precision)
    : model_(std::move(model)),
      loss_(std::move(loss)),
      metric_(std::move(metric)),
      mixed_(mixed_precision ? *mixed_precision : MixedPrecision::from_environment()),
      learners_(std::move(learners)),
      writers_(std::move(progress_writers)) {
    // The model may be absent (CNTK's Trainer(None, criterion, ...)): the loss graph holds the parameters.
    CTK_CHECK(loss_, ValueError, "Trainer: the loss function is required");
    CTK_CHECK(!learners_.empty(), ValueError, "Trainer: at least one learner is required");
    aggregate_loss_ = reduce_sum(loss_->output(), {Axis::all_axes()}, true, "aggregateLoss");
    std::vector<Variable> outs{aggregate_loss_->output(), loss_->output()};
    if (metric_) {
        aggregate_metric_ = reduce_sum(metric_->output(), {Axis::all_axes()}, true, "aggregateMetric");
        outs.push_back(aggregate_metric_->output());
        outs.push_back(metric_->output());
    }
    combined_ = combine(outs, "TrainerCombined");
    const auto graph_params = combined_->parameters();
    std::unordered_set<const void*> in_graph;
    for (const Variable& p : graph_params) in_graph.insert(p.impl());
    std::unordered_set<const void*> seen;
    for (const LearnerPtr& l : learners_) {
        CTK_CHECK(l != nullptr, ValueError, "Trainer: null learner");
        for (const Variable& p : l->parameters()) {
            CTK_CHECK(in_graph.count(p.impl()), ValueError, "Trainer: learner parameter ", p.to_string(),
                      " is not a parameter of the loss function's graph");
            CTK_CHECK(seen.insert(p.impl()).second, ValueError, "Trainer: parameter ", p.to_string(),
                      " is updated by more than one learner");
            parameters_.push_back(p);
        }
        for (const ProgressWriterPtr& w : writers_) {
            ProgressWriter* raw = w.get();
            l->add_value_reporter([raw](const std::string& key, double value) { raw->write(key, value); });
        }
    }
    check_distributed_learners();
    CTK_CHECK(mixed_.enabled() || mixed_.compute == DataType::f32, ValueError,
              "Trainer: mixed precision computes in bf16 or f16 (f32: off), not ",
              dtype_name(mixed_.compute));
    step_graph_ = combined_;
    if (mixed_.enabled()) {
        AutocastGraph a = autocast(combined_, mixed_.compute);
        step_graph_ = a.function;
        step_map_ = std::move(a.map);
        if (mixed_.scale_loss) scaler_.emplace(mixed_.scaling);
    }
    evaluator_ = std::make_unique<Evaluator>(metric_ ? metric_ : loss_, writers_);
    if (const char* v = std::getenv("CTK_CUDA_GRAPH")) {
        const std::string s(v);
        CTK_CHECK(s.empty() || s == "0" || s == "1" || s == "on" || s == "off" || s == "true" || s == "false",
                  ValueError, "CTK_CUDA_GRAPH must be 1/on/true or 0/off/false, not '", s, "'");
        cuda_graph_ = s == "1" || s == "on" || s == "true";
    }
    announce_default_device();
}

Trainer::~Trainer() = default;
Trainer::Trainer(Trainer&&) noexcept = default;
Trainer& Trainer::operator=(Trainer&&) noexcept = default;

void Trainer::set_cuda_graph(bool on) {
    cuda_graph_ = on;
    if (!on) recorded_step_.reset();  // gives the recording's memory back
}
std::string Trainer::cuda_graph_status() const {
    if (!recorded_step_) return cuda_graph_ ? "no step has run on a GPU yet" : "CUDA Graphs are off";
    if (!recorded_step_->status().empty() || update_refusal_.empty()) return recorded_step_->status();
    return "replayed without the parameter updates, which run outside the graph: " + update_refusal_;
}
int64_t Trainer::cuda_graph_replays() const {
    return recorded_step_ ? recorded_step_->replays() : 0;
}

MemoryPlanStats Trainer::step_memory() const {
    return program_ ? program_->memory_stats() : MemoryPlanStats{};
}

Program& Trainer::step_program(const std::vector<Variable>& outputs, Device device) {
    if (!program_ || program_->device() != device || !program_->current() || program_->outputs() != outputs)
        program_ = std::make_unique<Program>(outputs, parameters_, ProgramOptions{device});
    return *program_;
}

Variable Trainer::step_variable(const Variable& v) const {
    if (step_graph_ == combined_) return v;
    auto it = step_map_.find(v);
    CTK_CHECK(it != step_map_.end(), ValueError, "Trainer: ", v.to_string(),
              " is not part of the model, loss or metric graph");
    return it->second;
}

namespace {
// The gradients of a learner's parameters, out of a step's gradients of every trained parameter.
GradientMap gradients_of(const Learner& learner, const ValueMap& gradients) {
    GradientMap g;
    for (const Variable& p : learner.parameters()) {
        auto it = gradients.find(p);
        if (it != gradients.end()) g.emplace(p, it->second.data());
    }
    return g;
}
// True when every gradient is finite: one sum over all of them (inf and NaN propagate), one wait.
bool all_finite(const ValueMap& grads) {
    Tensor total;
    for (const auto& [p, g] : grads) {
        Tensor s = reduce_sum(g.data());  // gradients of f32 (or f64) parameters
        total = total.defined() ? binary(OpKind::plus, total, s) : s;
    }
    return !total.defined() || std::isfinite(total.to(DataType::f64).to(Device::cpu()).item());
}
}  // namespace

bool Trainer::train_minibatch(const MinibatchArguments& arguments, bool is_sweep_end, Device device) {
    ValueMap none;
    return train_minibatch(arguments, none, is_sweep_end, device);
}

void Trainer::check_distributed_learners() {
    for (const LearnerPtr& l : learners_)
        if (auto d = std::dynamic_pointer_cast<distributed::DistributedLearner>(l)) distributed_.push_back(d);
    if (distributed_.empty()) return;
    // CNTK's rules for the learners of one distributed Trainer, with its messages.
    CTK_CHECK(distributed_.size() == learners_.size(), ValueError,
              "Cannot use a non-distributed learner for some parameters together with a distributed learner "
              "for other parameters, in a single Trainer.");
    for (const auto& d : distributed_) {
        CTK_CHECK(d->distributed_after() == distributed_[0]->distributed_after(), ValueError,
                  "All distributed learners need to have the same DistributeAfterSamples limit.");
        CTK_CHECK(!d->quantized() || distributed_.size() == 1, ValueError,
                  "Learners with QuantizedDistributedCommunicator is not supported in a multiple learner "
                  "distributed training scenarios.");
    }
}

bool Trainer::distributed_step(const ValueMap& gradients, int64_t samples, double loss,
                               std::optional<double> metric, bool sweep_end) {
    distributed::MinibatchInfo job;
    bool updated = false;
    for (size_t i = 0; i < distributed_.size(); ++i) {
        // Each learner aggregates its own copy of this worker's sums (CNTK's non-aggregator copies); the
        // first one's result is the step's.
        distributed::MinibatchInfo info{samples == 0, sweep_end, samples, loss, metric.value_or(0.0)};
        GradientMap g = gradients_of(*distributed_[i], gradients);
        updated = distributed_[i]->update(g, info) || updated;
        if (i == 0) job = info;
    }
    if (job.number_of_samples > 0)
        account(job.number_of_samples, job.training_loss,
                metric_ ? std::optional<double>(job.eval_criterion) : std::nullopt);
    else
        prev_samples_ = 0;   // CNTK's: the job's count, 0 once every worker's data has ended
    if (job.synchronized) {  // CNTK's UpdateDistributedSync: the job's samples since the previous one
        for (const ProgressWriterPtr& w : writers_)
            w->update_distributed_sync(total_samples_ - samples_at_sync_);
        samples_at_sync_ = total_samples_;
    }
    return job.number_of_samples > 0 && updated;
}

bool Trainer::unscale_gradients(ValueMap& gradients, double scale) {
    if (!scaler_) return true;
    bool finite = all_finite(gradients);
    if (!distributed_.empty()) {  // every worker skips, or none
        std::vector<double> flag{finite ? 1.0 : 0.0};
        distributed_[0]->communicator()->all_reduce(flag, distributed::ReduceOp::min);
        finite = flag[0] > 0;
    }
    scaler_->update(finite);
    if (finite)
        for (auto& [p, g] : gradients)
            g = Value(binary(OpKind::element_times, g.data(),
                             Tensor::full(Shape{}, 1.0 / scale, g.data().dtype(), g.data().device())));
    return finite;
}

bool Trainer::update_learners(const ValueMap& gradients, int64_t samples, bool sweep_end) {
    bool updated = false;
    for (const LearnerPtr& l : learners_)
        updated = l->update(gradients_of(*l, gradients), samples, sweep_end) || updated;
    return updated;
}

void Trainer::account(int64_t samples, double loss, std::optional<double> metric) {
    prev_samples_ = samples;
    total_samples_ += samples;
    prev_loss_ = loss;
    acc_loss_ += prev_loss_;
    if (metric) {
        prev_metric_ = *metric;
        acc_metric_ += prev_metric_;
        metric = acc_metric_;
    }
    for (const ProgressWriterPtr& w : writers_) w->update_training(samples, acc_loss_, metric);
}

bool Trainer::train_minibatch(const MinibatchArguments& arguments, ValueMap& outputs, bool is_sweep_end,
                              Device device) {
    if (!distributed_.empty() && !distributed_started_) {
        for (const auto& d : distributed_) d->synchronize_start();
        distributed_started_ = true;
    }
    // A distributed worker whose reader ran dry still takes part in the job's step.
    if (arguments.empty()) return distributed_.empty() ? false : distributed_step({}, 0, 0, 0, is_sweep_end);
    detail::OpProfileScope profiled_step(detail::kStepProfileLabel, detail::kStepProfilePhase, device);
    const Variable agg_var = step_variable(aggregate_loss_->output());
    const Variable loss_var = step_variable(loss_->output());
    const Variable metric_var = metric_ ? step_variable(aggregate_metric_->output()) : Variable();
    std::vector<Variable> out_vars{agg_var, loss_var};
    if (metric_) out_vars.push_back(metric_var);
    for (const auto& [v, value] : outputs) out_vars.push_back(step_variable(v));
    ValueMap outs;
    for (const Variable& v : out_vars) outs.emplace(v, Value());
    const double scale = loss_scale();
    const bool graphs = cuda_graph_ && device.is_cuda();
    Program& program = step_program(out_vars, device);
    // Everything the step makes and drops comes from the step's arena (a recorded CUDA Graph keeps its
    // own memory instead).
    std::optional<MemoryPlan::Scope> memory;
    if (!graphs && program.plans_memory()) memory.emplace(program.memory_plan());

    // The loss and metric start their way to the host as soon as they exist: right behind the forward
    // when it runs directly, behind the whole graph when it is replayed.
    std::optional<HostScalar> loss_on_host, metric_on_host;
    auto read_back = [&](const ValueMap& o) {
        loss_on_host.emplace(o.at(agg_var));
        metric_on_host.emplace(metric_ ? o.at(metric_var) : Value());
    };
    // With CUDA Graphs the parameter updates are part of the recorded step unless a learner's update
    // needs the host mid-step, or f16 loss scaling must first see whether the gradients are finite.
    update_refusal_.clear();
    if (graphs && scaler_)
        update_refusal_ = "f16 loss scaling reads the gradients' finiteness on the host before the update";
    for (const LearnerPtr& l : learners_)
        if (graphs && update_refusal_.empty()) update_refusal_ = l->recording_refusal();
    const bool updates_in_step = graphs && update_refusal_.empty();
    // begin_update() once per step: before a replay or recording, or inside a direct step.
    std::vector<char> updating(learners_.size(), 0);
    bool prepared = false;
    auto prepare_updates = [&](int64_t samples) {
        if (prepared) return;  // a failed recording prepared this step already
        prepared = true;
        for (size_t i = 0; i < learners_.size(); ++i)
            updating[i] = learners_[i]->begin_update(samples, is_sweep_end);
    };
    auto apply_updates = [&](const ValueMap& grads, int64_t samples) {
        detail::OpProfileScope profiled("learners", "update", device);
        for (size_t i = 0; i < learners_.size(); ++i) {
            if (!updating[i]) continue;
            learners_[i]->apply_update(gradients_of(*learners_[i], grads), samples);
        }
    };
    // The forward and backward (and the updates when updates_in_step): what a CUDA Graph records
    // (`recorded`: nothing may go to the host).
    auto forward_backward = [&](const ValueMap& args, bool recorded) {
        detail::StepValues r;
        Program::RunOptions run;
        run.root_gradient = scale;
        run.open_memory_scope = false;  // the step's Scope is open
        // A distributed learner may start summing gradients while backward runs (not under loss
        // scaling, whose check of the local gradients comes first, nor inside a recorded graph).
        if (distributed_.size() == 1 && !scaler_ && !recorded)
            run.on_gradient_ready = distributed_[0]->gradients_as_ready(program.gradient_order());
        run.after_forward = [&](const ValueMap& o) {
            r.samples = sample_count(o.at(loss_var), loss_->output());
            if (r.samples > 0 && !recorded) read_back(o);
            return r.samples > 0;
        };
        Program::Result result = program.run(args, run);  // the forward's intermediates are gone
        r.outputs = std::move(result.outputs);
        r.gradients = std::move(result.gradients);
        if (r.samples == 0) return r;
        if (updates_in_step) {
            if (!recorded) prepare_updates(r.samples);
            apply_updates(r.gradients, r.samples);
        }
        return r;
    };
    const ValueMap& args = arguments;  // (MinibatchArguments is a ValueMap)
    detail::StepValues step;
    if (graphs) {
        if (!recorded_step_ || !recorded_step_->made_for(program)) {
            const int64_t replays = recorded_step_ ? recorded_step_->replays() : 0;
            recorded_step_.reset();  // its recording's memory goes back first
            recorded_step_ = std::make_unique<detail::StepGraph>(program, replays);
        }
        // The updates' part of a step's key: which learners update (a learning rate of 0 skips one) and
        // the state their kernels read and write.
        auto learner_key = [&](std::vector<int64_t>& words) {
            words.push_back(updates_in_step ? 1 : 0);
            if (!updates_in_step) return;
            for (const LearnerPtr& l : learners_) {
                words.push_back(l->learning_rate() != 0.0 ? 1 : 0);
                l->add_recording_key(words);
            }
        };
        step = recorded_step_->run(
            args, outs, device, scale, learner_key, forward_backward,
            updates_in_step ? detail::StepGraph::Prepare(prepare_updates) : detail::StepGraph::Prepare());
    } else {
        step = forward_backward(args, false);
    }
    for (auto& [v, value] : outputs) {
        value = step.outputs.at(step_variable(v));
        if (value.data().dtype() != v.dtype())
            value = Value(value.data().to(v.dtype()), value.layout());
        else if (step.replayed)  // the next replay overwrites the graph's memory
            value = Value(value.data().clone(), value.layout());
    }
    const int64_t samples = step.samples;
    if (samples == 0) return distributed_.empty() ? false : distributed_step({}, 0, 0, 0, is_sweep_end);
    if (!loss_on_host) read_back(step.outputs);
    ValueMap& grads = step.gradients;

    const bool finite = unscale_gradients(grads, scale);
    bool updated = false;
    if (updates_in_step) {
        for (size_t i = 0; i < learners_.size(); ++i)
            if (updating[i]) {
                learners_[i]->end_update(samples);
                updated = true;
            }
    }
    std::optional<detail::OpProfileScope> profiled_update;
    if (finite && !updates_in_step) profiled_update.emplace("learners", "update", device);
    if (!distributed_.empty()) {     // the learners need the step's loss and metric on the host
        if (!finite) grads.clear();  // this step contributes nothing
        const double loss = finite ? loss_on_host->get() : 0.0;
        const std::optional<double> metric =
            metric_ ? std::optional<double>(finite ? metric_on_host->get() : 0.0) : std::nullopt;
        return distributed_step(grads, finite ? samples : 0, loss, metric, is_sweep_end);
    }
    if (finite && !updates_in_step) updated = update_learners(grads, samples, is_sweep_end) || updated;
    profiled_update.reset();

    detail::OpProfileScope profiled_read("loss and metric", "read back", device);
    const double loss = loss_on_host->get();
    account(samples, loss, metric_ ? std::optional<double>(metric_on_host->get()) : std::nullopt);
    return updated;
}

bool Trainer::train_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                              const StreamMap& input_map, Device device) {
    bool sweep_end = false;
    for (const auto& [name, data] : minibatch) sweep_end = sweep_end || data.sweep_end;
    // A worker's part of a minibatch can be empty (fewer sequences than workers): no samples, no step.
    if (!minibatch.empty() && holds_no_sequences(minibatch))
        return train_minibatch(MinibatchArguments{}, sweep_end, device);
    return train_minibatch(bind_minibatch(minibatch, input_map, device), sweep_end, device);
}

double Trainer::test_minibatch(const MinibatchArguments& arguments, Device device) {
    return evaluator_->test_minibatch(arguments, device);
}

double Trainer::test_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                               const StreamMap& input_map, Device device) {
    return test_minibatch(bind_minibatch(minibatch, input_map, device), device);
}

double Trainer::test_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                               const StreamMap& input_map, Device device,
                               const std::shared_ptr<distributed::Communicator>& workers) {
    // This worker's part may hold no sequences; it still takes part in the sums.
    const bool none = minibatch.empty() || holds_no_sequences(minibatch);
    return evaluator_->test_minibatch(
        none ? MinibatchArguments{} : bind_minibatch(minibatch, input_map, device), device, workers);
}

void Trainer::summarize_training_progress() {
    for (const ProgressWriterPtr& w : writers_)
        w->write_training_summary(acc_loss_, metric_ ? std::optional<double>(acc_metric_) : std::nullopt);
    acc_loss_ = acc_metric_ = 0;
}

void Trainer::summarize_test_progress() {
    evaluator_->summarize_test_progress();
}

double Trainer::previous_minibatch_loss_average() const {
    return prev_samples_ ? prev_loss_ / static_cast<double>(prev_samples_) : 0.0;
}
double Trainer::previous_minibatch_evaluation_average() const {
    CTK_CHECK(metric_, ValueError, "Trainer: there is no evaluation function");
    return prev_samples_ ? prev_metric_ / static_cast<double>(prev_samples_) : 0.0;
}

// ---- Evaluator ----

Evaluator::Evaluator(FunctionPtr metric, std::vector<ProgressWriterPtr> progress_writers)
    : metric_(std::move(metric)), writers_(std::move(progress_writers)) {
    CTK_CHECK(metric_, ValueError, "Evaluator: the evaluation function is required");
    aggregate_ = reduce_sum(metric_->output(), {Axis::all_axes()}, true, "aggregateMetric");
    combined_ = combine({aggregate_->output(), metric_->output()}, "EvaluatorCombined");
}

double Evaluator::test_minibatch(const MinibatchArguments& arguments, Device device) {
    return test_minibatch(arguments, device, nullptr);
}

double Evaluator::test_minibatch(const MinibatchArguments& arguments, Device device,
                                 const std::shared_ptr<distributed::Communicator>& workers) {
    const bool shared = workers && workers->num_workers() > 1;
    // An empty minibatch (a reader that ran dry) tests no samples: CNTK returned 0 / 0, a NaN.
    if (arguments.empty() && !shared) {
        prev_samples_ = 0;
        return std::numeric_limits<double>::quiet_NaN();
    }
    int64_t samples = 0;
    double sum = 0;
    if (!arguments.empty()) {
        ValueMap outs{{aggregate_->output(), Value()}, {metric_->output(), Value()}};
        combined_->forward(arguments, outs, {}, false, device);
        samples = sample_count(outs.at(metric_->output()), metric_->output());
        sum = scalar_of(outs.at(aggregate_->output()));
    }
    if (shared) {  // CNTK's AggregateInPlace of (errorSum, sampleCount)
        std::vector<double> job{sum, static_cast<double>(samples)};
        workers->all_reduce(job);
        sum = job[0];
        samples = static_cast<int64_t>(job[1]);
    }
    prev_samples_ = samples;
    acc_ += sum;
    for (const ProgressWriterPtr& w : writers_) w->update_test(samples, acc_);
    return samples > 0 ? sum / static_cast<double>(samples) : 0.0;
}

double Evaluator::test_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                                 const StreamMap& input_map, Device device) {
    return test_minibatch(bind_minibatch(minibatch, input_map, device), device);
}

void Evaluator::summarize_test_progress() {
    for (const ProgressWriterPtr& w : writers_) w->write_test_summary(acc_);
    acc_ = 0;
}

// ---- checkpoints ----
// CNTK's layout: the combined training function as a CNTK v2 model at `path`, and the trainer state in
// `path.ckp`, a CNTK Dictionary {Version, Learners, ExternalState, DistributedState} with ctk's additions
// (ctkRandomStreams, ctkTotalSamples, ctkModelChecksum). Two files cannot be replaced at once, so a save
// writes the model to `path.new` first, then replaces `path.ckp`, then renames `path.new` over `path`; a
// restore that finds the model's checksum different from the state's finishes the interrupted save from
// `path.new`. A crash at any point leaves one whole checkpoint.

namespace {
int64_t fnv1a64(const std::string& bytes) {
    uint64_t h = 1469598103934665603ULL;
    for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
    return static_cast<int64_t>(h);
}
// The saved values for `vars`, positionally, shapes checked (nothing is changed yet).
std::vector<Tensor> checked_values(const std::vector<Variable>& vars, const std::vector<Variable>& saved,
                                   const char* what, const std::string& path) {
    CTK_CHECK(saved.size() == vars.size(), ValueError, path, ": the checkpoint holds ", saved.size(), " ",
              what, ", the model has ", vars.size());
    std::vector<Tensor> out;
    for (size_t i = 0; i < vars.size(); ++i) {
        Tensor t = saved[i].value();
        CTK_CHECK(t.shape() == vars[i].value().shape(), ValueError, path, ": ", what, " ", i, " (",
                  vars[i].to_string(), ") has shape ", t.shape().to_string(), " in the checkpoint");
        out.push_back(std::move(t));
    }
    return out;
}
}  // namespace

void Trainer::save_checkpoint(const std::string& path, const Dictionary& external_state) const {
    // Every worker's learners make their state (a distributed learner may exchange, or reset residuals,
    // there); under distribution every worker's own state goes to worker 0, which alone writes.
    DictionaryValue::List learner_states, streams;
    for (const LearnerPtr& l : learners_) learner_states.emplace_back(l->checkpoint_state());
    for (uint64_t pos : step_graph_->random_stream_positions()) streams.emplace_back(pos);
    const distributed::CommunicatorPtr comm =
        distributed_.empty() || distributed_[0]->communicator()->num_workers() == 1
            ? nullptr
            : distributed_[0]->communicator();
    Dictionary workers;
    if (comm) {
        const Dictionary mine{{"ExternalState", external_state}, {"ctkRandomStreams", streams}};
        const std::vector<std::string> all = comm->gather(cntk_dictionary_bytes(mine), 0);
        for (size_t r = 0; r < all.size(); ++r)
            workers.set(std::to_string(r), cntk_dictionary_from_bytes(all[r], "worker " + std::to_string(r) +
                                                                                  "'s checkpoint state"));
        if (!comm->is_main()) {
            std::string failure;  // worker 0 says whether it wrote the files
            comm->broadcast(failure, 0);
            CTK_CHECK(failure.empty(), IOError, "worker 0 could not write checkpoint '", path,
                      "': ", failure);
            return;
        }
    }
    std::string failure;
    try {
        const std::string model = serialize_cntk_v2_model(combined_);
        Dictionary state{{"Version", int64_t(1)},
                         {"Learners", learner_states},
                         {"ExternalState", external_state},
                         {"DistributedState", workers},
                         {"ctkRandomStreams", streams},
                         {"ctkTotalSamples", total_samples_},
                         {"ctkModelChecksum", fnv1a64(model)}};
        if (scaler_) state.set("ctkLossScaler", scaler_->state());
        write_file_atomically(path + ".new", model);
        save_cntk_dictionary(state, path + ".ckp");
        std::error_code ec;
        std::filesystem::rename(path + ".new", path, ec);
        CTK_CHECK(!ec, IOError, "cannot rename '", path, ".new' to '", path, "': ", ec.message());
    } catch (const std::exception& e) {
        if (!comm) throw;
        failure = e.what();
    }
    if (comm) {
        comm->broadcast(failure, 0);  // the others wait for the files, as CNTK's barrier did
        CTK_CHECK(failure.empty(), IOError, failure);
    }
}

Dictionary Trainer::restore_from_checkpoint(const std::string& path) {
    CTK_CHECK(std::filesystem::exists(path), IOError, "checkpoint '", path, "' does not exist");
    const std::string state_path = path + ".ckp";
    CTK_CHECK(std::filesystem::exists(state_path), IOError, "checkpoint '", path, "' has no trainer state '",
              state_path, "'");
    Dictionary d = load_cntk_dictionary(state_path);
    CTK_CHECK(d.contains("Learners") && d.contains("ExternalState"), IOError, state_path,
              ": not a trainer checkpoint (no Learners or ExternalState)");
    CTK_CHECK(!d.contains("Version") || d.at("Version").as_int() <= 1, IOError, state_path,
              ": trainer checkpoint version ", d.at("Version").as_int(), " is newer than this ctk reads");
    std::string model = read_file(path);
    if (d.contains("ctkModelChecksum") && fnv1a64(model) != d.at("ctkModelChecksum").as_int()) {
        // A save stopped between replacing the state and renaming the model: finish it.
        const std::string next = path + ".new";
        CTK_CHECK(std::filesystem::exists(next) &&
                      fnv1a64(model = read_file(next)) == d.at("ctkModelChecksum").as_int(),
                  IOError, "checkpoint '", path, "' and '", state_path,
                  "' are from different saves and no whole newer model is left to finish the save");
        std::filesystem::rename(next, path);
    }
    // Validate everything before changing anything, so a bad file leaves the trainer as it was.
    const FunctionPtr saved =
        deserialize_cntk_v2_model(model, "'" + path + "'", live_user_functions(combined_));
    const auto params = combined_->parameters();
    const auto consts = combined_->constants();
    const auto& learner_states = d.at("Learners").as_list();
    CTK_CHECK(learner_states.size() == learners_.size(), ValueError, path, ": the checkpoint holds ",
              learner_states.size(), " learners, the trainer has ", learners_.size());
    // A worker other than 0 of a distributed job takes its own external state and random streams. A
    // job of more workers than wrote the checkpoint takes worker 0's (ctk's readers keep one position
    // for the whole job, the same on every worker).
    Dictionary external = d.at("ExternalState").as_dictionary();
    const int64_t rank = distributed_.empty() ? 0 : distributed_[0]->communicator()->rank();
    const std::string key = std::to_string(rank);
    if (rank > 0 && d.contains("DistributedState") &&
        d.at("DistributedState").as_dictionary().contains(key)) {
        const Dictionary& mine = d.at("DistributedState").as_dictionary().at(key).as_dictionary();
        external = mine.at("ExternalState").as_dictionary();
        if (mine.contains("ctkRandomStreams")) d.set("ctkRandomStreams", mine.at("ctkRandomStreams"));
    }
    std::vector<uint64_t> streams;
    if (d.contains("ctkRandomStreams"))
        for (const auto& s : d.at("ctkRandomStreams").as_list())
            streams.push_back(static_cast<uint64_t>(s.as_int()));
    const auto param_values = checked_values(params, saved->parameters(), "parameters", path);
    const auto const_values = checked_values(consts, saved->constants(), "constants", path);
    for (size_t i = 0; i < params.size(); ++i) params[i].set_value(param_values[i]);
    for (size_t i = 0; i < consts.size(); ++i) consts[i].set_value(const_values[i]);
    for (size_t i = 0; i < learners_.size(); ++i)
        learners_[i]->restore_from_checkpoint(learner_states[i].as_dictionary());
    if (d.contains("ctkRandomStreams")) step_graph_->set_random_stream_positions(streams);
    if (scaler_ && d.contains("ctkLossScaler")) scaler_->restore(d.at("ctkLossScaler").as_dictionary());
    if (d.contains("ctkTotalSamples")) {
        total_samples_ = d.at("ctkTotalSamples").as_int();
    } else if (!learner_states.empty() && learner_states[0].as_dictionary().contains("sample_count")) {
        total_samples_ = learner_states[0].as_dictionary().at("sample_count").as_int();  // CNTK's checkpoint
    }
    return external;
}

}  // namespace ctk
