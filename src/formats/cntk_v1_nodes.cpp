// CNTK v1 model files: the node types CNTK 2.x added to cntk.exe's networks (and wrote through
// SaveAsLegacyModel), the legacy image and reshaping nodes of older BrainScript and NDL models, and the
// packed sequence nodes behind BrainScript's Gather/Scatter. Semantics as CNTK's ComputationNetworkLib
// nodes compute them, axes translated from CNTK's column-major sample layout to ctk's row-major one.
#include <cfloat>
#include <cmath>
#include <map>

#include "ctk/core/error.h"
#include "ctk/graph/graph_ops.h"
#include "formats/cntk_v1_nodes.h"

namespace ctk::detail::cntk_v1 {
namespace {

class NodeMapper {
public:
    NodeMapper(const Network& net, const Node& n, const std::vector<Variable>& vars)
        : net_(net), n_(n), vars_(vars) {}

    FunctionPtr map() {
        const std::string& op = n_.op;
        const std::string& name = n_.name;
        if (FunctionPtr f = unary(); f) return f;
        if (FunctionPtr f = comparison(); f) return f;
        if (op == "Pow") return pow(in(0, 2, 2), in(1), name);
        if (op == "Cast") {
            return cast(in(0, 1, 1), precision_dtype(n_.output_precision), name);
        }
        // CrossEntropy(labels, p) = -sum(labels * log p) per sample (CNTK's CrossEntropyNode; a [1]).
        if (op == "CrossEntropy") {
            const Variable& labels = in(0, 2, 2);
            const FunctionPtr sum =
                reduce_sum(element_times(labels, log(in(1))), {Axis::all_static_axes()}, false);
            return reshape(negate(sum), {1}, std::nullopt, std::nullopt, name);
        }
        // The regularizers: the sum of |x| and the Frobenius norm of x, over all of it.
        if (op == "MatrixL1Reg") return reduce_sum(abs(in(0, 1, 1)), {Axis::all_axes()}, false, name);
        if (op == "MatrixL2Reg")
            return sqrt(reduce_sum(square(in(0, 1, 1)), {Axis::all_axes()}, false), name);
        if (op == "LookupTable") return lookup_table();
        if (op == "PerDimMeanVarDeNormalization")  // (x, mean, invStdDev): x / invStdDev + mean
            return plus(element_divide(in(0, 3, 3), in(2)), in(1), name);
        if (op == "ReconcileDynamicAxis") return reconcile_dynamic_axes(in(0, 2, 2), in(1), name);
        if (op == "Where") return sequence::where(in(0, 1, 1), name);
        // PackedIndex(source, Where(cond)) only feeds GatherPacked/ScatterPacked, which read the
        // condition through it; on its own it stands for the frame numbers.
        if (op == "PackedIndex") return alias(in(1, 2, 2), name);
        if (op == "GatherPacked") return gather_packed();
        if (op == "ScatterPacked") return scatter_packed();
        if (op == "RowRepeat") {
            // The sample repeated along its last column-major (first row-major) axis.
            const Variable& x = in(0, 1, 1);
            if (x.rank() == 0) unsupported(net_, n_, "a scalar operand");
            return splice(std::vector<Variable>(static_cast<size_t>(n_.repeats), x), Axis(0), name);
        }
        if (op == "LegacyReshape") return legacy_reshape();
        if (op == "MaxPooling" || op == "AveragePooling") return legacy_pooling();
        if (op == "Crop") return crop();
        if (op == "ROIPooling") return roi_pooling();
        if (op == "OptimizedRNNStack") return rnn_stack();
        if (op == "RandomSample")
            return random_sample(in(0, 1, 1), n_.num_samples, n_.allow_duplicates, kSentinelSeed, name);
        if (op == "RandomSampleInclusionFrequency")
            return random_sample_inclusion_frequency(in(0, 1, 1), n_.num_samples, n_.allow_duplicates,
                                                     kSentinelSeed, name);
        if (op == "ForwardBackward")  // (graph, logits)
            return forward_backward(in(0, 2, 2), in(1), n_.blank_token, n_.delay_constraint, name);
        if (op == "EditDistanceError")
            return edit_distance_error(in(0, 2, 2), in(1), n_.substitution_penalty, n_.deletion_penalty,
                                       n_.insertion_penalty, n_.squash_inputs, n_.tokens_to_ignore, name);
        if (op == "CosDistanceWithNegativeSamples") {  // (left, right, shift, negative count)
            const Variable& x = in(0, 4, 4);
            return cosine_distance_with_negative_samples(x, in(1), scalar_input(2), scalar_input(3), name);
        }
        // The ranking criteria take (gain, prediction, query id); ctk's (prediction, gain, group).
        if (op == "LambdaRank") return lambda_rank(in(1, 3, 3), in(0), in(2), name);
        if (op == "NDCG1Eval") return ndcg_at_1(in(1, 3, 3), in(0), in(2), name);
        if (op == "Trace") return alias(in(0, 1, 1), name);  // a printer: the value passes through
        return refused();
    }

private:
    const Variable& in(size_t k, size_t lo, size_t hi) const {
        check_arity(net_, n_, lo, hi);
        return in(k);
    }
    const Variable& in(size_t k) const { return vars_[n_.inputs[k]]; }
    const Node& node(size_t index) const { return net_.nodes[index]; }

