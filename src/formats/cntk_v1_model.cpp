// CNTK v1 (cntk.exe / BrainScript) model files: read only. Turns the parsed nodes (cntk_v1_file.h) into a
// ctk graph as CNTK 2.x's LoadLegacyModel does (BackCompat.cpp): LearnableParameters with a learning-rate
// multiplier of 0 become constants, inputs get the batch and default sequence axes, and the composite's
// outputs are the criterion, evaluation and output nodes plus any other node nothing consumes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "ctk/core/error.h"
#include "ctk/formats/model.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/kernels/tensor_ops.h"
#include "formats/cntk_v1_file.h"
#include "formats/cntk_v1_nodes.h"

namespace ctk {
namespace {

using detail::cntk_v1::ColDims;
using detail::cntk_v1::Network;
using detail::cntk_v1::Node;
using detail::cntk_v1::numel;
using detail::cntk_v1::precision_dtype;
using detail::cntk_v1::row_major;

// The most values the reader builds from the file's shapes rather than its bytes (RowStack's broadcast
// zeros): a small file cannot make it allocate gigabytes.
constexpr int64_t kMaxBroadcastValues = int64_t(1) << 26;

template <typename T>
std::vector<T> reversed(const std::vector<T>& v) {
    return std::vector<T>(v.rbegin(), v.rend());
}

class GraphBuilder {
public:
    explicit GraphBuilder(const Network& net) : net_(net), vars_(net.nodes.size()) {
        // A Times or Convolution weight and ROIPooling's regions keep their stored rank; elsewhere the
        // trailing singleton dims of a v1 matrix ([n x 1] biases, [1 x 1] scalars) are dropped, so a bias [n
        // x 1] is the vector [n] and broadcasting keeps the operand's shape (CNTK's Python API would show (1,
        // n)).
        for (const Node& n : net.nodes) {
            if ((n.op == "Times" || n.op == "Convolution") && !n.inputs.empty())
                keep_rank_.insert(n.inputs[0]);
            if (n.op == "ROIPooling" && n.inputs.size() == 2) keep_rank_.insert(n.inputs[1]);  // [R, 4]
        }
    }

    Variable get(size_t root) {
        // Iterative post-order so that a deep (or hostile) graph cannot overflow the stack.
        std::vector<std::pair<size_t, bool>> stack{{root, false}};
        std::vector<uint8_t>& state = state_;
        if (state.empty()) state.assign(net_.nodes.size(), 0);  // 0 new, 1 open, 2 done
        while (!stack.empty()) {
            auto [i, expanded] = stack.back();
            stack.pop_back();
            if (state[i] == 2) continue;
            if (expanded) {
                vars_[i] = convert(i);
                state[i] = 2;
                continue;
            }
            if (state[i] == 1)
                CTK_THROW(IOError, "CNTK v1 model '", net_.path, "': node '", net_.nodes[i].name,
                          "' depends on itself without a PastValue or FutureValue in the loop");
            state[i] = 1;
            stack.push_back({i, true});
            // A delay's operand may come later in a recurrent loop: it is bound after the loop is built.
            const bool delay = is_delay(net_.nodes[i].op);
            for (auto it = net_.nodes[i].inputs.rbegin(); it != net_.nodes[i].inputs.rend(); ++it) {
                if (delay && it == net_.nodes[i].inputs.rend() - 1) continue;
                if (state[*it] == 1)
                    CTK_THROW(IOError, "CNTK v1 model '", net_.path, "': node '", net_.nodes[i].name,
                              "' is part of a cycle through '", net_.nodes[*it].name, "'");
                if (state[*it] == 0) stack.push_back({*it, false});
            }
        }
        // Close the loops: each delay's operand, converted now, replaces its placeholder.
        while (!open_loops_.empty()) {
            auto [delay, hole] = open_loops_.back();
            open_loops_.pop_back();
            const size_t operand = net_.nodes[delay].inputs[0];
            get(operand);
            // Through the operand's graph when the delay is upstream of it (a loop: the back edge is then
            // kept weak, not as a reference cycle); else through the delay's own graph.
            const Variable& bound = vars_[operand];
            FunctionPtr root = vars_[delay].owner();
            if (FunctionPtr owner = bound.owner()) {
                const std::vector<Variable> holes = combine({bound})->placeholders();
                if (std::find(holes.begin(), holes.end(), hole) != holes.end()) root = owner;
            }
            root->replace_placeholders({{hole, bound}});
            closed_loops_ = true;
        }
        return vars_[root];
    }

private:
    static bool is_delay(const std::string& op) { return op == "PastValue" || op == "FutureValue"; }

