// ONNX import, the op table: one handler per ONNX op type (element-wise, reductions, shapes, Gather,
// Softmax, MatMul, ...). Convolutions, pooling and batch normalization are in onnx_import_nn.cpp.
#include <cmath>
#include <limits>

#include "formats/onnx_import_internal.h"
#include "formats/onnx_recurrence.h"

namespace ctk::detail::onnx_io::importer {

// ---- attributes ----
const onnx::AttributeProto* find_attr(const NodeCtx& c, const char* key) {
    for (const auto& a : c.node.attribute())
        if (a.name() == key) return &a;
    return nullptr;
}
int64_t attr_i(const NodeCtx& c, const char* key, int64_t fallback) {
    const auto* a = find_attr(c, key);
    return a ? a->i() : fallback;
}
double attr_f(const NodeCtx& c, const char* key, double fallback) {
    const auto* a = find_attr(c, key);
    return a ? static_cast<double>(a->f()) : fallback;
}
std::string attr_s(const NodeCtx& c, const char* key, const std::string& fallback) {
    const auto* a = find_attr(c, key);
    return a ? a->s() : fallback;
}
std::optional<Dims> attr_ints(const NodeCtx& c, const char* key) {
    const auto* a = find_attr(c, key);
    if (!a) return std::nullopt;
    return Dims(a->ints().begin(), a->ints().end());
}

std::optional<Dims> ints_input_or_attr(NodeCtx& c, int i, const char* key, int64_t since) {
    if (c.im.opset_ < since) return attr_ints(c, key);
    if (!c.im.has_input(c, i)) return std::nullopt;
    return c.im.const_ints(c, i);
}

[[noreturn]] void unsupported(const NodeCtx& c, const std::string& why) {
    CTK_THROW(NotImplementedError, c.where, ": ", why);
}

void check_built_size(const NodeCtx& c, int64_t elements, const std::string& what) {
    CTK_CHECK(elements >= 0 && elements <= kMaxBuiltElements, ValueError, c.where, ": ", what, " would hold ",
              elements, " values, more than the ", kMaxBuiltElements,
              " ctk builds from a file's shapes and attributes");
}

Variable expand_zeros(const NodeCtx& c, const Dims& dims, DataType dtype) {
    (void)checked_nbytes(dims, dtype, c.where);  // dims that overflow are an error of their own
    check_built_size(c, element_count(dims, c.where), "the expanded value " + dims_to_string(dims));
    return constant(dims, 0.0, dtype);
}

int dyn_of(const NodeCtx& c, const Variable& v) {
    return v.dynamic_rank() - (c.im.frame_ && v.has_sequence_axis() ? 1 : 0);
}
int onnx_rank(const NodeCtx& c, const Variable& v) {
    return dyn_of(c, v) + v.rank();
}
// ONNX axis (negative from the end) -> ctk static axis; the batch axis is refused.
int static_axis(const NodeCtx& c, const Variable& v, int64_t axis, int extra_rank) {
    const int r = onnx_rank(c, v) + extra_rank;
    CTK_CHECK(axis >= -r && axis < r, ValueError, c.where, ": axis ", axis, " is out of range for rank ", r);
    const int a = static_cast<int>(axis < 0 ? axis + r : axis);
    if (a < dyn_of(c, v)) unsupported(c, "an axis over the batch dimension");
    return a - dyn_of(c, v);
}

// Integer operands of arithmetic go through f64 (exact below 2^53) and come back.
Variable as_float(const Variable& v) {
    return is_floating(v.dtype()) ? v : Variable(cast(v, DataType::f64));
}
// ctk casts only to floating dtypes, so integer results stay in f64 (their values are exact).
Variable back_to(const Variable& y, DataType dtype) {
    return y.dtype() == dtype || !is_floating(dtype) ? y : Variable(cast(y, dtype));
}

Variable cast_to_onnx_type(const NodeCtx& c, const Variable& x, int64_t to) {
    if (to == TP::BOOL) {
        Variable xf = as_float(x);
        return back_to(not_equal(xf, constant(0.0, xf.dtype()), c.name), DataType::f32);
    }
    const DataType d = dtype_of_onnx(static_cast<int32_t>(to), c.where);
    if (d == x.dtype()) return alias(x, c.name);
    if (!is_floating(d)) {  // truncation toward zero, kept in a floating dtype (see back_to)
        if (!is_floating(x.dtype())) return alias(x, c.name);
        Variable zero = constant(0.0, x.dtype());
        return element_select(less(x, zero), ceil(x), floor(x), c.name);
    }
    return cast(x, d, c.name);
}

namespace {

// A static operand that has as many dims as a batched operand's ONNX rank drops its leading 1s, so
// that ctk's broadcasting (static axes after the dynamic ones) matches NumPy's.
std::vector<Variable> broadcastable(const NodeCtx& c, std::vector<Variable> vs) {
    int dyn = 0, srank = 0;
    for (const Variable& v : vs) dyn = std::max(dyn, dyn_of(c, v));
    if (dyn == 0) return vs;
    for (const Variable& v : vs)
        if (dyn_of(c, v) == dyn) srank = std::max(srank, v.rank());
    for (Variable& v : vs) {
        if (dyn_of(c, v) != 0 || v.rank() <= srank) continue;
        const Dims& s = v.shape();
        const size_t drop = s.size() - static_cast<size_t>(srank);
        for (size_t i = 0; i < drop; ++i)
            if (s[i] != 1) unsupported(c, "a static operand that broadcasts over the batch dimension");
        v = reshape(v, Dims(s.begin() + static_cast<std::ptrdiff_t>(drop), s.end()));
    }
    return vs;
}

DataType common_float(std::vector<Variable>& vs) {
    DataType d = vs[0].dtype();
    for (Variable& v : vs) {
        if (!is_floating(v.dtype()) || v.dtype() != vs[0].dtype()) {
            for (Variable& w : vs) w = as_float(w);
            for (Variable& w : vs)
                if (w.dtype() != DataType::f64) w = cast(w, DataType::f64);
            break;
        }
    }
    return d;
}

using Binary = FunctionPtr (*)(const Variable&, const Variable&, const std::string&);
Handler binary_handler(Binary fn, bool comparison) {
    return [fn, comparison](NodeCtx& c) -> std::vector<Variable> {
        std::vector<Variable> v = broadcastable(c, {c.im.in(c, 0), c.im.in(c, 1)});
        const DataType d = common_float(v);
        Variable y = fn(v[0], v[1], c.name);
        return {comparison ? back_to(y, DataType::f32) : back_to(y, d)};
    };
}
Handler nary_handler(Binary fn, bool mean) {
    return [fn, mean](NodeCtx& c) -> std::vector<Variable> {
        std::vector<Variable> v;
        for (int i = 0; i < c.node.input_size(); ++i) v.push_back(c.im.in(c, i));
        v = broadcastable(c, v);
        const DataType d = common_float(v);
        Variable acc = v[0];
        for (size_t i = 1; i < v.size(); ++i) acc = fn(acc, v[i], "");
        if (mean) acc = element_divide(acc, constant(static_cast<double>(v.size()), acc.dtype()));
        if (v.size() == 1) acc = alias(acc, c.name);
        return {back_to(acc, d)};
    };
}
using Unary = FunctionPtr (*)(const Variable&, const std::string&);
Handler unary_handler(Unary fn, bool integer_ok = false) {
    return [fn, integer_ok](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        if (!is_floating(x.dtype()) && !integer_ok) unsupported(c, "integer operands");
        const DataType d = x.dtype();
        return {back_to(fn(as_float(x), c.name), d)};
    };
}
Handler scalar_unary(PrimitiveOp op, const char* ka, double da, const char* kb, double db) {
    return [=](NodeCtx& c) -> std::vector<Variable> {
        const double alpha = ka ? attr_f(c, ka, da) : da, beta = kb ? attr_f(c, kb, db) : db;
        return {
            primitive_function(op, {c.im.in(c, 0)}, Attributes{{"alpha", alpha}, {"beta", beta}}, c.name)};
    };
}

std::vector<Variable> reduce_node(NodeCtx& c, const char* kind) {
    Variable x = c.im.in(c, 0);
    const bool keep = attr_i(c, "keepdims", 1) != 0;
    std::optional<Dims> axes;
    if (std::string(kind) == "ReduceSum") {
        axes = ints_input_or_attr(c, 1, "axes", 13);
    } else {
        axes = attr_ints(c, "axes");
    }
    if (!axes || axes->empty()) {
        if (attr_i(c, "noop_with_empty_axes", 0) != 0) return {alias(x, c.name)};
        axes = Dims{};
        for (int i = 0; i < onnx_rank(c, x); ++i) axes->push_back(i);
    }
    std::vector<Axis> ctk_axes;
    for (int64_t a : *axes) ctk_axes.emplace_back(static_axis(c, x, a));
    if (ctk_axes.empty()) return {alias(x, c.name)};
    const DataType d = x.dtype();
    Variable xf = as_float(x);
    const std::string k = kind;
    FunctionPtr y;
    if (k == "ReduceSum")
        y = reduce_sum(xf, ctk_axes, keep, c.name);
    else if (k == "ReduceMean")
        y = reduce_mean(xf, ctk_axes, keep, c.name);
    else if (k == "ReduceMax")
        y = reduce_max(xf, ctk_axes, keep, c.name);
    else if (k == "ReduceMin")
        y = reduce_min(xf, ctk_axes, keep, c.name);
    else if (k == "ReduceProd")
        y = reduce_prod(xf, ctk_axes, keep, c.name);
    else if (k == "ReduceL1")
        y = reduce_l1(xf, ctk_axes, keep, c.name);
    else if (k == "ReduceL2")
        y = reduce_l2(xf, ctk_axes, keep, c.name);
    else if (k == "ReduceLogSumExp")
        y = reduce_log_sum_exp(xf, ctk_axes, keep, c.name);
    else if (k == "ReduceSumSquare")
        y = reduce_sum_square(xf, ctk_axes, keep, c.name);
    else if (k == "ReduceLogSum")
        y = log(reduce_sum(xf, ctk_axes, keep), c.name);
    else
        unsupported(c, "reduction " + k);
    return {back_to(y, d)};
}

Dims static_shape_after_reshape(NodeCtx& c, const Variable& x, Dims target, bool allow_zero) {
    const int dyn = dyn_of(c, x);
    const Dims& xs = x.shape();
    if (!allow_zero)
        for (size_t i = 0; i < target.size(); ++i)
            if (target[i] == 0) {
                CTK_CHECK(static_cast<int>(i) < onnx_rank(c, x), ValueError, c.where, ": shape copies dim ",
                          i, " of a rank-", onnx_rank(c, x), " input");
                target[i] = static_cast<int>(i) < dyn ? 0 : xs[i - static_cast<size_t>(dyn)];
            }
    if (dyn == 1) {
        CTK_CHECK(!target.empty(), ValueError, c.where, ": reshape of a batched value to a scalar");
        if (target[0] == -1) {
            for (size_t i = 1; i < target.size(); ++i)
                if (target[i] == -1) unsupported(c, "a reshape that moves the batch dimension");
            int64_t have = 1, want = 1;
            for (int64_t d : xs) have = checked_mul(have, d, c.where);
            for (size_t i = 1; i < target.size(); ++i) want = checked_mul(want, target[i], c.where);
            if (have != want) unsupported(c, "a reshape that moves the batch dimension");
        } else if (target[0] != 0) {
            unsupported(c, "a reshape that moves the batch dimension");
        }
        target.erase(target.begin());
    } else if (dyn > 1) {
        if (allow_zero) unsupported(c, "allowzero on a value with batch and sequence dims");
        for (int i = 0; i < dyn; ++i)
            if (static_cast<int>(target.size()) <= i || target[static_cast<size_t>(i)] != 0)
                unsupported(c, "a reshape that moves the batch or sequence dimension");
        target.erase(target.begin(), target.begin() + dyn);
    }
    return target;
}

Variable reshape_to(const Variable& x, const Dims& shape, const std::string& name) {
    return reshape(x, shape, std::nullopt, std::nullopt, name);
}

// A sample shape for `numel` elements: one -1 is resolved, other dims must be static.
Dims resolve_free_dim(const NodeCtx& c, Dims target, int64_t numel) {
    int64_t known = 1;
    int free = -1;
    for (size_t i = 0; i < target.size(); ++i) {
        if (target[i] == -1 && free < 0) {
            free = static_cast<int>(i);
            continue;
        }
        if (target[i] < 0) unsupported(c, "a shape with several -1 dims");
        known = checked_mul(known, target[i], c.where);
    }
    if (free >= 0) {
        CTK_CHECK(known > 0 && numel % known == 0, ShapeError, c.where, ": cannot reshape ", numel,
                  " elements per frame to ", dims_to_string(target));
        target[static_cast<size_t>(free)] = numel / known;
        known = numel;
    }
    CTK_CHECK(known == numel, ShapeError, c.where, ": cannot reshape ", numel, " elements per frame to ",
              dims_to_string(target));
    return target;
}

// Reshape with a constant target, or with one built from Shape of a batched value. ctk's export of
// per-frame ops on sequences writes Reshape(x, [-1, sample...]) to merge the batch and sequence dims and
// Reshape(y, Concat(Shape(x)[0:2], sample)) to split them again; ctk keeps both axes throughout.
std::vector<Variable> reshape_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    const bool allow_zero = attr_i(c, "allowzero", 0) != 0;
    const int dyn = dyn_of(c, x);
    for (int64_t d : x.shape())
        if (d < 0 && (dyn > 1 || c.im.sym_shape(c, 1))) unsupported(c, "free dims");
    if (const SymShape* sym = c.im.sym_shape(c, 1)) {
        size_t lead = 0;
        for (; lead < sym->size() && (*sym)[lead].axis >= 0; ++lead)
            if ((*sym)[lead].axis != static_cast<int>(lead))
                unsupported(c, "a run-time shape that moves dims");
        const int want = c.im.merged(x) ? 2 : dyn;
        if (static_cast<int>(lead) != want) unsupported(c, "a run-time shape that moves the dynamic dims");
        Dims rest;
        for (size_t i = lead; i < sym->size(); ++i) {
            if ((*sym)[i].axis >= 0) unsupported(c, "a run-time shape that moves the dynamic dims");
            rest.push_back((*sym)[i].value);
        }
        return {reshape_to(x, resolve_free_dim(c, rest, element_count(x.shape(), "reshape")), c.name)};
    }
    Dims target = c.im.const_ints(c, 1);
    const bool merging = dyn == 2 && !target.empty() && target[0] == -1;
    if (!c.im.merged(x) && !merging)
        return {reshape_to(x, static_shape_after_reshape(c, x, target, allow_zero), c.name)};
    // [batch * sequence, sample...] in and out: the leading -1 (or 0 on a merged value) must take
    // exactly the merged dims, so the sample keeps its size.
    if (target.empty() || !(target[0] == -1 || (target[0] == 0 && !allow_zero && c.im.merged(x))))
        unsupported(c, "a reshape that moves the merged batch and sequence dims");
    Dims rest(target.begin() + 1, target.end());
    for (size_t i = 0; i < rest.size(); ++i) {
        if (rest[i] == 0 && !allow_zero) {
            CTK_CHECK(i < x.shape().size(), ValueError, c.where, ": shape copies a dim the input lacks");
            rest[i] = x.shape()[i];
        }
        if (rest[i] < 0) unsupported(c, "a reshape that moves the merged batch and sequence dims");
    }
    if (element_count(rest, "reshape") != element_count(x.shape(), "reshape"))
        unsupported(c, "a reshape that moves the merged batch and sequence dims");
    Variable y = reshape_to(x, rest, c.name);
    c.im.merged_.insert(y.impl());
    return {y};
}

std::vector<Variable> slice_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    const auto given_starts = ints_input_or_attr(c, 1, "starts", 10),
               given_ends = ints_input_or_attr(c, 2, "ends", 10);
    CTK_CHECK(given_starts && given_ends, IOError, c.where, ": starts or ends are missing");
    const Dims starts = *given_starts, ends = *given_ends;
    Dims axes = ints_input_or_attr(c, 3, "axes", 10).value_or(Dims{}), steps;
    if (c.im.opset_ >= 10 && c.im.has_input(c, 4)) steps = c.im.const_ints(c, 4);
    if (axes.empty())
        for (size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<int64_t>(i));
    if (steps.empty()) steps.assign(starts.size(), 1);
    CTK_CHECK(ends.size() == starts.size() && axes.size() == starts.size() && steps.size() == starts.size(),
              ValueError, c.where, ": starts, ends, axes and steps differ in length");
    std::vector<Axis> ctk_axes;
    Dims b, e, s;
    for (size_t i = 0; i < starts.size(); ++i) {
        const int a = static_axis(c, x, axes[i]);
        const int64_t n = x.shape()[static_cast<size_t>(a)];
        if (steps[i] <= 0) unsupported(c, "a non-positive slice step");
        int64_t lo = starts[i] < 0 ? starts[i] + n : starts[i];
        int64_t hi = ends[i] < 0 ? ends[i] + n : ends[i];
        lo = std::clamp<int64_t>(lo, 0, n);
        hi = std::clamp<int64_t>(hi, 0, n);
        if (lo >= hi) unsupported(c, "an empty slice");
        if (lo == 0 && hi == n && steps[i] == 1) continue;
        ctk_axes.emplace_back(a);
        b.push_back(lo);
        e.push_back(hi);
        s.push_back(steps[i]);
    }
    if (ctk_axes.empty()) return {alias(x, c.name)};
    return {slice(x, ctk_axes, b, e, s, c.name)};
}

