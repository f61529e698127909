// Training: CNTK's progress schedule and exact log lines, the Trainer's sums and updates, checkpoints,
// TensorBoard files, the allocator-free steady step. (training_session: session_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <tuple>

#include "ctk/core/rng.h"
#include "ctk/formats/model.h"
#include "ctk/layers.h"
#include "ctk/train.h"
#include "train/train_test_util.h"

namespace ctk {
namespace {

namespace fs = std::filesystem;
using test::read_lines;
using test::temp_dir;

TEST(Progress, PythonFloatRepr) {
    EXPECT_EQ(python_float_repr(0.001), "0.001");
    EXPECT_EQ(python_float_repr(1e-05), "1e-05");
    EXPECT_EQ(python_float_repr(0.0), "0.0");
    EXPECT_EQ(python_float_repr(1.0), "1.0");
    EXPECT_EQ(python_float_repr(0.9990239141819757), "0.9990239141819757");
    EXPECT_EQ(python_float_repr(123456.0), "123456.0");
    EXPECT_EQ(python_float_repr(1e16), "1e+16");
    EXPECT_EQ(python_float_repr(0.0001), "0.0001");
    EXPECT_EQ(python_float_repr(-2.5), "-2.5");
    EXPECT_EQ(python_float_repr(1.5e300), "1.5e+300");
}

struct Recorder : ProgressWriter {
    using ProgressWriter::ProgressWriter;
    std::vector<Range> updates;
    std::vector<std::pair<std::string, double>> values;
    void on_write_training_update(Range, Range u, Sums, std::optional<Sums>) override {
        updates.push_back(u);
    }
    void on_write_test_update(Range, Range, Sums) override {}
    void on_write_training_summary(int64_t, int64_t, int64_t, double, std::optional<double>,
                                   int64_t) override {}
    void on_write_test_summary(int64_t, int64_t, int64_t, double, int64_t) override {}
    void write(const std::string& k, double v) override { values.emplace_back(k, v); }
};

TEST(Progress, ArithmeticAndGeometricSchedules) {
    Recorder arithmetic(3, 2);
    for (int i = 0; i < 9; ++i) arithmetic.update_training(10, 1.0, std::nullopt);
    // CNTK writes each of the first `first` updates, then every `freq`-th.
    std::vector<ProgressWriter::Range> want{{0, 1}, {1, 2}, {2, 3}, {3, 6}, {6, 9}};
    EXPECT_EQ(arithmetic.updates, want);
    Recorder geometric(0, 0);
    for (int i = 0; i < 8; ++i) geometric.update_training(10, 1.0, std::nullopt);
    std::vector<ProgressWriter::Range> want_geo{{0, 1}, {1, 3}, {3, 7}};
    EXPECT_EQ(geometric.updates, want_geo);
    arithmetic.update_training(0, 1.0, std::nullopt);  // empty minibatches are not counted
    EXPECT_EQ(arithmetic.total_training_updates(), 9);
}

TEST(Progress, PrinterLinesAreCntksByteForByte) {
    fs::path dir = temp_dir("printer");
    const std::string log = (dir / "log.txt").string();
    {
        ProgressPrinter p(
            {.freq = 2, .tag = "Training", .log_to_file = log, .num_epochs = 10, .print_build_info = false});
        // Running sums as the Trainer passes them: loss 2.302585 per sample, 25% error, 64 samples each.
        double loss = 0, metric = 0;
        for (int i = 0; i < 4; ++i) {
            loss += 2.302585 * 64;
            metric += 16;
            p.update_training(64, loss, metric);
        }
        p.write("Learning rate per 1 samples", 0.001);
        p.write_training_summary(loss, metric);
        p.update_test(100, 7);
        p.write_test_summary(7);
        p.end_progress_print();
    }
    auto lines = read_lines(log);
    ASSERT_EQ(lines.size(), 10u);
    EXPECT_EQ(lines[0], log);
    EXPECT_EQ(lines[1], "CNTKCommandTrainInfo: train : 10");
    EXPECT_EQ(lines[2], "CNTKCommandTrainInfo: CNTKNoMoreCommands_Total : 10");
    EXPECT_EQ(lines[3], "CNTKCommandTrainBegin: train");
    EXPECT_EQ(lines[4], " Minibatch[   1-   2]: loss = 2.302585 * 128, metric = 25.00% * 128;");
    EXPECT_EQ(lines[5], " Minibatch[   3-   4]: loss = 2.302585 * 128, metric = 25.00% * 128;");
    EXPECT_EQ(lines[6], "Learning rate per 1 samples: 0.001");
    const std::string epoch =
        "Finished Epoch[1 of 10]: [Training] loss = 2.302585 * 256, metric = 25.00% * 256 ";
    EXPECT_EQ(lines[7].substr(0, epoch.size()), epoch);
    // Then "<seconds with 3 decimals>s (<rate %5.1f> samples/s);".
    const std::string tail = lines[7].substr(epoch.size());
    EXPECT_NE(tail.find("s ("), std::string::npos) << tail;
    EXPECT_EQ(tail.substr(tail.size() - 12), " samples/s);") << tail;
    EXPECT_EQ(lines[8], "Finished Evaluation [1]: Minibatch[1-1]: metric = 7.00% * 100;");
    EXPECT_EQ(lines[9], "CNTKCommandTrainEnd: train");
    fs::remove_all(dir);
}

TEST(Progress, ANanLossPrintsAsCntksPythonPrintedIt) {
    // A diverged run: the x86 default NaN (sign bit set) would print as "-nan"; CNTK's Python said "nan".
    fs::path dir = temp_dir("printer_nan");
    const std::string log = (dir / "log.txt").string();
    {
        ProgressPrinter p({.freq = 1, .tag = "Training", .log_to_file = log, .print_build_info = false});
        const double nan = -std::numeric_limits<double>::quiet_NaN();
        ASSERT_TRUE(std::signbit(nan));
        p.update_training(16, nan, nan);
        p.write_training_summary(nan, nan);
    }
    const auto lines = read_lines(log);
    ASSERT_GE(lines.size(), 2u);
    EXPECT_EQ(lines[lines.size() - 2], " Minibatch[   1-   1]: loss = nan * 16, metric = nan% * 16;");
    EXPECT_EQ(lines.back().substr(0, 55), "Finished Epoch[1]: [Training] loss = nan * 16, metric =");
    fs::remove_all(dir);
}

TEST(Progress, GeometricTableAndNoMetric) {
    fs::path dir = temp_dir("geo");
    const std::string log = (dir / "log.txt").string();
    {
        ProgressPrinter p({.freq = 0, .log_to_file = log, .print_build_info = false});
        p.update_training(10, 5.0, std::nullopt);
        p.update_training(10, 8.0, std::nullopt);
        p.update_training(10, 9.0, std::nullopt);
        p.write_training_summary(9.0, std::nullopt);  // not printed on a geometric schedule
    }
    auto lines = read_lines(log);
    ASSERT_EQ(lines.size(), 9u);
    EXPECT_EQ(lines[4], " average      since    average      since      examples");
    EXPECT_EQ(lines[5], "    loss       last     metric       last              ");
    EXPECT_EQ(lines[6], " ------------------------------------------------------");
    EXPECT_EQ(lines[7], "      0.5        0.5                                  10");
    EXPECT_EQ(lines[8], "      0.3        0.2                                  30");
    fs::remove_all(dir);
}

// A two-class logistic model on fixed data: the Trainer's sums and one SGD step checked by hand.
struct Logistic {
    Variable x = input_variable({2}, DataType::f64, false, false, default_batch_axes(), "x");
    Variable y = input_variable({2}, DataType::f64, false, false, default_batch_axes(), "y");
    Variable W = parameter({2, 2}, constant_initializer(0.0), DataType::f64, "W");
    FunctionPtr z = times(x, W);
    FunctionPtr loss = cross_entropy_with_softmax(z, y);
    FunctionPtr metric = classification_error(z, y);
};

TEST(Trainer, SumsLossAndMetricAndStepsLikeCntk) {
    Logistic m;
    auto learner = sgd({m.W}, learning_parameter_schedule(0.5));
    Trainer t(m.z, m.loss, m.metric, {learner});
    Tensor xv = Tensor::from_vector<double>({1, 0, 0, 1, 1, 1}, {3, 2});
    Tensor yv = Tensor::from_vector<double>({1, 0, 0, 1, 1, 0}, {3, 2});
    EXPECT_TRUE(t.train_minibatch({{m.x, Value(xv)}, {m.y, Value(yv)}}));
    EXPECT_EQ(t.previous_minibatch_sample_count(), 3);
    EXPECT_NEAR(t.previous_minibatch_loss_average(), std::log(2.0), 1e-12);    // W = 0: uniform softmax
    EXPECT_NEAR(t.previous_minibatch_evaluation_average(), 1.0 / 3.0, 1e-12);  // ties pick class 0: one miss
    // dLoss/dW = x^T (softmax - y) summed; the per-minibatch rate averages: W -= 0.5 / 3 * grad.
    Tensor W = m.W.value();
    const double g00 = (0.5 - 1) + 0 + (0.5 - 1), g01 = 0.5 + 0 + 0.5;
    const double g10 = 0 + (0.5 - 0) + (0.5 - 1), g11 = 0 + (0.5 - 1) + 0.5;
    EXPECT_NEAR(W.at({0, 0}), -0.5 / 3 * g00, 1e-12);
    EXPECT_NEAR(W.at({0, 1}), -0.5 / 3 * g01, 1e-12);
    EXPECT_NEAR(W.at({1, 0}), -0.5 / 3 * g10, 1e-12);
    EXPECT_NEAR(W.at({1, 1}), -0.5 / 3 * g11, 1e-12);
    EXPECT_EQ(t.total_number_of_samples_seen(), 3);
    const double test = t.test_minibatch({{m.x, Value(xv)}, {m.y, Value(yv)}});
    EXPECT_GE(test, 0.0);
    EXPECT_LE(test, 1.0);
    EXPECT_FALSE(t.train_minibatch(MinibatchArguments{}));
}

TEST(Trainer, CudaGraphSettingComesFromTheEnvironmentAndLeavesCpuStepsAlone) {
    auto run = [](const char* env, std::optional<bool> set) {
        if (env)
            ::setenv("CTK_CUDA_GRAPH", env, 1);
        else
            ::unsetenv("CTK_CUDA_GRAPH");
        Logistic m;
        Trainer t(m.z, m.loss, m.metric, {sgd({m.W}, learning_parameter_schedule(0.5))});
        if (set) t.set_cuda_graph(*set);
        Tensor xv = Tensor::from_vector<double>({1, 0, 0, 1, 1, 1}, {3, 2});
        Tensor yv = Tensor::from_vector<double>({1, 0, 0, 1, 1, 0}, {3, 2});
        for (int i = 0; i < 3; ++i) EXPECT_TRUE(t.train_minibatch({{m.x, Value(xv)}, {m.y, Value(yv)}}));
        EXPECT_EQ(t.cuda_graph_replays(), 0);  // graphs are for GPU steps only
        return std::make_tuple(t.cuda_graph(), t.cuda_graph_status(), m.W.value().to_vector<double>());
    };
    const auto off = run(nullptr, std::nullopt);
    EXPECT_FALSE(std::get<0>(off));
    EXPECT_EQ(std::get<1>(off), "CUDA Graphs are off");
    const auto on = run("1", std::nullopt);
    EXPECT_TRUE(std::get<0>(on));
    EXPECT_EQ(std::get<1>(on), "no step has run on a GPU yet");
    EXPECT_EQ(std::get<2>(on), std::get<2>(off));
    EXPECT_FALSE(std::get<0>(run("1", false))) << "an explicit setting wins";
    EXPECT_TRUE(std::get<0>(run("off", true)));
    EXPECT_FALSE(std::get<0>(run("false", std::nullopt)));
    try {
        run("yes please", std::nullopt);
        ADD_FAILURE() << "no error";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("CTK_CUDA_GRAPH"), std::string::npos) << e.what();
    }
    ::unsetenv("CTK_CUDA_GRAPH");
}

TEST(Evaluator, AveragesTheMetricAndPrintsCntksSummary) {
    Logistic m;
    fs::path dir = temp_dir("evaluator");
    const std::string log = (dir / "log.txt").string();
    auto printer = std::make_shared<ProgressPrinter>(
        ProgressPrinterOptions{.log_to_file = log, .print_build_info = false});
    Evaluator e(m.metric, {printer});
    Tensor xv = Tensor::from_vector<double>({1, 0, 0, 1, 1, 1}, {3, 2});
    Tensor yv = Tensor::from_vector<double>({1, 0, 0, 1, 1, 0}, {3, 2});
    EXPECT_NEAR(e.test_minibatch({{m.x, Value(xv)}, {m.y, Value(yv)}}), 1.0 / 3.0, 1e-12);
    EXPECT_NEAR(e.test_minibatch({{m.x, Value(xv)}, {m.y, Value(yv)}}), 1.0 / 3.0, 1e-12);
    e.summarize_test_progress();
    printer.reset();
    auto lines = read_lines(log);
    ASSERT_FALSE(lines.empty());
    EXPECT_EQ(lines.back(), "Finished Evaluation [1]: Minibatch[1-2]: metric = 33.33% * 6;");
    EXPECT_THROW(Evaluator(nullptr), ValueError);
    fs::remove_all(dir);
}

TEST(Trainer, RejectsForeignParametersAndUnknownStreams) {
    Logistic m;
    Variable stranger = parameter({2}, constant_initializer(0.0), DataType::f64, "stranger");
    EXPECT_THROW(Trainer(m.z, m.loss, m.metric, {sgd({m.W, stranger}, learning_parameter_schedule(0.1))}),
                 ValueError);
    EXPECT_THROW(Trainer(m.z, m.loss, m.metric, {}), ValueError);
    Trainer t(m.z, m.loss, m.metric, {sgd({m.W}, learning_parameter_schedule(0.1))});
    std::unordered_map<std::string, MinibatchData> mb;
    mb["features"].data = Value(Tensor::zeros({1, 1, 2}, DataType::f32));
    try {
        t.train_minibatch(mb, {{m.x, "features"}, {m.y, "labelz"}});
        FAIL() << "no error";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("labelz"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("features"), std::string::npos) << e.what();
    }
}

std::string test_read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// ---- TensorBoard ----

// A reader for the TensorBoard event file, independent of the writer: records with their CRCs checked,
// Events with their step, file_version and (tag, simple_value) pairs.
struct TbEvent {
    int64_t step = 0;
    std::string file_version, tag;
    float value = 0;
};
uint32_t read_u32(const std::string& b, size_t at) {
    uint32_t v;
    std::memcpy(&v, b.data() + at, 4);
    return v;
}
uint64_t varint(const std::string& b, size_t& at) {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
        const auto c = static_cast<unsigned char>(b.at(at++));
        v |= static_cast<uint64_t>(c & 0x7f) << shift;
        if (!(c & 0x80)) return v;
    }
}
// Calls f(field, wire type, position) for each field of message b[begin, end).
template <typename F>
void fields(const std::string& b, size_t begin, size_t end, F&& f) {
    size_t at = begin;
    while (at < end) {
        const uint64_t key = varint(b, at);
        const int field = static_cast<int>(key >> 3), wire = static_cast<int>(key & 7);
        size_t len = wire == 0 ? 0 : wire == 1 ? 8 : wire == 5 ? 4 : 0;
        size_t start = at;
        if (wire == 0) {
            varint(b, at);
            f(field, wire, start, at);
            continue;
        }
        if (wire == 2) {
            len = varint(b, at);
            start = at;
        }
        f(field, wire, start, start + len);
        at = start + len;
    }
}
std::vector<TbEvent> read_events(const std::string& path) {
    const std::string b = test_read_bytes(path);
    auto masked = [](const std::string& bytes) {
        const uint32_t c = crc32c(bytes);
        return ((c >> 15) | (c << 17)) + 0xa282ead8u;
    };
    std::vector<TbEvent> out;
    size_t at = 0;
    while (at < b.size()) {
        uint64_t len;
        std::memcpy(&len, b.data() + at, 8);
        EXPECT_EQ(read_u32(b, at + 8), masked(b.substr(at, 8)));
        const std::string data = b.substr(at + 12, len);
        EXPECT_EQ(read_u32(b, at + 12 + len), masked(data));
        at += 16 + len;
        TbEvent e;
        fields(data, 0, data.size(), [&](int field, int, size_t begin, size_t end) {
            if (field == 2) {
                size_t p = begin;
                e.step = static_cast<int64_t>(varint(data, p));
            } else if (field == 3) {
                e.file_version = data.substr(begin, end - begin);
            } else if (field == 5) {
                fields(data, begin, end, [&](int, int, size_t vb, size_t ve) {  // Summary.value
                    fields(data, vb, ve, [&](int vf, int, size_t b2, size_t e2) {
                        if (vf == 1) e.tag = data.substr(b2, e2 - b2);
                        if (vf == 2) std::memcpy(&e.value, data.data() + b2, 4);
                    });
                });
            }
        });
        out.push_back(e);
    }
    return out;
}

