// ONNX export: walks the graph upstream of a model's outputs (blocks inlined, placeholders resolved to
// the block operands they stand for) and writes one ONNX node group per ctk primitive at opset 17 (or 13 to
// 16, on request). Dynamic axes become leading symbolic dims ("batch", "sequence"), so ctk's static axis a is
// ONNX axis a + (number of dynamic axes).
#include <cmath>

#include "formats/onnx_export_internal.h"

namespace ctk::detail::onnx_io::exporter {
namespace {

const char* unary_onnx_name(PrimitiveOp op) {
    switch (op) {
        case PrimitiveOp::negate:
            return "Neg";
        case PrimitiveOp::abs:
            return "Abs";
        case PrimitiveOp::sqrt:
            return "Sqrt";
        case PrimitiveOp::exp:
            return "Exp";
        case PrimitiveOp::log:
            return "Log";
        case PrimitiveOp::floor:
            return "Floor";
        case PrimitiveOp::ceil:
            return "Ceil";
        case PrimitiveOp::sin:
            return "Sin";
        case PrimitiveOp::cos:
            return "Cos";
        case PrimitiveOp::tan:
            return "Tan";
        case PrimitiveOp::asin:
            return "Asin";
        case PrimitiveOp::acos:
            return "Acos";
        case PrimitiveOp::atan:
            return "Atan";
        case PrimitiveOp::sinh:
            return "Sinh";
        case PrimitiveOp::cosh:
            return "Cosh";
        case PrimitiveOp::tanh:
            return "Tanh";
        case PrimitiveOp::asinh:
            return "Asinh";
        case PrimitiveOp::atanh:
            return "Atanh";
        case PrimitiveOp::erf:
            return "Erf";
        case PrimitiveOp::reciprocal:
            return "Reciprocal";
        case PrimitiveOp::sigmoid:
            return "Sigmoid";
        case PrimitiveOp::relu:
            return "Relu";
        case PrimitiveOp::softplus:
            return "Softplus";
        case PrimitiveOp::softsign:
            return "Softsign";
        default:
            return nullptr;
    }
}

const char* binary_onnx_name(PrimitiveOp op) {
    switch (op) {
        case PrimitiveOp::plus:
            return "Add";
        case PrimitiveOp::minus:
            return "Sub";
        case PrimitiveOp::element_times:
            return "Mul";
        case PrimitiveOp::element_divide:
            return "Div";
        case PrimitiveOp::pow:
            return "Pow";
        case PrimitiveOp::element_max:
            return "Max";
        case PrimitiveOp::element_min:
            return "Min";
        case PrimitiveOp::equal:
            return "Equal";
        case PrimitiveOp::less:
            return "Less";
        case PrimitiveOp::less_equal:
            return "LessOrEqual";
        case PrimitiveOp::greater:
            return "Greater";
        case PrimitiveOp::greater_equal:
            return "GreaterOrEqual";
        case PrimitiveOp::element_and:
            return "And";
        case PrimitiveOp::element_or:
            return "Or";
        case PrimitiveOp::element_xor:
            return "Xor";
        default:
            return nullptr;
    }
}

const char* reduce_onnx_name(const std::string& cntk) {
    static const std::map<std::string, const char*> names = {
        {"Sum", "ReduceSum"}, {"Mean", "ReduceMean"}, {"Max", "ReduceMax"},
        {"Min", "ReduceMin"}, {"Prod", "ReduceProd"}, {"LogSum", "ReduceLogSumExp"},
        {"L1", "ReduceL1"},   {"L2", "ReduceL2"},     {"SumSquare", "ReduceSumSquare"}};
    auto it = names.find(cntk);
    return it == names.end() ? nullptr : it->second;
}

// CNTK's per-axis lists (strides, auto_padding, dilation) for the `spatial` trailing axes of a sample of
// rank `rank`: a shorter list is extended at the front with its first value.
Dims spatial_list(Dims list, int rank, int spatial) {
    if (list.empty()) list.push_back(1);
    while (static_cast<int>(list.size()) < rank) list.insert(list.begin(), list.front());
    return Dims(list.end() - spatial, list.end());
}

}  // namespace

void Exporter::export_primitive(const Function& f, int scope) {
    const PrimitiveOp op = f.op();
    const std::vector<Variable> inputs = f.inputs();
    const std::vector<Variable> outputs = f.outputs();
    const Variable& y = outputs.at(0);
    const std::string base = f.name().empty() ? f.uid() : f.name();
    std::vector<std::string> in;
    for (const Variable& v : inputs) in.push_back(value(v, scope));
    const Attributes& a = f.attributes();
    const int dyn = inputs.empty() ? 0 : dyn_rank(inputs[0]);
    std::vector<std::string> out_names;
    std::string o;
    onnx::NodeProto* n = nullptr;

    if (is_elementwise_unary(op)) {
        const double alpha = a.get_or<double>("alpha", 0.0), beta = a.get_or<double>("beta", 0.0);
        if (const char* name = unary_onnx_name(op)) {
            o = emit(name, in, base);
        } else {
            switch (op) {
                case PrimitiveOp::square:
                    o = emit("Mul", {in[0], in[0]}, base);
                    break;
                case PrimitiveOp::round:  // CNTK rounds halves up: floor(x + 0.5)
                    o = emit("Floor", {emit("Add", {in[0], const_scalar(0.5, y.dtype())}, base)}, base);
                    break;
                case PrimitiveOp::elu:
                    o = emit("Elu", in, base, &n);
                    attr_f(n, "alpha", alpha);
                    break;
                case PrimitiveOp::selu:  // ctk: alpha = scale (ONNX gamma), beta = the ELU alpha
                    o = emit("Selu", in, base, &n);
                    attr_f(n, "alpha", beta);
                    attr_f(n, "gamma", alpha);
                    break;
                case PrimitiveOp::leaky_relu:
                    o = emit("LeakyRelu", in, base, &n);
                    attr_f(n, "alpha", alpha);
                    break;
                case PrimitiveOp::hard_sigmoid:
                    o = emit("HardSigmoid", in, base, &n);
                    attr_f(n, "alpha", alpha);
                    attr_f(n, "beta", beta);
                    break;
                case PrimitiveOp::element_not:
                    o = cast(emit("Equal", {in[0], const_scalar(0.0, y.dtype())}, base), y.dtype(), base);
                    break;
                case PrimitiveOp::clip:
                    o = emit("Clip",
                             {in[0], std::isinf(alpha) ? std::string() : const_scalar(alpha, y.dtype()),
                              std::isinf(beta) ? std::string() : const_scalar(beta, y.dtype())},
                             base);
                    break;
                default:
                    unsupported(f, "");
            }
        }
    } else if (is_elementwise_binary(op) || op == PrimitiveOp::element_select) {
        std::vector<std::string> al;
        for (size_t i = 0; i < inputs.size(); ++i) al.push_back(aligned(inputs[i], in[i], y.rank(), base));
        const DataType dt = y.dtype();
        if (op == PrimitiveOp::element_select) {
            o = emit("Where", {to_bool(al[0], base), al[1], al[2]}, base);
        } else if (op == PrimitiveOp::param_relu) {  // operands (x, alpha)
            // ONNX's PRelu broadcasts the slope to x only; when x is the smaller operand, the select.
            if (inputs[0].dynamic_axes() == y.dynamic_axes() && inputs[0].shape() == y.shape())
                o = emit("PRelu", {al[0], al[1]}, base);
            else
                o = emit("Where",
                         {emit("Greater", {al[0], const_scalar(0.0, dt)}, base), al[0],
                          emit("Mul", {al[1], al[0]}, base)},
                         base);
        } else if (op == PrimitiveOp::log_add_exp) {  // max(a, b) + log(1 + exp(-|a - b|))
            std::string d = emit("Abs", {emit("Sub", {al[0], al[1]}, base)}, base);
            std::string l = emit(
                "Log",
                {emit("Add", {const_scalar(1.0, dt), emit("Exp", {emit("Neg", {d}, base)}, base)}, base)},
                base);
            o = emit("Add", {emit("Max", {al[0], al[1]}, base), l}, base);
        } else if (op == PrimitiveOp::not_equal) {
            o = cast(emit("Not", {emit("Equal", al, base)}, base), dt, base);
        } else if (op == PrimitiveOp::element_and || op == PrimitiveOp::element_or ||
                   op == PrimitiveOp::element_xor) {
            o = cast(emit(binary_onnx_name(op), {to_bool(al[0], base), to_bool(al[1], base)}, base), dt,
                     base);
        } else if (const char* name = binary_onnx_name(op)) {
            o = emit(name, al, base);
            if (op == PrimitiveOp::equal || op == PrimitiveOp::less || op == PrimitiveOp::less_equal ||
                op == PrimitiveOp::greater || op == PrimitiveOp::greater_equal)
                o = cast(o, dt, base);
        } else {
            unsupported(f, "");
        }
    } else {
        switch (op) {
            case PrimitiveOp::times: {
                const Variable &x = inputs[0], &w = inputs[1];
                const int64_t out_rank = a.get<int64_t>("outputRank");
                const size_t k = w.shape().size() - static_cast<size_t>(out_rank);
                const Dims& ws = w.shape();
                int64_t kk = 1, nn = 1;
                for (size_t i = 0; i < ws.size(); ++i) (i < k ? kk : nn) *= ws[i];
                std::string xm = in[0], wm = in[1];
                const bool x_matrix_ready = k == 1;
                if (!x_matrix_ready) {
                    Dims xs(x.shape().begin(), x.shape().end() - static_cast<std::ptrdiff_t>(k));
                    xs.push_back(kk);
                    xm = reshape(in[0], dyn, xs, base);
                }
                if (ws.size() != 2 || k != 1)
                    wm = reshape(in[1], 0, out_rank == 0 ? Dims{kk} : Dims{kk, nn}, base);
                o = emit("MatMul", {xm, wm}, base);
                if (out_rank > 1 || (out_rank == 0 && false)) o = reshape(o, dyn, y.shape(), base);
                break;
            }
            case PrimitiveOp::transpose_times: {
                if (dyn_rank(inputs[1]) != 0 || inputs[1].rank() != 2)
                    unsupported(f, "a right operand that is not a static matrix");
                onnx::NodeProto* t;
                std::string bt = emit("Transpose", {in[1]}, base, &t);
                attr_ints(t, "perm", {1, 0});
                o = emit("MatMul", {in[0], bt}, base);
                break;
            }
            case PrimitiveOp::reduce: {
                const char* name = reduce_onnx_name(a.get<std::string>("reductionOpName"));
                if (!name) unsupported(f, "reduction " + a.get<std::string>("reductionOpName"));
                Dims axes;
                bool keep = a.get<bool>("keepdims");
                const int rank = inputs[0].rank();
                for (const Axis& ax : a.get<std::vector<Axis>>("axes")) {
                    switch (ax.kind()) {
                        case Axis::Kind::all:
                            for (int i = 0; i < dyn + rank; ++i) axes.push_back(i);
                            keep = false;
                            break;
                        case Axis::Kind::all_static:
                            for (int i = 0; i < rank; ++i) axes.push_back(dyn + i);
                            keep = false;
                            break;
                        case Axis::Kind::dynamic:
                            if (dyn != 1 || !ax.is_batch())
                                unsupported(f, "a reduction over a sequence axis");
                            axes.push_back(0);
                            break;
                        case Axis::Kind::static_axis:
                            axes.push_back(
                                dyn + (ax.static_index() < 0 ? ax.static_index() + rank : ax.static_index()));
                            break;
                    }
                }
                std::sort(axes.begin(), axes.end());
                axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
                if (axes.empty()) {
                    o = emit("Identity", in, base);
                } else if (std::string(name) == "ReduceSum") {
                    o = emit(name, {in[0], const_i64(axes)}, base, &n);
                    attr_i(n, "keepdims", keep ? 1 : 0);
                } else {
                    o = emit(name, in, base, &n);
                    attr_ints(n, "axes", axes);
                    attr_i(n, "keepdims", keep ? 1 : 0);
                }
                // A reduced batch axis leaves the result even when the static axes are kept.
                if (keep && dyn == 1 && axes.front() == 0) o = emit("Squeeze", {o, const_i64({0})}, base);
                break;
            }
            case PrimitiveOp::argmax:
            case PrimitiveOp::argmin: {
                const char* name = op == PrimitiveOp::argmax ? "ArgMax" : "ArgMin";
                if (a.has("axis")) {
                    const Axis& ax = a.get<Axis>("axis");
                    const int rank = inputs[0].rank();
                    o = emit(name, in, base, &n);
                    attr_i(n, "axis",
                           dyn + (ax.static_index() < 0 ? ax.static_index() + rank : ax.static_index()));
                    attr_i(n, "keepdims", 1);
                } else {
                    o = emit(name, {reshape(in[0], dyn, {-1}, base)}, base, &n);
                    attr_i(n, "axis", dyn);
                    attr_i(n, "keepdims", 0);
                }
                o = cast(o, y.dtype(), base);
                break;
            }
            case PrimitiveOp::softmax:
            case PrimitiveOp::log_softmax:
            case PrimitiveOp::hardmax: {
                const char* name = op == PrimitiveOp::softmax       ? "Softmax"
                                   : op == PrimitiveOp::log_softmax ? "LogSoftmax"
                                                                    : "Hardmax";
                const int rank = inputs[0].rank();
                if (a.has("axis")) {
                    const Axis& ax = a.get<Axis>("axis");
                    o = emit(name, in, base, &n);
                    attr_i(n, "axis",
                           dyn + (ax.static_index() < 0 ? ax.static_index() + rank : ax.static_index()));
                } else if (rank <= 1) {
                    o = emit(name, in, base, &n);
                    attr_i(n, "axis", -1);
                } else {
                    o = emit(name, {reshape(in[0], dyn, {-1}, base)}, base, &n);
                    attr_i(n, "axis", -1);
                    o = reshape(o, dyn, inputs[0].shape(), base);
                }
                break;
            }
            case PrimitiveOp::reshape:
                o = reshape(in[0], dyn, y.shape(), base);
                break;
            case PrimitiveOp::slice: {
                const auto& axes = a.get<std::vector<Axis>>("axes");
                const Dims &begin = a.get<Dims>("beginIndex"), &end = a.get<Dims>("endIndex"),
                           &strides = a.get<Dims>("sliceStrides");
                Dims st, en, ax, sp;
                const Dims& xs = inputs[0].shape();
                for (size_t i = 0; i < axes.size(); ++i) {
                    if (!axes[i].is_static()) unsupported(f, "a slice along a dynamic axis");
                    const int r = static_cast<int>(xs.size());
                    const int k =
                        axes[i].static_index() < 0 ? axes[i].static_index() + r : axes[i].static_index();
                    const int64_t nd = xs[static_cast<size_t>(k)];
                    int64_t b = begin[i], e = end[i];
                    if (b < 0) b += nd;
                    if (e <= 0) e += nd;
                    st.push_back(b);
                    en.push_back(e);
                    ax.push_back(dyn + k);
                    sp.push_back(strides.empty() ? 1 : strides[i]);
                }
                o = emit("Slice", {in[0], const_i64(st), const_i64(en), const_i64(ax), const_i64(sp)}, base);
                break;
            }
            case PrimitiveOp::splice: {
                for (const Variable& v : inputs)
                    if (dyn_rank(v) != dyn || v.rank() != inputs[0].rank())
                        unsupported(f, "operands of different ranks or dynamic axes");
                const Axis& ax = a.get<Axis>("axis");
                const int rank = inputs[0].rank();
                o = emit("Concat", in, base, &n);
                attr_i(n, "axis",
                       dyn + (ax.static_index() < 0 ? ax.static_index() + rank : ax.static_index()));
                break;
            }
            case PrimitiveOp::transpose: {
                Dims perm;
                for (int i = 0; i < dyn; ++i) perm.push_back(i);
                for (int64_t p : a.get<Dims>("axisPermutation")) perm.push_back(dyn + p);
                o = emit("Transpose", in, base, &n);
                attr_ints(n, "perm", perm);
                break;
            }
            case PrimitiveOp::pad: {
                const auto mode = static_cast<PadMode>(a.get<int64_t>("mode"));
                if (mode == PadMode::symmetric) unsupported(f, "symmetric padding");
                Dims pads(static_cast<size_t>(dyn), 0);
                Dims lo = a.get<Dims>("padLo"), hi = a.get<Dims>("padHi");
                Dims all = pads;
                all.insert(all.end(), lo.begin(), lo.end());
                all.insert(all.end(), pads.begin(), pads.end());
                all.insert(all.end(), hi.begin(), hi.end());
                o = emit("Pad",
                         {in[0], const_i64(all), const_scalar(a.get<double>("constantValue"), y.dtype())},
                         base, &n);
                auto* m = n->add_attribute();
                m->set_name("mode");
                m->set_type(onnx::AttributeProto::STRING);
                m->set_s(mode == PadMode::constant ? "constant" : "reflect");
                break;
            }
            case PrimitiveOp::gather: {
                if (dyn_rank(inputs[0]) != 0) unsupported(f, "a per-sample reference");
                std::string idx = cast(in[1], DataType::i64, base);
                o = emit("Gather", {in[0], idx}, base, &n);
                attr_i(n, "axis", 0);
                break;
            }
            case PrimitiveOp::one_hot: {
                if (a.get_or<bool>("outputSparse", false)) unsupported(f, "sparse output");
                const int64_t axis = a.get<int64_t>("axis");
                const int64_t rank = inputs[0].rank() + 1;
                const int64_t norm = axis < 0 ? axis + rank : axis;
                Tensor values = Tensor::empty(Shape{2}, y.dtype());
                values.set({0}, 0.0);
                values.set({1}, 1.0);
                std::string vname = fresh("const");
                tensor_to_proto(values, vname, *g_->add_initializer());
                Tensor depth =
                    Tensor::full(Shape{}, static_cast<double>(a.get<int64_t>("numClass")), DataType::i64);
                std::string dname = fresh("const");
                tensor_to_proto(depth, dname, *g_->add_initializer());
                o = emit("OneHot", {cast(in[0], DataType::i64, base), dname, vname}, base, &n);
                attr_i(n, "axis", dyn + norm);
                break;
            }
            case PrimitiveOp::top_k: {
                const int rank = inputs[0].rank();
                const int64_t axis = a.get<int64_t>("axis");
                std::string v = fresh(base), idx = fresh(base);
                n = node("TopK", {in[0], const_i64({a.get<int64_t>("numItems")})}, {v, idx});
                attr_i(n, "axis", dyn + (axis < 0 ? axis + rank : axis));
                out_names = {v, cast(idx, y.dtype(), base)};
                break;
            }
            case PrimitiveOp::cast:
                o = cast(in[0], y.dtype(), base);
                break;
            case PrimitiveOp::stop_gradient:
            case PrimitiveOp::pass:
            case PrimitiveOp::labels_to_graph:
            case PrimitiveOp::dropout:  // inference: the identity
                o = emit("Identity", {in[0]}, base);
                break;
            case PrimitiveOp::straight_through:  // x > 0 ? 1 : -1 (its surrogate gradient is training-only)
                o = emit("Where",
                         {emit("Greater", {in[0], const_scalar(0.0, y.dtype())}, base),
                          const_scalar(1.0, y.dtype()), const_scalar(-1.0, y.dtype())},
                         base);
                break;
            case PrimitiveOp::cross_entropy_with_softmax:
            case PrimitiveOp::classification_error:
            case PrimitiveOp::squared_error:
                export_loss(f, in, base, o);
                break;
            case PrimitiveOp::convolution:
            case PrimitiveOp::convolution_transpose:
            case PrimitiveOp::pooling:
            case PrimitiveOp::batch_normalization:
                export_conv_like(f, in, base, o);
                break;
            default:
                unsupported(f, "");
        }
    }
    if (out_names.empty()) out_names.push_back(o);
    CTK_CHECK(out_names.size() == outputs.size(), NotImplementedError, "save_onnx_model: ", f.to_string(),
              " has ", outputs.size(), " outputs; ", out_names.size(), " exported");
    for (size_t i = 0; i < outputs.size(); ++i) (*names_)[{outputs[i].impl(), scope}] = out_names[i];
}

// The losses and metrics CNTK models carry as outputs, written with the ops they are defined by (so they
// come back as those ops, not as ctk's fused loss ops). Shapes follow ctk's: cross entropy and top-1
// classification error along the last axis keep that axis as 1, the others are one value per sample.
void Exporter::export_loss(const Function& f, const std::vector<std::string>& in, const std::string& base,
                           std::string& out) {
    const std::vector<Variable> inputs = f.inputs();
    const Variable &z = inputs[0], &t = inputs[1];
    const int dyn = dyn_rank(z), rank = z.rank();
    if (dyn_rank(t) != dyn && dyn_rank(t) != 0) unsupported(f, "operands with different dynamic axes");
    if (dyn_rank(z) < dyn_rank(t)) unsupported(f, "a static prediction with a batched target");
    const DataType dt = f.outputs()[0].dtype();
    const std::string tn = aligned(t, in[1], rank, base);
    const Attributes& a = f.attributes();
    onnx::NodeProto* n = nullptr;
    switch (f.op()) {
        case PrimitiveOp::cross_entropy_with_softmax: {
            // CNTK's block, log_sum_exp(z) - sum(t * z) along the axis: -sum(t * log_softmax(z)) only for
            // targets that sum to 1 (soft or all-zero targets keep CNTK's value).
            const int64_t ax = onnx_axis(f, a.get<Axis>("axis"), rank, dyn);
            std::string lse = emit("ReduceLogSumExp", {in[0]}, base, &n);
            attr_ints(n, "axes", {ax});
            attr_i(n, "keepdims", 1);
            std::string s = emit("ReduceSum", {emit("Mul", {tn, in[0]}, base), const_i64({ax})}, base, &n);
            attr_i(n, "keepdims", 1);
            out = emit("Sub", {lse, s}, base);
            return;
        }
        case PrimitiveOp::classification_error: {
            const int64_t ax = onnx_axis(f, a.get<Axis>("axis"), rank, dyn);
            const int64_t top_n = a.get<int64_t>("topN");
            std::string correct;
            if (top_n == 1) {  // CNTK: the first maximum of each compared
                std::string zi = emit("ArgMax", {in[0]}, base, &n);
                attr_i(n, "axis", ax);
                attr_i(n, "keepdims", 1);
                std::string ti = emit("ArgMax", {tn}, base, &n);
                attr_i(n, "axis", ax);
                attr_i(n, "keepdims", 1);
                correct = cast(emit("Equal", {zi, ti}, base), dt, base);
            } else {  // correct when the target's class is among the top_n scores
                std::string cls = emit("ArgMax", {tn}, base, &n);
                attr_i(n, "axis", ax);
                attr_i(n, "keepdims", 1);
                std::string values = fresh(base), idx = fresh(base);
                n = node("TopK", {in[0], const_i64({top_n})}, {values, idx});
                attr_i(n, "axis", ax);
                std::string hit = cast(emit("Equal", {idx, cls}, base), dt, base);
                correct = emit("ReduceMax", {hit}, base, &n);
                attr_ints(n, "axes", {ax});
                attr_i(n, "keepdims", 1);
            }
            out = emit("Sub", {const_scalar(1.0, dt), correct}, base);
            if (top_n != 1 || ax != dyn + rank - 1) out = reshape(out, dyn, {}, base);
            return;
        }
        default: {  // squared_error: sum of (z - t)^2 over the sample
            std::string d = emit("Sub", {in[0], tn}, base);
            out = emit("Mul", {d, d}, base);
            if (rank == 0) return;
            Dims axes;
            for (int i = 0; i < rank; ++i) axes.push_back(dyn + i);
            out = emit("ReduceSum", {out, const_i64(axes)}, base, &n);
            attr_i(n, "keepdims", 0);
            return;
        }
    }
}

// convolution, convolution_transpose, pooling and batch_normalization work on [N, C, spatial...]: one
// dynamic axis is the batch; a static operand gets a leading 1 added and removed; with a sequence axis
// too, the batch and sequence dims are merged into N and split again (every frame is independent).
void Exporter::export_conv_like(const Function& f, const std::vector<std::string>& in,
                                const std::string& base, std::string& out) {
    const std::vector<Variable> inputs = f.inputs();
    const PrimitiveOp op = f.op();
    const bool data_second = op == PrimitiveOp::convolution || op == PrimitiveOp::convolution_transpose;
    const Variable& x = inputs[data_second ? 1 : 0];
    std::string xn = in[data_second ? 1 : 0];
    const int dyn = dyn_rank(x);
    if (dyn > 2) unsupported(f, "more than two dynamic axes");
    for (int64_t d : x.shape())
        if (d < 0) unsupported(f, "free spatial dims");
    const std::string frames = xn;
    if (dyn == 0) xn = emit("Unsqueeze", {xn, const_i64({0})}, base);
    if (dyn == 2) xn = merge_frames(xn, x.shape(), base);
    const Attributes& a = f.attributes();
    const int rank = x.rank(), spatial = rank - 1;
    const Dims& xs = x.shape();
    onnx::NodeProto* n = nullptr;
    std::string o;
    if (op == PrimitiveOp::batch_normalization) {
        if (a.get<bool>("spatial")) {
            o = emit("BatchNormalization", {xn, in[1], in[2], in[3], in[4]}, base, &n);
            attr_f(n, "epsilon", a.get<double>("epsilon"));
        } else {  // per activation: (x - mean) / sqrt(var + eps) * scale + bias, parameters as [1, sample]
            auto shaped = [&](const std::string& p) {
                return reshape(
                    p, 0,
                    [&] {
                        Dims d{1};
                        d.insert(d.end(), xs.begin(), xs.end());
                        return d;
                    }(),
                    base);
            };
            std::string sd =
                emit("Sqrt",
                     {emit("Add", {shaped(in[4]), const_scalar(a.get<double>("epsilon"), x.dtype())}, base)},
                     base);
            std::string norm = emit("Div", {emit("Sub", {xn, shaped(in[3])}, base), sd}, base);
            o = emit("Add", {emit("Mul", {norm, shaped(in[1])}, base), shaped(in[2])}, base);
        }
    } else if (op == PrimitiveOp::pooling) {
        const Dims& window = a.get<Dims>("poolingWindowShape");
        const bool is_max = a.get<int64_t>("poolingType") == 0;
        if (window.empty()) {
            o = emit(is_max ? "GlobalMaxPool" : "GlobalAveragePool", {xn}, base);
        } else {
            const Dims& st = a.get<Dims>("strides");
            if ((static_cast<int>(window.size()) == rank && window[0] != 1) ||
                (static_cast<int>(st.size()) == rank && st[0] != 1))
                unsupported(f, "a window across channels (ONNX's pooling is per channel)");
            const Dims kernel = spatial_list(window, rank, spatial);
            const Dims strides = spatial_list(a.get<Dims>("strides"), rank, spatial);
            const Dims pad = spatial_list(a.get<Dims>("autoPadding"), rank, spatial);
            const bool ceil_mode = a.get<bool>("ceilOutDim");
            Dims lo, hi;
            for (int i = 0; i < spatial; ++i) {
                const size_t k = static_cast<size_t>(i);
                int64_t l = 0, h = 0;
                if (pad[k]) cntk_auto_pad(xs[k + 1], kernel[k], strides[k], 1, l, h);
                const int64_t span = xs[k + 1] + l + h - kernel[k];
                if (ceil_mode && span % strides[k] != 0) h += strides[k] - span % strides[k];
                if (l < 0 || h < 0) unsupported(f, "negative automatic padding");
                lo.push_back(l);
                hi.push_back(h);
            }
            o = emit(is_max ? "MaxPool" : "AveragePool", {xn}, base, &n);
            attr_ints(n, "kernel_shape", kernel);
            attr_ints(n, "strides", strides);
            Dims pads = lo;
            pads.insert(pads.end(), hi.begin(), hi.end());
            attr_ints(n, "pads", pads);
            if (!is_max) attr_i(n, "count_include_pad", a.get<bool>("includePad") ? 1 : 0);
        }
    } else {
        const Variable& w = inputs[0];
        const Dims& ws = w.shape();
        if (op == PrimitiveOp::convolution && a.get<int64_t>("groups") > 1 && ws.size() >= 2 &&
            ws[1] == xs[0])
            unsupported(f,
                        "a grouped kernel with every input channel (CNTK before 2.7) has no ONNX form; "
                        "ONNX's Conv takes [out, in / group, kernel...]");
        const Dims strides = spatial_list(a.get<Dims>("strides"), rank, spatial);
        const Dims dilation = spatial_list(a.get<Dims>("dilation"), rank, spatial);
        const Dims pad = spatial_list(a.get<Dims>("autoPadding"), rank, spatial);
        Dims pads_lo, pads_hi, out_pad;
        const Dims& ys = f.outputs()[0].shape();
        for (int i = 0; i < spatial; ++i) {
            const size_t k = static_cast<size_t>(i);
            const int64_t ext = (ws[k + 2] - 1) * dilation[k] + 1;
            int64_t l = 0, h = 0;
            if (op == PrimitiveOp::convolution) {
                if (pad[k]) cntk_auto_pad(xs[k + 1], ws[k + 2], strides[k], dilation[k], l, h);
                if (h < 0 && (xs[k + 1] + l - ext) / strides[k] == (xs[k + 1] + l + h - ext) / strides[k])
                    h = 0;
            } else {
                if (pad[k]) cntk_auto_pad(ys[k + 1], ws[k + 2], strides[k], dilation[k], l, h);
                if (h < 0) h = 0;
                const int64_t full = strides[k] * (xs[k + 1] - 1) + ext - l - h;
                out_pad.push_back(ys[k + 1] - full);
                if (out_pad.back() < 0 || out_pad.back() >= std::max(strides[k], dilation[k]))
                    unsupported(f, "its output shape needs an output_padding ONNX does not allow");
            }
            if (l < 0 || h < 0) unsupported(f, "negative automatic padding");
            pads_lo.push_back(l);
            pads_hi.push_back(h);
        }
        o = emit(op == PrimitiveOp::convolution ? "Conv" : "ConvTranspose", {xn, in[0]}, base, &n);
        attr_ints(n, "kernel_shape", Dims(ws.begin() + 2, ws.end()));
        attr_ints(n, "strides", strides);
        attr_ints(n, "dilations", dilation);
        Dims pads = pads_lo;
        pads.insert(pads.end(), pads_hi.begin(), pads_hi.end());
        attr_ints(n, "pads", pads);
        if (op == PrimitiveOp::convolution)
            attr_i(n, "group", a.get<int64_t>("groups"));
        else if (std::any_of(out_pad.begin(), out_pad.end(), [](int64_t p) { return p != 0; }))
            attr_ints(n, "output_padding", out_pad);
    }
    if (dyn == 0) o = emit("Squeeze", {o, const_i64({0})}, base);
    if (dyn == 2) o = split_frames(o, frames, f.outputs()[0].shape(), base);
    out = o;
}

}  // namespace ctk::detail::onnx_io::exporter

namespace ctk::detail::onnx_io {

void export_model(const FunctionPtr& model, onnx::ModelProto& out, int64_t opset_version) {
    out.set_ir_version(kExportIrVersion);
    out.set_producer_name("ctk");
    out.set_producer_version("2.7");
    out.set_model_version(1);
    auto* opset = out.add_opset_import();
    opset->set_domain("");
    opset->set_version(opset_version);
    onnx::GraphProto& g = *out.mutable_graph();
    g.set_name(model->name().empty() ? "ctk_model" : model->name());
    exporter::Exporter e(g, opset_version);
    e.find_loops(model->outputs());
    for (const Variable& v : model->outputs()) {
        std::string name = e.value(v, 0);
        onnx::NodeProto* n = g.add_node();
        n->set_op_type("Identity");
        const std::string out_name = name + "_output";
        n->set_name(out_name);
        n->add_input(name);
        n->add_output(out_name);
        e.add_value_info(*g.add_output(), out_name, v, false);
    }
    e.finish_loops();
}

}  // namespace ctk::detail::onnx_io
