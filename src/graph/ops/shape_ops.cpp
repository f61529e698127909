// Static-shape ops: reshape (and flatten/squeeze/expand_dims built on it), slice, splice, transpose,
// pad, gather, one_hot, top_k, cast. They act on the static axes; dynamic axes pass through.
#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

// Prepends the data's dynamic dims to a static shape.
Dims with_dynamic(const Tensor& data, int dyn, const Dims& stat) {
    Dims d(data.shape().dims().begin(), data.shape().dims().begin() + dyn);
    d.insert(d.end(), stat.begin(), stat.end());
    return d;
}

// ---- reshape ----
// squeeze and expand_dims of an operand whose shape is not known yet (a placeholder, as in a layer
// function): a Reshape whose target is worked out here, from the operand's shape, each time it is
// inferred ("squeezeAxes": the axes to drop, none listed meaning every dim of 1; "expandAxis": where a
// dim of 1 goes); the resolved target is then stored as an ordinary whole-shape Reshape.
// x's dims without the given axes (each must be 1), or without every dim of 1 when `axes` is null.
Dims squeezed_dims(const Variable& x, const Dims* axes, const std::string& where) {
    const Dims& xs = x.shape();
    const int rank = x.rank();
    Dims out;
    for (int i = 0; i < rank; ++i) {
        const int64_t d = xs[static_cast<size_t>(i)];
        bool drop = !axes && d == 1;
        if (axes)
            for (int64_t a : *axes)
                drop = drop || normalize_static_axis(static_cast<int>(a), rank, where) == i;
        CTK_CHECK(!drop || d == 1, ShapeError, where, ": axis ", i, " of ", x.to_string(), " is not 1");
        if (!drop) out.push_back(d);
    }
    return out;
}

void resolve_deferred_reshape(InferContext& c) {
    const Variable& x = c.inputs[0];
    const Dims& xs = x.shape();
    const int rank = x.rank();
    Dims out;
    if (c.attrs.has("squeezeAxes")) {
        const Dims axes = c.attrs.get<Dims>("squeezeAxes");  // none listed: every dim of 1
        out = squeezed_dims(x, axes.empty() ? nullptr : &axes, c.where);
    } else {
        const int a =
            normalize_static_axis(static_cast<int>(c.attrs.get<int64_t>("expandAxis")), rank + 1, c.where);
        out = xs;
        out.insert(out.begin() + a, 1);
    }
    c.attrs.set("newShape", out);
    c.attrs.set("beginAxis", int64_t(0));
    c.attrs.set("endAxis", int64_t(rank));
}

