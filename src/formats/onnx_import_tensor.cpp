// ONNX import, the indexing and layout ops: Pad, TopK, OneHot, Expand, Dropout, and those that ctk has
// no single op for: GatherElements, GatherND, ScatterElements/Scatter, ScatterND, Compress, Tile, Split,
// CumSum, DepthToSpace, SpaceToDepth, and the ops whose result is known at load time (Size,
// ConstantOfShape, Range, EyeLike, the signal windows).
// Each is written with ctk's gather, transpose, reshape and times, so gradients come with them. Index
// operands that choose where values go (the scatters, Compress) must be constants: ctk's graphs have
// static shapes and a scatter's targets are laid out when the graph is built.
#include <cmath>
#include <numbers>

#include "formats/onnx_import_internal.h"

namespace ctk::detail::onnx_io::importer {

namespace {

Variable f64_constant(const std::vector<double>& v, const Dims& dims) {
    return constant(Tensor::from_vector(v, Shape(dims)));
}

Variable static_operand(NodeCtx& c, int i) {
    Variable v = c.im.in(c, i);
    if (dyn_of(c, v) != 0) unsupported(c, "a batched operand");
    for (int64_t d : v.shape())
        if (d < 0) unsupported(c, "an operand with free dims");
    return v;
}

int norm_axis(const NodeCtx& c, int64_t axis, int rank) {
    CTK_CHECK(axis >= -rank && axis < rank, ValueError, c.where, ": axis ", axis,
              " is out of range for rank ", rank);
    return static_cast<int>(axis < 0 ? axis + rank : axis);
}

// Index values made non-negative (ONNX counts negative ones from the end), checked against n.
std::vector<double> wrapped_indices(const NodeCtx& c, const Tensor& t, int64_t n) {
    std::vector<double> v = t.to_vector<double>();
    for (double& x : v) {
        if (x < 0) x += static_cast<double>(n);
        CTK_CHECK(x >= 0 && x < static_cast<double>(n), IndexError, c.where, ": index ", x,
                  " is out of range for a dim of ", n);
    }
    return v;
}

// x's slices along `axis` picked by idx (a rank-1 operand): the dim becomes idx's length.
Variable take_along(const Variable& x, const Variable& idx, int axis, const std::string& name = "") {
    const int r = x.rank();
    if (axis == 0) return gather(x, idx, name);
    std::vector<int> perm{axis}, back;
    for (int i = 0; i < r; ++i)
        if (i != axis) perm.push_back(i);
    for (int i = 1; i <= axis; ++i) back.push_back(i);
    back.push_back(0);
    for (int i = axis + 1; i < r; ++i) back.push_back(i);
    return transpose(gather(transpose(x, perm), idx), back, name);
}

// A value flattened to one axis (a ctk reshape of a static value).
Variable flat(const Variable& x, const std::string& where) {
    return reshape(x, {element_count(x.shape(), where)});
}

std::vector<Variable> gather_elements_node(NodeCtx& c) {
    Variable data = static_operand(c, 0), idx = static_operand(c, 1);
    const Dims& D = data.shape();
    const Dims& I = idx.shape();
    CTK_CHECK(D.size() == I.size(), ShapeError, c.where, ": data and indices differ in rank");
    const int axis = norm_axis(c, attr_i(c, "axis", 0), static_cast<int>(D.size()));
    // out[p] = data[p with its axis coordinate replaced by idx[p]]: a flat gather at
    // offset(p) + idx[p] * stride(axis), offset(p) the other coordinates' part.
    const Dims ds = row_major_strides(D), is = row_major_strides(I);
    const int64_t n = element_count(I, c.where);
    check_built_size(c, n, "the index table");
    std::vector<double> offset(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
        int64_t rest = k, off = 0;
        for (size_t d = 0; d < I.size(); ++d) {
            const int64_t coord = rest / is[d];
            rest %= is[d];
            CTK_CHECK(d == static_cast<size_t>(axis) || coord < D[d], ShapeError, c.where,
                      ": indices are larger than data outside the axis");
            if (d != static_cast<size_t>(axis)) off += coord * ds[d];
        }
        offset[static_cast<size_t>(k)] = static_cast<double>(off);
    }
    const double len = static_cast<double>(D[static_cast<size_t>(axis)]);
    Variable i = as_float(idx);
    if (i.dtype() != DataType::f64) i = cast(i, DataType::f64);
    Variable zero = constant(0.0, DataType::f64);
    i = element_select(less(i, zero), plus(i, constant(len, DataType::f64)), i);
    Variable lin =
        plus(element_times(i, constant(static_cast<double>(ds[static_cast<size_t>(axis)]), DataType::f64)),
             f64_constant(offset, I));
    return {gather(flat(data, c.where), lin, c.name)};
}

// Scatters as gathers from [data, updates] flattened to rows and joined: target j reads data's row j
// or an update's. `targets[k]`: the row update k goes to. Reduction "none" keeps the last update of a
// target (ONNX leaves their order open); "add" and "mul" combine data with every update of a target, in
// rounds that each hold at most one update per target (the r-th ones).
Variable scatter_flat(NodeCtx& c, const Variable& data, const Variable& updates,
                      const std::vector<int64_t>& targets, int64_t row, const std::string& reduction) {
    if (reduction != "none" && reduction != "add" && reduction != "mul")
        unsupported(c, "reduction '" + reduction + "'");
    const Dims D = data.shape();
    const int64_t rows = element_count(D, c.where) / row;
    check_built_size(c, rows, "the scatter's source table");
    std::vector<std::vector<int64_t>> rounds;  // update numbers per round
    std::vector<int64_t> seen(static_cast<size_t>(rows), 0), last(static_cast<size_t>(rows), -1);
    for (size_t k = 0; k < targets.size(); ++k) {
        const auto t = static_cast<size_t>(targets[k]);
        last[t] = static_cast<int64_t>(k);
        const auto r = static_cast<size_t>(seen[t]++);
        if (reduction == "none") continue;
        if (rounds.size() <= r) rounds.emplace_back();
        rounds[r].push_back(static_cast<int64_t>(k));
    }
    if (reduction == "none") {
        rounds.emplace_back();
        for (size_t k = 0; k < targets.size(); ++k)
            if (last[static_cast<size_t>(targets[k])] == static_cast<int64_t>(k))
                rounds.back().push_back(static_cast<int64_t>(k));
    }
    Variable cur = reshape(data, {rows, row});
    Variable u2 = reshape(updates, {static_cast<int64_t>(targets.size()), row});
    for (const auto& round : rounds) {
        std::vector<double> which, at, source(static_cast<size_t>(rows));
        for (int64_t j = 0; j < rows; ++j) source[static_cast<size_t>(j)] = static_cast<double>(j);
        for (size_t i = 0; i < round.size(); ++i) {
            const int64_t t = targets[static_cast<size_t>(round[i])];
            which.push_back(static_cast<double>(round[i]));
            at.push_back(static_cast<double>(t));
            source[static_cast<size_t>(t)] = static_cast<double>(rows + static_cast<int64_t>(i));
        }
        const auto m = static_cast<int64_t>(round.size());
        Variable u = m == static_cast<int64_t>(targets.size()) && round.back() == m - 1
                         ? u2
                         : Variable(gather(u2, f64_constant(which, {m})));
        if (reduction != "none") {
            Variable old = gather(cur, f64_constant(at, {m}));
            u = reduction == "add" ? Variable(plus(old, u)) : Variable(element_times(old, u));
        }
        cur = gather(splice({cur, u}, Axis(0)), f64_constant(source, {rows}));
    }
    return reshape(cur, D, std::nullopt, std::nullopt, c.name);
}

std::vector<Variable> scatter_elements_node(NodeCtx& c) {
    Variable data = static_operand(c, 0), updates = static_operand(c, 2);
    auto idx = c.im.const_value(c, 1);
    CTK_CHECK(idx.has_value(), IOError, c.where, ": the indices are missing");
    const Dims& D = data.shape();
    const Dims I = idx->shape().dims();
    CTK_CHECK(I == updates.shape() && I.size() == D.size(), ShapeError, c.where,
              ": indices and updates must have data's rank and one shape");
    const int axis = norm_axis(c, attr_i(c, "axis", 0), static_cast<int>(D.size()));
    const std::vector<double> iv = wrapped_indices(c, *idx, D[static_cast<size_t>(axis)]);
    const Dims ds = row_major_strides(D), is = row_major_strides(I);
    std::vector<int64_t> targets;
    for (size_t k = 0; k < iv.size(); ++k) {
        int64_t rest = static_cast<int64_t>(k), t = 0;
        for (size_t d = 0; d < I.size(); ++d) {
            int64_t coord = rest / is[d];
            rest %= is[d];
            if (d == static_cast<size_t>(axis)) coord = static_cast<int64_t>(iv[k]);
            CTK_CHECK(coord < D[d], IndexError, c.where, ": indices address outside data");
            t += coord * ds[d];
        }
        targets.push_back(t);
    }
    const DataType dt = data.dtype();
    return {back_to(
        scatter_flat(c, as_float(data), as_float(updates), targets, 1, attr_s(c, "reduction", "none")), dt)};
}

// GatherND / ScatterND address slices of data by the last dim of indices (k coordinates).
int64_t nd_row(const NodeCtx& c, const Dims& D, int64_t k) {
    CTK_CHECK(k >= 1 && k <= static_cast<int64_t>(D.size()), ShapeError, c.where,
              ": the last dim of indices must be 1 to data's rank");
    int64_t row = 1;
    for (size_t d = static_cast<size_t>(k); d < D.size(); ++d) row *= D[d];
    return row;
}

std::vector<Variable> scatter_nd_node(NodeCtx& c) {
    Variable data = static_operand(c, 0), updates = static_operand(c, 2);
    auto idx = c.im.const_value(c, 1);
    CTK_CHECK(idx.has_value() && idx->rank() >= 1, IOError, c.where, ": the indices are missing");
    const Dims& D = data.shape();
    const int64_t k = idx->shape().dims().back();
    const int64_t row = nd_row(c, D, k);
    const Dims ds = row_major_strides(Dims(D.begin(), D.begin() + k));
    const std::vector<double> iv = idx->to_vector<double>();
    std::vector<int64_t> targets;
    for (size_t p = 0; p < iv.size(); p += static_cast<size_t>(k)) {
        int64_t t = 0;
        for (int64_t j = 0; j < k; ++j) {
            double x = iv[p + static_cast<size_t>(j)];
            if (x < 0) x += static_cast<double>(D[static_cast<size_t>(j)]);
            CTK_CHECK(x >= 0 && x < static_cast<double>(D[static_cast<size_t>(j)]), IndexError, c.where,
                      ": index ", iv[p + static_cast<size_t>(j)], " is out of range");
            t += static_cast<int64_t>(x) * ds[static_cast<size_t>(j)];
        }
        targets.push_back(t);
    }
    const DataType dt = data.dtype();
    return {back_to(
        scatter_flat(c, as_float(data), as_float(updates), targets, row, attr_s(c, "reduction", "none")),
        dt)};
}

std::vector<Variable> gather_nd_node(NodeCtx& c) {
    Variable data = static_operand(c, 0), idx = static_operand(c, 1);
    const int64_t b = attr_i(c, "batch_dims", 0);
    const Dims& D = data.shape();
    const Dims& I = idx.shape();
    CTK_CHECK(!I.empty() && b >= 0 && b < static_cast<int64_t>(std::min(D.size(), I.size())), ShapeError,
              c.where, ": batch_dims ", b, " does not fit the operands");
    const int64_t k = I.back();
    const Dims inner(D.begin() + b, D.end());
    const int64_t row = nd_row(c, inner, k);
    // The flat row of each index tuple: its batch position's block plus the tuple's row-major offset.
    Dims coef = row_major_strides(Dims(inner.begin(), inner.begin() + k));
    const int64_t per_batch = element_count(Dims(inner.begin(), inner.begin() + k), c.where);
    Variable i = as_float(idx);
    if (i.dtype() != DataType::f64) i = cast(i, DataType::f64);
    // Negative coordinates count from the end of their dim.
    std::vector<double> dims_k;
    for (int64_t j = 0; j < k; ++j) dims_k.push_back(static_cast<double>(inner[static_cast<size_t>(j)]));
    Variable zero = constant(0.0, DataType::f64);
    i = element_select(less(i, zero), plus(i, f64_constant(dims_k, {k})), i);
    std::vector<double> cv(coef.begin(), coef.end());
    Variable lin = times(i, f64_constant(cv, {k}), 0);  // [idx dims but the last]
    const Dims lead(I.begin(), I.end() - 1);
    if (b > 0) {
        const Dims bd(I.begin(), I.begin() + b);
        const int64_t nb = element_count(bd, c.where), per = element_count(lead, c.where) / nb;
        check_built_size(c, element_count(lead, c.where), "the batch offsets");
        std::vector<double> base;
        for (int64_t q = 0; q < nb; ++q)
            for (int64_t r = 0; r < per; ++r) base.push_back(static_cast<double>(q * per_batch));
        lin = plus(lin, f64_constant(base, lead));
    }
    const int64_t rows = element_count(D, c.where) / row;
    Variable table = reshape(data, {rows, row});
    Dims out = lead;
    out.insert(out.end(), D.begin() + b + k, D.end());
    return {reshape(gather(table, lin), out, std::nullopt, std::nullopt, c.name)};
}

std::vector<Variable> compress_node(NodeCtx& c) {
    Variable x = static_operand(c, 0);
    auto cond = c.im.const_value(c, 1);
    CTK_CHECK(cond.has_value(), IOError, c.where, ": the condition is missing");
    const std::vector<double> cv = cond->to_vector<double>();
    const auto* a = find_attr(c, "axis");
    Variable src = a ? x : flat(x, c.where);
    const int axis = a ? norm_axis(c, a->i(), x.rank()) : 0;
    const int64_t n = src.shape()[static_cast<size_t>(axis)];
    std::vector<double> keep;
    for (size_t i = 0; i < cv.size() && static_cast<int64_t>(i) < n; ++i)
        if (cv[i] != 0) keep.push_back(static_cast<double>(i));
    if (keep.empty()) unsupported(c, "a condition that keeps nothing (an empty result)");
    return {take_along(src, f64_constant(keep, {static_cast<int64_t>(keep.size())}), axis, c.name)};
}

std::vector<Variable> tile_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    const Dims reps = c.im.const_ints(c, 1);
    const int r = onnx_rank(c, x), dyn = dyn_of(c, x);
    CTK_CHECK(static_cast<int>(reps.size()) == r, ValueError, c.where,
              ": repeats must hold one value per dim");
    Variable y = x;
    for (int i = 0; i < r; ++i) {
        const int64_t k = reps[static_cast<size_t>(i)];
        CTK_CHECK(k >= 1, ValueError, c.where, ": repeat ", k, " is not positive");
        if (k == 1) continue;
        if (i < dyn) unsupported(c, "tiling the batch dimension");
        y = splice(std::vector<Variable>(static_cast<size_t>(k), y), Axis(i - dyn));
    }
    return {alias(y, c.name)};
}

std::vector<Variable> split_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    const int a = static_axis(c, x, attr_i(c, "axis", 0));
    const int64_t n = x.shape()[static_cast<size_t>(a)];
    Dims parts = ints_input_or_attr(c, 1, "split", 13).value_or(Dims{});
    const int outs = c.node.output_size();
    if (parts.empty()) {
        const int64_t k = attr_i(c, "num_outputs", outs);
        CTK_CHECK(k > 0, ValueError, c.where, ": no outputs");
        const int64_t each = (n + k - 1) / k;
        for (int64_t lo = 0; lo < n; lo += each) parts.push_back(std::min(each, n - lo));
    }
    CTK_CHECK(static_cast<int>(parts.size()) == outs, ValueError, c.where, ": ", parts.size(), " parts for ",
              outs, " outputs");
    std::vector<Variable> ys;
    int64_t lo = 0;
    for (int64_t p : parts) {
        CTK_CHECK(p >= 0 && lo + p <= n, ValueError, c.where, ": the parts exceed dim ", n);
        if (p == 0) unsupported(c, "an empty part");
        ys.push_back(p == n ? Variable(alias(x, "")) : Variable(slice(x, {Axis(a)}, {lo}, {lo + p})));
        lo += p;
    }
    CTK_CHECK(lo == n, ValueError, c.where, ": the parts sum to ", lo, ", not dim ", n);
    return ys;
}