    [[noreturn]] void corrupt(const Node& n, const std::string& what) const {
        detail::cntk_v1::corrupt(net_, n, what);
    }
    [[noreturn]] void unsupported(const Node& n, const std::string& what) const {
        detail::cntk_v1::unsupported(net_, n, what);
    }
    void arity(const Node& n, size_t lo, size_t hi) const { detail::cntk_v1::check_arity(net_, n, lo, hi); }
    const Variable& in(const Node& n, size_t k) const { return vars_[n.inputs[k]]; }
    const Node& in_node(const Node& n, size_t k) const { return net_.nodes[n.inputs[k]]; }

    Variable convert(size_t index) {
        const Node& n = net_.nodes[index];
        try {
            return convert_node(index, n);
        } catch (const NotImplementedError&) {
            throw;
        } catch (const IOError&) {
            throw;
        } catch (const Error& e) {
            // A shape or value the ops refuse: the file does not describe a consistent network.
            corrupt(n, e.what());
        }
    }

    Tensor leaf_value(const Node& n, size_t index) const {
        Dims dims = row_major(n.dims);
        if (!keep_rank_.count(index))
            while (!dims.empty() && dims.front() == 1) dims.erase(dims.begin());
        return n.value.reshape(dims);
    }

    Variable convert_node(size_t index, const Node& n) {
        const std::string& op = n.op;
        const bool leaf = op == "LearnableParameter" || op == "InputValue" || op == "SparseInputValue";
        if (leaf && !n.inputs.empty()) corrupt(n, "a leaf node with inputs");
        if (op == "LearnableParameter") {
            const Tensor v = leaf_value(n, index);
            return n.learning_rate_multiplier == 0 ? constant(v, n.name) : parameter_from(v, n.name);
        }
        if (op == "InputValue" || op == "SparseInputValue") return make_input(n);
        if (op == "Mean" || op == "InvStdDev") {
            // Precomputed statistics: constants shaped like the node's operand when the sizes agree.
            arity(n, 1, 1);
            Dims dims{n.rows * n.cols};
            if (in(n, 0).shape_known() && !in(n, 0).has_inferred_dims() && numel(in(n, 0).shape()) == dims[0])
                dims = in(n, 0).shape();
            return constant(n.value.reshape(dims), n.name);
        }

        if (FunctionPtr f = unary_op(n); f) return f;
        if (FunctionPtr f = binary_op(n); f) return f;
        if (op == "Softmax" || op == "LogSoftmax") {
            arity(n, 1, 1);  // v1 normalizes over the whole sample
            return op == "Softmax" ? softmax(in(n, 0), std::nullopt, n.name)
                                   : log_softmax(in(n, 0), std::nullopt, n.name);
        }
        // The v1 criteria take (labels, prediction); ctk's (as CNTK 2.x's) take (prediction, labels).
        if (op == "CrossEntropyWithSoftmax") {
            arity(n, 2, 2);
            return cross_entropy_with_softmax(in(n, 1), in(n, 0), Axis(-1), n.name);
        }
        if (op == "SquareError") {
            arity(n, 2, 2);
            return squared_error(in(n, 1), in(n, 0), n.name);
        }
        // Logistic(labels, prediction[, weight]): binary cross entropy summed over the sample.
        if (op == "Logistic") {
            arity(n, 2, 3);
            return n.inputs.size() == 3 ? weighted_binary_cross_entropy(in(n, 1), in(n, 0), in(n, 2), n.name)
                                        : binary_cross_entropy(in(n, 1), in(n, 0), n.name);
        }
        // ErrorPrediction is the older name of ClassificationError (the same node class).
        if (op == "ClassificationError" || op == "ErrorPrediction") {
            arity(n, 2, 3);
            int64_t top_n = 1;
            if (n.inputs.size() == 3) top_n = top_n_value(n);
            return classification_error(in(n, 1), in(n, 0), top_n, Axis(-1), n.name);
        }
        if (op == "PerDimMeanVarNormalization") {
            arity(n, 3, 3);
            return element_times(minus(in(n, 0), in(n, 1)), in(n, 2), n.name);
        }
        if (op == "Times") return make_times(n);
        if (op == "ReduceElements") return make_reduce(n);
        if (op == "TransposeTimes") {
            // A^T B in CNTK's column-major algebra: x times A with A's two axes swapped in ctk's order.
            arity(n, 2, 2);
            const Variable& a = in(n, 0);
            if (a.rank() != 2) unsupported(n, "a left operand that is not a matrix");
            return times(in(n, 1), transpose(a, {1, 0}), 1, -1, n.name);
        }
        if (op == "DiagTimes") {  // diag(d) x: d a column vector [rows x 1], x a sample of rows values
            arity(n, 2, 2);
            const Variable& d = in(n, 0);
            return element_times(reshape(d, {numel(d.shape())}), in(n, 1), n.name);
        }
        if (op == "SumColumnElements") {  // the sum of each sample: a scalar per sample
            arity(n, 1, 1);
            return reduce_sum(in(n, 0), {Axis::all_static_axes()}, false, n.name);
        }
        if (op == "SumElements") {  // the sum of everything: over every sample of the minibatch too
            arity(n, 1, 1);
            return reduce_sum(in(n, 0), {Axis::all_axes()}, false, n.name);
        }
        if (op == "CosDistance") {  // the cosine of the angle between the two samples
            arity(n, 2, 2);
            return cosine_distance(in(n, 0), in(n, 1), n.name);
        }
        if (op == "If") {  // If(flag, then, else)
            arity(n, 3, 3);
            return element_select(in(n, 0), in(n, 1), in(n, 2), n.name);
        }
        if (op == "LabelsToGraph") {
            arity(n, 1, 1);
            return alias(in(n, 0), n.name);
        }
        if (op == "TransposeDimensions" || op == "Transpose") {
            arity(n, 1, 1);
            const Variable& x = in(n, 0);
            if (!n.permutation.empty()) return permute(n, x);
            return swapaxes(x, row_major_axis(n, x, n.axis1), row_major_axis(n, x, n.axis2), n.name);
        }
        if (op == "RowStack") {
            arity(n, 1, 64);
            std::vector<Variable> parts;
            for (size_t k = 0; k < n.inputs.size(); ++k) parts.push_back(in(n, k));
            const int axis = row_major_axis(n, parts[0], n.axis1);
            // CNTK's RowStack broadcasts an operand's dims of 1 along the other axes (a [1 x 1 x C] block
            // of zeros spliced to a [H x W x C] image pads its channels).
            Dims target = parts[0].shape();
            for (const Variable& p : parts) {
                if (!p.shape_known() || p.rank() != static_cast<int>(target.size())) continue;
                for (size_t a = 0; a < target.size(); ++a) target[a] = std::max(target[a], p.shape()[a]);
            }
            for (Variable& p : parts) {
                if (!p.shape_known() || p.rank() != static_cast<int>(target.size())) continue;
                Dims want = target;
                want[static_cast<size_t>(axis)] = p.shape()[static_cast<size_t>(axis)];
                if (want == p.shape()) continue;
                // The zeros it broadcasts against are sized by the file's shapes, not its bytes: bounded
                // (libFuzzer found a 1.6 KB file asking for 19 GB here).
                int64_t values = 1;
                for (int64_t d : want)
                    if (__builtin_mul_overflow(values, std::max<int64_t>(d, 0), &values)) values = -1;
                if (values < 0 || values > kMaxBroadcastValues)
                    corrupt(n, detail::concat("an operand broadcast to ", dims_to_string(want),
                                              ", more than ", kMaxBroadcastValues, " values"));
                p = plus(p, constant(want, 0.0, p.dtype()));
            }
            return splice(parts, Axis(axis), n.name);
        }
        if (op == "Slice" || op == "RowSlice") return make_slice(n);
        if (op == "Reshape") return make_reshape(n);
        if (op == "PastValue" || op == "FutureValue") {
            arity(n, 1, 2);
            if (n.time_step < 1) corrupt(n, detail::concat("time step ", n.time_step));
            Variable x = in(n, 0);
            if (state_[n.inputs[0]] != 2) {  // inside a recurrent loop: bound when the loop closes
                x = placeholder(n.name + ".operand");
                open_loops_.push_back({index, x});
            }
            const DataType dtype = precision_dtype(n.precision);
            const Variable init = n.inputs.size() == 2 ? in(n, 1) : constant(n.initial_value, dtype);
            return op == "PastValue" ? sequence::past_value(x, init, n.time_step, n.name)
                                     : sequence::future_value(x, init, n.time_step, n.name);
        }
        // The dropout rate is not in the file (CNTK's SGD set it); evaluation passes the data through.
        if (op == "Dropout" || op == "Pass") {
            arity(n, 1, 1);
            return alias(in(n, 0), n.name);
        }
        if (op == "Hardmax") {
            arity(n, 1, 1);  // over the whole sample, as Softmax
            return hardmax(in(n, 0), std::nullopt, n.name);
        }
        if (op == "LogPlus") {
            arity(n, 2, 2);
            return log_add_exp(in(n, 0), in(n, 1), n.name);
        }
        if (op == "Clip") {  // Clip(min, max, x) with tensor bounds
            arity(n, 3, 3);
            return element_min(element_max(in(n, 2), in(n, 0)), in(n, 1), n.name);  // as clip
        }
        if (op == "Convolution") return make_convolution(n);
        if (op == "Pooling") return make_pooling(n);
        if (op == "BatchNormalization") return make_batch_norm(n);
        return detail::cntk_v1::convert_added_node(net_, n, vars_);
    }

