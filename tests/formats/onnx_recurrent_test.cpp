// ONNX's RNN, GRU and LSTM imported as ctk recurrent loops, checked against a plain double-precision
// reference of ONNX's equations (Operators.md).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ctk/formats/model.h"
#include "ctk/graph/graph_ops.h"
#include "formats/onnx_test_util.h"

namespace ctk {
namespace {

using test::Pb;
using test::random_tensor;
using test::write_temp;

// ---- RNN, GRU and LSTM import against a plain reference of ONNX's equations (Operators.md) ----

struct RecurrentCase {
    std::string op;  // RNN, GRU, LSTM
    std::string direction;
    int64_t layout = 0;
    bool linear_before_reset = false;
    double clip = 0;  // 0: none
    bool peepholes = false;
};

Pb attr_int(const std::string& name, int64_t v) {
    return Pb().bytes(1, name).i(3, static_cast<uint64_t>(v)).i(20, 2);
}

// One recurrent node whose operands are all graph inputs: X, W, R, B, sequence_lens, initial_h
// (LSTM: initial_c, P); outputs Y, Y_h (LSTM: Y_c).
std::string recurrent_model(const RecurrentCase& rc, const std::vector<std::pair<std::string, Dims>>& ins,
                            int64_t hidden) {
    Pb node;
    for (const auto& [name, dims] : ins) node.bytes(1, name);
    const std::vector<std::string> outs =
        rc.op == "LSTM" ? std::vector<std::string>{"Y", "Y_h", "Y_c"} : std::vector<std::string>{"Y", "Y_h"};
    for (const auto& o : outs) node.bytes(2, o);
    node.bytes(3, "rec").bytes(4, rc.op);
    node.msg(5, attr_int("hidden_size", hidden)).msg(5, attr_int("layout", rc.layout));
    node.msg(5, Pb().bytes(1, "direction").bytes(4, rc.direction).i(20, 3));
    if (rc.linear_before_reset) node.msg(5, attr_int("linear_before_reset", 1));
    if (rc.clip > 0) {
        const float f = static_cast<float>(rc.clip);
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        std::string raw(4, '\0');
        std::memcpy(raw.data(), &bits, 4);
        Pb a;
        a.bytes(1, "clip");
        a.varint((2 << 3) | 5);
        a.s += raw;
        node.msg(5, a.i(20, 1));
    }
    Pb graph;
    graph.msg(1, node).bytes(2, "g");
    for (const auto& [name, dims] : ins) {
        Pb shape;
        int symbolic = 0;  // dims given as -1 are ctk's symbolic "batch" and "sequence"
        for (int64_t d : dims)
            shape.msg(1, d >= 0 ? Pb().i(1, static_cast<uint64_t>(d))
                                : Pb().bytes(2, symbolic++ == 0 ? "batch" : "sequence"));
        const int elem = name == "sequence_lens" ? 6 : 1;
        graph.msg(11, Pb().bytes(1, name).msg(2, Pb().msg(1, Pb().i(1, elem).msg(2, shape))));
    }
    for (const auto& o : outs) graph.msg(12, Pb().bytes(1, o).msg(2, Pb().msg(1, Pb().i(1, 1))));
    Pb model;
    model.i(1, 8).msg(8, Pb().bytes(1, "").i(2, 14)).msg(7, graph);
    return model.s;
}

double sigmoid_ref(double v) {
    return 1.0 / (1.0 + std::exp(-v));
}

// The node in double precision, straight from ONNX's equations; sequence b runs lens[b] steps and Y is 0
// past its end. Returns Y, Y_h (and Y_c) in the node's layout.
std::vector<std::vector<double>> recurrent_reference(const RecurrentCase& rc,
                                                     std::map<std::string, Tensor>& in, int64_t T, int64_t B,
                                                     int64_t I, int64_t H, const std::vector<int64_t>& lens) {
    const int64_t D = rc.direction == "bidirectional" ? 2 : 1, G = rc.op == "RNN"   ? 1
                                                                   : rc.op == "GRU" ? 3
                                                                                    : 4;
    auto vec = [&](const char* k) { return in.at(k).to_vector<double>(); };
    const auto x = vec("X"), w = vec("W"), r = vec("R"), bias = vec("B"), h0 = vec("initial_h");
    const auto c0 = rc.op == "LSTM" ? vec("initial_c") : std::vector<double>{};
    const auto p = rc.op == "LSTM" ? vec("P") : std::vector<double>{};
    auto cl = [&](double v) { return rc.clip > 0 ? std::clamp(v, -rc.clip, rc.clip) : v; };
    std::vector<double> y(static_cast<size_t>(T * D * B * H), 0.0), yh(static_cast<size_t>(D * B * H)),
        yc(yh);
    auto yi = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
        return static_cast<size_t>(rc.layout == 0 ? ((t * D + d) * B + b) * H + j
                                                  : ((b * T + t) * D + d) * H + j);
    };
    auto si = [&](int64_t d, int64_t b, int64_t j) {
        return static_cast<size_t>(rc.layout == 0 ? (d * B + b) * H + j : (b * D + d) * H + j);
    };
    for (int64_t d = 0; d < D; ++d)
        for (int64_t b = 0; b < B; ++b) {
            std::vector<double> h(static_cast<size_t>(H)), c(static_cast<size_t>(H), 0.0);
            for (int64_t j = 0; j < H; ++j) {
                h[size_t(j)] = h0[size_t((d * B + b) * H + j)];
                if (!c0.empty()) c[size_t(j)] = c0[size_t((d * B + b) * H + j)];
            }
            const bool rev = rc.direction == "reverse" || d == 1;
            for (int64_t s = 0; s < lens[size_t(b)]; ++s) {
                const int64_t t = rev ? lens[size_t(b)] - 1 - s : s;
                // xw[g*H+j] = x W^T, hr = h R^T, wb / rb the biases
                std::vector<double> xw(size_t(G * H), 0.0), hr(size_t(G * H), 0.0), wb(xw), rb(xw);
                for (int64_t k = 0; k < G * H; ++k) {
                    for (int64_t i = 0; i < I; ++i) {
                        const double xv =
                            x[size_t(rc.layout == 0 ? (t * B + b) * I + i : (b * T + t) * I + i)];
                        xw[size_t(k)] += xv * w[size_t((d * G * H + k) * I + i)];
                    }
                    for (int64_t i = 0; i < H; ++i)
                        hr[size_t(k)] += h[size_t(i)] * r[size_t((d * G * H + k) * H + i)];
                    wb[size_t(k)] = bias[size_t(d * 2 * G * H + k)];
                    rb[size_t(k)] = bias[size_t(d * 2 * G * H + G * H + k)];
                }
                std::vector<double> hn(static_cast<size_t>(H)), cn(static_cast<size_t>(H));
                auto at = [&](const std::vector<double>& v, int64_t g, int64_t j) {
                    return v[size_t(g * H + j)];
                };
                for (int64_t j = 0; j < H; ++j) {
                    auto gate = [&](int64_t g) {
                        return at(xw, g, j) + at(hr, g, j) + at(wb, g, j) + at(rb, g, j);
                    };
                    if (rc.op == "RNN") {
                        hn[size_t(j)] = std::tanh(cl(gate(0)));
                    } else if (rc.op == "GRU") {
                        const double z = sigmoid_ref(cl(gate(0)));
                        double hh_in;
                        if (rc.linear_before_reset) {
                            const double rr = sigmoid_ref(cl(gate(1)));
                            hh_in = at(xw, 2, j) + rr * (at(hr, 2, j) + at(rb, 2, j)) + at(wb, 2, j);
                        } else {
                            double rh_r = 0;  // (r (.) h) Rh^T
                            for (int64_t k = 0; k < H; ++k) {
                                double gk = at(xw, 1, k) + at(hr, 1, k) + at(wb, 1, k) + at(rb, 1, k);
                                rh_r += sigmoid_ref(cl(gk)) * h[size_t(k)] *
                                        r[size_t((d * G * H + 2 * H + j) * H + k)];
                            }
                            hh_in = at(xw, 2, j) + rh_r + at(rb, 2, j) + at(wb, 2, j);
                        }
                        hn[size_t(j)] = (1 - z) * std::tanh(cl(hh_in)) + z * h[size_t(j)];
                    } else {
                        const double pi = rc.peepholes ? p[size_t(d * 3 * H + j)] : 0.0;
                        const double po = rc.peepholes ? p[size_t(d * 3 * H + H + j)] : 0.0;
                        const double pf = rc.peepholes ? p[size_t(d * 3 * H + 2 * H + j)] : 0.0;
                        const double ig = sigmoid_ref(cl(gate(0) + pi * c[size_t(j)]));
                        const double fg = sigmoid_ref(cl(gate(2) + pf * c[size_t(j)]));
                        const double cc = std::tanh(cl(gate(3)));
                        cn[size_t(j)] = fg * c[size_t(j)] + ig * cc;
                        const double og = sigmoid_ref(cl(gate(1) + po * cn[size_t(j)]));
                        hn[size_t(j)] = og * std::tanh(cn[size_t(j)]);
                    }
                }
                h = hn;
                if (rc.op == "LSTM") c = cn;
                for (int64_t j = 0; j < H; ++j) y[yi(t, d, b, j)] = h[size_t(j)];
            }
            for (int64_t j = 0; j < H; ++j) {
                yh[si(d, b, j)] = h[size_t(j)];
                yc[si(d, b, j)] = c[size_t(j)];
            }
        }
    if (rc.op == "LSTM") return {y, yh, yc};
    return {y, yh};
}

TEST(OnnxRecurrent, MatchesOnnxEquations) {
    const int64_t T = 4, Bn = 3, I = 2, H = 3;
    const std::vector<int64_t> lens = {4, 2, 3};  // the longest is T: Y keeps all T frames
    const std::vector<RecurrentCase> cases = {
        {"RNN", "forward", 0, false, 0, false},         {"RNN", "reverse", 1, false, 0, false},
        {"RNN", "bidirectional", 0, false, 0.5, false}, {"GRU", "forward", 0, false, 0, false},
        {"GRU", "bidirectional", 1, true, 0, false},    {"GRU", "reverse", 0, true, 0.7, false},
        {"LSTM", "forward", 1, false, 0, true},         {"LSTM", "bidirectional", 0, false, 0, true},
        {"LSTM", "reverse", 0, false, 0.6, false}};
    uint32_t seed = 100;
    for (const RecurrentCase& rc : cases) {
        SCOPED_TRACE(rc.op + " " + rc.direction + " layout " + std::to_string(rc.layout));
        const int64_t D = rc.direction == "bidirectional" ? 2 : 1, G = rc.op == "RNN"   ? 1
                                                                       : rc.op == "GRU" ? 3
                                                                                        : 4;
        std::vector<std::pair<std::string, Dims>> ins = {
            {"X", rc.layout == 0 ? Dims{T, Bn, I} : Dims{Bn, T, I}},
            {"W", {D, G * H, I}},
            {"R", {D, G * H, H}},
            {"B", {D, 2 * G * H}},
            {"sequence_lens", {Bn}},
            {"initial_h", {D, Bn, H}}};
        if (rc.op == "LSTM") {
            ins.push_back({"initial_c", {D, Bn, H}});
            ins.push_back({"P", {D, 3 * H}});
        }
        FunctionPtr m = load_onnx_model(write_temp(recurrent_model(rc, ins, H), "recurrent.onnx"));
        std::map<std::string, Tensor> values;
        ValueMap feed;
        for (const auto& [name, dims] : ins) {
            Tensor t = name == "sequence_lens"
                           ? Tensor::from_vector(std::vector<double>(lens.begin(), lens.end()), Shape{Bn})
                           : random_tensor(dims, seed++);
            if (name == "P" && !rc.peepholes) t = Tensor::full(Shape(dims), 0.0, DataType::f32);
            values[name] = t;
            for (const Variable& a : m->arguments())
                if (a.name() == name) feed.emplace(a, Value(t.to(a.dtype())));
        }
        ASSERT_EQ(feed.size(), m->arguments().size());
        const auto want = recurrent_reference(rc, values, T, Bn, I, H, lens);
        ValueMap got = m->eval(feed);
        ASSERT_EQ(m->outputs().size(), want.size());
        const std::vector<Dims> shapes = {rc.layout == 0 ? Dims{T, D, Bn, H} : Dims{Bn, T, D, H},
                                          rc.layout == 0 ? Dims{D, Bn, H} : Dims{Bn, D, H},
                                          rc.layout == 0 ? Dims{D, Bn, H} : Dims{Bn, D, H}};
        for (size_t o = 0; o < want.size(); ++o) {
            Tensor g = got.at(m->outputs()[o]).data();
            EXPECT_EQ(g.shape(), Shape(shapes[o])) << "output " << o;
            const auto gv = g.to_vector<double>();
            ASSERT_EQ(gv.size(), want[o].size());
            for (size_t k = 0; k < gv.size(); ++k)
                EXPECT_NEAR(gv[k], want[o][k], 1e-5) << "output " << o << " at " << k;
        }
    }
}

// With layout 1, an X of ctk's batch and sequence axes ([batch, sequence, input] named as ctk
// exports them) stays a ctk sequence: the sequences' own lengths play sequence_lens, Y is a sequence.
TEST(OnnxRecurrent, CtkSequenceInput) {
    const int64_t Bn = 3, I = 2, H = 3;
    const std::vector<int64_t> lens = {4, 2, 3};
    const int64_t T = 4;
    for (const char* op : {"GRU", "LSTM"}) {
        SCOPED_TRACE(op);
        RecurrentCase rc{op, "bidirectional", 1, false, 0, false};
        const int64_t D = 2, G = rc.op == "GRU" ? 3 : 4;
        std::vector<std::pair<std::string, Dims>> ins = {
            {"X", {-1, -1, I}}, {"W", {D, G * H, I}}, {"R", {D, G * H, H}}, {"B", {D, 2 * G * H}}};
        FunctionPtr m = load_onnx_model(write_temp(recurrent_model(rc, ins, H), "recurrent_seq.onnx"));
        std::map<std::string, Tensor> values;
        std::vector<Tensor> seqs;
        std::vector<double> padded(static_cast<size_t>(Bn * T * I), 0.0);
        for (int64_t b = 0; b < Bn; ++b) {
            seqs.push_back(random_tensor({lens[size_t(b)], I}, 300 + static_cast<uint32_t>(b)));
            const auto v = seqs.back().to_vector<double>();
            std::copy(v.begin(), v.end(), padded.begin() + b * T * I);
        }
        values["X"] = Tensor::from_vector(padded, Shape{Bn, T, I});
        ValueMap feed;
        uint32_t seed = 400;
        for (const auto& [name, dims] : ins) {
            if (name != "X") values[name] = random_tensor(dims, seed++);
            for (const Variable& a : m->arguments())
                if (a.name() == name)
                    feed.emplace(a, name == "X" ? Value::from_sequences(seqs) : Value(values[name]));
        }
        values["initial_h"] = values["initial_c"] = Tensor::full(Shape{D, Bn, H}, 0.0, DataType::f32);
        values["P"] = Tensor::full(Shape{D, 3 * H}, 0.0, DataType::f32);
        ASSERT_EQ(feed.size(), m->arguments().size());
        const Variable y = m->outputs().at(0), y_h = m->outputs().at(1);
        EXPECT_TRUE(y.has_sequence_axis() && y.shape() == (Dims{D, H}));
        EXPECT_TRUE(!y_h.has_sequence_axis() && y_h.has_batch_axis() && y_h.shape() == (Dims{D, H}));
        const auto want = recurrent_reference(rc, values, T, Bn, I, H, lens);
        ValueMap got = m->eval(feed);
        for (size_t o = 0; o < want.size(); ++o) {
            const auto gv = got.at(m->outputs()[o]).masked_data(0.0).to_vector<double>();
            ASSERT_EQ(gv.size(), want[o].size()) << "output " << o;
            for (size_t k = 0; k < gv.size(); ++k)
                EXPECT_NEAR(gv[k], want[o][k], 1e-5) << "output " << o << " at " << k;
        }
    }
}

}  // namespace
}  // namespace ctk
