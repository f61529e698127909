// ONNX import: one ctk op group per ONNX node, for the ops whose semantics ctk's ops express exactly.
// A graph input whose leading dim is symbolic becomes a ctk input with the batch axis (two leading dims
// named "batch" and "sequence", ctk's export, give the batch and sequence axes), so ONNX axis k of a
// value with D dynamic axes is ctk static axis k - D. Between a Reshape that merges the batch and
// sequence dims into one and the Reshape that splits them again (ctk's export of per-frame ops such as
// Conv on sequences), values are "merged": ctk keeps both axes and only per-frame ops may use them.
// Initializers become parameters (constants when they are integers or feed shape-like operands). Unsupported
// ops throw NotImplementedError naming the op type and the node.
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <unordered_map>

#include "ctk/error.h"
#include "ctk/graph_ops.h"
#include "ctk/ops.h"
#include "formats/onnx_common.h"
#include "formats/onnx_recurrence.h"
#include "ops/ops_common.h"

namespace ctk::detail::onnx_io {
namespace {

using TP = onnx::TensorProto;

// One entry of a shape computed at run time by Shape: a dynamic axis's size or a static dim.
struct SymDim {
    int axis = -1;  // >= 0: the size of dynamic axis `axis`
    int64_t value = 0;
};
using SymShape = std::vector<SymDim>;

class Importer;
struct NodeCtx {
    Importer& im;
    const onnx::NodeProto& node;
    std::string where;
    std::string name;  // for the ctk Functions made
};
using Handler = std::function<std::vector<Variable>(NodeCtx&)>;

class Importer {
public:
    Importer(const onnx::ModelProto& m, const std::string& source) : model_(m), source_(source) {}
    FunctionPtr run();
    void shape_node(NodeCtx& c);
    SymShape concat_shapes(NodeCtx& c);
    SymShape slice_shape(NodeCtx& c);

    // ---- operands ----
    bool has_input(const NodeCtx& c, int i) const {
        return i < c.node.input_size() && !c.node.input(i).empty();
    }
    Variable in(const NodeCtx& c, int i) {
        CTK_CHECK(has_input(c, i), IOError, c.where, ": input ", i, " is missing");
        return value(c.node.input(i), c.where);
    }
    Variable value(const std::string& name, const std::string& where) {
        if (auto it = values_.find(name); it != values_.end()) return it->second;
        if (auto it = inits_.find(name); it != inits_.end()) {
            Tensor t = tensor_from_proto(*it->second, where);
            Variable v =
                is_floating(t.dtype()) && t.numel() > 1 ? parameter_from(t, name) : constant(t, name);
            values_[name] = v;
            return v;
        }
        CTK_CHECK(!sym_shapes_.count(name), NotImplementedError, where, ": the run-time shape '", name,
                  "' of a batched value is used as data (ctk reads it only as a Reshape target)");
        CTK_THROW(IOError, where, ": value '", name, "' is not defined before its use");
    }
    // A Shape result that holds dynamic dims, when operand i is one.
    const SymShape* sym_shape(const NodeCtx& c, int i) const {
        if (!has_input(c, i)) return nullptr;
        auto it = sym_shapes_.find(c.node.input(i));
        return it == sym_shapes_.end() ? nullptr : &it->second;
    }
    bool merged(const Variable& v) const { return merged_.count(v.impl()) != 0; }
    // A constant operand read as data (shape-like inputs: Reshape's shape, Slice's starts, ...).
    std::optional<Tensor> const_value(const NodeCtx& c, int i) {
        if (!has_input(c, i)) return std::nullopt;
        const std::string& name = c.node.input(i);
        if (auto it = consts_.find(name); it != consts_.end()) return it->second;
        if (auto it = inits_.find(name); it != inits_.end()) {
            Tensor t = tensor_from_proto(*it->second, c.where);
            consts_[name] = t;
            return t;
        }
        CTK_THROW(NotImplementedError, c.where, ": input ", i, " ('", name,
                  "') must be a constant (an initializer or a Constant node) for ctk");
    }
    Dims const_ints(const NodeCtx& c, int i) {
        auto t = const_value(c, i);
        CTK_CHECK(t.has_value(), IOError, c.where, ": input ", i, " is missing");
        return t->to_vector<int64_t>();
    }
    void set_const(const std::string& name, const Tensor& t) { consts_[name] = t; }