std::vector<Variable> gather_node(NodeCtx& c) {
    Variable data = c.im.in(c, 0), idx = c.im.in(c, 1);
    if (dyn_of(c, data) != 0) unsupported(c, "Gather from a batched tensor");
    const int r = data.rank();
    int64_t axis = attr_i(c, "axis", 0);
    CTK_CHECK(axis >= -r && axis < r, ValueError, c.where, ": axis ", axis, " out of range");
    if (axis < 0) axis += r;
    // ONNX counts negative indices from the end of the axis; ctk's gather takes [0, n). Constant
    // indices are normalized here, run-time ones by ops: element_select(less(i, 0), plus(i, n), i).
    const int64_t n = data.shape()[static_cast<size_t>(axis)];
    if (n < 0) unsupported(c, "Gather along a free dim");
    if (idx.is_constant()) {
        Tensor t = idx.value().to(DataType::f64).clone().contiguous();
        bool negative = false;
        for (int64_t i = 0; i < t.numel(); ++i) {
            double& v = t.data<double>()[i];
            if (v < 0) {
                v += static_cast<double>(n);
                negative = true;
            }
        }
        if (negative) idx = constant(t.to(idx.dtype()), idx.name());
    } else {
        Variable i = as_float(idx);
        Variable zero = constant(0.0, i.dtype()), size = constant(static_cast<double>(n), i.dtype());
        idx = element_select(less(i, zero), plus(i, size), i);
    }
    if (axis == 0) return {gather(data, idx, c.name)};
    std::vector<int> perm{static_cast<int>(axis)};
    for (int i = 0; i < r; ++i)
        if (i != axis) perm.push_back(i);
    Variable g = gather(transpose(data, perm), idx);
    // g: [indices..., data[:axis]..., data[axis+1:]...] -> [data[:axis]..., indices..., data[axis+1:]...]
    const int ni = idx.rank();
    std::vector<int> back;
    for (int i = 0; i < axis; ++i) back.push_back(ni + i);
    for (int i = 0; i < ni; ++i) back.push_back(i);
    for (int i = static_cast<int>(axis) + ni; i < r - 1 + ni; ++i) back.push_back(i);
    return {transpose(g, back, c.name)};
}

}  // namespace

