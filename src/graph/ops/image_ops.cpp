// CNTK's image and normalization composites, each a block with CNTK's op name: depth_to_space and
// space_to_depth (ONNX's DCR order, as CNTK 2.7), image_scaler, local_response_normalization,
// mean_variance_normalization, per_dim_mean_variance_normalize, and the n-ary mean. Gradients come
// from the ops inside.
#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace {

void check_image(const Variable& x, const std::string& where) {
    CTK_CHECK(x.rank() == 3, ShapeError, where, ": the operand ", x.to_string(),
              " must be a 3-dimensional tensor [C, H, W] (an image with channels)");
    for (int64_t d : x.shape())
        CTK_CHECK(d > 0, ShapeError, where, ": the operand ", x.to_string(), " needs known dims");
}

Variable scalar(double v, DataType dtype) {
    return constant(v, dtype);
}

}  // namespace

FunctionPtr depth_to_space(const Variable& x, int64_t block_size, const std::string& name) {
    const std::string where = "depth_to_space '" + name + "'";
    check_image(x, where);
    const int64_t b = block_size, c = x.shape()[0], h = x.shape()[1], w = x.shape()[2];
    CTK_CHECK(b >= 1, ValueError, where, ": block_size ", b, " must be >= 1");
    CTK_CHECK(c % (b * b) == 0, ShapeError, where, ": the number of channels of ", x.to_string(),
              " must be divisible by block_size x block_size (", b, " x ", b, ")");
    // DCR: out[c, h b + i, w b + j] = in[(i b + j) C' + c, h, w].
    return detail::make_block_op(
        "DepthToSpace", {x},
        [=](const std::vector<Variable>& in) {
            Variable t = transpose(reshape(in[0], {b, b, c / (b * b), h, w}), {2, 3, 0, 4, 1});
            return Variable(reshape(t, {c / (b * b), h * b, w * b}));
        },
        name);
}

FunctionPtr space_to_depth(const Variable& x, int64_t block_size, const std::string& name) {
    const std::string where = "space_to_depth '" + name + "'";
    check_image(x, where);
    const int64_t b = block_size, c = x.shape()[0], h = x.shape()[1], w = x.shape()[2];
    CTK_CHECK(b >= 1, ValueError, where, ": block_size ", b, " must be >= 1");
    CTK_CHECK(h % b == 0 && w % b == 0, ShapeError, where, ": the spatial dims of ", x.to_string(),
              " must be divisible by block_size ", b);
    return detail::make_block_op(
        "SpaceToDepth", {x},
        [=](const std::vector<Variable>& in) {
            Variable t = transpose(reshape(in[0], {c, h / b, b, w / b, b}), {2, 4, 0, 1, 3});
            return Variable(reshape(t, {c * b * b, h / b, w / b}));
        },
        name);
}

FunctionPtr image_scaler(const Variable& x, double scalar_value, const std::vector<double>& biases,
                         const std::string& name) {
    const std::string where = "image_scaler '" + name + "'";
    check_image(x, where);
    const int64_t c = x.shape()[0];
    CTK_CHECK(static_cast<int64_t>(biases.size()) == c, ShapeError, where, ": ", biases.size(),
              " biases for the ", c, " channels of ", x.to_string());
    return detail::make_block_op(
        "ImageScaler", {x},
        [=](const std::vector<Variable>& in) {
            const DataType dt = in[0].dtype();
            Variable bias = constant(Tensor::from_vector(biases, Shape{c, 1, 1}).to(dt), "Biases");
            return Variable(plus(element_times(in[0], scalar(scalar_value, dt)), bias));
        },
        name);
}

// x / (bias + alpha / (2r + 1) * sum of x^2 over channels [c - r, c + r] inside the map)^beta. CNTK
// divides alpha by the whole window even where the window leaves the channels (ONNX's LRN too).
FunctionPtr local_response_normalization(const Variable& x, int64_t depth_radius, double bias, double alpha,
                                         double beta, const std::string& name) {
    const std::string where = "local_response_normalization '" + name + "'";
    check_image(x, where);
    CTK_CHECK(depth_radius >= 0, ValueError, where, ": depth_radius ", depth_radius, " must be >= 0");
    const int64_t c = x.shape()[0], r = depth_radius;
    return detail::make_block_op(
        "LocalResponseNormalization", {x},
        [=](const std::vector<Variable>& in) {
            const DataType dt = in[0].dtype();
            Variable sq = square(in[0]);
            Variable padded = pad(sq, {{r, r}, {0, 0}, {0, 0}});  // zeros outside the channels
            Variable window = slice(padded, {Axis(0)}, {0}, {c});
            for (int64_t k = 1; k <= 2 * r; ++k)
                window = plus(window, slice(padded, {Axis(0)}, {k}, {k + c}));
            Variable base = plus(scalar(bias, dt),
                                 element_times(scalar(alpha / static_cast<double>(2 * r + 1), dt), window));
            return Variable(element_divide(in[0], pow(base, scalar(beta, dt))));
        },
        name);
}

// Per sample: (x - mean) / (std + epsilon) with the biased std, over every static axis but the first
// (the channel axis; all of them with use_stats_across_channels or for a vector). Epsilon goes on the
// std, as CNTK (its test with epsilon 0.01 pins that).
FunctionPtr mean_variance_normalization(const Variable& x, double epsilon, bool use_stats_across_channels,
                                        bool do_variance_scaling, const std::string& name) {
    const std::string where = "mean_variance_normalization '" + name + "'";
    CTK_CHECK(epsilon >= 0, ValueError, where, ": epsilon ", epsilon, " must be non-negative");
    CTK_CHECK(x.rank() >= 1, ShapeError, where, ": the operand ", x.to_string(), " must have rank >= 1");
    std::vector<Axis> axes;
    for (int i = x.rank() == 1 || use_stats_across_channels ? 0 : 1; i < x.rank(); ++i)
        axes.push_back(Axis(i));
    return detail::make_block_op(
        "MeanVarianceNormalization", {x},
        [=](const std::vector<Variable>& in) {
            Variable centered = minus(in[0], reduce_mean(in[0], axes));
            if (!do_variance_scaling) return centered;
            Variable deviation = sqrt(reduce_mean(square(centered), axes));
            return Variable(element_divide(centered, plus(deviation, scalar(epsilon, in[0].dtype()))));
        },
        name);
}

FunctionPtr per_dim_mean_variance_normalize(const Variable& x, const Variable& mean,
                                            const Variable& inv_stddev, const std::string& name) {
    return detail::make_block_op(
        "PerDimMeanVarianceNormalize", {x, mean, inv_stddev},
        [](const std::vector<Variable>& in) { return Variable(element_times(minus(in[0], in[1]), in[2])); },
        name);
}

FunctionPtr mean(const std::vector<Variable>& operands, const std::string& name) {
    CTK_CHECK(!operands.empty(), ValueError, "mean '", name, "': no operands");
    return detail::make_block_op(
        "Mean", operands,
        [](const std::vector<Variable>& in) {
            return Variable(element_divide(sum(in), scalar(static_cast<double>(in.size()), in[0].dtype())));
        },
        name);
}

}  // namespace ctk
