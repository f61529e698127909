// times and times_transpose: CNTK's tensor products. times contracts x's last k static axes with W's
// first k (k = rank(W) - output_rank) through one matrix product over all samples at once.
#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

std::vector<OutputSpec> infer_times(InferContext& c) {
    Variable &x = c.inputs[0], &w = c.inputs[1];
    // A right operand with dynamic axes is one matrix per sample (CNTK allowed it): x's axes, then.
    CTK_CHECK(w.dynamic_axes().empty() || w.dynamic_axes() == x.dynamic_axes(), ShapeError, c.where,
              ": the right operand ", w.to_string(), " has dynamic axes other than those of ", x.to_string());
    const int64_t output_rank = c.attrs.get<int64_t>("outputRank");
    const int64_t map_rank = c.attrs.get<int64_t>("inferInputRankToMap");
    const Dims& xs = x.shape();
    Dims& ws = w.impl()->shape;
    CTK_CHECK(output_rank >= 0 && output_rank <= static_cast<int64_t>(ws.size()), ValueError, c.where,
              ": output_rank ", output_rank, " does not fit ", w.to_string());
    if (map_rank >= 0 && !ws.empty() && ws[0] == kInferredDim) {
        // W's input part is one inferred placeholder dim: it becomes x's static axes after the first
        // map_rank.
        CTK_CHECK(map_rank <= static_cast<int64_t>(xs.size()), ShapeError, c.where,
                  ": infer_input_rank_to_map ", map_rank, " exceeds the rank of ", x.to_string());
        CTK_CHECK(w.is_parameter() || w.is_placeholder() || w.is_constant(), ShapeError, c.where,
                  ": cannot infer the input dims of ", w.to_string());
        Dims nw(xs.begin() + map_rank, xs.end());
        nw.insert(nw.end(), ws.end() - output_rank, ws.end());
        ws = nw;
    }
    const size_t k = ws.size() - static_cast<size_t>(output_rank);
    CTK_CHECK(k <= xs.size(), ShapeError, c.where, ": ", w.to_string(), " contracts ", k, " axes but ",
              x.to_string(), " has only ", xs.size());
    for (size_t i = 0; i < k; ++i) {
        int64_t& wd = ws[i];
        const int64_t xd = xs[xs.size() - k + i];
        if (wd == kInferredDim) {
            CTK_CHECK(!w.is_input(), ShapeError, c.where, ": cannot infer dims of ", w.to_string());
            wd = xd;
        }
        // A free dim on either side (an input made with InferredDimension) is checked when data comes.
        CTK_CHECK(wd == xd || xd == kFreeDim || wd == kFreeDim, ShapeError, c.where, ": the inner dims of ",
                  x.to_string(), " and ", w.to_string(), " differ");
    }
    Dims out(xs.begin(), xs.end() - static_cast<std::ptrdiff_t>(k));
    out.insert(out.end(), ws.begin() + static_cast<std::ptrdiff_t>(k), ws.end());
    c.attrs.set("contracted", static_cast<int64_t>(k));
    return {{out, common_dtype(c.inputs, c.where), x.dynamic_axes()}};
}

// x as [M, K] and W as [K, N] with K the product of the contracted dims.
struct TimesMats {
    Tensor x, w;
};
TimesMats as_matrices(const Tensor& x, const Tensor& w, int64_t k) {
    const Dims& ws = w.shape().dims();
    const int64_t kk = product(ws, 0, static_cast<size_t>(k));
    const int64_t n = product(ws, static_cast<size_t>(k), ws.size());
    return {x.reshape({-1, kk}), w.reshape({kk, n})};
}

// x one-hot in index form (contracting its one static axis): times is a lookup of W's rows, CNTK's
// sparse-times-dense. The indices clamped to a real row (int64), and a 0/1 column for -1 rows. They were
// checked when the value was made, so the lookup does not check them again (on a GPU that would read
// them back on the host every step).
struct OneHotRows {
    Tensor safe, valid;
};
OneHotRows one_hot_rows(const Value& x, const Tensor& w) {
    // In f64, exact for every index: in W's dtype a bf16 index above 256 would round to another row.
    Tensor idx = x.one_hot_indices().to(w.device()).to(DataType::f64);
    Tensor zero = Tensor::full(Shape{}, 0.0, DataType::f64, w.device());
    return {element_max(idx, zero).to(DataType::i64), greater_equal(idx, zero).to(w.dtype()).expand_dims(-1)};
}
bool uses_one_hot(const Value& x, const Attributes& attrs) {
    return x.is_one_hot() && attrs.get<int64_t>("contracted") == 1;
}