    // The element-wise nodes; null when `n` is none of them.
    FunctionPtr unary_op(const Node& n) const {
        const std::string& op = n.op;
        auto one = [&]() -> const Variable& {
            arity(n, 1, 1);
            return in(n, 0);
        };
        if (op == "RectifiedLinear") return relu(one(), n.name);
        if (op == "Sigmoid") return sigmoid(one(), n.name);
        if (op == "Tanh") return tanh(one(), n.name);
        if (op == "Exp") return exp(one(), n.name);
        if (op == "Log") return log(one(), n.name);
        if (op == "Sqrt") return sqrt(one(), n.name);
        if (op == "Abs") return abs(one(), n.name);
        if (op == "Negate") return negate(one(), n.name);
        if (op == "Reciprocal") return reciprocal(one(), n.name);
        if (op == "Floor") return floor(one(), n.name);
        if (op == "Cosine") return cos(one(), n.name);
        if (op == "Sin") return sin(one(), n.name);
        if (op == "StableSigmoid") return sigmoid(one(), n.name);
        return nullptr;
    }
    FunctionPtr binary_op(const Node& n) const {
        const std::string& op = n.op;
        if (op != "Plus" && op != "Minus" && op != "ElementTimes" && op != "ElementDivide" && op != "Scale")
            return nullptr;
        arity(n, 2, 2);
        const Variable &a = in(n, 0), &b = in(n, 1);
        if (op == "Plus") return plus(a, b, n.name);
        if (op == "Minus") return minus(a, b, n.name);
        if (op == "ElementDivide") return element_divide(a, b, n.name);
        return element_times(a, b, n.name);  // ElementTimes, and Scale(scalar, x)
    }

