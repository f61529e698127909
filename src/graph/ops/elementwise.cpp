// Element-wise graph ops: every unary and binary kernel op, element_select and n-ary sum. Shape rule:
// NumPy broadcasting of the static shapes (parameters' inferred dims taken from the other operands);
// dynamic axes must agree. Backward rules are written with the eager ops, so they run on every backend.
#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

ScalarAttrs scalars_of(const Attributes& a, OpKind op) {
    ScalarAttrs d = default_scalars(op);
    return {a.get_or<double>("alpha", d.alpha), a.get_or<double>("beta", d.beta)};
}

std::vector<OutputSpec> infer_unary(InferContext& c) {
    const Variable& x = c.inputs[0];
    CTK_CHECK(is_floating(x.dtype()), TypeError, c.where, ": operand ", x.to_string(),
              " is not floating-point");
    return {{x.shape(), x.dtype(), x.dynamic_axes()}};
}

template <OpKind K>
void forward_unary(ForwardContext& c) {
    c.outputs.push_back(Value(unary(K, c.inputs[0].data(), scalars_of(c.attrs, K))));
}

uint32_t unary_backward_reads(OpKind k);

template <OpKind K>
void backward_unary(BackwardContext& c) {
    // The operand the gradient does not read may be released (a NaN broadcast): hand the kernel the one
    // it reads in both places, so that it keeps its dense, vectorised path.
    const uint32_t reads = unary_backward_reads(K);
    const Tensor& dy = c.output_grads[0];
    const Tensor& x = reads & kReadsInputs    ? c.inputs[0].data()
                      : reads & kReadsOutputs ? c.outputs[0].data()
                                              : dy;
    const Tensor& y = reads & kReadsOutputs ? c.outputs[0].data() : x;
    c.input_grads[0] = unary_backward(K, x, y, dy, scalars_of(c.attrs, K));
}

std::vector<OutputSpec> infer_broadcast(InferContext& c) {
    Dims shape = broadcast_static(c.inputs, c.where);
    std::vector<Variable> floating(c.inputs.begin() + (c.op == PrimitiveOp::element_select ? 1 : 0),
                                   c.inputs.end());
    return {{shape, common_dtype(floating, c.where), merge_dynamic_axes(c.inputs, c.where)}};
}

// The operands aligned to the output: [out_dyn..., 1..., static...] each.
struct Aligned {
    std::vector<Tensor> t;
    int out_dyn = 0, out_static = 0;
};
Aligned aligned_operands(std::span<const Value> inputs, std::span<const Variable> vars) {
    Aligned a;
    for (const Variable& v : vars) {
        a.out_dyn = std::max(a.out_dyn, v.dynamic_rank());
        a.out_static = std::max(a.out_static, v.rank());
    }
    for (size_t i = 0; i < inputs.size(); ++i)
        a.t.push_back(align(inputs[i].data(), vars[i].dynamic_rank(), a.out_dyn, a.out_static));
    return a;
}

template <OpKind K>
void forward_binary(ForwardContext& c) {
    Aligned a = aligned_operands(c.inputs, c.input_vars);
    c.outputs.push_back(Value(binary(K, a.t[0], a.t[1])));
}