// Per-sample matrices (W with x's dynamic axes): x as [F, M, K] and W as [F, K, N] over the F frames.
struct SampleMats {
    Tensor x, w;
};
SampleMats as_sample_matrices(const Tensor& x, const Tensor& w, int dyn, int64_t k) {
    const Dims& ws = w.shape().dims();
    const int64_t frames = product(ws, 0, static_cast<size_t>(dyn));
    const int64_t kk = product(ws, static_cast<size_t>(dyn), static_cast<size_t>(dyn + k));
    const int64_t n = product(ws, static_cast<size_t>(dyn + k), ws.size());
    return {x.reshape({frames, -1, kk}), w.reshape({frames, kk, n})};
}

// Free dims (an input made with InferredDimension) are known only now: the contracted dims must agree.
void check_inner_dims(const ForwardContext& c, const Tensor& x, const Tensor& w, int64_t k) {
    const int wdyn = c.dyn_rank(1);
    for (int64_t i = 0; i < k; ++i)
        CTK_CHECK(x.dim(x.rank() - static_cast<int>(k - i)) == w.dim(wdyn + static_cast<int>(i)), ShapeError,
                  c.where, ": the inner dims of the data of shapes ", x.shape().to_string(), " and ",
                  w.shape().to_string(), " differ");
}

void forward_times(ForwardContext& c) {
    if (c.dyn_rank(1) > 0) {
        const Tensor &x = c.inputs[0].data(), &w = c.inputs[1].data();
        const int64_t k = c.attrs.get<int64_t>("contracted");
        check_inner_dims(c, x, w, k);
        SampleMats m = as_sample_matrices(x, w, c.dyn_rank(1), k);
        Dims out(x.shape().dims().begin(), x.shape().dims().end() - k);
        out.insert(out.end(), w.shape().dims().begin() + c.dyn_rank(1) + k, w.shape().dims().end());
        c.outputs.push_back(Value(matmul(m.x, m.w).reshape(out)));
        return;
    }
    if (uses_one_hot(c.inputs[0], c.attrs)) {
        const Value& x = c.inputs[0];
        const Tensor& w = c.inputs[1].data();
        OneHotRows r = one_hot_rows(x, w);
        Tensor rows = element_times(detail::gather_of_checked(w.reshape({w.dim(0), -1}), r.safe, 0), r.valid);
        Dims out = x.one_hot_indices().shape().dims();
        out.insert(out.end(), w.shape().dims().begin() + 1, w.shape().dims().end());
        c.outputs.push_back(Value(rows.reshape(out)));
        return;
    }
    const Tensor &x = c.inputs[0].data(), &w = c.inputs[1].data();
    const int64_t k = c.attrs.get<int64_t>("contracted");
    check_inner_dims(c, x, w, k);
    TimesMats m = as_matrices(x, w, k);
    Dims out(x.shape().dims().begin(), x.shape().dims().end() - k);
    out.insert(out.end(), w.shape().dims().begin() + k, w.shape().dims().end());
    c.outputs.push_back(Value(matmul(m.x, m.w).reshape(out)));
}

void backward_times(BackwardContext& c) {
    if (c.dyn_rank(1) > 0) {
        const Tensor &x = c.inputs[0].data(), &w = c.inputs[1].data();
        SampleMats m = as_sample_matrices(x, w, c.dyn_rank(1), c.attrs.get<int64_t>("contracted"));
        Tensor dy = c.output_grads[0].reshape({m.x.dim(0), m.x.dim(1), m.w.dim(2)});
        if (c.needs[0]) c.input_grads[0] = matmul(dy, m.w, false, true).reshape(x.shape().dims());
        if (c.needs[1]) c.input_grads[1] = matmul(m.x, dy, true, false).reshape(w.shape().dims());
        return;
    }
    if (uses_one_hot(c.inputs[0], c.attrs) && !c.needs[0]) {
        // dW: each sample's dy added to its hot row (a scatter-add; -1 rows add nothing).
        const Tensor& w = c.inputs[1].data();
        OneHotRows r = one_hot_rows(c.inputs[0], w);
        const int64_t n = product(w.shape().dims(), 1, w.shape().dims().size());
        Tensor dy = element_times(c.output_grads[0].reshape({-1, n}), r.valid.reshape({-1, 1}));
        Tensor dw = detail::scatter_add_of_checked(Tensor::zeros(Shape{w.dim(0), n}, w.dtype(), w.device()),
                                                   r.safe.reshape({-1}), dy, 0);
        c.input_grads[1] = dw.reshape(w.shape().dims());
        return;
    }
    const Tensor &x = c.inputs[0].data(), &w = c.inputs[1].data();
    TimesMats m = as_matrices(x, w, c.attrs.get<int64_t>("contracted"));
    Tensor dy = c.output_grads[0].reshape({m.x.dim(0), m.w.dim(1)});
    if (c.needs[0]) c.input_grads[0] = matmul(dy, m.w, false, true).reshape(x.shape().dims());
    if (c.needs[1]) c.input_grads[1] = matmul(m.x, dy, true, false).reshape(w.shape().dims());
}

