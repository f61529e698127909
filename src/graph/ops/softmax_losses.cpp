// softmax, log_softmax, hardmax; the losses (cross_entropy_with_softmax, squared_error, binary and
// weighted binary cross entropy, cosine_distance) and classification_error. Losses are per sample;
// shapes follow CNTK: cross_entropy_with_softmax and classification_error keep the reduced axis as 1,
// the others reduce all static axes to a scalar.
#include <cmath>

#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

// ---- softmax family: over one static axis, or (no axis) over all static axes flattened ----
std::vector<OutputSpec> infer_softmax(InferContext& c) {
    const Variable& x = c.inputs[0];
    CTK_CHECK(x.rank() >= 1, ShapeError, c.where, ": ", x.to_string(), " has no static axis");
    if (c.attrs.has("axis")) (void)normalize_static_axis(c.attrs.get<Axis>("axis"), x.rank(), c.where);
    return {{x.shape(), x.dtype(), x.dynamic_axes()}};
}

// The data viewed so that the softmax axis is a tensor axis; returns the axis.
int softmax_view(const Attributes& a, const Tensor& x, int dyn, int rank, const std::string& where,
                 Tensor& view) {
    if (a.has("axis")) {
        view = x;
        return dyn + normalize_static_axis(a.get<Axis>("axis"), rank, where);
    }
    Dims flat(x.shape().dims().begin(), x.shape().dims().begin() + dyn);
    flat.push_back(-1);
    view = x.reshape(flat);
    return dyn;
}

template <PrimitiveOp Op>
void forward_softmax(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    Tensor v;
    const int ax = softmax_view(c.attrs, x, c.dyn_rank(0), c.input_vars[0].rank(), c.where, v);
    Tensor y = Op == PrimitiveOp::softmax       ? softmax(v, ax)
               : Op == PrimitiveOp::log_softmax ? log_softmax(v, ax)
                                                : hardmax(v, ax);
    c.outputs.push_back(Value(y.reshape(x.shape().dims())));
}

template <PrimitiveOp Op>
void backward_softmax(BackwardContext& c) {
    const Tensor& y = c.outputs[0].data();
    Tensor yv, dyv;
    const int ax = softmax_view(c.attrs, y, c.dyn_rank(0), c.input_vars[0].rank(), c.where, yv);
    softmax_view(c.attrs, c.output_grads[0], c.dyn_rank(0), c.input_vars[0].rank(), c.where, dyv);
    Tensor g = Op == PrimitiveOp::softmax ? softmax_backward(yv, dyv, ax) : log_softmax_backward(yv, dyv, ax);
    c.input_grads[0] = g.reshape(y.shape().dims());
}

// ---- shared by the losses ----
// Two per-sample operands with equal static shapes (target may lack dynamic axes).
void check_pair(InferContext& c) {
    const Variable &a = c.inputs[0], &b = c.inputs[1];
    (void)broadcast_static(c.inputs, c.where);  // resolves inferred dims of parameter operands
    CTK_CHECK(a.shape() == b.shape() || b.shape().empty(), ShapeError, c.where, ": ", a.to_string(), " and ",
              b.to_string(), " must have the same shape");
    (void)merge_dynamic_axes(c.inputs, c.where);
    (void)common_dtype(c.inputs, c.where);
}
std::vector<int> static_axes(int dyn, int rank) {
    std::vector<int> axes;
    for (int i = 0; i < rank; ++i) axes.push_back(dyn + i);
    return axes;
}
// dy of a per-sample scalar loss, shaped to broadcast against [dyn..., static...].
Tensor expand_grad(const Tensor& dy, int dyn, int rank) {
    Dims d(dy.shape().dims().begin(), dy.shape().dims().begin() + dyn);
    d.resize(static_cast<size_t>(dyn + rank), 1);
    return dy.reshape(d);
}
std::vector<Axis> loss_axes(const std::vector<Variable>& inputs, const std::string& where) {
    return merge_dynamic_axes(inputs, where);
}

