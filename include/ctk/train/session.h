// training_session: CNTK's training loop over a MinibatchSource, with progress, checkpoints that
// restore a run bit-identically, cross-validation and a final test. See docs/training.md.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ctk/io/minibatch_source.h"
#include "ctk/train/trainer.h"

namespace ctk {

enum class DataUnit : uint8_t { sample, minibatch, sweep };
struct Frequency {
    int64_t value = 0;  // 0: never
    DataUnit unit = DataUnit::sample;
};

struct CheckpointConfig {
    std::string filename{};
    Frequency frequency{};  // 0: only at the end
    // Start from `filename` when it exists, else from the kept checkpoint (filename + N) of the largest N.
    bool restore = true;
    // Also keep every periodic checkpoint as filename + index (CNTK's names; the final one is `filename`).
    bool preserve_all = false;
};
struct CrossValidationConfig {
    std::shared_ptr<MinibatchSource> source{};
    Frequency frequency{};  // 0 or INT64_MAX (CNTK's None, sys.maxsize): once, at the end of training
    int64_t minibatch_size = 32;
    int64_t max_samples = kInfinitelyRepeat;
    StreamMap model_inputs_to_streams{};  // empty: the training map
    // Called with (index, average metric, samples, minibatches) after each cross-validation, as CNTK's
    // on_cross_validation_end; returning false stops training. Without a source only the callback runs,
    // with (index, 0, 0, 0).
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
    void checkpoint(int64_t index, bool final = false);
    std::string checkpoint_to_restore() const;
    bool cross_validate(int64_t index);
    void test();

    std::shared_ptr<Trainer> trainer_;
    std::shared_ptr<MinibatchSource> source_;
    TrainingParameterSchedule minibatch_size_;
    StreamMap map_;
    Device device_;  // train()'s device
    // The job's workers under distributed learners (tests and cross-validations are then shared).
    std::shared_ptr<distributed::Communicator> workers_;
    Frequency progress_;
    int64_t max_samples_;
    std::optional<CheckpointConfig> checkpoint_;
    std::optional<CrossValidationConfig> cv_;
    std::optional<TestConfig> test_;
    int64_t checkpoints_written_ = 0;
};

}  // namespace ctk
