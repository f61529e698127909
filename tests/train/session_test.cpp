// training_session: progress, cross-validation, the final test and preserved checkpoints under CNTK's
// names; restoring the newest kept checkpoint; bad data stopping with file, line and column; and a run
// killed mid-epoch that resumes to the same parameters as an uninterrupted one (the child process is
// this test binary, re-run with CTK_TRAIN_TEST_CHILD set).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "ctk/core/rng.h"
#include "ctk/layers.h"
#include "ctk/train.h"
#include "train/train_test_util.h"

namespace ctk {
namespace {

namespace fs = std::filesystem;
using test::read_lines;
using test::temp_dir;

// ---- a run killed mid-epoch resumes to the uninterrupted run's parameters ----

// 240 samples of a 3-class problem in CTF, written by the test.
void write_ctf(const std::string& path) {
    std::ofstream out(path);
    uint64_t s = 12345;
    auto next = [&] {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        return static_cast<double>(s >> 11) / static_cast<double>(1ull << 53);
    };
    for (int i = 0; i < 240; ++i) {
        const int label = i % 3;
        out << "|labels";
        for (int c = 0; c < 3; ++c) out << (c == label ? " 1" : " 0");
        out << " |features";
        for (int d = 0; d < 4; ++d) out << ' ' << (d == label ? 1.0 : 0.0) + 0.5 * next();
        out << "\n";
    }
}

struct ResumableRun {
    Variable x = input_variable({4}, DataType::f32, false, false, default_batch_axes(), "features");
    Variable y = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "labels");
    FunctionPtr z, loss, metric;
    std::shared_ptr<Trainer> trainer;
    std::shared_ptr<MinibatchSource> source;
    explicit ResumableRun(const std::string& data) {
        set_fixed_random_seed(7);
        FunctionPtr h = layers::call(
            layers::Dense({8}, layers::ActivationFn([](const Variable& v) { return tanh(v); })), x);
        FunctionPtr d = layers::call(layers::Dropout(0.25), h);
        z = layers::call(layers::Dense({3}), d);
        loss = cross_entropy_with_softmax(z, y);
        metric = classification_error(z, y);
        auto learner =
            adam(z->parameters(), learning_parameter_schedule_per_sample(0.01), momentum_schedule(0.9));
        trainer = std::make_shared<Trainer>(z, loss, metric, std::vector<LearnerPtr>{learner});
        MinibatchSourceConfig c;
        c.deserializers = {
            ctf_deserializer(data, {{"features", "features", {4}}, {"labels", "labels", {3}}})};
        c.randomization_window_in_chunks = 4;
        source = std::make_shared<MinibatchSource>(c);
    }
    void train(const std::string& ckp, int64_t max_samples) {
        TrainingSession s(trainer, source, 16, {{x, "features"}, {y, "labels"}}, {}, max_samples,
                          CheckpointConfig{ckp, {48, DataUnit::sample}});
        s.train();
    }
    std::vector<std::vector<float>> params() const {
        std::vector<std::vector<float>> out;
        for (const Variable& p : z->parameters()) out.push_back(p.value().to_vector<float>());
        return out;
    }
};

// The child: trains with checkpoints and dies abruptly after 7 minibatches (112 samples, mid-sweep,
// after the checkpoint at 96), without unwinding, flushing or destructors.
struct Killer : ProgressWriter {
    Killer() : ProgressWriter(1, 0) {}
    void on_write_training_update(Range, Range u, Sums, std::optional<Sums>) override {
        if (u.second == 7) std::_Exit(3);
    }
    void on_write_test_update(Range, Range, Sums) override {}
    void on_write_training_summary(int64_t, int64_t, int64_t, double, std::optional<double>,
                                   int64_t) override {}
    void on_write_test_summary(int64_t, int64_t, int64_t, double, int64_t) override {}
    void write(const std::string&, double) override {}
};

TEST(TrainingSession, KilledRunResumesToTheSameParameters) {
    if (const char* child = std::getenv("CTK_TRAIN_TEST_CHILD")) {
        ResumableRun r((fs::path(child) / "data.ctf").string());
        auto killer = std::make_shared<Killer>();
        r.trainer = std::make_shared<Trainer>(r.z, r.loss, r.metric, r.trainer->parameter_learners(),
                                              std::vector<ProgressWriterPtr>{killer});
        r.train((fs::path(child) / "run.ckp").string(), 480);
        std::_Exit(0);  // not reached: the killer fires first
    }
    fs::path dir = temp_dir("resume");
    write_ctf((dir / "data.ctf").string());
    // Uninterrupted: 480 samples (two sweeps).
    ResumableRun full((dir / "data.ctf").string());
    full.train((dir / "full.ckp").string(), 480);
    // Killed at 112 samples; its last checkpoint is from 96.
    const std::string self = fs::read_symlink("/proc/self/exe").string();
    const std::string cmd = "CTK_TRAIN_TEST_CHILD=" + dir.string() + " '" + self +
                            "' --gtest_filter=TrainingSession.KilledRunResumesToTheSameParameters"
                            " >/dev/null 2>&1";
    const int status = std::system(cmd.c_str());
    ASSERT_TRUE(WIFEXITED(status)) << status;
    ASSERT_EQ(WEXITSTATUS(status), 3) << "the child should have been killed mid-epoch";
    ASSERT_TRUE(fs::exists(dir / "run.ckp"));
    EXPECT_FALSE(fs::exists(dir / "run.ckp.tmp"));
    // A fresh process-like start: new graph, new reader, restored from the checkpoint.
    ResumableRun resumed((dir / "data.ctf").string());
    resumed.train((dir / "run.ckp").string(), 480);
    EXPECT_EQ(resumed.trainer->total_number_of_samples_seen(), 480);
    EXPECT_EQ(resumed.params(), full.params());
    fs::remove_all(dir);
}

TEST(TrainingSession, ProgressCrossValidationTestAndPreservedCheckpoints) {
    fs::path dir = temp_dir("session");
    write_ctf((dir / "data.ctf").string());
    const std::string log = (dir / "log.txt").string();
    ResumableRun r((dir / "data.ctf").string());
    auto printer = std::make_shared<ProgressPrinter>(ProgressPrinterOptions{
        .tag = "Training", .log_to_file = log, .num_epochs = 3, .print_build_info = false});
    r.trainer = std::make_shared<Trainer>(r.z, r.loss, r.metric, r.trainer->parameter_learners(),
                                          std::vector<ProgressWriterPtr>{printer});
    auto source_for = [&](bool randomize) {
        MinibatchSourceConfig c;
        c.deserializers = {ctf_deserializer((dir / "data.ctf").string(),
                                            {{"features", "features", {4}}, {"labels", "labels", {3}}})};
        c.randomize = randomize;
        c.max_sweeps = 1;
        return std::make_shared<MinibatchSource>(c);
    };
    std::vector<std::pair<int64_t, double>> cv_calls;
    std::vector<std::pair<int64_t, int64_t>> cv_counts;
    CrossValidationConfig cv{
        .source = source_for(false), .frequency = {240, DataUnit::sample}, .minibatch_size = 50};
    cv.callback = [&](int64_t index, double metric, int64_t samples, int64_t minibatches) {
        cv_calls.emplace_back(index, metric);
        cv_counts.emplace_back(samples, minibatches);
        return true;
    };
    TestConfig test{.source = source_for(false), .minibatch_size = 100};
    const std::string ckp = (dir / "run.ckp").string();
    TrainingSession s(
        r.trainer, r.source, 32, {{r.x, "features"}, {r.y, "labels"}}, {1, DataUnit::sweep}, 720,
        CheckpointConfig{.filename = ckp, .frequency = {1, DataUnit::sweep}, .preserve_all = true}, cv, test);
    s.train();
    printer.reset();
    auto lines = read_lines(log);
    std::vector<std::string> epochs, evaluations;
    for (const auto& l : lines) {
        if (l.rfind("Finished Epoch[", 0) == 0) epochs.push_back(l);
        if (l.rfind("Finished Evaluation [", 0) == 0) evaluations.push_back(l);
    }
    // Three sweeps of 240 samples, one summary each; a cross-validation after each sweep reads all 240
    // samples in 5 minibatches of 50 (the last 40); the final test reads them in 3.
    ASSERT_EQ(epochs.size(), 3u);
    for (int k = 0; k < 3; ++k)
        EXPECT_TRUE(epochs[static_cast<size_t>(k)].starts_with("Finished Epoch[" + std::to_string(k + 1) +
                                                               " of 3]: [Training] loss = "))
            << epochs[static_cast<size_t>(k)];
    ASSERT_EQ(evaluations.size(), 4u);
    for (int k = 0; k < 3; ++k) {
        const std::string& e = evaluations[static_cast<size_t>(k)];
        EXPECT_TRUE(
            e.starts_with("Finished Evaluation [" + std::to_string(k + 1) + "]: Minibatch[1-5]: metric = "))
            << e;
        EXPECT_TRUE(e.ends_with("% * 240;")) << e;
    }
    EXPECT_TRUE(evaluations[3].starts_with("Finished Evaluation [4]: Minibatch[1-3]: metric = "))
        << evaluations[3];
    ASSERT_EQ(cv_calls.size(), 3u);
    for (int k = 0; k < 3; ++k) EXPECT_EQ(cv_calls[static_cast<size_t>(k)].first, k);
    for (const auto& [samples, minibatches] : cv_counts) {
        EXPECT_EQ(samples, 240);
        EXPECT_EQ(minibatches, 5);
    }
    // The model learns: the last cross-validation error is below the first.
    EXPECT_LT(cv_calls[2].second, cv_calls[0].second + 1e-12);
    // A checkpoint per sweep kept under CNTK's names (filename + index 0..2), the final one as the file.
    for (int k = 0; k < 3; ++k) {
        EXPECT_TRUE(fs::exists(ckp + std::to_string(k))) << k;
        EXPECT_TRUE(fs::exists(ckp + std::to_string(k) + ".ckp")) << k;
    }
    EXPECT_FALSE(fs::exists(ckp + "3"));
    EXPECT_TRUE(fs::exists(ckp));
    fs::remove_all(dir);
}

TEST(TrainingSession, RestoresTheNewestKeptCheckpointAndRunsACallbackOnlyCrossValidation) {
    fs::path dir = temp_dir("kept");
    write_ctf((dir / "data.ctf").string());
    const std::string ckp = (dir / "run").string();
    std::vector<std::vector<double>> calls;
    CrossValidationConfig cv{.frequency = {240, DataUnit::sample}};
    cv.callback = [&](int64_t index, double metric, int64_t samples, int64_t minibatches) {
        calls.push_back({double(index), metric, double(samples), double(minibatches)});
        return true;
    };
    auto session = [&](ResumableRun& r, int64_t max_samples) {
        return TrainingSession(
            r.trainer, r.source, 16, {{r.x, "features"}, {r.y, "labels"}}, {}, max_samples,
            CheckpointConfig{.filename = ckp, .frequency = {240, DataUnit::sample}, .preserve_all = true},
            cv);
    };
    ResumableRun first((dir / "data.ctf").string());
    session(first, 480).train();
    // Without a source the cross-validation is its callback alone, with CNTK's zeros.
    EXPECT_EQ(calls, (std::vector<std::vector<double>>{{0, 0, 0, 0}, {1, 0, 0, 0}}));
    // Kept: run0 (240 samples) and run1 (480); the final one is `run`. With `run` gone the next run starts
    // from run1, the newest kept one.
    EXPECT_TRUE(fs::exists(dir / "run1.ckp"));
    EXPECT_FALSE(fs::exists(dir / "run2"));
    for (const char* f : {"run", "run.ckp"}) fs::remove(dir / f);
    fs::copy_file(dir / "run0", dir / "run7");  // a number without its .ckp is not a checkpoint
    ResumableRun second((dir / "data.ctf").string());
    session(second, 720).train();
    EXPECT_EQ(second.trainer->total_number_of_samples_seen(), 720);
    EXPECT_EQ(calls.size(), 3u);                // one more cross-validation, at 720
    EXPECT_TRUE(fs::exists(dir / "run2.ckp"));  // the index went on from run1's
    EXPECT_FALSE(fs::exists(dir / "run3"));
    EXPECT_TRUE(fs::exists(dir / "run.ckp"));
    // With neither a source nor a callback a cross-validation config is refused.
    ResumableRun third((dir / "data.ctf").string());
    try {
        TrainingSession(third.trainer, third.source, 16, {{third.x, "features"}, {third.y, "labels"}}, {}, 48,
                        std::nullopt, CrossValidationConfig{});
        ADD_FAILURE() << "a cross-validation config without a source or a callback was taken";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("neither a source nor a callback"), std::string::npos)
            << e.what();
    }
    fs::remove_all(dir);
}