// ---- cross_entropy_with_softmax ----
std::vector<OutputSpec> infer_ce(InferContext& c) {
    check_pair(c);
    const Variable& z = c.inputs[0];
    const int a = normalize_static_axis(c.attrs.get<Axis>("axis"), z.rank(), c.where);
    Dims out = z.shape();
    out[static_cast<size_t>(a)] = 1;
    return {{out, z.dtype(), loss_axes(c.inputs, c.where)}};
}
// CNTK 2.7 builds the loss as a block, ReduceLogSum(z) - ReduceSum(t * z): for targets that sum to 1 it is
// -sum(t * log_softmax(z)); for others (all-zero rows, soft targets) it keeps CNTK's value, and the
// gradients are the block's: dz = dy * (softmax(z) - t), dt = -dy * z.
// The logits with the dynamic dims of the loss: a static z (CNTK's tests score a constant against
// batched labels) is broadcast over the labels' samples.
Tensor logits_over_samples(const Tensor& z, int dz, const Tensor& t, int d, int rank) {
    Tensor za = align(z, dz, d, rank);
    if (dz == d) return za;
    Dims want(t.shape().dims().begin(), t.shape().dims().begin() + d);
    want.insert(want.end(), za.shape().dims().begin() + d, za.shape().dims().end());
    return za.broadcast_to(Shape(want)).contiguous();
}
// Labels given as class indices (a one-hot Value, CNTK's sparse labels) over one class axis, the logits'
// only static axis, with the same samples: each row's loss is picked from log_softmax(z), and neither
// pass builds the dense [samples, classes] labels (for a 10k vocabulary, 45 MB per minibatch of 1120
// tokens). A row without a class (index -1, CNTK's all-zero target) keeps CNTK's value, log-sum-exp(z).
struct ClassRows {
    Tensor flat;   // int64 [rows]: each row's class as an index into z flattened (0 where it has none)
    Tensor valid;  // [rows] in z's dtype: 1 where the row has a class
};
bool uses_class_rows(const Value& z, const Value& t, const Variable& zv, int dz, int dt) {
    return t.is_one_hot() && zv.rank() == 1 && dz == dt &&
           t.one_hot_indices().numel() * z.data().dim(-1) == z.data().numel();
}
ClassRows class_rows(const Value& t, const Tensor& z) {
    const int64_t classes = z.dim(-1);
    const Tensor idx = t.one_hot_indices().to(z.device()).to(DataType::f64).reshape({-1});
    const int64_t rows = idx.numel();
    const Tensor zero = Tensor::full(Shape{}, 0.0, DataType::f64, z.device());
    const Tensor base =
        element_times(Tensor::arange(Shape{rows}, DataType::f64).to(z.device()),
                      Tensor::full(Shape{}, static_cast<double>(classes), DataType::f64, z.device()));
    return {plus(base, element_max(idx, zero)).to(DataType::i64), greater_equal(idx, zero).to(z.dtype())};
}