std::vector<Variable> cumsum_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    const Dims ax = c.im.const_ints(c, 1);
    CTK_CHECK(ax.size() == 1, ValueError, c.where, ": axis must be one value");
    const int a = static_axis(c, x, ax[0]);
    const bool exclusive = attr_i(c, "exclusive", 0) != 0, reverse = attr_i(c, "reverse", 0) != 0;
    const int64_t n = x.shape()[static_cast<size_t>(a)];
    check_built_size(c, checked_mul(n, n, c.where), "the cumulative-sum matrix");
    // y = x M along the axis, M[i][j] = 1 where input i counts towards output j.
    std::vector<double> m(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            const bool in = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
            m[static_cast<size_t>(i * n + j)] = in ? 1.0 : 0.0;
        }
    const DataType d = x.dtype();
    Variable xf = as_float(x);
    Variable mm = constant(Tensor::from_vector(m, Shape{n, n}).to(xf.dtype()));
    const int r = x.rank();
    if (a == r - 1) return {back_to(alias(times(xf, mm), c.name), d)};
    std::vector<int> perm;
    for (int i = 0; i < r; ++i)
        if (i != a) perm.push_back(i);
    perm.push_back(a);
    std::vector<int> back(static_cast<size_t>(r));
    for (int i = 0; i < r; ++i) back[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
    return {back_to(transpose(times(transpose(xf, perm), mm), back, c.name), d)};
}

