// Eager tensor operations: each validates its operands (errors name the op, the operand and the
// shapes), computes the output shape, allocates outputs and dispatches to the kernel table. The graph
// layer builds CNTK's Functions on top of these.
#pragma once

#include <optional>
#include <vector>

#include "ctk/core/rng.h"
#include "ctk/core/tensor.h"
#include "ctk/kernels/kernel_op_list.h"

namespace ctk {

// ---- element-wise (NumPy broadcasting; comparison and logic ops return 0/1 in the input dtype, as CNTK)
// ----
Tensor unary(OpKind op, const Tensor& x, ScalarAttrs scalars = {});
// CNTK's default scalars for a unary op (elu's alpha 1, leaky_relu's 0.01, selu's constants, ...).
ScalarAttrs default_scalars(OpKind op);
// dx for y = op(x), given x, y and dy (either x or y may be undefined where the rule does not need it).
Tensor unary_backward(OpKind op, const Tensor& x, const Tensor& y, const Tensor& dy,
                      ScalarAttrs scalars = {});
Tensor binary(OpKind op, const Tensor& a, const Tensor& b);
// out = op(a, b) written into an existing tensor of the broadcast shape (may alias a or b).
void binary_into(OpKind op, const Tensor& a, const Tensor& b, Tensor& out);

#define CTK_DECLARE_UNARY(name, attrs) Tensor name(const Tensor& x);
CTK_UNARY_OPS(CTK_DECLARE_UNARY)
#undef CTK_DECLARE_UNARY
Tensor elu(const Tensor& x, double alpha);
Tensor leaky_relu(const Tensor& x, double alpha);
Tensor clip(const Tensor& x, double min_value, double max_value);
Tensor hard_sigmoid(const Tensor& x, double alpha, double beta);
#define CTK_DECLARE_BINARY(name, attrs) Tensor name(const Tensor& a, const Tensor& b);
CTK_BINARY_OPS(CTK_DECLARE_BINARY)
#undef CTK_DECLARE_BINARY
Tensor element_select(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor cast(const Tensor& x, DataType dtype);

// ---- matrix products ----
// a[..., M, K] x b[..., K, N] (after optional transposes of the last two axes) -> [..., M, N];
// batch axes broadcast. f32, f64 (OpenBLAS) and bf16 (oneDNN, f32 accumulation and bf16 output).
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);

// ---- reductions (axes empty = all; negative axes count from the end) ----
Tensor reduce(OpKind op, const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor reduce_sum(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor reduce_mean(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor reduce_max(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor reduce_min(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor reduce_prod(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor reduce_log_sum_exp(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor reduce_l1(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor reduce_l2(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
Tensor reduce_sum_square(const Tensor& x, const std::vector<int>& axes = {}, bool keepdims = false);
// Index (int64) of the first largest / smallest element along one axis.
Tensor argmax(const Tensor& x, int axis, bool keepdims = false);
Tensor argmin(const Tensor& x, int axis, bool keepdims = false);
// Sums `x` down to `shape` over the axes that broadcasting expanded (the adjoint of broadcast_to).
Tensor sum_to_shape(const Tensor& x, const Shape& shape);

// ---- softmax family ----
Tensor softmax(const Tensor& x, int axis = -1);
Tensor log_softmax(const Tensor& x, int axis = -1);
Tensor hardmax(const Tensor& x, int axis = -1);  // 1 at the first maximum along axis, else 0
Tensor softmax_backward(const Tensor& y, const Tensor& dy, int axis = -1);
Tensor log_softmax_backward(const Tensor& y, const Tensor& dy, int axis = -1);

// ---- convolution (oneDNN): x [N, C, spatial...], w [O, C/groups, kernel...], b [O] ----
// CNTK's auto-padding for one spatial axis: the output has ceil(in / stride) cells and the kernel's
// centre visits them as CNTK's ConvolveGeometry places it; fills pad_lo/pad_hi.
void cntk_auto_pad(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t& pad_lo,
                   int64_t& pad_hi);
// The output spatial dims; throws ShapeError naming the op when the geometry is impossible.
Dims conv_output_spatial(const Shape& x, const Shape& w, const ConvAttrs& attrs);
Tensor convolution(const Tensor& x, const Tensor& w, const Tensor& b, const ConvAttrs& attrs);
Tensor convolution_backward_data(const Tensor& dy, const Tensor& w, const Shape& x_shape,
                                 const ConvAttrs& attrs);
struct ConvWeightGrads {
    Tensor dw, db;  // db undefined unless requested
};
ConvWeightGrads convolution_backward_weights(const Tensor& x, const Tensor& dy, const Shape& w_shape,
                                             const ConvAttrs& attrs, bool with_bias);

// ---- pooling (oneDNN): x [N, C, spatial...] ----
struct PoolResult {
    Tensor y;
    Tensor workspace;  // max pooling in training: where the maxima were (backend-specific layout)
};
PoolResult pooling(const Tensor& x, const PoolAttrs& attrs, bool training);
Tensor pooling_backward(const Tensor& dy, const Tensor& x, const Tensor& workspace, const PoolAttrs& attrs);

// ---- ROI pooling (CNTK's ROIPooling, max only): x [N, C, H, W], rois [N, R, 4] as (x1, y1, x2, y2) in
// image coordinates (x's dtype) -> y [N, R, C, h, w] and argmax (int64, each bin's maximum as h * W + w
// in its plane; -1 for a bin outside the map, whose y is 0). ROI corners are scaled by spatial_scale and
// rounded; a bin holds rows floor(i * H_roi / h) to ceil((i + 1) * H_roi / h) of the ROI, clipped to x.
struct RoiPoolResult {
    Tensor y, argmax;
};
RoiPoolResult roi_pooling(const Tensor& x, const Tensor& rois, const RoiPoolAttrs& attrs);
// dx of shape x_shape [N, C, H, W]: each dy added at its bin's argmax (rois: those of the forward).
Tensor roi_pooling_backward(const Tensor& dy, const Tensor& argmax, const Tensor& rois, const Shape& x_shape,
                            const RoiPoolAttrs& attrs);

// ---- batch normalization (oneDNN): x [N, C, spatial...]; spatial: statistics per channel ----
// scale, bias, mean and var have x's dtype, or f32 for bf16/f16 x (mixed precision): the batch statistics
// and the parameter gradients then come back in f32, y and dx in x's dtype.
struct BatchNormResult {
    Tensor y, mean, var;  // biased batch variance
};
BatchNormResult batch_norm_training(const Tensor& x, const Tensor& scale, const Tensor& bias,
                                    const BatchNormAttrs& attrs);
Tensor batch_norm_inference(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                            const Tensor& var, const BatchNormAttrs& attrs);
struct BatchNormGrads {
    Tensor dx, dscale, dbias;
};
BatchNormGrads batch_norm_backward(const Tensor& x, const Tensor& dy, const Tensor& scale, const Tensor& mean,
                                   const Tensor& var, const BatchNormAttrs& attrs);

// Blends a training batch's statistics into the running ones, in place and in one kernel, as CNTK's
// BatchNormalizationNode does: the batch's weight w is 1 for the first batch (count 0) and for a time
// constant of 0, else 1 - exp(-samples / time_constant); 0 for an infinite time constant (the statistics
// stay those of the first batch); samples / (count + samples) for a negative one (CNTK's corpus-level
// cumulative average). Then running = running * (1 - w) + batch * w, with the batch variance times
// `unbias`; count += samples. The weight is computed where the count lives: reading it on the host would
// make a GPU step wait for the device at every batch norm. All five tensors share one dtype (f32 or f64)
// and device; the running ones are contiguous, running_mean and running_var hold as many values as the
// batch's, count one.
void batch_norm_update_running(const Tensor& batch_mean, const Tensor& batch_var, Tensor& running_mean,
                               Tensor& running_var, Tensor& running_count,
                               const BatchNormRunningAttrs& attrs);

// ---- dropout: y = x * mask / (1 - rate), mask drawn from the generator (advances it) ----
struct DropoutResult {
    Tensor y, mask;  // mask holds 0 or 1/(1 - rate), so dx = dy * mask
};
DropoutResult dropout(const Tensor& x, double rate, Generator& generator);

// ---- indexing and layout ----
// NumPy take: out = data.shape[:axis] + indices.shape + data.shape[axis+1:]. Indices are integer or
// integral floats (CNTK feeds float indices); out-of-range indices raise IndexError.
Tensor gather(const Tensor& data, const Tensor& indices, int axis = 0);
// The adjoint of gather: out = target with updates added at indices along axis.
Tensor scatter_add(const Tensor& target, const Tensor& indices, const Tensor& updates, int axis = 0);
Tensor permute(const Tensor& x, const std::vector<int>& order);  // a contiguous permuted copy
Tensor concat(const std::vector<Tensor>& xs, int axis);
Tensor pad(const Tensor& x, const Dims& lo, const Dims& hi, PadMode mode = PadMode::constant,
           double value = 0.0);
// The gradient of x from the gradient `dy` of pad(x, lo, hi, mode) (the hi pads follow from the shapes).
Tensor pad_grad(const Tensor& dy, const Shape& x_shape, const Dims& lo, PadMode mode);
Tensor one_hot(const Tensor& indices, int64_t num_classes, int axis = -1, DataType dtype = DataType::f32);
namespace detail {
// gather and scatter_add along `axis` (already normalized) with int64 indices that the caller has already
// checked to lie in [0, size of axis): no range check, so indices on a GPU are not read back by the host
// (times() looks up a one-hot value's rows with these; Value::one_hot checked the indices).
Tensor gather_of_checked(const Tensor& data, const Tensor& indices, int axis);
Tensor scatter_add_of_checked(const Tensor& target, const Tensor& indices, const Tensor& updates, int axis);
// one_hot with the class axis last, for int64 indices that the caller has already checked to lie in
// [-1, num_classes) (-1: an all-zero row): no range check, so indices on a GPU are not read back by the
// host. Value::one_hot checks its indices once, when it is made, and builds its dense rows with this.
Tensor one_hot_of_checked(const Tensor& indices, int64_t num_classes, DataType dtype);
}  // namespace detail
struct TopKResult {
    Tensor values, indices;  // largest first; indices int64
};
TopKResult top_k(const Tensor& x, int64_t k, int axis = -1);

}  // namespace ctk
