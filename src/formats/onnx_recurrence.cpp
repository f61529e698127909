// ONNX import of RNN, GRU and LSTM (opsets 13 to 17) as ctk recurrent loops: one loop per direction
// over a ctk sequence axis, the state's back edge a past_value (future_value for the reverse
// direction) whose initial state is initial_h / initial_c; the executor steps the loop frame by frame.
// Gate equations follow ONNX's Operators.md for RNN-14, GRU-14 and LSTM-14.
#include "formats/onnx_recurrence.h"

#include <algorithm>
#include <cctype>

#include "ctk/core/error.h"
#include "ctk/graph/graph_ops.h"

namespace ctk::detail::onnx_io {
namespace {

const onnx::AttributeProto* find(const onnx::NodeProto& n, const char* key) {
    for (const auto& a : n.attribute())
        if (a.name() == key) return &a;
    return nullptr;
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return std::tolower(ch); });
    return s;
}

// One of ONNX's activation functions for recurrent ops, with its alpha and beta.
struct Activation {
    std::string op;  // lower case
    double alpha = 0.0, beta = 0.0;
};

bool takes_alpha(const std::string& op) {
    return op == "affine" || op == "leakyrelu" || op == "thresholdedrelu" || op == "scaledtanh" ||
           op == "hardsigmoid" || op == "elu";
}
bool takes_beta(const std::string& op) {
    return op == "affine" || op == "scaledtanh" || op == "hardsigmoid";
}
// ONNX's defaults for activation parameters the node leaves out (Operators.md, the op's own defaults).
double default_alpha(const std::string& op) {
    return op == "leakyrelu" ? 0.01 : op == "hardsigmoid" ? 0.2 : 1.0;
}
double default_beta(const std::string& op) {
    return op == "hardsigmoid" ? 0.5 : op == "scaledtanh" ? 1.0 : 0.0;
}

Variable activate(const Activation& a, const Variable& x, const std::string& where) {
    const DataType d = x.dtype();
    if (a.op == "sigmoid") return sigmoid(x);
    if (a.op == "tanh") return tanh(x);
    if (a.op == "relu") return relu(x);
    if (a.op == "leakyrelu") return leaky_relu(x, a.alpha);
    if (a.op == "elu") return elu(x, a.alpha);
    if (a.op == "hardsigmoid") return hard_sigmoid(x, a.alpha, a.beta);
    if (a.op == "softsign") return softsign(x);
    if (a.op == "softplus") return softplus(x);
    if (a.op == "affine") return plus(element_times(x, constant(a.alpha, d)), constant(a.beta, d));
    if (a.op == "scaledtanh")
        return element_times(constant(a.alpha, d), tanh(element_times(x, constant(a.beta, d))));
    if (a.op == "thresholdedrelu")
        return element_select(greater(x, constant(a.alpha, d)), x, constant(0.0, d));
    CTK_THROW(NotImplementedError, where, ": activation '", a.op,
              "' is not one of ONNX's recurrent activations");
}

// The activations of every direction: per_direction entries each (f, g, h order), ONNX's defaults
// when the attribute is absent; alphas and betas are consumed in order by the activations that take them.
std::vector<Activation> activations_of(const onnx::NodeProto& n, const std::vector<std::string>& defaults,
                                       int directions, const std::string& where) {
    std::vector<std::string> names;
    if (const auto* a = find(n, "activations"))
        for (const auto& s : a->strings()) names.push_back(lower(s));
    if (names.empty())
        for (int d = 0; d < directions; ++d) names.insert(names.end(), defaults.begin(), defaults.end());
    if (names.size() == defaults.size() && directions == 2)
        names.insert(names.end(), names.begin(), names.end());
    CTK_CHECK(names.size() == defaults.size() * static_cast<size_t>(directions), IOError, where, ": ",
              names.size(), " activations given, ", defaults.size() * static_cast<size_t>(directions),
              " expected");
    std::vector<float> alphas, betas;
    if (const auto* a = find(n, "activation_alpha")) alphas.assign(a->floats().begin(), a->floats().end());
    if (const auto* a = find(n, "activation_beta")) betas.assign(a->floats().begin(), a->floats().end());
    size_t ia = 0, ib = 0;
    std::vector<Activation> out;
    for (const std::string& op : names) {
        Activation act{op, default_alpha(op), default_beta(op)};
        if (takes_alpha(op) && ia < alphas.size()) act.alpha = alphas[ia++];
        if (takes_beta(op) && ib < betas.size()) act.beta = betas[ib++];
        out.push_back(act);
    }
    return out;
}

