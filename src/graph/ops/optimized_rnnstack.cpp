// optimized_rnnstack in graph form: CNTK's cuDNN RNN stack (OptimizedRNNStack) rebuilt from slices of its
// one packed weight parameter, times_transpose and past_value/future_value loops, so a model written
// for it trains and runs wherever the graph runs (CNTK itself had no CPU implementation).
//
// The packing is cuDNN's canonical order, as CNTK stored it (its optimized_rnnstack_converter and ONNX
// exporter read it the same way): first every layer's matrices, per layer and direction (forward, then
// backward) the input matrix W [G*H, in] then the recurrent matrix R [G*H, H], row-major; then every
// layer's biases, per layer and direction bW [G*H] then bR [G*H]. Gates stack along the rows in cuDNN's
// order: LSTM i, f, c, o; GRU r, z, h; plain RNNs one. States start at zero.
#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace {

enum class Cell { lstm, gru, rnn_relu, rnn_tanh };

struct Stack {
    Cell cell;
    int64_t gates, hidden, layers, dirs;
    int64_t input_dim;
    int64_t layer_input(int64_t l) const { return l == 0 ? input_dim : dirs * hidden; }
    // CNTK's count (RnnAttributes::GetNumParameters): two bias vectors per gate, as cuDNN keeps them.
    int64_t total() const {
        int64_t n = 0;
        for (int64_t l = 0; l < layers; ++l)
            n += dirs * (gates * hidden * (layer_input(l) + hidden) + 2 * gates * hidden);
        return n;
    }
    int64_t matrices() const {  // where the biases start
        int64_t n = 0;
        for (int64_t l = 0; l < layers; ++l) n += dirs * gates * hidden * (layer_input(l) + hidden);
        return n;
    }
};

// One direction of one layer over the sequence `x`: the step's states fed back through past_value (or
// future_value for the backward direction), closed with replace_placeholders.
Variable direction(const Stack& s, const Variable& x, const Variable& w, const Variable& r,
                   const Variable& bw, const Variable& br, bool backward) {
    const int64_t h = s.hidden;
    auto state = [&](const char* name) {
        Variable p = placeholder({h}, x.dynamic_axes(), name);
        p.impl()->dtype = x.dtype();
        return p;
    };
    auto delayed = [&](const Variable& v) {
        return backward ? Variable(sequence::future_value(v)) : Variable(sequence::past_value(v));
    };
    auto gate = [&](const Variable& v, int64_t g) {
        return Variable(slice(v, {Axis(0)}, {g * h}, {(g + 1) * h}));
    };
    const Variable from_x = plus(times_transpose(x, w), bw);  // all frames at once, outside the loop
    const Variable h_state = state("h"), h_prev = delayed(h_state);
    const Variable from_h = plus(times_transpose(h_prev, r), br);
    // The gates' pre-activations: one sum over all of them (fewer ops per frame), then per-gate slices.
    const Variable summed = plus(from_x, from_h);
    auto pre = [&](int64_t g) { return gate(summed, g); };
    VariableMap close;
    Variable out;
    switch (s.cell) {
        case Cell::lstm: {
            const Variable c_state = state("c"), c_prev = delayed(c_state);
            const Variable sig = sigmoid(summed);  // i, f and o from one sigmoid (c's slice unused)
            const Variable c =
                plus(element_times(gate(sig, 1), c_prev), element_times(gate(sig, 0), tanh(pre(2))));
            out = element_times(gate(sig, 3), tanh(c));
            close.emplace(c_state, c);
            break;
        }
        case Cell::gru: {
            // cuDNN's GRU resets the recurrent term after its matrix and bias (linear_before_reset).
            const Variable candidate =
                tanh(plus(gate(from_x, 2), element_times(sigmoid(pre(0)), gate(from_h, 2))));
            out = plus(candidate, element_times(sigmoid(pre(1)), minus(h_prev, candidate)));
            break;
        }
        case Cell::rnn_relu:
            out = relu(pre(0));
            break;
        case Cell::rnn_tanh:
            out = tanh(pre(0));
            break;
    }
    close.emplace(h_state, out);
    out.owner()->replace_placeholders(close);
    return out;
}

}  // namespace

