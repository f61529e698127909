// Element-wise op API: shape rules (NumPy broadcasting), CNTK's default attribute values, dispatch.
#include <cmath>
#include <limits>

#include "ctk/kernels/kernel_table.h"
#include "ctk/kernels/tensor_ops.h"

namespace ctk {

ScalarAttrs default_scalars(OpKind op) {
    switch (op) {
        case OpKind::elu:
            return {1.0, 0.0};
        case OpKind::selu:
            return {1.0507009873554804934193349852946, 1.6732632423543772848170429916717};
        case OpKind::leaky_relu:
            return {0.01, 0.0};
        case OpKind::hard_sigmoid:
            return {0.2, 0.5};
        case OpKind::clip:
            return {-std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity()};
        default:
            return {};
    }
}

namespace {

void check_float(const char* op, const char* operand, const Tensor& t) {
    CTK_CHECK(t.defined(), ValueError, op, ": operand '", operand, "' is undefined");
    CTK_CHECK(is_floating(t.dtype()), TypeError, op, ": operand '", operand, "' of shape ",
              t.shape().to_string(), " has dtype ", dtype_name(t.dtype()),
              "; a floating-point dtype is required");
}

void check_same_dtype(const char* op, const Tensor& a, const Tensor& b) {
    CTK_CHECK(a.dtype() == b.dtype(), TypeError, op, ": operands have different dtypes (",
              dtype_name(a.dtype()), " ", a.shape().to_string(), " and ", dtype_name(b.dtype()), " ",
              b.shape().to_string(), "); cast one first");
}

}  // namespace

Tensor unary(OpKind op, const Tensor& x, ScalarAttrs scalars) {
    CTK_CHECK(is_unary(op), ValueError, "unary: ", op_name(op), " is not a unary element-wise op");
    check_float(op_name(op), "x", x);
    if (op == OpKind::clip)  // a min above the max is allowed (the max wins, as NumPy and CNTK); NaN is not
        CTK_CHECK(!std::isnan(scalars.alpha) && !std::isnan(scalars.beta), ValueError, "clip: a NaN bound");
    Tensor out = empty_in_layout_of(x, x.shape(), x.dtype());
    const Tensor inputs[] = {x};
    dispatch(op, inputs, std::span<Tensor>(&out, 1), scalars);
    return out;
}

Tensor unary_backward(OpKind op, const Tensor& x, const Tensor& y, const Tensor& dy, ScalarAttrs scalars) {
    CTK_CHECK(is_unary(op), ValueError, "unary_backward: ", op_name(op), " is not a unary element-wise op");
    check_float("unary_backward", "x", x);
    check_float("unary_backward", "dy", dy);
    CTK_CHECK(dy.shape() == x.shape(), ShapeError, "unary_backward(", op_name(op), "): dy shape ",
              dy.shape().to_string(), " differs from x shape ", x.shape().to_string());
    check_same_dtype("unary_backward", x, dy);
    Tensor yv = y.defined() ? y : unary(op, x, scalars);
    CTK_CHECK(yv.shape() == x.shape(), ShapeError, "unary_backward(", op_name(op), "): y shape ",
              yv.shape().to_string(), " differs from x shape ", x.shape().to_string());
    Tensor dx = empty_in_layout_of(is_channels_last(dy) ? dy : x, x.shape(), x.dtype());
    const Tensor inputs[] = {x, yv, dy};
    dispatch(OpKind::unary_backward, inputs, std::span<Tensor>(&dx, 1), UnaryGradAttrs{op, scalars});
    return dx;
}

void binary_into(OpKind op, const Tensor& a, const Tensor& b, Tensor& out) {
    CTK_CHECK(is_binary(op), ValueError, "binary: ", op_name(op), " is not a binary element-wise op");
    check_float(op_name(op), "a", a);
    check_float(op_name(op), "b", b);
    check_same_dtype(op_name(op), a, b);
    Shape shape = broadcast_shapes(a.shape(), b.shape(), op_name(op));
    CTK_CHECK(out.shape() == shape && out.dtype() == a.dtype(), ShapeError, op_name(op), ": output ",
              out.to_string(), " does not match the broadcast result ", shape.to_string(), " ",
              dtype_name(a.dtype()));
    const Tensor inputs[] = {a.broadcast_to(shape), b.broadcast_to(shape)};
    dispatch(op, inputs, std::span<Tensor>(&out, 1), NoAttrs{});
}

Tensor binary(OpKind op, const Tensor& a, const Tensor& b) {
    CTK_CHECK(is_binary(op), ValueError, "binary: ", op_name(op), " is not a binary element-wise op");
    check_float(op_name(op), "a", a);
    check_float(op_name(op), "b", b);
    Tensor out = empty_in_layout_of(is_channels_last(a) ? a : b,
                                    broadcast_shapes(a.shape(), b.shape(), op_name(op)), a.dtype());
    binary_into(op, a, b, out);
    return out;
}

#define CTK_DEFINE_UNARY(name, attrs)                                 \
    Tensor name(const Tensor& x) {                                    \
        return unary(OpKind::name, x, default_scalars(OpKind::name)); \
    }
CTK_UNARY_OPS(CTK_DEFINE_UNARY)
#undef CTK_DEFINE_UNARY

Tensor elu(const Tensor& x, double alpha) {
    return unary(OpKind::elu, x, {alpha, 0.0});
}
Tensor leaky_relu(const Tensor& x, double alpha) {
    return unary(OpKind::leaky_relu, x, {alpha, 0.0});
}
Tensor clip(const Tensor& x, double min_value, double max_value) {
    return unary(OpKind::clip, x, {min_value, max_value});
}
Tensor hard_sigmoid(const Tensor& x, double alpha, double beta) {
    return unary(OpKind::hard_sigmoid, x, {alpha, beta});
}

#define CTK_DEFINE_BINARY(name, attrs)              \
    Tensor name(const Tensor& a, const Tensor& b) { \
        return binary(OpKind::name, a, b);          \
    }
CTK_BINARY_OPS(CTK_DEFINE_BINARY)
#undef CTK_DEFINE_BINARY

Tensor element_select(const Tensor& cond, const Tensor& a, const Tensor& b) {
    check_float("element_select", "a", a);
    check_float("element_select", "b", b);
    CTK_CHECK(cond.defined(), ValueError, "element_select: operand 'cond' is undefined");
    check_same_dtype("element_select", a, b);
    Shape shape = broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "element_select"), b.shape(),
                                   "element_select");
    Tensor c = cond.dtype() == a.dtype() ? cond : cond.to(a.dtype());
    Tensor out = empty_in_layout_of(is_channels_last(a) ? a : b, shape, a.dtype());
    const Tensor inputs[] = {c.broadcast_to(shape), a.broadcast_to(shape), b.broadcast_to(shape)};
    dispatch(OpKind::element_select, inputs, std::span<Tensor>(&out, 1), NoAttrs{}, a.dtype());
    return out;
}

Tensor cast(const Tensor& x, DataType dtype) {
    CTK_CHECK(x.defined(), ValueError, "cast: operand 'x' is undefined");
    Tensor out = empty_in_layout_of(x, x.shape(), dtype);
    const Tensor inputs[] = {x};
    dispatch(OpKind::cast, inputs, std::span<Tensor>(&out, 1), CastAttrs{dtype});
    return out;
}

}  // namespace ctk