    const onnx::ModelProto& model_;
    std::string source_;
    std::unordered_map<std::string, Variable> values_;
    std::unordered_map<std::string, Tensor> consts_;
    std::unordered_map<std::string, const onnx::TensorProto*> inits_;
    std::set<const void*> integer_inputs_;  // graph inputs of integer ONNX types, fed as f64
    std::unordered_map<std::string, SymShape> sym_shapes_;
    std::set<const void*> merged_;  // values whose ONNX form is [batch * sequence, sample...]
};

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

[[noreturn]] void unsupported(const NodeCtx& c, const std::string& why) {
    CTK_THROW(NotImplementedError, c.where, ": ", why);
}

int dyn_of(const Variable& v) {
    return v.dynamic_rank();
}
int onnx_rank(const Variable& v) {
    return v.dynamic_rank() + v.rank();
}
// ONNX axis (negative from the end) -> ctk static axis; the batch axis is refused.
int static_axis(const NodeCtx& c, const Variable& v, int64_t axis, int extra_rank = 0) {
    const int r = onnx_rank(v) + extra_rank;
    CTK_CHECK(axis >= -r && axis < r, ValueError, c.where, ": axis ", axis, " is out of range for rank ", r);
    const int a = static_cast<int>(axis < 0 ? axis + r : axis);
    if (a < dyn_of(v)) unsupported(c, "an axis over the batch dimension");
    return a - dyn_of(v);
}

// Integer operands of arithmetic go through f64 (exact below 2^53) and come back.
Variable as_float(const Variable& v) {
    return is_floating(v.dtype()) ? v : Variable(cast(v, DataType::f64));
}
// ctk casts only to floating dtypes, so integer results stay in f64 (their values are exact).
Variable back_to(const Variable& y, DataType dtype) {
    return y.dtype() == dtype || !is_floating(dtype) ? y : Variable(cast(y, dtype));
}

// A static operand that has as many dims as a batched operand's ONNX rank drops its leading 1s, so
// that ctk's broadcasting (static axes after the dynamic ones) matches NumPy's.
std::vector<Variable> broadcastable(const NodeCtx& c, std::vector<Variable> vs) {
    int dyn = 0, srank = 0;
    for (const Variable& v : vs) dyn = std::max(dyn, dyn_of(v));
    if (dyn == 0) return vs;
    for (const Variable& v : vs)
        if (dyn_of(v) == dyn) srank = std::max(srank, v.rank());
    for (Variable& v : vs) {
        if (dyn_of(v) != 0 || v.rank() <= srank) continue;
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
        return {make_op(op, {c.im.in(c, 0)}, Attributes{{"alpha", alpha}, {"beta", beta}}, c.name)};
    };
}

std::vector<Variable> reduce_node(NodeCtx& c, const char* kind) {
    Variable x = c.im.in(c, 0);
    const bool keep = attr_i(c, "keepdims", 1) != 0;
    std::optional<Dims> axes;
    if (std::string(kind) == "ReduceSum") {
        if (c.im.has_input(c, 1)) axes = c.im.const_ints(c, 1);
    } else {
        axes = attr_ints(c, "axes");
    }
    if (!axes || axes->empty()) {
        if (attr_i(c, "noop_with_empty_axes", 0) != 0) return {alias(x, c.name)};
        axes = Dims{};
        for (int i = 0; i < onnx_rank(x); ++i) axes->push_back(i);
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

// Runs `fn` on x as [N, C, spatial...]: the batch axis, or for a static x its leading dim (dropped
// when it is 1, else turned into the batch axis and back).
Variable with_batch(NodeCtx& c, const Variable& x, const std::function<Variable(const Variable&)>& fn) {
    if (dyn_of(x) == 1 || c.im.merged(x)) return fn(x);  // ctk's ops treat every frame alike
    if (dyn_of(x) > 1) unsupported(c, "a value with batch and sequence dims (merge them with Reshape first)");
    CTK_CHECK(x.rank() >= 3, ShapeError, c.where, ": needs [N, C, spatial...], got ", x.to_string());
    const Dims& s = x.shape();
    if (s[0] == 1) {
        Variable y = fn(reshape(x, Dims(s.begin() + 1, s.end())));
        Dims out{1};
        out.insert(out.end(), y.shape().begin(), y.shape().end());
        return reshape(y, out);
    }
    return unpack_batch(fn(to_batch(x)));
}

// ONNX pads for auto_pad SAME_UPPER / SAME_LOWER / VALID / NOTSET on one axis.
void onnx_pads(const NodeCtx& c, const std::string& auto_pad, int64_t in, int64_t ext, int64_t stride,
               const Dims& pads, size_t i, size_t n, int64_t& lo, int64_t& hi) {
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        const int64_t out = (in + stride - 1) / stride;
        const int64_t total = std::max<int64_t>(0, (out - 1) * stride + ext - in);
        lo = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        hi = total - lo;
    } else if (auto_pad == "VALID") {
        lo = hi = 0;
    } else {
        CTK_CHECK(auto_pad == "NOTSET" || auto_pad.empty(), ValueError, c.where, ": unknown auto_pad '",
                  auto_pad, "'");
        lo = pads.empty() ? 0 : pads.at(i);
        hi = pads.empty() ? 0 : pads.at(i + n);
    }
    CTK_CHECK(lo >= 0 && hi >= 0, ValueError, c.where, ": negative pads");
}

Dims spatial_dims_of(NodeCtx& c, const Variable& x) {
    // x's [C, spatial...] without N: the static shape for a batched x, else without the leading dim.
    Dims s = x.shape();
    if (dyn_of(x) == 0) {
        CTK_CHECK(!s.empty(), ShapeError, c.where, ": operand without dims");
        s.erase(s.begin());
    }
    for (int64_t d : s)
        if (d < 0) unsupported(c, "free spatial dims");
    return s;
}

std::vector<Variable> conv_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0), w = c.im.in(c, 1);
    const Dims xs = spatial_dims_of(c, x);
    const Dims& ws = w.shape();
    CTK_CHECK(ws.size() == xs.size() + 1 && xs.size() >= 2, ShapeError, c.where, ": kernel ", w.to_string(),
              " does not fit ", x.to_string());
    const size_t sp = xs.size() - 1;
    const Dims strides = attr_ints(c, "strides").value_or(Dims(sp, 1));
    const Dims dil = attr_ints(c, "dilations").value_or(Dims(sp, 1));
    const Dims pads = attr_ints(c, "pads").value_or(Dims{});
    const std::string auto_pad = attr_s(c, "auto_pad", "NOTSET");
    CTK_CHECK(strides.size() == sp && dil.size() == sp && (pads.empty() || pads.size() == 2 * sp), ValueError,
              c.where, ": strides, dilations or pads do not match ", sp, " spatial axes");
    const int64_t group = attr_i(c, "group", 1);
    std::vector<bool> autop{false};
    Dims lo_all{0}, hi_all{0};
    bool explicit_pad = false;
    for (size_t i = 0; i < sp; ++i) {
        const int64_t ext = (ws[i + 2] - 1) * dil[i] + 1;
        int64_t lo, hi;
        onnx_pads(c, auto_pad, xs[i + 1], ext, strides[i], pads, i, sp, lo, hi);
        int64_t clo = 0, chi = 0;
        cntk_auto_pad(xs[i + 1], ws[i + 2], strides[i], dil[i], clo, chi);
        const bool same =
            clo == lo &&
            (chi == hi || (chi < 0 && hi == 0 &&
                           (xs[i + 1] + lo - ext) / strides[i] == (xs[i + 1] + lo + chi - ext) / strides[i]));
        autop.push_back(same && (lo != 0 || hi != 0));
        if (!same && (lo != 0 || hi != 0)) explicit_pad = true;
        lo_all.push_back(lo);
        hi_all.push_back(hi);
    }
    Variable y = with_batch(c, x, [&](const Variable& xb) {
        Variable in = xb;
        std::vector<bool> ap = autop;
        if (explicit_pad) {
            std::vector<std::pair<int64_t, int64_t>> pat;
            for (size_t i = 0; i < lo_all.size(); ++i) pat.emplace_back(lo_all[i], hi_all[i]);
            in = pad(xb, pat);
            ap.assign(ap.size(), false);
        }
        Variable out = convolution(w, in, strides, ap, dil, group, c.im.has_input(c, 2) ? "" : c.name);
        if (c.im.has_input(c, 2)) {
            Dims bs{ws[0]};
            bs.resize(sp + 1, 1);
            out = plus(out, reshape(c.im.in(c, 2), bs), c.name);
        }
        return out;
    });
    return {y};
}

std::vector<Variable> conv_transpose_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0), w = c.im.in(c, 1);
    const Dims xs = spatial_dims_of(c, x);
    const Dims& ws = w.shape();
    CTK_CHECK(ws.size() == xs.size() + 1 && xs.size() >= 2, ShapeError, c.where, ": kernel ", w.to_string(),
              " does not fit ", x.to_string());
    if (attr_i(c, "group", 1) != 1) unsupported(c, "grouped ConvTranspose");
    const size_t sp = xs.size() - 1;
    const Dims strides = attr_ints(c, "strides").value_or(Dims(sp, 1));
    const Dims dil = attr_ints(c, "dilations").value_or(Dims(sp, 1));
    const Dims pads = attr_ints(c, "pads").value_or(Dims{});
    const Dims out_pad = attr_ints(c, "output_padding").value_or(Dims(sp, 0));
    const std::optional<Dims> out_shape = attr_ints(c, "output_shape");
    const std::string auto_pad = attr_s(c, "auto_pad", "NOTSET");
    CTK_CHECK(strides.size() == sp && dil.size() == sp && out_pad.size() == sp &&
                  (pads.empty() || pads.size() == 2 * sp) && (!out_shape || out_shape->size() == sp),
              ValueError, c.where, ": attributes do not match ", sp, " spatial axes");
    Dims full, begin, end;
    std::vector<Axis> axes;
    for (size_t i = 0; i < sp; ++i) {
        const int64_t ext = (ws[i + 2] - 1) * dil[i] + 1;
        const int64_t in = xs[i + 1];
        int64_t lo = 0, hi = 0, op = out_pad[i];
        if (out_shape) {
            const int64_t total = strides[i] * (in - 1) + op + ext - (*out_shape)[i];
            CTK_CHECK(total >= 0, ValueError, c.where, ": output_shape larger than the full output");
            lo = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
            hi = total - lo;
        } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
            const int64_t total = std::max<int64_t>(0, strides[i] * (in - 1) + op + ext - in * strides[i]);
            lo = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
            hi = total - lo;
        } else if (auto_pad != "VALID") {
            lo = pads.empty() ? 0 : pads[i];
            hi = pads.empty() ? 0 : pads[i + sp];
        }
        if (op < 0 || op >= std::max(strides[i], dil[i])) unsupported(c, "output_padding out of range");
        const int64_t f = strides[i] * (in - 1) + ext + op;
        full.push_back(f);
        if (lo != 0 || hi != 0) {
            CTK_CHECK(lo >= 0 && hi >= 0 && lo + hi < f, ValueError, c.where, ": invalid pads");
            axes.emplace_back(static_cast<int>(i + 1));
            begin.push_back(lo);
            end.push_back(f - hi);
        }
    }
    Variable y = with_batch(c, x, [&](const Variable& xb) {
        Variable out = convolution_transpose(w, xb, strides, {false}, full, dil);
        if (!axes.empty()) out = slice(out, axes, begin, end);
        if (c.im.has_input(c, 2)) {
            Dims bs{ws[1]};
            bs.resize(sp + 1, 1);
            out = plus(out, reshape(c.im.in(c, 2), bs));
        }
        return Variable(alias(out, c.name));
    });
    return {y};
}

