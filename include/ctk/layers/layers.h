// CNTK's layers (cntk.layers' layers.py) in C++: each factory returns a Function with one placeholder
// operand (MaxUnpooling: two), wrapped as a block named like CNTK's ("Dense", "Convolution", ...), whose
// parameters may have inferred dims until the layer is applied. Apply a layer with `layer(x)`-style
// calls: `call(layer, x)` or `(*layer)({x})`. Names, argument order and defaults follow CNTK 2.7's Python
// API; arguments CNTK leaves as "use default_options()" are std::optional here.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ctk/graph/graph_ops.h"

namespace ctk::layers {

// An activation as CNTK passes one: a function from a Variable to a Function (null = identity).
using ActivationFn = std::function<FunctionPtr(const Variable&)>;
FunctionPtr identity(const Variable& x);  // an alias: a Function that passes x through

// CNTK's default_options: while an instance lives, layers created without an explicit value take these.
// Nested instances stack; unset fields fall through to the enclosing one.
struct LayerDefaults {
    std::optional<ActivationFn> activation{};
    std::optional<Initializer> init{};
    std::optional<bool> pad{};
    std::optional<bool> bias{};
    std::optional<double> init_bias{};
    std::optional<bool> enable_self_stabilization{};
    std::optional<bool> use_peepholes{};                  // LSTM
    std::optional<bool> go_backwards{};                   // Recurrence, RecurrenceFrom, Fold
    std::optional<Variable> initial_state{};              // Recurrence, Fold
    std::optional<int> map_rank{};                        // BatchNormalization
    std::optional<double> normalization_time_constant{};  // BatchNormalization
    std::optional<double> epsilon{};                      // BatchNormalization, LayerNormalization
    std::optional<bool> disable_regularization{};         // BatchNormalization
};
class default_options {
public:
    explicit default_options(LayerDefaults defaults);
    ~default_options();
    default_options(const default_options&) = delete;
    default_options& operator=(const default_options&) = delete;
};

// Applies a layer (a Function with one placeholder) to x: CNTK's `layer(x)`.
FunctionPtr call(const FunctionPtr& layer, const Variable& x);
// Applies a layer with two placeholders (MaxUnpooling) to (x, y): CNTK's `layer(x, y)`.
FunctionPtr call(const FunctionPtr& layer, const Variable& x, const Variable& y);

// y = activation(x times W + b); W is [input dims..., shape...], input dims inferred from the first x:
// all of x's static axes, or the trailing input_rank ones, or all but the leading map_rank ones (those
// are mapped: the layer applies to each of their elements; CNTK's map_rank). input_rank and map_rank
// exclude each other (ValueError).
FunctionPtr Dense(const Dims& shape, std::optional<ActivationFn> activation = std::nullopt,
                  std::optional<Initializer> init = std::nullopt,
                  std::optional<int> input_rank = std::nullopt, std::optional<bool> bias = std::nullopt,
                  std::optional<double> init_bias = std::nullopt, std::optional<int> map_rank = std::nullopt,
                  const std::string& name = "");

struct ConvolutionOptions {
    std::optional<ActivationFn> activation{};
    std::optional<Initializer> init{};
    std::optional<bool> pad{};  // all spatial axes
    Dims strides{1};            // per spatial axis (one value: all)
    std::optional<bool> bias{};
    std::optional<double> init_bias{};
    Tensor init_bias_values{};  // one value per filter (CNTK's init_bias as an array); overrides init_bias
    Dims dilation{1};
    int64_t groups = 1;
    // 1: x's first axis is the input channels (reduced over); 0: x has no channel axis (one channel).
    int reduction_rank = 1;
    std::string name{};
};
// Convolution over the trailing filter_shape.size() axes of x [C, spatial...]; W is
// [num_filters, C / groups, filter_shape...] with C inferred, b is [num_filters, 1, ...]. num_filters 0 is
// CNTK's None: one filter, and no filter axis in the output.
FunctionPtr Convolution(const Dims& filter_shape, int64_t num_filters,
                        const ConvolutionOptions& options = {});
FunctionPtr Convolution1D(const Dims& filter_shape, int64_t num_filters,
                          const ConvolutionOptions& options = {});
FunctionPtr Convolution2D(const Dims& filter_shape, int64_t num_filters,
                          const ConvolutionOptions& options = {});
FunctionPtr Convolution3D(const Dims& filter_shape, int64_t num_filters,
                          const ConvolutionOptions& options = {});
// CNTK 2.7's SequentialConvolution: the first filter axis runs along x's sequence axis, the others over
// the sample's spatial axes (x a sequence of [C, spatial...], or of [spatial...] with reduction_rank 0).
// W is [max(num_filters, 1), C, filter_shape...]; num_filters 0 (CNTK's None) leaves the filter axis out
// of the output, which is a sequence of [num_filters, spatial'...]. Each sequence is convolved on its own
// (zeros past its end, CNTK's auto padding at its start) into ceil(T / stride) frames with pad and
// floor((T - dilated kernel) / stride) + 1 without: on x's sequence axis when that keeps every length
// (stride 1 with pad), else on a new one. groups other than 1: NotImplementedError.
FunctionPtr SequentialConvolution(const Dims& filter_shape, int64_t num_filters,
                                  const ConvolutionOptions& options = {});
// W is [C, num_filters, filter_shape...]; output_shape: the spatial dims wanted (empty: computed).
FunctionPtr ConvolutionTranspose(const Dims& filter_shape, int64_t num_filters,
                                 const ConvolutionOptions& options = {}, const Dims& output_shape = {});

// pad unset: default_options' pad, else false (CNTK's default_override_or(False)).
FunctionPtr MaxPooling(const Dims& filter_shape, const Dims& strides = {1},
                       std::optional<bool> pad = std::nullopt, const std::string& name = "");
FunctionPtr AveragePooling(const Dims& filter_shape, const Dims& strides = {1},
                           std::optional<bool> pad = std::nullopt, const std::string& name = "");
// Two operands (x, pooling_input): x unpooled to pooling_input's shape at the maxima of its windows
// (CNTK's unpooling); apply with call(layer, x, pooling_input).
FunctionPtr MaxUnpooling(const Dims& filter_shape, const Dims& strides = {1}, bool pad = false,
                         const std::string& name = "");
// Pooling over all spatial axes: [C, spatial...] -> [C, 1, ...].
FunctionPtr GlobalMaxPooling(const std::string& name = "");
FunctionPtr GlobalAveragePooling(const std::string& name = "");

// dropout_rate or keep_prob (exactly one).
FunctionPtr Dropout(std::optional<double> dropout_rate = std::nullopt,
                    std::optional<double> keep_prob = std::nullopt, uint64_t seed = kSentinelSeed,
                    const std::string& name = "");

// map_rank 1: spatial (statistics per channel, axis 0); none: per element of the sample shape. Unset
// map_rank, normalization_time_constant (5000), epsilon (1e-5) and disable_regularization (false: the
// learners regularize scale and bias) take default_options' values, as in CNTK.
FunctionPtr BatchNormalization(std::optional<int> map_rank = std::nullopt, double init_scale = 1.0,
                               std::optional<double> normalization_time_constant = std::nullopt,
                               double blend_time_constant = 0.0, std::optional<double> epsilon = std::nullopt,
                               const std::string& name = "",
                               std::optional<bool> disable_regularization = std::nullopt);
// (x - mean) / (std + epsilon) * scale + bias over the static axes; scale and bias are scalars (CNTK).
// Unset epsilon: default_options' epsilon, else 1e-5.
FunctionPtr LayerNormalization(double initial_scale = 1.0, double initial_bias = 0.0,
                               std::optional<double> epsilon = std::nullopt, const std::string& name = "");
// x times E, E [inferred, shape...]; `weights` given: a constant E.
FunctionPtr Embedding(const Dims& shape, std::optional<Initializer> init = std::nullopt,
                      const Tensor& weights = {}, const std::string& name = "");
FunctionPtr Activation(const ActivationFn& activation, const std::string& name = "");
// x * softplus(steepness * p) / steepness with p initialised so the factor starts at 1.
FunctionPtr Stabilizer(double steepness = 4.0, std::optional<bool> enable_self_stabilization = std::nullopt,
                       const std::string& name = "");
FunctionPtr Label(const std::string& name);

}  // namespace ctk::layers
