// Internal helpers shared by the op families in src/graph/ops: axis normalisation, dynamic-axis merging,
// aligning operands whose static ranks differ, and reducing broadcast gradients back to operand shape.
#pragma once

#include <functional>
#include <initializer_list>
#include <optional>
#include <vector>

#include "ctk/kernels/tensor_ops.h"
#include "graph/graph_internal.h"

namespace ctk::detail {

using InferFn = std::vector<OutputSpec> (*)(InferContext&);

// A static axis index in [0, rank) for `axis` (negative counts from the end); throws ValueError.
int normalize_static_axis(int axis, int rank, const std::string& where);
int normalize_static_axis(const Axis& axis, int rank, const std::string& where);

// The dynamic axes of an op's output: those of the operands that have any; they must agree.
std::vector<Axis> merge_dynamic_axes(const std::vector<Variable>& inputs, const std::string& where);
// The one floating dtype of all operands (TypeError naming them otherwise).
DataType common_dtype(const std::vector<Variable>& inputs, const std::string& where);

// NumPy broadcasting of static shapes with CNTK's inference: an inferred dim (-1) of a parameter takes
// the other operand's dim (the parameter's shape is updated in place).
Dims broadcast_static(std::vector<Variable>& inputs, const std::string& where);

// Views data [dyn..., static...] as [out_dyn..., 1..., static...] of rank out_dyn + out_static so that
// NumPy broadcasting lines operands up by their static axes (missing dynamic axes become 1).
Tensor align(const Tensor& data, int dyn, int out_dyn, int out_static);
// The gradient for an operand: dy summed down to the operand's aligned shape, viewed as its data shape.
Tensor reduce_to_operand(const Tensor& dy, const Tensor& operand_data, int dyn, int out_dyn, int out_static);

// A 0-d tensor holding `value` with the dtype and device of `like` (operands of one op share a device).
inline Tensor scalar_like(double value, const Tensor& like) {
    return Tensor::full(Shape{}, value, like.dtype(), like.device());
}

// Merges the dynamic dims of data into one leading axis: [d0*..*d(dyn-1), static...] (dyn = 0: [1, ...]).
Tensor fold_dynamic(const Tensor& data, int dyn);
// The inverse: [N, static...] back to the dynamic dims of `like` (whose first `dyn` dims are dynamic).
Tensor unfold_dynamic(const Tensor& data, const Tensor& like, int dyn);

// The product of d[begin, end).
int64_t product(const Dims& d, size_t begin, size_t end);

// Builds the primitive Function of an op constructor (shape inference runs here). An op that refuses
// operands of different types is built again with its Constant operands converted to the type of the
// other operands, as CNTK converted them (Constant::CloneAs); its first error stands if that fails too.
FunctionPtr make_op(PrimitiveOp op, std::vector<Variable> inputs, Attributes attrs, const std::string& name);

// A sequence value's layout: its own, or (data without one: every sequence full length) one made in
// `holder`.
const SequenceLayout& layout_of(const Value& v, std::shared_ptr<const SequenceLayout>& holder);
// The flat index of every real frame of data [dyn..., sample...] (padding skipped), sequence by
// sequence: the rows of the data viewed as [frames, sample].
std::vector<int64_t> real_frame_rows(const Value& v, int dyn);

// The rules of ops that pass their operand through (alias, stop_gradient, labels_to_graph): the operand's
// shape, dtype and dynamic axes; its value; the output's gradient.
std::vector<OutputSpec> infer_identity(InferContext& c);
void forward_identity(ForwardContext& c);
void backward_identity(BackwardContext& c);

// CNTK's composite ops as blocks (CNTK's BlockFunction): `body` is built on placeholders with the
// operands' shapes, dtypes and dynamic axes and wrapped as one op named op_name whose operands are
// `operands`. Parameters the body creates or captures stay inside the block.
FunctionPtr make_block_op(const std::string& op_name, const std::vector<Variable>& operands,
                          const std::function<Variable(const std::vector<Variable>&)>& body,
                          const std::string& name);

// x_out = scale * x_in + translate on the last two static axes (width, then height): how an op moves
// spatial coordinates from one of its inputs to its output (crop_automatic's offsets).
struct SpatialTransform {
    double scale[2] = {1, 1};
    double translate[2] = {0, 0};
};
// The map for convolution, convolution_transpose and pooling (conv_pool_norm.cpp); none for other ops
// or for an input without spatial meaning (a kernel).
std::optional<SpatialTransform> spatial_transform(const Function& f, size_t input);

// Attribute helpers.
inline double attr_double(const Attributes& a, const char* key, double fallback) {
    return a.get_or<double>(key, fallback);
}

// Registration of each family's OpDefs (called explicitly by op_table.cpp).
struct OpTable;
void register_elementwise_ops(OpTable& t);
void register_times_ops(OpTable& t);
void register_reduce_ops(OpTable& t);
void register_shape_ops(OpTable& t);
void register_softmax_ops(OpTable& t);
void register_loss_ops(OpTable& t);
void register_conv_ops(OpTable& t);
void register_random_ops(OpTable& t);
void register_plumbing_ops(OpTable& t);
void register_sequence_ops(OpTable& t);
void register_sampling_ops(OpTable& t);
void register_ranking_ops(OpTable& t);
void register_roipooling_ops(OpTable& t);
void register_like_ops(OpTable& t);
void register_ctc_ops(OpTable& t);
void register_crop_ops(OpTable& t);
void register_user_function_ops(OpTable& t);

// Ops that draw from their Function's random stream: a recording would replay the same draws.
inline constexpr const char* kRandomStreamRecorded =
    "is a random op, whose stream position would be recorded with its kernels (every replay would draw the "
    "same numbers)";

struct OpTable {
    std::vector<OpDef> defs = std::vector<OpDef>(static_cast<size_t>(kNumPrimitiveOps));
    std::vector<bool> present = std::vector<bool>(static_cast<size_t>(kNumPrimitiveOps), false);
    void add(PrimitiveOp op, OpDef def) {
        defs[static_cast<size_t>(op)] = def;
        present[static_cast<size_t>(op)] = true;
    }
    // Declares what op's backward reads (kReadsInputs | kReadsOutputs, or kReadsNothing: shapes only).
    void backward_reads(PrimitiveOp op, uint32_t reads) {
        defs[static_cast<size_t>(op)].backward_reads = reads;
    }
    // Declares why op cannot be recorded in a CUDA Graph (see OpDef::capture_refusal).
    void refuse_capture(PrimitiveOp op, const char* why) {
        defs[static_cast<size_t>(op)].capture_refusal = why;
    }
    // Declares that whether op is frame-local depends on the Function (see OpDef::frame_local_for).
    void frame_local_for(PrimitiveOp op, bool (*decide)(const Function&)) {
        defs[static_cast<size_t>(op)].frame_local_for = decide;
    }
    // Declares op a delay that reads `direction` (-1 earlier, +1 later) frames (see OpDef::delay_direction).
    void delay(PrimitiveOp op, int direction) { defs[static_cast<size_t>(op)].delay_direction = direction; }
    // Declares op's rule in the mixed-precision rewrite (see OpDef::autocast; keep_f32 unless declared).
    void autocast(std::initializer_list<PrimitiveOp> ops, Autocast rule) {
        for (PrimitiveOp op : ops) defs[static_cast<size_t>(op)].autocast = rule;
    }
};

}  // namespace ctk::detail
