// Reductions (CNTK's ReduceElements) over static axes, the batch axis, or all axes; and argmax/argmin.
// Over all static axes the result is a scalar per sample (CNTK drops keepdims there); over listed static
// axes they stay as dim 1 unless keepdims is false. Reducing over the batch axis (or all axes) removes the
// dynamic axes and skips padded frames.
#include <cmath>
#include <limits>

#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

struct ReduceKind {
    const char* cntk;
    OpKind kernel;
    double neutral;  // the fill for padded frames
};
const ReduceKind kReduceKinds[] = {
    {"Sum", OpKind::reduce_sum, 0.0},
    {"Mean", OpKind::reduce_mean, 0.0},
    {"Max", OpKind::reduce_max, -std::numeric_limits<double>::infinity()},
    {"Min", OpKind::reduce_min, std::numeric_limits<double>::infinity()},
    {"Prod", OpKind::reduce_prod, 1.0},
    {"LogSum", OpKind::reduce_log_sum_exp, -std::numeric_limits<double>::infinity()},
    {"L1", OpKind::reduce_l1, 0.0},
    {"L2", OpKind::reduce_l2, 0.0},
    {"SumSquare", OpKind::reduce_sum_square, 0.0},
};
const ReduceKind& reduce_kind(const std::string& name) {
    for (const auto& k : kReduceKinds)
        if (name == k.cntk) return k;
    CTK_THROW(ValueError, "reduce: unknown reduction '", name, "'");
}

// What a reduction covers, resolved against the operand.
struct ReducePlan {
    std::vector<int> static_axes;  // normalised
    bool all_static = false;
    bool dynamic = false;  // the batch (and sequence) axes
};
ReducePlan plan_of(const Attributes& a, const Variable& x, const std::string& where) {
    ReducePlan p;
    for (const Axis& axis : a.get<std::vector<Axis>>("axes")) {
        switch (axis.kind()) {
            case Axis::Kind::all:
                p.all_static = p.dynamic = true;
                break;
            case Axis::Kind::all_static:
                p.all_static = true;
                break;
            case Axis::Kind::dynamic:
                CTK_CHECK(axis.is_batch(), ValueError, where, ": reducing over the sequence axis ",
                          axis.to_string(), " needs sequence.reduce_sum / sequence.reduce_max");
                CTK_CHECK(
                    x.has_batch_axis() && !x.has_sequence_axis(), ValueError, where, ": ", x.to_string(),
                    x.has_batch_axis() ? " has a sequence axis; reduce over it first" : " has no batch axis");
                p.dynamic = true;
                break;
            case Axis::Kind::static_axis:
                p.static_axes.push_back(normalize_static_axis(axis, x.rank(), where));
                break;
        }
    }
    if (p.all_static) {
        p.static_axes.clear();
        for (int i = 0; i < x.rank(); ++i) p.static_axes.push_back(i);
    }
    std::sort(p.static_axes.begin(), p.static_axes.end());
    p.static_axes.erase(std::unique(p.static_axes.begin(), p.static_axes.end()), p.static_axes.end());
    return p;
}

std::vector<OutputSpec> infer_reduce(InferContext& c) {
    const Variable& x = c.inputs[0];
    (void)reduce_kind(c.attrs.get<std::string>("reductionOpName"));
    ReducePlan p = plan_of(c.attrs, x, c.where);
    const bool keep = c.attrs.get<bool>("keepdims") && !p.all_static;
    Dims out;
    for (int i = 0; i < x.rank(); ++i) {
        const bool reduced = std::find(p.static_axes.begin(), p.static_axes.end(), i) != p.static_axes.end();
        if (!reduced)
            out.push_back(x.shape()[static_cast<size_t>(i)]);
        else if (keep)
            out.push_back(1);
    }
    return {{out, x.dtype(), p.dynamic ? std::vector<Axis>{} : x.dynamic_axes()}};
}