std::vector<Variable> pool_node(NodeCtx& c, bool is_max) {
    if (c.node.output_size() > 1 && !c.node.output(1).empty()) unsupported(c, "MaxPool's Indices output");
    Variable x = c.im.in(c, 0);
    const Dims xs = spatial_dims_of(c, x);
    const size_t sp = xs.size() - 1;
    const Dims kernel = attr_ints(c, "kernel_shape").value_or(Dims{});
    CTK_CHECK(kernel.size() == sp && sp >= 1, ValueError, c.where, ": kernel_shape does not match ", sp,
              " spatial axes");
    const Dims strides = attr_ints(c, "strides").value_or(Dims(sp, 1));
    const Dims dil = attr_ints(c, "dilations").value_or(Dims(sp, 1));
    const Dims pads = attr_ints(c, "pads").value_or(Dims{});
    CTK_CHECK(strides.size() == sp && dil.size() == sp && (pads.empty() || pads.size() == 2 * sp), ValueError,
              c.where, ": strides, dilations or pads do not match ", sp, " spatial axes");
    for (int64_t d : dil)
        if (d != 1) unsupported(c, "dilated pooling");
    if (attr_i(c, "storage_order", 0) != 0) unsupported(c, "storage_order 1");
    const bool ceil_mode = attr_i(c, "ceil_mode", 0) != 0;
    const bool include_pad = attr_i(c, "count_include_pad", 0) != 0;
    const std::string auto_pad = attr_s(c, "auto_pad", "NOTSET");
    std::vector<bool> autop{false};
    Dims lo_all{0}, hi_all{0};
    bool explicit_pad = false;
    for (size_t i = 0; i < sp; ++i) {
        int64_t lo, hi;
        onnx_pads(c, auto_pad, xs[i + 1], kernel[i], strides[i], pads, i, sp, lo, hi);
        int64_t clo = 0, chi = 0;
        cntk_auto_pad(xs[i + 1], kernel[i], strides[i], 1, clo, chi);
        const bool same = clo == lo && chi == hi;
        autop.push_back(same && (lo != 0 || hi != 0));
        if (!same && (lo != 0 || hi != 0)) explicit_pad = true;
        lo_all.push_back(lo);
        hi_all.push_back(hi);
    }
    if (explicit_pad && !is_max && !include_pad) unsupported(c, "AveragePool with pads that exclude padding");
    if (explicit_pad && !is_max && ceil_mode) unsupported(c, "AveragePool with explicit pads and ceil_mode");
    Variable y = with_batch(c, x, [&](const Variable& xb) {
        Variable in = xb;
        std::vector<bool> ap = autop;
        if (explicit_pad) {
            std::vector<std::pair<int64_t, int64_t>> pat;
            for (size_t i = 0; i < lo_all.size(); ++i) pat.emplace_back(lo_all[i], hi_all[i]);
            in = pad(xb, pat, PadMode::constant, is_max ? -std::numeric_limits<double>::infinity() : 0.0);
            ap.assign(ap.size(), false);
        }
        return Variable(pooling(in, is_max ? PoolingType::max : PoolingType::average, kernel, strides, ap,
                                ceil_mode, include_pad, c.name));
    });
    return {y};
}

