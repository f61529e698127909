// Training as CNTK users know it: Trainer (one minibatch at a time), Evaluator, training_session (the
// loop with checkpoints, cross-validation and a final test), progress writers with CNTK's exact log
// lines, and checkpoints that restore a run bit-identically. See docs/training.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ctk/dictionary.h"
#include "ctk/function.h"
#include "ctk/io.h"
#include "ctk/learners.h"
#include "ctk/mixed_precision.h"
#include "ctk/program.h"

namespace ctk {

// ---- progress ----

// CNTK's ProgressWriter: counts updates and samples, and calls the on_write_* hooks on CNTK's schedule
// (arithmetic: every `frequency` updates and each of the first `first` ones; 0: geometric 1, 2, 4, ...).
// Losses and metrics arrive as running sums since the last summary.
class ProgressWriter {
public:
    static constexpr int64_t kNever = std::numeric_limits<int64_t>::max();  // Python's sys.maxsize
    ProgressWriter(int64_t training_frequency = kNever, int64_t training_first = 0,
                   int64_t test_frequency = kNever, int64_t test_first = 0);
    virtual ~ProgressWriter() = default;

    void update_training(int64_t samples, double accumulated_loss, std::optional<double> accumulated_metric);
    void update_test(int64_t samples, double accumulated_metric);
    void write_training_summary(double accumulated_loss, std::optional<double> accumulated_metric);
    void write_test_summary(double accumulated_metric);
    int64_t total_training_updates() const { return training_.total_updates; }
    int64_t total_test_updates() const { return test_.total_updates; }

    // (start, end) pairs over the window being written.
    using Range = std::pair<int64_t, int64_t>;
    using Sums = std::pair<double, double>;
    virtual void on_write_training_update(Range samples, Range updates, Sums loss,
                                          std::optional<Sums> metric) = 0;
    virtual void on_write_test_update(Range samples, Range updates, Sums metric) = 0;
    virtual void on_write_training_summary(int64_t samples, int64_t updates, int64_t summaries, double loss,
                                           std::optional<double> metric, int64_t elapsed_ms) = 0;
    virtual void on_write_test_summary(int64_t samples, int64_t updates, int64_t summaries, double metric,
                                       int64_t elapsed_ms) = 0;
    // A named value (learners report "Learning rate per minibatch" this way).
    virtual void write(const std::string& key, double value) = 0;

private:
    struct Window {
        int64_t frequency, first;
        Range samples{0, 0}, updates{0, 0};
        Sums loss{0, 0}, metric{0, 0};
        int64_t total_updates = 0, summaries = 0;
        std::chrono::steady_clock::time_point reset_time = std::chrono::steady_clock::now();
        bool due(int64_t update) const;
        bool count(int64_t samples);  // one more update; true when a line is due
        void mark_written();          // the window starts after what was just written
        void reset();
    };
    Window training_, test_;
};
using ProgressWriterPtr = std::shared_ptr<ProgressWriter>;

// CNTK's ProgressPrinter: prints the build banner when created, then CNTK's lines, byte for byte, to
// stdout or (log_to_file) to a file. freq: nullopt prints no per-minibatch lines, 0 the geometric table.
struct ProgressPrinterOptions {
    std::optional<int64_t> freq{};
    int64_t first = 0;
    std::string tag{};
    std::string log_to_file{};  // empty: stdout
    std::optional<int> rank{};
    bool gen_heartbeat = false;
    std::optional<int64_t> num_epochs{};
    std::optional<int64_t> test_freq{};
    int64_t test_first = 0;
    bool metric_is_pct = true;
    bool print_build_info = true;
};
class ProgressPrinter : public ProgressWriter {
public:
    explicit ProgressPrinter(ProgressPrinterOptions options = {});
    ~ProgressPrinter() override;
    void log(const std::string& message);
    void end_progress_print(const std::string& message = "");