// DepthToSpace (DCR or CRD) and SpaceToDepth on [lead..., C, H, W] by reshape and transpose.
std::vector<Variable> depth_space_node(NodeCtx& c, bool to_space) {
    Variable x = c.im.in(c, 0);
    const int64_t b = attr_i(c, "blocksize", 0);
    CTK_CHECK(b >= 1, ValueError, c.where, ": blocksize must be positive");
    const Dims& s = x.shape();
    if (s.size() < 3 || onnx_rank(c, x) != 4) unsupported(c, "an input that is not [N, C, H, W]");
    const size_t L = s.size() - 3;
    const int64_t C = s[L], H = s[L + 1], W = s[L + 2];
    Dims lead(s.begin(), s.begin() + static_cast<std::ptrdiff_t>(L));
    auto with_lead = [&](Dims d) {
        d.insert(d.begin(), lead.begin(), lead.end());
        return d;
    };
    auto perm_with_lead = [&](std::vector<int> p) {
        std::vector<int> out;
        for (size_t i = 0; i < L; ++i) out.push_back(static_cast<int>(i));
        for (int v : p) out.push_back(v + static_cast<int>(L));
        return out;
    };
    if (to_space) {
        CTK_CHECK(C % (b * b) == 0, ShapeError, c.where, ": ", C, " channels do not divide by blocksize^2");
        const bool crd = attr_s(c, "mode", "DCR") == "CRD";
        const int64_t c2 = C / (b * b);
        Variable y = crd ? reshape(x, with_lead({c2, b, b, H, W})) : reshape(x, with_lead({b, b, c2, H, W}));
        y = transpose(
            y, perm_with_lead(crd ? std::vector<int>{0, 3, 1, 4, 2} : std::vector<int>{2, 3, 0, 4, 1}));
        return {reshape(y, with_lead({c2, H * b, W * b}), std::nullopt, std::nullopt, c.name)};
    }
    CTK_CHECK(H % b == 0 && W % b == 0, ShapeError, c.where, ": ", H, "x", W,
              " does not divide by blocksize");
    Variable y = reshape(x, with_lead({C, H / b, b, W / b, b}));
    y = transpose(y, perm_with_lead({2, 4, 0, 1, 3}));
    return {reshape(y, with_lead({C * b * b, H / b, W / b}), std::nullopt, std::nullopt, c.name)};
}