std::vector<OutputSpec> infer_reshape(InferContext& c) {
    if (c.attrs.has("squeezeAxes") || c.attrs.has("expandAxis")) resolve_deferred_reshape(c);
    const Variable& x = c.inputs[0];
    const Dims& xs = x.shape();
    const int rank = x.rank();
    const int64_t begin = c.attrs.get_or<int64_t>("beginAxis", 0);
    const int64_t end = c.attrs.get_or<int64_t>("endAxis", rank);
    const int b = begin < 0 ? static_cast<int>(begin) + rank : static_cast<int>(begin);
    const int e = end < 0 ? static_cast<int>(end) + rank : static_cast<int>(end);
    CTK_CHECK(b >= 0 && b <= e && e <= rank, ValueError, c.where, ": axes [", begin, ", ", end,
              ") do not fit ", x.to_string());
    Dims shape = c.attrs.get<Dims>("newShape");
    // Free dims (set per minibatch) in the reshaped axes: the count is known only at run time, so an
    // inferred target dim stays free and forward_reshape resolves both (CNTK's FreeDimension).
    const bool free = std::any_of(xs.begin() + b, xs.begin() + e, [](int64_t d) { return d == kFreeDim; });
    const int64_t have = free ? 0 : product(xs, static_cast<size_t>(b), static_cast<size_t>(e));
    int inferred = -1;
    int64_t known = 1;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == kInferredDim) {
            CTK_CHECK(inferred < 0, ValueError, c.where, ": shape ", static_shape_string(shape),
                      " has two inferred dims");
            inferred = static_cast<int>(i);
        } else {
            CTK_CHECK(shape[i] >= 0, ValueError, c.where, ": invalid dim ", shape[i], " in ",
                      static_shape_string(shape));
            CTK_CHECK(!__builtin_mul_overflow(known, shape[i], &known), ValueError, c.where, ": shape ",
                      static_shape_string(shape), " has more elements than a 64-bit count can hold");
        }
    }
    if (free) {
        CTK_CHECK(inferred < 0 || known > 0, ShapeError, c.where, ": cannot reshape ", x.to_string(),
                  " into ", static_shape_string(shape));
        if (inferred >= 0) shape[static_cast<size_t>(inferred)] = kFreeDim;
    } else {
        if (inferred >= 0) {
            CTK_CHECK(known > 0 && have % known == 0, ShapeError, c.where, ": cannot reshape ", x.to_string(),
                      " into ", static_shape_string(shape));
            shape[static_cast<size_t>(inferred)] = have / known;
        }
        CTK_CHECK(product(shape, 0, shape.size()) == have, ShapeError, c.where, ": cannot reshape ",
                  x.to_string(), " (", have, " elements in the reshaped axes) into ",
                  static_shape_string(shape));
    }
    Dims out(xs.begin(), xs.begin() + b);
    out.insert(out.end(), shape.begin(), shape.end());
    out.insert(out.end(), xs.begin() + e, xs.end());
    c.attrs.set("resolvedShape", out);
    return {{out, x.dtype(), x.dynamic_axes()}};
}
// The output sample for the data's own sample `xs` when the variable's had free dims: those outside the
// reshaped axes are the data's, a free target dim takes what the others leave of the data's count.
Dims resolve_free_reshape(const Attributes& a, const Dims& xs, const Dims& resolved,
                          const std::string& where) {
    const int rank = static_cast<int>(xs.size());
    const int64_t begin = a.get_or<int64_t>("beginAxis", 0), end = a.get_or<int64_t>("endAxis", rank);
    const size_t b = static_cast<size_t>(begin < 0 ? begin + rank : begin);
    const size_t e = static_cast<size_t>(end < 0 ? end + rank : end);
    const size_t n = resolved.size() - b - (xs.size() - e);  // target dims
    Dims out(resolved);
    for (size_t i = 0; i < b; ++i) out[i] = xs[i];
    for (size_t i = e; i < xs.size(); ++i) out[b + n + (i - e)] = xs[i];
    const int64_t have = product(xs, b, e);
    int64_t known = 1;
    size_t free_at = out.size();
    for (size_t i = b; i < b + n; ++i) {
        if (out[i] == kFreeDim) {
            free_at = i;
        } else {
            known *= out[i];
        }
    }
    if (free_at < out.size()) {
        CTK_CHECK(known > 0 && have % known == 0, ShapeError, where, ": cannot reshape data of ",
                  dims_to_string(xs), " (", have, " elements in the reshaped axes) into ",
                  static_shape_string(Dims(resolved.begin() + static_cast<int64_t>(b),
                                           resolved.begin() + static_cast<int64_t>(b + n))));
        out[free_at] = have / known;
    }
    CTK_CHECK(known * (free_at < out.size() ? out[free_at] : 1) == have, ShapeError, where,
              ": cannot reshape data of ", dims_to_string(xs), " (", have,
              " elements in the reshaped axes) into ",
              dims_to_string(
                  Dims(out.begin() + static_cast<int64_t>(b), out.begin() + static_cast<int64_t>(b + n))));
    return out;
}
void forward_reshape(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const int dyn = c.dyn_rank(0);
    Dims out = c.attrs.get<Dims>("resolvedShape");
    const Dims& declared = c.input_vars[0].shape();
    auto is_free = [](int64_t d) { return d == kFreeDim; };
    if (std::any_of(out.begin(), out.end(), is_free) ||
        std::any_of(declared.begin(), declared.end(), is_free))
        out = resolve_free_reshape(c.attrs, Dims(x.shape().dims().begin() + dyn, x.shape().dims().end()), out,
                                   c.where);
    c.outputs.push_back(Value(x.reshape(with_dynamic(x, dyn, out))));
}
void backward_reshape(BackwardContext& c) {
    c.input_grads[0] = c.output_grads[0].reshape(c.inputs[0].data().shape().dims());
}