    FunctionPtr unary() const {
        static const std::map<std::string, FunctionPtr (*)(const Variable&, const std::string&)> ops = {
            {"Acos", acos},
            {"Asin", asin},
            {"Atan", atan},
            {"Tan", tan},
            {"Cosh", cosh},
            {"Sinh", sinh},
            {"Asinh", asinh},
            {"Atanh", atanh},
            {"StraightThrough", straight_through},
            {"StopGradient", stop_gradient}};
        if (auto it = ops.find(n_.op); it != ops.end()) return it->second(in(0, 1, 1), n_.name);
        if (n_.op == "ExponentialLinearUnit") return elu(in(0, 1, 1), 1.0, n_.name);
        return nullptr;
    }
    FunctionPtr comparison() const {
        static const std::map<std::string,
                              FunctionPtr (*)(const Variable&, const Variable&, const std::string&)>
            ops = {{"Equal", equal},          {"NotEqual", not_equal}, {"Less", less},
                   {"LessEqual", less_equal}, {"Greater", greater},    {"GreaterEqual", greater_equal}};
        if (auto it = ops.find(n_.op); it != ops.end()) return it->second(in(0, 2, 2), in(1), n_.name);
        return nullptr;
    }

    // A constant scalar input (CosDistanceWithNegativeSamples' shift and count) as an integer.
    int64_t scalar_input(size_t k) const {
        const Variable& v = in(k);
        if (!(v.is_constant() || v.is_parameter()) || numel(v.shape()) != 1)
            unsupported(net_, n_, detail::concat("input ", k, " must be a one-value LearnableParameter"));
        const double value = v.value().to_vector<double>()[0];
        if (!(value >= 0 && value <= 1e9) || value != std::floor(value))
            corrupt(net_, n_, detail::concat("input ", k, " holds ", value, ", not a count"));
        return static_cast<int64_t>(value);
    }

    // LookupTable(E, x): E [d x V] column-major is ctk's [V, d]; a sample of k * V values holds k words,
    // whose embeddings are stacked into k * d values.
    FunctionPtr lookup_table() const {
        const Variable& e = in(0, 2, 2);
        const Variable& x = in(1);
        if (e.rank() != 2) unsupported(net_, n_, "an embedding that is not a matrix");
        const int64_t vocabulary = e.shape()[0], width = e.shape()[1];
        const int64_t values = numel(x.shape());
        if (values == vocabulary) return times(x, e, 1, -1, n_.name);
        if (vocabulary <= 0 || values % vocabulary != 0)
            corrupt(net_, n_,
                    detail::concat("a sample of ", values, " values for a vocabulary of ", vocabulary));
        const int64_t words = values / vocabulary;
        const FunctionPtr each = times(reshape(x, {words, vocabulary}), e, 1, -1);
        return reshape(each, {words * width}, std::nullopt, std::nullopt, n_.name);
    }

