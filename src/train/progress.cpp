// Progress writers: CNTK's update/summary schedule (ProgressWriter) and ProgressPrinter's exact lines
// (CNTK 2.7's cntk/logging/progress_print.py, reproduced with printf formats that round as Python's do).
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdarg>
#include <cstring>
#include <limits>
#include <mutex>

#include "ctk/core/build_info.h"
#include "ctk/core/cuda.h"
#include "ctk/kernels/device_info.h"
#include "ctk/train/progress.h"

namespace ctk {

namespace {
// A NaN comes out positive: printf shows the x86 default NaN as "-nan", CNTK's Python printed "nan".
double avg(double numerator, double denominator) {
    const double v = denominator > 0 ? numerator / denominator : 0.0;
    return std::isnan(v) ? std::numeric_limits<double>::quiet_NaN() : v;
}
std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
    char buf[512];
    va_list args;
    va_start(args, fmt);
    int n = std::vsnprintf(buf, sizeof(buf), fmt, args);
    va_end(args);
    return std::string(buf, static_cast<size_t>(std::max(0, std::min<int>(n, sizeof(buf) - 1))));
}
}  // namespace

// ---- ProgressWriter ----

ProgressWriter::ProgressWriter(int64_t training_frequency, int64_t training_first, int64_t test_frequency,
                               int64_t test_first)
    : training_{training_frequency, training_first}, test_{test_frequency, test_first} {
    CTK_CHECK(training_frequency >= 0 && test_frequency >= 0 && training_first >= 0 && test_first >= 0,
              ValueError, "ProgressWriter: frequencies and first counts must be >= 0");
}

bool ProgressWriter::Window::due(int64_t update) const {
    if (frequency == 0) return ((update + 1) & update) == 0;  // geometric: 1, 3, 7, ... (CNTK's test)
    return update % frequency == 0 || update <= first;
}

void ProgressWriter::Window::reset() {
    samples = updates = {0, 0};
    loss = metric = {0, 0};
    reset_time = std::chrono::steady_clock::now();
}

bool ProgressWriter::Window::count(int64_t n) {
    samples.second += n;
    ++updates.second;
    ++total_updates;
    return due(updates.second);
}

void ProgressWriter::Window::mark_written() {
    loss.first = loss.second;
    metric.first = metric.second;
    samples.first = samples.second;
    updates.first = updates.second;
}

void ProgressWriter::update_training(int64_t samples, double accumulated_loss,
                                     std::optional<double> accumulated_metric) {
    // CNTK snapshots the running sums only when a line is due (they may live on a GPU).
    if (samples == 0 || !training_.count(samples)) return;
    training_.loss.second = accumulated_loss;
    if (accumulated_metric) training_.metric.second = *accumulated_metric;
    on_write_training_update(training_.samples, training_.updates, training_.loss,
                             accumulated_metric ? std::optional<Sums>(training_.metric) : std::nullopt);
    training_.mark_written();
}

void ProgressWriter::set_distributed_schedule(int64_t frequency, int64_t first) {
    CTK_CHECK(frequency >= 0 && first >= 0, ValueError,
              "ProgressWriter: distributed_freq and distributed_first must be >= 0");
    distributed_.frequency = frequency;
    distributed_.first = first;
}

void ProgressWriter::update_distributed_sync(int64_t samples) {
    if (!distributed_.count(samples)) return;
    on_write_distributed_sync(distributed_.samples, distributed_.updates);
    distributed_.mark_written();
}

void ProgressWriter::update_test(int64_t samples, double accumulated_metric) {
    if (samples == 0 || !test_.count(samples)) return;
    test_.metric.second = accumulated_metric;
    on_write_test_update(test_.samples, test_.updates, test_.metric);
    test_.mark_written();
}

void ProgressWriter::write_training_summary(double accumulated_loss,
                                            std::optional<double> accumulated_metric) {
    Window& w = training_;
    if (w.samples.second > 0) {
        w.loss.second = accumulated_loss;
        if (accumulated_metric) w.metric.second = *accumulated_metric;
    }
    ++w.summaries;
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - w.reset_time)
            .count();
    on_write_training_summary(w.samples.second, w.updates.second, w.summaries, w.loss.second,
                              accumulated_metric ? std::optional<double>(w.metric.second) : std::nullopt, ms);
    w.reset();
}