// ---- values known at load time ----

Variable known(const Tensor& t, const std::string& name) {
    return constant(t, name);
}

std::vector<Variable> size_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    if (dyn_of(c, x) != 0) unsupported(c, "the size of a batched value");
    Tensor t = Tensor::full(Shape{}, static_cast<double>(element_count(x.shape(), c.where)), DataType::i64);
    c.im.set_const(c.node.output(0), t);
    return {known(t, c.name)};
}

std::vector<Variable> constant_of_shape_node(NodeCtx& c) {
    if (c.im.sym_shape(c, 0)) unsupported(c, "a run-time shape");
    const Dims dims = c.im.const_ints(c, 0);
    for (int64_t d : dims) CTK_CHECK(d >= 0, ValueError, c.where, ": negative dim ", d);
    double v = 0.0;
    DataType dt = DataType::f32;
    if (const auto* a = find_attr(c, "value")) {
        Tensor vt = tensor_from_proto(a->t(), c.where);
        CTK_CHECK(vt.numel() == 1, ValueError, c.where, ": value must hold one element");
        v = vt.to_vector<double>()[0];
        dt = vt.dtype();
    }
    if (element_count(dims, c.where) == 0) unsupported(c, "an empty result");
    expand_zeros(c, dims, dt);  // refuses sizes beyond this machine's memory
    Tensor t = Tensor::full(Shape(dims), v, dt);
    c.im.set_const(c.node.output(0), t);
    return {known(t, c.name)};
}

