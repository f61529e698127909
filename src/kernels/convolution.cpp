// Convolution op API: CNTK's auto-padding rule, attribute defaults, shape rules and validation, and
// the cropping that turns negative pads (which CNTK's geometry can produce) into non-negative ones, so
// kernels only ever see pads >= 0.
#include <algorithm>

#include "ctk/kernels/cpu_info.h"
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

void check_same_dtype(const char* op, const char* name_a, const Tensor& a, const char* name_b,
                      const Tensor& b) {
    CTK_CHECK(a.dtype() == b.dtype(), TypeError, op, ": operands '", name_a, "' (", dtype_name(a.dtype()),
              " ", a.shape().to_string(), ") and '", name_b, "' (", dtype_name(b.dtype()), " ",
              b.shape().to_string(), ") have different dtypes; cast one first");
}

// One of ConvAttrs' per-axis vectors: empty means `fill` on every axis.
Dims per_axis(const Dims& v, int spatial, int64_t fill, const char* op, const char* name) {
    if (v.empty()) return Dims(static_cast<size_t>(spatial), fill);
    CTK_CHECK(static_cast<int>(v.size()) == spatial, ValueError, op, ": ", name, " ", dims_to_string(v),
              " has ", v.size(), " entries but x has ", spatial, " spatial axes");
    return v;
}

// The result of validating a convolution's geometry: attributes with every per-axis vector filled in,
// and the output's spatial dims.
struct Geometry {
    ConvAttrs attrs;
    Dims out;
};

// Validates x and w shapes against each other and the attributes; errors name `op` and the shapes.
Geometry check_geometry(const char* op, const Shape& x, const Shape& w, const ConvAttrs& attrs) {
    CTK_CHECK(x.rank() >= 3 && x.rank() <= 5, ShapeError, op, ": x of shape ", x.to_string(),
              " must be [N, C, spatial...] with 1 to 3 spatial axes");
    CTK_CHECK(w.rank() == x.rank(), ShapeError, op, ": weights w of shape ", w.to_string(),
              " must have rank ", x.rank(), " ([O, C/groups, kernel...]) for x of shape ", x.to_string());
    const int spatial = x.rank() - 2;
    Geometry g;
    ConvAttrs& a = g.attrs;
    a.strides = per_axis(attrs.strides, spatial, 1, op, "strides");
    a.dilation = per_axis(attrs.dilation, spatial, 1, op, "dilation");
    a.pad_lo = per_axis(attrs.pad_lo, spatial, 0, op, "pad_lo");
    a.pad_hi = per_axis(attrs.pad_hi, spatial, 0, op, "pad_hi");
    a.groups = attrs.groups;
    CTK_CHECK(a.groups >= 1, ValueError, op, ": groups must be >= 1, got ", a.groups);
    for (int i = 0; i < w.rank(); ++i)
        CTK_CHECK(w[i] >= 1, ShapeError, op, ": weights w of shape ", w.to_string(), " has an empty axis");
    for (int i = 1; i < x.rank(); ++i)
        CTK_CHECK(x[i] >= 1, ShapeError, op, ": x of shape ", x.to_string(),
                  " has an empty channel or spatial axis");
    CTK_CHECK(w[0] % a.groups == 0, ShapeError, op, ": groups ", a.groups, " does not divide the ", w[0],
              " output channels of w ", w.to_string());
    CTK_CHECK(x[1] == w[1] * a.groups, ShapeError, op, ": x of shape ", x.to_string(), " has ", x[1],
              " channels but w of shape ", w.to_string(), " with groups ", a.groups, " expects ",
              w[1] * a.groups);
    for (int i = 0; i < spatial; ++i) {
        const size_t s = static_cast<size_t>(i);
        CTK_CHECK(a.strides[s] >= 1, ValueError, op, ": strides ", dims_to_string(a.strides),
                  " must be >= 1");
        CTK_CHECK(a.dilation[s] >= 1, ValueError, op, ": dilation ", dims_to_string(a.dilation),
                  " must be >= 1 (1 = no dilation)");
        const int64_t in = x[i + 2], k = w[i + 2];
        const int64_t extent = (k - 1) * a.dilation[s] + 1;
        const int64_t padded = in + a.pad_lo[s] + a.pad_hi[s];
        CTK_CHECK(in + std::min<int64_t>(a.pad_lo[s], 0) + std::min<int64_t>(a.pad_hi[s], 0) >= 1, ShapeError,
                  op, ": negative pads ", dims_to_string(a.pad_lo), " / ", dims_to_string(a.pad_hi),
                  " crop all of spatial axis ", i, " of x ", x.to_string());
        CTK_CHECK(padded >= extent, ShapeError, op, ": kernel of w ", w.to_string(), " (extent ", extent,
                  " with dilation ", a.dilation[s], ") does not fit spatial axis ", i, " of x ",
                  x.to_string(), " padded by ", a.pad_lo[s], " + ", a.pad_hi[s]);
        g.out.push_back((padded - extent) / a.strides[s] + 1);
    }
    return g;
}