    Variable make_input(const Node& n) const {
        const Dims shape = row_major(n.dims);
        const DataType dtype = precision_dtype(n.precision);
        const bool sparse = n.op == "SparseInputValue";
        const bool needs_gradient = n.learning_rate_multiplier != 0;
        // CNTK's internal axis names: "" or "*..." the default sequence axis, "__noSequenceAxis..." none.
        const std::string& axis = n.dynamic_axis;
        if (axis.rfind("__noSequenceAxis", 0) == 0)
            return input_variable(shape, dtype, needs_gradient, sparse, default_batch_axes(), n.name);
        const Axis seq = axis.empty() || axis[0] == '*' ? Axis::default_dynamic_axis() : Axis::dynamic(axis);
        return sequence_input_variable(shape, dtype, needs_gradient, sparse, seq, n.name);
    }

    int64_t top_n_value(const Node& n) const {
        const Node& k = in_node(n, 2);
        if (k.op != "LearnableParameter" || k.value.numel() != 1)
            unsupported(n, "the top-N input must be a one-element LearnableParameter");
        const double v = k.value.to_vector<double>()[0];
        if (!(v >= 1 && v <= 1e6) || v != std::floor(v))
            corrupt(n, detail::concat("top-N value ", v, " is not a positive integer"));
        return static_cast<int64_t>(v);
    }