    // The packed Where/PackedIndex pair under GatherPacked and ScatterPacked: the condition's node.
    size_t condition_of(const Node& packed_index) const {
        if (packed_index.op != "PackedIndex" || packed_index.inputs.size() != 2)
            unsupported(net_, n_, "an index that is not PackedIndex(source, Where(condition))");
        const Node& where = node(packed_index.inputs[1]);
        if (where.op != "Where" || where.inputs.size() != 1)
            unsupported(net_, n_, "an index that is not PackedIndex(source, Where(condition))");
        return where.inputs[0];
    }
    // BrainScript's Gather(cond, x) = GatherPacked(PackedIndex(x, Where(cond)), x): x's frames where cond.
    FunctionPtr gather_packed() const {
        check_arity(net_, n_, 2, 2);
        const size_t condition = condition_of(node(n_.inputs[0]));
        return sequence::gather(in(1), vars_[condition], n_.name);
    }
    // Scatter(cond, y) = ScatterPacked(cond, PackedIndex(cond, Where(cond)), y): y's frames placed where
    // cond is nonzero, in cond's sequences.
    FunctionPtr scatter_packed() const {
        check_arity(net_, n_, 3, 3);
        const size_t condition = condition_of(node(n_.inputs[1]));
        if (condition != n_.inputs[0])
            unsupported(net_, n_, "a layout input other than the condition that selected the frames");
        return sequence::scatter(in(2), vars_[condition], n_.name);
    }

    // LegacyReshape: a reinterpretation of each sample as target_rows values, shaped by the target image
    // layout when it has that many (CNTK's frame stacking, target_rows a multiple of the sample, is not).
    FunctionPtr legacy_reshape() const {
        const Variable& x = in(0, 1, 1);
        if (!x.shape_known())
            unsupported(net_, n_, "an operand whose shape is not known when the file is read");
        if (numel(x.shape()) != n_.target_rows)
            unsupported(net_, n_,
                        detail::concat("a sample of ", numel(x.shape()), " values reshaped to ",
                                       n_.target_rows, " rows (CNTK stacked or split frames)"));
        Dims target = row_major(n_.target_layout);
        if (target.empty() || numel(target) != n_.target_rows) target = {n_.target_rows};
        return reshape(x, target, std::nullopt, std::nullopt, n_.name);
    }

    // MaxPooling / AveragePooling: whole windows (no padding) over width and height, per channel. In the
    // HWC layout a sample is (C, W, H) column-major, ctk's [H, W, C]: pooled as [C, H, W] and put back.
    FunctionPtr legacy_pooling() const {
        const Variable& x = in(0, 1, 1);
        const LegacyPooling& p = n_.legacy_pool;
        if (!x.shape_known() || x.rank() != 3)
            unsupported(net_, n_, detail::concat("an operand ", x.to_string(), " that is not an image"));
        const PoolingType type = n_.op == "MaxPooling" ? PoolingType::max : PoolingType::average;
        const Dims window{1, p.window_height, p.window_width},
            strides{1, p.vertical_stride, p.horizontal_stride};
        if (p.image_layout == 1) return pooling(x, type, window, strides, {false}, false, false, n_.name);
        const FunctionPtr chw = transpose(x, {2, 0, 1});
        const FunctionPtr pooled = pooling(chw, type, window, strides, {false}, false, false);
        return transpose(pooled, {1, 2, 0}, n_.name);
    }

    // Crop(x, reference[, ancestor of x, ancestor of reference]): x's last two axes cut to the reference's,
    // at the stored offsets, or at offsets found from the graph when they are DBL_MAX.
    FunctionPtr crop() const {
        const Variable& x = in(0, 2, 4);
        if (n_.inputs.size() == 3) corrupt(net_, n_, "3 inputs (2 or 4 expected)");
        if (n_.crop_x == DBL_MAX || n_.crop_y == DBL_MAX) {
            if (n_.inputs.size() == 4) return crop_automatic_with_ancestors(x, in(1), in(2), in(3), n_.name);
            return crop_automatic(x, in(1), n_.name);
        }
        for (double offset : {n_.crop_x, n_.crop_y})
            if (!(offset >= 0 && offset < 1e9) || offset != std::floor(offset))
                corrupt(net_, n_, detail::concat("crop offset ", offset));
        return crop_manual(x, in(1), static_cast<int64_t>(n_.crop_x), static_cast<int64_t>(n_.crop_y),
                           n_.name);
    }

    FunctionPtr roi_pooling() const {
        const Variable& features = in(0, 2, 2);
        if (net_.version < 26)
            unsupported(net_, n_, "regions given as fractions of the image (model versions before 26)");
        if (n_.roi_pool_kind != 1)
            unsupported(net_, n_,
                        detail::concat("pool kind ", n_.roi_pool_kind, " (CNTK computes max only)"));
        if (n_.roi_shape.size() != 2) corrupt(net_, n_, "an output shape that is not [width x height]");
        return roipooling(features, in(1), PoolingType::max, row_major(n_.roi_shape), n_.spatial_scale,
                          n_.name);
    }