// Rows [g * h, (g + 1) * h) of a static value's first axis.
Variable rows(const Variable& v, int64_t g, int64_t h) {
    return slice(v, {Axis(0)}, {g * h}, {(g + 1) * h});
}
// Direction d of a static [num_directions, ...] operand.
Variable direction_of(const Variable& v, int d) {
    if (!v.defined()) return v;
    return reshape(slice(v, {Axis(0)}, {d}, {d + 1}), Dims(v.shape().begin() + 1, v.shape().end()));
}
Variable add(const Variable& a, const Variable& b) {
    return b.defined() ? Variable(plus(a, b)) : a;
}
// [1, H] per value, stacked over the directions: [num_directions, H].
Variable stack(const std::vector<Variable>& vs, int64_t h) {
    std::vector<Variable> r;
    for (const Variable& v : vs) r.push_back(reshape(v, Dims{1, h}));
    return r.size() == 1 ? r[0] : Variable(splice(r, Axis(0)));
}

enum class Cell { rnn, gru, lstm };

}  // namespace

std::vector<Variable> import_recurrent_node(const onnx::NodeProto& node, const std::vector<Variable>& inputs,
                                            const std::string& where, const std::string& name) {
    const std::string& type = node.op_type();
    const Cell cell = type == "RNN" ? Cell::rnn : type == "GRU" ? Cell::gru : Cell::lstm;
    const int64_t gates = cell == Cell::rnn ? 1 : cell == Cell::gru ? 3 : 4;
    auto in = [&](size_t i) { return i < inputs.size() ? inputs[i] : Variable(); };
    const Variable X = in(0), W = in(1), R = in(2), B = in(3), h0 = in(5), c0 = in(6), P = in(7);
    Variable lens = in(4);
    CTK_CHECK(X.defined() && W.defined() && R.defined(), IOError, where, ": X, W and R are required");

    auto attr_i = [&](const char* k, int64_t fallback) {
        const auto* a = find(node, k);
        return a ? a->i() : fallback;
    };
    const auto* dir_attr = find(node, "direction");
    const std::string direction = dir_attr ? dir_attr->s() : "forward";
    CTK_CHECK(direction == "forward" || direction == "reverse" || direction == "bidirectional", IOError,
              where, ": direction '", direction, "' is not forward, reverse or bidirectional");
    const int directions = direction == "bidirectional" ? 2 : 1;
    const int64_t layout = attr_i("layout", 0);
    CTK_CHECK(layout == 0 || layout == 1, IOError, where, ": layout ", layout, " is not 0 or 1");
    if (cell == Cell::lstm && attr_i("input_forget", 0) != 0)
        CTK_THROW(NotImplementedError, where, ": LSTM with input_forget (coupled input and forget gates)");
    const bool linear_before_reset = cell == Cell::gru && attr_i("linear_before_reset", 0) != 0;
    const auto* clip_attr = find(node, "clip");
    const double clip_at = clip_attr ? static_cast<double>(clip_attr->f()) : 0.0;

    for (const Variable* v : std::initializer_list<const Variable*>{&W, &R, &B, &h0, &c0, &P, &lens})
        CTK_CHECK(
            !v->defined() || v->dynamic_rank() == 0, NotImplementedError, where,
            ": W, R, B, sequence_lens, initial_h, initial_c and P must be static (no batch axis) for ctk");
    CTK_CHECK(W.rank() == 3 && W.shape()[0] == directions && W.shape()[1] % gates == 0, IOError, where,
              ": W has shape ", W.to_string(), ", expected [", directions, ", ", gates, " * hidden, input]");
    const int64_t hidden = attr_i("hidden_size", W.shape()[1] / gates);
    CTK_CHECK(W.shape()[1] == gates * hidden, IOError, where, ": W does not match hidden_size ", hidden);
    CTK_CHECK(R.rank() == 3 && R.shape()[0] == directions && R.shape()[1] == gates * hidden &&
                  R.shape()[2] == hidden,
              IOError, where, ": R has shape ", R.to_string());
    CTK_CHECK(
        !B.defined() || (B.rank() == 2 && B.shape()[0] == directions && B.shape()[1] == 2 * gates * hidden),
        IOError, where, ": B has shape ", B.to_string());
    CTK_CHECK(!P.defined() || (P.rank() == 2 && P.shape()[0] == directions && P.shape()[1] == 3 * hidden),
              IOError, where, ": P has shape ", P.to_string());
    const std::vector<std::string> defaults = cell == Cell::rnn ? std::vector<std::string>{"tanh"}
                                              : cell == Cell::gru
                                                  ? std::vector<std::string>{"sigmoid", "tanh"}
                                                  : std::vector<std::string>{"sigmoid", "tanh", "tanh"};
    const std::vector<Activation> acts = activations_of(node, defaults, directions, where);

    // X as a ctk sequence [#, *] x [input]. ONNX's per-sample sequence_lens become the sequences'
    // lengths, so shorter sequences stop early (Y_h is their last valid state) and Y pads them with 0.
    if (lens.defined() && !is_floating(lens.dtype())) lens = cast(lens, DataType::f64);
    Variable x;
    const bool static_x = X.dynamic_rank() == 0;
    if (static_x) {
        CTK_CHECK(X.rank() == 3, IOError, where, ": X has shape ", X.to_string(), ", expected rank 3");
        Variable bt = layout == 0 ? Variable(transpose(X, {1, 0, 2})) : X;  // [batch, seq, input]
        x = lens.defined() ? to_sequence(to_batch(bt), to_batch(lens)) : to_sequence(to_batch(bt));
    } else if (layout == 1 && X.dynamic_rank() == 1 && X.rank() == 2) {  // [#] x [seq, input]
        x = lens.defined() ? to_sequence(X, to_batch(lens)) : to_sequence(X);
    } else if (layout == 1 && X.has_sequence_axis() && X.dynamic_rank() == 2 && X.rank() == 1) {
        CTK_CHECK(!lens.defined(), NotImplementedError, where,
                  ": sequence_lens with an X that is a ctk sequence (its lengths are its own)");
        x = X;
    } else {
        CTK_THROW(NotImplementedError, where, ": X ", X.to_string(), " with layout ", layout,
                  " (ctk reads a static X, or with layout 1 one with the batch axis or ctk's batch and "
                  "sequence axes)");
    }
    const DataType dt = x.dtype();
    auto pre = [&](const Variable& v) {  // ONNX's clip bounds the inputs of the activations
        return clip_attr ? Variable(clip(v, -clip_at, clip_at)) : v;
    };

    std::vector<Variable> ys, y_hs, y_cs;
    for (int d = 0; d < directions; ++d) {
        const bool reverse = direction == "reverse" || d == 1;
        const Activation* act = &acts[static_cast<size_t>(d) * defaults.size()];
        const Variable Wd = direction_of(W, d), Rd = direction_of(R, d), Bd = direction_of(B, d);
        const Variable Pd = direction_of(P, d);
        auto initial = [&](const Variable& s0) {
            return s0.defined() ? Variable(to_batch(direction_of(s0, d))) : s0;
        };
        auto delay = [&](const Variable& v, const Variable& init) -> Variable {
            return reverse ? sequence::future_value(v, init) : sequence::past_value(v, init);
        };
        const Variable xw = times_transpose(x, Wd);  // every gate's input projection, [gates * hidden]
        auto x_gate = [&](int64_t g) { return Variable(rows(xw, g, hidden)); };
        auto wb = [&](int64_t g) { return Bd.defined() ? rows(Bd, g, hidden) : Variable(); };
        auto rb = [&](int64_t g) { return Bd.defined() ? rows(Bd, gates + g, hidden) : Variable(); };
        auto r_times = [&](const Variable& h, int64_t g) {
            return Variable(times_transpose(h, rows(Rd, g, hidden)));
        };
        // x W_g^T + h R_g^T + Wb_g + Rb_g
        auto gate_in = [&](const Variable& h, int64_t g) {
            return add(add(plus(x_gate(g), r_times(h, g)), wb(g)), rb(g));
        };
        const Variable h_ph = placeholder(name + "_h_prev"), c_ph = placeholder(name + "_c_prev");
        const Variable hp = delay(h_ph, initial(h0));
        Variable h, c;
        if (cell == Cell::rnn) {
            h = activate(act[0], pre(gate_in(hp, 0)), where);
            h.owner()->replace_placeholders({{h_ph, h}});
        } else if (cell == Cell::gru) {  // gates z, r, h
            const Variable z = activate(act[0], pre(gate_in(hp, 0)), where);
            const Variable r = activate(act[0], pre(gate_in(hp, 1)), where);
            Variable hh_in;
            if (linear_before_reset)
                hh_in = add(plus(x_gate(2), element_times(r, add(r_times(hp, 2), rb(2)))), wb(2));
            else
                hh_in = add(add(plus(x_gate(2), r_times(element_times(r, hp), 2)), rb(2)), wb(2));
            const Variable hh = activate(act[1], pre(hh_in), where);
            // (1 - z) hh + z h_prev
            h = plus(element_times(minus(constant(1.0, dt), z), hh), element_times(z, hp));
            h.owner()->replace_placeholders({{h_ph, h}});
        } else {  // gates i, o, f, c; peepholes i, o, f
            const Variable cp = delay(c_ph, initial(c0));
            auto peep = [&](const Variable& v, int64_t k, const Variable& cell_state) {
                return Pd.defined() ? Variable(plus(v, element_times(rows(Pd, k, hidden), cell_state))) : v;
            };
            const Variable i = activate(act[0], pre(peep(gate_in(hp, 0), 0, cp)), where);
            const Variable f = activate(act[0], pre(peep(gate_in(hp, 2), 2, cp)), where);
            const Variable cc = activate(act[1], pre(gate_in(hp, 3)), where);
            c = plus(element_times(f, cp), element_times(i, cc));
            const Variable o = activate(act[0], pre(peep(gate_in(hp, 1), 1, c)), where);
            h = element_times(o, activate(act[2], c, where));
            combine({h, c})->replace_placeholders({{h_ph, h}, {c_ph, c}});
        }
        ys.push_back(h);
        // The state after the last step: a reverse direction ends at each sequence's first frame.
        y_hs.push_back(reverse ? sequence::first(h) : sequence::last(h));
        if (c.defined()) y_cs.push_back(reverse ? sequence::first(c) : sequence::last(c));
    }

    // Y is [seq, num_directions, batch, hidden] (layout 1: [batch, seq, num_directions, hidden]); Y_h and
    // Y_c [num_directions, batch, hidden] (layout 1: [batch, num_directions, hidden]).
    Variable y = stack(ys, hidden), y_h = stack(y_hs, hidden);
    Variable y_c = y_cs.empty() ? Variable() : stack(y_cs, hidden);
    if (!X.has_sequence_axis()) y = sequence::unpack(y, 0.0)->outputs()[0];  // [#] x [seq, D, hidden]
    if (static_x) {
        y = unpack_batch(y);
        y_h = unpack_batch(y_h);
        if (y_c.defined()) y_c = unpack_batch(y_c);
        if (layout == 0) {
            y = transpose(y, {1, 2, 0, 3});
            y_h = transpose(y_h, {1, 0, 2});
            if (y_c.defined()) y_c = transpose(y_c, {1, 0, 2});
        }
    }
    std::vector<Variable> out = {alias(y, name + "_Y"), alias(y_h, name + "_Y_h")};
    if (y_c.defined()) out.push_back(alias(y_c, name + "_Y_c"));
    return out;
}

}  // namespace ctk::detail::onnx_io