FunctionPtr optimized_rnnstack(const Variable& operand, const Variable& weights, int64_t hidden_size,
                               int64_t num_layers, bool bidirectional, const std::string& recurrent_op,
                               const std::string& name) {
    const std::string where = "optimized_rnnstack '" + name + "'";
    Stack s{};
    if (recurrent_op == "lstm") {
        s.cell = Cell::lstm, s.gates = 4;
    } else if (recurrent_op == "gru") {
        s.cell = Cell::gru, s.gates = 3;
    } else if (recurrent_op == "rnnReLU") {
        s.cell = Cell::rnn_relu, s.gates = 1;
    } else if (recurrent_op == "rnnTanh") {
        s.cell = Cell::rnn_tanh, s.gates = 1;
    } else {
        CTK_THROW(ValueError, where, ": unsupported recurrent_op \"", recurrent_op,
                  "\" (CNTK's: 'lstm', 'gru', 'rnnReLU', 'rnnTanh')");
    }
    CTK_CHECK(hidden_size > 0 && num_layers > 0, ValueError, where, ": hidden_size ", hidden_size,
              " and num_layers ", num_layers, " must be > 0");
    CTK_CHECK(operand.has_sequence_axis(), ShapeError, where, ": the operand ", operand.to_string(),
              " must be a sequence");
    CTK_CHECK(operand.rank() == 1 && operand.shape()[0] > 0, ShapeError, where, ": the operand ",
              operand.to_string(), " must be a sequence of vectors of known size");
    CTK_CHECK(weights.is_parameter() || weights.is_constant(), ValueError, where, ": weights ",
              weights.to_string(), " must be a Parameter or Constant");
    s.hidden = hidden_size, s.layers = num_layers, s.dirs = bidirectional ? 2 : 1;
    s.input_dim = operand.shape()[0];
    const int64_t total = s.total();
    // CNTK gave a rank-2 weight parameter the shape [total / H, H] (its dims may be inferred).
    if (weights.has_inferred_dims()) {
        CTK_CHECK(weights.rank() == 2, ShapeError, where, ": weights ", weights.to_string(),
                  " with inferred dims must have rank 2; they become [", total / hidden_size, ", ",
                  hidden_size, "]");
        weights.impl()->shape = {total / hidden_size, hidden_size};
    }
    CTK_CHECK(detail::product(weights.shape(), 0, weights.shape().size()) == total, ShapeError, where,
              ": weights ", weights.to_string(), " hold ",
              detail::product(weights.shape(), 0, weights.shape().size()), " values but this stack needs ",
              total, " ([", total / hidden_size, ", ", hidden_size, "])");

    auto body = [&](const std::vector<Variable>& in) {
        const Variable flat = reshape(weights, {total});
        auto piece = [&](int64_t& offset, Dims shape) {
            const int64_t n = detail::product(shape, 0, shape.size());
            Variable v = reshape(slice(flat, {Axis(0)}, {offset}, {offset + n}), shape);
            offset += n;
            return v;
        };
        int64_t matrix_at = 0, bias_at = s.matrices();
        const int64_t gh = s.gates * s.hidden;
        Variable input = in[0];
        for (int64_t l = 0; l < s.layers; ++l) {
            std::vector<Variable> outs;
            for (int64_t d = 0; d < s.dirs; ++d) {
                const Variable w = piece(matrix_at, {gh, s.layer_input(l)});
                const Variable r = piece(matrix_at, {gh, s.hidden});
                const Variable bw = piece(bias_at, {gh});
                const Variable br = piece(bias_at, {gh});
                outs.push_back(direction(s, input, w, r, bw, br, d == 1));
            }
            input = outs.size() == 1 ? outs[0] : Variable(splice(outs, Axis(0)));  // [forward, backward]
        }
        return input;
    };
    return detail::make_block_op("OptimizedRNNStack", {operand}, body, name);
}

}  // namespace ctk
