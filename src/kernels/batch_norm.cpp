// Batch normalization op API: shape rules and validation. x is [N, C, spatial...] (or [N, C]);
// spatial statistics are per channel ([C] parameters), per-activation ones per sample element
// (parameters shaped like one sample, x.shape[1:]). The parameters and statistics share one dtype: x's,
// or f32 for 16-bit x (mixed precision keeps them, and the batch statistics, in f32).
#include <cmath>
#include <initializer_list>
#include <utility>

#include "ctk/kernels/kernel_table.h"
#include "ctk/kernels/tensor_ops.h"
#include "kernels/activation_layout.h"

namespace ctk {

namespace {

void check_float(const char* op, const char* operand, const Tensor& t) {
    CTK_CHECK(t.defined(), ValueError, op, ": operand '", operand, "' is undefined");
    CTK_CHECK(is_floating(t.dtype()), TypeError, op, ": operand '", operand, "' of shape ",
              t.shape().to_string(), " has dtype ", dtype_name(t.dtype()),
              "; a floating-point dtype is required");
}

// Checks x and the attributes; returns the shape every per-channel/per-activation operand must have.
Shape check_x(const char* op, const Tensor& x, const BatchNormAttrs& attrs) {
    check_float(op, "x", x);
    CTK_CHECK(x.rank() >= 2 && x.rank() <= 5, ShapeError, op, ": x of shape ", x.shape().to_string(),
              " must be [N, C] or [N, C, spatial...] with up to 3 spatial axes");
    CTK_CHECK(std::isfinite(attrs.epsilon) && attrs.epsilon >= 0, ValueError, op, ": epsilon ", attrs.epsilon,
              " must be finite and >= 0");
    if (attrs.spatial) return Shape{x.dim(1)};
    return Shape(Dims(x.shape().dims().begin() + 1, x.shape().dims().end()));
}

// The dtype of the parameters and statistics that go with x, given the scale: x's own, or f32 for 16-bit x.
DataType stats_dtype(const char* op, const Tensor& x, const Tensor& scale) {
    check_float(op, "scale", scale);
    const bool mixed =
        scale.dtype() == DataType::f32 && (x.dtype() == DataType::bf16 || x.dtype() == DataType::f16);
    CTK_CHECK(scale.dtype() == x.dtype() || mixed, TypeError, op, ": operand 'scale' (",
              dtype_name(scale.dtype()), " ", scale.shape().to_string(), ") must have x's dtype (",
              dtype_name(x.dtype()), " ", x.shape().to_string(), "), or be f32 for bf16 or f16 x");
    return scale.dtype();
}

void check_param(const char* op, const char* name, const Tensor& t, const Tensor& x, const Shape& expected,
                 const BatchNormAttrs& attrs, DataType stats) {
    check_float(op, name, t);
    CTK_CHECK(t.dtype() == stats, TypeError, op, ": operand '", name, "' (", dtype_name(t.dtype()), " ",
              t.shape().to_string(), ") must have the scale's dtype ", dtype_name(stats), " (x is ",
              dtype_name(x.dtype()), " ", x.shape().to_string(), ")");
    CTK_CHECK(t.shape() == expected, ShapeError, op, ": operand '", name, "' of shape ",
              t.shape().to_string(), " must have shape ", expected.to_string(),
              attrs.spatial ? " (one per channel)" : " (one per activation)", " for x of shape ",
              x.shape().to_string());
}

// y or dx: channels-last when x is and the CPU kernel keeps that layout (per-channel statistics of data
// of rank 3 to 5: the graph views an image batch as [N, C, H * W]), row-major otherwise.
Tensor activation_like(const Tensor& x, const BatchNormAttrs& attrs) {
    if (attrs.spatial && x.rank() >= 3 && x.rank() <= 5) return detail::activation_in_layout_of(x, x.shape());
    return Tensor::empty(x.shape(), x.dtype(), x.device());
}

}  // namespace

BatchNormResult batch_norm_training(const Tensor& x, const Tensor& scale, const Tensor& bias,
                                    const BatchNormAttrs& attrs) {
    constexpr const char* op = "batch_norm_training";
    const Shape param = check_x(op, x, attrs);
    const DataType stats = stats_dtype(op, x, scale);
    check_param(op, "scale", scale, x, param, attrs, stats);
    check_param(op, "bias", bias, x, param, attrs, stats);
    CTK_CHECK(x.dim(0) >= 1 && x.numel() > 0, ShapeError, op, ": x of shape ", x.shape().to_string(),
              " has no samples to take statistics over");
    Tensor outs[] = {activation_like(x, attrs), Tensor::empty(param, stats, x.device()),
                     Tensor::empty(param, stats, x.device())};
    const Tensor inputs[] = {x, scale, bias};
    dispatch(OpKind::batch_norm_training, inputs, outs, attrs);
    return {outs[0], outs[1], outs[2]};
}

Tensor batch_norm_inference(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                            const Tensor& var, const BatchNormAttrs& attrs) {
    constexpr const char* op = "batch_norm_inference";
    const Shape param = check_x(op, x, attrs);
    const DataType stats = stats_dtype(op, x, scale);
    check_param(op, "scale", scale, x, param, attrs, stats);
    check_param(op, "bias", bias, x, param, attrs, stats);
    check_param(op, "mean", mean, x, param, attrs, stats);
    check_param(op, "var", var, x, param, attrs, stats);
    Tensor y = activation_like(x, attrs);
    if (x.numel() == 0) return y;
    const Tensor inputs[] = {x, scale, bias, mean, var};
    dispatch(OpKind::batch_norm_inference, inputs, std::span<Tensor>(&y, 1), attrs);
    return y;
}

BatchNormGrads batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean,
                                   const Tensor& var, const BatchNormAttrs& attrs) {
    constexpr const char* op = "batch_norm_backward";
    const Shape param = check_x(op, x, attrs);
    check_float(op, "dy", dy);
    CTK_CHECK(dy.dtype() == x.dtype(), TypeError, op, ": dy (", dtype_name(dy.dtype()), " ",
              dy.shape().to_string(), ") and x (", dtype_name(x.dtype()), " ", x.shape().to_string(),
              ") have different dtypes");
    CTK_CHECK(dy.shape() == x.shape(), ShapeError, op, ": dy of shape ", dy.shape().to_string(),
              " must match x of shape ", x.shape().to_string());
    const DataType stats = stats_dtype(op, x, scale);
    check_param(op, "scale", scale, x, param, attrs, stats);
    check_param(op, "mean", mean, x, param, attrs, stats);
    check_param(op, "var", var, x, param, attrs, stats);
    CTK_CHECK(x.dim(0) >= 1 && x.numel() > 0, ShapeError, op, ": x of shape ", x.shape().to_string(),
              " has no samples");
    Tensor outs[] = {activation_like(x, attrs), Tensor::empty(param, stats, x.device()),
                     Tensor::empty(param, stats, x.device())};
    const Tensor inputs[] = {x, dy, scale, mean, var};
    dispatch(OpKind::batch_norm_backward, inputs, outs, attrs);
    return {outs[0], outs[1], outs[2]};
}

