// The one list of primitive kernel ops. Each row names the op and its attribute struct; the enum, the
// names and the attribute schema are generated from it, and a static_assert pins the count so that a
// new op cannot be half-added. Graph-level ops (issue: graph) compose these.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "ctk/core/dtype.h"
#include "ctk/core/shape.h"

namespace ctk {

// X(name, AttrsType). Unary element-wise ops take ScalarAttrs (alpha, beta: elu/leaky_relu slope,
// clip bounds, hard_sigmoid's a*x+b); binary ones broadcast like NumPy.
#define CTK_UNARY_OPS(X)         \
    X(negate, ScalarAttrs)       \
    X(abs, ScalarAttrs)          \
    X(sqrt, ScalarAttrs)         \
    X(square, ScalarAttrs)       \
    X(exp, ScalarAttrs)          \
    X(log, ScalarAttrs)          \
    X(floor, ScalarAttrs)        \
    X(ceil, ScalarAttrs)         \
    X(round, ScalarAttrs)        \
    X(sin, ScalarAttrs)          \
    X(cos, ScalarAttrs)          \
    X(tan, ScalarAttrs)          \
    X(asin, ScalarAttrs)         \
    X(acos, ScalarAttrs)         \
    X(atan, ScalarAttrs)         \
    X(sinh, ScalarAttrs)         \
    X(cosh, ScalarAttrs)         \
    X(tanh, ScalarAttrs)         \
    X(asinh, ScalarAttrs)        \
    X(atanh, ScalarAttrs)        \
    X(erf, ScalarAttrs)          \
    X(reciprocal, ScalarAttrs)   \
    X(sigmoid, ScalarAttrs)      \
    X(relu, ScalarAttrs)         \
    X(elu, ScalarAttrs)          \
    X(selu, ScalarAttrs)         \
    X(leaky_relu, ScalarAttrs)   \
    X(softplus, ScalarAttrs)     \
    X(softsign, ScalarAttrs)     \
    X(hard_sigmoid, ScalarAttrs) \
    X(element_not, ScalarAttrs)  \
    X(clip, ScalarAttrs)

#define CTK_BINARY_OPS(X)      \
    X(plus, NoAttrs)           \
    X(minus, NoAttrs)          \
    X(element_times, NoAttrs)  \
    X(element_divide, NoAttrs) \
    X(pow, NoAttrs)            \
    X(element_max, NoAttrs)    \
    X(element_min, NoAttrs)    \
    X(log_add_exp, NoAttrs)    \
    X(equal, NoAttrs)          \
    X(not_equal, NoAttrs)      \
    X(less, NoAttrs)           \
    X(less_equal, NoAttrs)     \
    X(greater, NoAttrs)        \
    X(greater_equal, NoAttrs)  \
    X(element_and, NoAttrs)    \
    X(element_or, NoAttrs)     \
    X(element_xor, NoAttrs)    \
    X(param_relu, NoAttrs)

#define CTK_REDUCE_OPS(X)              \
    X(reduce_sum, ReduceAttrs)         \
    X(reduce_mean, ReduceAttrs)        \
    X(reduce_max, ReduceAttrs)         \
    X(reduce_min, ReduceAttrs)         \
    X(reduce_prod, ReduceAttrs)        \
    X(reduce_log_sum_exp, ReduceAttrs) \
    X(reduce_l1, ReduceAttrs)          \
    X(reduce_l2, ReduceAttrs)          \
    X(reduce_sum_square, ReduceAttrs)

#define CTK_OTHER_OPS(X)                                                                            \
    X(unary_backward, UnaryGradAttrs) /* (x, y, dy) -> dx for any unary op */                       \
    X(element_select, NoAttrs)        /* (cond, a, b) -> cond != 0 ? a : b, broadcasting */         \
    X(cast, CastAttrs)                                                                              \
    X(matmul, MatmulAttrs) /* batched, broadcasting batch dims */                                   \
    X(argmax, ReduceAttrs)                                                                          \
    X(argmin, ReduceAttrs)                                                                          \
    X(softmax, AxisAttrs)                                                                           \
    X(log_softmax, AxisAttrs)                                                                       \
    X(hardmax, AxisAttrs)                                                                           \
    X(softmax_backward, AxisAttrs)             /* (y, dy) -> dx */                                  \
    X(log_softmax_backward, AxisAttrs)         /* (y, dy) -> dx */                                  \
    X(convolution, ConvAttrs)                  /* (x, w[, b]) -> y */                               \
    X(convolution_backward_data, ConvAttrs)    /* (dy, w) -> dx */                                  \
    X(convolution_backward_weights, ConvAttrs) /* (x, dy) -> dw[, db] */                            \
    X(pooling, PoolAttrs)                      /* x -> y[, workspace] */                            \
    X(pooling_backward, PoolAttrs)             /* (dy, x, workspace) -> dx */                       \
    X(batch_norm_training, BatchNormAttrs)     /* (x, scale, bias) -> y, mean, var */               \
    X(batch_norm_inference, BatchNormAttrs)    /* (x, scale, bias, mean, var) -> y */               \
    X(batch_norm_backward, BatchNormAttrs)     /* (x, dy, scale, mean, var) -> dx, dscale, dbias */ \
    X(batch_norm_running_update,                                                                    \
      BatchNormRunningAttrs)  /* (mean, var) -> running mean, var, count (in place) */              \
    X(dropout, DropoutAttrs)  /* x -> y, mask */                                                    \
    X(gather, AxisAttrs)      /* (data, indices) -> out */                                          \
    X(scatter_add, AxisAttrs) /* (target, indices, updates) -> out */                               \
    X(permute, PermuteAttrs)  /* materialises a permuted copy */                                    \
    X(concat, AxisAttrs)      /* (x0, x1, ...) -> out */                                            \
    X(pad, PadAttrs)                                                                                \
    X(one_hot, OneHotAttrs)                                                                         \
    X(top_k, TopKAttrs)                   /* x -> values, indices */                                \
    X(roi_pooling, RoiPoolAttrs)          /* (x, rois) -> y, argmax */                              \
    X(roi_pooling_backward, RoiPoolAttrs) /* (dy, argmax, rois) -> dx */

#define CTK_ALL_OPS(X) CTK_UNARY_OPS(X) CTK_BINARY_OPS(X) CTK_REDUCE_OPS(X) CTK_OTHER_OPS(X)

enum class OpKind : uint16_t {
#define CTK_OP_ENUM(name, attrs) name,
    CTK_ALL_OPS(CTK_OP_ENUM)
#undef CTK_OP_ENUM
};

#define CTK_OP_COUNT_ONE(name, attrs) +1
inline constexpr int kNumOps = 0 CTK_ALL_OPS(CTK_OP_COUNT_ONE);
inline constexpr int kNumUnaryOps = 0 CTK_UNARY_OPS(CTK_OP_COUNT_ONE);
inline constexpr int kNumBinaryOps = 0 CTK_BINARY_OPS(CTK_OP_COUNT_ONE);
#undef CTK_OP_COUNT_ONE
// Adding an op? Add its kernel(s), its op-harness case, and bump this count.
static_assert(kNumOps == 89, "op list changed: update the kernel tables and the op harness");

const char* op_name(OpKind op);
bool is_unary(OpKind op);
bool is_binary(OpKind op);
bool is_reduction(OpKind op);  // the reduce_* family (not argmax/argmin)

// ---- attribute structs ----
struct NoAttrs {};
struct ScalarAttrs {
    double alpha = 0.0;
    double beta = 0.0;
};
struct UnaryGradAttrs {
    OpKind fn = OpKind::relu;  // the unary op being differentiated
    ScalarAttrs scalars;
};
struct CastAttrs {
    DataType dtype = DataType::f32;
};
struct MatmulAttrs {
    bool trans_a = false;
    bool trans_b = false;
};
struct ReduceAttrs {
    std::vector<int> axes;  // empty: all axes
    bool keepdims = false;
};
struct AxisAttrs {
    int axis = -1;
};
// Convolution geometry per spatial axis (N spatial axes: x is [batch, channels, spatial...]).
struct ConvAttrs {
    Dims strides;   // default 1
    Dims dilation;  // default 1 (1 = no dilation)
    Dims pad_lo;    // zero padding before, default 0
    Dims pad_hi;    // zero padding after, default 0
    int64_t groups = 1;
};
enum class PoolKind : uint8_t { max, average };
struct PoolAttrs {
    PoolKind kind = PoolKind::max;
    Dims kernel;
    Dims strides;
    Dims pad_lo;
    Dims pad_hi;
    bool include_pad = false;  // average pooling: count padded cells in the divisor
};
struct BatchNormAttrs {
    double epsilon = 1e-5;
    bool spatial = true;  // per channel (true) or per activation (false)
};
// The running statistics' update after a training batch (see batch_norm_update_running in ops.h).
struct BatchNormRunningAttrs {
    double samples = 1.0;        // the batch's samples
    double unbias = 1.0;         // n / (n - 1), n values per statistic: the variance made unbiased
    double time_constant = 0.0;  // samples; 0: this batch only; inf: frozen; < 0: cumulative average
};
struct DropoutAttrs {
    double rate = 0.5;
    uint64_t seed = 0;
    uint64_t offset = 0;
};
struct PermuteAttrs {
    std::vector<int> order;
};
enum class PadMode : uint8_t { constant, reflect, symmetric };
struct PadAttrs {
    Dims lo, hi;  // per axis
    PadMode mode = PadMode::constant;
    double value = 0.0;
};
struct OneHotAttrs {
    int64_t num_classes = 0;
    int axis = -1;  // where the new class axis goes in the output
    DataType dtype = DataType::f32;
};
struct TopKAttrs {
    int64_t k = 1;
    int axis = -1;
};

// Fast R-CNN's max pooling of regions of interest (CNTK's ROIPooling): each ROI (x1, y1, x2, y2) in
// image coordinates, scaled by spatial_scale onto x's [H, W] plane, pooled into output [h, w] bins.
struct RoiPoolAttrs {
    Dims output;  // [h, w]
    double spatial_scale = 1.0;
};

using OpAttrs = std::variant<NoAttrs, ScalarAttrs, UnaryGradAttrs, CastAttrs, MatmulAttrs, ReduceAttrs,
                             AxisAttrs, ConvAttrs, PoolAttrs, BatchNormAttrs, BatchNormRunningAttrs,
                             DropoutAttrs, PermuteAttrs, PadAttrs, OneHotAttrs, TopKAttrs, RoiPoolAttrs>;

// The attribute struct an op expects, as the variant index (the schema check used by dispatch).
size_t op_attrs_index(OpKind op);

}  // namespace ctk