TEST(TensorBoard, Crc32cMatchesTheCastagnoliCheckValue) {
    EXPECT_EQ(crc32c("123456789"), 0xE3069283u);
    EXPECT_EQ(crc32c(""), 0u);
}

TEST(TensorBoard, WritesCntksScalarsAsAnEventFile) {
    fs::path dir = temp_dir("tensorboard");
    Logistic m;
    auto tb = std::make_shared<TensorBoardProgressWriter>(1, dir.string());
    Trainer t(m.z, m.loss, m.metric, {sgd({m.W}, learning_parameter_schedule(0.5))}, {tb});
    Tensor xv = Tensor::from_vector<double>({1, 0, 0, 1}, {2, 2});
    MinibatchArguments args{{m.x, Value(xv)}, {m.y, Value(xv)}};
    t.train_minibatch(args);
    const double first_loss = t.previous_minibatch_loss_average();
    t.train_minibatch(args);
    t.summarize_training_progress();
    tb->write_value("custom", 2.5, 7);
    tb->close();
    EXPECT_THROW(tb->write_value("late", 1, 1), Error);
    ASSERT_EQ(tb->file_path().rfind((dir / "events.out.tfevents.").string(), 0), 0u) << tb->file_path();
    const auto events = read_events(tb->file_path());
    ASSERT_EQ(events.size(), 8u);
    EXPECT_EQ(events[0].file_version, "brain.Event:2");
    EXPECT_EQ(events[1].tag, "minibatch/avg_loss");
    EXPECT_EQ(events[1].step, 1);
    EXPECT_NEAR(events[1].value, first_loss, 1e-6);
    EXPECT_EQ(events[2].tag, "minibatch/avg_metric");
    EXPECT_EQ(events[3].step, 2);
    EXPECT_EQ(events[5].tag, "summary/avg_loss");
    EXPECT_EQ(events[5].step, 1);
    EXPECT_EQ(events[6].tag, "summary/avg_metric");
    EXPECT_EQ(events[7].tag, "custom");
    EXPECT_EQ(events[7].step, 7);
    EXPECT_FLOAT_EQ(events[7].value, 2.5f);
    // Other ranks write nothing.
    TensorBoardProgressWriter other(std::nullopt, (dir / "rank1").string(), 1);
    EXPECT_TRUE(other.file_path().empty());
    fs::remove_all(dir);
}