void batch_norm_update_running(const Tensor& batch_mean, const Tensor& batch_var, Tensor& running_mean,
                               Tensor& running_var, Tensor& running_count,
                               const BatchNormRunningAttrs& attrs) {
    constexpr const char* op = "batch_norm_update_running";
    const std::pair<const char*, const Tensor*> all[] = {{"batch_mean", &batch_mean},
                                                         {"batch_var", &batch_var},
                                                         {"running_mean", &running_mean},
                                                         {"running_var", &running_var},
                                                         {"running_count", &running_count}};
    for (const auto& [name, t] : all) {
        check_float(op, name, *t);
        CTK_CHECK(t->dtype() == batch_mean.dtype() && t->device() == batch_mean.device(), TypeError, op,
                  ": operand '", name, "' (", dtype_name(t->dtype()), " ", t->shape().to_string(), " on ",
                  t->device().to_string(), ") must have batch_mean's dtype and device (",
                  dtype_name(batch_mean.dtype()), " on ", batch_mean.device().to_string(), ")");
    }
    for (const Tensor* t : std::initializer_list<const Tensor*>{&batch_var, &running_mean, &running_var})
        CTK_CHECK(t->numel() == batch_mean.numel(), ShapeError, op, ": ", t->shape().to_string(),
                  " holds a different number of statistics than batch_mean ", batch_mean.shape().to_string());
    CTK_CHECK(running_count.numel() == 1, ShapeError, op, ": running_count of shape ",
              running_count.shape().to_string(), " must hold one value");
    for (const Tensor* t : {&running_mean, &running_var, &running_count})
        CTK_CHECK(t->is_contiguous(), ValueError, op,
                  ": the running statistics are updated in place and must be "
                  "contiguous, got a view of shape ",
                  t->shape().to_string());
    CTK_CHECK(attrs.samples > 0 && std::isfinite(attrs.samples), ValueError, op, ": samples ", attrs.samples,
              " must be positive and finite");
    CTK_CHECK(attrs.unbias > 0 && std::isfinite(attrs.unbias), ValueError, op, ": unbias ", attrs.unbias,
              " must be positive and finite");
    CTK_CHECK(!std::isnan(attrs.time_constant), ValueError, op, ": the time constant is NaN");
    const Tensor inputs[] = {batch_mean.contiguous(), batch_var.contiguous()};
    Tensor outs[] = {running_mean, running_var, running_count};
    dispatch(OpKind::batch_norm_running_update, inputs, outs, attrs);
}

}  // namespace ctk