    int row_major_axis(const Node& n, const Variable& x, int32_t v1_axis) const {
        return detail::cntk_v1::row_major_axis(net_, n, x, v1_axis);
    }

    Variable make_reduce(const Node& n) {
        arity(n, 1, 1);
        const Variable& x = in(n, 0);
        const std::string& op = n.reduce_op;
        // Axis 0: all static axes; -1: all axes; -2: the sequence axis (a sum only); else 1-based static.
        const std::vector<int32_t>& v1_axes = n.reduce_axes;
        const int32_t first = v1_axes.front();
        if (v1_axes.size() > 1 || first > 0) {
            for (int32_t a : v1_axes)
                if (a <= 0) corrupt(n, detail::concat("reduction axis ", a, " among several"));
        } else if (first == -2) {
            if (op != "Sum" && op != "Plus") unsupported(n, "reduction '" + op + "' over the sequence axis");
            return sequence::reduce_sum(x, n.name);
        } else if (first < -1) {
            unsupported(n, detail::concat("reduction axis ", first, " (a dynamic axis)"));
        }
        std::vector<Axis> axes;
        if (first == 0) {
            axes = {Axis::all_static_axes()};
        } else if (first == -1) {
            axes = {Axis::all_axes()};
        } else {
            for (int32_t a : v1_axes) axes.push_back(Axis(row_major_axis(n, x, a)));
        }
        if (op == "Argmax" || op == "Argmin") {
            if (axes.size() != 1 || first <= 0) unsupported(n, op + " over more than one static axis");
            Variable y = op == "Argmax" ? argmax(x, axes[0]) : argmin(x, axes[0]);
            if (n.keep_dims) return alias(y, n.name);
            Dims s = y.shape();
            s.erase(s.begin() + axes[0].static_index());
            return reshape(y, s, std::nullopt, std::nullopt, n.name);
        }
        FunctionPtr (*fn)(const Variable&, const std::vector<Axis>&, bool, const std::string&) = nullptr;
        if (op == "Sum" || op == "Plus") fn = reduce_sum;
        if (op == "Mean") fn = reduce_mean;
        if (op == "Max") fn = reduce_max;
        if (op == "Min") fn = reduce_min;
        if (op == "Prod") fn = reduce_prod;
        if (op == "LogSum") fn = reduce_log_sum_exp;
        if (!fn) unsupported(n, "reduction '" + op + "'");
        // All static axes without keepDimensions leave CNTK's [1], not a scalar.
        if (first == 0 && !n.keep_dims)
            return reshape(fn(x, axes, false, ""), {1}, std::nullopt, std::nullopt, n.name);
        return fn(x, axes, n.keep_dims, n.name);
    }