void forward_ce(ForwardContext& c) {
    if (uses_class_rows(c.inputs[0], c.inputs[1], c.input_vars[0], c.dyn_rank(0), c.dyn_rank(1))) {
        const Tensor& z = c.inputs[0].data();
        const int ax = z.rank() - 1;
        const Tensor ls = log_softmax(z, ax);
        const ClassRows r = class_rows(c.inputs[1], z);
        const Tensor picked = gather_of_checked(ls.reshape({-1}), r.flat, 0);
        // log-sum-exp = z - log_softmax(z) on any column; used only by rows without a class.
        const Tensor lse = minus(z.slice(ax, 0, 1), ls.slice(ax, 0, 1));
        const Tensor loss = element_select(r.valid, negate(picked), lse.reshape({-1}));
        c.outputs.push_back(Value(loss.reshape(lse.shape().dims())));
        c.saved.push_back(ls);
        c.saved.push_back(lse);
        c.saved.push_back(r.flat);  // the rows' classes, for backward's scatter
        c.saved.push_back(r.valid);
        return;
    }
    const int rank = c.input_vars[0].rank(), d = std::max(c.dyn_rank(0), c.dyn_rank(1));
    Tensor t = align(c.inputs[1].data(), c.dyn_rank(1), d, rank);
    Tensor z = logits_over_samples(c.inputs[0].data(), c.dyn_rank(0), t, d, rank);
    const int ax = d + normalize_static_axis(c.attrs.get<Axis>("axis"), rank, c.where);
    Tensor lse = reduce_log_sum_exp(z, {ax}, true);
    c.outputs.push_back(Value(minus(lse, reduce_sum(element_times(t, z), {ax}, true))));
    c.saved.push_back(minus(z, lse));  // log_softmax(z)
    c.saved.push_back(lse);
}
void backward_ce(BackwardContext& c) {
    if (uses_class_rows(c.inputs[0], c.inputs[1], c.input_vars[0], c.dyn_rank(0), c.dyn_rank(1))) {
        // Class-index labels (forward_ce): dz = dy * (softmax(z) - t), t's 1s subtracted at the classes.
        const Tensor &ls = c.saved[0], &lse = c.saved[1], &flat = c.saved[2], &valid = c.saved[3];
        const Tensor& dy = c.output_grads[0];  // [rows..., 1]
        if (c.needs[0]) {
            const Tensor dz = element_times(ctk::exp(ls), dy);
            c.input_grads[0] = scatter_add_of_checked(dz.reshape({-1}), flat,
                                                      negate(element_times(dy.reshape({-1}), valid)), 0)
                                   .reshape(ls.shape().dims());
        }
        if (c.needs[1]) c.input_grads[1] = negate(element_times(dy, plus(ls, lse)));  // dt = -dy * z
        return;
    }
    const int rank = c.input_vars[0].rank(), d = std::max(c.dyn_rank(0), c.dyn_rank(1));
    Tensor t = align(c.inputs[1].data(), c.dyn_rank(1), d, rank);
    const Tensor &ls = c.saved[0], &lse = c.saved[1];
    const Tensor& dy = c.output_grads[0];  // reduced axis kept: broadcasts along it
    if (c.needs[0])
        c.input_grads[0] = reduce_to_operand(element_times(dy, minus(ctk::exp(ls), t)), c.inputs[0].data(),
                                             c.dyn_rank(0), d, rank);
    if (c.needs[1])  // z = log_softmax(z) + lse, so that backward need not keep the logits
        c.input_grads[1] = reduce_to_operand(negate(element_times(dy, plus(ls, lse))), c.inputs[1].data(),
                                             c.dyn_rank(1), d, rank);
}

// ---- classification_error ----
std::vector<OutputSpec> infer_error(InferContext& c) {
    check_pair(c);
    const Variable& z = c.inputs[0];
    const int a = normalize_static_axis(c.attrs.get<Axis>("axis"), z.rank(), c.where);
    const int64_t top_n = c.attrs.get<int64_t>("topN");
    CTK_CHECK(top_n >= 1 && top_n <= z.shape()[static_cast<size_t>(a)], ValueError, c.where, ": topN ", top_n,
              " is out of range for ", z.to_string());
    Dims out;
    if (top_n == 1 && a == z.rank() - 1) {
        out = z.shape();
        out[static_cast<size_t>(a)] = 1;
    }
    return {{out, z.dtype(), loss_axes(c.inputs, c.where)}};
}
void forward_error(ForwardContext& c) {
    if (c.attrs.get<int64_t>("topN") == 1 &&
        uses_class_rows(c.inputs[0], c.inputs[1], c.input_vars[0], c.dyn_rank(0), c.dyn_rank(1))) {
        // Class-index labels: wrong unless the first maximum is the row's class (CNTK's t . hardmax(z)).
        const Tensor& z = c.inputs[0].data();
        const int ax = z.rank() - 1;
        const Tensor idx = c.inputs[1].one_hot_indices().to(z.device()).to(DataType::f64).reshape({-1});
        const Tensor best = argmax(z, ax, false).to(DataType::f64).reshape({-1});
        const Tensor err = minus(scalar_like(1.0, z), equal(best, idx).to(z.dtype()));
        Dims out = z.shape().dims();
        out.back() = 1;
        c.outputs.push_back(Value(err.reshape(out)));
        return;
    }
    // Either operand may be static while the other is batched: both aligned to the batched one's axes.
    const int rank = c.input_vars[0].rank(), dyn = std::max(c.dyn_rank(0), c.dyn_rank(1));
    Tensor z = align(c.inputs[0].data(), c.dyn_rank(0), dyn, rank);
    Tensor t = align(c.inputs[1].data(), c.dyn_rank(1), dyn, rank);
    Dims common = z.shape().dims();
    for (size_t i = 0; i < common.size(); ++i) common[i] = std::max(common[i], t.dim(static_cast<int>(i)));
    z = z.broadcast_to(Shape(common)).contiguous();
    t = t.broadcast_to(Shape(common));
    const int ax = dyn + normalize_static_axis(c.attrs.get<Axis>("axis"), rank, c.where);
    const int64_t top_n = c.attrs.get<int64_t>("topN");
    Tensor correct;
    if (top_n == 1) {
        // CNTK's ClassificationErrorNode: the first maximum of each against the target's first maximum
        // (a soft or multi-hot target counts by its argmax, not by its weight at z's maximum).
        correct = equal(argmax(z, ax, true).to(z.dtype()), argmax(Tensor(t), ax, true).to(z.dtype()));
    } else {
        // Correct when the target's class is among the top_n scores.
        Tensor cls = argmax(Tensor(t), ax, true).to(z.dtype());
        Tensor idx = top_k(z, top_n, ax).indices.to(z.dtype());
        correct = reduce_max(equal(idx, cls.broadcast_to(idx.shape())).to(z.dtype()), {ax}, true);
    }
    Tensor err = minus(scalar_like(1.0, z), correct);
    // One error per slice along the axis; but for top 1 along the last axis (CNTK's [.. x 1] result) a
    // sample's error is the mean over its slices.
    if (top_n == 1 && ax == z.rank() - 1) {
        c.outputs.push_back(Value(err));
        return;
    }
    Dims out(z.shape().dims().begin(), z.shape().dims().begin() + dyn);
    c.outputs.push_back(Value(reduce_mean(err, static_axes(dyn, rank), false).reshape(out)));
}