// The tensor axes reduced and the data shape with them kept as 1.
struct TensorReduction {
    std::vector<int> axes;
    Dims kept;
    double count = 1;  // elements per output (real frames only)
};
TensorReduction tensor_reduction(const ReducePlan& p, const Value& x, int dyn) {
    TensorReduction r;
    const Tensor& d = x.data();
    r.kept = d.shape().dims();
    if (p.dynamic) {
        for (int i = 0; i < dyn; ++i) r.axes.push_back(i);
        r.count = static_cast<double>(x.has_layout() ? x.layout()->num_frames() : 1);
        if (!x.has_layout())
            for (int i = 0; i < dyn; ++i) r.count *= static_cast<double>(d.dim(i));
    }
    for (int a : p.static_axes) {
        r.axes.push_back(dyn + a);
        r.count *= static_cast<double>(d.dim(dyn + a));
    }
    for (int a : r.axes) r.kept[static_cast<size_t>(a)] = 1;
    return r;
}

void forward_reduce(ForwardContext& c) {
    const ReduceKind& kind = reduce_kind(c.attrs.get<std::string>("reductionOpName"));
    ReducePlan p = plan_of(c.attrs, c.input_vars[0], c.where);
    const Value& x = c.inputs[0];
    TensorReduction r = tensor_reduction(p, x, c.dyn_rank(0));
    Tensor data = p.dynamic ? x.masked_data(kind.neutral) : x.data();
    Tensor y;
    if (r.axes.empty()) {
        y = data.clone();
    } else if (kind.kernel == OpKind::reduce_mean) {
        y = element_divide(reduce_sum(data, r.axes, true),
                           Tensor::full(Shape{}, r.count, data.dtype(), data.device()));
    } else {
        y = reduce(kind.kernel, data, r.axes, true);
    }
    // Drop what the output variable drops: the dynamic axes, and static axes unless kept.
    Dims out;
    const bool keep = c.attrs.get<bool>("keepdims") && !p.all_static;
    const int dyn = c.dyn_rank(0);
    if (!p.dynamic)
        for (int i = 0; i < dyn; ++i) out.push_back(y.dim(i));
    for (int i = 0; i < c.input_vars[0].rank(); ++i) {
        const bool reduced = std::find(p.static_axes.begin(), p.static_axes.end(), i) != p.static_axes.end();
        if (!reduced || keep) out.push_back(y.dim(dyn + i));
    }
    c.outputs.push_back(Value(y.reshape(out)));
}

void backward_reduce(BackwardContext& c) {
    const ReduceKind& kind = reduce_kind(c.attrs.get<std::string>("reductionOpName"));
    ReducePlan p = plan_of(c.attrs, c.input_vars[0], c.where);
    const Value& xv = c.inputs[0];
    TensorReduction r = tensor_reduction(p, xv, c.dyn_rank(0));
    const Tensor& x = xv.data();
    Tensor dy = c.output_grads[0].reshape(r.kept);
    Tensor y = c.outputs[0].data().reshape(r.kept);
    auto s = [&](double v) { return Tensor::full(Shape{}, v, x.dtype(), x.device()); };
    Tensor g;
    switch (kind.kernel) {
        case OpKind::reduce_sum:
            g = dy;
            break;
        case OpKind::reduce_mean:
            g = element_divide(dy, s(r.count));
            break;
        case OpKind::reduce_max:
        case OpKind::reduce_min:
            g = element_times(dy, equal(x, y));
            break;
        case OpKind::reduce_prod:
            g = element_times(dy, element_divide(y, x));
            break;
        case OpKind::reduce_log_sum_exp:
            g = element_times(dy, ctk::exp(minus(x, y)));
            break;
        case OpKind::reduce_l1:
            g = element_times(dy, minus(greater(x, s(0)), less(x, s(0))));
            break;
        case OpKind::reduce_l2:
            g = element_times(dy, element_divide(x, y));
            break;
        case OpKind::reduce_sum_square:
            g = element_times(dy, element_times(x, s(2)));
            break;
        default:
            CTK_THROW(Error, c.where, ": no gradient rule");
    }
    c.input_grads[0] = g.shape() == x.shape() ? g : Tensor(g.broadcast_to(x.shape())).contiguous();
}

std::vector<OutputSpec> infer_arg(InferContext& c) {
    const Variable& x = c.inputs[0];
    Dims out;
    if (c.attrs.has("axis")) {
        const int a = normalize_static_axis(c.attrs.get<Axis>("axis"), x.rank(), c.where);
        out = x.shape();
        out[static_cast<size_t>(a)] = 1;
    }
    return {{out, x.dtype(), x.dynamic_axes()}};
}