    void on_write_training_update(Range samples, Range updates, Sums loss,
                                  std::optional<Sums> metric) override;
    void on_write_test_update(Range samples, Range updates, Sums metric) override;
    void on_write_training_summary(int64_t samples, int64_t updates, int64_t summaries, double loss,
                                   std::optional<double> metric, int64_t elapsed_ms) override;
    void on_write_test_summary(int64_t samples, int64_t updates, int64_t summaries, double metric,
                               int64_t elapsed_ms) override;
    void write(const std::string& key, double value) override;

private:
    void write_update(Range samples, Range updates, std::optional<Sums> loss, std::optional<Sums> metric,
                      int64_t frequency, const char* name);
    ProgressPrinterOptions o_;
    std::string tag_;  // "[tag] " or ""
    std::FILE* file_ = nullptr;
    std::chrono::steady_clock::time_point last_heartbeat_{};
};

// CNTK's TensorBoardProgressWriter: minibatch/avg_loss and minibatch/avg_metric every `freq` updates (none
// when freq is nullopt), summary/avg_loss, summary/avg_metric and the test metric at each summary, as
// scalars in a TensorBoard event file `log_dir/events.out.tfevents.<seconds>.<host>`. Only rank 0 (or no
// rank) writes. Metrics are fractions, as CNTK wrote them. The model graph (CNTK's `model` argument) is
// not written yet.
class TensorBoardProgressWriter : public ProgressWriter {
public:
    explicit TensorBoardProgressWriter(std::optional<int64_t> freq = std::nullopt,
                                       const std::string& log_dir = ".",
                                       std::optional<int> rank = std::nullopt, FunctionPtr model = nullptr);
    ~TensorBoardProgressWriter() override;
    TensorBoardProgressWriter(const TensorBoardProgressWriter&) = delete;
    TensorBoardProgressWriter& operator=(const TensorBoardProgressWriter&) = delete;

    // One scalar at a step; flush makes the records so far visible to TensorBoard; after close every
    // call throws (as CNTK's).
    void write_value(const std::string& name, double value, int64_t step);
    void flush();
    void close();
    const std::string& file_path() const { return path_; }  // empty on ranks other than 0

    void on_write_training_update(Range samples, Range updates, Sums loss,
                                  std::optional<Sums> metric) override;
    void on_write_test_update(Range samples, Range updates, Sums metric) override;
    void on_write_training_summary(int64_t samples, int64_t updates, int64_t summaries, double loss,
                                   std::optional<double> metric, int64_t elapsed_ms) override;
    void on_write_test_summary(int64_t samples, int64_t updates, int64_t summaries, double metric,
                               int64_t elapsed_ms) override;
    void write(const std::string& key, double value) override;

private:
    void write_record(const std::string& data);
    FunctionPtr model_;
    std::string path_;
    std::FILE* file_ = nullptr;
    bool closed_ = false;
};
// CRC-32C (Castagnoli) of `bytes`, as TensorFlow's record format uses it.
uint32_t crc32c(const std::string& bytes);

// "Training N parameters in M parameter tensors." (N reads "so far unspecified number of" while a dim is
// still inferred), printed to stdout as CNTK's log_number_of_parameters; also returned.
std::string log_number_of_parameters(const FunctionPtr& model, bool print = true);
// Python's repr() of a float ("0.001", "1e-05", "0.0"): how CNTK's Python printed reported values.
std::string python_float_repr(double value);
// "Selected CPU as the process wide default device." (or "GPU[0] <name>") on stderr, once per process.
void announce_default_device();

// ---- Trainer ----

// Arguments of one minibatch: a Value per input variable, or reader data per input variable.
using MinibatchArguments = std::unordered_map<Variable, Value, VariableHash>;
using StreamMap = std::unordered_map<Variable, std::string, VariableHash>;  // input -> stream name
// Binds reader data to inputs (MinibatchData::as_batch for inputs without a sequence axis).
MinibatchArguments bind_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                                  const StreamMap& input_map);