    // OptimizedRNNStack(weights, input) (the reverse order before version 14): the input is the operand
    // with dynamic axes.
    FunctionPtr rnn_stack() const {
        check_arity(net_, n_, 2, 2);
        const RnnStack& a = n_.rnn;
        const bool input_first = !in(0).dynamic_axes().empty();
        const Variable& operand = input_first ? in(0) : in(1);
        const Variable& weights = input_first ? in(1) : in(0);
        if (a.axis != -1) unsupported(net_, n_, detail::concat("recurrence along static axis ", a.axis));
        static const std::map<std::string, std::string> names = {
            {"lstm", "lstm"}, {"gru", "gru"}, {"rnnReLU", "rnnReLU"},  {"rnnTanh", "rnnTanh"},
            {"LSTM", "lstm"}, {"GRU", "gru"}, {"RNN_RELU", "rnnReLU"}, {"RNN_TANH", "rnnTanh"}};
        auto it = names.find(a.recurrent_op);
        if (it == names.end()) corrupt(net_, n_, "recurrent op '" + a.recurrent_op + "'");
        return optimized_rnnstack(operand, weights, a.hidden_size, a.num_layers, a.bidirectional, it->second,
                                  n_.name);
    }

    // Node types whose layout ctk reads but whose computation it does not map.
    [[noreturn]] FunctionPtr refused() const {
        static const std::map<std::string, std::string> why = {
            {"EnvironmentInput", "a value that depends on whether CNTK was training"},
            {"NoiseContrastiveEstimation", "CNTK v1's NCE criterion (use cntk.losses.nce_loss)"},
            {"ClassBasedCrossEntropyWithSoftmax", "the class-based softmax criterion"},
            {"SequenceWithSoftmax", "lattice-based sequence training"},
            {"LatticeSequenceWithSoftmax", "lattice-based sequence training"},
            {"DummyCriterion", "a criterion whose gradient is an input"},
            {"KhatriRaoProduct", "the column-wise Khatri-Rao product"},
            {"Diagonal", "the diagonal of a matrix without a batch axis"},
            {"Assign", "an assignment into another node's value"},
            {"EpochAccumulator", "a value accumulated over an epoch"},
            {"TopK", "top_k, whose k CNTK did not save"}};
        auto it = why.find(n_.op);
        if (it != why.end()) unsupported(net_, n_, it->second + " is not mapped to ctk's graph");
        unsupported(net_, n_, "this node type is not mapped");
    }

    const Network& net_;
    const Node& n_;
    const std::vector<Variable>& vars_;
};

}  // namespace

[[noreturn]] void corrupt(const Network& net, const Node& n, const std::string& what) {
    CTK_THROW(IOError, "CNTK v1 model '", net.path, "': node '", n.name, "' (", n.op, ", byte offset ",
              n.offset, "): ", what);
}
[[noreturn]] void unsupported(const Network& net, const Node& n, const std::string& what) {
    CTK_THROW(NotImplementedError, "CNTK v1 model '", net.path, "': node '", n.name, "' (", n.op,
              "): ", what);
}
void check_arity(const Network& net, const Node& n, size_t lo, size_t hi) {
    if (n.inputs.size() < lo || n.inputs.size() > hi)
        corrupt(net, n,
                detail::concat("has ", n.inputs.size(), " inputs, expected ", lo == hi ? "" : "from ", lo,
                               lo == hi ? "" : detail::concat(" to ", hi)));
}
int row_major_axis(const Network& net, const Node& n, const Variable& x, int32_t v1_axis) {
    if (!x.shape_known()) unsupported(net, n, "an operand whose shape is not known when the file is read");
    if (v1_axis < 1 || v1_axis > x.rank())
        corrupt(net, n, detail::concat("axis ", v1_axis, " for operand ", x.to_string()));
    return x.rank() - v1_axis;
}

FunctionPtr convert_added_node(const Network& net, const Node& n, const std::vector<Variable>& vars) {
    return NodeMapper(net, n, vars).map();
}

}  // namespace ctk::detail::cntk_v1