// ---- slice ----
struct SliceAxis {
    int axis;
    int64_t begin, end, stride;
};
std::vector<SliceAxis> slice_axes(const Attributes& a, const Variable& x, const std::string& where) {
    const auto& axes = a.get<std::vector<Axis>>("axes");
    const Dims &begin = a.get<Dims>("beginIndex"), &end = a.get<Dims>("endIndex"),
               &strides = a.get<Dims>("sliceStrides");
    std::vector<SliceAxis> out;
    for (size_t i = 0; i < axes.size(); ++i) {
        const int ax = normalize_static_axis(axes[i], x.rank(), where);
        const int64_t n = x.shape()[static_cast<size_t>(ax)];
        int64_t b = begin[i], e = end[i];
        const int64_t s = strides.empty() ? 1 : strides[i];
        CTK_CHECK(s >= 1, ValueError, where, ": stride ", s, " must be positive");
        if (b < 0) b += n;
        if (e <= 0) e += n;  // CNTK: end 0 means "to the end"
        CTK_CHECK(0 <= b && b < e && e <= n, ValueError, where, ": slice [", begin[i], ", ", end[i],
                  ") is out of range for axis ", ax, " of ", x.to_string());
        out.push_back({ax, b, e, s});
    }
    return out;
}
std::vector<OutputSpec> infer_slice(InferContext& c) {
    const Variable& x = c.inputs[0];
    const auto& axes = c.attrs.get<std::vector<Axis>>("axes");
    CTK_CHECK(axes.size() == c.attrs.get<Dims>("beginIndex").size() &&
                  axes.size() == c.attrs.get<Dims>("endIndex").size(),
              ValueError, c.where, ": axes, begin and end must have the same length");
    Dims out = x.shape();
    for (const SliceAxis& s : slice_axes(c.attrs, x, c.where))
        out[static_cast<size_t>(s.axis)] = (s.end - s.begin + s.stride - 1) / s.stride;
    return {{out, x.dtype(), x.dynamic_axes()}};
}
Tensor sliced_view(const Tensor& t, const std::vector<SliceAxis>& axes, int dyn) {
    Tensor v = t;
    for (const SliceAxis& s : axes) v = v.slice(dyn + s.axis, s.begin, s.end, s.stride);
    return v;
}
void forward_slice(ForwardContext& c) {
    auto axes = slice_axes(c.attrs, c.input_vars[0], c.where);
    c.outputs.push_back(Value(sliced_view(c.inputs[0].data(), axes, c.dyn_rank(0)).contiguous()));
}
void backward_slice(BackwardContext& c) {
    auto axes = slice_axes(c.attrs, c.input_vars[0], c.where);
    const Tensor& x = c.inputs[0].data();
    Tensor g = Tensor::zeros(x.shape(), x.dtype(), x.device());
    Tensor view = sliced_view(g, axes, c.dyn_rank(0));
    view.copy_from(c.output_grads[0]);
    c.input_grads[0] = g;
}