std::vector<Variable> range_node(NodeCtx& c) {
    auto s = c.im.const_value(c, 0), l = c.im.const_value(c, 1), d = c.im.const_value(c, 2);
    CTK_CHECK(s && l && d && s->numel() == 1 && l->numel() == 1 && d->numel() == 1, ValueError, c.where,
              ": start, limit and delta must be scalars");
    const double start = s->to_vector<double>()[0], limit = l->to_vector<double>()[0],
                 delta = d->to_vector<double>()[0];
    CTK_CHECK(delta != 0, ValueError, c.where, ": delta is 0");
    const double count = std::max(std::ceil((limit - start) / delta), 0.0);
    check_built_size(c, count > 1e18 ? -1 : static_cast<int64_t>(count), "the range");
    if (count == 0) unsupported(c, "an empty range");
    std::vector<double> v;
    for (int64_t i = 0; i < static_cast<int64_t>(count); ++i)
        v.push_back(start + static_cast<double>(i) * delta);
    Tensor t = Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}).to(s->dtype());
    c.im.set_const(c.node.output(0), t);
    return {known(t, c.name)};
}

std::vector<Variable> eye_like_node(NodeCtx& c) {
    Variable x = static_operand(c, 0);
    CTK_CHECK(x.rank() == 2, ShapeError, c.where, ": the input must be 2-D");
    const int64_t k = attr_i(c, "k", 0), rows = x.shape()[0], cols = x.shape()[1];
    check_built_size(c, checked_mul(rows, cols, c.where), "the identity");
    const auto* a = find_attr(c, "dtype");
    const DataType dt = a ? dtype_of_onnx(static_cast<int32_t>(a->i()), c.where) : x.dtype();
    std::vector<double> v(static_cast<size_t>(rows * cols), 0.0);
    for (int64_t i = 0; i < rows; ++i)
        if (i + k >= 0 && i + k < cols) v[static_cast<size_t>(i * cols + i + k)] = 1.0;
    return {known(Tensor::from_vector(v, Shape{rows, cols}).to(dt), c.name)};
}