// CNTK's ClassificationError with topN 1 and the default axis (-1) was its primitive, whose gradient is
// none for z and -hardmax(z) per sample for the target, which CNTK's own metric tests check; with an
// axis given (even the last one, as a positive number) it was a composite of argmax comparisons, which has
// no gradient. Other topN had none either.
void backward_error(BackwardContext& c) {
    if (!c.needs[1] || !c.output_grads[0].defined() || c.attrs.get<int64_t>("topN") != 1) return;
    const int rank = c.input_vars[0].rank(), dyn = std::max(c.dyn_rank(0), c.dyn_rank(1));
    const Tensor z = align(c.inputs[0].data(), c.dyn_rank(0), dyn, rank);
    const int ax = dyn + normalize_static_axis(c.attrs.get<Axis>("axis"), rank, c.where);
    if (!(c.attrs.get<Axis>("axis") == Axis(-1))) return;
    const Tensor g = negate(element_times(hardmax(z, ax), c.output_grads[0]));
    c.input_grads[1] = reduce_to_operand(g, c.inputs[1].data(), c.dyn_rank(1), dyn, rank);
}

// ---- squared_error, binary cross entropy, cosine distance: per-sample scalars ----
std::vector<OutputSpec> infer_scalar_loss(InferContext& c) {
    check_pair(c);
    if (c.inputs.size() == 3) (void)merge_dynamic_axes(c.inputs, c.where);
    return {{Dims{}, c.inputs[0].dtype(), loss_axes(c.inputs, c.where)}};
}
struct Pair {
    Tensor a, b, w;
    int dyn, rank;
};
Pair pair_of(std::span<const Value> in, std::span<const Variable> vars) {
    Pair p;
    p.dyn = std::max(vars[0].dynamic_rank(), vars[1].dynamic_rank());
    p.rank = vars[0].rank();
    p.a = align(in[0].data(), vars[0].dynamic_rank(), p.dyn, p.rank);
    p.b = align(in[1].data(), vars[1].dynamic_rank(), p.dyn, p.rank);
    if (in.size() > 2) p.w = align(in[2].data(), vars[2].dynamic_rank(), p.dyn, p.rank);
    return p;
}
Tensor per_sample(const Tensor& x, const Pair& p) {
    Tensor s = reduce_sum(x, static_axes(p.dyn, p.rank), false);
    return s;
}