// A save interrupted after the new state replaced `path.ckp` but before `path.new` was renamed over
// `path`: the restore finishes the save and gets the newer checkpoint whole.
TEST(Trainer, InterruptedCheckpointSaveIsFinishedOnRestore) {
    fs::path dir = temp_dir("ckp_interrupted");
    Logistic m;
    auto learner = momentum_sgd({m.W}, learning_parameter_schedule(0.5), momentum_schedule(0.9));
    Trainer t(m.z, m.loss, m.metric, {learner});
    Tensor xv = Tensor::from_vector<double>({1, 0, 0, 1}, {2, 2});
    MinibatchArguments args{{m.x, Value(xv)}, {m.y, Value(xv)}};
    t.train_minibatch(args);
    const std::string path = (dir / "run.dnn").string(), newer = (dir / "newer.dnn").string();
    t.save_checkpoint(path, Dictionary{{"step", int64_t(1)}});
    t.train_minibatch(args);
    const Tensor at_two = m.W.value().clone();
    t.save_checkpoint(newer, Dictionary{{"step", int64_t(2)}});
    fs::copy_file(newer, path + ".new");
    fs::copy_file(newer + ".ckp", path + ".ckp", fs::copy_options::overwrite_existing);
    t.train_minibatch(args);
    Dictionary external = t.restore_from_checkpoint(path);
    EXPECT_EQ(external.at("step").as_int(), 2);
    EXPECT_EQ(m.W.value().to_vector<double>(), at_two.to_vector<double>());
    EXPECT_FALSE(fs::exists(path + ".new"));
    fs::remove_all(dir);
}

