// Softmax family API: softmax, log_softmax, hardmax and the two backward rules, along one axis.
#include "ctk/kernels/kernel_table.h"
#include "ctk/kernels/tensor_ops.h"

namespace ctk {

namespace {

Tensor run_axis_op(OpKind op, std::initializer_list<Tensor> inputs, int axis) {
    const Tensor& x = *inputs.begin();
    CTK_CHECK(x.defined(), ValueError, op_name(op), ": operand is undefined");
    CTK_CHECK(is_floating(x.dtype()), TypeError, op_name(op), ": operand of shape ", x.shape().to_string(),
              " has dtype ", dtype_name(x.dtype()), "; a floating-point dtype is required");
    CTK_CHECK(x.rank() > 0, ValueError, op_name(op), ": operand is a scalar; it has no axis ", axis);
    int a = x.shape().normalize_axis(axis, op_name(op));
    for (const Tensor& t : inputs) {
        CTK_CHECK(t.shape() == x.shape(), ShapeError, op_name(op), ": operand shapes ", x.shape().to_string(),
                  " and ", t.shape().to_string(), " differ");
        CTK_CHECK(t.dtype() == x.dtype(), TypeError, op_name(op), ": operand dtypes ", dtype_name(x.dtype()),
                  " and ", dtype_name(t.dtype()), " differ");
    }
    Tensor out = Tensor::empty(x.shape(), x.dtype(), x.device());
    std::vector<Tensor> in(inputs);
    dispatch(op, in, std::span<Tensor>(&out, 1), AxisAttrs{a});
    return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int axis) {
    return run_axis_op(OpKind::softmax, {x}, axis);
}
Tensor log_softmax(const Tensor& x, int axis) {
    return run_axis_op(OpKind::log_softmax, {x}, axis);
}
Tensor hardmax(const Tensor& x, int axis) {
    return run_axis_op(OpKind::hardmax, {x}, axis);
}
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int axis) {
    return run_axis_op(OpKind::softmax_backward, {y, dy}, axis);
}
Tensor log_softmax_backward(const Tensor& y, const Tensor& dy, int axis) {
    return run_axis_op(OpKind::log_softmax_backward, {y, dy}, axis);
}

}  // namespace ctk