template <OpKind K>
void backward_binary(BackwardContext& c) {
    Aligned al = aligned_operands(c.inputs, c.input_vars);
    const Tensor &a = al.t[0], &b = al.t[1], &y = c.outputs[0].data(), &dy = c.output_grads[0];
    Tensor ga, gb;
    switch (K) {
        case OpKind::plus:
            ga = gb = dy;
            break;
        case OpKind::minus:
            ga = dy, gb = negate(dy);
            break;
        case OpKind::element_times:
            ga = element_times(dy, b), gb = element_times(dy, a);
            break;
        case OpKind::element_divide:
            ga = element_divide(dy, b), gb = negate(element_divide(element_times(dy, y), b));
            break;
        case OpKind::pow:
            ga = element_times(dy, element_times(b, ctk::pow(a, minus(b, scalar_like(1.0, b)))));
            // CNTK: d/d exponent is 0 where the base is <= 0 (log has no value there).
            if (c.needs[1])
                gb = element_select(greater(a, scalar_like(0.0, a)),
                                    element_times(element_times(dy, y), ctk::log(a)), scalar_like(0.0, dy));
            break;
        case OpKind::element_max:
            ga = element_times(dy, greater_equal(a, b)), gb = element_times(dy, less(a, b));
            break;
        case OpKind::element_min:
            ga = element_times(dy, less_equal(a, b)), gb = element_times(dy, greater(a, b));
            break;
        case OpKind::log_add_exp:
            ga = element_times(dy, ctk::exp(minus(a, y))), gb = element_times(dy, ctk::exp(minus(b, y)));
            break;
        case OpKind::param_relu: {  // operands (x, alpha); at x = 0 the slope is 1, as CNTK's
            Tensor pos = greater_equal(a, scalar_like(0.0, a));
            ga = element_select(pos, dy, element_times(dy, b));
            gb = element_select(pos, scalar_like(0.0, dy), element_times(dy, a));
            break;
        }
        default:
            CTK_THROW(Error, c.where, ": no gradient rule");
    }
    if (c.needs[0])
        c.input_grads[0] =
            reduce_to_operand(ga, c.inputs[0].data(), c.dyn_rank(0), al.out_dyn, al.out_static);
    if (c.needs[1])
        c.input_grads[1] =
            reduce_to_operand(gb, c.inputs[1].data(), c.dyn_rank(1), al.out_dyn, al.out_static);
}

void forward_select(ForwardContext& c) {
    Aligned a = aligned_operands(c.inputs, c.input_vars);
    c.outputs.push_back(Value(element_select(a.t[0], a.t[1], a.t[2])));
}

void backward_select(BackwardContext& c) {
    Aligned al = aligned_operands(c.inputs, c.input_vars);
    const Tensor& dy = c.output_grads[0];
    Tensor zero = scalar_like(0.0, dy);
    if (c.needs[1])
        c.input_grads[1] = reduce_to_operand(element_select(al.t[0], dy, zero), c.inputs[1].data(),
                                             c.dyn_rank(1), al.out_dyn, al.out_static);
    if (c.needs[2])
        c.input_grads[2] = reduce_to_operand(element_select(al.t[0], zero, dy), c.inputs[2].data(),
                                             c.dyn_rank(2), al.out_dyn, al.out_static);
}

const char* cntk_name_of(OpKind k) {
    switch (k) {
        case OpKind::negate:
            return "Negate";
        case OpKind::sigmoid:
            return "StableSigmoid";
        case OpKind::tanh:
            return "Tanh";
        case OpKind::relu:
            return "ReLU";
        case OpKind::exp:
            return "Exp";
        case OpKind::log:
            return "Log";
        case OpKind::sqrt:
            return "Sqrt";
        case OpKind::floor:
            return "Floor";
        case OpKind::abs:
            return "Abs";
        case OpKind::reciprocal:
            return "Reciprocal";
        case OpKind::elu:
            return "ELU";
        case OpKind::plus:
            return "Plus";
        case OpKind::minus:
            return "Minus";
        case OpKind::element_times:
            return "ElementTimes";
        case OpKind::element_divide:
            return "ElementDivide";
        case OpKind::equal:
            return "Equal";
        case OpKind::not_equal:
            return "NotEqual";
        case OpKind::less:
            return "Less";
        case OpKind::less_equal:
            return "LessEqual";
        case OpKind::greater:
            return "Greater";
        case OpKind::greater_equal:
            return "GreaterEqual";
        case OpKind::log_add_exp:
            return "LogPlus";
        case OpKind::pow:
            return "Pow";
        default:
            return op_name(k);
    }
}