// HannWindow, HammingWindow, BlackmanWindow (opset 17): a0 - a1 cos(2 pi n / N') + a2 cos(4 pi n / N'),
// N' = size when periodic, size - 1 when symmetric.
Handler window_handler(double a0, double a1, double a2) {
    return [=](NodeCtx& c) -> std::vector<Variable> {
        const Dims size = c.im.const_ints(c, 0);
        CTK_CHECK(size.size() == 1 && size[0] >= 1, ValueError, c.where, ": size must be one positive value");
        check_built_size(c, size[0], "the window");
        const bool periodic = attr_i(c, "periodic", 1) != 0;
        const double denom = static_cast<double>(periodic ? size[0] : size[0] - 1);
        std::vector<double> v;
        for (int64_t n = 0; n < size[0]; ++n) {
            const double t = denom > 0 ? 2 * std::numbers::pi * static_cast<double>(n) / denom : 0.0;
            v.push_back(a0 - a1 * std::cos(t) + a2 * std::cos(2 * t));
        }
        const auto dt = dtype_of_onnx(static_cast<int32_t>(attr_i(c, "output_datatype", TP::FLOAT)), c.where);
        Tensor t = Tensor::from_vector(v, Shape{size[0]}).to(dt);
        c.im.set_const(c.node.output(0), t);
        return {known(t, c.name)};
    };
}

}  // namespace