void forward_squared_error(ForwardContext& c) {
    Pair p = pair_of(c.inputs, c.input_vars);
    c.outputs.push_back(Value(per_sample(square(minus(p.a, p.b)), p)));
}
void backward_squared_error(BackwardContext& c) {
    Pair p = pair_of(c.inputs, c.input_vars);
    Tensor g = element_times(element_times(expand_grad(c.output_grads[0], p.dyn, p.rank), minus(p.a, p.b)),
                             scalar_like(2.0, p.a));
    if (c.needs[0]) c.input_grads[0] = reduce_to_operand(g, c.inputs[0].data(), c.dyn_rank(0), p.dyn, p.rank);
    if (c.needs[1])
        c.input_grads[1] = reduce_to_operand(negate(g), c.inputs[1].data(), c.dyn_rank(1), p.dyn, p.rank);
}

void forward_bce(ForwardContext& c) {
    Pair p = pair_of(c.inputs, c.input_vars);
    const Tensor one = scalar_like(1.0, p.a);
    Tensor terms =
        plus(element_times(p.b, ctk::log(p.a)), element_times(minus(one, p.b), ctk::log(minus(one, p.a))));
    if (p.w.defined()) terms = element_times(p.w, terms);
    c.outputs.push_back(Value(negate(per_sample(terms, p))));
}
void backward_bce(BackwardContext& c) {
    Pair p = pair_of(c.inputs, c.input_vars);
    const Tensor one = scalar_like(1.0, p.a);
    Tensor dy = expand_grad(c.output_grads[0], p.dyn, p.rank);
    if (p.w.defined()) dy = element_times(dy, p.w);
    Tensor one_minus_a = minus(one, p.a);
    if (c.needs[0]) {
        Tensor g =
            element_times(dy, minus(element_divide(minus(one, p.b), one_minus_a), element_divide(p.b, p.a)));
        c.input_grads[0] = reduce_to_operand(g, c.inputs[0].data(), c.dyn_rank(0), p.dyn, p.rank);
    }
    if (c.needs[1]) {
        Tensor g = element_times(dy, minus(ctk::log(one_minus_a), ctk::log(p.a)));
        c.input_grads[1] = reduce_to_operand(g, c.inputs[1].data(), c.dyn_rank(1), p.dyn, p.rank);
    }
    if (c.inputs.size() > 2 && c.needs[2]) {
        Tensor terms =
            plus(element_times(p.b, ctk::log(p.a)), element_times(minus(one, p.b), ctk::log(one_minus_a)));
        Tensor g = negate(element_times(expand_grad(c.output_grads[0], p.dyn, p.rank), terms));
        c.input_grads[2] = reduce_to_operand(g, c.inputs[2].data(), c.dyn_rank(2), p.dyn, p.rank);
    }
}

void forward_cosine(ForwardContext& c) {
    Pair p = pair_of(c.inputs, c.input_vars);
    Tensor dot = per_sample(element_times(p.a, p.b), p);
    Tensor na = ctk::sqrt(per_sample(square(p.a), p)), nb = ctk::sqrt(per_sample(square(p.b), p));
    c.outputs.push_back(Value(element_divide(dot, element_times(na, nb))));
}
void backward_cosine(BackwardContext& c) {
    Pair p = pair_of(c.inputs, c.input_vars);
    Tensor dy = expand_grad(c.output_grads[0], p.dyn, p.rank);
    Tensor cosv = expand_grad(c.outputs[0].data(), p.dyn, p.rank);
    Tensor na2 = expand_grad(per_sample(square(p.a), p), p.dyn, p.rank);
    Tensor nb2 = expand_grad(per_sample(square(p.b), p), p.dyn, p.rank);
    Tensor nanb = ctk::sqrt(element_times(na2, nb2));
    auto grad = [&](const Tensor& self, const Tensor& other, const Tensor& self2) {
        return element_times(
            dy, minus(element_divide(other, nanb), element_times(cosv, element_divide(self, self2))));
    };
    if (c.needs[0])
        c.input_grads[0] =
            reduce_to_operand(grad(p.a, p.b, na2), c.inputs[0].data(), c.dyn_rank(0), p.dyn, p.rank);
    if (c.needs[1])
        c.input_grads[1] =
            reduce_to_operand(grad(p.b, p.a, nb2), c.inputs[1].data(), c.dyn_rank(1), p.dyn, p.rank);
}