    Variable make_slice(const Node& n) {
        arity(n, 1, 1);
        const Variable& x = in(n, 0);
        std::vector<Axis> axes;
        Dims begin, end, strides;
        for (const Node::SliceAxis& a : n.slices) {
            const int ax = row_major_axis(n, x, a.axis);
            const int64_t dim = x.shape()[static_cast<size_t>(ax)];
            // CNTK's SliceNode: a negative begin and an end <= 0 count from the end of the axis.
            const int64_t b = a.begin < 0 ? a.begin + dim : a.begin, e = a.end <= 0 ? a.end + dim : a.end;
            if (b < 0 || e > dim || b >= e)
                corrupt(n, detail::concat("slice [", a.begin, ", ", a.end, ") of axis ", a.axis, " of ",
                                          x.to_string()));
            axes.push_back(Axis(ax));
            begin.push_back(b);
            end.push_back(e);
            strides.push_back(a.stride);
        }
        return slice(x, axes, begin, end, strides, n.name);
    }

    // A whole permutation (column-major: out dim i is in dim perm[i]) in ctk's row-major order.
    Variable permute(const Node& n, const Variable& x) const {
        const int r = x.rank();
        if (!x.shape_known() || static_cast<int>(n.permutation.size()) != r)
            corrupt(n,
                    detail::concat("a permutation of ", n.permutation.size(), " axes for ", x.to_string()));
        std::vector<int> perm(static_cast<size_t>(r));
        for (int j = 0; j < r; ++j)
            perm[static_cast<size_t>(j)] = r - 1 - static_cast<int>(n.permutation[r - 1 - j]);
        return transpose(x, perm, n.name);
    }

    Variable make_reshape(const Node& n) {
        arity(n, 1, 1);
        const Variable& x = in(n, 0);
        if (!x.shape_known()) unsupported(n, "an operand whose shape is not known when the file is read");
        const int r = x.rank();
        const int b = n.reshape_begin, e = n.reshape_end == 0 ? r : n.reshape_end;
        if (b < 0 || e < b || e > r) corrupt(n, detail::concat("axes [", b, ", ", e, ") of ", x.to_string()));
        Dims dims = row_major(n.reshape_dims);
        for (int64_t& d : dims)
            if (d == 0) d = -1;  // CNTK: one dim of 0 is inferred
        return reshape(x, dims, r - e, r - b, n.name);
    }

    Variable make_times(const Node& n) {
        arity(n, 2, 2);
        const Variable& w = in(n, 0);
        Variable x = in(n, 1);
        // v1 Times(W, x) is x times W in ctk's (CNTK Python's) order: W [out x in] column-major is
        // [in..., out...] row-major, with output_rank trailing output dims. Rank 0 meant a scalar product.
        if (w.rank() == 0 || x.rank() == 0) return element_times(w, x, n.name);
        if (n.output_rank < 1 || n.output_rank >= w.rank())
            corrupt(
                n, detail::concat("output rank ", n.output_rank, " does not fit the weight ", w.to_string()));
        const Dims& ws = w.shape();
        const Dims w_in(ws.begin(), ws.end() - n.output_rank);
        const Dims& xs = x.shape();
        const bool tail_matches =
            xs.size() >= w_in.size() && std::equal(w_in.begin(), w_in.end(), xs.end() - w_in.size());
        // A flattened v1 matrix column (e.g. an image fed to a dense weight): reshape x to W's input dims.
        if (!tail_matches && !x.has_inferred_dims() && numel(xs) == numel(w_in))
            x = reshape(x, w_in, std::nullopt, std::nullopt, n.name + ".reshape");
        return times(x, w, static_cast<int>(n.output_rank), -1, n.name);
    }