void ProgressWriter::write_test_summary(double accumulated_metric) {
    Window& w = test_;
    if (w.samples.second > 0) w.metric.second = accumulated_metric;
    ++w.summaries;
    const auto ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - w.reset_time)
            .count();
    on_write_test_summary(w.samples.second, w.updates.second, w.summaries, w.metric.second, ms);
    w.reset();
}

// ---- ProgressPrinter ----

ProgressPrinter::ProgressPrinter(ProgressPrinterOptions options)
    : ProgressWriter(options.freq.value_or(kNever), options.first, options.test_freq.value_or(kNever),
                     options.test_first),
      o_(std::move(options)) {
    tag_ = o_.tag.empty() ? "" : "[" + o_.tag + "] ";
    if (o_.distributed_freq) set_distributed_schedule(*o_.distributed_freq, o_.distributed_first);
    if (o_.print_build_info) {
        std::fputs(format_build_banner(build_info()).c_str(), stdout);
        std::fflush(stdout);
    }
    if (!o_.log_to_file.empty()) {
        std::string name = o_.log_to_file;
        if (o_.rank) name += "rank" + std::to_string(*o_.rank);
        std::printf("Redirecting log to file %s\n", name.c_str());
        file_ = std::fopen(name.c_str(), "w");
        CTK_CHECK(file_, IOError, "ProgressPrinter: cannot open log file '", name,
                  "': ", std::strerror(errno));
        std::fprintf(file_, "%s\n", name.c_str());
        const std::string epochs = o_.num_epochs ? std::to_string(*o_.num_epochs) : "None";
        log("CNTKCommandTrainInfo: train : " + epochs);
        log("CNTKCommandTrainInfo: CNTKNoMoreCommands_Total : " + epochs);
        log("CNTKCommandTrainBegin: train");
    }
    if (o_.freq && *o_.freq == 0) {
        log(" average      since    average      since      examples");
        log("    loss       last     metric       last              ");
        log(" ------------------------------------------------------");
    }
}

ProgressPrinter::~ProgressPrinter() {
    if (file_) std::fclose(file_);
}

void ProgressPrinter::on_write_distributed_sync(Range samples, Range updates) {
    log("Distributed training: #Syncs elapsed = " + std::to_string(updates.second - updates.first) +
        ", #Samples elapsed = " + std::to_string(samples.second - samples.first));
}

void ProgressPrinter::log(const std::string& message) {
    std::FILE* out = file_ ? file_ : stdout;
    std::fputs(message.c_str(), out);
    std::fputc('\n', out);
    std::fflush(out);
}

void ProgressPrinter::end_progress_print(const std::string& message) {
    log("CNTKCommandTrainEnd: train");
    if (!message.empty() && file_) log(message);
}

void ProgressPrinter::write_update(Range samples, Range updates, std::optional<Sums> loss,
                                   std::optional<Sums> metric, int64_t frequency, const char* name) {
    const double n = static_cast<double>(samples.second - samples.first);
    std::string line = " ";
    if (frequency == 0) {
        const double total = static_cast<double>(samples.second);
        if (loss)
            line += format("%8.3g   %8.3g   ", avg(loss->second, total), avg(loss->second - loss->first, n));
        else
            line += format("%8s   %8s   ", "", "");
        if (metric)
            line += format("%8.3g   %8.3g   ", avg(metric->second, total),
                           avg(metric->second - metric->first, n));
        else
            line += format("%8s   %8s   ", "", "");
        line += format(" %10" PRId64, samples.second);
    } else {
        line += format("%sMinibatch[%4" PRId64 "-%4" PRId64 "]: ", name, updates.first + 1, updates.second);
        const int64_t count = samples.second - samples.first;
        if (loss) line += format("loss = %0.6f * %" PRId64, avg(loss->second - loss->first, n), count);
        if (metric) {
            if (loss) line += ", ";
            const double m = avg(metric->second - metric->first, n);
            line += o_.metric_is_pct ? format("metric = %0.2f%% * %" PRId64, m * 100.0, count)
                                     : format("metric = %0.6f * %" PRId64, m, count);
        }
        line += ";";
    }
    log(line);
}

void ProgressPrinter::on_write_training_update(Range samples, Range updates, Sums loss,
                                               std::optional<Sums> metric) {
    write_update(samples, updates, loss, metric, o_.freq.value_or(kNever), "");
    if (o_.gen_heartbeat) {
        auto now = std::chrono::steady_clock::now();
        if (now - last_heartbeat_ > std::chrono::seconds(10)) {
            std::puts("PROGRESS: 0.00%");
            last_heartbeat_ = now;
        }
    }
}

