// The fused recurrent kernel (ctk/kernels/cell_program.h, src/graph/fused_loop.cpp) against the general
// frame-by-frame path: every recognised form of CNTK's recurrent layers, over sequences of different
// lengths in one minibatch, gives the same outputs and the same gradients for every parameter, the
// input and the initial states; and each of them did run fused (the op profile says which path ran).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "ctk/ctk.h"

using namespace ctk;
using namespace ctk::layers;

namespace {

struct Outcome {
    std::vector<std::vector<double>> outputs;  // per sequence, its real frames
    std::vector<std::vector<double>> grads;    // per wrt variable
    bool fused = false, general = false;       // which paths ran
};

std::vector<Tensor> random_sequences(const std::vector<int64_t>& lengths, int64_t dim, DataType dtype,
                                     uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<Tensor> out;
    for (int64_t len : lengths) {
        std::vector<double> v(static_cast<size_t>(len * dim));
        for (double& x : v) x = u(gen);
        out.push_back(Tensor::from_vector(v, Shape{len, dim}).to(dtype));
    }
    return out;
}

Tensor random_tensor(const Shape& shape, DataType dtype, uint32_t seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    std::vector<double> v(static_cast<size_t>(shape.numel()));
    for (double& x : v) x = u(gen);
    return Tensor::from_vector(v, shape).to(dtype);
}

// Forward, then backward from a fixed random root gradient, with the fused kernel on or off.
Outcome evaluate(const FunctionPtr& f, const ValueMap& args, const std::vector<Variable>& wrt, bool fused) {
    set_fused_recurrence(fused);
    reset_op_profile();
    set_op_profile(true);
    const Variable out = f->outputs()[0];
    ValueMap outs{{out, Value()}};
    auto state = f->forward(args, outs, {out}, true, Device::cpu());
    const Value& y = outs.at(out);
    const Tensor root = random_tensor(y.data().shape(), y.data().dtype(), 7);
    const ValueMap grads = f->backward(*state, {{out, Value(root, y.layout())}}, wrt);
    set_op_profile(false);
    set_fused_recurrence(true);
    Outcome o;
    for (const OpProfileEntry& e : op_profile()) {
        o.fused = o.fused || e.label.rfind("fused recurrent loop", 0) == 0;
        o.general = o.general || e.label.rfind("recurrent loop", 0) == 0;
    }
    const int64_t n = y.layout() ? y.layout()->num_sequences() : y.data().dim(0);
    for (int64_t s = 0; s < n; ++s)
        o.outputs.push_back(y.sequence(s).to(DataType::f64).contiguous().to_vector<double>());
    for (const Variable& v : wrt) {
        const Value& g = grads.at(v);
        std::vector<double> flat;
        if (g.layout()) {
            for (int64_t s = 0; s < g.layout()->num_sequences(); ++s) {
                const auto part = g.sequence(s).to(DataType::f64).contiguous().to_vector<double>();
                flat.insert(flat.end(), part.begin(), part.end());
            }
        } else {
            flat = g.data().to(DataType::f64).contiguous().to_vector<double>();
        }
        o.grads.push_back(flat);
    }
    return o;
}

void expect_close(const std::vector<double>& a, const std::vector<double>& b, double tol,
                  const std::string& what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    double worst = 0.0;
    for (size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, std::abs(a[i] - b[i]) / std::max(1.0, std::abs(b[i])));
    EXPECT_LE(worst, tol) << what;
}

struct Case {
    std::string name;
    // Builds the model over x (and any extra inputs, returned with their values via `extra`).
    std::function<FunctionPtr(const Variable& x, std::vector<std::pair<Variable, Value>>& extra)> build;
    bool expect_fused = true;
};

const std::vector<int64_t> kLengths{6, 2, 4, 6, 1};
constexpr int64_t kInputDim = 3;

void check_case(const Case& c, DataType dtype) {
    SCOPED_TRACE(c.name);
    Variable x = sequence_input_variable({kInputDim}, dtype, true, false, Axis::default_dynamic_axis(), "x");
    std::vector<std::pair<Variable, Value>> extra;
    FunctionPtr f = c.build(x, extra);
    ValueMap args{{x, Value::from_sequences(random_sequences(kLengths, kInputDim, dtype, 3))}};
    std::vector<Variable> wrt = f->parameters();
    wrt.push_back(x);
    for (auto& [v, value] : extra) {
        args.emplace(v, value);
        wrt.push_back(v);
    }
    const Outcome general = evaluate(f, args, wrt, false);
    const Outcome fused = evaluate(f, args, wrt, true);
    EXPECT_TRUE(general.general && !general.fused);
    EXPECT_EQ(fused.fused, c.expect_fused);
    if (c.expect_fused) {
        EXPECT_FALSE(fused.general) << "a loop of this model still ran frame by frame";
    }
    const double tol = dtype == DataType::f64 ? 1e-10 : 1e-5;
    ASSERT_EQ(fused.outputs.size(), general.outputs.size());
    for (size_t s = 0; s < fused.outputs.size(); ++s)
        expect_close(fused.outputs[s], general.outputs[s], tol, "output of sequence " + std::to_string(s));
    for (size_t k = 0; k < wrt.size(); ++k)
        expect_close(fused.grads[k], general.grads[k], tol, "gradient of " + wrt[k].to_string());
}

FunctionPtr relu_fn(const Variable& v) {
    return relu(v);
}

std::vector<Case> cases() {
    std::vector<Case> out;
    out.push_back({"lstm", [](const Variable& x, auto&) { return call(Recurrence(LSTM({5})), x); }});
    out.push_back({"lstm_peepholes_projection_stabilized", [](const Variable& x, auto&) {
                       RecurrentOptions o;
                       o.cell_shape = Dims{7};
                       o.use_peepholes = true;
                       o.enable_self_stabilization = true;
                       o.init_bias = 0.2;
                       return call(Recurrence(LSTM({4}, o)), x);
                   }});
    out.push_back(
        {"gru_backwards", [](const Variable& x, auto&) { return call(Recurrence(GRU({4}), true), x); }});
    out.push_back({"rnn_relu_initial_state", [](const Variable& x, auto&) {
                       RecurrentOptions o;
                       o.activation = relu_fn;
                       return call(Recurrence(RNNStep({4}, o), false, constant(0.5)), x);
                   }});
    out.push_back({"gru_fold_stabilized", [](const Variable& x, auto&) {
                       RecurrentOptions o;
                       o.enable_self_stabilization = true;
                       return call(Fold(GRU({3}, o)), x);
                   }});
    out.push_back({"stacked_and_bidirectional", [](const Variable& x, auto&) {
                       Variable a = call(Recurrence(LSTM({4})), x);
                       Variable fwd = call(Recurrence(LSTM({3})), a),
                                bwd = call(Recurrence(LSTM({3}), true), a);
                       return splice({fwd, bwd});
                   }});
    out.push_back({"lstm_recurrence_from_states", [](const Variable& x, auto& extra) {
                       Variable h0 =
                           input_variable({4}, DataType::f32, true, false, default_batch_axes(), "h0");
                       Variable c0 =
                           input_variable({4}, DataType::f32, true, false, default_batch_axes(), "c0");
                       const int64_t n = static_cast<int64_t>(kLengths.size());
                       extra.emplace_back(h0, Value(random_tensor(Shape{n, 4}, DataType::f32, 11)));
                       extra.emplace_back(c0, Value(random_tensor(Shape{n, 4}, DataType::f32, 12)));
                       FunctionPtr r = RecurrenceFrom(LSTM({4}));
                       return (*r)({h0, c0, x});
                   }});
    for (const char* op : {"lstm", "gru", "rnnReLU", "rnnTanh"})
        out.push_back({std::string("optimized_rnnstack_") + op, [op](const Variable& x, auto&) {
                           Variable w = parameter({kInferredDim, 4}, glorot_uniform(), x.dtype());
                           return optimized_rnnstack(x, w, 4, 2, std::string(op) != "rnnTanh", op);
                       }});
    out.push_back({"hand_written_offset_2", [](const Variable& x, auto&) {
                       // h = tanh(past_value(h, 2) W + x U): a recurrence over every other frame.
                       Variable w = parameter({4, 4}, glorot_uniform(), x.dtype()),
                                u = parameter({kInputDim, 4}, glorot_uniform(), x.dtype());
                       Variable h = placeholder("h");
                       Variable y = tanh(plus(times(sequence::past_value(h, {}, 2), w), times(x, u)));
                       y.owner()->replace_placeholders({{h, y}});
                       return as_function(y);
                   }});
    out.push_back({"softmax_inside_stays_general",
                   [](const Variable& x, auto&) {
                       Variable w = parameter({4, 4}, glorot_uniform()),
                                u = parameter({kInputDim, 4}, glorot_uniform());
                       Variable h = placeholder("h");
                       Variable y = softmax(plus(times(sequence::past_value(h), w), times(x, u)));
                       y.owner()->replace_placeholders({{h, y}});
                       return as_function(y);
                   },
                   false});
    return out;
}

}  // namespace