Shape output_shape(const Shape& x, const Shape& w, const Dims& out) {
    Dims d = {x[0], w[0]};
    d.insert(d.end(), out.begin(), out.end());
    return Shape(d);
}

// Negative pads crop the input: a pad of -p skips p cells at that end, which is exactly what a
// negative pad means for the cells the kernel visits. Returns the cropped view of x and sets the pads
// to >= 0.
Tensor crop_negative_pads(const Tensor& x, ConvAttrs& a) {
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

// CNTK's ConvolveGeometry centres the output cells inside the input: the first kernel centre sits at
// extra/2 where extra is the number of input cells the strided outputs leave uncovered. CNTK used the
// kernel size there and ignored dilation; we use the dilated extent so dilated kernels stay centred.
void cntk_auto_pad(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t& pad_lo,
                   int64_t& pad_hi) {
    CTK_CHECK(in >= 1 && kernel >= 1 && stride >= 1 && dilation >= 1, ValueError, "cntk_auto_pad: input ", in,
              ", kernel ", kernel, ", stride ", stride, " and dilation ", dilation, " must all be >= 1");
    const int64_t extent = (kernel - 1) * dilation + 1;
    const int64_t out = (in - 1) / stride + 1;  // ceil(in / stride)
    const int64_t cells = (out - 1) * stride + 1;
    const int64_t extra = in - cells;
    const int64_t center = extra / 2;
    pad_lo = (extent - 1) / 2 - center;
    pad_hi = (extent - 1) - (extent - 1) / 2 - (extra - center);
}

Dims conv_output_spatial(const Shape& x, const Shape& w, const ConvAttrs& attrs) {
    return check_geometry("convolution", x, w, attrs).out;
}

namespace {
// CPU convolutions in f32 and bf16 (oneDNN's) write channels-last activations (cpu_info.h).
bool writes_channels_last(const Tensor& like, const Shape& shape) {
    return detail::cpu_kernels_take_channels_last(like) && shape.rank() >= 3 && shape.rank() <= 5 &&
           cpu_channels_last();
}
}  // namespace

Tensor convolution(const Tensor& x, const Tensor& w, const Tensor& b, const ConvAttrs& attrs) {
    constexpr const char* op = "convolution";
    check_float(op, "x", x);
    check_float(op, "w", w);
    check_same_dtype(op, "x", x, "w", w);
    Geometry g = check_geometry(op, x.shape(), w.shape(), attrs);
    if (b.defined()) {
        check_float(op, "b", b);
        check_same_dtype(op, "x", x, "b", b);
        CTK_CHECK(b.rank() == 1 && b.dim(0) == w.dim(0), ShapeError, op, ": bias b of shape ",
                  b.shape().to_string(), " must be [", w.dim(0), "] (one per output channel of w ",
                  w.shape().to_string(), ")");
    }
    const Shape y_shape = output_shape(x.shape(), w.shape(), g.out);
    Tensor y = writes_channels_last(x, y_shape) ? empty_channels_last(y_shape, x.dtype(), x.device())
                                                : Tensor::empty(y_shape, x.dtype(), x.device());
    if (y.numel() == 0) return y;
    const Tensor xv = crop_negative_pads(x, g.attrs);
    const Tensor inputs[] = {xv, w, b};
    dispatch(OpKind::convolution, inputs, std::span<Tensor>(&y, 1), g.attrs);
    return y;
}

Tensor convolution_backward_data(const Tensor& dy, const Tensor& w, const Shape& x_shape,
                                 const ConvAttrs& attrs) {
    constexpr const char* op = "convolution_backward_data";
    check_float(op, "dy", dy);
    check_float(op, "w", w);
    check_same_dtype(op, "dy", dy, "w", w);
    Geometry g = check_geometry(op, x_shape, w.shape(), attrs);
    Shape y_shape = output_shape(x_shape, w.shape(), g.out);
    CTK_CHECK(dy.shape() == y_shape, ShapeError, op, ": dy of shape ", dy.shape().to_string(),
              " does not match the convolution output ", y_shape.to_string(), " of x ", x_shape.to_string(),
              " and w ", w.shape().to_string());
    if (dy.numel() == 0) return Tensor::zeros(x_shape, dy.dtype(), dy.device());
    // Cells that negative pads crop never reach the output, so their gradient is zero; the kernel
    // computes the gradient of the cropped region.
    // dx takes dy's layout, so a channels-last backward pass stays channels-last.
    Tensor dx = writes_channels_last(dy, x_shape) && is_channels_last(dy)
                    ? empty_channels_last(x_shape, dy.dtype(), dy.device())
                    : Tensor::empty(x_shape, dy.dtype(), dy.device());
    ConvAttrs a = g.attrs;
    Tensor region = crop_negative_pads(dx, a);
    const bool cropping = region.shape() != x_shape;
    if (cropping) dx.fill(0.0);
    Tensor out = cropping ? Tensor::empty(region.shape(), dy.dtype(), dy.device()) : dx;
    const Tensor inputs[] = {dy, w};
    dispatch(OpKind::convolution_backward_data, inputs, std::span<Tensor>(&out, 1), a);
    if (cropping) region.copy_from(out);
    return dx;
}

ConvWeightGrads convolution_backward_weights(const Tensor& x, const Tensor& dy, const Shape& w_shape,
                                             const ConvAttrs& attrs, bool with_bias) {
    constexpr const char* op = "convolution_backward_weights";
    check_float(op, "x", x);
    check_float(op, "dy", dy);
    check_same_dtype(op, "x", x, "dy", dy);
    Geometry g = check_geometry(op, x.shape(), w_shape, attrs);
    Shape y_shape = output_shape(x.shape(), w_shape, g.out);
    CTK_CHECK(dy.shape() == y_shape, ShapeError, op, ": dy of shape ", dy.shape().to_string(),
              " does not match the convolution output ", y_shape.to_string(), " of x ", x.shape().to_string(),
              " and w ", w_shape.to_string());
    ConvWeightGrads r;
    if (dy.numel() == 0) {
        r.dw = Tensor::zeros(w_shape, x.dtype(), x.device());
        if (with_bias) r.db = Tensor::zeros(Shape{w_shape[0]}, x.dtype(), x.device());
        return r;
    }
    Tensor outs[] = {Tensor::empty(w_shape, x.dtype(), x.device()),
                     with_bias ? Tensor::empty(Shape{w_shape[0]}, x.dtype(), x.device()) : Tensor()};
    const Tensor xv = crop_negative_pads(x, g.attrs);
    const Tensor inputs[] = {xv, dy};
    dispatch(OpKind::convolution_backward_weights, inputs, std::span<Tensor>(outs, with_bias ? 2 : 1),
             g.attrs);
    r.dw = outs[0];
    r.db = outs[1];
    return r;
}

}  // namespace ctk