std::map<std::string, Handler> make_handlers() {
    std::map<std::string, Handler> h;
    h["Relu"] = unary_handler(relu);
    h["Sigmoid"] = unary_handler(sigmoid);
    h["Tanh"] = unary_handler(tanh);
    h["Exp"] = unary_handler(exp);
    h["Log"] = unary_handler(log);
    h["Sqrt"] = unary_handler(sqrt);
    h["Abs"] = unary_handler(abs, true);
    h["Neg"] = unary_handler(negate, true);
    h["Floor"] = unary_handler(floor);
    h["Ceil"] = unary_handler(ceil);
    h["Reciprocal"] = unary_handler(reciprocal);
    h["Sin"] = unary_handler(sin);
    h["Cos"] = unary_handler(cos);
    h["Tan"] = unary_handler(tan);
    h["Asin"] = unary_handler(asin);
    h["Acos"] = unary_handler(acos);
    h["Atan"] = unary_handler(atan);
    h["Sinh"] = unary_handler(sinh);
    h["Cosh"] = unary_handler(cosh);
    h["Asinh"] = unary_handler(asinh);
    h["Atanh"] = unary_handler(atanh);
    h["Softsign"] = unary_handler(softsign);
    h["Softplus"] = unary_handler(softplus);
    h["Not"] = unary_handler(element_not);
    h["Identity"] = [](NodeCtx& c) -> std::vector<Variable> { return {alias(c.im.in(c, 0), c.name)}; };
    h["Elu"] = scalar_unary(PrimitiveOp::elu, "alpha", 1.0, nullptr, 0.0);
    h["LeakyRelu"] = scalar_unary(PrimitiveOp::leaky_relu, "alpha", 0.01, nullptr, 0.0);
    h["HardSigmoid"] = scalar_unary(PrimitiveOp::hard_sigmoid, "alpha", 0.2, "beta", 0.5);
    h["Selu"] = [](NodeCtx& c) -> std::vector<Variable> {
        const double alpha = attr_f(c, "alpha", 1.67326319217681884765625);
        const double gamma = attr_f(c, "gamma", 1.05070102214813232421875);
        return {primitive_function(PrimitiveOp::selu, {c.im.in(c, 0)},
                                   Attributes{{"alpha", gamma}, {"beta", alpha}}, c.name)};
    };
    h["HardSwish"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        return {element_times(x, hard_sigmoid(x, 1.0 / 6.0, 0.5), c.name)};
    };
    h["Mish"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        return {element_times(x, tanh(softplus(x)), c.name)};
    };
    h["ThresholdedRelu"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const double alpha = attr_f(c, "alpha", 1.0);
        return {element_select(greater(x, constant(alpha, x.dtype())), x, constant(0.0, x.dtype()), c.name)};
    };
    h["Sign"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const DataType d = x.dtype();
        Variable xf = as_float(x), zero = constant(0.0, xf.dtype());
        return {back_to(minus(greater(xf, zero), less(xf, zero), c.name), d)};
    };
    h["IsNaN"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        return {back_to(not_equal(x, x, c.name), DataType::f32)};
    };
    h["IsInf"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const bool neg = attr_i(c, "detect_negative", 1) != 0, pos = attr_i(c, "detect_positive", 1) != 0;
        const double inf = std::numeric_limits<double>::infinity();
        Variable p = equal(x, constant(inf, x.dtype())), n = equal(x, constant(-inf, x.dtype()));
        Variable y = pos && neg ? Variable(plus(p, n))
                     : pos      ? p
                     : neg      ? n
                                : Variable(element_times(p, constant(0.0, x.dtype())));
        return {back_to(alias(y, c.name), DataType::f32)};
    };
    h["PRelu"] = [](NodeCtx& c) -> std::vector<Variable> {
        std::vector<Variable> v = broadcastable(c, {c.im.in(c, 0), c.im.in(c, 1)});
        return {param_relu(v[1], v[0], c.name)};
    };
    h["Add"] = binary_handler(plus, false);
    h["Sub"] = binary_handler(minus, false);
    h["Mul"] = binary_handler(element_times, false);
    h["Div"] = [](NodeCtx& c) -> std::vector<Variable> {
        if (!is_floating(c.im.in(c, 0).dtype()) || c.im.integer_inputs_.count(c.im.in(c, 0).impl())) {
            // Integer division truncates toward zero.
            Variable q = binary_handler(element_divide, false)(c)[0];
            Variable qf = as_float(q), zero = constant(0.0, qf.dtype());
            return {element_select(less(qf, zero), ceil(qf), floor(qf), c.name)};
        }
        return binary_handler(element_divide, false)(c);
    };
    h["Pow"] = [](NodeCtx& c) -> std::vector<Variable> {
        std::vector<Variable> v = broadcastable(c, {c.im.in(c, 0), c.im.in(c, 1)});
        const DataType d = v[0].dtype();
        if (!is_floating(d)) unsupported(c, "an integer base");
        if (v[1].dtype() != d) v[1] = cast(v[1], d);
        return {pow(v[0], v[1], c.name)};
    };
    h["Equal"] = binary_handler(equal, true);
    h["Less"] = binary_handler(less, true);
    h["LessOrEqual"] = binary_handler(less_equal, true);
    h["Greater"] = binary_handler(greater, true);
    h["GreaterOrEqual"] = binary_handler(greater_equal, true);
    h["And"] = binary_handler(element_and, true);
    h["Or"] = binary_handler(element_or, true);
    h["Xor"] = binary_handler(element_xor, true);
    h["Max"] = nary_handler(element_max, false);
    h["Min"] = nary_handler(element_min, false);
    h["Sum"] = nary_handler(plus, false);
    h["Mean"] = nary_handler(plus, true);
    h["Where"] = [](NodeCtx& c) -> std::vector<Variable> {
        std::vector<Variable> v = broadcastable(c, {c.im.in(c, 0), c.im.in(c, 1), c.im.in(c, 2)});
        const DataType d = v[1].dtype();
        if (!is_floating(d)) {
            v[1] = as_float(v[1]);
            v[2] = as_float(v[2]);
        }
        return {back_to(element_select(v[0], v[1], v[2], c.name), d)};
    };
    h["Clip"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const double inf = std::numeric_limits<double>::infinity();
        double lo = -inf, hi = inf;
        if (c.im.opset_ < 11) {  // attributes, defaulting to float's range
            lo = attr_f(c, "min", -std::numeric_limits<float>::max());
            hi = attr_f(c, "max", std::numeric_limits<float>::max());
        } else {
            if (auto t = c.im.const_value(c, 1)) lo = t->to_vector<double>().at(0);
            if (auto t = c.im.const_value(c, 2)) hi = t->to_vector<double>().at(0);
        }
        if (lo > hi) unsupported(c, "min > max");
        const DataType d = x.dtype();
        return {back_to(clip(as_float(x), lo, hi, c.name), d)};
    };
    h["MatMul"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable a = c.im.in(c, 0), b = c.im.in(c, 1);
        if (dyn_of(c, a) == 0 && dyn_of(c, b) == 0 && b.rank() > 2 && a.rank() >= 2) {
            // Stacks of matrices: [..., K, N] x [..., N, M] as a broadcast product summed over N.
            const int r = std::max(a.rank(), b.rank()) + 1;
            const Dims &sa = a.shape(), &sb = b.shape();
            Dims as(static_cast<size_t>(r - 1 - a.rank()), 1), bs(static_cast<size_t>(r - 1 - b.rank()), 1);
            as.insert(as.end(), sa.begin(), sa.end());
            as.push_back(1);  // [1..., batch..., K, N, 1]
            bs.insert(bs.end(), sb.begin(), sb.end() - 2);
            bs.insert(bs.end(), {1, sb[sb.size() - 2], sb.back()});  // [1..., batch..., 1, N, M]
            Variable p = element_times(reshape(a, as), reshape(b, bs));
            return {reduce_sum(p, {Axis(r - 2)}, false, c.name)};
        }
        if (dyn_of(c, b) != 0 || b.rank() > 2) unsupported(c, "a batched or run-time right operand");
        if (!is_floating(a.dtype())) unsupported(c, "integer operands");
        if (b.rank() == 0 || onnx_rank(c, a) == 0) unsupported(c, "scalar operands");
        return {times(a, b, b.rank() == 1 ? 0 : 1, -1, c.name)};
    };
    h["Gemm"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable a = c.im.in(c, 0), b = c.im.in(c, 1);
        if (attr_i(c, "transA", 0) != 0) {
            if (dyn_of(c, a) != 0) unsupported(c, "transA on a batched operand");
            a = transpose(a, {1, 0});
        }
        if (dyn_of(c, b) != 0) unsupported(c, "a batched right operand");
        if (attr_i(c, "transB", 0) != 0) b = transpose(b, {1, 0});
        Variable y = times(a, b);
        const double alpha = attr_f(c, "alpha", 1.0), beta = attr_f(c, "beta", 1.0);
        if (alpha != 1.0) y = element_times(y, constant(alpha, y.dtype()));
        if (c.im.has_input(c, 2)) {
            Variable bias = broadcastable(c, {y, c.im.in(c, 2)})[1];
            if (dyn_of(c, y) == 0 && bias.rank() < 2) {
            }
            if (beta != 1.0) bias = element_times(bias, constant(beta, bias.dtype()));
            y = plus(y, bias);
        }
        return {alias(y, c.name)};
    };
    h["Flatten"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const int r = onnx_rank(c, x);
        int64_t axis = attr_i(c, "axis", 1);
        CTK_CHECK(axis >= -r && axis <= r, ValueError, c.where, ": axis ", axis, " out of range");
        if (axis < 0) axis += r;
        const Dims& s = x.shape();
        const int dyn = dyn_of(c, x);
        if (dyn > 1 || (dyn == 1 && axis == 0)) unsupported(c, "flattening the batch dimension");
        int64_t outer = 1, inner = 1;
        for (int i = dyn; i < r; ++i) {
            int64_t& part = i < axis ? outer : inner;
            part = checked_mul(part, s[static_cast<size_t>(i - dyn)], c.where);
        }
        return {reshape_to(x, dyn == 1 ? Dims{inner} : Dims{outer, inner}, c.name)};
    };
    h["Reshape"] = reshape_node;
    h["Squeeze"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const Dims& s = x.shape();
        std::vector<bool> drop(s.size(), false);
        if (const auto axes = ints_input_or_attr(c, 1, "axes", 13)) {
            for (int64_t a : *axes) {
                const int k = static_axis(c, x, a);
                CTK_CHECK(s[static_cast<size_t>(k)] == 1, ShapeError, c.where, ": axis ", a, " is not 1");
                drop[static_cast<size_t>(k)] = true;
            }
        } else {
            for (size_t i = 0; i < s.size(); ++i) drop[i] = s[i] == 1;
        }
        Dims out;
        for (size_t i = 0; i < s.size(); ++i)
            if (!drop[i]) out.push_back(s[i]);
        return {reshape_to(x, out, c.name)};
    };
    h["Unsqueeze"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const auto given = ints_input_or_attr(c, 1, "axes", 13);
        CTK_CHECK(given.has_value(), IOError, c.where, ": the axes are missing");
        const Dims axes = *given;
        const int extra = static_cast<int>(axes.size());
        const int out_rank = x.rank() + extra;
        std::vector<bool> ones(static_cast<size_t>(out_rank), false);
        for (int64_t a : axes) {
            const int k = static_axis(c, x, a, extra);
            CTK_CHECK(!ones[static_cast<size_t>(k)], ValueError, c.where, ": repeated axis ", a);
            ones[static_cast<size_t>(k)] = true;
        }
        Dims out;
        size_t j = 0;
        for (int i = 0; i < out_rank; ++i)
            out.push_back(ones[static_cast<size_t>(i)] ? 1 : x.shape().at(j++));
        return {reshape_to(x, out, c.name)};
    };
    h["Concat"] = [](NodeCtx& c) -> std::vector<Variable> {
        std::vector<Variable> v;
        for (int i = 0; i < c.node.input_size(); ++i)
            if (c.im.has_input(c, i)) v.push_back(c.im.in(c, i));
        CTK_CHECK(!v.empty(), ValueError, c.where, ": no inputs");
        for (const Variable& x : v)
            if (dyn_of(c, x) != dyn_of(c, v[0]) || x.rank() != v[0].rank())
                unsupported(c, "operands of different ranks");
        const int a = static_axis(c, v[0], attr_i(c, "axis", 0));
        if (v.size() == 1) return {alias(v[0], c.name)};
        return {splice(v, Axis(a), c.name)};
    };
    h["Transpose"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const int r = onnx_rank(c, x), dyn = dyn_of(c, x);
        Dims perm = attr_ints(c, "perm").value_or(Dims{});
        if (perm.empty())
            for (int i = r - 1; i >= 0; --i) perm.push_back(i);
        CTK_CHECK(static_cast<int>(perm.size()) == r, ValueError, c.where, ": perm does not match rank ", r);
        std::vector<int> p;
        for (int i = 0; i < r; ++i) {
            if (i < dyn) {
                if (perm[static_cast<size_t>(i)] != i) unsupported(c, "moving the batch dimension");
                continue;
            }
            CTK_CHECK(perm[static_cast<size_t>(i)] >= dyn && perm[static_cast<size_t>(i)] < r, ValueError,
                      c.where, ": invalid perm");
            p.push_back(static_cast<int>(perm[static_cast<size_t>(i)]) - dyn);
        }
        return {transpose(x, p, c.name)};
    };
    h["Gather"] = gather_node;
    for (const char* name : {"RNN", "GRU", "LSTM"}) {
        h[name] = [](NodeCtx& c) -> std::vector<Variable> {
            std::vector<Variable> ins;
            for (int i = 0; i < c.node.input_size(); ++i)
                ins.push_back(c.im.has_input(c, i) ? c.im.in(c, i) : Variable());
            return import_recurrent_node(c.node, ins, c.where, c.name);
        };
    }
    for (const char* name : {"Softmax", "LogSoftmax", "Hardmax"}) {
        const std::string n = name;
        h[n] = [n](NodeCtx& c) -> std::vector<Variable> {
            Variable x = c.im.in(c, 0);
            auto apply = [&](const Variable& v, const Axis& a, const std::string& name) -> Variable {
                if (n == "Softmax") return softmax(v, a, name);
                if (n == "LogSoftmax") return log_softmax(v, a, name);
                return hardmax(v, a, name);
            };
            if (c.im.opset_ >= 13) return {apply(x, Axis(static_axis(c, x, attr_i(c, "axis", -1))), c.name)};
            // Before opset 13 the input is seen as 2-D, [dims before axis, dims from axis on] (axis default
            // 1), and normalized over the second: the trailing static axes flattened into one.
            const int a = static_axis(c, x, attr_i(c, "axis", 1));
            if (a == x.rank() - 1) return {apply(x, Axis(a), c.name)};
            Variable flat = reshape(x, {-1}, a, x.rank());
            return {reshape(apply(flat, Axis(a), ""), Dims(x.shape().begin() + a, x.shape().end()), a, a + 1,
                            c.name)};
        };
    }
    for (const char* name : {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1",
                             "ReduceL2", "ReduceLogSumExp", "ReduceSumSquare", "ReduceLogSum"}) {
        const std::string n = name;
        h[n] = [n](NodeCtx& c) { return reduce_node(c, n.c_str()); };
    }
    for (const char* name : {"ArgMax", "ArgMin"}) {
        const bool is_max = std::string(name) == "ArgMax";
        h[name] = [is_max](NodeCtx& c) -> std::vector<Variable> {
            Variable x = as_float(c.im.in(c, 0));
            const int a = static_axis(c, x, attr_i(c, "axis", 0));
            Variable y;
            if (attr_i(c, "select_last_index", 0) != 0) {
                // The last extreme: the first one of x reversed along the axis, counted from the end.
                const int64_t n = x.shape()[static_cast<size_t>(a)];
                check_built_size(c, n, "the reversal index");
                Variable r = reverse_axis(x, a);
                y = is_max ? argmax(r, Axis(a)) : argmin(r, Axis(a));
                y = minus(constant(static_cast<double>(n - 1), y.dtype()), y);
            } else {
                y = is_max ? argmax(x, Axis(a)) : argmin(x, Axis(a));
            }
            if (attr_i(c, "keepdims", 1) == 0) {
                Dims s = y.shape();
                s.erase(s.begin() + a);
                y = reshape_to(y, s, "");
            }
            return {alias(y, c.name)};
        };
    }
    h["BatchNormalization"] = batch_norm_node;
    h["NegativeLogLikelihoodLoss"] = nll_loss_node;
    h["SoftmaxCrossEntropyLoss"] = softmax_cross_entropy_loss_node;
    h["LayerNormalization"] = layer_norm_node;
    h["Mod"] = mod_node;
    h["Trilu"] = trilu_node;
    h["Conv"] = conv_node;
    h["ConvTranspose"] = conv_transpose_node;
    h["MaxPool"] = [](NodeCtx& c) { return pool_node(c, true); };
    h["AveragePool"] = [](NodeCtx& c) { return pool_node(c, false); };
    for (const char* name : {"GlobalMaxPool", "GlobalAveragePool"}) {
        const bool is_max = std::string(name) == "GlobalMaxPool";
        h[name] = [is_max](NodeCtx& c) { return global_pool_node(c, is_max); };
    }
    h["Slice"] = slice_node;
    h["Cast"] = [](NodeCtx& c) -> std::vector<Variable> {
        c.im.onnx_types_[c.node.output(0)] = attr_i(c, "to", 0);
        return {cast_to_onnx_type(c, c.im.in(c, 0), attr_i(c, "to", 0))};
    };
    add_tensor_handlers(h);
    add_math_handlers(h);
    add_einsum_handler(h);
    add_resize_handlers(h);
    return h;
}

}  // namespace ctk::detail::onnx_io::importer