// ---- splice ----
std::vector<OutputSpec> infer_splice(InferContext& c) {
    const Variable& first = c.inputs[0];
    const Axis& axis = c.attrs.get<Axis>("axis");
    size_t rank = 0;
    for (const Variable& v : c.inputs) rank = std::max(rank, v.shape().size());
    int a = axis.static_index() < 0 ? axis.static_index() + static_cast<int>(rank) : axis.static_index();
    CTK_CHECK(axis.is_static(), ValueError, c.where, ": ", axis.to_string(),
              " is not a static axis of the operands");
    if (a < 0) {  // a new axis in front of the operands' (CNTK's PastValueWindow stacks along axis -3)
        rank = static_cast<size_t>(-axis.static_index());
        a = 0;
    }
    CTK_CHECK(a < kMaxRank, ValueError, c.where, ": ", axis.to_string(), " would make the result rank ",
              a + 1, ", more than the ", kMaxRank, " axes a shape may have");
    rank = std::max(rank, static_cast<size_t>(a) + 1);
    Dims out;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
        Dims s = c.inputs[i].shape();
        s.insert(s.begin(), rank - s.size(), 1);  // lower-rank operands are aligned at the trailing axes
        if (i == 0) {
            out = s;
            continue;
        }
        for (size_t k = 0; k < rank; ++k) {
            if (static_cast<int>(k) == a)
                out[k] += s[k];
            else
                CTK_CHECK(out[k] == s[k], ShapeError, c.where, ": operand ", i, " ", c.inputs[i].to_string(),
                          " differs from ", first.to_string(), " in static axis ", k);
        }
    }
    c.attrs.set("resolvedAxis", int64_t(a));
    c.attrs.set("resolvedRank", int64_t(rank));
    return {{out, common_dtype(c.inputs, c.where), merge_dynamic_axes(c.inputs, c.where)}};
}
void forward_splice(ForwardContext& c) {
    const int a = static_cast<int>(c.attrs.get<int64_t>("resolvedAxis"));
    const int rank = static_cast<int>(c.attrs.get<int64_t>("resolvedRank"));
    int out_dyn = 0;
    Dims dyn_dims;
    for (size_t i = 0; i < c.inputs.size(); ++i)
        if (c.dyn_rank(i) > out_dyn) {
            out_dyn = c.dyn_rank(i);
            dyn_dims.assign(c.inputs[i].data().shape().dims().begin(),
                            c.inputs[i].data().shape().dims().begin() + out_dyn);
        }
    std::vector<Tensor> parts;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
        Tensor t = align(c.inputs[i].data(), c.dyn_rank(i), out_dyn, rank);
        Dims target = dyn_dims;
        for (int k = 0; k < rank; ++k) target.push_back(t.dim(out_dyn + k));
        parts.push_back(t.broadcast_to(Shape(target)));
    }
    c.outputs.push_back(Value(ctk::concat(parts, out_dyn + a)));
}
void backward_splice(BackwardContext& c) {
    const int a = static_cast<int>(c.attrs.get<int64_t>("resolvedAxis"));
    const int rank = static_cast<int>(c.attrs.get<int64_t>("resolvedRank"));
    const Tensor& dy = c.output_grads[0];
    const int out_dyn = dy.rank() - rank;
    int64_t offset = 0;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
        const Tensor& x = c.inputs[i].data();
        Tensor al = align(x, c.dyn_rank(i), out_dyn, rank);
        const int64_t n = al.dim(out_dyn + a);
        if (c.needs[i])
            c.input_grads[i] = reduce_to_operand(dy.slice(out_dyn + a, offset, offset + n).contiguous(), x,
                                                 c.dyn_rank(i), out_dyn, rank);
        offset += n;
    }
}