// ---- cosine_distance_with_negative_samples: row 0 cos(x_j, y_j), row m cos(x_j, y_(j+shift+m-1) mod N)
// over the N real frames of the minibatch in order (CNTK's packed columns; padding is no sample) ----
std::vector<OutputSpec> infer_cos_negative(InferContext& c) {
    const Variable &x = c.inputs[0], &y = c.inputs[1];
    CTK_CHECK(!x.dynamic_axes().empty() && x.dynamic_axes() == y.dynamic_axes(), ShapeError, c.where, ": ",
              x.to_string(), " and ", y.to_string(),
              " must have the same dynamic axes (the negatives are other samples)");
    CTK_CHECK(x.shape() == y.shape(), ShapeError, c.where, ": ", x.to_string(), " and ", y.to_string(),
              " must have the same shape");
    const int64_t shift = c.attrs.get<int64_t>("shift"), k = c.attrs.get<int64_t>("numNegativeSamples");
    CTK_CHECK(shift >= 0 && k >= 0, ValueError, c.where, ": shift ", shift, " and num_negative_samples ", k,
              " must be >= 0");
    return {{Dims{k + 1}, common_dtype(c.inputs, c.where), x.dynamic_axes()}};
}
struct NegativePairs {
    Tensor rows;               // [N] real frames
    Tensor x, y;               // [N, D]
    std::vector<Tensor> perm;  // per output row m: y's row paired with each x row
    Tensor flat_like;          // [F, D] shape of the folded data
};
NegativePairs negative_pairs(std::span<const Value> in, std::span<const Variable> vars, const Attributes& a) {
    NegativePairs p;
    const int dyn = vars[0].dynamic_rank();
    const int64_t d = product(vars[0].shape(), 0, vars[0].shape().size());
    const std::vector<int64_t> rows = real_frame_rows(in[0], dyn);
    p.rows = Tensor::from_vector(rows, Shape{static_cast<int64_t>(rows.size())}).to(in[0].data().device());
    p.x = gather(in[0].data().reshape({-1, d}), p.rows, 0);
    p.y = gather(in[1].data().reshape({-1, d}), p.rows, 0);
    const int64_t n = p.rows.dim(0), shift = a.get<int64_t>("shift"),
                  k = a.get<int64_t>("numNegativeSamples");
    for (int64_t m = 0; m <= k; ++m) {
        std::vector<int64_t> idx(static_cast<size_t>(n));
        for (int64_t j = 0; j < n; ++j) idx[static_cast<size_t>(j)] = m == 0 ? j : (j + shift + m - 1) % n;
        p.perm.push_back(Tensor::from_vector(idx, Shape{n}).to(p.x.device()));
    }
    return p;
}
void forward_cos_negative(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const int dyn = c.dyn_rank(0);
    NegativePairs p = negative_pairs(c.inputs, c.input_vars, c.attrs);
    const int64_t frames = product(x.shape().dims(), 0, static_cast<size_t>(dyn));
    const int64_t k1 = static_cast<int64_t>(p.perm.size());
    Tensor out = Tensor::zeros(Shape{frames, k1}, x.dtype(), x.device());
    if (p.rows.dim(0) > 0) {
        const Tensor nx = ctk::sqrt(reduce_sum(square(p.x), {1}, true));
        std::vector<Tensor> cols;
        for (const Tensor& perm : p.perm) {
            const Tensor ym = gather(p.y, perm, 0);
            const Tensor ny = ctk::sqrt(reduce_sum(square(ym), {1}, true));
            cols.push_back(
                element_divide(reduce_sum(element_times(p.x, ym), {1}, true), element_times(nx, ny)));
        }
        out = scatter_add(out, p.rows, ctk::concat(cols, 1), 0);
    }
    Dims shape(x.shape().dims().begin(), x.shape().dims().begin() + dyn);
    shape.push_back(k1);
    c.outputs.push_back(Value(out.reshape(shape)));
}
void backward_cos_negative(BackwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    NegativePairs p = negative_pairs(c.inputs, c.input_vars, c.attrs);
    const int64_t k1 = static_cast<int64_t>(p.perm.size());
    const Tensor g = gather(c.output_grads[0].reshape({-1, k1}), p.rows, 0);  // [N, K+1]
    const Tensor nx = ctk::sqrt(reduce_sum(square(p.x), {1}, true));
    Tensor dx = Tensor::zeros(p.x.shape(), p.x.dtype(), p.x.device()), dy = dx.clone();
    for (int64_t m = 0; m < k1; ++m) {
        const Tensor ym = gather(p.y, p.perm[static_cast<size_t>(m)], 0);
        const Tensor ny = ctk::sqrt(reduce_sum(square(ym), {1}, true));
        const Tensor nxy = element_times(nx, ny);
        const Tensor cosv = element_divide(reduce_sum(element_times(p.x, ym), {1}, true), nxy);
        const Tensor gm = g.slice(1, m, m + 1);
        dx = plus(dx, element_times(gm, minus(element_divide(ym, nxy),
                                              element_times(cosv, element_divide(p.x, square(nx))))));
        const Tensor dym = element_times(
            gm, minus(element_divide(p.x, nxy), element_times(cosv, element_divide(ym, square(ny)))));
        dy = scatter_add(dy, p.perm[static_cast<size_t>(m)], dym, 0);
    }
    const int64_t d = p.x.dim(1);
    auto place = [&](const Tensor& rows_grad) {
        Tensor full = Tensor::zeros(Shape{x.numel() / std::max<int64_t>(d, 1), d}, x.dtype(), x.device());
        return scatter_add(full, p.rows, rows_grad, 0).reshape(x.shape().dims());
    };
    if (c.needs[0]) c.input_grads[0] = place(dx);
    if (c.needs[1]) c.input_grads[1] = place(dy);
}

}  // namespace