bool differentiable(OpKind k) {
    switch (k) {
        case OpKind::element_not:
        case OpKind::equal:
        case OpKind::not_equal:
        case OpKind::less:
        case OpKind::less_equal:
        case OpKind::greater:
        case OpKind::greater_equal:
        case OpKind::element_and:
        case OpKind::element_or:
        case OpKind::element_xor:
            return false;
        default:
            return true;
    }
}

// What each element-wise gradient reads (the kernels' unary_backward and backward_binary above):
// x, y = f(x), both, or only shapes.
uint32_t unary_backward_reads(OpKind k) {
    switch (k) {
        case OpKind::negate:
        case OpKind::floor:
        case OpKind::ceil:
        case OpKind::round:
        case OpKind::element_not:
            return kReadsNothing;
        case OpKind::sqrt:
        case OpKind::exp:
        case OpKind::tan:
        case OpKind::tanh:
        case OpKind::reciprocal:
        case OpKind::sigmoid:
        case OpKind::relu:
            return kReadsOutputs;
        case OpKind::elu:
        case OpKind::selu:
            return kReadsInputs | kReadsOutputs;
        default:
            return kReadsInputs;
    }
}
uint32_t binary_backward_reads(OpKind k) {
    switch (k) {
        case OpKind::plus:
        case OpKind::minus:
            return kReadsNothing;
        case OpKind::element_times:
        case OpKind::element_max:
        case OpKind::element_min:
        case OpKind::param_relu:
            return kReadsInputs;
        default:
            return kReadsInputs | kReadsOutputs;
    }
}

// The element-wise ops that take 16-bit operands as they come in the autocast rewrite: arithmetic that
// stays exact enough and activations; the transcendentals (exp, log, pow, ...) get f32.
bool follows_16_bit(OpKind op) {
    switch (op) {
        case OpKind::plus:
        case OpKind::minus:
        case OpKind::element_times:
        case OpKind::element_max:
        case OpKind::element_min:
        case OpKind::negate:
        case OpKind::abs:
        case OpKind::relu:
        case OpKind::sigmoid:
        case OpKind::tanh:
        case OpKind::elu:
        case OpKind::selu:
        case OpKind::leaky_relu:
        case OpKind::param_relu:
        case OpKind::hard_sigmoid:
        case OpKind::softsign:
        case OpKind::clip:
        case OpKind::floor:
        case OpKind::ceil:
        case OpKind::round:
            return true;
        default:
            return false;
    }
}

}  // namespace

void register_elementwise_ops(OpTable& t) {
#define CTK_REGISTER_UNARY(name, attrs)                                                     \
    t.add(PrimitiveOp::name,                                                                \
          OpDef{cntk_name_of(OpKind::name), 1, 1, infer_unary, forward_unary<OpKind::name>, \
                differentiable(OpKind::name) ? backward_unary<OpKind::name> : nullptr});    \
    t.backward_reads(PrimitiveOp::name, unary_backward_reads(OpKind::name));                \
    if (follows_16_bit(OpKind::name)) t.autocast({PrimitiveOp::name}, Autocast::follow);
    CTK_UNARY_OPS(CTK_REGISTER_UNARY)
#undef CTK_REGISTER_UNARY
#define CTK_REGISTER_BINARY(name, attrs)                                                         \
    t.add(PrimitiveOp::name,                                                                     \
          OpDef{cntk_name_of(OpKind::name), 2, 2, infer_broadcast, forward_binary<OpKind::name>, \
                differentiable(OpKind::name) ? backward_binary<OpKind::name> : nullptr});        \
    t.backward_reads(PrimitiveOp::name, binary_backward_reads(OpKind::name));                    \
    if (follows_16_bit(OpKind::name)) t.autocast({PrimitiveOp::name}, Autocast::follow);
    CTK_BINARY_OPS(CTK_REGISTER_BINARY)
#undef CTK_REGISTER_BINARY
    t.add(PrimitiveOp::element_select,
          OpDef{"Select", 3, 3, infer_broadcast, forward_select, backward_select});
    t.backward_reads(PrimitiveOp::element_select, reads_input(0));  // the condition
    t.autocast({PrimitiveOp::element_select}, Autocast::follow);
}

}  // namespace detail