// ---- transpose ----
std::vector<int> permutation(const Attributes& a, int rank, const std::string& where) {
    std::vector<int> perm;
    for (int64_t p : a.get<Dims>("axisPermutation"))
        perm.push_back(normalize_static_axis(static_cast<int>(p), rank, where));
    std::vector<int> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    bool ok = static_cast<int>(perm.size()) == rank;
    for (int i = 0; ok && i < rank; ++i) ok = sorted[static_cast<size_t>(i)] == i;
    CTK_CHECK(ok, ValueError, where, ": ", static_shape_string(a.get<Dims>("axisPermutation")),
              " is not a permutation of the ", rank, " static axes");
    return perm;
}
std::vector<OutputSpec> infer_transpose(InferContext& c) {
    const Variable& x = c.inputs[0];
    auto perm = permutation(c.attrs, x.rank(), c.where);
    Dims out;
    for (int p : perm) out.push_back(x.shape()[static_cast<size_t>(p)]);
    return {{out, x.dtype(), x.dynamic_axes()}};
}
std::vector<int> full_permutation(const std::vector<int>& perm, int dyn) {
    std::vector<int> order;
    for (int i = 0; i < dyn; ++i) order.push_back(i);
    for (int p : perm) order.push_back(dyn + p);
    return order;
}
void forward_transpose(ForwardContext& c) {
    auto perm = permutation(c.attrs, c.input_vars[0].rank(), c.where);
    c.outputs.push_back(Value(permute(c.inputs[0].data(), full_permutation(perm, c.dyn_rank(0)))));
}
void backward_transpose(BackwardContext& c) {
    auto perm = permutation(c.attrs, c.input_vars[0].rank(), c.where);
    std::vector<int> inverse(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inverse[static_cast<size_t>(perm[i])] = static_cast<int>(i);
    c.input_grads[0] = permute(c.output_grads[0], full_permutation(inverse, c.dyn_rank(0)));
}

// ---- pad ----
std::vector<OutputSpec> infer_pad(InferContext& c) {
    const Variable& x = c.inputs[0];
    const Dims &lo = c.attrs.get<Dims>("padLo"), &hi = c.attrs.get<Dims>("padHi");
    CTK_CHECK(static_cast<int>(lo.size()) == x.rank(), ValueError, c.where, ": the pattern has ", lo.size(),
              " entries for ", x.to_string());
    Dims out = x.shape();
    for (size_t i = 0; i < out.size(); ++i) {
        CTK_CHECK(lo[i] >= 0 && hi[i] >= 0, ValueError, c.where, ": negative padding on axis ", i);
        out[i] += lo[i] + hi[i];
    }
    return {{out, x.dtype(), x.dynamic_axes()}};
}
Dims full_pad(const Dims& p, int dyn) {
    Dims d(static_cast<size_t>(dyn), 0);
    d.insert(d.end(), p.begin(), p.end());
    return d;
}
void forward_pad(ForwardContext& c) {
    const int dyn = c.dyn_rank(0);
    c.outputs.push_back(
        Value(pad(c.inputs[0].data(), full_pad(c.attrs.get<Dims>("padLo"), dyn),
                  full_pad(c.attrs.get<Dims>("padHi"), dyn),
                  static_cast<PadMode>(c.attrs.get<int64_t>("mode")), c.attrs.get<double>("constantValue"))));
}
void backward_pad(BackwardContext& c) {
    const int dyn = c.dyn_rank(0);
    c.input_grads[0] =
        pad_grad(c.output_grads[0], c.inputs[0].data().shape(), full_pad(c.attrs.get<Dims>("padLo"), dyn),
                 static_cast<PadMode>(c.attrs.get<int64_t>("mode")));
}

// ---- gather ----
std::vector<OutputSpec> infer_gather(InferContext& c) {
    const Variable &ref = c.inputs[0], &idx = c.inputs[1];
    CTK_CHECK(ref.rank() >= 1, ShapeError, c.where, ": the reference ", ref.to_string(),
              " has no static axis to index");
    CTK_CHECK(ref.dynamic_axes().empty() || ref.dynamic_axes() == idx.dynamic_axes(), ShapeError, c.where,
              ": dynamic axes of ", ref.to_string(), " and ", idx.to_string(), " differ");
    Dims out = idx.shape();
    out.insert(out.end(), ref.shape().begin() + 1, ref.shape().end());
    return {{out, ref.dtype(), idx.dynamic_axes().empty() ? ref.dynamic_axes() : idx.dynamic_axes()}};
}
// Per-sample references are folded into one table: sample s's row r becomes row s*rows + r.
struct GatherTable {
    Tensor table, indices;
};
GatherTable gather_table(const Tensor& ref, int ref_dyn, const Tensor& idx, int idx_dyn) {
    if (ref_dyn == 0) return {ref, idx};
    Tensor table = fold_dynamic(ref, ref_dyn);  // [S, rows, rest...]
    const int64_t samples = table.dim(0), rows = table.dim(1);
    Dims flat_dims{samples * rows};
    for (int i = 2; i < table.rank(); ++i) flat_dims.push_back(table.dim(i));
    Tensor base = Tensor::arange(Shape{samples}, idx.dtype()).to(idx.device());
    base = element_times(base, scalar_like(static_cast<double>(rows), base));
    Dims bd{samples};
    bd.resize(static_cast<size_t>(idx.rank() - idx_dyn + 1), 1);
    Tensor shifted = plus(fold_dynamic(idx, idx_dyn), base.reshape(bd));
    return {table.reshape(flat_dims), shifted.reshape(idx.shape().dims())};
}
void forward_gather(ForwardContext& c) {
    GatherTable g = gather_table(c.inputs[0].data(), c.dyn_rank(0), c.inputs[1].data(), c.dyn_rank(1));
    c.outputs.push_back(Value(gather(g.table, g.indices, 0)));
}
void backward_gather(BackwardContext& c) {
    if (!c.needs[0]) return;
    const Tensor& ref = c.inputs[0].data();
    GatherTable g = gather_table(ref, c.dyn_rank(0), c.inputs[1].data(), c.dyn_rank(1));
    Tensor zeros = Tensor::zeros(g.table.shape(), ref.dtype(), ref.device());
    // The forward checked these indices (integers in range): a cast, not a second check, which on a GPU
    // would read them back on the host.
    const Tensor idx = g.indices.to(DataType::i64).contiguous();
    c.input_grads[0] = detail::scatter_add_of_checked(zeros, idx, c.output_grads[0].contiguous(), 0)
                           .reshape(ref.shape().dims());
}

// ---- one_hot ----
std::vector<OutputSpec> infer_one_hot(InferContext& c) {
    const Variable& x = c.inputs[0];
    const int64_t n = c.attrs.get<int64_t>("numClass");
    CTK_CHECK(n > 0, ValueError, c.where, ": num_classes ", n, " must be positive");
    const int64_t axis = c.attrs.get<int64_t>("axis");
    const int rank = x.rank() + 1;
    const int a = normalize_static_axis(static_cast<int>(axis), rank, c.where);
    Dims out = x.shape();
    out.insert(out.begin() + a, n);
    return {{out, x.dtype(), x.dynamic_axes()}};
}
void forward_one_hot(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const int rank = c.input_vars[0].rank() + 1;
    const int a = normalize_static_axis(static_cast<int>(c.attrs.get<int64_t>("axis")), rank, c.where);
    c.outputs.push_back(Value(one_hot(x, c.attrs.get<int64_t>("numClass"), c.dyn_rank(0) + a, x.dtype())));
}

// ---- top_k ----
std::vector<OutputSpec> infer_top_k(InferContext& c) {
    const Variable& x = c.inputs[0];
    const int a = normalize_static_axis(static_cast<int>(c.attrs.get<int64_t>("axis")), x.rank(), c.where);
    const int64_t k = c.attrs.get<int64_t>("numItems");
    CTK_CHECK(k >= 1 && k <= x.shape()[static_cast<size_t>(a)], ValueError, c.where, ": k = ", k,
              " is out of range for axis ", a, " of ", x.to_string());
    Dims out = x.shape();
    out[static_cast<size_t>(a)] = k;
    return {{out, x.dtype(), x.dynamic_axes()}, {out, x.dtype(), x.dynamic_axes()}};
}
void forward_top_k(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const int a = normalize_static_axis(static_cast<int>(c.attrs.get<int64_t>("axis")),
                                        c.input_vars[0].rank(), c.where);
    TopKResult r = top_k(x, c.attrs.get<int64_t>("numItems"), c.dyn_rank(0) + a);
    c.outputs.push_back(Value(r.values));
    c.outputs.push_back(Value(r.indices.to(x.dtype())));
    c.saved.push_back(r.indices);
}
void backward_top_k(BackwardContext& c) {
    if (!c.output_grads[0].defined()) return;
    const Tensor& x = c.inputs[0].data();
    const int a = normalize_static_axis(static_cast<int>(c.attrs.get<int64_t>("axis")),
                                        c.input_vars[0].rank(), c.where);
    const int ax = c.dyn_rank(0) + a;
    // Scatter along the axis: move it last, flatten the rest, offset indices per row.
    Tensor idx = c.saved[0];
    std::vector<int> order;
    for (int i = 0; i < x.rank(); ++i)
        if (i != ax) order.push_back(i);
    order.push_back(ax);
    Tensor xt = permute(x, order), it = permute(idx, order), gt = permute(c.output_grads[0], order);
    const int64_t n = xt.dim(-1), k = it.dim(-1), rows = xt.numel() / n;
    // Integral float64 indices (exact below 2^53) keep the arithmetic in the floating element-wise ops.
    Tensor offs = Tensor::arange(Shape{rows, 1}, DataType::f64).to(x.device());
    offs = element_times(offs, scalar_like(double(n), offs));
    Tensor flat_idx = plus(it.reshape({rows, k}).to(DataType::f64), offs).reshape({rows * k});
    Tensor g = scatter_add(Tensor::zeros(Shape{rows * n}, x.dtype(), x.device()), flat_idx,
                           gt.reshape({rows * k}), 0);
    std::vector<int> inverse(order.size());
    for (size_t i = 0; i < order.size(); ++i) inverse[static_cast<size_t>(order[i])] = static_cast<int>(i);
    c.input_grads[0] = permute(g.reshape(xt.shape().dims()), inverse);
}

// ---- cast ----
std::vector<OutputSpec> infer_cast(InferContext& c) {
    const DataType d = static_cast<DataType>(c.attrs.get<int64_t>("newDataType"));
    CTK_CHECK(is_floating(d), TypeError, c.where, ": can only cast to a floating dtype, not ", dtype_name(d));
    return {{c.inputs[0].shape(), d, c.inputs[0].dynamic_axes()}};
}
void forward_cast(ForwardContext& c) {
    c.outputs.push_back(
        Value(c.inputs[0].data().to(static_cast<DataType>(c.attrs.get<int64_t>("newDataType")))));
}
void backward_cast(BackwardContext& c) {
    c.input_grads[0] = c.output_grads[0].to(c.inputs[0].data().dtype());
}

}  // namespace