TEST(FusedRecurrence, EveryRecognisedFormMatchesTheGeneralPathInF32) {
    for (const Case& c : cases()) check_case(c, DataType::f32);
}

TEST(FusedRecurrence, OptimizedRnnStackAndHandWrittenLoopsMatchInF64) {
    for (const Case& c : cases())
        if (c.name.rfind("optimized_rnnstack", 0) == 0 || c.name == "hand_written_offset_2")
            check_case(c, DataType::f64);
}

TEST(FusedRecurrence, TrainingStepsAgree) {
    // Ten SGD steps of an LSTM classifier: the fused and general paths keep the same parameters.
    auto train = [](bool fused) {
        set_fused_recurrence(fused);
        set_fixed_random_seed(5);
        Variable x = sequence_input_variable({kInputDim}, DataType::f32, false, false,
                                             Axis::default_dynamic_axis(), "x");
        Variable label = input_variable({2});
        FunctionPtr z = call(Dense({2}), call(Fold(LSTM({6})), x));
        FunctionPtr loss = cross_entropy_with_softmax(z, label);
        Trainer trainer(z, loss, classification_error(z, label),
                        {sgd(z->parameters(), learning_parameter_schedule(0.1))});
        for (int step = 0; step < 10; ++step) {
            Value xs = Value::from_sequences(random_sequences(kLengths, kInputDim, DataType::f32, 20 + step));
            std::vector<float> l(kLengths.size() * 2, 0.0f);
            for (size_t i = 0; i < kLengths.size(); ++i) l[i * 2 + (i + step) % 2] = 1.0f;
            trainer.train_minibatch(
                {{x, xs},
                 {label, Value(Tensor::from_vector(l, Shape{static_cast<int64_t>(kLengths.size()), 2}))}});
        }
        std::vector<double> params;
        for (const Variable& p : z->parameters()) {
            const auto v = p.value().to(DataType::f64).contiguous().to_vector<double>();
            params.insert(params.end(), v.begin(), v.end());
        }
        set_fused_recurrence(true);
        return params;
    };
    expect_close(train(true), train(false), 1e-5, "parameters after 10 steps");
}