void register_softmax_ops(OpTable& t) {
    t.add(PrimitiveOp::softmax, OpDef{"Softmax", 1, 1, infer_softmax, forward_softmax<PrimitiveOp::softmax>,
                                      backward_softmax<PrimitiveOp::softmax>});
    t.add(PrimitiveOp::log_softmax,
          OpDef{"LogSoftmax", 1, 1, infer_softmax, forward_softmax<PrimitiveOp::log_softmax>,
                backward_softmax<PrimitiveOp::log_softmax>});
    t.add(PrimitiveOp::hardmax,
          OpDef{"Hardmax", 1, 1, infer_softmax, forward_softmax<PrimitiveOp::hardmax>, nullptr});
    t.backward_reads(PrimitiveOp::softmax, kReadsOutputs);
    t.backward_reads(PrimitiveOp::log_softmax, kReadsOutputs);
}

void register_loss_ops(OpTable& t) {
    t.add(PrimitiveOp::cross_entropy_with_softmax,
          OpDef{"CrossEntropyWithSoftmax", 2, 2, infer_ce, forward_ce, backward_ce});
    t.backward_reads(PrimitiveOp::cross_entropy_with_softmax,
                     reads_input(1));  // the logits' log_softmax and log-sum-exp are saved
    t.add(PrimitiveOp::classification_error,
          OpDef{"ClassificationError", 2, 2, infer_error, forward_error, backward_error});
    t.backward_reads(PrimitiveOp::classification_error, reads_input(0));
    t.add(PrimitiveOp::squared_error,
          OpDef{"SquaredError", 2, 2, infer_scalar_loss, forward_squared_error, backward_squared_error});
    t.add(PrimitiveOp::binary_cross_entropy,
          OpDef{"Logistic", 2, 3, infer_scalar_loss, forward_bce, backward_bce});
    t.add(PrimitiveOp::cosine_distance,
          OpDef{"CosDistance", 2, 2, infer_scalar_loss, forward_cosine, backward_cosine});
    // Not frame-local: the negatives are other samples of the minibatch.
    t.add(PrimitiveOp::cosine_distance_with_negative_samples,
          OpDef{"CosDistanceWithNegativeSamples", 2, 2, infer_cos_negative, forward_cos_negative,
                backward_cos_negative, false});
}

}  // namespace detail