void register_shape_ops(OpTable& t) {
    t.add(PrimitiveOp::reshape, OpDef{"Reshape", 1, 1, infer_reshape, forward_reshape, backward_reshape});
    t.add(PrimitiveOp::slice, OpDef{"Slice", 1, 1, infer_slice, forward_slice, backward_slice});
    t.add(PrimitiveOp::splice, OpDef{"Splice", 1, 1 << 20, infer_splice, forward_splice, backward_splice});
    t.add(PrimitiveOp::transpose,
          OpDef{"TransposeAxes", 1, 1, infer_transpose, forward_transpose, backward_transpose});
    t.add(PrimitiveOp::pad, OpDef{"Pad", 1, 1, infer_pad, forward_pad, backward_pad});
    t.add(PrimitiveOp::gather, OpDef{"Gather", 2, 2, infer_gather, forward_gather, backward_gather});
    t.add(PrimitiveOp::one_hot, OpDef{"OneHot", 1, 1, infer_one_hot, forward_one_hot, nullptr});
    t.add(PrimitiveOp::top_k, OpDef{"TopK", 1, 1, infer_top_k, forward_top_k, backward_top_k});
    t.add(PrimitiveOp::cast, OpDef{"Cast", 1, 1, infer_cast, forward_cast, backward_cast});
    // Their gradients move dy into the operand's shape: only shapes are read.
    for (PrimitiveOp op : {PrimitiveOp::reshape, PrimitiveOp::slice, PrimitiveOp::splice,
                           PrimitiveOp::transpose, PrimitiveOp::pad, PrimitiveOp::cast})
        t.backward_reads(op, kReadsNothing);
    t.autocast({PrimitiveOp::reshape, PrimitiveOp::slice, PrimitiveOp::splice, PrimitiveOp::transpose,
                PrimitiveOp::pad},
               Autocast::follow);
    // The data follows; the indices keep their dtype (a bf16 index above 256 would round to another row).
    t.autocast({PrimitiveOp::gather}, Autocast::follow_data);
    t.autocast({PrimitiveOp::cast}, Autocast::any);  // its output dtype is its attribute
}

}  // namespace detail