std::vector<Variable> batch_norm_node(NodeCtx& c) {
    if (attr_i(c, "training_mode", 0) != 0) unsupported(c, "training_mode 1");
    for (int i = 1; i < c.node.output_size(); ++i)
        if (!c.node.output(i).empty()) unsupported(c, "the running-statistics outputs");
    Variable x = c.im.in(c, 0);
    std::vector<Variable> p;
    for (int i = 1; i <= 4; ++i) {
        Variable v = c.im.in(c, i);
        if (v.is_parameter() && i >= 3) v = constant(v.value(), v.name());
        p.push_back(v);
    }
    const double eps = attr_f(c, "epsilon", 1e-5);
    Variable y = with_batch(c, x, [&](const Variable& xb) {
        return Variable(batch_normalization(xb, p[0], p[1], p[2], p[3], constant(Dims{}, 0.0, p[0].dtype()),
                                            true, 5000.0, 0.0, eps, c.name));
    });
    return {y};
}

Dims static_shape_after_reshape(NodeCtx& c, const Variable& x, Dims target, bool allow_zero) {
    const int dyn = dyn_of(x);
    const Dims& xs = x.shape();
    if (!allow_zero)
        for (size_t i = 0; i < target.size(); ++i)
            if (target[i] == 0) {
                CTK_CHECK(static_cast<int>(i) < onnx_rank(x), ValueError, c.where, ": shape copies dim ", i,
                          " of a rank-", onnx_rank(x), " input");
                target[i] = static_cast<int>(i) < dyn ? 0 : xs[i - static_cast<size_t>(dyn)];
            }
    if (dyn == 1) {
        CTK_CHECK(!target.empty(), ValueError, c.where, ": reshape of a batched value to a scalar");
        if (target[0] == -1) {
            for (size_t i = 1; i < target.size(); ++i)
                if (target[i] == -1) unsupported(c, "a reshape that moves the batch dimension");
            int64_t have = 1, want = 1;
            for (int64_t d : xs) have *= d;
            for (size_t i = 1; i < target.size(); ++i) want *= target[i];
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
        known *= target[i];
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

int64_t numel_of(const Dims& d) {
    int64_t n = 1;
    for (int64_t x : d) n *= x;
    return n;
}

// Reshape with a constant target, or with one built from Shape of a batched value. ctk's export of
// per-frame ops on sequences writes Reshape(x, [-1, sample...]) to merge the batch and sequence dims and
// Reshape(y, Concat(Shape(x)[0:2], sample)) to split them again; ctk keeps both axes throughout.
std::vector<Variable> reshape_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    const bool allow_zero = attr_i(c, "allowzero", 0) != 0;
    const int dyn = dyn_of(x);
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
        return {reshape_to(x, resolve_free_dim(c, rest, numel_of(x.shape())), c.name)};
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
    if (numel_of(rest) != numel_of(x.shape()))
        unsupported(c, "a reshape that moves the merged batch and sequence dims");
    Variable y = reshape_to(x, rest, c.name);
    c.im.merged_.insert(y.impl());
    return {y};
}

std::vector<Variable> slice_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    const Dims starts = c.im.const_ints(c, 1), ends = c.im.const_ints(c, 2);
    Dims axes, steps;
    if (c.im.has_input(c, 3)) axes = c.im.const_ints(c, 3);
    if (c.im.has_input(c, 4)) steps = c.im.const_ints(c, 4);
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
    if (dyn_of(data) != 0) unsupported(c, "Gather from a batched tensor");
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
        return {make_op(PrimitiveOp::selu, {c.im.in(c, 0)}, Attributes{{"alpha", gamma}, {"beta", alpha}},
                        c.name)};
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
        if (!is_floating(c.im.in(c, 0).dtype()) || c.im.integer_inputs_.count(c.im.in(c, 0).impl()))
            unsupported(c, "integer division");
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
        if (auto t = c.im.const_value(c, 1)) lo = t->to_vector<double>().at(0);
        if (auto t = c.im.const_value(c, 2)) hi = t->to_vector<double>().at(0);
        if (lo > hi) unsupported(c, "min > max");
        const DataType d = x.dtype();
        return {back_to(clip(as_float(x), lo, hi, c.name), d)};
    };
    h["MatMul"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable a = c.im.in(c, 0), b = c.im.in(c, 1);
        if (dyn_of(b) != 0 || b.rank() > 2) unsupported(c, "a batched or run-time right operand");
        if (!is_floating(a.dtype())) unsupported(c, "integer operands");
        if (b.rank() == 0 || onnx_rank(a) == 0) unsupported(c, "scalar operands");
        return {times(a, b, b.rank() == 1 ? 0 : 1, -1, c.name)};
    };
    h["Gemm"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable a = c.im.in(c, 0), b = c.im.in(c, 1);
        if (attr_i(c, "transA", 0) != 0) {
            if (dyn_of(a) != 0) unsupported(c, "transA on a batched operand");
            a = transpose(a, {1, 0});
        }
        if (dyn_of(b) != 0) unsupported(c, "a batched right operand");
        if (attr_i(c, "transB", 0) != 0) b = transpose(b, {1, 0});
        Variable y = times(a, b);
        const double alpha = attr_f(c, "alpha", 1.0), beta = attr_f(c, "beta", 1.0);
        if (alpha != 1.0) y = element_times(y, constant(alpha, y.dtype()));
        if (c.im.has_input(c, 2)) {
            Variable bias = broadcastable(c, {y, c.im.in(c, 2)})[1];
            if (dyn_of(y) == 0 && bias.rank() < 2) {
            }
            if (beta != 1.0) bias = element_times(bias, constant(beta, bias.dtype()));
            y = plus(y, bias);
        }
        return {alias(y, c.name)};
    };
    h["Flatten"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const int r = onnx_rank(x);
        int64_t axis = attr_i(c, "axis", 1);
        CTK_CHECK(axis >= -r && axis <= r, ValueError, c.where, ": axis ", axis, " out of range");
        if (axis < 0) axis += r;
        const Dims& s = x.shape();
        const int dyn = dyn_of(x);
        if (dyn > 1 || (dyn == 1 && axis == 0)) unsupported(c, "flattening the batch dimension");
        int64_t outer = 1, inner = 1;
        for (int i = dyn; i < r; ++i) (i < axis ? outer : inner) *= s[static_cast<size_t>(i - dyn)];
        return {reshape_to(x, dyn == 1 ? Dims{inner} : Dims{outer, inner}, c.name)};
    };
    h["Reshape"] = reshape_node;
    h["Squeeze"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const Dims& s = x.shape();
        std::vector<bool> drop(s.size(), false);
        if (c.im.has_input(c, 1)) {
            for (int64_t a : c.im.const_ints(c, 1)) {
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
        const Dims axes = c.im.const_ints(c, 1);
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
            if (dyn_of(x) != dyn_of(v[0]) || x.rank() != v[0].rank())
                unsupported(c, "operands of different ranks");
        const int a = static_axis(c, v[0], attr_i(c, "axis", 0));
        if (v.size() == 1) return {alias(v[0], c.name)};
        return {splice(v, Axis(a), c.name)};
    };
    h["Transpose"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const int r = onnx_rank(x), dyn = dyn_of(x);
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
            const Axis a(static_axis(c, x, attr_i(c, "axis", -1)));
            if (n == "Softmax") return {softmax(x, a, c.name)};
            if (n == "LogSoftmax") return {log_softmax(x, a, c.name)};
            return {hardmax(x, a, c.name)};
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
            if (attr_i(c, "select_last_index", 0) != 0) unsupported(c, "select_last_index 1");
            Variable x = as_float(c.im.in(c, 0));
            const int a = static_axis(c, x, attr_i(c, "axis", 0));
            Variable y = is_max ? argmax(x, Axis(a)) : argmin(x, Axis(a));
            if (attr_i(c, "keepdims", 1) == 0) {
                Dims s = y.shape();
                s.erase(s.begin() + a);
                y = reshape_to(y, s, "");
            }
            return {alias(y, c.name)};
        };
    }
    h["Dropout"] = [](NodeCtx& c) -> std::vector<Variable> {
        if (auto t = c.im.const_value(c, 2); t && t->numel() == 1 && t->to_vector<double>()[0] != 0)
            unsupported(c, "training_mode true");
        if (c.node.output_size() > 1 && !c.node.output(1).empty()) unsupported(c, "the mask output");
        return {alias(c.im.in(c, 0), c.name)};
    };
    h["BatchNormalization"] = batch_norm_node;
    h["Conv"] = conv_node;
    h["ConvTranspose"] = conv_transpose_node;
    h["MaxPool"] = [](NodeCtx& c) { return pool_node(c, true); };
    h["AveragePool"] = [](NodeCtx& c) { return pool_node(c, false); };
    for (const char* name : {"GlobalMaxPool", "GlobalAveragePool"}) {
        const bool is_max = std::string(name) == "GlobalMaxPool";
        h[name] = [is_max](NodeCtx& c) -> std::vector<Variable> {
            Variable x = c.im.in(c, 0);
            (void)spatial_dims_of(c, x);
            return {with_batch(c, x, [&](const Variable& xb) {
                return Variable(pooling(xb, is_max ? PoolingType::max : PoolingType::average, {}, {1},
                                        {false}, false, false, c.name));
            })};
        };
    }
    h["Pad"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const std::string mode = attr_s(c, "mode", "constant");
        PadMode m = mode == "constant"  ? PadMode::constant
                    : mode == "reflect" ? PadMode::reflect
                                        : PadMode::symmetric;
        if (m == PadMode::symmetric) unsupported(c, "pad mode '" + mode + "'");
        const Dims pads = c.im.const_ints(c, 1);
        double value = 0.0;
        if (auto t = c.im.const_value(c, 2); t && t->numel() > 0) value = t->to_vector<double>()[0];
        const int r = onnx_rank(x), dyn = dyn_of(x);
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
        return {back_to(pad(as_float(x), pat, m, value, c.name), d)};
    };
    h["Slice"] = slice_node;
    h["TopK"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const Dims k = c.im.const_ints(c, 1);
        CTK_CHECK(k.size() == 1, ValueError, c.where, ": K must hold one value");
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
        const int r = onnx_rank(idx) + 1;
        CTK_CHECK(axis >= -r && axis < r, ValueError, c.where, ": axis out of range");
        const int a = static_cast<int>(axis < 0 ? axis + r : axis) - dyn_of(idx);
        if (a < 0) unsupported(c, "the batch dimension");
        Variable oh = one_hot(cast(idx, fd), depth[0], false, a);
        Variable y = plus(element_times(oh, constant(v[1] - v[0], fd)), constant(v[0], fd));
        return {back_to(alias(y, c.name), d)};
    };
    h["Cast"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const int64_t to = attr_i(c, "to", 0);
        if (to == TP::BOOL) {
            Variable xf = as_float(x);
            return {back_to(not_equal(xf, constant(0.0, xf.dtype()), c.name), DataType::f32)};
        }
        const DataType d = dtype_of_onnx(static_cast<int32_t>(to), c.where);
        if (d == x.dtype()) return {alias(x, c.name)};
        if (!is_floating(d)) {  // truncation toward zero, kept in a floating dtype (see back_to)
            if (!is_floating(x.dtype())) return {alias(x, c.name)};
            Variable zero = constant(0.0, x.dtype());
            return {element_select(less(x, zero), ceil(x), floor(x), c.name)};
        }
        return {cast(x, d, c.name)};
    };
    h["Expand"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        if (dyn_of(x) != 0) unsupported(c, "Expand of a batched value");
        const Dims shape = c.im.const_ints(c, 1);
        Shape out = broadcast_shapes(Shape(x.shape()), Shape(shape), "Expand");
        const DataType d = x.dtype();
        Variable xf = as_float(x);
        return {back_to(plus(xf, constant(out.dims(), 0.0, xf.dtype()), c.name), d)};
    };
    return h;
}

// Shape: a constant for static dims; dims of dynamic axes make a run-time shape (SymShape) that only
// Slice, Concat and Reshape's target may use.
void Importer::shape_node(NodeCtx& c) {
    Variable x = in(c, 0);
    if (merged(x)) unsupported(c, "the shape of a value whose batch and sequence dims are merged");
    const int r = onnx_rank(x), dyn = dyn_of(x);
    int64_t start = attr_i(c, "start", 0), end = attr_i(c, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, 0, r);
    SymShape s;
    bool dynamic = false;
    for (int64_t i = start; i < end; ++i) {
        if (i < dyn) {
            s.push_back({static_cast<int>(i), 0});
            dynamic = true;
            continue;
        }
        const int64_t d = x.shape()[static_cast<size_t>(i - dyn)];
        if (d < 0) unsupported(c, "the shape of a free dim");
        s.push_back({-1, d});
    }
    const std::string& out = c.node.output(0);
    if (dynamic) {
        sym_shapes_[out] = s;
        return;
    }
    std::vector<int64_t> dims;
    for (const SymDim& d : s) dims.push_back(d.value);
    Tensor t = Tensor::from_vector(dims, Shape{static_cast<int64_t>(dims.size())});
    set_const(out, t);
    values_[out] = constant(t, out);
}

SymShape Importer::concat_shapes(NodeCtx& c) {
    const int64_t axis = attr_i(c, "axis", 0);
    if (axis != 0 && axis != -1) unsupported(c, "Concat of shapes along an axis other than 0");
    SymShape s;
    for (int i = 0; i < c.node.input_size(); ++i) {
        if (!has_input(c, i)) continue;
        if (const SymShape* p = sym_shape(c, i)) {
            s.insert(s.end(), p->begin(), p->end());
            continue;
        }
        auto t = const_value(c, i);
        CTK_CHECK(t->rank() == 1, ValueError, c.where, ": a shape operand must be one-dimensional");
        for (int64_t v : t->to_vector<int64_t>()) s.push_back({-1, v});
    }
    return s;
}

SymShape Importer::slice_shape(NodeCtx& c) {
    const SymShape* p = sym_shape(c, 0);
    if (!p) unsupported(c, "a run-time shape as starts, ends or steps");
    const Dims starts = const_ints(c, 1), ends = const_ints(c, 2);
    const Dims axes = has_input(c, 3) ? const_ints(c, 3) : Dims{0};
    const Dims steps = has_input(c, 4) ? const_ints(c, 4) : Dims{1};
    if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || (axes[0] != 0 && axes[0] != -1) ||
        steps.size() != 1 || steps[0] != 1)
        unsupported(c, "a Slice of a run-time shape other than one range with step 1");
    const auto n = static_cast<int64_t>(p->size());
    int64_t lo = starts[0] < 0 ? starts[0] + n : starts[0], hi = ends[0] < 0 ? ends[0] + n : ends[0];
    lo = std::clamp<int64_t>(lo, 0, n);
    hi = std::clamp<int64_t>(hi, lo, n);
    return SymShape(p->begin() + lo, p->begin() + hi);
}