// a [..., K] times b^T, b [N, K] or [K] (then N = 1).
std::vector<OutputSpec> infer_times_transpose(InferContext& c) {
    const Variable &a = c.inputs[0], &b = c.inputs[1];
    CTK_CHECK(b.rank() == 1 || b.rank() == 2, ShapeError, c.where, ": the right operand ", b.to_string(),
              " must be a vector or a matrix");
    CTK_CHECK(a.rank() >= 1 && a.shape().back() == b.shape().back(), ShapeError, c.where,
              ": the last dims of ", a.to_string(), " and ", b.to_string(), " differ");
    CTK_CHECK(b.dynamic_axes().empty() || b.dynamic_axes() == a.dynamic_axes() || a.dynamic_axes().empty(),
              ShapeError, c.where, ": dynamic axes of ", b.to_string(), " do not match ", a.to_string());
    CTK_CHECK(b.dynamic_axes().empty() || b.rank() == 1, ShapeError, c.where,
              ": a right operand with dynamic axes, ", b.to_string(), ", must be one vector per sample");
    Dims out(a.shape().begin(), a.shape().end() - 1);
    out.push_back(b.rank() == 2 ? b.shape()[0] : 1);
    return {{out, common_dtype(c.inputs, c.where),
             a.dynamic_axes().empty() ? b.dynamic_axes() : a.dynamic_axes()}};
}

void forward_times_transpose(ForwardContext& c) {
    const Tensor &a = c.inputs[0].data(), &b = c.inputs[1].data();
    const int64_t kd = a.dim(-1);
    Dims out(a.shape().dims().begin(), a.shape().dims().end() - 1);
    if (c.dyn_rank(1) > 0) {  // per-sample vectors: dot products with a's rows (a per sample or static)
        const int dyn = c.dyn_rank(1), rank = c.input_vars[0].rank();
        const Tensor av = align(a, c.dyn_rank(0), dyn, rank), bv = align(b, dyn, dyn, rank);
        c.outputs.push_back(Value(reduce_sum(element_times(av, bv), {-1}, true)));
        return;
    }
    Tensor bm = b.reshape({-1, kd});
    out.push_back(bm.dim(0) == 1 && b.rank() == 1 ? 1 : bm.dim(0));
    c.outputs.push_back(Value(matmul(a.reshape({-1, kd}), bm, false, true).reshape(out)));
}

void backward_times_transpose(BackwardContext& c) {
    const Tensor &a = c.inputs[0].data(), &b = c.inputs[1].data();
    const Tensor& dy = c.output_grads[0];
    const int64_t kd = a.dim(-1);
    if (c.dyn_rank(1) > 0) {
        const int dyn = c.dyn_rank(1), rank = c.input_vars[0].rank();
        const Tensor av = align(a, c.dyn_rank(0), dyn, rank), bv = align(b, dyn, dyn, rank);
        if (c.needs[0])
            c.input_grads[0] = reduce_to_operand(element_times(dy, bv), a, c.dyn_rank(0), dyn, rank);
        if (c.needs[1]) c.input_grads[1] = reduce_to_operand(element_times(dy, av), b, dyn, dyn, rank);
        return;
    }
    Tensor bm = b.reshape({-1, kd});
    Tensor dym = dy.reshape({-1, bm.dim(0)});
    if (c.needs[0]) c.input_grads[0] = matmul(dym, bm).reshape(a.shape().dims());
    if (c.needs[1])
        c.input_grads[1] = matmul(dym, a.reshape({-1, kd}), true, false).reshape(b.shape().dims());
}

}  // namespace