FunctionPtr reshape(const Variable& x, const Dims& shape, std::optional<int> begin_axis,
                    std::optional<int> end_axis, const std::string& name) {
    Attributes a{{"newShape", shape}};
    if (begin_axis) a.set("beginAxis", int64_t(*begin_axis));
    if (end_axis) a.set("endAxis", int64_t(*end_axis));
    return detail::make_op(PrimitiveOp::reshape, {x}, a, name);
}

FunctionPtr flatten(const Variable& x, int axis, const std::string& name) {
    const int rank = x.rank();
    const int a = detail::normalize_static_axis(axis, rank + 1, "flatten '" + name + "'");
    Dims shape;
    if (a > 0) shape.push_back(-1);
    int64_t rest = 1;
    for (int i = a; i < rank; ++i) rest *= x.shape()[static_cast<size_t>(i)];
    if (a == 0) return reshape(x, {rest}, std::nullopt, std::nullopt, name);
    shape.push_back(rest);
    return reshape(x, shape, std::nullopt, std::nullopt, name);
}

FunctionPtr squeeze(const Variable& x, std::optional<std::vector<int>> axes, const std::string& name) {
    if (!x.shape_known()) {
        Dims deferred;
        if (axes) deferred.assign(axes->begin(), axes->end());
        CTK_CHECK(!axes || !axes->empty(), ValueError, "squeeze '", name, "': an empty list of axes");
        return detail::make_op(PrimitiveOp::reshape, {x},
                               Attributes{{"newShape", Dims{}}, {"squeezeAxes", deferred}}, name);
    }
    const Dims listed = axes ? Dims(axes->begin(), axes->end()) : Dims{};
    return reshape(x, detail::squeezed_dims(x, axes ? &listed : nullptr, "squeeze '" + name + "'"),
                   std::nullopt, std::nullopt, name);
}