void ProgressPrinter::on_write_test_update(Range samples, Range updates, Sums metric) {
    write_update(samples, updates, std::nullopt, metric, o_.test_freq.value_or(kNever), "Evaluation ");
}

void ProgressPrinter::on_write_training_summary(int64_t samples, int64_t /*updates*/, int64_t summaries,
                                                double loss, std::optional<double> metric,
                                                int64_t elapsed_ms) {
    if (o_.freq && *o_.freq == 0) return;  // CNTK prints epoch summaries on arithmetic schedules only
    const double seconds = static_cast<double>(elapsed_ms) / 1000.0;
    const double n = static_cast<double>(samples);
    std::string epoch = std::to_string(summaries);
    if (o_.num_epochs) epoch += " of " + std::to_string(*o_.num_epochs);
    std::string line =
        "Finished Epoch[" + epoch + "]: " + tag_ + format("loss = %0.6f * %" PRId64, avg(loss, n), samples);
    if (metric)
        line += o_.metric_is_pct ? format(", metric = %0.2f%% * %" PRId64, avg(*metric, n) * 100.0, samples)
                                 : format(", metric = %0.6f * %" PRId64, avg(*metric, n), samples);
    line += format(" %0.3fs (%5.1f samples/s);", seconds, avg(n, seconds));
    log(line);
}

void ProgressPrinter::on_write_test_summary(int64_t samples, int64_t updates, int64_t summaries,
                                            double metric, int64_t /*elapsed_ms*/) {
    const double m = avg(metric, static_cast<double>(samples));
    log(o_.metric_is_pct ? format("Finished Evaluation [%" PRId64 "]: Minibatch[1-%" PRId64
                                  "]: metric = %0.2f%% * %" PRId64 ";",
                                  summaries, updates, m * 100.0, samples)
                         : format("Finished Evaluation [%" PRId64 "]: Minibatch[1-%" PRId64
                                  "]: metric = %0.6f * %" PRId64 ";",
                                  summaries, updates, m, samples));
}

void ProgressPrinter::write(const std::string& key, double value) {
    log(key + ": " + python_float_repr(value));
}

// ---- helpers ----

std::string python_float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
    // The shortest digits that round-trip (what repr uses), then Python's layout: positional for
    // decimal exponents in [-4, 16), scientific with a two-digit exponent otherwise.
    char buf[64];
    auto res = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
    std::string sci(buf, res.ptr);
    const bool negative = sci[0] == '-';
    if (negative) sci.erase(0, 1);
    const size_t e_pos = sci.find('e');
    std::string digits = sci.substr(0, e_pos);
    digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
    const int exponent = std::stoi(sci.substr(e_pos + 1));
    std::string out;
    if (exponent >= -4 && exponent < 16) {
        if (exponent < 0) {
            out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
        } else if (static_cast<int>(digits.size()) <= exponent + 1) {
            out = digits + std::string(static_cast<size_t>(exponent + 1) - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, static_cast<size_t>(exponent + 1)) + "." +
                  digits.substr(static_cast<size_t>(exponent + 1));
        }
    } else {
        out = digits.substr(0, 1);
        if (digits.size() > 1) out += "." + digits.substr(1);
        out += format("e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    }
    return negative ? "-" + out : out;
}

std::string log_number_of_parameters(const FunctionPtr& model, bool print) {
    const auto params = model->parameters();
    bool inferred = false;
    int64_t total = 0;
    for (const Variable& p : params) {
        inferred = inferred || p.has_inferred_dims();
        int64_t n = 1;
        for (int64_t d : p.shape()) n *= d;
        total += n;
    }
    std::string line = "Training " +
                       (inferred ? std::string("so far unspecified number of") : std::to_string(total)) +
                       " parameters in " + std::to_string(params.size()) + " parameter tensors.";
    if (print) {
        std::puts(line.c_str());
        std::fflush(stdout);
    }
    return line;
}

void announce_default_device() {
    static std::once_flag once;
    std::call_once(once, [] {
        // CNTK's DeviceDescriptor::AsString: "CPU", or "GPU[<id>] <name>".
        const Device d = default_device();
        const std::string name =
            d.is_cuda() ? "GPU[" + std::to_string(d.index) + "] " + cuda::properties(d.index).name
                        : std::string("CPU");
        std::fprintf(stderr, "Selected %s as the process wide default device.\n", name.c_str());
        std::fflush(stderr);
    });
}

}  // namespace ctk