    void check_geometry(const Node& n, const Variable& x) const {
        const auto& g = n.conv;
        if (g.image_layout != 1)
            unsupported(n, "only the CHW image layout (cuDNN's, [W x H x C] column-major) is mapped");
        for (bool s : g.sharing)
            if (!s) unsupported(n, "unshared weights (sharing = false)");
        for (int64_t p : g.lower_pad)
            if (p != 0) unsupported(n, "explicit lowerPad (ctk pads only through autoPadding)");
        for (int64_t p : g.upper_pad)
            if (p != 0) unsupported(n, "explicit upperPad (ctk pads only through autoPadding)");
        if (g.transpose) unsupported(n, "transposed convolution (deconvolution)");
        if (g.kernel.empty() || g.kernel.size() != static_cast<size_t>(x.rank()))
            corrupt(n, detail::concat("kernel of rank ", g.kernel.size(), " for operand ", x.to_string()));
        if (g.strides.empty() || g.auto_pad.empty()) corrupt(n, "empty strides or autoPad list");
        if (g.strides.size() > g.kernel.size() || g.auto_pad.size() > g.kernel.size())
            corrupt(n, "more strides or autoPad entries than kernel axes");
        for (int64_t s : g.strides)
            if (s <= 0) corrupt(n, "a stride of 0");
    }

    Variable make_convolution(const Node& n) {
        arity(n, 2, 2);
        const auto& g = n.conv;
        Variable w = in(n, 0);
        const Variable& x = in(n, 1);
        check_geometry(n, x);
        if (g.kernel.back() != x.shape().front())
            unsupported(n, detail::concat("a kernel spanning ", g.kernel.back(), " of the ",
                                          x.shape().front(), " input channels (channel-axis convolution)"));
        // Some v1 models store the kernel as a 2-D [out x kW*kH*C] matrix; its memory is the kernel tensor
        // [kW x kH x C x out] (BackCompat.cpp reinterprets it the same way).
        if (w.rank() == 2) {
            const Node& wn = in_node(n, 0);
            if (wn.op != "LearnableParameter")
                unsupported(n, "a 2-D kernel that is not a LearnableParameter");
            ColDims full = g.kernel;
            full.push_back(w.shape()[1]);  // the column-major first dim, the output channels
            if (numel(row_major(full)) != wn.value.numel())
                corrupt(n, "the 2-D kernel's size does not match the kernel shape");
            const Tensor v = wn.value.reshape(row_major(full));
            w = wn.learning_rate_multiplier == 0 ? constant(v, wn.name) : parameter_from(v, wn.name);
        }
        Dims dilation = g.dilation.empty() ? Dims{1} : row_major(g.dilation);
        if (dilation.size() > g.kernel.size()) corrupt(n, "more dilation entries than kernel axes");
        return convolution(w, x, row_major(g.strides), reversed(g.auto_pad), dilation, 1, n.name);
    }

    Variable make_pooling(const Node& n) {
        arity(n, 1, 1);
        const auto& g = n.conv;
        const Variable& x = in(n, 0);
        check_geometry(n, x);
        if (g.pool_kind != 1 && g.pool_kind != 2) corrupt(n, detail::concat("pool kind ", g.pool_kind));
        // The window and stride on the channel axis (column-major last) must be 1: pooling per channel.
        if (g.kernel.back() != 1 || (g.strides.size() == g.kernel.size() && g.strides.back() != 1))
            unsupported(n, "pooling across channels");
        for (int64_t k : g.kernel)
            if (k <= 0) corrupt(n, "a pooling window of 0");
        const PoolingType type = g.pool_kind == 1 ? PoolingType::max : PoolingType::average;
        return pooling(x, type, row_major(g.kernel), row_major(g.strides), reversed(g.auto_pad),
                       g.ceil_out_dim, g.include_pad, n.name);
    }