FunctionPtr expand_dims(const Variable& x, int axis, const std::string& name) {
    if (!x.shape_known())
        return detail::make_op(PrimitiveOp::reshape, {x},
                               Attributes{{"newShape", Dims{}}, {"expandAxis", int64_t(axis)}}, name);
    const int a = detail::normalize_static_axis(axis, x.rank() + 1, "expand_dims '" + name + "'");
    return reshape(x, {1}, a, a, name);
}

FunctionPtr slice(const Variable& x, const std::vector<Axis>& axes, const Dims& begin, const Dims& end,
                  const Dims& strides, const std::string& name) {
    CTK_CHECK(strides.empty() || strides.size() == axes.size(), ValueError, "slice '", name,
              "': strides must match the axes");
    return detail::make_op(
        PrimitiveOp::slice, {x},
        Attributes{{"axes", axes}, {"beginIndex", begin}, {"endIndex", end}, {"sliceStrides", strides}},
        name);
}

FunctionPtr splice(const std::vector<Variable>& operands, const Axis& axis, const std::string& name) {
    CTK_CHECK(!operands.empty(), ValueError, "splice '", name, "': no operands");
    return detail::make_op(PrimitiveOp::splice, operands, Attributes{{"axis", axis}}, name);
}

FunctionPtr transpose(const Variable& x, const std::vector<int>& perm, const std::string& name) {
    Dims p(perm.begin(), perm.end());
    return detail::make_op(PrimitiveOp::transpose, {x}, Attributes{{"axisPermutation", p}}, name);
}

FunctionPtr swapaxes(const Variable& x, int axis1, int axis2, const std::string& name) {
    const std::string where = "swapaxes '" + name + "'";
    const int a = detail::normalize_static_axis(axis1, x.rank(), where),
              b = detail::normalize_static_axis(axis2, x.rank(), where);
    std::vector<int> perm;
    for (int i = 0; i < x.rank(); ++i) perm.push_back(i == a ? b : (i == b ? a : i));
    return transpose(x, perm, name);
}

FunctionPtr pad(const Variable& x, const std::vector<std::pair<int64_t, int64_t>>& pattern, PadMode mode,
                double constant_value, const std::string& name) {
    Dims lo, hi;
    for (const auto& [l, h] : pattern) lo.push_back(l), hi.push_back(h);
    return detail::make_op(
        PrimitiveOp::pad, {x},
        Attributes{{"padLo", lo}, {"padHi", hi}, {"mode", int64_t(mode)}, {"constantValue", constant_value}},
        name);
}

FunctionPtr gather(const Variable& reference, const Variable& indices, const std::string& name) {
    return detail::make_op(PrimitiveOp::gather, {reference, indices}, {}, name);
}

FunctionPtr one_hot(const Variable& x, int64_t num_classes, bool sparse_output, int axis,
                    const std::string& name) {
    return detail::make_op(
        PrimitiveOp::one_hot, {x},
        Attributes{{"numClass", num_classes}, {"outputSparse", sparse_output}, {"axis", int64_t(axis)}},
        name);
}

FunctionPtr top_k(const Variable& x, int64_t k, int axis, const std::string& name) {
    return detail::make_op(PrimitiveOp::top_k, {x}, Attributes{{"numItems", k}, {"axis", int64_t(axis)}},
                           name);
}

FunctionPtr cast(const Variable& x, DataType dtype, const std::string& name) {
    return detail::make_op(PrimitiveOp::cast, {x}, Attributes{{"newDataType", int64_t(dtype)}}, name);
}

}  // namespace ctk
