// ROI pooling op API: shape and attribute checks; the kernels (cpu/roi_pooling.cpp, cuda/roi_pooling.cu)
// see validated, contiguous operands.
#include <cmath>

#include "ctk/kernels/kernel_table.h"
#include "ctk/kernels/tensor_ops.h"

namespace ctk {

namespace {

void check_attrs(const char* op, const RoiPoolAttrs& a) {
    CTK_CHECK(a.output.size() == 2 && a.output[0] >= 1 && a.output[1] >= 1, ValueError, op,
              ": the output shape ", dims_to_string(a.output), " must be [h, w] with h, w >= 1");
    CTK_CHECK(a.spatial_scale > 0 && std::isfinite(a.spatial_scale), ValueError, op, ": spatial_scale ",
              a.spatial_scale, " must be positive");
}

Shape output_shape(const Shape& x, const Shape& rois, const RoiPoolAttrs& a) {
    return Shape{x[0], rois[1], x[1], a.output[0], a.output[1]};
}

}  // namespace

RoiPoolResult roi_pooling(const Tensor& x, const Tensor& rois, const RoiPoolAttrs& attrs) {
    constexpr const char* op = "roi_pooling";
    check_attrs(op, attrs);
    CTK_CHECK(x.defined() && rois.defined(), ValueError, op, ": undefined operand");
    CTK_CHECK(is_floating(x.dtype()), TypeError, op, ": x has dtype ", dtype_name(x.dtype()),
              "; a floating-point dtype is required");
    CTK_CHECK(rois.dtype() == x.dtype(), TypeError, op, ": rois (", dtype_name(rois.dtype()), ") and x (",
              dtype_name(x.dtype()), ") must have the same dtype");
    CTK_CHECK(x.rank() == 4, ShapeError, op, ": x of shape ", x.shape().to_string(), " must be [N, C, H, W]");
    CTK_CHECK(rois.rank() == 3 && rois.dim(0) == x.dim(0) && rois.dim(2) == 4, ShapeError, op,
              ": rois of shape ", rois.shape().to_string(), " must be [N, R, 4] with N = ", x.dim(0), " (x ",
              x.shape().to_string(), ")");
    CTK_CHECK(x.dim(2) >= 1 && x.dim(3) >= 1, ShapeError, op, ": x of shape ", x.shape().to_string(),
              " has an empty spatial axis");
    if (rois.device().is_cpu())
        for (double v : rois.to_vector<double>())
            CTK_CHECK(std::isfinite(v), ValueError, op, ": an ROI coordinate is ", v, " (rois ",
                      rois.shape().to_string(), ")");
    const Shape y_shape = output_shape(x.shape(), rois.shape(), attrs);
    Tensor outs[] = {Tensor::empty(y_shape, x.dtype(), x.device()),
                     Tensor::empty(y_shape, DataType::i64, x.device())};
    if (outs[0].numel() > 0) {
        const Tensor inputs[] = {x.contiguous(), rois.contiguous()};
        dispatch(OpKind::roi_pooling, inputs, outs, attrs);
    }
    return {outs[0], outs[1]};
}

Tensor roi_pooling_backward(const Tensor& dy, const Tensor& argmax, const Tensor& rois, const Shape& x_shape,
                            const RoiPoolAttrs& attrs) {
    constexpr const char* op = "roi_pooling_backward";
    check_attrs(op, attrs);
    CTK_CHECK(dy.defined() && argmax.defined() && rois.defined(), ValueError, op, ": undefined operand");
    CTK_CHECK(is_floating(dy.dtype()) && rois.dtype() == dy.dtype(), TypeError, op, ": dy (",
              dtype_name(dy.dtype()), ") and rois (", dtype_name(rois.dtype()),
              ") must share a floating-point dtype");
    CTK_CHECK(argmax.dtype() == DataType::i64 && argmax.shape() == dy.shape(), TypeError, op,
              ": argmax must be the int64 tensor roi_pooling returned with y of dy's shape ",
              dy.shape().to_string());
    CTK_CHECK(x_shape.rank() == 4 && rois.rank() == 3 && rois.dim(2) == 4 &&
                  dy.shape() == output_shape(x_shape, rois.shape(), attrs) && rois.dim(0) == x_shape[0],
              ShapeError, op, ": dy of shape ", dy.shape().to_string(), " is not the ROI pooling of x ",
              x_shape.to_string(), " with rois ", rois.shape().to_string(), " into ",
              dims_to_string(attrs.output));
    Tensor outs[] = {Tensor::zeros(x_shape, dy.dtype(), dy.device())};
    if (dy.numel() > 0 && outs[0].numel() > 0) {
        const Tensor inputs[] = {dy.contiguous(), argmax.contiguous(), rois.contiguous()};
        dispatch(OpKind::roi_pooling_backward, inputs, outs, attrs);
    }
    return outs[0];
}

}  // namespace ctk