// CNTK's Evaluator: the test half of a Trainer, for a metric (or any per-sample Function) alone.
class Evaluator {
public:
    explicit Evaluator(FunctionPtr metric, std::vector<ProgressWriterPtr> progress_writers = {});
    // The average of the metric over the minibatch's samples (inference mode), computed on `device`; an
    // empty minibatch gives NaN (CNTK's 0 / 0).
    double test_minibatch(const MinibatchArguments& arguments, Device device = default_device());
    double test_minibatch(const std::unordered_map<std::string, MinibatchData>& minibatch,
                          const StreamMap& input_map, Device device = default_device());
    void summarize_test_progress();
    const FunctionPtr& evaluation_function() const { return metric_; }

private:
    FunctionPtr metric_, aggregate_, combined_;
    std::vector<ProgressWriterPtr> writers_;
    double acc_ = 0;
};

namespace detail {
class StepGraph;
}

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
};

// ---- training_session ----

enum class DataUnit : uint8_t { sample, minibatch, sweep };
struct Frequency {
    int64_t value = 0;  // 0: never
    DataUnit unit = DataUnit::sample;
};

struct CheckpointConfig {
    std::string filename{};
    Frequency frequency{};      // 0: only at the end
    bool restore = true;        // start from `filename` when it exists
    bool preserve_all = false;  // keep every checkpoint as filename + "." + index
};
struct CrossValidationConfig {
    std::shared_ptr<MinibatchSource> source{};
    Frequency frequency{};
    int64_t minibatch_size = 32;
    int64_t max_samples = kInfinitelyRepeat;
    StreamMap model_inputs_to_streams{};  // empty: the training map
    // Called with (index, average metric, samples, minibatches) after each cross-validation, as CNTK's
    // on_cross_validation_end; returning false stops training.
    std::function<bool(int64_t, double, int64_t, int64_t)> callback{};
};
struct TestConfig {
    std::shared_ptr<MinibatchSource> source{};
    int64_t minibatch_size = 32;
    StreamMap model_inputs_to_streams{};
};

class TrainingSession {
public:
    TrainingSession(std::shared_ptr<Trainer> trainer, std::shared_ptr<MinibatchSource> source,
                    int64_t minibatch_size, StreamMap model_inputs_to_streams,
                    Frequency progress_frequency = {}, int64_t max_samples = kInfinitelyRepeat,
                    std::optional<CheckpointConfig> checkpoint = std::nullopt,
                    std::optional<CrossValidationConfig> cross_validation = std::nullopt,
                    std::optional<TestConfig> test = std::nullopt);
    // The same with CNTK's minibatch_size_schedule: the size of each minibatch is the schedule's value
    // (rounded) at the samples (or sweeps) seen so far; a resumed run picks up where it was.
    TrainingSession(std::shared_ptr<Trainer> trainer, std::shared_ptr<MinibatchSource> source,
                    TrainingParameterSchedule minibatch_size, StreamMap model_inputs_to_streams,
                    Frequency progress_frequency = {}, int64_t max_samples = kInfinitelyRepeat,
                    std::optional<CheckpointConfig> checkpoint = std::nullopt,
                    std::optional<CrossValidationConfig> cross_validation = std::nullopt,
                    std::optional<TestConfig> test = std::nullopt);
    // Runs to max_samples (or the source's end), summarising progress, checkpointing, cross-validating
    // and testing as configured. Restores from the checkpoint first when configured and present.
    // Trains on `device` (CNTK's train(device)): every training, cross-validation and test step.
    void train(Device device = default_device());

private:
    bool due(const Frequency& f, int64_t samples_before, int64_t samples_after, int64_t minibatches,
             int64_t sweeps_before, int64_t sweeps_after) const;
    void checkpoint(int64_t index);
    bool cross_validate(int64_t index);
    void test();

    std::shared_ptr<Trainer> trainer_;
    std::shared_ptr<MinibatchSource> source_;
    TrainingParameterSchedule minibatch_size_;
    StreamMap map_;
    Device device_;  // train()'s device
    Frequency progress_;
    int64_t max_samples_;
    std::optional<CheckpointConfig> checkpoint_;
    std::optional<CrossValidationConfig> cv_;
    std::optional<TestConfig> test_;
    int64_t checkpoints_written_ = 0;
};

}  // namespace ctk
