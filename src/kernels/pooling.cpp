// Pooling op API: attribute defaults (CNTK's: stride 1, no padding), shape rules and validation, and
// cropping for negative pads, so kernels only see pads in [0, kernel).
#include <algorithm>

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

Dims per_axis(const Dims& v, int spatial, int64_t fill, const char* op, const char* name) {
    if (v.empty()) return Dims(static_cast<size_t>(spatial), fill);
    CTK_CHECK(static_cast<int>(v.size()) == spatial, ValueError, op, ": ", name, " ", dims_to_string(v),
              " has ", v.size(), " entries but x has ", spatial, " spatial axes");
    return v;
}

struct Geometry {
    PoolAttrs attrs;  // every per-axis vector filled in
    Dims out;         // output spatial dims
};

Geometry check_geometry(const char* op, const Shape& x, const PoolAttrs& attrs) {
    CTK_CHECK(x.rank() >= 3 && x.rank() <= 5, ShapeError, op, ": x of shape ", x.to_string(),
              " must be [N, C, spatial...] with 1 to 3 spatial axes");
    for (int i = 1; i < x.rank(); ++i)
        CTK_CHECK(x[i] >= 1, ShapeError, op, ": x of shape ", x.to_string(),
                  " has an empty channel or spatial axis");
    const int spatial = x.rank() - 2;
    Geometry g;
    PoolAttrs& a = g.attrs;
    a.kind = attrs.kind;
    a.include_pad = attrs.include_pad;
    CTK_CHECK(static_cast<int>(attrs.kernel.size()) == spatial, ValueError, op, ": kernel ",
              dims_to_string(attrs.kernel), " must have one entry per spatial axis of x ", x.to_string());
    a.kernel = attrs.kernel;
    a.strides = per_axis(attrs.strides, spatial, 1, op, "strides");
    a.pad_lo = per_axis(attrs.pad_lo, spatial, 0, op, "pad_lo");
    a.pad_hi = per_axis(attrs.pad_hi, spatial, 0, op, "pad_hi");
    for (int i = 0; i < spatial; ++i) {
        const size_t s = static_cast<size_t>(i);
        const int64_t in = x[i + 2], k = a.kernel[s], lo = a.pad_lo[s], hi = a.pad_hi[s];
        CTK_CHECK(k >= 1 && a.strides[s] >= 1, ValueError, op, ": kernel ", dims_to_string(a.kernel),
                  " and strides ", dims_to_string(a.strides), " must be >= 1");
        // A pad of a whole kernel or more would let a window hold padding only.
        CTK_CHECK(lo < k && hi < k, ValueError, op, ": pads ", dims_to_string(a.pad_lo), " / ",
                  dims_to_string(a.pad_hi), " must be smaller than the kernel ", dims_to_string(a.kernel));
        CTK_CHECK(in + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0) >= 1, ShapeError, op,
                  ": negative pads ", dims_to_string(a.pad_lo), " / ", dims_to_string(a.pad_hi),
                  " crop all of spatial axis ", i, " of x ", x.to_string());
        CTK_CHECK(in + lo + hi >= k, ShapeError, op, ": kernel ", dims_to_string(a.kernel),
                  " does not fit spatial axis ", i, " of x ", x.to_string(), " padded by ", lo, " + ", hi);
        g.out.push_back((in + lo + hi - k) / a.strides[s] + 1);
    }
    return g;
}

Shape output_shape(const Shape& x, const Dims& out) {
    Dims d = {x[0], x[1]};
    d.insert(d.end(), out.begin(), out.end());
    return Shape(d);
}

// Negative pads crop x (see convolution.cpp); returns the cropped view and sets the pads to >= 0.
Tensor crop_negative_pads(const Tensor& x, PoolAttrs& a) {
    Tensor v = x;
    for (size_t i = 0; i < a.pad_lo.size(); ++i) {
        const int axis = static_cast<int>(i) + 2;
        const int64_t lo = std::min<int64_t>(a.pad_lo[i], 0), hi = std::min<int64_t>(a.pad_hi[i], 0);
        if (lo == 0 && hi == 0) continue;
        v = v.slice(axis, -lo, v.dim(axis) + hi);
        a.pad_lo[i] -= lo;
        a.pad_hi[i] -= hi;
    }
    return v;
}

}  // namespace

PoolResult pooling(const Tensor& x, const PoolAttrs& attrs, bool training) {
    constexpr const char* op = "pooling";
    check_float(op, "x", x);
    Geometry g = check_geometry(op, x.shape(), attrs);
    PoolResult r;
    // The workspace (max pooling in training) is allocated by the kernel: only it knows the layout.
    Tensor outs[] = {detail::activation_in_layout_of(x, output_shape(x.shape(), g.out)), Tensor()};
    const bool with_workspace = training && g.attrs.kind == PoolKind::max;
    if (x.numel() > 0) {
        const Tensor inputs[] = {crop_negative_pads(x, g.attrs)};
        dispatch(OpKind::pooling, inputs, std::span<Tensor>(outs, with_workspace ? 2 : 1), g.attrs);
    }
    r.y = outs[0];
    r.workspace = outs[1];
    return r;
}

Tensor pooling_backward(const Tensor& dy, const Tensor& x, const Tensor& workspace, const PoolAttrs& attrs) {
    constexpr const char* op = "pooling_backward";
    check_float(op, "dy", dy);
    check_float(op, "x", x);
    CTK_CHECK(dy.dtype() == x.dtype(), TypeError, op, ": dy (", dtype_name(dy.dtype()), " ",
              dy.shape().to_string(), ") and x (", dtype_name(x.dtype()), " ", x.shape().to_string(),
              ") have different dtypes");
    Geometry g = check_geometry(op, x.shape(), attrs);
    const Shape y_shape = output_shape(x.shape(), g.out);
    CTK_CHECK(dy.shape() == y_shape, ShapeError, op, ": dy of shape ", dy.shape().to_string(),
              " does not match the pooling output ", y_shape.to_string(), " of x ", x.shape().to_string());
    if (x.numel() == 0) return Tensor::zeros(x.shape(), x.dtype(), x.device());
    if (g.attrs.kind == PoolKind::max) {
        CTK_CHECK(workspace.defined(), ValueError, op, ": max pooling of x ", x.shape().to_string(),
                  " needs the workspace that pooling(x, attrs, training=true) returned");
        CTK_CHECK(workspace.dtype() == DataType::u8 && workspace.rank() == 1 && workspace.is_contiguous(),
                  TypeError, op, ": workspace ", workspace.to_string(),
                  " is not a workspace from pooling(training=true)");
    }
    PoolAttrs a = g.attrs;
    const Tensor xv = crop_negative_pads(x, a);
    const bool cropping = xv.shape() != x.shape();
    // Cropped cells never reach a window, so their gradient is zero.
    Tensor dx = detail::activation_in_layout_of(x, x.shape());
    if (cropping) dx.fill(0.0);
    Tensor out = cropping ? detail::activation_in_layout_of(x, xv.shape()) : dx;
    const Tensor inputs[] = {dy, xv, workspace};
    dispatch(OpKind::pooling_backward, inputs, std::span<Tensor>(&out, 1), a);
    if (cropping) crop_negative_pads(dx, g.attrs).copy_from(out);
    return dx;
}

}  // namespace ctk