TEST(Trainer, CheckpointRoundTripAndBadFiles) {
    fs::path dir = temp_dir("ckp");
    Logistic m;
    auto learner = momentum_sgd({m.W}, learning_parameter_schedule(0.5), momentum_schedule(0.9));
    Trainer t(m.z, m.loss, m.metric, {learner});
    Tensor xv = Tensor::from_vector<double>({1, 0, 0, 1}, {2, 2});
    Tensor yv = Tensor::from_vector<double>({1, 0, 0, 1}, {2, 2});
    MinibatchArguments args{{m.x, Value(xv)}, {m.y, Value(yv)}};
    t.train_minibatch(args);
    const std::string path = (dir / "model.ckp").string();
    t.save_checkpoint(path, Dictionary{{"epoch", int64_t(3)}});
    t.train_minibatch(args);
    const Tensor after_two = m.W.value().clone();
    Dictionary external = t.restore_from_checkpoint(path);
    EXPECT_EQ(external.at("epoch").as_int(), 3);
    t.train_minibatch(args);  // the momentum state came back too: the same second step
    EXPECT_EQ(m.W.value().to_vector<double>(), after_two.to_vector<double>());
    // CNTK's layout: a CNTK v2 model at `path` and the trainer state in `path.ckp`.
    EXPECT_EQ(detect_model_format(path), ModelFormat::cntk_v2);
    const Dictionary state = load_cntk_dictionary(path + ".ckp");
    EXPECT_EQ(state.at("Version").as_int(), 1);
    EXPECT_EQ(state.at("Learners").as_list().size(), 1u);
    EXPECT_EQ(state.at("ExternalState").as_dictionary().at("epoch").as_int(), 3);
    EXPECT_FALSE(fs::exists(path + ".new"));
    // A corrupt model or state fails cleanly and changes nothing.
    const std::string bytes = test_read_bytes(path);
    const std::string bad = (dir / "bad.dnn").string();
    std::ofstream(bad, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
    fs::copy_file(path + ".ckp", bad + ".ckp");
    const Tensor before = m.W.value().clone();
    EXPECT_THROW(t.restore_from_checkpoint(bad), IOError);  // the checksum differs, no .new to finish from
    const std::string bad_state = (dir / "bad_state.dnn").string();
    fs::copy_file(path, bad_state);
    const std::string state_bytes = test_read_bytes(path + ".ckp");
    std::ofstream(bad_state + ".ckp", std::ios::binary) << state_bytes.substr(0, state_bytes.size() / 2);
    EXPECT_THROW(t.restore_from_checkpoint(bad_state), IOError);
    EXPECT_THROW(t.restore_from_checkpoint((dir / "missing.ckp").string()), IOError);
    EXPECT_EQ(m.W.value().to_vector<double>(), before.to_vector<double>());
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ctk

namespace ctk {
namespace {

// After the first steps (which create the learners' state and fill the allocator's cache), a training
// step of a ConvNet takes every tensor from the cache: it asks the system for no memory.
TEST(Trainer, SteadyStateStepCallsNoAllocator) {
    Allocator& a = cpu_allocator();
    const size_t saved_limit = a.cache_limit();
    a.set_cache_limit(size_t(1) << 30);  // 0 in sanitizer builds
    {
        Variable x = input_variable({1, 12, 12}, DataType::f32);
        Variable y = input_variable({10}, DataType::f32);
        FunctionPtr z;
        {
            using namespace layers;
            default_options options({.activation = ActivationFn([](const Variable& v) { return relu(v); })});
            ConvolutionOptions same;
            same.pad = true;
            FunctionPtr c1 = call(Convolution2D({3, 3}, 8, same), x);
            FunctionPtr p1 = call(MaxPooling({2, 2}, {2, 2}), c1);
            FunctionPtr f = call(Dense({32}), p1);
            FunctionPtr d = call(Dropout(0.5), f);
            z = call(Dense({10}, ActivationFn()), d);
        }
        FunctionPtr loss = cross_entropy_with_softmax(z, y);
        FunctionPtr metric = classification_error(z, y);
        auto learner = adam(z->parameters(), learning_parameter_schedule(0.01), momentum_schedule(0.9));
        Trainer t(z, loss, metric, {learner});
        Tensor xv = Tensor::empty(Shape{16, 1, 12, 12}), yv = Tensor::zeros(Shape{16, 10});
        Generator(5).uniform(xv, 0.0, 1.0);
        for (int64_t i = 0; i < 16; ++i) yv.set({i, i % 10}, 1.0);
        MinibatchArguments mb{{x, Value(xv)}, {y, Value(yv)}};
        for (int step = 0; step < 3; ++step) t.train_minibatch(mb);
        const AllocatorStats before = a.stats();
        for (int step = 0; step < 5; ++step) t.train_minibatch(mb);
        const AllocatorStats after = a.stats();
        // The step's memory plan serves every block the step makes and drops (memory_plan.h).
        const MemoryPlanStats plan = t.step_memory();
        EXPECT_EQ(after.num_allocations - before.num_allocations, 0)
            << plan.escaped_blocks << " blocks outlive a step, " << plan.last_run_misses
            << " missed the plan";
        EXPECT_EQ(plan.last_run_misses, 0);
        EXPECT_EQ(plan.last_run_from_arena, plan.last_run_blocks);
        EXPECT_GT(plan.planned_blocks, 50);
        EXPECT_GE(plan.arena_bytes, plan.planned_peak_bytes);
        EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);  // nothing accumulates from step to step
    }
    a.set_cache_limit(saved_limit);
}

}  // namespace
}  // namespace ctk

namespace ctk {
namespace {

// A sparse CTF stream of word ids reaches the trainer as a one-hot Value (indices, no dense rows), feeds
// an embedding (times), and trains to the same parameters as the same words given as dense rows.
TEST(Trainer, SparseOneHotStreamTrainsLikeDenseRows) {
    fs::path dir = temp_dir("sparse");
    const int64_t vocab = 50;
    {
        std::ofstream f(dir / "words.ctf");
        for (int s = 0; s < 24; ++s) {
            const int len = 1 + s % 4;
            for (int t = 0; t < len; ++t) {
                f << s << " |w " << (s * 7 + t * 3) % vocab << ":1";
                if (t == 0) f << " |y " << (s % 3 == 0 ? "1 0" : "0 1");
                f << "\n";
            }
        }
    }
    auto build = [&](Variable& w, Variable& y, FunctionPtr& z, FunctionPtr& loss) {
        set_fixed_random_seed(11);
        w = sequence_input_variable({vocab}, DataType::f32, false, true, Axis::default_dynamic_axis(), "w");
        y = input_variable({2}, DataType::f32, false, false, default_batch_axes(), "y");
        Variable emb = parameter({vocab, 8}, glorot_uniform(), DataType::f32, "E");
        Variable out = parameter({8, 2}, glorot_uniform(), DataType::f32, "O");
        z = times(sequence::reduce_sum(times(w, emb)), out);
        loss = cross_entropy_with_softmax(z, y);
    };
    MinibatchSourceConfig c;
    c.deserializers = {ctf_deserializer((dir / "words.ctf").string(), {{"words", "w", {vocab}, true, false},
                                                                       {"labels", "y", {2}, false, false}})};
    c.randomize = false;
    MinibatchSource source(c);
    std::vector<std::unordered_map<std::string, MinibatchData>> mbs;
    for (int i = 0; i < 3; ++i) mbs.push_back(source.next_minibatch(20));
    ASSERT_TRUE(mbs[0].at("words").data.is_one_hot());
    EXPECT_EQ(mbs[0].at("words").data.one_hot_indices().dtype(), DataType::i64);

    std::vector<std::vector<float>> result[2];
    for (int dense = 0; dense < 2; ++dense) {
        Variable w, y;
        FunctionPtr z, loss;
        build(w, y, z, loss);
        Trainer t(z, loss, nullptr, {sgd(z->parameters(), learning_parameter_schedule(0.5))});
        for (const auto& mb : mbs) {
            MinibatchArguments args = bind_minibatch(mb, {{w, "words"}, {y, "labels"}});
            if (dense) args[w] = Value(args.at(w).data().clone(), args.at(w).layout());
            ASSERT_EQ(args.at(w).is_one_hot(), dense == 0);
            t.train_minibatch(args);
        }
        for (const Variable& p : z->parameters()) result[dense].push_back(p.value().to_vector<float>());
    }
    ASSERT_EQ(result[0].size(), result[1].size());
    for (size_t p = 0; p < result[0].size(); ++p)
        for (size_t i = 0; i < result[0][p].size(); ++i) EXPECT_NEAR(result[0][p][i], result[1][p][i], 1e-6);
    fs::remove_all(dir);
}

}  // namespace
}  // namespace ctk
