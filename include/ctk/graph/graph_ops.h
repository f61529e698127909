// CNTK's operators on Variables: each builds a primitive Function, infers its output shape at once
// (errors name the op, the Function and the shapes) and returns it. Names, argument order and defaults
// follow CNTK 2.7's Python API; axes index the static (sample) shape, negative from the end. Static
// shapes broadcast like NumPy (trailing axes aligned); dynamic axes must match or be absent.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ctk/graph/function.h"

namespace ctk {

// ---- element-wise ----
#define CTK_DECLARE_GRAPH_UNARY(op, attrs) FunctionPtr op(const Variable& x, const std::string& name = "");
CTK_UNARY_OPS(CTK_DECLARE_GRAPH_UNARY)
#undef CTK_DECLARE_GRAPH_UNARY
FunctionPtr elu(const Variable& x, double alpha, const std::string& name = "");
FunctionPtr leaky_relu(const Variable& x, double alpha, const std::string& name = "");
FunctionPtr clip(const Variable& x, double min_value, double max_value, const std::string& name = "");
FunctionPtr hard_sigmoid(const Variable& x, double alpha, double beta, const std::string& name = "");
#define CTK_DECLARE_GRAPH_BINARY(op, attrs) \
    FunctionPtr op(const Variable& a, const Variable& b, const std::string& name = "");
CTK_BINARY_OPS(CTK_DECLARE_GRAPH_BINARY)
#undef CTK_DECLARE_GRAPH_BINARY
// CNTK's argument order: param_relu(alpha, x) = x > 0 ? x : alpha * x.
FunctionPtr element_select(const Variable& condition, const Variable& then_value, const Variable& else_value,
                           const std::string& name = "");
// n-ary sum of operands (a chain of plus).
FunctionPtr sum(const std::vector<Variable>& operands, const std::string& name = "");
// The element-wise mean of the operands (CNTK's block "Mean": their sum over their number).
FunctionPtr mean(const std::vector<Variable>& operands, const std::string& name = "");

// ---- products ----
// x [..., k1..kn] times W [k1..kn, o1..om] with m = output_rank. W's leading dims may be kInferredDim:
// infer_input_rank_to_map = 0 makes them take all of x's static axes, -1 (default) takes rank(W) -
// output_rank of them. W with x's dynamic axes is one matrix per sample (a batched product).
// infer_input_rank_to_map = kTimesReduceSequenceAxis (CNTK's
// TimesReduceSequenceAxisWithoutInferredInputRank): the product of each frame, summed over the sequence
// (sequence::reduce_sum of the product).
inline constexpr int kTimesReduceSequenceAxis = -2;
FunctionPtr times(const Variable& x, const Variable& w, int output_rank = 1, int infer_input_rank_to_map = -1,
                  const std::string& name = "");
// a times b^T over the last axis of each (b a matrix, or one vector per sample: dot products).
FunctionPtr times_transpose(const Variable& a, const Variable& b, const std::string& name = "");

// ---- reductions (keepdims: reduced static axes stay with dim 1, as CNTK) ----
// `axes`: static axes, Axis::all_static_axes() (default), the batch axis, or Axis::all_axes().
#define CTK_DECLARE_GRAPH_REDUCE(op)                                                             \
    FunctionPtr op(const Variable& x, const std::vector<Axis>& axes = {Axis::all_static_axes()}, \
                   bool keepdims = true, const std::string& name = "");
CTK_DECLARE_GRAPH_REDUCE(reduce_sum)
CTK_DECLARE_GRAPH_REDUCE(reduce_mean)
CTK_DECLARE_GRAPH_REDUCE(reduce_max)
CTK_DECLARE_GRAPH_REDUCE(reduce_min)
CTK_DECLARE_GRAPH_REDUCE(reduce_prod)
CTK_DECLARE_GRAPH_REDUCE(reduce_log_sum_exp)
CTK_DECLARE_GRAPH_REDUCE(reduce_l1)
CTK_DECLARE_GRAPH_REDUCE(reduce_l2)
CTK_DECLARE_GRAPH_REDUCE(reduce_sum_square)
#undef CTK_DECLARE_GRAPH_REDUCE
// Index (as a float, CNTK's convention) of the first extreme element along a static axis, kept as dim 1.
// Without an axis: over all static axes, flattened.
FunctionPtr argmax(const Variable& x, std::optional<Axis> axis = std::nullopt, const std::string& name = "");
FunctionPtr argmin(const Variable& x, std::optional<Axis> axis = std::nullopt, const std::string& name = "");

// ---- softmax family (no axis: over all static axes together) ----
FunctionPtr softmax(const Variable& x, std::optional<Axis> axis = std::nullopt, const std::string& name = "");
FunctionPtr log_softmax(const Variable& x, std::optional<Axis> axis = std::nullopt,
                        const std::string& name = "");
FunctionPtr hardmax(const Variable& x, std::optional<Axis> axis = std::nullopt, const std::string& name = "");

// ---- shape ----
// Replaces static axes [begin_axis, end_axis) with `shape` (one dim may be -1: inferred from the size).
FunctionPtr reshape(const Variable& x, const Dims& shape, std::optional<int> begin_axis = std::nullopt,
                    std::optional<int> end_axis = std::nullopt, const std::string& name = "");
FunctionPtr flatten(const Variable& x, int axis = 0, const std::string& name = "");
FunctionPtr squeeze(const Variable& x, std::optional<std::vector<int>> axes = std::nullopt,
                    const std::string& name = "");
FunctionPtr expand_dims(const Variable& x, int axis, const std::string& name = "");
// Python slice semantics per axis (negative begin/end from the end; end 0 means "to the end", as CNTK).
FunctionPtr slice(const Variable& x, const std::vector<Axis>& axes, const Dims& begin, const Dims& end,
                  const Dims& strides = {}, const std::string& name = "");
FunctionPtr splice(const std::vector<Variable>& operands, const Axis& axis = Axis(-1),
                   const std::string& name = "");
FunctionPtr transpose(const Variable& x, const std::vector<int>& perm, const std::string& name = "");
FunctionPtr swapaxes(const Variable& x, int axis1 = 0, int axis2 = 1, const std::string& name = "");
// pattern: (before, after) per static axis.
FunctionPtr pad(const Variable& x, const std::vector<std::pair<int64_t, int64_t>>& pattern,
                PadMode mode = PadMode::constant, double constant_value = 0.0, const std::string& name = "");
// Looks up rows of `reference` along its first static axis with `indices` (float or integer values);
// the output's static shape is indices' static shape + reference's remaining static shape. A reference
// with dynamic axes is looked up per sample.
FunctionPtr gather(const Variable& reference, const Variable& indices, const std::string& name = "");
FunctionPtr one_hot(const Variable& x, int64_t num_classes, bool sparse_output = false, int axis = -1,
                    const std::string& name = "");
// Two outputs: the k largest values and their indices (float), along a static axis.
FunctionPtr top_k(const Variable& x, int64_t k, int axis = -1, const std::string& name = "");
FunctionPtr cast(const Variable& x, DataType dtype, const std::string& name = "");

// ---- graph plumbing ----
FunctionPtr stop_gradient(const Variable& x, const std::string& name = "");
FunctionPtr alias(const Variable& x, const std::string& name = "");
// CNTK's assign: returns input's value and writes it into ref (a Parameter or Constant of the same shape
// and dtype; neither may have dynamic axes, nothing broadcasts). The write happens once the evaluation is
// over (after forward, or after backward when forward kept state for one), so every op of the evaluation
// reads ref's old value; use assign's output for the new one. Several assigns to one ref commit in
// execution order. The gradient passes to input; ref gets none. Throws ValueError (ref not a Parameter
// or Constant, dynamic axes), TypeError (dtypes differ) or ShapeError (shapes differ).
FunctionPtr assign(const Variable& ref, const Variable& input, const std::string& name = "");

// ---- convolution, pooling, normalization ----
// CNTK's convolution(convolution_map, operand): W [O, C/groups, k...] over x [C, spatial...]; strides,
// auto_padding (per axis of x, or one value for all; the channel axis never pads) and dilation as in
// CNTK, shorter lists extended with their last value. W's input-channel dim may be inferred.
FunctionPtr convolution(const Variable& w, const Variable& x, const Dims& strides = {1},
                        const std::vector<bool>& auto_padding = {true}, const Dims& dilation = {1},
                        int64_t groups = 1, const std::string& name = "");
// The transpose (adjoint) of convolution, CNTK's convolution_transpose: W [C_in, C_out, k...] over x
// [C_in, spatial...] gives [C_out, spatial'...] with spatial' = in * stride under auto padding, else
// (in - 1) * stride + dilated kernel, unless output_shape (spatial dims) says otherwise.
FunctionPtr convolution_transpose(const Variable& w, const Variable& x, const Dims& strides = {1},
                                  const std::vector<bool>& auto_padding = {true},
                                  const Dims& output_shape = {}, const Dims& dilation = {1},
                                  const std::string& name = "");
enum class PoolingType : uint8_t { max = 0, average = 1 };
// An empty window_shape pools globally: one window over every spatial axis (CNTK's GlobalMaxPooling).
FunctionPtr pooling(const Variable& x, PoolingType type, const Dims& window_shape, const Dims& strides = {1},
                    const std::vector<bool>& auto_padding = {false}, bool ceil_out_dim = false,
                    bool include_pad = false, const std::string& name = "");
// CNTK's unpooling (max only): the output has pooling_input's shape, with each value of `operand` placed
// where its window's maximum is in pooling_input (the first one on ties) and zeros elsewhere; values of
// overlapping windows that share a maximum add. The inverse of max pooling with the same window, strides
// and auto_padding: operand must have the shape that pooling gives pooling_input (ShapeError otherwise),
// and the same dynamic axes. Gradients reach the operand only (pooling_input picks positions).
FunctionPtr unpooling(const Variable& operand, const Variable& pooling_input, PoolingType unpooling_type,
                      const Dims& unpooling_window_shape, const Dims& strides = {1},
                      const std::vector<bool>& auto_padding = {false}, const std::string& name = "");
// CNTK's batch_normalization: scale, bias, running_mean and running_inv_std (a running variance in
// ctk) are [C] for spatial, or the sample shape otherwise. In training the running statistics move
// toward the batch's with CNTK's time constant (0: no update, inf: cumulative average).
// disable_regularization: learners leave scale and bias unregularized (CNTK's attribute of that name).
FunctionPtr batch_normalization(const Variable& x, const Variable& scale, const Variable& bias,
                                const Variable& running_mean, const Variable& running_var,
                                const Variable& running_count, bool spatial,
                                double normalization_time_constant = 5000.0, double blend_time_constant = 0.0,
                                double epsilon = 1e-5, const std::string& name = "",
                                bool disable_regularization = false);
FunctionPtr dropout(const Variable& x, double dropout_rate = 0.0, uint64_t seed = kSentinelSeed,
                    const std::string& name = "");
// CNTK's image and normalization composites (blocks with CNTK's op names). Images are [C, H, W].
// depth_to_space: [C, H, W] -> [C/b^2, H b, W b] in ONNX's DCR order, out[c, h b + i, w b + j] =
// in[(i b + j) C/b^2 + c, h, w] (CNTK 2.7's order); space_to_depth is its inverse. ShapeError when the
// channels (or the spatial dims) do not divide.
FunctionPtr depth_to_space(const Variable& x, int64_t block_size, const std::string& name = "");
FunctionPtr space_to_depth(const Variable& x, int64_t block_size, const std::string& name = "");
// scalar * x + biases[c] per channel.
FunctionPtr image_scaler(const Variable& x, double scalar, const std::vector<double>& biases,
                         const std::string& name = "");
// x / (bias + alpha / (2 r + 1) * sum of x^2 over the channels within depth_radius r)^beta.
FunctionPtr local_response_normalization(const Variable& x, int64_t depth_radius, double bias, double alpha,
                                         double beta, const std::string& name = "");
// Per sample (x - mean) / (std + epsilon), biased std, over every static axis but the first (all of them
// with use_stats_across_channels, or for a vector); without do_variance_scaling only the mean is removed.
FunctionPtr mean_variance_normalization(const Variable& x, double epsilon = 1e-5,
                                        bool use_stats_across_channels = false,
                                        bool do_variance_scaling = true, const std::string& name = "");
// (x - mean) * inv_stddev.
FunctionPtr per_dim_mean_variance_normalize(const Variable& x, const Variable& mean,
                                            const Variable& inv_stddev, const std::string& name = "");
// ones_like and zeros_like (CNTK's ConstantOp): x's shape, dtype and dynamic axes, filled; no gradient.
FunctionPtr ones_like(const Variable& x, const std::string& name = "");
FunctionPtr zeros_like(const Variable& x, const std::string& name = "");
// CNTK's eye_like: x has exactly two axes counting the batch axis ([#] x [m] or [] x [n, m]) and no
// sequence axis; the identity of that shape (one-hot rows held in index form when sparse_output).
FunctionPtr eye_like(const Variable& x, bool sparse_output = true, const std::string& name = "");
// CNTK's straight_through: x > 0 ? 1 : -1, with the gradient passed where |x| <= 1.
FunctionPtr straight_through(const Variable& x, const std::string& name = "");
// CNTK's crop_manual: the last two static axes of node_input cut to node_referent's, from (offset_y,
// offset_x); the gradient reaches node_input only.
FunctionPtr crop_manual(const Variable& node_input, const Variable& node_referent, int64_t offset_x,
                        int64_t offset_y, const std::string& name = "");
// CNTK's crop_automatic: the offsets from how the convolutions, poolings (inverse of stride s and shift
// (k - 1) / 2 - lower pad), transposed convolutions and element-wise ops between the inputs and their
// first common ancestor (or the given ancestors) move coordinates; ValueError unless that is a whole,
// non-positive shift, or when no such path connects them.
FunctionPtr crop_automatic(const Variable& node_input, const Variable& node_referent,
                           const std::string& name = "");
FunctionPtr crop_automatic_with_ancestors(const Variable& node_input, const Variable& node_referent,
                                          const Variable& ancestor_input, const Variable& ancestor_referent,
                                          const std::string& name = "");
// CNTK's roipooling: for each region of interest, `operand`'s feature map [C, H, W] max-pooled into
// roi_output_shape (h, w) bins (Fast R-CNN's rule; max only, as CNTK: ValueError otherwise). rois is
// [R, 4] per sample, (x1, y1, x2, y2) in input-image coordinates, mapped onto the map by spatial_scale
// (corners rounded; a static [R, 4] serves every sample). Output [R, C, h, w] per sample; the gradient
// reaches the operand at each bin's maximum, none reaches rois.
FunctionPtr roipooling(const Variable& operand, const Variable& rois, PoolingType pooling_type,
                       const Dims& roi_output_shape, double spatial_scale, const std::string& name = "");
// CNTK's optimized_rnnstack in graph form: a stack of num_layers recurrent layers (recurrent_op "lstm",
// "gru", "rnnTanh" or "rnnReLU"), optionally bidirectional, over a sequence, with all weights packed into
// the one parameter `weights` in cuDNN's canonical order (shape [total / H, H] when its dims are inferred, as
// CNTK). Built from slices of `weights`, times and past_value/future_value loops: it runs wherever the graph
// runs.
FunctionPtr optimized_rnnstack(const Variable& operand, const Variable& weights, int64_t hidden_size,
                               int64_t num_layers, bool bidirectional = false,
                               const std::string& recurrent_op = "lstm", const std::string& name = "");

// ---- random values (CNTK's cntk.random.uniform, normal, bernoulli, gumbel and *_like; C++ names as
// CNTK's UniformRandom...): a fresh draw on every evaluation, from the Function's own Philox stream
// (seed: kSentinelSeed draws one from set_fixed_random_seed's sequence) ----
FunctionPtr uniform_random(const Dims& shape, DataType dtype = DataType::f32, double low = 0.0,
                           double high = 1.0, uint64_t seed = kSentinelSeed, const std::string& name = "");
FunctionPtr normal_random(const Dims& shape, DataType dtype = DataType::f32, double mean = 0.0,
                          double scale = 1.0, uint64_t seed = kSentinelSeed, const std::string& name = "");
FunctionPtr bernoulli_random(const Dims& shape, DataType dtype = DataType::f32, double mean = 0.5,
                             uint64_t seed = kSentinelSeed, const std::string& name = "");
FunctionPtr gumbel_random(const Dims& shape, DataType dtype = DataType::f32, double loc = 0.0,
                          double scale = 1.0, uint64_t seed = kSentinelSeed, const std::string& name = "");
// The same, shaped like x (its dynamic axes too).
FunctionPtr uniform_random_like(const Variable& x, double low = 0.0, double high = 1.0,
                                uint64_t seed = kSentinelSeed, const std::string& name = "");
FunctionPtr normal_random_like(const Variable& x, double mean = 0.0, double scale = 1.0,
                               uint64_t seed = kSentinelSeed, const std::string& name = "");
FunctionPtr bernoulli_random_like(const Variable& x, double mean = 0.5, uint64_t seed = kSentinelSeed,
                                  const std::string& name = "");
FunctionPtr gumbel_random_like(const Variable& x, double loc = 0.0, double scale = 1.0,
                               uint64_t seed = kSentinelSeed, const std::string& name = "");
// CNTK's random_sample: num_samples class indices drawn from the unnormalised, non-negative weights
// [C] (no dynamic axes), with or without replacement (allow_duplicates), as one-hot rows
// [num_samples, C]. A fresh draw on every evaluation; no gradient.
FunctionPtr random_sample(const Variable& weights, int64_t num_samples, bool allow_duplicates,
                          uint64_t seed = kSentinelSeed, const std::string& name = "");
// The expected number of times each class appears in such a draw: [C] (CNTK's
// random_sample_inclusion_frequency; used to correct sampled losses).
FunctionPtr random_sample_inclusion_frequency(const Variable& weights, int64_t num_samples,
                                              bool allow_duplicates, uint64_t seed = kSentinelSeed,
                                              const std::string& name = "");

// ---- losses and metrics (per sample: the reduced static axis kept as dim 1, shape [1] for vectors) ----
FunctionPtr squared_error(const Variable& output, const Variable& target, const std::string& name = "");
FunctionPtr cross_entropy_with_softmax(const Variable& output, const Variable& target,
                                       const Axis& axis = Axis(-1), const std::string& name = "");
FunctionPtr classification_error(const Variable& output, const Variable& target, int64_t top_n = 1,
                                 const Axis& axis = Axis(-1), const std::string& name = "");
FunctionPtr binary_cross_entropy(const Variable& output, const Variable& target,
                                 const std::string& name = "");
FunctionPtr weighted_binary_cross_entropy(const Variable& output, const Variable& target,
                                          const Variable& weight, const std::string& name = "");
FunctionPtr cosine_distance(const Variable& x, const Variable& y, const std::string& name = "");
// CNTK's cosine_distance_with_negative_samples: [K + 1] per sample, row 0 cos(x_j, y_j) and row m
// cos(x_j, y_(j + shift + m - 1) mod N) over the minibatch's N samples (frames) in order.
FunctionPtr cosine_distance_with_negative_samples(const Variable& x, const Variable& y, int64_t shift,
                                                  int64_t num_negative_samples, const std::string& name = "");
// CNTK's CTC: labels_to_graph(labels) marks frame-aligned labels (an identity), and forward_backward
// their CTC loss given the logits `features` (softmax taken inside): a scalar for the minibatch, the sum
// over sequences of -log p(labels | features). Labels have the features' sequences and lengths; a frame
// whose largest value is 2 starts a token (its argmax), others continue one (CNTK's format).
// delay_constraint >= 0 keeps each token within that many frames after the next token's start. The
// gradient is softmax(features) - the CTC posteriors. ValueError when a sequence cannot be aligned
// (too few frames for its tokens and the blanks between repeats).
FunctionPtr labels_to_graph(const Variable& labels, const std::string& name = "");
FunctionPtr forward_backward(const Variable& graph, const Variable& features, int64_t blank_token_id,
                             int64_t delay_constraint = -1, const std::string& name = "");
// CNTK's nce_loss (noise-contrastive estimation, a composite): weights [C, D], biases [C, 1] (or [C]),
// inputs [D] and labels one-hot [C] per sample, noise_distribution [C] (a Constant of unnormalised
// positive weights); num_samples noise classes are drawn per minibatch. A per-sample scalar loss [].
FunctionPtr nce_loss(const Variable& weights, const Variable& biases, const Variable& inputs,
                     const Variable& labels, const Variable& noise_distribution, int64_t num_samples = 32,
                     bool allow_duplicates = true, uint64_t seed = kSentinelSeed,
                     const std::string& name = "");
// CNTK's ranking criteria over the samples of a minibatch grouped by `group` (a query id per sample,
// shape [1]; a group is a run of consecutive samples with the same id): output and gain are scores and
// relevance gains [1] per sample. lambda_rank's value is (1 - mean NDCG over the groups) * 100 * samples
// and its gradient CNTK's pairwise lambdas; ndcg_at_1 is the mean NDCG@1 over the groups * 100 * samples
// (a metric: no gradient). Both are scalars without dynamic axes (CNTK's scale: a trainer's per-sample
// average reads in percent).
FunctionPtr lambda_rank(const Variable& output, const Variable& gain, const Variable& group,
                        const std::string& name = "");
FunctionPtr ndcg_at_1(const Variable& output, const Variable& gain, const Variable& group,
                      const std::string& name = "");
// CNTK's edit_distance_error between two sequences of one-hot (or score) vectors, compared by their
// argmax token per frame: the edits on the cheapest path under the given penalties, summed over the
// minibatch, times its frames, over input_b's (the reference's) token count (CNTK's scale); squash_inputs
// merges repeated tokens first and tokens_to_ignore are dropped after. A scalar metric: no gradient.
FunctionPtr edit_distance_error(const Variable& input_a, const Variable& input_b,
                                double substitution_penalty = 1.0, double deletion_penalty = 1.0,
                                double insertion_penalty = 1.0, bool squash_inputs = false,
                                const std::vector<int64_t>& tokens_to_ignore = {},
                                const std::string& name = "");

// ---- sequences (CNTK's cntk.sequence; inputs need a sequence axis) ----
// x [#] x [T, sample...] -> [#, new axis] x [sample...]; lengths ([#] x [] or [1]) default to T.
FunctionPtr to_sequence(const Variable& x, const Variable& sequence_lengths = {},
                        const std::string& name = "");
// x [#] x [T, sample...] as a sequence with the dynamic axes and lengths of `dynamic_axes_like`.
FunctionPtr to_sequence_like(const Variable& x, const Variable& dynamic_axes_like,
                             const std::string& name = "");
// The batch axis as a static axis: [#] x [sample...] -> [] x [N, sample...] (N a free dim); and back.
FunctionPtr unpack_batch(const Variable& x, const std::string& name = "");
FunctionPtr to_batch(const Variable& x, const std::string& name = "");
// x with the dynamic axes (and, at run time, the lengths) of `dynamic_axes_as`: a sequence of the same
// lengths is relabelled; a per-sample or static value is repeated over the frames.
FunctionPtr reconcile_dynamic_axes(const Variable& x, const Variable& dynamic_axes_as,
                                   const std::string& name = "");

namespace sequence {
// The value `time_step` frames earlier (later); frames with none take initial_state (default 0), which
// may be a static value broadcast over the sample, a per-sequence [#] value, or (CNTK's per-sequence form)
// a sequence: the first time_step frames take its last time_step frames (future_value: the last take
// its first; a one-frame sequence is broadcast; time_step > 1 outside loops only). Inside a loop closed with
// replace_placeholders they make a recurrence, which the executor runs frame by frame.
FunctionPtr past_value(const Variable& x, const Variable& initial_state = {}, int64_t time_step = 1,
                       const std::string& name = "");
FunctionPtr future_value(const Variable& x, const Variable& initial_state = {}, int64_t time_step = 1,
                         const std::string& name = "");
// time_step > 0: past_value; < 0: future_value; 0: the value itself.
FunctionPtr delay(const Variable& x, const Variable& initial_state = {}, int64_t time_step = 1,
                  const std::string& name = "");
FunctionPtr first(const Variable& x, const std::string& name = "");  // [#] x sample
FunctionPtr last(const Variable& x, const std::string& name = "");
FunctionPtr reduce_sum(const Variable& x, const std::string& name = "");  // over the frames
FunctionPtr reduce_max(const Variable& x, const std::string& name = "");
FunctionPtr softmax(const Variable& x, const std::string& name = "");   // over the frames, per element
FunctionPtr is_first(const Variable& x, const std::string& name = "");  // 1/0 per frame, shape []
FunctionPtr is_last(const Variable& x, const std::string& name = "");
// A per-sample value ([#] or static) repeated over every frame of `broadcast_as_operand`'s sequences.
FunctionPtr broadcast_as(const Variable& operand, const Variable& broadcast_as_operand,
                         const std::string& name = "");
// Frames [begin, end) of every sequence (negative: from the end; end 0: to the end); a new sequence axis,
// or none when the slice is one frame (end == begin + 1: a batch, as CNTK).
FunctionPtr slice(const Variable& x, int64_t begin_index, int64_t end_index, const std::string& name = "");
// The frames where condition (one value per frame) is nonzero, on a new sequence axis named after the
// condition as CNTK named it ("whereNodeDynamicAxis_conditionVar_<uid>"), so that gathers by one condition
// share their axis.
FunctionPtr gather(const Variable& x, const Variable& condition, const std::string& name = "");
// The frame numbers where condition is nonzero; the new sequence axis as gather's.
FunctionPtr where(const Variable& condition, const std::string& name = "");
// CNTK's new_sequence_axis_typeinfo (scaling, additive): the new axis is derived from the condition's
// sequence axis, its lengths promised to be scaling * length + additive: (1, 0) is the condition's own
// axis, (0, 1) no sequence axis at all (one frame per sequence, taken as a batch), others an axis named
// as CNTK named it ("<axis>_times_2_plus_1", "<axis>_fixedSliceOf_3"), shared by every op that derives it
// alike. (0, 0) is refused.
using DerivedAxis = std::pair<int64_t, int64_t>;
FunctionPtr gather(const Variable& x, const Variable& condition, DerivedAxis new_axis,
                   const std::string& name = "");
FunctionPtr where(const Variable& condition, DerivedAxis new_axis, const std::string& name = "");
// The inverse of gather: x's frames placed where condition is nonzero, zeros elsewhere.
FunctionPtr scatter(const Variable& x, const Variable& condition, const std::string& name = "");
// Two outputs: the padded data as a static axis ([#] x [T, sample...], padding = padding_value) and the
// mask ([#] x [T]).
FunctionPtr unpack(const Variable& x, double padding_value = 0.0, const std::string& name = "");
}  // namespace sequence

// ---- rebuilding a graph from a model file ----
// A primitive Function applying `op` to `inputs` with `attributes` as the op's definition names them
// (CNTK's attribute names: "axis", "offset", "rngSeed", ...): what model-file readers use to rebuild a
// graph op by op. Shapes are inferred at once; errors name the op, as the builders above do.
FunctionPtr primitive_function(PrimitiveOp op, std::vector<Variable> inputs, Attributes attributes,
                               const std::string& name = "");
// Gives a leaf variable just read from a file the uid the file gave it (CNTK's loaded variables keep
// their uids; unnamed inputs are known by them). Throws ValueError for outputs of Functions.
void restore_uid(const Variable& leaf, const std::string& uid);

}  // namespace ctk
