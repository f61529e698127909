// CNTK's training-parameter schedules (learning rates, momentums) with CNTK 2.7's semantics: a value per
// span of samples (or sweeps), with the reference minibatch size it was tuned for. See docs/training.md.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ctk/core/dictionary.h"

namespace ctk {

// CNTK's TrainingParameterSchedule<double>: a value per span of samples, with a reference minibatch size.
class TrainingParameterSchedule {
public:
    static constexpr int64_t kIgnoreMinibatchSize = 0;  // CNTK's IGNORE: values apply per minibatch
    static constexpr int64_t kFullDataSweep = 0;        // epoch_size: one entry per data sweep
    TrainingParameterSchedule(double value = 0.0, int64_t minibatch_size = kIgnoreMinibatchSize);
    // [(n_1, v_1), (n_2, v_2), ...]: v_1 for the first n_1 * epoch_size samples, then v_2 ...; the last
    // value holds forever. A plain list of values is the same with every n = 1.
    TrainingParameterSchedule(std::vector<std::pair<int64_t, double>> schedule, int64_t epoch_size,
                              int64_t minibatch_size = kIgnoreMinibatchSize);
    TrainingParameterSchedule(const std::vector<double>& values, int64_t epoch_size,
                              int64_t minibatch_size = kIgnoreMinibatchSize);

    // The value in force after `samples_seen` samples (or sweeps, for kFullDataSweep schedules).
    double at(int64_t samples_seen, int64_t sweeps_seen = 0) const;
    int64_t minibatch_size() const { return minibatch_size_; }
    int64_t epoch_size() const { return epoch_size_; }
    bool is_constant() const { return entries_.size() == 1; }
    // True when entries advance per data sweep (epoch_size == kFullDataSweep) rather than per sample.
    bool is_sweep_based() const { return epoch_size_ == kFullDataSweep; }
    // Every value the schedule can take, in order (for argument checks).
    std::vector<double> values() const;
    // The same schedule starting at `count` samples (or sweeps) instead of 0 (CNTK's ResetLearningRate).
    TrainingParameterSchedule shifted(int64_t count) const;
    std::string to_string() const;
    Dictionary state() const;
    static TrainingParameterSchedule from_state(const Dictionary& d);

private:
    // (end, value): `value` holds while the count (samples, or sweeps) is below `end`; ends ascend, and
    // the last value holds past its end.
    std::vector<std::pair<int64_t, double>> entries_;
    int64_t epoch_size_ = 1;
    int64_t minibatch_size_ = kIgnoreMinibatchSize;
};
using LearningRateSchedule = TrainingParameterSchedule;
using MomentumSchedule = TrainingParameterSchedule;

// CNTK's Python factories. minibatch_size = 0 (kIgnoreMinibatchSize) means "per minibatch".
TrainingParameterSchedule learning_parameter_schedule(double lr, int64_t minibatch_size = 0,
                                                      int64_t epoch_size = 0);
TrainingParameterSchedule learning_parameter_schedule(const std::vector<double>& lrs,
                                                      int64_t minibatch_size = 0, int64_t epoch_size = 0);
TrainingParameterSchedule learning_parameter_schedule(std::vector<std::pair<int64_t, double>> lrs,
                                                      int64_t minibatch_size = 0, int64_t epoch_size = 0);
TrainingParameterSchedule learning_parameter_schedule_per_sample(double lr, int64_t epoch_size = 0);
TrainingParameterSchedule learning_parameter_schedule_per_sample(const std::vector<double>& lrs,
                                                                 int64_t epoch_size = 0);
TrainingParameterSchedule momentum_schedule(double m, int64_t minibatch_size = 0, int64_t epoch_size = 0);
TrainingParameterSchedule momentum_schedule(const std::vector<double>& ms, int64_t minibatch_size = 0,
                                            int64_t epoch_size = 0);
TrainingParameterSchedule momentum_schedule_per_sample(double m, int64_t epoch_size = 0);
// Deprecated in CNTK 2.2 but still used by old scripts: per-sample momentum exp(-1/T) (T = 0: momentum 0).
TrainingParameterSchedule momentum_as_time_constant_schedule(double time_constant, int64_t epoch_size = 0);

// CNTK's default for unit_gain (set_default_unit_gain_value).
void set_default_unit_gain_value(bool value);
bool default_unit_gain_value();

}  // namespace ctk
