// TrainingParameterSchedule and CNTK's schedule factories. A schedule maps the count of samples seen (or of
// data sweeps, when epoch_size is kFullDataSweep) to a value; CNTK keys each entry by the count at which it
// ends and looks values up with upper_bound, so an entry ending at 100 samples covers samples 0..99.
#include <algorithm>
#include <atomic>
#include <sstream>

#include "ctk/core/error.h"
#include "ctk/learners.h"

namespace ctk {

namespace {

std::atomic<bool> g_default_unit_gain{true};

void check_sizes(int64_t epoch_size, int64_t minibatch_size) {
    CTK_CHECK(epoch_size >= 0, ValueError,
              "TrainingParameterSchedule: epoch_size must be >= 0 (0 = a full data sweep), got ", epoch_size);
    CTK_CHECK(minibatch_size >= 0, ValueError,
              "TrainingParameterSchedule: minibatch_size must be >= 0 (0 = per minibatch), got ",
              minibatch_size);
}

}  // namespace

TrainingParameterSchedule::TrainingParameterSchedule(double value, int64_t minibatch_size)
    : entries_{{0, value}}, epoch_size_(kFullDataSweep), minibatch_size_(minibatch_size) {
    check_sizes(0, minibatch_size);
}

TrainingParameterSchedule::TrainingParameterSchedule(std::vector<std::pair<int64_t, double>> schedule,
                                                     int64_t epoch_size, int64_t minibatch_size)
    : epoch_size_(epoch_size), minibatch_size_(minibatch_size) {
    check_sizes(epoch_size, minibatch_size);
    CTK_CHECK(!schedule.empty(), ValueError, "TrainingParameterSchedule: the schedule is empty");
    // One unit is epoch_size samples, or one sweep for full-sweep schedules (CNTK's ConstructSchedule).
    const int64_t unit = epoch_size == kFullDataSweep ? 1 : epoch_size;
    int64_t units = 0;
    for (size_t i = 0; i < schedule.size(); ++i) {
        const auto& [count, value] = schedule[i];
        CTK_CHECK(count >= 0, ValueError, "TrainingParameterSchedule: entry ", i, " has a negative count ",
                  count);
        // CNTK allows a zero count only on the last entry (it then counts as 1).
        CTK_CHECK(count > 0 || i + 1 == schedule.size(), ValueError, "TrainingParameterSchedule: entry ", i,
                  " has count 0; only the last entry may");
        units += count > 0 ? count : 1;
        entries_.emplace_back(unit * units, value);
    }
}

TrainingParameterSchedule::TrainingParameterSchedule(const std::vector<double>& values, int64_t epoch_size,
                                                     int64_t minibatch_size)
    : TrainingParameterSchedule(
          [&] {
              std::vector<std::pair<int64_t, double>> s;
              for (double v : values) s.emplace_back(1, v);
              return s;
          }(),
          epoch_size, minibatch_size) {}

double TrainingParameterSchedule::at(int64_t samples_seen, int64_t sweeps_seen) const {
    const int64_t count = is_sweep_based() ? sweeps_seen : samples_seen;
    auto it = std::upper_bound(entries_.begin(), entries_.end(), count,
                               [](int64_t c, const std::pair<int64_t, double>& e) { return c < e.first; });
    return it == entries_.end() ? entries_.back().second : it->second;
}

std::vector<double> TrainingParameterSchedule::values() const {
    std::vector<double> v;
    for (const auto& e : entries_) v.push_back(e.second);
    return v;
}

TrainingParameterSchedule TrainingParameterSchedule::shifted(int64_t count) const {
    TrainingParameterSchedule s = *this;
    for (auto& e : s.entries_) e.first += count;
    return s;
}

std::string TrainingParameterSchedule::to_string() const {
    std::ostringstream out;
    out.precision(17);
    out << "TrainingParameterSchedule([";
    for (size_t i = 0; i < entries_.size(); ++i)
        out << (i ? ", " : "") << "(" << entries_[i].first << ", " << entries_[i].second << ")";
    out << "], epoch_size=" << epoch_size_ << ", minibatch_size=" << minibatch_size_ << ")";
    return out.str();
}

Dictionary TrainingParameterSchedule::state() const {
    DictionaryValue::List ends, values;
    for (const auto& [end, value] : entries_) {
        ends.emplace_back(end);
        values.emplace_back(value);
    }
    Dictionary d;
    d.set("type", "TrainingParameterSchedule");
    d.set("ends", std::move(ends));
    d.set("values", std::move(values));
    d.set("epoch_size", epoch_size_);
    d.set("minibatch_size", minibatch_size_);
    return d;
}

TrainingParameterSchedule TrainingParameterSchedule::from_state(const Dictionary& d) {
    CTK_CHECK(d.contains("type") && d.at("type").as_string() == "TrainingParameterSchedule", ValueError,
              "TrainingParameterSchedule::from_state: not a schedule's state");
    const auto& ends = d.at("ends").as_list();
    const auto& values = d.at("values").as_list();
    CTK_CHECK(!ends.empty() && ends.size() == values.size(), ValueError,
              "TrainingParameterSchedule::from_state: ", ends.size(), " ends for ", values.size(), " values");
    TrainingParameterSchedule s;
    s.entries_.clear();
    for (size_t i = 0; i < ends.size(); ++i) {
        int64_t end = ends[i].as_int();
        CTK_CHECK(i == 0 || end >= s.entries_.back().first, ValueError,
                  "TrainingParameterSchedule::from_state: ends must ascend");
        s.entries_.emplace_back(end, values[i].as_double());
    }
    s.epoch_size_ = d.at("epoch_size").as_int();
    s.minibatch_size_ = d.at("minibatch_size").as_int();
    check_sizes(s.epoch_size_, s.minibatch_size_);
    return s;
}

TrainingParameterSchedule learning_parameter_schedule(double lr, int64_t minibatch_size,
                                                      int64_t /*epoch_size*/) {
    return TrainingParameterSchedule(lr, minibatch_size);
}
TrainingParameterSchedule learning_parameter_schedule(const std::vector<double>& lrs, int64_t minibatch_size,
                                                      int64_t epoch_size) {
    return TrainingParameterSchedule(lrs, epoch_size, minibatch_size);
}
TrainingParameterSchedule learning_parameter_schedule(std::vector<std::pair<int64_t, double>> lrs,
                                                      int64_t minibatch_size, int64_t epoch_size) {
    return TrainingParameterSchedule(std::move(lrs), epoch_size, minibatch_size);
}
TrainingParameterSchedule learning_parameter_schedule_per_sample(double lr, int64_t epoch_size) {
    return learning_parameter_schedule(lr, 1, epoch_size);
}
TrainingParameterSchedule learning_parameter_schedule_per_sample(const std::vector<double>& lrs,
                                                                 int64_t epoch_size) {
    return learning_parameter_schedule(lrs, 1, epoch_size);
}
TrainingParameterSchedule momentum_schedule(double m, int64_t minibatch_size, int64_t epoch_size) {
    return learning_parameter_schedule(m, minibatch_size, epoch_size);
}
TrainingParameterSchedule momentum_schedule(const std::vector<double>& ms, int64_t minibatch_size,
                                            int64_t epoch_size) {
    return learning_parameter_schedule(ms, minibatch_size, epoch_size);
}
TrainingParameterSchedule momentum_schedule_per_sample(double m, int64_t epoch_size) {
    return momentum_schedule(m, 1, epoch_size);
}
TrainingParameterSchedule momentum_as_time_constant_schedule(double time_constant, int64_t epoch_size) {
    CTK_CHECK(time_constant >= 0, ValueError,
              "momentum_as_time_constant_schedule: the time constant must be >= 0, got ", time_constant);
    return momentum_schedule_per_sample(time_constant == 0 ? 0.0 : std::exp(-1.0 / time_constant),
                                        epoch_size);
}

void set_default_unit_gain_value(bool value) {
    g_default_unit_gain = value;
}
bool default_unit_gain_value() {
    return g_default_unit_gain;
}

}  // namespace ctk
