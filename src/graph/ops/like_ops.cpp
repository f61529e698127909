// Values shaped like an operand, and the straight-through estimator: ones_like and zeros_like (CNTK's
// ConstantOp), eye_like (EyeLikeOp), straight_through (StraightThrough). The first three carry no
// gradient; straight_through's is CNTK's surrogate, not its derivative.
#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

void forward_constant_like(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    c.outputs.push_back(
        Value(Tensor::full(x.shape(), c.attrs.get<double>("fillValue"), x.dtype(), x.device()),
              c.inputs[0].layout()));
}

// Two axes counting the batch axis (CNTK's rule): [#] x [m] (rows are the samples) or [] x [n, m].
std::vector<OutputSpec> infer_eye_like(InferContext& c) {
    const Variable& x = c.inputs[0];
    CTK_CHECK(x.dynamic_rank() + x.rank() == 2, ShapeError, c.where, ": the operand ", x.to_string(),
              " must have exactly 2 axes, counting the dynamic ones");
    CTK_CHECK(!x.has_sequence_axis(), ShapeError, c.where, ": the operand ", x.to_string(),
              " cannot have a sequence axis");
    return infer_identity(c);
}

// Row i holds its 1 at column i (none past the last column): one-hot rows, kept in index form when
// sparse output is asked for.
void forward_eye_like(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const int64_t rows = x.dim(0), cols = x.dim(1);
    std::vector<int64_t> hot(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) hot[static_cast<size_t>(i)] = i < cols ? i : -1;
    // Made (and checked) on the host, then moved: a check of GPU indices would read them back.
    Value eye = Value::one_hot(Tensor::from_vector(hot, Shape{rows}), cols, x.dtype()).to(x.device());
    if (!c.attrs.get<bool>("OutputSparse")) eye = Value(eye.data().to(x.device()));
    c.outputs.push_back(eye);
}

// CNTK's straight-through estimator: y = x > 0 ? 1 : -1 (0 gives -1), dx = dy where |x| <= 1.
void forward_straight_through(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const Tensor zero = scalar_like(0.0, x), one = scalar_like(1.0, x);  // made where x is: no upload
    c.outputs.push_back(
        Value(element_select(greater(x, zero), one, negate(one)).broadcast_to(x.shape()).contiguous()));
}
void backward_straight_through(BackwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const Tensor one = scalar_like(1.0, x);
    c.input_grads[0] = element_times(c.output_grads[0], less_equal(ctk::abs(x), one).to(x.dtype()));
}

}  // namespace

void register_like_ops(OpTable& t) {
    t.add(PrimitiveOp::constant_like,
          OpDef{"ConstantOp", 1, 1, infer_identity, forward_constant_like, nullptr});
    t.add(PrimitiveOp::eye_like, OpDef{"EyeLikeOp", 1, 1, infer_eye_like, forward_eye_like, nullptr, false});
    t.add(PrimitiveOp::straight_through, OpDef{"StraightThrough", 1, 1, infer_identity,
                                               forward_straight_through, backward_straight_through});
    t.backward_reads(PrimitiveOp::straight_through, reads_input(0));
    t.autocast({PrimitiveOp::constant_like, PrimitiveOp::eye_like, PrimitiveOp::straight_through},
               Autocast::follow);
}

}  // namespace detail

FunctionPtr ones_like(const Variable& x, const std::string& name) {
    return detail::make_op(PrimitiveOp::constant_like, {x}, Attributes{{"fillValue", 1.0}}, name);
}
FunctionPtr zeros_like(const Variable& x, const std::string& name) {
    return detail::make_op(PrimitiveOp::constant_like, {x}, Attributes{{"fillValue", 0.0}}, name);
}
FunctionPtr eye_like(const Variable& x, bool sparse_output, const std::string& name) {
    return detail::make_op(PrimitiveOp::eye_like, {x}, Attributes{{"OutputSparse", sparse_output}}, name);
}
FunctionPtr straight_through(const Variable& x, const std::string& name) {
    return detail::make_op(PrimitiveOp::straight_through, {x}, {}, name);
}

}  // namespace ctk