void register_times_ops(OpTable& t) {
    t.add(PrimitiveOp::times, OpDef{"Times", 2, 2, infer_times, forward_times, backward_times});
    t.backward_reads(PrimitiveOp::times, kReadsInputs);
    t.add(PrimitiveOp::transpose_times, OpDef{"TransposeTimes", 2, 2, infer_times_transpose,
                                              forward_times_transpose, backward_times_transpose});
    t.backward_reads(PrimitiveOp::transpose_times, kReadsInputs);
    t.autocast({PrimitiveOp::times, PrimitiveOp::transpose_times}, Autocast::low);
}

}  // namespace detail

FunctionPtr times(const Variable& x, const Variable& w, int output_rank, int infer_input_rank_to_map,
                  const std::string& name) {
    // CNTK's TimesReduceSequenceAxisWithoutInferredInputRank: the products of the frames, summed over the
    // sequence axis.
    if (infer_input_rank_to_map == kTimesReduceSequenceAxis)
        return sequence::reduce_sum(times(x, w, output_rank, -1)->output(), name);
    // CNTK also takes times(M, x) with a static M [A..., K...] and a batched x [K...]: M applied to each
    // sample, [A...]. That is x times M's transpose [K..., A...] in ctk's (data, weight) order.
    if (x.dynamic_axes().empty() && !w.dynamic_axes().empty() && x.shape_known() && w.shape_known() &&
        !x.has_inferred_dims() && w.rank() >= 1 && x.rank() > w.rank() &&
        std::equal(w.shape().begin(), w.shape().end(), x.shape().end() - w.rank())) {
        const int a = x.rank() - w.rank();
        std::vector<int> perm;
        for (int i = a; i < x.rank(); ++i) perm.push_back(i);
        for (int i = 0; i < a; ++i) perm.push_back(i);
        return times(w, transpose(x, perm), a, infer_input_rank_to_map, name);
    }
    // And with a batched x of higher rank: M [A..., K...] times x [K..., N...] (K the first
    // rank(x) - output_rank axes of x) is [A..., N...], each sample's x its own right factor. In ctk's
    // (data, weight) order: x moved to [N..., K...] times M moved to [K..., A...], then [A...] to the front.
    if (x.dynamic_axes().empty() && !w.dynamic_axes().empty() && x.shape_known() && w.shape_known() &&
        !x.has_inferred_dims() && output_rank >= 1 && w.rank() > output_rank) {
        const int k = w.rank() - output_rank, a = x.rank() - k;
        if (a >= 0 && std::equal(w.shape().begin(), w.shape().begin() + k, x.shape().end() - k)) {
            std::vector<int> w_perm, m_perm, back;
            for (int i = k; i < w.rank(); ++i) w_perm.push_back(i);
            for (int i = 0; i < k; ++i) w_perm.push_back(i);
            for (int i = a; i < x.rank(); ++i) m_perm.push_back(i);
            for (int i = 0; i < a; ++i) m_perm.push_back(i);
            for (int i = 0; i < a; ++i) back.push_back(output_rank + i);
            for (int i = 0; i < output_rank; ++i) back.push_back(i);
            Variable y = times(transpose(w, w_perm), transpose(x, m_perm), a, infer_input_rank_to_map);
            return transpose(y, back, name);
        }
    }
    return detail::make_op(PrimitiveOp::times, {x, w},
                           Attributes{{"outputRank", int64_t(output_rank)},
                                      {"inferInputRankToMap", int64_t(infer_input_rank_to_map)}},
                           name);
}

FunctionPtr times_transpose(const Variable& a, const Variable& b, const std::string& name) {
    // A matrix [N, K] per sample on the right (CNTK takes it): a [..., K] against each of its N rows,
    // a [..., 1, K] times b broadcast, summed over K.
    if (!b.dynamic_axes().empty() && b.shape_known() && b.rank() == 2 && a.shape_known() && a.rank() >= 1 &&
        a.shape().back() == b.shape().back()) {
        Dims rows = a.shape();
        rows.insert(rows.end() - 1, 1);
        return reduce_sum(element_times(reshape(a, rows), b), {Axis(-1)}, false, name);
    }
    return detail::make_op(PrimitiveOp::transpose_times, {a, b}, {}, name);
}

}  // namespace ctk
