// CNTK's layers library: every layer is built on a fresh placeholder and wrapped as a block with its own
// placeholder operand, so that applying it (Function::operator()) clones the block with shared
// parameters, exactly as CNTK's Python layers behave. Parameters keep inferred dims until then.
#include "ctk/layers.h"

#include <cmath>

namespace ctk::layers {

namespace {

// The default_options stack (a process-wide stack as in CNTK's Python; layers are built on one thread).
std::vector<LayerDefaults>& defaults_stack() {
    static std::vector<LayerDefaults> stack;
    return stack;
}

template <typename T, typename Field>
T option(const std::optional<T>& given, Field field, T fallback) {
    if (given) return *given;
    const auto& stack = defaults_stack();
    for (auto it = stack.rbegin(); it != stack.rend(); ++it)
        if ((*it).*field) return *((*it).*field);
    return fallback;
}

FunctionPtr activate(const ActivationFn& activation, const Variable& x) {
    return activation ? activation(x) : as_function(x);
}

// Builds `body` on a placeholder and wraps it as a block named `op_name` whose operand is a new
// placeholder: the layer's Function, ready to be applied to an input.
FunctionPtr make_layer(const std::string& op_name, const std::string& name,
                       const std::function<FunctionPtr(const Variable&)>& body) {
    Variable inner = placeholder();
    FunctionPtr composite = body(inner);
    // A body that returns its input unchanged (identity) still needs a Function of its own.
    if (composite->output() == inner) composite = alias(inner);
    return as_block(composite, {{inner, placeholder()}}, op_name, name);
}

Dims repeat(const Dims& d, size_t n, const char* what, const std::string& layer) {
    if (d.size() == n) return d;
    CTK_CHECK(d.size() == 1, ValueError, layer, ": ", what, " has ", d.size(), " entries for ", n,
              " spatial axes");
    return Dims(n, d[0]);
}

}  // namespace

default_options::default_options(LayerDefaults defaults) {
    defaults_stack().push_back(std::move(defaults));
}
default_options::~default_options() {
    defaults_stack().pop_back();
}

FunctionPtr identity(const Variable& x) {
    return alias(x);
}

FunctionPtr call(const FunctionPtr& layer, const Variable& x) {
    CTK_CHECK(layer != nullptr, ValueError, "call: null layer");
    return (*layer)({x});
}

FunctionPtr call(const FunctionPtr& layer, const Variable& x, const Variable& y) {
    CTK_CHECK(layer != nullptr, ValueError, "call: null layer");
    return (*layer)({x, y});
}

FunctionPtr Dense(const Dims& shape, std::optional<ActivationFn> activation, std::optional<Initializer> init,
                  std::optional<int> input_rank, std::optional<bool> bias, std::optional<double> init_bias,
                  std::optional<int> map_rank, const std::string& name) {
    CTK_CHECK(!(input_rank && map_rank), ValueError, "Dense '", name,
              "': input_rank and map_rank cannot be given together");
    CTK_CHECK(!map_rank || *map_rank >= 0, ValueError, "Dense '", name, "': map_rank must be >= 0");
    CTK_CHECK(!shape.empty(), ValueError, "Dense '", name, "': empty output shape");
    for (int64_t d : shape) CTK_CHECK(d > 0, ValueError, "Dense '", name, "': output shape dims must be > 0");
    const ActivationFn act = option(activation, &LayerDefaults::activation, ActivationFn());
    Initializer w_init = option(init, &LayerDefaults::init, glorot_uniform());
    const int output_rank = static_cast<int>(shape.size());
    if (w_init.output_rank == kSentinelRank) w_init.output_rank = output_rank;
    const int in_rank = input_rank.value_or(1);
    CTK_CHECK(in_rank >= 1, ValueError, "Dense '", name, "': input_rank must be >= 1");
    Dims w_shape(static_cast<size_t>(in_rank), kInferredDim);
    w_shape.insert(w_shape.end(), shape.begin(), shape.end());
    Variable W = parameter(w_shape, w_init, DataType::f32, "W");
    Variable b;
    if (option(bias, &LayerDefaults::bias, true))
        b = parameter(shape, constant_initializer(option(init_bias, &LayerDefaults::init_bias, 0.0)),
                      DataType::f32, "b");
    // Without input_rank, W takes x's static axes after the first map_rank (CNTK's
    // infer_input_rank_to_map; 0: all of them).
    const int infer_rank = input_rank ? -1 : map_rank.value_or(0);
    return make_layer("Dense", name, [=](const Variable& x) {
        FunctionPtr r = times(x, W, output_rank, infer_rank);
        if (b.defined()) r = plus(r, b);
        return activate(act, r);
    });
}

namespace {
// A convolution layer's bias [filters, 1 per spatial axis], or none when the options say so. Given as an
// array, it has the array's own shape when `array_shape` (CNTK's SequentialConvolution: see there).
Variable convolution_bias(const ConvolutionOptions& o, int64_t filters, size_t spatial,
                          const std::string& where, bool array_shape = false) {
    if (!option(o.bias, &LayerDefaults::bias, true)) return {};
    Dims b_shape(spatial + 1, 1);
    b_shape[0] = filters;
    if (o.init_bias_values.defined() && array_shape)
        return parameter(o.init_bias_values.shape().dims(), initial_values(o.init_bias_values), DataType::f32,
                         "b");
    if (o.init_bias_values.defined()) {
        CTK_CHECK(o.init_bias_values.numel() == filters, ValueError, where, ": init_bias has ",
                  o.init_bias_values.numel(), " values for ", filters, " filters");
        return parameter(b_shape, initial_values(o.init_bias_values), DataType::f32, "b");
    }
    return parameter(b_shape, constant_initializer(option(o.init_bias, &LayerDefaults::init_bias, 0.0)),
                     DataType::f32, "b");
}

// What every convolution layer takes from its options and defaults: the activation, pad, the per-axis
// strides and dilation of its filter axes, the same lists as convolution() takes them (the channel axis
// first: stride 1, never padded), and the kernel W, [filters, C, filter...] ([C, filters, ...] when
// transposed) with C inferred (1 for reduction_rank 0) and CNTK's fans (over channels x kernel).
struct ConvolutionSetup {
    ActivationFn act;
    bool pad = false;
    Dims strides, dilation;
    Dims conv_strides, conv_dilation;
    std::vector<bool> auto_padding;
    Variable W;
};
ConvolutionSetup convolution_setup(const Dims& filter_shape, int64_t filters, const ConvolutionOptions& o,
                                   bool transpose, const std::string& where) {
    CTK_CHECK(!filter_shape.empty(), ValueError, where, ": empty filter_shape");
    CTK_CHECK(o.reduction_rank == 0 || o.reduction_rank == 1, ValueError, where,
              ": reduction_rank must be 0 or 1, got ", o.reduction_rank);
    const size_t axes = filter_shape.size();
    ConvolutionSetup s;
    s.act = option(o.activation, &LayerDefaults::activation, ActivationFn());
    s.pad = option(o.pad, &LayerDefaults::pad, false);
    s.strides = repeat(o.strides, axes, "strides", where);
    s.dilation = repeat(o.dilation, axes, "dilation", where);
    s.conv_strides = s.strides;
    s.conv_strides.insert(s.conv_strides.begin(), 1);
    s.conv_dilation = s.dilation;
    s.conv_dilation.insert(s.conv_dilation.begin(), 1);
    s.auto_padding.assign(axes + 1, s.pad);
    s.auto_padding[0] = false;
    Initializer w_init = option(o.init, &LayerDefaults::init, glorot_uniform());
    if (w_init.filter_rank == kSentinelRank) w_init.filter_rank = static_cast<int>(axes);
    if (w_init.output_rank == kSentinelRank) w_init.output_rank = -1;
    const int64_t in_channels = o.reduction_rank == 0 ? 1 : kInferredDim;
    Dims w_shape = transpose ? Dims{in_channels, filters} : Dims{filters, in_channels};
    w_shape.insert(w_shape.end(), filter_shape.begin(), filter_shape.end());
    s.W = parameter(w_shape, w_init, DataType::f32, "W");
    return s;
}

FunctionPtr convolution_layer(const Dims& filter_shape, int64_t num_filters, const ConvolutionOptions& o,
                              bool transpose, const Dims& output_shape, const char* op_name) {
    const std::string where = std::string(op_name) + " '" + o.name + "'";
    CTK_CHECK(num_filters > 0 || (num_filters == 0 && !transpose), ValueError, where,
              ": num_filters must be > 0", transpose ? "" : " (or 0: no filter axis)", ", got ", num_filters);
    const bool filter_axis = num_filters > 0;
    if (!filter_axis) num_filters = 1;
    CTK_CHECK(o.groups >= 1 && num_filters % o.groups == 0, ValueError, where, ": groups ", o.groups,
              " must divide num_filters ", num_filters);
    CTK_CHECK(o.reduction_rank == 1 || o.groups == 1, ValueError, where,
              ": groups need input channels (reduction_rank=1)");
    const ConvolutionSetup s = convolution_setup(filter_shape, num_filters, o, transpose, where);
    const Variable b = convolution_bias(o, num_filters, filter_shape.size(), where);
    // reduction_rank 0: one input channel, made by a unit axis in front of x's spatial axes.
    const bool add_channel_axis = o.reduction_rank == 0;
    const int64_t groups = o.groups;
    return make_layer(op_name, o.name, [=](const Variable& x_in) {
        const Variable x = add_channel_axis ? Variable(expand_dims(x_in, 0)) : x_in;
        FunctionPtr r =
            transpose
                ? convolution_transpose(s.W, x, s.conv_strides, s.auto_padding, output_shape, s.conv_dilation)
                : convolution(s.W, x, s.conv_strides, s.auto_padding, s.conv_dilation, groups);
        if (b.defined()) r = plus(r, b);
        if (!filter_axis) r = reshape(r, {}, 0, 1);
        return activate(s.act, r);
    });
}
}  // namespace

FunctionPtr Convolution(const Dims& filter_shape, int64_t num_filters, const ConvolutionOptions& options) {
    return convolution_layer(filter_shape, num_filters, options, false, {}, "Convolution");
}
FunctionPtr Convolution1D(const Dims& filter_shape, int64_t num_filters, const ConvolutionOptions& options) {
    CTK_CHECK(filter_shape.size() == 1, ValueError, "Convolution1D: filter_shape must have 1 dim");
    return Convolution(filter_shape, num_filters, options);
}
FunctionPtr Convolution2D(const Dims& filter_shape, int64_t num_filters, const ConvolutionOptions& options) {
    CTK_CHECK(filter_shape.size() <= 2, ValueError, "Convolution2D: filter_shape must have 1 or 2 dims");
    return Convolution(filter_shape.size() == 2 ? filter_shape : Dims{filter_shape[0], filter_shape[0]},
                       num_filters, options);
}
FunctionPtr Convolution3D(const Dims& filter_shape, int64_t num_filters, const ConvolutionOptions& options) {
    CTK_CHECK(filter_shape.size() == 3 || filter_shape.size() == 1, ValueError,
              "Convolution3D: filter_shape must have 1 or 3 dims");
    return Convolution(filter_shape.size() == 3 ? filter_shape : Dims(3, filter_shape[0]), num_filters,
                       options);
}
FunctionPtr SequentialConvolution(const Dims& filter_shape, int64_t num_filters,
                                  const ConvolutionOptions& o) {
    const std::string where = "SequentialConvolution '" + o.name + "'";
    CTK_CHECK(num_filters >= 0, ValueError, where, ": num_filters must be >= 0 (0: none), got ", num_filters);
    CTK_CHECK(o.groups == 1, NotImplementedError, where, ": groups other than 1");
    const int64_t filters = std::max<int64_t>(num_filters, 1);
    const ConvolutionSetup s = convolution_setup(filter_shape, filters, o, false, where);
    const size_t axes = filter_shape.size();  // the sequence axis, then the sample's spatial axes
    // CNTK added the bias to each output frame [filters, spatial'...], and a bias given as an array kept
    // the array's shape: one value per filter without spatial axes, else (CNTK's quirk, kept) aligned
    // with the last spatial axis as NumPy broadcasting aligns it.
    const Variable b = convolution_bias(o, filters, axes - 1, where, true);
    const double kernel_frames = static_cast<double>((filter_shape[0] - 1) * s.dilation[0] + 1);
    const auto stride = static_cast<double>(s.strides[0]);
    const int reduction_rank = o.reduction_rank;
    // Axes 0 and 1 swapped in a rank-(axes + 1) tensor (x's shape is unknown until the layer is applied).
    std::vector<int> swap01{1, 0};
    for (int a = 2; a <= static_cast<int>(axes); ++a) swap01.push_back(a);
    return make_layer("SequentialConvolution", o.name, [=](const Variable& x) {
        // [#, *] x [sample] -> [#] x [T, sample] with zeros past each end (and the mask [#] x [T] of the
        // frames that are real) -> an image [C, T, spatial...].
        const std::vector<Variable> unpacked = sequence::unpack(x, 0.0)->outputs();
        const Variable& frames = unpacked[0];
        // (A unit axis put in front by reshaping the empty range before axis 0: T is a free dim.)
        const Variable image =
            reduction_rank == 0 ? Variable(reshape(frames, {1}, 0, 0)) : Variable(transpose(frames, swap01));
        const Variable y = convolution(s.W, image, s.conv_strides, s.auto_padding, s.conv_dilation, 1);
        Variable per_frame = transpose(y, swap01);  // [T', filters, spatial'...]
        if (b.defined()) per_frame = plus(per_frame, b);
        if (num_filters == 0) per_frame = reshape(per_frame, {}, 1, 2);
        FunctionPtr out;
        if (s.pad && s.strides[0] == 1) {
            out = to_sequence_like(per_frame, x);
        } else {
            const Variable length = reduce_sum(unpacked[1]);  // each sequence's frame count
            const Variable step = constant(stride, x.dtype());
            const Variable out_length =
                s.pad ? Variable(ceil(element_divide(length, step)))
                      : Variable(relu(plus(
                            floor(element_divide(minus(length, constant(kernel_frames, x.dtype())), step)),
                            constant(1.0, x.dtype()))));
            out = to_sequence(per_frame, out_length);
        }
        return activate(s.act, out->output());
    });
}

FunctionPtr ConvolutionTranspose(const Dims& filter_shape, int64_t num_filters,
                                 const ConvolutionOptions& options, const Dims& output_shape) {
    CTK_CHECK(options.groups == 1, NotImplementedError, "ConvolutionTranspose: groups other than 1");
    return convolution_layer(filter_shape, num_filters, options, true, output_shape, "ConvolutionTranspose");
}

namespace {
FunctionPtr pooling_layer(PoolingType type, const Dims& filter_shape, const Dims& strides, bool pad,
                          const std::string& name, const char* op_name) {
    CTK_CHECK(!filter_shape.empty(), ValueError, op_name, " '", name, "': empty filter_shape");
    const Dims s = repeat(strides, filter_shape.size(), "strides", op_name);
    return make_layer(op_name, name,
                      [=](const Variable& x) { return pooling(x, type, filter_shape, s, {pad}); });
}
FunctionPtr global_pooling(PoolingType type, const std::string& name, const char* op_name) {
    // An empty window is CNTK's global pooling: the window covers every spatial axis of the input.
    return make_layer(op_name, name, [=](const Variable& x) { return pooling(x, type, {}, {1}, {false}); });
}
}  // namespace

FunctionPtr MaxPooling(const Dims& filter_shape, const Dims& strides, std::optional<bool> pad,
                       const std::string& name) {
    return pooling_layer(PoolingType::max, filter_shape, strides, option(pad, &LayerDefaults::pad, false),
                         name, "MaxPooling");
}
FunctionPtr AveragePooling(const Dims& filter_shape, const Dims& strides, std::optional<bool> pad,
                           const std::string& name) {
    return pooling_layer(PoolingType::average, filter_shape, strides, option(pad, &LayerDefaults::pad, false),
                         name, "AveragePooling");
}
FunctionPtr MaxUnpooling(const Dims& filter_shape, const Dims& strides, bool pad, const std::string& name) {
    CTK_CHECK(!filter_shape.empty(), ValueError, "MaxUnpooling '", name, "': empty filter_shape");
    const Dims s = repeat(strides, filter_shape.size(), "strides", "MaxUnpooling");
    Variable x = placeholder(), pooling_input = placeholder();
    FunctionPtr body = unpooling(x, pooling_input, PoolingType::max, filter_shape, s, {pad});
    return as_block(body, {{x, placeholder()}, {pooling_input, placeholder()}}, "MaxUnpooling", name);
}
FunctionPtr GlobalMaxPooling(const std::string& name) {
    return global_pooling(PoolingType::max, name, "GlobalMaxPooling");
}
FunctionPtr GlobalAveragePooling(const std::string& name) {
    return global_pooling(PoolingType::average, name, "GlobalAveragePooling");
}

FunctionPtr Dropout(std::optional<double> dropout_rate, std::optional<double> keep_prob, uint64_t seed,
                    const std::string& name) {
    CTK_CHECK(dropout_rate.has_value() != keep_prob.has_value(), ValueError, "Dropout '", name,
              "': give exactly one of dropout_rate and keep_prob");
    const double rate = dropout_rate ? *dropout_rate : 1.0 - *keep_prob;
    CTK_CHECK(rate >= 0.0 && rate < 1.0, ValueError, "Dropout '", name, "': dropout rate ", rate,
              " is outside [0, 1)");
    if (seed == kSentinelSeed) seed = next_worker_random_seed();  // masks differ between workers
    return make_layer("Dropout", name, [=](const Variable& x) { return dropout(x, rate, seed); });
}

FunctionPtr BatchNormalization(std::optional<int> map_rank_arg, double init_scale,
                               std::optional<double> normalization_time_constant_arg,
                               double blend_time_constant, std::optional<double> epsilon_arg,
                               const std::string& name, std::optional<bool> disable_regularization_arg) {
    std::optional<int> map_rank = map_rank_arg;
    if (!map_rank) {
        const int from_defaults = option(std::optional<int>(), &LayerDefaults::map_rank, 0);
        if (from_defaults != 0) map_rank = from_defaults;
    }
    const double normalization_time_constant =
        option(normalization_time_constant_arg, &LayerDefaults::normalization_time_constant, 5000.0);
    const double epsilon = option(epsilon_arg, &LayerDefaults::epsilon, 1e-5);
    const bool disable_regularization =
        option(disable_regularization_arg, &LayerDefaults::disable_regularization, false);
    CTK_CHECK(!map_rank || *map_rank == 1, ValueError, "BatchNormalization '", name,
              "': map_rank must be 1 (spatial) or unset");
    const bool spatial = map_rank.has_value();
    // Spatial: statistics per channel (axis 0); otherwise per element of the sample (inferred dims).
    const Dims stat_shape = {kInferredDim};
    Variable scale = parameter(stat_shape, constant_initializer(init_scale), DataType::f32, "scale");
    Variable bias = parameter(stat_shape, constant_initializer(0.0), DataType::f32, "bias");
    Variable mean = constant(stat_shape, 0.0, DataType::f32, "aggregate_mean");
    Variable var = constant(stat_shape, 0.0, DataType::f32, "aggregate_variance");
    Variable count = constant(Dims{}, 0.0, DataType::f32, "aggregate_count");
    return make_layer("BatchNormalization", name, [=](const Variable& x) {
        return batch_normalization(x, scale, bias, mean, var, count, spatial, normalization_time_constant,
                                   blend_time_constant, epsilon, "", disable_regularization);
    });
}

FunctionPtr LayerNormalization(double initial_scale, double initial_bias, std::optional<double> epsilon_arg,
                               const std::string& name) {
    const double epsilon = option(epsilon_arg, &LayerDefaults::epsilon, 1e-5);
    // One scale and one bias per feature, their shape inferred from the input (CNTK's _INFERRED).
    Variable scale =
        parameter(Dims{kInferredDim}, constant_initializer(initial_scale), DataType::f32, "scale");
    Variable bias = parameter(Dims{kInferredDim}, constant_initializer(initial_bias), DataType::f32, "bias");
    return make_layer("LayerNormalization", name, [=](const Variable& x) {
        FunctionPtr x0 = minus(x, reduce_mean(x));
        FunctionPtr std_dev = sqrt(reduce_mean(square(x0)));
        // CNTK adds epsilon to the standard deviation, not to the variance.
        FunctionPtr denom = epsilon != 0.0 ? plus(std_dev, constant(epsilon)) : std_dev;
        // x0 / denom as CNTK's ElementDivide computed it, x0 * reciprocal(denom): CNTK v2 files can hold
        // only that form, so the layer loads back from one computing the same bits.
        return plus(element_times(element_times(x0, reciprocal(denom)), scale), bias);
    });
}

FunctionPtr Embedding(const Dims& shape, std::optional<Initializer> init, const Tensor& weights,
                      const std::string& name) {
    Variable E;
    if (weights.defined()) {
        CTK_CHECK(!init, ValueError, "Embedding '", name, "': give init or weights, not both");
        // CNTK: a shape given beside the weights must be theirs (the weights are [vocabulary, shape...]).
        const Dims& w = weights.shape().dims();
        CTK_CHECK(shape.empty() || (w.size() >= 1 && Dims(w.begin() + 1, w.end()) == shape), ValueError,
                  "Embedding '", name, "': shape ", Shape(shape).to_string(),
                  " does not match weights of shape ", weights.shape().to_string(),
                  " (the weights set the shape; give one of them)");
        E = constant(weights, "E");
    } else {
        CTK_CHECK(!shape.empty(), ValueError, "Embedding '", name, "': empty shape");
        Initializer e_init = option(init, &LayerDefaults::init, glorot_uniform());
        Dims e_shape{kInferredDim};
        e_shape.insert(e_shape.end(), shape.begin(), shape.end());
        E = parameter(e_shape, e_init, DataType::f32, "E");
    }
    return make_layer("Embedding", name, [=](const Variable& x) { return times(x, E); });
}

FunctionPtr Activation(const ActivationFn& activation, const std::string& name) {
    return make_layer("Activation", name, [=](const Variable& x) { return activate(activation, x); });
}

FunctionPtr Stabilizer(double steepness, std::optional<bool> enable_self_stabilization,
                       const std::string& name) {
    CTK_CHECK(steepness > 0, ValueError, "Stabilizer '", name, "': steepness must be > 0");
    if (!option(enable_self_stabilization, &LayerDefaults::enable_self_stabilization, true))
        return make_layer("Stabilizer", name, [](const Variable& x) { return alias(x); });
    // softplus(steepness * p) / steepness == 1 at the initial p.
    const double init = std::log(std::exp(steepness) - 1.0) / steepness;
    Variable p = parameter(Dims{}, constant_initializer(init), DataType::f32, "alpha");
    return make_layer("Stabilizer", name, [=](const Variable& x) {
        FunctionPtr beta =
            element_times(softplus(element_times(p, constant(steepness))), constant(1.0 / steepness));
        return element_times(beta, x);
    });
}

FunctionPtr Label(const std::string& name) {
    CTK_CHECK(!name.empty(), ValueError, "Label: a name is required");
    return make_layer("Label", "", [=](const Variable& x) { return alias(x, name); });
}

// ---- recurrence ----

namespace {

enum class Cell { rnn, gru, lstm };

// CNTK's _RecurrentBlock: the step function of one recurrent cell type as a block with operands
// (previous states..., x).
FunctionPtr recurrent_block(Cell type, const Dims& shape, const RecurrentOptions& o) {
    const char* op_name = type == Cell::lstm ? "LSTM" : type == Cell::gru ? "GRU" : "RNNStep";
    const std::string where = std::string(op_name) + " '" + o.name + "'";
    CTK_CHECK(shape.size() == 1 && shape[0] > 0, ValueError, where, ": shape must be one positive dim, got ",
              dims_to_string(shape));
    const Dims cell = o.cell_shape.value_or(shape);
    CTK_CHECK(cell.size() == 1 && cell[0] > 0, ValueError, where,
              ": cell_shape must be one positive dim, got ", dims_to_string(cell));
    const bool projection = o.cell_shape.has_value();
    const ActivationFn default_act = type == Cell::rnn
                                         ? ActivationFn([](const Variable& v) { return sigmoid(v); })
                                         : ActivationFn([](const Variable& v) { return tanh(v); });
    const ActivationFn act = option(o.activation, &LayerDefaults::activation, default_act);
    // default_options(use_peepholes=...) reaches LSTMs only (GRU and RNNStep have no such argument).
    const bool peepholes = type == Cell::lstm ? option(o.use_peepholes, &LayerDefaults::use_peepholes, false)
                                              : o.use_peepholes.value_or(false);
    CTK_CHECK(!peepholes || type == Cell::lstm, ValueError, where, ": use_peepholes is for LSTM only");
    const Initializer init = option(o.init, &LayerDefaults::init, glorot_uniform());
    const double init_bias = option(o.init_bias, &LayerDefaults::init_bias, 0.0);
    const bool stabilize =
        option(o.enable_self_stabilization, &LayerDefaults::enable_self_stabilization, false);

    const int64_t c = cell[0], n = shape[0];
    const int64_t stacked = type == Cell::lstm ? 4 * c : type == Cell::gru ? 3 * c : c;
    const int64_t stacked_h = type == Cell::lstm ? 4 * c : type == Cell::gru ? 2 * c : c;
    Variable b = parameter({stacked}, constant_initializer(init_bias), DataType::f32, "b");
    Variable W = parameter({kInferredDim, stacked}, init, DataType::f32, "W");
    Variable H = parameter({n, stacked_h}, init, DataType::f32, "H");
    Variable H1 = type == Cell::gru ? parameter({n, c}, init, DataType::f32, "H1") : Variable();
    Variable Ci, Cf, Co;
    if (peepholes) {
        Ci = parameter({c}, init, DataType::f32, "Ci");
        Cf = parameter({c}, init, DataType::f32, "Cf");
        Co = parameter({c}, init, DataType::f32, "Co");
    }
    Variable P = projection ? parameter({c, n}, init, DataType::f32, "P") : Variable();
    auto stabilizer = [&](const char* stab_name) { return Stabilizer(4.0, stabilize, stab_name); };
    FunctionPtr Sdh = stabilizer("dh_stabilizer"), Sdc = stabilizer("dc_stabilizer"),
                Sct = stabilizer("c_stabilizer"), Sht = stabilizer("P_stabilizer");
    auto gate = [](const Variable& v, int64_t k, int64_t size) {
        return slice(v, {Axis(-1)}, {k * size}, {(k + 1) * size});
    };
    auto project = [&](const Variable& ht) -> Variable { return projection ? times(call(Sht, ht), P) : ht; };

    Variable dh = placeholder("dh"), x = placeholder("x");
    std::vector<std::pair<Variable, Variable>> operands{{dh, placeholder()}};
    FunctionPtr body;
    if (type == Cell::rnn) {
        Variable dhs = call(Sdh, dh);
        body = activate(act, plus(plus(times(x, W), times(dhs, H)), b));
        if (projection) body = as_function(project(body));
    } else if (type == Cell::gru) {
        Variable dhs = call(Sdh, dh);
        Variable projx3 = plus(b, times(x, W)), projh2 = times(dhs, H);
        Variable zt = sigmoid(plus(gate(projx3, 0, c), gate(projh2, 0, c)));  // update gate
        Variable rt = sigmoid(plus(gate(projx3, 1, c), gate(projh2, 1, c)));  // reset gate
        Variable ct = activate(act, plus(gate(projx3, 2, c), times(element_times(dhs, rt), H1)));
        Variable ht = plus(element_times(minus(constant(1.0), zt), ct), element_times(zt, dhs));
        body = as_function(project(ht));
    } else {
        Variable dc = placeholder("dc");
        operands.emplace_back(dc, placeholder());
        Variable dhs = call(Sdh, dh), dcs = call(Sdc, dc);
        Variable proj4 = plus(plus(b, times(x, W)), times(dhs, H));
        auto peep = [&](const Variable& v, const Variable& state, const Variable& weight) -> Variable {
            return peepholes ? Variable(plus(v, element_times(weight, state))) : v;
        };
        Variable it = sigmoid(peep(gate(proj4, 0, c), dcs, Ci));  // input gate
        Variable bit = element_times(it, activate(act, gate(proj4, 1, c)));
        Variable ft = sigmoid(peep(gate(proj4, 2, c), dcs, Cf));            // forget gate
        Variable ct = plus(element_times(ft, dc), bit);                     // cell state
        Variable ot = sigmoid(peep(gate(proj4, 3, c), call(Sct, ct), Co));  // output gate
        Variable ht = element_times(ot, activate(act, ct));
        body = combine({project(ht), ct});
    }
    operands.emplace_back(x, placeholder());
    return as_block(body, operands, op_name, o.name);
}

}  // namespace

FunctionPtr LSTM(const Dims& shape, const RecurrentOptions& options) {
    return recurrent_block(Cell::lstm, shape, options);
}
FunctionPtr GRU(const Dims& shape, const RecurrentOptions& options) {
    return recurrent_block(Cell::gru, shape, options);
}
FunctionPtr RNNStep(const Dims& shape, const RecurrentOptions& options) {
    return recurrent_block(Cell::rnn, shape, options);
}

namespace {
// The recurrence over x as a composite: each state a placeholder, fed back delayed, then bound to the
// step's output.
// The number of states of a step function: its operands but the last (the input).
size_t num_step_states(const FunctionPtr& step, const std::string& where) {
    CTK_CHECK(step != nullptr, ValueError, where, ": null step function");
    const size_t declared = step->declared_placeholders().size();  // a Python step closing over others
    const size_t n = declared > 0 ? declared : step->placeholders().size();
    CTK_CHECK(n >= 2, ValueError, where, ": the step function needs state operand(s) and an input; ",
              step->op_name(), " takes ", n);
    return n - 1;
}

// `initial_states`: one per state (RecurrenceFrom), or one for all (Recurrence; undefined: 0).
FunctionPtr recur(const FunctionPtr& step, const Variable& x, bool go_backwards,
                  const std::vector<Variable>& initial_states, bool return_full_state,
                  const std::string& where) {
    const size_t num_states = num_step_states(step, where);
    std::vector<Variable> forward, args;
    for (size_t i = 0; i < num_states; ++i) {
        const Variable& init = initial_states.size() == num_states ? initial_states[i] : initial_states.at(0);
        forward.push_back(placeholder());
        args.push_back(go_backwards ? Variable(sequence::future_value(forward[i], init))
                                    : Variable(sequence::past_value(forward[i], init)));
    }
    args.push_back(x);
    FunctionPtr out = (*step)(args);
    const auto outs = out->outputs();
    CTK_CHECK(outs.size() >= num_states, ValueError, where, ": the step function has ", num_states,
              " state operand(s) but only ", outs.size(), " output(s)");
    VariableMap resolve;
    for (size_t i = 0; i < num_states; ++i) resolve.emplace(forward[i], outs[i]);
    out->replace_placeholders(resolve);
    if (return_full_state) return combine(std::vector<Variable>(outs.begin(), outs.begin() + num_states));
    return alias(outs[0]);
}

FunctionPtr recurrence_layer(const char* op_name, const FunctionPtr& step, bool go_backwards,
                             const Variable& initial_state, bool return_full_state, bool fold,
                             const std::string& name) {
    const std::string where = std::string(op_name) + " '" + name + "'";
    Variable inner = placeholder();
    FunctionPtr body = recur(step, inner, go_backwards, {initial_state}, return_full_state, where);
    if (fold) {
        std::vector<Variable> picked;
        for (const Variable& v : body->outputs())
            picked.push_back(go_backwards ? Variable(sequence::first(v)) : Variable(sequence::last(v)));
        body = picked.size() == 1 ? as_function(picked[0]) : combine(picked);
    }
    // A Python step function closing over an enclosing function's placeholders (CNTK's attention
    // decoder reads the encoder's output): the recurrence stays a composite, as CNTK's was, taking x as
    // its one declared argument; the free placeholders are bound with the enclosing function's.
    const size_t declared = step->declared_placeholders().size();
    if (declared > 0 && declared < step->placeholders().size())
        return with_argument_order(body, {inner}, name);
    return as_block(body, {{inner, placeholder()}}, op_name, name);
}
}  // namespace

namespace {
// An unset initial state takes default_options' (an undefined Variable means 0 downstream).
Variable initial_or_default(const Variable& given) {
    if (given.defined()) return given;
    return option(std::optional<Variable>{}, &LayerDefaults::initial_state, Variable());
}
}  // namespace

FunctionPtr Recurrence(const FunctionPtr& step, std::optional<bool> go_backwards,
                       const Variable& initial_state, bool return_full_state, const std::string& name) {
    return recurrence_layer("Recurrence", step, option(go_backwards, &LayerDefaults::go_backwards, false),
                            initial_or_default(initial_state), return_full_state, false, name);
}

FunctionPtr Fold(const FunctionPtr& step, std::optional<bool> go_backwards, const Variable& initial_state,
                 bool return_full_state, const std::string& name) {
    return recurrence_layer("Fold", step, option(go_backwards, &LayerDefaults::go_backwards, false),
                            initial_or_default(initial_state), return_full_state, true, name);
}

FunctionPtr RecurrenceFrom(const FunctionPtr& step, std::optional<bool> go_backwards_given,
                           bool return_full_state, const std::string& name) {
    const bool go_backwards = option(go_backwards_given, &LayerDefaults::go_backwards, false);
    const std::string where = "RecurrenceFrom '" + name + "'";
    const size_t num_states = num_step_states(step, where);
    std::vector<Variable> inits;
    std::vector<std::pair<Variable, Variable>> operands;
    for (size_t i = 0; i < num_states; ++i) {
        inits.push_back(placeholder());
        operands.emplace_back(inits.back(), placeholder());
    }
    Variable inner = placeholder();
    operands.emplace_back(inner, placeholder());
    FunctionPtr body = recur(step, inner, go_backwards, inits, return_full_state, where);
    return as_block(body, operands, "RecurrenceFrom", name);
}

FunctionPtr Sequential(const std::vector<FunctionPtr>& layers, const std::string& name) {
    CTK_CHECK(!layers.empty(), ValueError, "Sequential '", name, "': no layers");
    return make_layer("Sequential", name, [&](const Variable& x) {
        Variable v = x;
        for (size_t i = 0; i < layers.size(); ++i) {
            CTK_CHECK(layers[i] != nullptr, ValueError, "Sequential '", name, "': layer ", i, " is null");
            v = call(layers[i], v);
        }
        return as_function(v);
    });
}

std::vector<FunctionPtr> For(int n, const std::function<FunctionPtr(int)>& constructor) {
    std::vector<FunctionPtr> out;
    for (int i = 0; i < n; ++i) out.push_back(constructor(i));
    return out;
}

FunctionPtr ResNetBlock(const FunctionPtr& f, const std::string& name) {
    return make_layer("ResNetBlock", name, [&](const Variable& x) { return plus(call(f, x), x); });
}

FunctionPtr SequentialClique(const std::vector<FunctionPtr>& functions, const std::string& name) {
    CTK_CHECK(!functions.empty(), ValueError, "SequentialClique '", name, "': no functions");
    return make_layer("SequentialClique", name, [&](const Variable& x) {
        Variable sum_so_far = x;
        Variable out;
        for (const FunctionPtr& f : functions) {
            out = call(f, sum_so_far);
            sum_so_far = plus(sum_so_far, out);
        }
        return as_function(out);
    });
}

}  // namespace ctk::layers