FunctionPtr Importer::run() {
    const std::string& where = source_;
    CTK_CHECK(model_.has_graph(), IOError, where, ": the file holds no graph");
    int64_t opset = -1;
    for (const auto& o : model_.opset_import()) {
        if (o.domain().empty() || o.domain() == "ai.onnx") {
            opset = o.version();
        } else {
            CTK_THROW(NotImplementedError, where, ": operator set domain '", o.domain(),
                      "' is not supported (ctk reads ai.onnx only)");
        }
    }
    CTK_CHECK(opset >= 0, IOError, where, ": the model imports no ai.onnx operator set");
    CTK_CHECK(opset >= kMinImportOpset && opset <= kMaxImportOpset, NotImplementedError, where,
              ": ai.onnx opset ", opset, " is not supported (ctk reads opsets ", kMinImportOpset, " to ",
              kMaxImportOpset, ")");
    const onnx::GraphProto& g = model_.graph();
    for (const auto& t : g.initializer()) inits_[t.name()] = &t;
    for (const auto& t : g.sparse_initializer()) {
        (void)t;
        CTK_THROW(NotImplementedError, where, ": sparse initializers are not supported");
    }
    for (const auto& vi : g.input()) {
        if (inits_.count(vi.name())) continue;
        CTK_CHECK(vi.type().has_tensor_type(), NotImplementedError, where, ": input '", vi.name(),
                  "' is not a tensor");
        const auto& tt = vi.type().tensor_type();
        // ctk inputs are floating: integer inputs are fed as f64 (exact below 2^53).
        DataType d = dtype_of_onnx(tt.elem_type(), where + ": input '" + vi.name() + "'");
        const bool integer = !is_floating(d);
        if (integer) d = DataType::f64;
        CTK_CHECK(tt.has_shape(), NotImplementedError, where, ": input '", vi.name(), "' has no shape");
        Dims dims;
        bool batch = false;
        // ctk's export names the dims of the batch and sequence axes "batch" and "sequence".
        const auto& sh = tt.shape();
        const bool sequence = sh.dim_size() >= 2 && sh.dim(0).dim_param() == "batch" &&
                              sh.dim(1).dim_param() == "sequence" && !sh.dim(0).has_dim_value() &&
                              !sh.dim(1).has_dim_value();
        for (int i = sequence ? 2 : 0; i < tt.shape().dim_size(); ++i) {
            const auto& dim = tt.shape().dim(i);
            const bool known = dim.has_dim_value();
            if (i == 0 && !known) {
                batch = true;
                continue;
            }
            CTK_CHECK(!known || dim.dim_value() >= 0, IOError, where, ": input '", vi.name(), "' has dim ",
                      dim.dim_value());
            dims.push_back(known ? dim.dim_value() : kFreeDim);
        }
        values_[vi.name()] = input_variable(dims, d, false, false,
                                            sequence ? default_sequence_axes()
                                            : batch  ? default_batch_axes()
                                                     : std::vector<Axis>{},
                                            vi.name());
        if (integer) integer_inputs_.insert(values_[vi.name()].impl());
    }
    static const std::map<std::string, Handler> handlers = make_handlers();
    int index = 0;
    for (const auto& n : g.node()) {
        NodeCtx c{*this, n, "", n.name().empty() ? (n.output_size() ? n.output(0) : "") : n.name()};
        c.where = where + ": node " + std::to_string(index++) + " '" + c.name + "' (" + n.op_type() + ")";
        CTK_CHECK(n.domain().empty() || n.domain() == "ai.onnx", NotImplementedError, c.where, ": domain '",
                  n.domain(), "' is not supported");
        if (n.op_type() == "Constant") {
            CTK_CHECK(n.output_size() == 1, IOError, c.where, ": needs one output");
            const auto* a = n.attribute_size() == 1 ? &n.attribute(0) : nullptr;
            CTK_CHECK(a != nullptr, IOError, c.where, ": needs one attribute");
            Tensor t;
            if (a->name() == "value") {
                t = tensor_from_proto(a->t(), c.where);
            } else if (a->name() == "value_float") {
                t = Tensor::full(Shape{}, a->f(), DataType::f32);
            } else if (a->name() == "value_int") {
                t = Tensor::full(Shape{}, static_cast<double>(a->i()), DataType::i64);
                t.data<int64_t>()[0] = a->i();
            } else if (a->name() == "value_floats") {
                t = Tensor::from_vector(std::vector<float>(a->floats().begin(), a->floats().end()),
                                        Shape{a->floats_size()});
            } else if (a->name() == "value_ints") {
                t = Tensor::from_vector(std::vector<int64_t>(a->ints().begin(), a->ints().end()),
                                        Shape{a->ints_size()});
            } else {
                unsupported(c, "Constant with attribute '" + a->name() + "'");
            }
            set_const(n.output(0), t);
            values_[n.output(0)] = constant(t, n.output(0));
            continue;
        }
        if (n.op_type() == "Shape") {
            shape_node(c);
            continue;
        }
        if ((n.op_type() == "Concat" || n.op_type() == "Slice") && n.input_size() > 0) {
            bool sym = false;
            for (int i = 0; i < n.input_size(); ++i) sym = sym || sym_shape(c, i) != nullptr;
            if (sym) {
                CTK_CHECK(n.output_size() == 1, IOError, c.where, ": needs one output");
                sym_shapes_[n.output(0)] = n.op_type() == "Concat" ? concat_shapes(c) : slice_shape(c);
                continue;
            }
        }
        // A merged value ([batch * sequence, sample...]) may only meet ops that treat every frame alike.
        bool any_merged = false;
        for (int i = 0; i < n.input_size(); ++i) {
            if (!has_input(c, i) || sym_shape(c, i) || consts_.count(n.input(i))) continue;
            any_merged = any_merged || merged(value(n.input(i), c.where));
        }
        if (any_merged) {
            static const std::set<std::string> per_frame = {"Conv",
                                                            "ConvTranspose",
                                                            "MaxPool",
                                                            "AveragePool",
                                                            "GlobalMaxPool",
                                                            "GlobalAveragePool",
                                                            "BatchNormalization",
                                                            "Reshape",
                                                            "Identity",
                                                            "Dropout",
                                                            "Relu",
                                                            "Sigmoid",
                                                            "Tanh",
                                                            "Exp",
                                                            "Log",
                                                            "Sqrt",
                                                            "Abs",
                                                            "Neg",
                                                            "Floor",
                                                            "Ceil",
                                                            "Reciprocal",
                                                            "Elu",
                                                            "LeakyRelu",
                                                            "Selu",
                                                            "HardSigmoid",
                                                            "Softplus",
                                                            "Softsign",
                                                            "Clip",
                                                            "Add",
                                                            "Sub",
                                                            "Mul",
                                                            "Div",
                                                            "Max",
                                                            "Min",
                                                            "Sum",
                                                            "Mean",
                                                            "Pow",
                                                            "PRelu"};
            CTK_CHECK(per_frame.count(n.op_type()), NotImplementedError, c.where,
                      ": an operand whose batch and sequence dims are merged into one (ctk reads it only in "
                      "ops that treat every frame alike)");
            for (int i = 0; i < n.input_size(); ++i) {
                if (!has_input(c, i) || sym_shape(c, i) || consts_.count(n.input(i))) continue;
                Variable v = value(n.input(i), c.where);
                CTK_CHECK(dyn_of(v) == 0 || merged(v), NotImplementedError, c.where,
                          ": operands with merged and separate batch and sequence dims");
            }
        }
        auto h = handlers.find(n.op_type());
        CTK_CHECK(h != handlers.end(), NotImplementedError, c.where, ": ONNX op ", n.op_type(),
                  " is not supported by ctk");
        std::vector<Variable> outs = h->second(c);
        for (int i = 0; i < n.output_size(); ++i) {
            if (n.output(i).empty()) continue;
            CTK_CHECK(static_cast<size_t>(i) < outs.size(), NotImplementedError, c.where, ": output ", i,
                      " is not supported");
            values_[n.output(i)] = outs[static_cast<size_t>(i)];
            if (any_merged && n.op_type() != "Reshape") merged_.insert(outs[static_cast<size_t>(i)].impl());
        }
    }
    std::vector<Variable> outputs;
    for (const auto& vi : g.output()) {
        Variable v = value(vi.name(), where + ": graph output");
        CTK_CHECK(!merged(v), NotImplementedError, where, ": graph output '", vi.name(),
                  "' has its batch and sequence dims merged into one");
        if (!v.is_output()) v = alias(v, vi.name());
        outputs.push_back(v);
    }
    CTK_CHECK(!outputs.empty(), IOError, where, ": the graph has no outputs");
    return combine(outputs, g.name());
}

}  // namespace

FunctionPtr import_model(const onnx::ModelProto& model, const std::string& source) {
    return Importer(model, source).run();
}

}  // namespace ctk::detail::onnx_io