// ---- constructors ----

namespace {
Attributes scalars(double alpha, double beta) {
    return Attributes{{"alpha", alpha}, {"beta", beta}};
}
}  // namespace

#define CTK_DEFINE_GRAPH_UNARY(op, attrs)                                             \
    FunctionPtr op(const Variable& x, const std::string& name) {                      \
        ScalarAttrs d = default_scalars(OpKind::op);                                  \
        return detail::make_op(PrimitiveOp::op, {x}, scalars(d.alpha, d.beta), name); \
    }
CTK_UNARY_OPS(CTK_DEFINE_GRAPH_UNARY)
#undef CTK_DEFINE_GRAPH_UNARY

FunctionPtr elu(const Variable& x, double alpha, const std::string& name) {
    return detail::make_op(PrimitiveOp::elu, {x}, scalars(alpha, 0.0), name);
}
FunctionPtr leaky_relu(const Variable& x, double alpha, const std::string& name) {
    return detail::make_op(PrimitiveOp::leaky_relu, {x}, scalars(alpha, 0.0), name);
}
FunctionPtr clip(const Variable& x, double min_value, double max_value, const std::string& name) {
    return detail::make_op(PrimitiveOp::clip, {x}, scalars(min_value, max_value), name);
}
FunctionPtr hard_sigmoid(const Variable& x, double alpha, double beta, const std::string& name) {
    return detail::make_op(PrimitiveOp::hard_sigmoid, {x}, scalars(alpha, beta), name);
}

namespace {
// CNTK broadcasts an operand with only the batch axis ([#]) along the frames of a sequence operand
// ([#, *]) of the same batch axis. Not for values computed from placeholders: their axes are not final.
bool broadcasts_along(const Variable& batch_only, const Variable& sequence) {
    const auto& b = batch_only.dynamic_axes();
    if (b.size() != 1 || !batch_only.has_batch_axis() || !sequence.has_sequence_axis() ||
        sequence.dynamic_axes().front() != b.front() || batch_only.is_placeholder())
        return false;
    const FunctionPtr owner = batch_only.owner();
    return !owner || combine({batch_only})->placeholders().empty();
}
std::pair<Variable, Variable> sequence_broadcast(const Variable& a, const Variable& b) {
    if (broadcasts_along(b, a)) return {a, sequence::broadcast_as(b, a)->output()};
    if (broadcasts_along(a, b)) return {sequence::broadcast_as(a, b)->output(), b};
    return {a, b};
}
}  // namespace

#define CTK_DEFINE_GRAPH_BINARY(op, attrs)                                            \
    FunctionPtr op(const Variable& a0, const Variable& b0, const std::string& name) { \
        const auto [a, b] = sequence_broadcast(a0, b0);                               \
        if (PrimitiveOp::op == PrimitiveOp::param_relu)                               \
            return detail::make_op(PrimitiveOp::op, {b, a}, {}, name);                \
        return detail::make_op(PrimitiveOp::op, {a, b}, {}, name);                    \
    }
CTK_BINARY_OPS(CTK_DEFINE_GRAPH_BINARY)
#undef CTK_DEFINE_GRAPH_BINARY

FunctionPtr element_select(const Variable& condition, const Variable& then_value, const Variable& else_value,
                           const std::string& name) {
    return detail::make_op(PrimitiveOp::element_select, {condition, then_value, else_value}, {}, name);
}

FunctionPtr sum(const std::vector<Variable>& operands, const std::string& name) {
    CTK_CHECK(!operands.empty(), ValueError, "sum '", name, "': no operands");
    if (operands.size() == 1) return alias(operands[0], name);
    Variable acc = operands[0];
    for (size_t i = 1; i + 1 < operands.size(); ++i) acc = plus(acc, operands[i]);
    return plus(acc, operands.back(), name);
}

}  // namespace ctk