TEST(TrainingSession, BadDataStopsWithFileLineColumnAndKeepsTheCheckpoint) {
    fs::path dir = temp_dir("bad_data");
    write_ctf((dir / "data.ctf").string());
    // Line 200 of the data gets a malformed number: training reads 160 samples first.
    {
        std::ifstream in(dir / "data.ctf");
        std::vector<std::string> lines;
        for (std::string l; std::getline(in, l);) lines.push_back(l);
        lines[199] = "|labels 1 0 0 |features 0.5 0.2x 0.1 0.3";
        std::ofstream out(dir / "data.ctf");
        for (const auto& l : lines) out << l << "\n";
    }
    ResumableRun r((dir / "data.ctf").string());
    MinibatchSourceConfig c;
    c.deserializers = {ctf_deserializer((dir / "data.ctf").string(),
                                        {{"features", "features", {4}}, {"labels", "labels", {3}}}, 2048)};
    c.randomize = false;
    r.source = std::make_shared<MinibatchSource>(c);
    const std::string ckp = (dir / "run.ckp").string();
    try {
        r.train(ckp, 480);
        FAIL() << "the malformed line was not reported";
    } catch (const IOError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("data.ctf:200:"), std::string::npos) << what;
    }
    // The checkpoint written before the bad line is whole and restores.
    ASSERT_TRUE(fs::exists(ckp));
    EXPECT_FALSE(fs::exists(ckp + ".tmp"));
    ResumableRun fresh((dir / "data.ctf").string());
    Dictionary external = fresh.trainer->restore_from_checkpoint(ckp);
    EXPECT_GE(fresh.trainer->total_number_of_samples_seen(), 48);
    EXPECT_TRUE(external.contains("TrainingMinibatchSource"));
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ctk