    Variable make_batch_norm(const Node& n) {
        const auto& b = n.bn;
        // Before version 19 the running sample count was a field of the node; CNTK then adds it as a
        // sixth input (a constant named <node>.run_sample_count).
        if (b.has_sample_count) {
            arity(n, 5, 5);
        } else {
            arity(n, 6, 6);
        }
        Variable count = b.has_sample_count ? constant(Dims{1}, static_cast<double>(b.sample_count),
                                                       in(n, 0).dtype(), n.name + ".run_sample_count")
                                            : in(n, 5);
        if (!std::isfinite(b.epsilon) || b.epsilon < 0) corrupt(n, detail::concat("epsilon ", b.epsilon));
        if (std::isnan(b.normalization_time_constant)) corrupt(n, "a NaN normalization time constant");
        // The blend time constant only mixes batch and running statistics in training; ctk's op does not
        // take one, so inference is exact and training from a loaded model uses batch statistics.
        Variable variance = in(n, 4);
        if (b.inverse_std_dev) {
            // CNTK's conversion of the old inverse standard deviation isd: variance = 1 / isd^2 + epsilon
            // (CNTK adds epsilon where the exact inverse would subtract it; ctk reads the file as CNTK did).
            const Node& v = in_node(n, 4);
            if (v.op != "LearnableParameter")
                unsupported(n, "an inverse std deviation that is not a parameter");
            const Tensor isd = variance.value().to(DataType::f64);
            const Tensor var = plus(reciprocal(square(isd)), Tensor::scalar(b.epsilon, DataType::f64));
            variance = constant(var.to(variance.dtype()), variance.name());
        }
        return batch_normalization(in(n, 0), in(n, 1), in(n, 2), in(n, 3), variance, count, b.spatial,
                                   b.normalization_time_constant, 0.0, b.epsilon, n.name);
    }

    const Network& net_;
    std::vector<Variable> vars_;
    std::vector<std::pair<size_t, Variable>> open_loops_;  // (delay node, placeholder for its operand)

public:
    bool closed_loops_ = false;  // the nodes after a loop were built before its shapes were known
    std::vector<uint8_t> state_;
    std::set<size_t> keep_rank_;
};

bool is_leaf_op(const std::string& op) {
    return op == "LearnableParameter" || op == "InputValue" || op == "SparseInputValue";
}

}  // namespace

FunctionPtr load_cntk_v1_model(const std::string& path) {
    const Network net = detail::cntk_v1::read_network(path);

    // CNTK's roots (ComputationNetwork::DetermineSetOfAllRoots): the criterion, evaluation and output
    // nodes, and every node nothing consumes; leaves are skipped (BackCompat.cpp). ctk orders them.
    std::vector<size_t> roots;
    std::vector<bool> taken(net.nodes.size(), false), consumed(net.nodes.size(), false);
    auto add = [&](size_t i) {
        if (!taken[i] && !is_leaf_op(net.nodes[i].op)) roots.push_back(i);
        taken[i] = true;
    };
    for (const auto* group : {&net.criteria, &net.evaluation, &net.outputs})
        for (size_t i : *group) add(i);
    for (const Node& n : net.nodes)
        for (size_t i : n.inputs) consumed[i] = true;
    for (size_t i = 0; i < net.nodes.size(); ++i)
        if (!consumed[i]) add(i);
    if (roots.empty()) CTK_THROW(IOError, "CNTK v1 model '", path, "' has no computation nodes");

    // A criterion or metric ctk cannot compute (lattice sequence training, CNTK v1's NCE, ...) does not
    // keep the model from loading: it is left out with a warning, once its inputs are known to convert.
    std::set<size_t> training_only(net.criteria.begin(), net.criteria.end());
    training_only.insert(net.evaluation.begin(), net.evaluation.end());
    for (size_t i : net.outputs) training_only.erase(i);
    GraphBuilder builder(net);
    std::vector<Variable> outputs;
    for (size_t i : roots) {
        if (!training_only.count(i)) {
            outputs.push_back(builder.get(i));
            continue;
        }
        for (size_t input : net.nodes[i].inputs) builder.get(input);
        try {
            outputs.push_back(builder.get(i));
        } catch (const NotImplementedError& e) {
            std::fprintf(stderr, "WARNING: %s; the model is loaded without it\n", e.what());
        }
    }
    if (outputs.empty())
        CTK_THROW(NotImplementedError, "CNTK v1 model '", path, "': no node ctk can compute");
    FunctionPtr model = combine(outputs, "");
    // Closing a loop re-infers upstream of it; what consumes the loop's output is re-inferred here.
    if (builder.closed_loops_) model->replace_placeholders({});
    return model;
}

}  // namespace ctk
