// Op-harness cases for batch normalization: per-channel (spatial) and per-activation statistics,
// training (y, batch mean, biased batch variance; gradients through the batch statistics) and
// inference with given statistics; x of rank 2 to 5. The mixed cases run bf16/f16 data with f32
// parameters and statistics, as mixed precision trains.
#include <cmath>
#include <limits>
#include <string>

#include "kernels/op_harness.h"

namespace ctk::test {

namespace {

// The index of the statistic an element of x belongs to: its channel, or (per activation) its
// position within the sample.
Dims stat_index(const Dims& xi, bool spatial) {
    if (spatial) return {xi[1]};
    return Dims(xi.begin() + 1, xi.end());
}

Shape stat_shape(const Shape& x, bool spatial) {
    if (spatial) return Shape{x[1]};
    return Shape(Dims(x.dims().begin() + 1, x.dims().end()));
}

Tensor normalize_reference(const Tensor& x, const Tensor& scale, const Tensor& bias, const Tensor& mean,
                           const Tensor& var, const BatchNormAttrs& a) {
    Tensor y = Tensor::empty(x.shape(), DataType::f64);
    for_each_index(x.shape(), [&](const Dims& i) {
        const Dims s = stat_index(i, a.spatial);
        y.set(i, scale.at(s) * (x.at(i) - mean.at(s)) / std::sqrt(var.at(s) + a.epsilon) + bias.at(s));
    });
    return y;
}

Tensors training_reference(const Tensor& x, const Tensor& scale, const Tensor& bias,
                           const BatchNormAttrs& a) {
    const Shape ss = stat_shape(x.shape(), a.spatial);
    Tensor sum = Tensor::zeros(ss, DataType::f64), sq = Tensor::zeros(ss, DataType::f64);
    const double count = static_cast<double>(x.numel() / ss.numel());
    for_each_index(x.shape(), [&](const Dims& i) {
        const Dims s = stat_index(i, a.spatial);
        sum.set(s, sum.at(s) + x.at(i));
    });
    Tensor mean = Tensor::empty(ss, DataType::f64), var = Tensor::empty(ss, DataType::f64);
    for_each_index(ss, [&](const Dims& s) { mean.set(s, sum.at(s) / count); });
    for_each_index(x.shape(), [&](const Dims& i) {
        const Dims s = stat_index(i, a.spatial);
        const double d = x.at(i) - mean.at(s);
        sq.set(s, sq.at(s) + d * d);
    });
    for_each_index(ss, [&](const Dims& s) { var.set(s, sq.at(s) / count); });  // biased
    return {normalize_reference(x, scale, bias, mean, var, a), mean, var};
}

enum class Sixteen { none, bf16, mixed };  // which 16-bit runs a case adds to f32 and f64

OpCase training_case(const std::string& name, const Shape& x, bool spatial, double epsilon,
                     Sixteen sixteen = Sixteen::none) {
    const BatchNormAttrs a{epsilon, spatial};
    const Shape ss = stat_shape(x, spatial);
    OpCase c;
    c.name = "batch_norm/training/" + name;
    c.ops = {OpKind::batch_norm_training, OpKind::batch_norm_backward};
    c.inputs = {InputSpec::uniform(x, -2, 2), InputSpec::uniform(ss, 0.5, 1.5), InputSpec::uniform(ss)};
    c.forward = [a](const Tensors& in) {
        BatchNormResult r = batch_norm_training(in[0], in[1], in[2], a);
        return Tensors{r.y, r.mean, r.var};
    };
    c.reference = [a](const Tensors& in) { return training_reference(in[0], in[1], in[2], a); };
    c.backward = [a](const Tensors& in, const Tensors& dy) {
        BatchNormResult r = batch_norm_training(in[0], in[1], in[2], a);
        BatchNormGrads g = batch_norm_backward(in[0], dy[0], in[1], r.mean, r.var, a);
        return Tensors{g.dx, g.dscale, g.dbias};
    };
    c.outputs_without_grad = {1, 2};  // the saved statistics
    if (sixteen == Sixteen::bf16) c.dtypes = {DataType::f32, DataType::f64, DataType::bf16};
    if (sixteen == Sixteen::mixed) {
        c.dtypes = {DataType::f32, DataType::f64, DataType::bf16, DataType::f16};
        c.f32_inputs = {1, 2};
    }
    c.rtol_f32 = 1e-4;
    c.atol_f32 = 1e-5;
    c.grad_atol = 1e-7;
    return c;
}

OpCase inference_case(const std::string& name, const Shape& x, bool spatial, double epsilon,
                      bool mixed = false) {
    const BatchNormAttrs a{epsilon, spatial};
    const Shape ss = stat_shape(x, spatial);
    OpCase c;
    c.name = "batch_norm/inference/" + name;
    c.ops = {OpKind::batch_norm_inference};
    c.inputs = {InputSpec::uniform(x, -2, 2), InputSpec::uniform(ss, 0.5, 1.5), InputSpec::uniform(ss),
                InputSpec::uniform(ss, -0.5, 0.5), InputSpec::uniform(ss, 0.5, 2.0)};
    c.forward = [a](const Tensors& in) {
        return Tensors{batch_norm_inference(in[0], in[1], in[2], in[3], in[4], a)};
    };
    c.reference = [a](const Tensors& in) {
        return Tensors{normalize_reference(in[0], in[1], in[2], in[3], in[4], a)};
    };
    c.dtypes = {DataType::f32, DataType::f64, DataType::bf16};
    if (mixed) {
        c.dtypes.push_back(DataType::f16);
        c.f32_inputs = {1, 2, 3, 4};
    }
    c.rtol_f32 = 1e-5;
    c.atol_f32 = 1e-5;
    return c;
}

// The running statistics' update: inputs (batch mean, batch var, running mean, running var, count);
// outputs the updated running mean, var and count (the op runs on copies: it updates in place).
// `statistics` values: more than one block's 256 threads on a GPU in the large case.
OpCase running_case(const std::string& name, int64_t statistics, double count, double time_constant) {
    const BatchNormRunningAttrs a{32.0, 1.25, time_constant};
    const Shape ss{statistics};
    OpCase c;
    c.name = "batch_norm/running_update/" + name;
    c.ops = {OpKind::batch_norm_running_update};
    c.inputs = {InputSpec::uniform(ss, -1, 1), InputSpec::uniform(ss, 0.1, 2), InputSpec::uniform(ss, -1, 1),
                InputSpec::uniform(ss, 0.5, 1.5),
                InputSpec::constant(Tensor::from_vector<double>({count}, Shape{1}))};
    c.forward = [a](const Tensors& in) {
        Tensor rmean = in[2].clone(), rvar = in[3].clone(), n = in[4].clone();
        batch_norm_update_running(in[0], in[1], rmean, rvar, n, a);
        return Tensors{rmean, rvar, n};
    };
    c.reference = [a](const Tensors& in) {
        const double n = in[4].at({0});
        double w = 1.0;  // time constant 0, or the first batch
        if (n != 0 && a.time_constant < 0)
            w = a.samples / (n + a.samples);  // CNTK's corpus-level statistics
        else if (n != 0 && std::isinf(a.time_constant))
            w = 0.0;  // frozen after the first batch
        else if (n != 0 && a.time_constant > 0)
            w = 1.0 - std::exp(-a.samples / a.time_constant);
        Tensor rmean = Tensor::empty(in[2].shape(), DataType::f64),
               rvar = Tensor::empty(in[3].shape(), DataType::f64);
        for (int64_t i = 0; i < rmean.numel(); ++i) {
            rmean.set({i}, in[2].at({i}) * (1 - w) + in[0].at({i}) * w);
            rvar.set({i}, in[3].at({i}) * (1 - w) + in[1].at({i}) * a.unbias * w);
        }
        return Tensors{rmean, rvar, Tensor::from_vector<double>({n + a.samples}, Shape{1})};
    };
    return c;
}

// 20,000 values per channel: the CUDA kernels split each channel over 3 blocks and merge the partial
// results. x's numerical gradient is left to the small cases (it would take 40,000 perturbations).
OpCase split_channels_case() {
    OpCase c = training_case("spatial_split_channels", {50, 2, 20, 20}, true, 1e-5, Sixteen::mixed);
    c.inputs[0].no_grad();
    return c;
}

}  // namespace

std::vector<OpCase> batch_norm_cases() {
    return {
        training_case("spatial_2d", {4, 3, 3, 2}, true, 1e-5, Sixteen::bf16),
        training_case("spatial_rank2", {6, 4}, true, 1e-5),
        training_case("spatial_1d", {3, 2, 5}, true, 1e-3),
        training_case("spatial_3d", {2, 2, 2, 3, 2}, true, 1e-5),
        training_case("spatial_batch1", {1, 3, 2, 3}, true, 1e-3),
        // f32 planes of 8 or more values run on the plain layout (plain_batch_norm.cpp): 16-lane blocks
        // and a tail, a plane that is all tail, and 3-D data.
        training_case("spatial_plain_planes", {3, 4, 5, 5}, true, 1e-5),
        training_case("spatial_plain_tail_only", {5, 3, 8}, true, 1e-3),
        training_case("spatial_plain_3d", {2, 18, 2, 3, 3}, true, 1e-5),
        inference_case("spatial_plain_planes", {3, 18, 7, 3}, true, 1e-5),
        // 16 or more (per-activation: C * spatial) channels take oneDNN's blocked layout.
        training_case("spatial_blocked_20ch", {3, 20, 2, 2}, true, 1e-5, Sixteen::bf16),
        training_case("per_activation_blocked", {4, 2, 3, 3}, false, 1e-5),
        training_case("per_activation_2d", {5, 2, 3, 2}, false, 1e-5, Sixteen::bf16),
        training_case("per_activation_rank2", {5, 3}, false, 1e-3),
        training_case("per_activation_1d", {4, 3, 2}, false, 1e-5),
        inference_case("spatial_2d", {3, 4, 2, 2}, true, 1e-5),
        inference_case("spatial_rank2", {3, 5}, true, 1e-3),
        inference_case("spatial_blocked_3d", {2, 17, 2, 1, 2}, true, 1e-5),
        inference_case("per_activation_2d", {3, 2, 2, 3}, false, 1e-5),
        inference_case("per_activation_3d", {2, 2, 2, 2, 3}, false, 1e-3),
        running_case("first_batch", 6, 0.0, 5000.0),
        running_case("time_constant", 6, 64.0, 5000.0),
        running_case("batch_only", 6, 64.0, 0.0),
        running_case("infinite_frozen", 6, 96.0, std::numeric_limits<double>::infinity()),
        running_case("infinite_first_batch", 6, 0.0, std::numeric_limits<double>::infinity()),
        running_case("negative_cumulative", 6, 96.0, -1.0),
        running_case("negative_first_batch", 6, 0.0, -1.0),
        running_case("many_statistics", 1000, 64.0, 5000.0),
        split_channels_case(),
        // 16-bit data with f32 statistics (mixed precision), plain and blocked layouts.
        training_case("mixed_spatial_2d", {4, 3, 3, 2}, true, 1e-5, Sixteen::mixed),
        training_case("mixed_spatial_blocked_16ch", {2, 16, 3, 3}, true, 1e-5, Sixteen::mixed),
        training_case("mixed_spatial_1d", {3, 2, 5}, true, 1e-3, Sixteen::mixed),
        training_case("mixed_per_activation", {5, 2, 3, 2}, false, 1e-5, Sixteen::mixed),
        inference_case("mixed_spatial_2d", {3, 4, 2, 2}, true, 1e-5, true),
        inference_case("mixed_blocked_3d", {2, 17, 2, 1, 2}, true, 1e-5, true),
    };
}

}  // namespace ctk::test
