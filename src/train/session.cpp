// training_session: CNTK's training loop with progress summaries, checkpoints (restored on start),
// cross-validation and a final test, all driven by sample, minibatch or sweep frequencies.
#include <algorithm>
#include <cmath>
#include <filesystem>

#include "ctk/core/op_profile.h"
#include "ctk/distributed/communicator.h"
#include "ctk/distributed/learners.h"
#include "ctk/train/profiler.h"
#include "ctk/train/session.h"

namespace ctk {

TrainingSession::TrainingSession(std::shared_ptr<Trainer> trainer, std::shared_ptr<MinibatchSource> source,
                                 int64_t minibatch_size, StreamMap model_inputs_to_streams,
                                 Frequency progress_frequency, int64_t max_samples,
                                 std::optional<CheckpointConfig> checkpoint,
                                 std::optional<CrossValidationConfig> cross_validation,
                                 std::optional<TestConfig> test)
    : TrainingSession(std::move(trainer), std::move(source),
                      TrainingParameterSchedule(static_cast<double>(minibatch_size)),
                      std::move(model_inputs_to_streams), progress_frequency, max_samples,
                      std::move(checkpoint), std::move(cross_validation), std::move(test)) {}

TrainingSession::TrainingSession(std::shared_ptr<Trainer> trainer, std::shared_ptr<MinibatchSource> source,
                                 TrainingParameterSchedule minibatch_size, StreamMap model_inputs_to_streams,
                                 Frequency progress_frequency, int64_t max_samples,
                                 std::optional<CheckpointConfig> checkpoint,
                                 std::optional<CrossValidationConfig> cross_validation,
                                 std::optional<TestConfig> test)
    : trainer_(std::move(trainer)),
      source_(std::move(source)),
      minibatch_size_(std::move(minibatch_size)),
      map_(std::move(model_inputs_to_streams)),
      progress_(progress_frequency),
      max_samples_(max_samples),
      checkpoint_(std::move(checkpoint)),
      cv_(std::move(cross_validation)),
      test_(std::move(test)) {
    CTK_CHECK(trainer_ && source_, ValueError,
              "training_session: a trainer and a minibatch source are required");
    for (double v : minibatch_size_.values())
        CTK_CHECK(v >= 1 && v == std::floor(v), ValueError,
                  "training_session: minibatch sizes must be whole numbers > 0, got ", v);
    CTK_CHECK(!map_.empty(), ValueError, "training_session: model_inputs_to_streams is empty");
    CTK_CHECK(max_samples_ > 0, ValueError, "training_session: max_samples must be > 0");
    // Only a cross-validation callback could stop such a run; without one it would never return.
    CTK_CHECK(max_samples_ != kInfinitelyRepeat || !source_->repeats_forever() || (cv_ && cv_->callback),
              ValueError,
              "training_session: Train minibatch source must have a limited number of samples or sweeps: "
              "it repeats forever (max_samples and max_sweeps are INFINITELY_REPEAT) and no max_samples "
              "is given, so training would never end; give training_session max_samples, or the source "
              "max_sweeps");
    if (checkpoint_)
        CTK_CHECK(!checkpoint_->filename.empty(), ValueError,
                  "training_session: the checkpoint filename is empty");
    if (cv_)
        CTK_CHECK(cv_->source || cv_->callback, ValueError,
                  "training_session: the cross-validation config has neither a source nor a callback");
    if (cv_ && cv_->source)
        CTK_CHECK(cv_->max_samples != kInfinitelyRepeat || !cv_->source->repeats_forever(), ValueError,
                  "training_session: Cross validation minibatch source must have a limited number of samples "
                  "or sweeps: it repeats forever and the cross-validation config gives no max_samples, so a "
                  "cross-validation would never end");
    if (test_) {
        CTK_CHECK(test_->source, ValueError, "training_session: the test config has no source");
        CTK_CHECK(
            !test_->source->repeats_forever(), ValueError,
            "training_session: Test minibatch source must have a limited number of samples or sweeps: it "
            "repeats forever, so the test would never end");
    }
}

bool TrainingSession::due(const Frequency& f, int64_t samples_before, int64_t samples_after,
                          int64_t minibatches, int64_t sweeps_before, int64_t sweeps_after) const {
    if (f.value <= 0) return false;
    switch (f.unit) {
        case DataUnit::sample:
            return samples_before / f.value != samples_after / f.value;
        case DataUnit::minibatch:
            return minibatches % f.value == 0;
        case DataUnit::sweep:
            return sweeps_before / f.value != sweeps_after / f.value;
    }
    return false;
}

// CNTK's choice: the checkpoint file itself, else the kept one (filename + N, with its .ckp) of the
// largest N; "" when there is none.
std::string TrainingSession::checkpoint_to_restore() const {
    namespace fs = std::filesystem;
    const fs::path path(checkpoint_->filename);
    if (fs::exists(path)) return path.string();
    const fs::path parent = path.has_parent_path() ? path.parent_path() : fs::path(".");
    const std::string base = path.filename().string();
    std::error_code ec;
    std::string best;
    int64_t best_index = -1;
    for (const auto& entry : fs::directory_iterator(parent, ec)) {
        const std::string name = entry.path().filename().string();
        if (name.size() <= base.size() || name.compare(0, base.size(), base) != 0) continue;
        const std::string suffix = name.substr(base.size());
        if (suffix.size() > 18 ||
            !std::all_of(suffix.begin(), suffix.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        if (!fs::exists(entry.path().string() + ".ckp")) continue;
        const int64_t index = std::stoll(suffix);
        if (index > best_index) {
            best_index = index;
            best = entry.path().string();
        }
    }
    return best;
}

void TrainingSession::checkpoint(int64_t index, bool final) {
    Dictionary external{{"TrainingMinibatchSource", source_->checkpoint_state()}, {"CheckpointIndex", index}};
    trainer_->save_checkpoint(checkpoint_->filename, external);
    if (checkpoint_->preserve_all && !final) {  // CNTK keeps the periodic ones; the final is `filename`
        const std::string kept = checkpoint_->filename + std::to_string(index);  // CNTK's names
        std::filesystem::copy_file(checkpoint_->filename, kept,
                                   std::filesystem::copy_options::overwrite_existing);
        std::filesystem::copy_file(checkpoint_->filename + ".ckp", kept + ".ckp",
                                   std::filesystem::copy_options::overwrite_existing);
    }
    ++checkpoints_written_;
}

bool TrainingSession::cross_validate(int64_t index) {
    if (!cv_->source) return cv_->callback(index, 0.0, 0, 0);  // CNTK: only the callback runs
    const Dictionary start = cv_->source->checkpoint_state();
    const StreamMap& map = cv_->model_inputs_to_streams.empty() ? map_ : cv_->model_inputs_to_streams;
    double total = 0;
    int64_t samples = 0, minibatches = 0;
    while (samples < cv_->max_samples) {
        const int64_t size = std::min(cv_->minibatch_size, cv_->max_samples - samples);
        if (workers_) {  // CNTK's distributed evaluation: each worker its part, the job's sums
            auto mb = cv_->source->next_minibatch(size, workers_->num_workers(), workers_->rank());
            if (mb.empty()) break;
            ++minibatches;
            const double average = trainer_->test_minibatch(mb, map, device_, workers_);
            const int64_t n = trainer_->evaluator().previous_minibatch_sample_count();
            samples += n;
            total += average * static_cast<double>(n);
            continue;
        }
        auto mb = cv_->source->next_minibatch(size);
        if (mb.empty()) break;
        ++minibatches;
        MinibatchArguments args = bind_minibatch(mb, map, device_);
        const int64_t before = samples;
        const double average = trainer_->test_minibatch(args, device_);
        int64_t n = 0;
        for (const auto& [input, value] : args)
            n = std::max(n, value.has_layout() ? value.layout()->num_frames() : value.shape()[0]);
        samples = before + n;
        total += average * static_cast<double>(n);
    }
    trainer_->summarize_test_progress();
    cv_->source->restore_from_checkpoint(start);  // each cross-validation reads the same data
    if (!cv_->callback) return true;
    return cv_->callback(index, samples ? total / static_cast<double>(samples) : 0.0, samples, minibatches);
}

void TrainingSession::test() {
    const StreamMap& map = test_->model_inputs_to_streams.empty() ? map_ : test_->model_inputs_to_streams;
    for (;;) {
        if (workers_) {  // CNTK's distributed evaluation: each worker its part, the job's sums
            auto mb = test_->source->next_minibatch(test_->minibatch_size, workers_->num_workers(),
                                                    workers_->rank());
            if (mb.empty()) break;
            trainer_->test_minibatch(mb, map, device_, workers_);
            continue;
        }
        auto mb = test_->source->next_minibatch(test_->minibatch_size);
        if (mb.empty()) break;
        trainer_->test_minibatch(mb, map, device_);
    }
    trainer_->summarize_test_progress();
}

void TrainingSession::train(Device device) {
    device_ = device;
    int64_t checkpoint_index = 0;
    const std::string restore_from = checkpoint_ && checkpoint_->restore ? checkpoint_to_restore() : "";
    if (!restore_from.empty()) {
        Dictionary external = trainer_->restore_from_checkpoint(restore_from);
        source_->restore_from_checkpoint(external.at("TrainingMinibatchSource").as_dictionary());
        checkpoint_index = external.at("CheckpointIndex").as_int() + 1;
    }
    // Under distributed learners every worker reads its part of each minibatch (CNTK's partitioning,
    // scaled up for block momentum), except during the warm start, when all read the whole of it.
    int64_t workers = 1, rank = 0, scale = 1, distributed_after = 0;
    for (const LearnerPtr& l : trainer_->parameter_learners())
        if (auto d = std::dynamic_pointer_cast<distributed::DistributedLearner>(l)) {
            workers = d->communicator()->num_workers();
            rank = d->communicator()->rank();
            if (workers > 1) workers_ = d->communicator();
            scale = std::max(scale, d->minibatch_size_scale_factor());
            distributed_after = std::max(distributed_after, d->distributed_after());
        }
    int64_t minibatches = 0, since_summary = 0, cv_index = 0;
    int64_t last_checkpoint_samples = trainer_->total_number_of_samples_seen();
    bool stop = false, profiler_enabled = false;
    while (!stop && trainer_->total_number_of_samples_seen() < max_samples_) {
        const int64_t samples_before = trainer_->total_number_of_samples_seen();
        const int64_t sweeps_before = source_->sweeps_completed();
        const auto size = static_cast<int64_t>(minibatch_size_.at(samples_before, sweeps_before));
        const bool partitioned = workers > 1 && samples_before >= distributed_after;
        auto mb =
            source_->next_minibatch(std::min(size * (partitioned ? scale : 1), max_samples_ - samples_before),
                                    partitioned ? workers : 1, partitioned ? rank : 0);
        if (mb.empty() && workers == 1) break;
        // A distributed worker steps with whatever it got (nothing, at the end): the job's step ends
        // training when no worker had samples.
        trainer_->train_minibatch(mb, map_, device_);
        if (workers > 1 && trainer_->total_number_of_samples_seen() == samples_before) break;
        ++minibatches;
        const int64_t samples_after = trainer_->total_number_of_samples_seen();
        const int64_t sweeps_after = source_->sweeps_completed();
        since_summary += samples_after - samples_before;
        if (due(progress_, samples_before, samples_after, minibatches, sweeps_before, sweeps_after)) {
            trainer_->summarize_training_progress();
            since_summary = 0;
        }
        if (cv_ &&
            due(cv_->frequency, samples_before, samples_after, minibatches, sweeps_before, sweeps_after))
            stop = !cross_validate(cv_index++);
        // CNTK's profiler (start_profiler) times from the first checkpoint on, or from the first sweep's end
        // when no checkpoint comes before the last.
        bool warmed_up = false;
        if (checkpoint_ && due(checkpoint_->frequency, samples_before, samples_after, minibatches,
                               sweeps_before, sweeps_after)) {
            checkpoint(checkpoint_index++);
            last_checkpoint_samples = samples_after;
            warmed_up = true;
        }
        const bool periodic_checkpoints = checkpoint_ && checkpoint_->frequency.value > 0;
        if (!periodic_checkpoints && sweeps_after > sweeps_before) warmed_up = true;
        if (warmed_up && !profiler_enabled && profiler_started()) {
            enable_profiler();
            profiler_enabled = true;
        }
    }
    if (since_summary > 0) trainer_->summarize_training_progress();
    // CNTK: a cross-validation config without a frequency (or sys.maxsize) validates once, at the end.
    if (cv_ && !stop && (cv_->frequency.value <= 0 || cv_->frequency.value == INT64_MAX))
        cross_validate(cv_index++);
    if (checkpoint_) {
        // CNTK: a periodic checkpoint not yet written for the last samples is written (and kept), then
        // the final one.
        if (checkpoint_->frequency.value > 0 &&
            last_checkpoint_samples != trainer_->total_number_of_samples_seen())
            checkpoint(checkpoint_index++);
        checkpoint(checkpoint_index, true);
    }
    if (test_) test();
}

}  // namespace ctk