Variable reverse_axis(const Variable& x, int axis) {
    const int64_t n = x.shape().at(static_cast<size_t>(axis));
    std::vector<double> idx;
    for (int64_t i = n - 1; i >= 0; --i) idx.push_back(static_cast<double>(i));
    return take_along(x, f64_constant(idx, {n}), axis);
}

Variable edge_pad(const Variable& x, const std::vector<std::pair<int64_t, int64_t>>& pads) {
    Variable y = x;
    for (size_t a = 0; a < pads.size(); ++a) {
        const auto [lo, hi] = pads[a];
        if (lo == 0 && hi == 0) continue;
        const int64_t n = y.shape()[a];
        std::vector<double> idx;
        for (int64_t i = -lo; i < n + hi; ++i)
            idx.push_back(static_cast<double>(std::clamp<int64_t>(i, 0, n - 1)));
        y = take_along(y, f64_constant(idx, {static_cast<int64_t>(idx.size())}), static_cast<int>(a));
    }
    return y;
}

void add_tensor_handlers(std::map<std::string, Handler>& h) {
    h["Pad"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const std::string mode = attr_s(c, "mode", "constant");
        PadMode m = mode == "constant"  ? PadMode::constant
                    : mode == "reflect" ? PadMode::reflect
                                        : PadMode::symmetric;
        if (m == PadMode::symmetric && mode != "edge") unsupported(c, "pad mode '" + mode + "'");
        const auto given = ints_input_or_attr(c, 1, "pads", 11);
        CTK_CHECK(given.has_value(), IOError, c.where, ": the pads are missing");
        const Dims pads = *given;
        double value = c.im.opset_ < 11 ? attr_f(c, "value", 0.0) : 0.0;
        if (c.im.opset_ >= 11)
            if (auto t = c.im.const_value(c, 2); t && t->numel() > 0) value = t->to_vector<double>()[0];
        const int r = onnx_rank(c, x), dyn = dyn_of(c, x);
        Dims axes;
        if (c.im.has_input(c, 3)) {
            axes = c.im.const_ints(c, 3);
        } else {
            for (int i = 0; i < r; ++i) axes.push_back(i);
        }
        CTK_CHECK(pads.size() == 2 * axes.size(), ValueError, c.where, ": pads must hold 2 x ", axes.size(),
                  " values");
        std::vector<std::pair<int64_t, int64_t>> pat(static_cast<size_t>(x.rank()), {0, 0});
        for (size_t i = 0; i < axes.size(); ++i) {
            const int64_t lo = pads[i], hi = pads[i + axes.size()];
            if (lo < 0 || hi < 0) unsupported(c, "negative pads");
            int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
            CTK_CHECK(a >= 0 && a < r, ValueError, c.where, ": axis out of range");
            if (a < dyn) {
                if (lo != 0 || hi != 0) unsupported(c, "padding the batch dimension");
                continue;
            }
            pat[static_cast<size_t>(a - dyn)] = {lo, hi};
        }
        const DataType d = x.dtype();
        if (mode == "edge") {
            if (dyn != 0) unsupported(c, "edge padding of a batched value");
            for (size_t i = 0; i < pat.size(); ++i) {
                int64_t n = 0;
                if (__builtin_add_overflow(x.shape()[i], pat[i].first, &n) ||
                    __builtin_add_overflow(n, pat[i].second, &n))
                    n = -1;
                check_built_size(c, n, "an edge-padding index");
            }
            return {back_to(alias(edge_pad(as_float(x), pat), c.name), d)};
        }
        return {back_to(pad(as_float(x), pat, m, value, c.name), d)};
    };
    h["TopK"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const Dims k = c.im.opset_ < 10 ? Dims{attr_i(c, "k", -1)} : c.im.const_ints(c, 1);
        CTK_CHECK(k.size() == 1 && k[0] >= 0, ValueError, c.where, ": K must hold one value");
        const int a = static_axis(c, x, attr_i(c, "axis", -1));
        const bool largest = attr_i(c, "largest", 1) != 0;
        const DataType d = x.dtype();
        Variable xf = as_float(x);
        FunctionPtr t = top_k(largest ? xf : Variable(negate(xf)), k[0], a, c.name);
        Variable values = t->outputs()[0], idx = t->outputs()[1];
        if (!largest) values = negate(values);
        return {back_to(values, d), idx};
    };
    h["OneHot"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable idx = c.im.in(c, 0);
        const Dims depth = c.im.const_ints(c, 1);
        auto values = c.im.const_value(c, 2);
        CTK_CHECK(depth.size() == 1 && values && values->numel() == 2, ValueError, c.where,
                  ": depth must be one value and values two");
        const std::vector<double> v = values->to_vector<double>();
        const DataType d = values->dtype();
        const DataType fd = is_floating(d) ? d : DataType::f64;
        const int64_t axis = attr_i(c, "axis", -1);
        const int r = onnx_rank(c, idx) + 1;
        CTK_CHECK(axis >= -r && axis < r, ValueError, c.where, ": axis out of range");
        const int a = static_cast<int>(axis < 0 ? axis + r : axis) - dyn_of(c, idx);
        if (a < 0) unsupported(c, "the batch dimension");
        // Negative indices count from the end of depth.
        Variable fi = cast(idx, fd), zero = constant(0.0, fd);
        fi = element_select(less(fi, zero), plus(fi, constant(static_cast<double>(depth[0]), fd)), fi);
        Variable oh = one_hot(fi, depth[0], false, a);
        Variable y = plus(element_times(oh, constant(v[1] - v[0], fd)), constant(v[0], fd));
        return {back_to(alias(y, c.name), d)};
    };
    h["Expand"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        if (dyn_of(c, x) != 0) unsupported(c, "Expand of a batched value");
        const Dims shape = c.im.const_ints(c, 1);
        Shape out = broadcast_shapes(Shape(x.shape()), Shape(shape), "Expand");
        const DataType d = x.dtype();
        Variable xf = as_float(x);
        return {back_to(plus(xf, expand_zeros(c, out.dims(), xf.dtype()), c.name), d)};
    };
    h["Dropout"] = [](NodeCtx& c) -> std::vector<Variable> {
        // Inference, or training with ratio 0: the identity, and a mask that keeps everything.
        if (auto t = c.im.const_value(c, 2); t && t->numel() == 1 && t->to_vector<double>()[0] != 0) {
            auto ratio = c.im.const_value(c, 1);
            if (!ratio || ratio->numel() != 1 || ratio->to_vector<double>()[0] != 0)
                unsupported(c, "training_mode true (random, unlike any reference)");
        }
        Variable x = c.im.in(c, 0);
        if (c.node.output_size() > 1 && !c.node.output(1).empty()) {
            if (dyn_of(c, x) != 0) unsupported(c, "the mask output of a batched value");
            return {alias(x, c.name), constant(x.shape(), 1.0, DataType::f32)};
        }
        return {alias(x, c.name)};
    };
    h["GatherElements"] = gather_elements_node;
    h["GatherND"] = gather_nd_node;
    h["ScatterElements"] = scatter_elements_node;
    h["Scatter"] = scatter_elements_node;  // opsets 9-10: ScatterElements without reduction
    h["ScatterND"] = scatter_nd_node;
    h["Compress"] = compress_node;
    h["Tile"] = tile_node;
    h["Split"] = split_node;
    h["CumSum"] = cumsum_node;
    h["DepthToSpace"] = [](NodeCtx& c) { return depth_space_node(c, true); };
    h["SpaceToDepth"] = [](NodeCtx& c) { return depth_space_node(c, false); };
    h["Size"] = size_node;
    h["ConstantOfShape"] = constant_of_shape_node;
    h["Range"] = range_node;
    h["EyeLike"] = eye_like_node;
    h["HannWindow"] = window_handler(0.5, 0.5, 0.0);
    h["HammingWindow"] = window_handler(25.0 / 46.0, 21.0 / 46.0, 0.0);
    h["BlackmanWindow"] = window_handler(0.42, 0.5, 0.08);
}

}  // namespace ctk::detail::onnx_io::importer