template <bool IsMax>
void forward_arg(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const int dyn = c.dyn_rank(0);
    Tensor idx;
    if (c.attrs.has("axis")) {
        const int a = normalize_static_axis(c.attrs.get<Axis>("axis"), c.input_vars[0].rank(), c.where);
        idx = IsMax ? argmax(x, dyn + a, true) : argmin(x, dyn + a, true);
    } else {
        Dims flat(x.shape().dims().begin(), x.shape().dims().begin() + dyn);
        flat.push_back(-1);
        idx = IsMax ? argmax(x.reshape(flat), -1, false) : argmin(x.reshape(flat), -1, false);
    }
    c.outputs.push_back(Value(idx.to(x.dtype())));
}

// A reduction over the batch axis or all axes mixes samples, so it cannot run one frame at a time.
bool reduce_is_frame_local(const Function& f) {
    for (const Axis& a : f.attributes().get<std::vector<Axis>>("axes"))
        if (a.is_dynamic() || a.kind() == Axis::Kind::all) return false;
    return true;
}

}  // namespace

void register_reduce_ops(OpTable& t) {
    t.add(PrimitiveOp::reduce, OpDef{"ReduceElements", 1, 1, infer_reduce, forward_reduce, backward_reduce});
    t.frame_local_for(PrimitiveOp::reduce, reduce_is_frame_local);
    t.add(PrimitiveOp::argmax, OpDef{"Argmax", 1, 1, infer_arg, forward_arg<true>, nullptr});
    t.add(PrimitiveOp::argmin, OpDef{"Argmin", 1, 1, infer_arg, forward_arg<false>, nullptr});
}

}  // namespace detail

namespace {
FunctionPtr make_reduce(const char* op, const Variable& x, const std::vector<Axis>& axes, bool keepdims,
                        const std::string& name) {
    CTK_CHECK(!axes.empty(), ValueError, "reduce '", name, "': no axes given");
    return detail::FunctionAccess::make_primitive(
        PrimitiveOp::reduce, {x},
        Attributes{{"reductionOpName", std::string(op)}, {"axes", axes}, {"keepdims", keepdims}}, name);
}
}  // namespace

#define CTK_DEFINE_GRAPH_REDUCE(fn, cntk)                                           \
    FunctionPtr fn(const Variable& x, const std::vector<Axis>& axes, bool keepdims, \
                   const std::string& name) {                                       \
        return make_reduce(cntk, x, axes, keepdims, name);                          \
    }
CTK_DEFINE_GRAPH_REDUCE(reduce_sum, "Sum")
CTK_DEFINE_GRAPH_REDUCE(reduce_mean, "Mean")
CTK_DEFINE_GRAPH_REDUCE(reduce_max, "Max")
CTK_DEFINE_GRAPH_REDUCE(reduce_min, "Min")
CTK_DEFINE_GRAPH_REDUCE(reduce_prod, "Prod")
CTK_DEFINE_GRAPH_REDUCE(reduce_log_sum_exp, "LogSum")
CTK_DEFINE_GRAPH_REDUCE(reduce_l1, "L1")
CTK_DEFINE_GRAPH_REDUCE(reduce_l2, "L2")
CTK_DEFINE_GRAPH_REDUCE(reduce_sum_square, "SumSquare")
#undef CTK_DEFINE_GRAPH_REDUCE

FunctionPtr argmax(const Variable& x, std::optional<Axis> axis, const std::string& name) {
    Attributes a;
    if (axis && !(axis->kind() == Axis::Kind::all_static)) a.set("axis", *axis);
    return detail::FunctionAccess::make_primitive(PrimitiveOp::argmax, {x}, a, name);
}
FunctionPtr argmin(const Variable& x, std::optional<Axis> axis, const std::string& name) {
    Attributes a;
    if (axis && !(axis->kind() == Axis::Kind::all_static)) a.set("axis", *axis);
    return detail::FunctionAccess::make_primitive(PrimitiveOp::argmin, {x}, a, name);
}

}  // namespace ctk
