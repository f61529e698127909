// ONNX Scan: ctk's recurrent loops (past_value / future_value cycles) exported as Scan and read back as
// ctk loops; ctk -> ONNX -> ctk round trips must give ctk's outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ctk/formats/model.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/layers.h"
#include "formats/formats_test_util.h"

namespace ctk {
namespace {

using namespace layers;

Variable seq_input(const Dims& shape, const std::string& name) {
    return sequence_input_variable(shape, DataType::f32, false, false, Axis::default_dynamic_axis(), name);
}

std::vector<Tensor> random_sequences(const std::vector<int64_t>& lengths, int64_t dim, uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<Tensor> seqs;
    for (int64_t len : lengths) {
        std::vector<float> v(static_cast<size_t>(len * dim));
        for (float& x : v) x = u(gen);
        seqs.push_back(Tensor::from_vector<float>(v, {len, dim}));
    }
    return seqs;
}

// Saves `model` as ONNX, loads it back and compares every output on `lengths` sequences (1e-5).
FunctionPtr expect_round_trip(const FunctionPtr& model, const std::string& tag,
                              const std::vector<int64_t>& lengths) {
    SCOPED_TRACE(tag);
    const std::string dir = test::temp_dir("onnx_scan_" + tag);
    for (int64_t opset = 13; opset < 17; ++opset)  // ONNX's checker passes them at every opset ctk writes
        EXPECT_NO_THROW(save_onnx_model(model, dir + "/model" + std::to_string(opset) + ".onnx", opset))
            << opset;
    const std::string path = dir + "/model.onnx";
    save_onnx_model(model, path);
    FunctionPtr loaded = load_onnx_model(path);
    const Variable x = model->arguments().at(0);
    EXPECT_EQ(loaded->arguments().size(), 1u);
    const Variable lx = loaded->arguments()[0];
    EXPECT_TRUE(lx.has_batch_axis() && lx.has_sequence_axis()) << lx.to_string();
    const Value in = Value::from_sequences(random_sequences(lengths, x.shape().at(0), 5));
    ValueMap ya = model->eval({{x, in}}), yb = loaded->eval({{lx, in}});
    const auto outs_a = model->outputs(), outs_b = loaded->outputs();
    EXPECT_EQ(outs_a.size(), outs_b.size());
    for (size_t i = 0; i < outs_a.size() && i < outs_b.size(); ++i) {
        EXPECT_EQ(outs_a[i].has_sequence_axis(), outs_b[i].has_sequence_axis()) << "output " << i;
        const Tensor ta = ya.at(outs_a[i]).data(), tb = yb.at(outs_b[i]).data();
        EXPECT_EQ(ta.shape(), tb.shape()) << "output " << i;
        if (ta.shape() != tb.shape()) continue;
        const auto va = ta.to_vector<double>(), vb = tb.to_vector<double>();
        size_t bad = 0;
        for (size_t k = 0; k < va.size(); ++k)
            if (std::abs(va[k] - vb[k]) > 1e-5 * (1 + std::abs(va[k])) && bad++ < 5)
                ADD_FAILURE() << "output " << i << " element " << k << ": " << va[k] << " vs " << vb[k];
    }
    return loaded;
}

// A hand-written simple RNN: h = tanh(x W + past_value(h) U + b).
FunctionPtr simple_rnn(const Variable& x, int64_t hidden) {
    Variable W =
        parameter_from(Tensor::from_vector<float>({0.5f, -0.3f, 0.2f, 0.8f, 0.1f, -0.6f}, {2, 3}), "W");
    Variable U = parameter_from(
        Tensor::from_vector<float>({0.3f, -0.2f, 0.1f, 0.4f, 0.5f, -0.1f, -0.3f, 0.2f, 0.6f}, {3, 3}), "U");
    Variable b = parameter_from(Tensor::from_vector<float>({0.1f, -0.1f, 0.05f}, {3}), "b");
    EXPECT_EQ(hidden, 3);
    Variable h_prev = placeholder(Dims{hidden}, default_sequence_axes(), "h_prev");
    Variable h = tanh(plus(plus(times(x, W), times(sequence::past_value(h_prev), U)), b), "h");
    h.owner()->replace_placeholders({{h_prev, h}});
    return h.owner();
}

TEST(OnnxScan, SimpleRnnRoundTrip) {
    Variable x = seq_input({2}, "x");
    expect_round_trip(simple_rnn(x, 3), "rnn", {4, 4, 4});
}

TEST(OnnxScan, LstmRecurrenceRoundTrip) {
    Variable x = seq_input({3}, "x");
    expect_round_trip(call(Recurrence(LSTM({4}, RecurrentOptions{.init_bias = 0.1})), x), "lstm", {3, 3});
}

TEST(OnnxScan, GruFoldRoundTrip) {
    Variable x = seq_input({2}, "x");
    FunctionPtr f = call(Fold(GRU({3})), x);
    ASSERT_FALSE(f->output().has_sequence_axis());
    expect_round_trip(f, "gru_fold", {5, 5});
}

TEST(OnnxScan, BackwardRnnStepRoundTrip) {
    Variable x = seq_input({2}, "x");
    expect_round_trip(call(Recurrence(RNNStep({2}), /*go_backwards=*/true), x), "rnn_back", {3, 3, 3});
}

TEST(OnnxScan, LstmClassifierRoundTrip) {
    Variable x = seq_input({3}, "x");
    FunctionPtr f = call(Dense({5}), call(Recurrence(LSTM({4})), x));
    expect_round_trip(f, "lstm_dense", {4, 4});
}

// ctk's import runs a ctk-exported Scan per sequence, so unequal lengths give ctk's results (an ONNX
// runtime steps every sequence over the padded frames instead).
TEST(OnnxScan, UnequalLengthsKeepCtkSemantics) {
    Variable x = seq_input({3}, "x");
    expect_round_trip(call(Recurrence(LSTM({4})), x), "lstm_unequal", {4, 2, 1});
    expect_round_trip(call(Fold(GRU({3})), x), "gru_fold_unequal", {2, 5});
    expect_round_trip(call(Recurrence(RNNStep({2}), true), x), "rnn_back_unequal", {3, 1});
}

TEST(OnnxScan, ExportedAgainAfterImport) {
    Variable x = seq_input({3}, "x");
    FunctionPtr loaded = expect_round_trip(call(Recurrence(LSTM({4})), x), "lstm_again", {2, 2});
    expect_round_trip(loaded, "lstm_again2", {3, 3});
}

void expect_refused(const FunctionPtr& f, const std::vector<std::string>& words) {
    try {
        save_onnx_model(f, test::temp_dir("onnx_scan_refused") + "/m.onnx");
        ADD_FAILURE() << f->to_string() << " should not export";
    } catch (const NotImplementedError& e) {
        for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
    }
}

TEST(OnnxScan, RefusedLoops) {
    Variable x = seq_input({2}, "x");
    // An offset other than 1.
    expect_refused(sequence::past_value(x, {}, 2, "delayed2"), {"past_value", "delayed2", "offset of 2"});
    // A loop through both a past_value and a future_value.
    Variable p = placeholder(Dims{2}, default_sequence_axes(), "p");
    Variable h =
        plus(plus(x, sequence::past_value(p, {}, 1, "back")), sequence::future_value(p, {}, 1, "fwd"));
    h.owner()->replace_placeholders({{p, h}});
    expect_refused(h.owner(), {"mixes past_value and future_value"});
    // Sequence ops other than the final state of a loop stay unexported.
    expect_refused(sequence::reduce_sum(x, "total"), {"total"});
}

}  // namespace
}  // namespace ctk
