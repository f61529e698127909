// Progress as CNTK reports it: ProgressWriter's schedule, ProgressPrinter's exact log lines, TensorBoard
// event files, and the banner and parameter-count lines CNTK prints. See docs/training.md.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ctk/graph/function.h"

namespace ctk {

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
    // CNTK's distributed-sync lines: each time a distributed learner combined the workers' gradients or
    // models, with the job's samples since the previous one; written on the same schedule rule as
    // training updates (every `frequency`-th, and each of the first `first`); never by default.
    void set_distributed_schedule(int64_t frequency, int64_t first);
    void update_distributed_sync(int64_t samples);
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
    virtual void on_write_distributed_sync(Range /*samples*/, Range /*updates*/) {}

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
    Window distributed_{kNever, 0};
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
    std::optional<int64_t> distributed_freq{};  // "Distributed training: #Syncs elapsed = ..." lines
    int64_t distributed_first = 0;
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
    void on_write_distributed_sync(Range samples, Range updates) override;

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

}  // namespace ctk