namespace {
Attributes axis_attr(const std::optional<Axis>& axis) {
    Attributes a;
    if (axis && axis->kind() != Axis::Kind::all_static) a.set("axis", *axis);
    return a;
}
}  // namespace

FunctionPtr softmax(const Variable& x, std::optional<Axis> axis, const std::string& name) {
    return detail::make_op(PrimitiveOp::softmax, {x}, axis_attr(axis), name);
}
FunctionPtr log_softmax(const Variable& x, std::optional<Axis> axis, const std::string& name) {
    return detail::make_op(PrimitiveOp::log_softmax, {x}, axis_attr(axis), name);
}
FunctionPtr hardmax(const Variable& x, std::optional<Axis> axis, const std::string& name) {
    return detail::make_op(PrimitiveOp::hardmax, {x}, axis_attr(axis), name);
}
FunctionPtr cross_entropy_with_softmax(const Variable& output, const Variable& target, const Axis& axis,
                                       const std::string& name) {
    return detail::make_op(PrimitiveOp::cross_entropy_with_softmax, {output, target},
                           Attributes{{"axis", axis}}, name);
}
FunctionPtr classification_error(const Variable& output, const Variable& target, int64_t top_n,
                                 const Axis& axis, const std::string& name) {
    // CNTK on samples of several axes: with the default axis the sample is one vector (its
    // ClassificationErrorNode takes the argmax of the whole column; a static operand's columns are its
    // rows); with an axis named, the error of each slice along it, averaged over the sample.
    if (output.shape_known() && target.shape_known() && output.rank() >= 2 && !output.has_inferred_dims()) {
        if (axis == Axis(-1)) {
            if (output.dynamic_axes().empty())
                return detail::make_op(PrimitiveOp::classification_error, {output, target},
                                       Attributes{{"axis", axis}, {"topN", top_n}}, name);
            // The error keeps the sample's rank, as CNTK's [1 x 1] result for a [1 x N] sample.
            const FunctionPtr flat_output = reshape(output, {-1}), flat_target = reshape(target, {-1});
            const FunctionPtr error = detail::make_op(PrimitiveOp::classification_error,
                                                      {flat_output->output(), flat_target->output()},
                                                      Attributes{{"axis", Axis(-1)}, {"topN", top_n}}, "");
            return reshape(error, Dims(static_cast<size_t>(output.rank()), 1), std::nullopt, std::nullopt,
                           name);
        }
        const FunctionPtr each = detail::make_op(PrimitiveOp::classification_error, {output, target},
                                                 Attributes{{"axis", axis}, {"topN", top_n}}, "");
        return reduce_mean(each, {Axis::all_static_axes()}, true, name);
    }
    return detail::make_op(PrimitiveOp::classification_error, {output, target},
                           Attributes{{"axis", axis}, {"topN", top_n}}, name);
}
FunctionPtr squared_error(const Variable& output, const Variable& target, const std::string& name) {
    return detail::make_op(PrimitiveOp::squared_error, {output, target}, {}, name);
}
FunctionPtr binary_cross_entropy(const Variable& output, const Variable& target, const std::string& name) {
    return detail::make_op(PrimitiveOp::binary_cross_entropy, {output, target}, {}, name);
}
FunctionPtr weighted_binary_cross_entropy(const Variable& output, const Variable& target,
                                          const Variable& weight, const std::string& name) {
    return detail::make_op(PrimitiveOp::binary_cross_entropy, {output, target, weight}, {}, name);
}
FunctionPtr cosine_distance(const Variable& x, const Variable& y, const std::string& name) {
    return detail::make_op(PrimitiveOp::cosine_distance, {x, y}, {}, name);
}

FunctionPtr cosine_distance_with_negative_samples(const Variable& x, const Variable& y, int64_t shift,
                                                  int64_t num_negative_samples, const std::string& name) {
    return detail::make_op(PrimitiveOp::cosine_distance_with_negative_samples, {x, y},
                           Attributes{{"shift", shift}, {"numNegativeSamples", num_negative_samples}}, name);
}

}  // namespace ctk
