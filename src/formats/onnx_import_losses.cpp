// ONNX import of ops composed from ctk's element-wise and reduction ops: LayerNormalization, Mod, Trilu,
// and the two loss ops, NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss (opset 12+), as ctk graphs:
// input [N, C, d...] (log-probabilities, or scores for the softmax form), target [N, d...] (class indices,
// fed as f64), an optional per-class weight [C], an optional ignore_index whose frames count nothing, and
// reduction none / sum / mean (mean: divided by the summed weights of the counted frames, as ONNX defines
// it).
#include "formats/onnx_import_internal.h"

namespace ctk::detail::onnx_io::importer {
namespace {

std::vector<Variable> nll(NodeCtx& c, const Variable& input, const Variable& target, const Variable& weight,
                          const std::string& name) {
    const std::string reduction = attr_s(c, "reduction", "mean");
    CTK_CHECK(reduction == "none" || reduction == "sum" || reduction == "mean", ValueError, c.where,
              ": reduction '", reduction, "' is not none, sum or mean");
    const int class_axis = static_axis(c, input, 1);
    const int64_t classes = input.shape().at(static_cast<size_t>(class_axis));
    CTK_CHECK(classes > 0, ShapeError, c.where, ": the class axis of ", input.to_string(), " is not known");
    const DataType dt = input.dtype();
    const Variable t = cast(target, dt);
    // Frames with ignore_index take class 0 in the one-hot rows and weight 0.
    Variable keep = plus(element_times(t, constant(0.0, dt)), constant(1.0, dt));
    Variable safe = t;
    if (find_attr(c, "ignore_index")) {
        const Variable ignore = constant(static_cast<double>(attr_i(c, "ignore_index", 0)), dt);
        keep = not_equal(t, ignore);
        safe = element_select(keep, t, constant(0.0, dt));
    }
    const Variable onehot = one_hot(safe, classes, false, 1 - dyn_of(c, target));
    const Variable picked = reduce_sum(element_times(input, onehot), {Axis(class_axis)}, false);
    Variable weights = keep;
    if (weight.defined()) {
        Dims per_class{classes};
        per_class.resize(static_cast<size_t>(input.rank() - class_axis), 1);
        const Variable w =
            reduce_sum(element_times(onehot, reshape(weight, per_class)), {Axis(class_axis)}, false);
        weights = element_times(keep, w);
    }
    const Variable loss = negate(element_times(picked, weights));
    if (reduction == "none") return {alias(loss, name)};
    if (dyn_of(c, loss) != 0) unsupported(c, "a summed or mean loss over the batch axis");
    std::vector<Axis> all;
    for (int i = 0; i < loss.rank(); ++i) all.emplace_back(i);
    if (all.empty()) return {alias(loss, name)};
    const Variable total = reduce_sum(loss, all, false);
    if (reduction == "sum") return {alias(total, name)};
    return {element_divide(total, reduce_sum(weights, all, false), name)};
}

Variable optional_input(NodeCtx& c, int i) {
    return c.im.has_input(c, i) ? c.im.in(c, i) : Variable();
}

}  // namespace

std::vector<Variable> nll_loss_node(NodeCtx& c) {
    return nll(c, c.im.in(c, 0), c.im.in(c, 1), optional_input(c, 2), c.name);
}

std::vector<Variable> softmax_cross_entropy_loss_node(NodeCtx& c) {
    const Variable scores = c.im.in(c, 0);
    const Variable log_prob = log_softmax(scores, Axis(static_axis(c, scores, 1)));
    std::vector<Variable> out = nll(c, log_prob, c.im.in(c, 1), optional_input(c, 2), c.name);
    out.push_back(log_prob);  // the optional second output
    return out;
}

// LayerNormalization (opset 17): normalized over the axes from `axis` (default -1) on; outputs Y and the
// optional Mean and InvStdDev (with the normalized axes kept as 1s).
std::vector<Variable> layer_norm_node(NodeCtx& c) {
    const Variable x = c.im.in(c, 0);
    const int first = static_axis(c, x, attr_i(c, "axis", -1));
    std::vector<Axis> axes;
    for (int i = first; i < x.rank(); ++i) axes.emplace_back(i);
    const DataType dt = x.dtype();
    const Variable mean = reduce_mean(x, axes, true);
    const Variable centered = minus(x, mean);
    const Variable var = reduce_mean(element_times(centered, centered), axes, true);
    const Variable inv_std = reciprocal(sqrt(plus(var, constant(attr_f(c, "epsilon", 1e-5), dt))));
    Variable y = element_times(element_times(centered, inv_std), c.im.in(c, 1));
    if (c.im.has_input(c, 2)) y = plus(y, c.im.in(c, 2));
    return {alias(y, c.name), mean, inv_std};
}

// Mod: fmod = 0, the remainder with the divisor's sign (Python's %); 1, with the dividend's (C's fmod).
std::vector<Variable> mod_node(NodeCtx& c) {
    const Variable a0 = c.im.in(c, 0), b0 = c.im.in(c, 1);
    const DataType d = a0.dtype();
    const Variable a = as_float(a0), b = as_float(b0);
    const Variable q = element_divide(a, b);
    Variable whole = floor(q);
    if (attr_i(c, "fmod", 0) != 0)
        whole = element_select(less(q, constant(0.0, q.dtype())), ceil(q), floor(q));
    return {back_to(alias(minus(a, element_times(b, whole)), c.name), d)};
}

// Trilu: the upper (default) or lower triangle of the last two axes, from the k-th diagonal (input 1).
std::vector<Variable> trilu_node(NodeCtx& c) {
    const Variable x0 = c.im.in(c, 0);
    const int64_t k = c.im.has_input(c, 1) ? c.im.const_ints(c, 1).at(0) : 0;
    const bool upper = attr_i(c, "upper", 1) != 0;
    CTK_CHECK(x0.rank() >= 2 && x0.shape_known(), ShapeError, c.where, ": needs known last two axes, got ",
              x0.to_string());
    const int64_t rows = x0.shape()[static_cast<size_t>(x0.rank() - 2)], cols = x0.shape().back();
    std::vector<double> mask(static_cast<size_t>(rows * cols));
    for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
            mask[static_cast<size_t>(i * cols + j)] = upper ? j - i >= k : j - i <= k;
    const DataType d = x0.dtype();
    const Variable x = as_float(x0);
    const Variable m = constant(Tensor::from_vector(mask, Shape{rows, cols}).to(x.dtype()));
    return {back_to(alias(element_times(x, m), c.name), d)};
}

}  // namespace ctk::detail::onnx_io::importer
