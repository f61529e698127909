// convolution, pooling, unpooling and batch_normalization on [C, spatial...] samples (oneDNN/cuDNN via the
// eager ops, the dynamic axes folded into the batch). Per-axis lists (strides, auto_padding, dilation)
// follow CNTK: they run over the sample's axes and a shorter list is extended at the front with its
// first value, so (2,) means 2 on every axis.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

// The values for the `spatial` trailing axes of a rank-`rank` sample from a CNTK per-axis list.
template <typename T>
std::vector<T> spatial_values(std::vector<T> list, int rank, int spatial, const std::string& where,
                              const char* what) {
    CTK_CHECK(!list.empty(), ValueError, where, ": empty ", what, " list");
    CTK_CHECK(static_cast<int>(list.size()) <= rank, ValueError, where, ": ", what, " has ", list.size(),
              " entries for a sample of rank ", rank);
    while (static_cast<int>(list.size()) < rank) list.insert(list.begin(), list.front());
    return std::vector<T>(list.end() - spatial, list.end());
}
std::vector<bool> bools(const Dims& d) {
    return std::vector<bool>(d.begin(), d.end());
}

// The sample dims of the data (its dims after the dynamic ones): the geometry at run time, which
// free (kFreeDim) spatial dims of the variable leave open until then.
Dims sample_dims(const Tensor& data, int dyn) {
    return Dims(data.shape().dims().begin() + dyn, data.shape().dims().end());
}

// Shape inference with free spatial dims: infers on a stand-in size and marks those output dims free.
// The channel axis must be known, unless the op keeps it as it is (pooling: `free_channel`).
template <typename Infer>
Dims infer_with_free_dims(const Dims& x, const std::string& where, Infer&& infer, bool free_channel = false) {
    CTK_CHECK(x.at(0) >= 0 || (free_channel && x.at(0) == kFreeDim), ShapeError, where,
              ": the channel dim of ", static_shape_string(x), " must be known");
    Dims probe = x;
    std::vector<bool> free(x.size(), false);
    for (size_t i = free_channel ? 0 : 1; i < x.size(); ++i)
        if (x[i] == kFreeDim) {
            probe[i] = 1 << 16;  // large enough for any window; the result for this axis is discarded
            free[i] = true;
        }
    Dims out = infer(probe);
    for (size_t i = 0; i < out.size() && i < free.size(); ++i)
        if (free[i]) out[i] = kFreeDim;
    return out;
}

// ---- convolution: operands (W, x) in CNTK's order ----
ConvAttrs conv_attrs(const Attributes& a, const Dims& x, const Dims& w, const std::string& where) {
    const int rank = static_cast<int>(x.size()), spatial = rank - 1;
    ConvAttrs c;
    c.strides = spatial_values(a.get<Dims>("strides"), rank, spatial, where, "strides");
    c.dilation = spatial_values(a.get<Dims>("dilation"), rank, spatial, where, "dilation");
    auto pad = spatial_values(bools(a.get<Dims>("autoPadding")), rank, spatial, where, "auto_padding");
    c.groups = a.get<int64_t>("groups");
    for (int i = 0; i < spatial; ++i) {
        int64_t lo = 0, hi = 0;
        if (pad[static_cast<size_t>(i)])
            cntk_auto_pad(x[static_cast<size_t>(i + 1)], w[static_cast<size_t>(i + 2)],
                          c.strides[static_cast<size_t>(i)], c.dilation[static_cast<size_t>(i)], lo, hi);
        c.pad_lo.push_back(lo);
        c.pad_hi.push_back(hi);
    }
    return c;
}
Dims with_batch(const Dims& d) {
    Dims out{1};
    out.insert(out.end(), d.begin(), d.end());
    return out;
}
// A kernel of the operand's rank has no output-channel axis (CNTK's LocalResponseNormalization builds
// one, [1 x 5 x 1 x 1] over [1 x C x H x W]): it is one output channel.
bool kernel_without_out_channels(const Dims& w, const Dims& x) {
    return w.size() == x.size() && w.size() >= 2 && w[0] == x[0] &&
           std::none_of(w.begin(), w.end(), [](int64_t d) { return d == kInferredDim; });
}
Tensor with_out_channel(const Tensor& w, const Dims& x) {
    if (!kernel_without_out_channels(w.shape().dims(), x)) return w;
    return w.reshape(with_batch(w.shape().dims()));
}

// CNTK before 2.7 took a grouped convolution's kernel with every input channel, [O, C, k...], and used
// its block diagonal: output group g reads input group g. Such a kernel (in-channel dim C with groups > 1,
// which no [O, C / groups, k...] kernel has) is cut to that diagonal for the kernels, and its gradient
// put back, zero off the diagonal.
bool full_grouped_kernel(const Dims& w, int64_t in_channels, int64_t groups) {
    return groups > 1 && w.size() >= 2 && w[1] == in_channels;
}
Tensor kernel_diagonal(const Tensor& w, int64_t groups) {
    const int64_t out_per = w.dim(0) / groups, in_per = w.dim(1) / groups;
    Dims dims = w.shape().dims();
    dims[1] = in_per;
    Tensor d = Tensor::empty(Shape(dims), w.dtype(), w.device());
    for (int64_t g = 0; g < groups; ++g) {
        Tensor dst = d.slice(0, g * out_per, (g + 1) * out_per);
        dst.copy_from(w.slice(0, g * out_per, (g + 1) * out_per).slice(1, g * in_per, (g + 1) * in_per));
    }
    return d;
}
Tensor from_kernel_diagonal(const Tensor& dd, const Dims& full, int64_t groups) {
    const int64_t out_per = full[0] / groups, in_per = full[1] / groups;
    Tensor w = Tensor::zeros(Shape(full), dd.dtype(), dd.device());
    for (int64_t g = 0; g < groups; ++g) {
        Tensor dst = w.slice(0, g * out_per, (g + 1) * out_per).slice(1, g * in_per, (g + 1) * in_per);
        dst.copy_from(dd.slice(0, g * out_per, (g + 1) * out_per));
    }
    return w;
}

std::vector<OutputSpec> infer_conv(InferContext& c) {
    Variable &w = c.inputs[0], &x = c.inputs[1];
    Dims xs = x.shape();
    CTK_CHECK(xs.size() >= 2, ShapeError, c.where, ": the operand ", x.to_string(),
              " needs [channels, spatial...]");
    Dims one_out;  // the kernel seen with its output-channel axis, when it has none
    if (kernel_without_out_channels(w.shape(), xs)) one_out = with_batch(w.shape());
    Dims& ws = one_out.empty() ? w.impl()->shape : one_out;
    CTK_CHECK(ws.size() == xs.size() + 1, ShapeError, c.where, ": the kernel ", w.to_string(),
              " must have rank ", xs.size() + 1, " ([out_channels, in_channels/groups, kernel...]) for ",
              x.to_string());
    const int64_t groups = c.attrs.get<int64_t>("groups");
    // A free channel dim (CNTK's free static axes) takes the kernel's; the data's is checked when it comes.
    if (xs[0] == kFreeDim && ws[1] >= 0) xs[0] = ws[1] * groups;
    CTK_CHECK(groups >= 1 && xs[0] % groups == 0, ValueError, c.where, ": groups ", groups,
              " does not divide the ", xs[0], " channels of ", x.to_string());
    if (ws[1] == kInferredDim) ws[1] = xs[0] / groups;
    CTK_CHECK(ws[1] * groups == xs[0] || full_grouped_kernel(ws, xs[0], groups), ShapeError, c.where, ": ",
              w.to_string(), " expects ", ws[1] * groups, " input channels but ", x.to_string(), " has ",
              xs[0]);
    CTK_CHECK(!full_grouped_kernel(ws, xs[0], groups) || ws[0] % groups == 0, ValueError, c.where,
              ": groups ", groups, " does not divide the ", ws[0], " output channels of ", w.to_string());
    Dims run = ws;  // the kernel the convolution runs (a full grouped kernel's diagonal)
    if (full_grouped_kernel(ws, xs[0], groups)) run[1] = xs[0] / groups;
    Dims out = infer_with_free_dims(xs, c.where, [&](const Dims& probe) {
        ConvAttrs a = conv_attrs(c.attrs, probe, run, c.where);
        Dims sp = conv_output_spatial(Shape(with_batch(probe)), Shape(run), a);
        Dims o{ws[0]};
        o.insert(o.end(), sp.begin(), sp.end());
        return o;
    });
    return {{out, common_dtype(c.inputs, c.where), x.dynamic_axes()}};
}
// The kernel the convolution runs: with its output-channel axis, cut to its diagonal when full.
Tensor run_kernel(const Tensor& given, const Dims& x_sample, int64_t groups) {
    Tensor w = with_out_channel(given, x_sample);
    return full_grouped_kernel(w.shape().dims(), x_sample[0], groups) ? kernel_diagonal(w, groups) : w;
}
void forward_conv(ForwardContext& c) {
    const Tensor& x = c.inputs[1].data();
    const int dyn = c.dyn_rank(1);
    const Tensor w = run_kernel(c.inputs[0].data(), sample_dims(x, dyn), c.attrs.get<int64_t>("groups"));
    ConvAttrs a = conv_attrs(c.attrs, sample_dims(x, dyn), w.shape().dims(), c.where);
    Tensor y = convolution(fold_dynamic(x, dyn), w, Tensor(), a);
    c.outputs.push_back(Value(unfold_dynamic(y, x, dyn)));
}
void backward_conv(BackwardContext& c) {
    const Tensor& x = c.inputs[1].data();
    const int dyn = c.dyn_rank(1);
    const int64_t groups = c.attrs.get<int64_t>("groups");
    const Tensor w = run_kernel(c.inputs[0].data(), sample_dims(x, dyn), groups);
    ConvAttrs a = conv_attrs(c.attrs, sample_dims(x, dyn), w.shape().dims(), c.where);
    Tensor xf = fold_dynamic(x, dyn), dy = fold_dynamic(c.output_grads[0], dyn);
    if (c.needs[0]) {
        Tensor dw = convolution_backward_weights(xf, dy, w.shape(), a, false).dw;
        const Dims& given = c.inputs[0].data().shape().dims();
        if (full_grouped_kernel(given, sample_dims(x, dyn)[0], groups))
            dw = from_kernel_diagonal(dw, given, groups);
        c.input_grads[0] = dw.reshape(given);
    }
    if (c.needs[1])
        c.input_grads[1] = convolution_backward_data(dy, w, xf.shape(), a).reshape(x.shape().dims());
}

// ---- convolution_transpose: operands (W [C_in, C_out, k...], x [C_in, spatial...]) ----
// It is the adjoint of the convolution that maps [C_out, spatial'] to [C_in, spatial] with kernel W:
// forward is that convolution's data gradient; the data gradient is the convolution itself.
struct TransposeGeometry {
    ConvAttrs attrs;
    Dims out;  // [C_out, spatial'...]
};
TransposeGeometry transpose_geometry(const Attributes& a, const Dims& x, const Dims& w,
                                     const std::string& where) {
    const int rank = static_cast<int>(x.size()), spatial = rank - 1;
    TransposeGeometry g;
    ConvAttrs& c = g.attrs;
    c.strides = spatial_values(a.get<Dims>("strides"), rank, spatial, where, "strides");
    c.dilation = spatial_values(a.get<Dims>("dilation"), rank, spatial, where, "dilation");
    auto pad = spatial_values(bools(a.get<Dims>("autoPadding")), rank, spatial, where, "auto_padding");
    const Dims& given = a.get<Dims>("outputShape");
    CTK_CHECK(given.empty() || static_cast<int>(given.size()) == spatial, ValueError, where,
              ": output_shape ", dims_to_string(given), " must give the ", spatial, " spatial dims");
    g.out = {w[1]};
    for (int i = 0; i < spatial; ++i) {
        const size_t k = static_cast<size_t>(i);
        const int64_t in = x[k + 1], kernel = (w[k + 2] - 1) * c.dilation[k] + 1;
        const int64_t out = !given.empty() ? given[k]
                            : pad[k]       ? in * c.strides[k]
                                           : (in - 1) * c.strides[k] + kernel;
        int64_t lo = 0, hi = 0;
        if (pad[k]) cntk_auto_pad(out, w[k + 2], c.strides[k], c.dilation[k], lo, hi);
        c.pad_lo.push_back(lo);
        c.pad_hi.push_back(hi);
        g.out.push_back(out);
    }
    Dims fwd_x{1};
    fwd_x.insert(fwd_x.end(), g.out.begin(), g.out.end());
    Dims back = conv_output_spatial(Shape(fwd_x), Shape(w), c);
    CTK_CHECK(Dims(x.begin() + 1, x.end()) == back, ShapeError, where, ": output spatial dims ",
              dims_to_string(Dims(g.out.begin() + 1, g.out.end())), " do not convolve back to the input's ",
              dims_to_string(Dims(x.begin() + 1, x.end())));
    return g;
}
std::vector<OutputSpec> infer_conv_transpose(InferContext& c) {
    Variable &w = c.inputs[0], &x = c.inputs[1];
    const Dims& xs = x.shape();
    Dims& ws = w.impl()->shape;
    CTK_CHECK(xs.size() >= 2 && ws.size() == xs.size() + 1, ShapeError, c.where, ": the kernel ",
              w.to_string(), " must be [C_in, C_out, kernel...] for ", x.to_string());
    if (ws[0] == kInferredDim) ws[0] = xs[0];
    CTK_CHECK(ws[0] == xs[0], ShapeError, c.where, ": ", w.to_string(), " expects ", ws[0],
              " input channels but ", x.to_string(), " has ", xs[0]);
    const Dims out = infer_with_free_dims(
        xs, c.where, [&](const Dims& probe) { return transpose_geometry(c.attrs, probe, ws, c.where).out; });
    return {{out, common_dtype(c.inputs, c.where), x.dynamic_axes()}};
}
void forward_conv_transpose(ForwardContext& c) {
    const Tensor &w = c.inputs[0].data(), &x = c.inputs[1].data();
    const int dyn = c.dyn_rank(1);
    TransposeGeometry g = transpose_geometry(c.attrs, sample_dims(x, dyn), w.shape().dims(), c.where);
    Tensor xf = fold_dynamic(x, dyn);
    Dims y_shape{xf.dim(0)};
    y_shape.insert(y_shape.end(), g.out.begin(), g.out.end());
    Tensor y = convolution_backward_data(xf, w, Shape(y_shape), g.attrs);
    c.outputs.push_back(Value(unfold_dynamic(y, x, dyn)));
}
void backward_conv_transpose(BackwardContext& c) {
    const Tensor &w = c.inputs[0].data(), &x = c.inputs[1].data();
    const int dyn = c.dyn_rank(1);
    TransposeGeometry g = transpose_geometry(c.attrs, sample_dims(x, dyn), w.shape().dims(), c.where);
    Tensor dy = fold_dynamic(c.output_grads[0], dyn);
    if (c.needs[1]) c.input_grads[1] = convolution(dy, w, Tensor(), g.attrs).reshape(x.shape().dims());
    if (c.needs[0])
        c.input_grads[0] =
            convolution_backward_weights(dy, fold_dynamic(x, dyn), w.shape(), g.attrs, false).dw;
}

// ---- pooling ----
// The kernel's geometry for a window attribute (`window_key`, CNTK's name; `what`, Python's, for
// errors) with the op's strides and autoPadding over a sample x [C, spatial...].
PoolAttrs window_geometry(const Attributes& a, const char* window_key, const char* what, PoolKind kind,
                          bool include_pad, bool ceil_mode, const Dims& x, const std::string& where) {
    const int rank = static_cast<int>(x.size()), spatial = rank - 1;
    PoolAttrs p;
    p.kind = kind;
    p.include_pad = include_pad;
    if (a.get<Dims>(window_key).empty()) {
        // Global pooling (CNTK stores an unknown window shape): one window over every spatial axis.
        CTK_CHECK(spatial > 0, ShapeError, where,
                  ": global pooling needs spatial axes after the channel axis of ", dims_to_string(x));
        p.kernel.assign(x.begin() + 1, x.end());
        p.strides.assign(static_cast<size_t>(spatial), 1);
        p.pad_lo.assign(static_cast<size_t>(spatial), 0);
        p.pad_hi.assign(static_cast<size_t>(spatial), 0);
        return p;
    }
    p.kernel = spatial_values(a.get<Dims>(window_key), rank, spatial, where, what);
    p.strides = spatial_values(a.get<Dims>("strides"), rank, spatial, where, "strides");
    auto pad = spatial_values(bools(a.get<Dims>("autoPadding")), rank, spatial, where, "auto_padding");
    for (int i = 0; i < spatial; ++i) {
        const size_t k = static_cast<size_t>(i);
        int64_t lo = 0, hi = 0;
        if (pad[k]) cntk_auto_pad(x[k + 1], p.kernel[k], p.strides[k], 1, lo, hi);
        const int64_t span = x[k + 1] + lo + hi - p.kernel[k];
        CTK_CHECK(span >= 0, ShapeError, where, ": the window ", dims_to_string(p.kernel),
                  " is larger than the input ", dims_to_string(x), " (turn auto_padding on?)");
        if (ceil_mode && span % p.strides[k] != 0) hi += p.strides[k] - span % p.strides[k];
        p.pad_lo.push_back(lo);
        p.pad_hi.push_back(hi);
    }
    return p;
}
PoolAttrs pool_attrs(const Attributes& a, const Dims& x, const std::string& where) {
    return window_geometry(a, "poolingWindowShape", "pooling_window_shape",
                           a.get<int64_t>("poolingType") == 0 ? PoolKind::max : PoolKind::average,
                           a.get<bool>("includePad"), a.get<bool>("ceilOutDim"), x, where);
}
// The pooled sample [C, out...] of a sample x [C, spatial...].
Dims pooled_dims(const Dims& x, const PoolAttrs& p) {
    Dims o{x[0]};
    for (size_t i = 0; i < p.kernel.size(); ++i)
        o.push_back((x[i + 1] + p.pad_lo[i] + p.pad_hi[i] - p.kernel[i]) / p.strides[i] + 1);
    return o;
}
// A window given for every axis of the sample whose channel entry (or stride) is not 1 pools across
// channels too (CNTK's pooling window covers the channel axis): the sample [C, spatial...] is pooled as
// [1, C, spatial...], the channel axis one more spatial axis.
bool pools_channels(const Attributes& a, int rank, const char* window_key = "poolingWindowShape") {
    const Dims& w = a.get<Dims>(window_key);
    const Dims& st = a.get<Dims>("strides");
    return (static_cast<int>(w.size()) == rank && w[0] != 1) ||
           (static_cast<int>(st.size()) == rank && st[0] != 1);
}
Dims with_unit_channel(const Dims& sample) {
    Dims d{1};
    d.insert(d.end(), sample.begin(), sample.end());
    return d;
}
std::vector<OutputSpec> infer_pool(InferContext& c) {
    const Variable& x = c.inputs[0];
    CTK_CHECK(x.rank() >= 2, ShapeError, c.where, ": ", x.to_string(), " needs [channels, spatial...]");
    const bool across = pools_channels(c.attrs, x.rank());
    Dims out = infer_with_free_dims(
        x.shape(), c.where,
        [&](const Dims& probe) {
            if (!across) return pooled_dims(probe, pool_attrs(c.attrs, probe, c.where));
            const Dims p = with_unit_channel(probe);
            const Dims o = pooled_dims(p, pool_attrs(c.attrs, p, c.where));
            return Dims(o.begin() + 1, o.end());
        },
        /*free_channel=*/true);
    return {{out, x.dtype(), x.dynamic_axes()}};
}
// The data folded to [N, C, spatial...] (or [N, 1, C, spatial...] across channels) and its geometry.
struct PoolInput {
    Tensor x;
    PoolAttrs p;
};
PoolInput pool_input(const Tensor& x, int dyn, const Attributes& a, const std::string& where) {
    Tensor f = fold_dynamic(x, dyn);
    Dims sample = sample_dims(x, dyn);
    if (pools_channels(a, static_cast<int>(sample.size()))) {
        sample = with_unit_channel(sample);
        Dims d{f.dim(0)};
        d.insert(d.end(), sample.begin(), sample.end());
        f = f.reshape(d);
    }
    return {f, pool_attrs(a, sample, where)};
}
void forward_pool(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const int dyn = c.dyn_rank(0);
    PoolInput in = pool_input(x, dyn, c.attrs, c.where);
    PoolResult r = pooling(in.x, in.p, c.training || c.keep_for_backward);
    Tensor y = r.y;
    if (in.x.rank() != x.rank() - dyn + 1) {  // across channels: drop the unit channel axis
        Dims d{y.dim(0)};
        d.insert(d.end(), y.shape().dims().begin() + 2, y.shape().dims().end());
        y = y.reshape(d);
    }
    c.outputs.push_back(Value(unfold_dynamic(y, x, dyn)));
    c.saved.push_back(r.workspace);
}
void backward_pool(BackwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const int dyn = c.dyn_rank(0);
    Tensor ws = c.saved.empty() ? Tensor() : c.saved[0];
    PoolInput in = pool_input(x, dyn, c.attrs, c.where);
    Tensor dy = fold_dynamic(c.output_grads[0], dyn);
    if (in.x.rank() != dy.rank()) {
        Dims d{dy.dim(0), 1};
        d.insert(d.end(), dy.shape().dims().begin() + 1, dy.shape().dims().end());
        dy = dy.reshape(d);
    }
    Tensor dx = pooling_backward(dy, in.x, ws, in.p);
    c.input_grads[0] = dx.reshape(x.shape().dims());
}

// ---- unpooling: (operand, pooling_input), max only (CNTK has no other) ----
// Each operand value goes to where its window's maximum is in pooling_input, zeros elsewhere; windows
// that share a maximum add up. That is max pooling's backward with dy = operand, so forward pools
// pooling_input once for the workspace (where the maxima are) and runs pooling_backward.
PoolAttrs unpool_attrs(const Attributes& a, const Dims& x, const std::string& where) {
    return window_geometry(a, "unpoolingWindowShape", "unpooling_window_shape", PoolKind::max, false, false,
                           x, where);
}
std::vector<OutputSpec> infer_unpool(InferContext& c) {
    const Variable &u = c.inputs[0], &x = c.inputs[1];
    CTK_CHECK(c.attrs.get<int64_t>("poolingType") == 0, NotImplementedError, c.where,
              ": only max unpooling exists (CNTK's MAX_UNPOOLING)");
    CTK_CHECK(x.rank() >= 2, ShapeError, c.where, ": pooling_input ", x.to_string(),
              " needs [channels, spatial...]");
    const bool across = pools_channels(c.attrs, x.rank(), "unpoolingWindowShape");
    const Dims pooled = infer_with_free_dims(x.shape(), c.where, [&](const Dims& probe) {
        if (!across) return pooled_dims(probe, unpool_attrs(c.attrs, probe, c.where));
        const Dims p = with_unit_channel(probe);
        const Dims o = pooled_dims(p, unpool_attrs(c.attrs, p, c.where));
        return Dims(o.begin() + 1, o.end());
    });
    bool fits = u.shape().size() == pooled.size();
    for (size_t i = 0; fits && i < pooled.size(); ++i)
        fits = u.shape()[i] == pooled[i] || u.shape()[i] == kFreeDim || pooled[i] == kFreeDim;
    CTK_CHECK(fits, ShapeError, c.where, ": the operand ", u.to_string(), " is not the pooled shape ",
              static_shape_string(pooled), " of pooling_input ", x.to_string(), " under this window");
    CTK_CHECK(u.dynamic_axes() == x.dynamic_axes(), ShapeError, c.where, ": the operand ", u.to_string(),
              " and pooling_input ", x.to_string(), " must have the same dynamic axes");
    return {{x.shape(), common_dtype(c.inputs, c.where), x.dynamic_axes()}};
}
// Unpooling's tensors folded as pooling folds its input: [N, C, spatial...], or [N, 1, C, spatial...] when
// the window covers the channel axis; `p` is the window over that sample.
struct UnpoolInput {
    Tensor x;
    PoolAttrs p;
    bool across;
    Dims folded;  // [N, C, spatial...]: the shape results go back to
};
Tensor with_unit_channel_axis(const Tensor& folded) {
    Dims d{folded.dim(0), 1};
    d.insert(d.end(), folded.shape().dims().begin() + 1, folded.shape().dims().end());
    return folded.reshape(d);
}
UnpoolInput unpool_input(const Tensor& x, int dyn, const Attributes& a, const std::string& where) {
    Dims sample = sample_dims(x, dyn);
    const bool across = pools_channels(a, static_cast<int>(sample.size()), "unpoolingWindowShape");
    Tensor f = fold_dynamic(x, dyn);
    const Dims folded = f.shape().dims();
    if (across) {
        sample = with_unit_channel(sample);
        f = with_unit_channel_axis(f);
    }
    return {f, unpool_attrs(a, sample, where), across, folded};
}
void forward_unpool(ForwardContext& c) {
    const Tensor &u = c.inputs[0].data(), &x = c.inputs[1].data();
    const int dyn = c.dyn_rank(1);
    const UnpoolInput in = unpool_input(x, dyn, c.attrs, c.where);
    Tensor uf = fold_dynamic(u, c.dyn_rank(0));
    if (in.across) uf = with_unit_channel_axis(uf);
    PoolResult r = pooling(in.x, in.p, true);
    CTK_CHECK(uf.shape() == r.y.shape(), ShapeError, c.where, ": the operand's data ", u.shape().to_string(),
              " does not match pooling_input's data ", x.shape().to_string(), " pooled to ",
              r.y.shape().to_string());
    const Tensor scattered = pooling_backward(uf, in.x, r.workspace, in.p);
    c.outputs.push_back(Value(unfold_dynamic(scattered.reshape(in.folded), x, dyn)));
}
// The adjoint of the scatter: per window, g at the first maximum of x in it (max pooling's choice), for
// g and x [N, C, spatial...]. It scans the window's offsets over strided views of x padded with -inf
// (a padded cell never wins), so it is element-wise ops only and runs on every backend.
Tensor gather_at_window_max(const Tensor& g, const Tensor& x, const PoolAttrs& p) {
    const int spatial = x.rank() - 2;
    Tensor xv = x, gv = g;
    Dims lo(static_cast<size_t>(x.rank()), 0), hi = lo, out;
    for (int i = 0; i < spatial; ++i) {
        const size_t k = static_cast<size_t>(i), a = k + 2;
        const int64_t in = x.dim(i + 2);
        out.push_back((in + p.pad_lo[k] + p.pad_hi[k] - p.kernel[k]) / p.strides[k] + 1);
        // Negative pads (CNTK's auto padding can give them) crop instead.
        const int64_t crop_lo = std::max<int64_t>(-p.pad_lo[k], 0),
                      crop_hi = std::max<int64_t>(-p.pad_hi[k], 0);
        xv = xv.slice(i + 2, crop_lo, in - crop_hi);
        gv = gv.slice(i + 2, crop_lo, in - crop_hi);
        lo[a] = std::max<int64_t>(p.pad_lo[k], 0);
        hi[a] = std::max<int64_t>(p.pad_hi[k], 0);
    }
    xv = pad(xv, lo, hi, PadMode::constant, -std::numeric_limits<double>::infinity());
    gv = pad(gv, lo, hi);
    auto window_view = [&](const Tensor& t, const Dims& offset) {
        Tensor v = t;
        for (int i = 0; i < spatial; ++i) {
            const size_t k = static_cast<size_t>(i);
            v = v.slice(i + 2, offset[k], offset[k] + (out[k] - 1) * p.strides[k] + 1, p.strides[k]);
        }
        return v;
    };
    Dims offset(static_cast<size_t>(spatial), 0);
    Tensor best = window_view(xv, offset).contiguous(), picked = window_view(gv, offset).contiguous();
    // Offsets in row-major order after the first; a strictly larger value takes over, so the first
    // maximum wins as in the pooling kernels.
    for (;;) {
        int i = spatial - 1;
        while (i >= 0 && ++offset[static_cast<size_t>(i)] == p.kernel[static_cast<size_t>(i)])
            offset[static_cast<size_t>(i--)] = 0;
        if (i < 0) break;
        const Tensor v = window_view(xv, offset), larger = greater(v, best);
        best = element_select(larger, v, best);
        picked = element_select(larger, window_view(gv, offset), picked);
    }
    return picked;
}
void backward_unpool(BackwardContext& c) {
    // No gradient reaches pooling_input: the output moves with it only where a window's maximum jumps.
    if (!c.needs[0]) return;
    const Tensor &u = c.inputs[0].data(), &x = c.inputs[1].data();
    const int dyn = c.dyn_rank(1);
    const UnpoolInput in = unpool_input(x, dyn, c.attrs, c.where);
    Tensor g = fold_dynamic(c.output_grads[0], dyn);
    if (in.across) g = with_unit_channel_axis(g);
    Tensor du = gather_at_window_max(g, in.x, in.p);
    c.input_grads[0] = du.reshape(u.shape().dims());
}

// ---- batch normalization: (x, scale, bias, running_mean, running_var, running_count) ----
std::vector<OutputSpec> infer_bn(InferContext& c) {
    const Variable& x = c.inputs[0];
    const bool spatial = c.attrs.get<bool>("spatial");
    CTK_CHECK(!spatial || x.rank() >= 1, ShapeError, c.where,
              ": spatial batch normalization needs [C, ...], got ", x.to_string());
    const Dims expect = spatial ? Dims{x.shape()[0]} : x.shape();
    for (size_t i = 1; i <= 4; ++i) {
        Variable& p = c.inputs[i];
        Dims& s = p.impl()->shape;
        int64_t n = 1, want = 1;
        for (int64_t d : expect) want *= d;
        bool inferred = false;
        for (int64_t& d : s) inferred = inferred || d == kInferredDim;
        if (inferred && (p.is_parameter() || p.is_constant())) s = expect;
        for (int64_t d : s) n *= d;
        CTK_CHECK(n == want, ShapeError, c.where, ": ", p.to_string(), " must hold ", want, " values (",
                  spatial ? "one per channel" : "one per activation", ") for ", x.to_string());
    }
    return {{x.shape(), x.dtype(), x.dynamic_axes()}};
}
// x as [N, C, rest] with the statistics' axis in the middle.
Tensor bn_view(const Tensor& x, int dyn, bool spatial) {
    Tensor f = fold_dynamic(x, dyn);
    return spatial ? f.reshape({f.dim(0), f.dim(1), -1}) : f.reshape({f.dim(0), -1, 1});
}
void forward_bn(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const bool spatial = c.attrs.get<bool>("spatial");
    BatchNormAttrs a{c.attrs.get<double>("epsilon"), true};
    Tensor xv = bn_view(x, c.dyn_rank(0), spatial);
    const int64_t channels = xv.dim(1);
    auto flat = [&](size_t i) { return c.inputs[i].data().reshape({channels}); };
    Tensor scale = flat(1), bias = flat(2), rmean = flat(3), rvar = flat(4);
    if (!c.training) {
        c.outputs.push_back(
            Value(batch_norm_inference(xv, scale, bias, rmean, rvar, a).reshape(x.shape().dims())));
        return;
    }
    BatchNormResult r = batch_norm_training(xv, scale, bias, a);
    c.outputs.push_back(Value(r.y.reshape(x.shape().dims())));
    c.saved = {r.mean, r.var};
    // Running statistics (CNTK's time constants, in samples: an image is one sample, however many pixels
    // its channels have): blend = 1 - exp(-samples / T); T = 0 keeps only this batch, T = inf keeps the
    // first batch's (frozen), T < 0 averages over everything seen (CNTK's corpus-level statistics); the
    // first batch (count 0) is taken whole; the count adds the samples. The
    // running variance is unbiased over the n values each channel had. The blend is computed where the
    // count lives: reading the count on the host would make every batch norm of a GPU step wait for the
    // GPU to drain.
    const double n = static_cast<double>(xv.numel() / channels);
    const double samples = static_cast<double>(xv.dim(0));
    const double tc = c.attrs.get<double>("normalizationTimeConstant");
    Tensor count = c.inputs[5].data();
    const double unbias = n > 1 ? n / (n - 1) : 1.0;
    // One kernel when the statistics share a dtype (f32 or f64) and live together; else the same formula
    // from element-wise ops (about twenty launches per batch norm: pure 16-bit models, mixed devices).
    const DataType sd = r.mean.dtype();
    if ((sd == DataType::f32 || sd == DataType::f64) && rmean.dtype() == sd && rvar.dtype() == sd &&
        count.dtype() == sd && rmean.device() == r.mean.device() && rvar.device() == r.mean.device() &&
        count.device() == r.mean.device() && rmean.is_contiguous() && rvar.is_contiguous() &&
        count.is_contiguous()) {
        batch_norm_update_running(r.mean, r.var, rmean, rvar, count,
                                  BatchNormRunningAttrs{samples, unbias, tc});
        return;
    }
    const Tensor batch_var = element_times(r.var, scalar_like(unbias, r.var));
    if (tc == 0) {
        rmean.copy_from(r.mean.to(rmean.dtype()));
        rvar.copy_from(batch_var.to(rvar.dtype()));
    } else {
        const Tensor batch_n = scalar_like(samples, count);
        const Tensor blend =
            tc < 0 ? element_divide(batch_n, plus(count, batch_n))  // 1 at count 0
                   : element_select(equal(count, scalar_like(0.0, count)), scalar_like(1.0, count),
                                    scalar_like(1.0 - std::exp(-samples / tc), count));  // 0 for T = inf
        auto mix = [&](Tensor running, const Tensor& batch) {
            const Tensor w = blend.to(running.dtype());
            running.copy_from(plus(element_times(running, minus(scalar_like(1.0, w), w)),
                                   element_times(batch.to(running.dtype()), w)));
        };
        mix(rmean, r.mean);
        mix(rvar, batch_var);
    }
    count.copy_from(plus(count, scalar_like(samples, count)));
}
void backward_bn(BackwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const bool spatial = c.attrs.get<bool>("spatial");
    BatchNormAttrs a{c.attrs.get<double>("epsilon"), true};
    Tensor xv = bn_view(x, c.dyn_rank(0), spatial), dy = bn_view(c.output_grads[0], c.dyn_rank(0), spatial);
    const int64_t channels = xv.dim(1);
    Tensor scale = c.inputs[1].data().reshape({channels});
    BatchNormGrads g;
    if (!c.saved.empty()) {
        g = batch_norm_backward(xv, dy, scale, c.saved[0], c.saved[1], a);
    } else {  // inference statistics: y = scale * (x - mean) / sqrt(var + eps) + bias, statistics fixed
        // Computed in the statistics' dtype (f32 for 16-bit data under mixed precision).
        const DataType stats = scale.dtype();
        Tensor mean = c.inputs[3].data().reshape({1, channels, 1}),
               var = c.inputs[4].data().reshape({1, channels, 1});
        Tensor inv = reciprocal(ctk::sqrt(plus(var, scalar_like(a.epsilon, var))));
        Tensor dys = dy.to(stats), xs = xv.to(stats);
        g.dx = element_times(dys, element_times(scale.reshape({1, channels, 1}), inv)).to(x.dtype());
        g.dscale = reduce_sum(element_times(dys, element_times(minus(xs, mean), inv)), {0, 2});
        g.dbias = reduce_sum(dys, {0, 2});
    }
    if (c.needs[0]) c.input_grads[0] = g.dx.reshape(x.shape().dims());
    if (c.needs[1]) c.input_grads[1] = g.dscale.reshape(c.inputs[1].data().shape().dims());
    if (c.needs[2]) c.input_grads[2] = g.dbias.reshape(c.inputs[2].data().shape().dims());
}

}  // namespace

// Fast R-CNN style coordinate maps for crop_automatic (CNTK's ComputeFilterTransform): a window of
// kernel k (dilated), stride s and lower pad p maps output cell o to input cell s * o + (k - 1) / 2 - p;
// convolution and pooling map input to output by its inverse, convolution_transpose by it.
std::optional<SpatialTransform> spatial_transform(const Function& f, size_t input) {
    const auto in = f.inputs();
    const std::string where = "crop_automatic: " + f.op_name();
    auto window = [](const Dims& kernel, const Dims& strides, const Dims& pad_lo, const Dims& dilation,
                     bool inverse) {
        SpatialTransform t;
        const size_t n = kernel.size();
        for (size_t i = 0; i < 2 && i < n; ++i) {  // width, then height: the last two axes
            const size_t a = n - 1 - i;
            const int64_t k = (kernel[a] - 1) * (dilation.empty() ? 1 : dilation[a]) + 1;
            const double scale = static_cast<double>(strides[a]);
            const double translate = static_cast<double>((k - 1) / 2 - pad_lo[a]);
            t.scale[i] = inverse ? 1.0 / scale : scale;
            t.translate[i] = inverse ? -translate / scale : translate;
        }
        return t;
    };
    switch (f.op()) {
        case PrimitiveOp::convolution: {
            if (input != 1) return std::nullopt;  // the kernel W has no spatial map
            const ConvAttrs c = conv_attrs(f.attributes(), in[1].shape(), in[0].shape(), where);
            const Dims& w = in[0].shape();
            return window(Dims(w.begin() + 2, w.end()), c.strides, c.pad_lo, c.dilation, true);
        }
        case PrimitiveOp::convolution_transpose: {
            if (input != 1) return std::nullopt;
            const TransposeGeometry g =
                transpose_geometry(f.attributes(), in[1].shape(), in[0].shape(), where);
            const Dims& w = in[0].shape();
            return window(Dims(w.begin() + 2, w.end()), g.attrs.strides, g.attrs.pad_lo, g.attrs.dilation,
                          false);
        }
        case PrimitiveOp::pooling: {
            const PoolAttrs p = pool_attrs(f.attributes(), in[0].shape(), where);
            return window(p.kernel, p.strides, p.pad_lo, {}, true);
        }
        default:
            return std::nullopt;
    }
}

void register_conv_ops(OpTable& t) {
    t.add(PrimitiveOp::convolution, OpDef{"Convolution", 2, 2, infer_conv, forward_conv, backward_conv});
    t.backward_reads(PrimitiveOp::convolution, kReadsInputs);
    t.add(PrimitiveOp::convolution_transpose, OpDef{"ConvolutionTranspose", 2, 2, infer_conv_transpose,
                                                    forward_conv_transpose, backward_conv_transpose});
    t.add(PrimitiveOp::pooling, OpDef{"Pooling", 1, 1, infer_pool, forward_pool, backward_pool});
    t.add(PrimitiveOp::unpooling, OpDef{"Unpooling", 2, 2, infer_unpool, forward_unpool, backward_unpool});
    t.add(PrimitiveOp::batch_normalization,
          OpDef{"BatchNormalization", 6, 6, infer_bn, forward_bn, backward_bn, false});
    t.autocast({PrimitiveOp::convolution, PrimitiveOp::convolution_transpose}, Autocast::low);
    t.autocast({PrimitiveOp::pooling, PrimitiveOp::unpooling}, Autocast::follow);
    // 16-bit data normalized with f32 statistics; the running averages stay f32 (as in cuDNN and oneDNN).
    t.autocast({PrimitiveOp::batch_normalization}, Autocast::follow_data);
}

}  // namespace detail

namespace {
Dims as_dims(const std::vector<bool>& b) {
    return Dims(b.begin(), b.end());
}
}  // namespace

namespace {
// CNTK also takes a kernel with as many axes as x, [C, k...] for x [C, spatial...]: one output channel,
// the kernel spanning the input channels. ctk's kernels name the output channels: [1, C, k...]
// (convolution_transpose: [C, 1, k...]), which gives CNTK's result shape [1, spatial...].
Variable with_channel_axes(const Variable& w, const Variable& x, bool transpose) {
    if (!w.shape_known() || !x.shape_known() || w.has_inferred_dims() || w.rank() != x.rank() ||
        w.rank() < 2 || w.shape()[0] != x.shape()[0])
        return w;
    Dims dims = w.shape();
    dims.insert(dims.begin() + (transpose ? 1 : 0), 1);
    return reshape(w, dims);
}
}  // namespace

FunctionPtr convolution(const Variable& w_in, const Variable& x, const Dims& strides,
                        const std::vector<bool>& auto_padding, const Dims& dilation, int64_t groups,
                        const std::string& name) {
    const Variable w = with_channel_axes(w_in, x, false);
    return detail::make_op(PrimitiveOp::convolution, {w, x},
                           Attributes{{"strides", strides},
                                      {"autoPadding", as_dims(auto_padding)},
                                      {"dilation", dilation},
                                      {"groups", groups}},
                           name);
}

FunctionPtr convolution_transpose(const Variable& w_in, const Variable& x, const Dims& strides,
                                  const std::vector<bool>& auto_padding, const Dims& output_shape,
                                  const Dims& dilation, const std::string& name) {
    const Variable w = with_channel_axes(w_in, x, true);
    return detail::make_op(PrimitiveOp::convolution_transpose, {w, x},
                           Attributes{{"strides", strides},
                                      {"autoPadding", as_dims(auto_padding)},
                                      {"outputShape", output_shape},
                                      {"dilation", dilation}},
                           name);
}

FunctionPtr pooling(const Variable& x, PoolingType type, const Dims& window_shape, const Dims& strides,
                    const std::vector<bool>& auto_padding, bool ceil_out_dim, bool include_pad,
                    const std::string& name) {
    return detail::make_op(PrimitiveOp::pooling, {x},
                           Attributes{{"poolingType", int64_t(type)},
                                      {"poolingWindowShape", window_shape},
                                      {"strides", strides},
                                      {"autoPadding", as_dims(auto_padding)},
                                      {"ceilOutDim", ceil_out_dim},
                                      {"includePad", include_pad}},
                           name);
}

FunctionPtr unpooling(const Variable& operand, const Variable& pooling_input, PoolingType unpooling_type,
                      const Dims& unpooling_window_shape, const Dims& strides,
                      const std::vector<bool>& auto_padding, const std::string& name) {
    CTK_CHECK(unpooling_type == PoolingType::max, NotImplementedError, "unpooling '", name,
              "': only max unpooling exists (CNTK's MAX_UNPOOLING)");
    CTK_CHECK(!unpooling_window_shape.empty(), ValueError, "unpooling '", name,
              "': empty unpooling_window_shape");
    return detail::make_op(PrimitiveOp::unpooling, {operand, pooling_input},
                           Attributes{{"poolingType", int64_t(unpooling_type)},
                                      {"unpoolingWindowShape", unpooling_window_shape},
                                      {"strides", strides},
                                      {"autoPadding", as_dims(auto_padding)}},
                           name);
}

FunctionPtr batch_normalization(const Variable& x, const Variable& scale, const Variable& bias,
                                const Variable& running_mean, const Variable& running_var,
                                const Variable& running_count, bool spatial,
                                double normalization_time_constant, double blend_time_constant,
                                double epsilon, const std::string& name, bool disable_regularization) {
    CTK_CHECK(blend_time_constant == 0.0, NotImplementedError, "batch_normalization '", name,
              "': blend_time_constant other than 0");
    Attributes attrs{{"spatial", spatial},
                     {"normalizationTimeConstant", normalization_time_constant},
                     {"blendTimeConstant", blend_time_constant},
                     {"epsilon", epsilon}};
    if (disable_regularization) {
        attrs.set("disableRegularization", true);
        scale.set_regularization_enabled(false);
        bias.set_regularization_enabled(false);
    }
    return detail::make_op(PrimitiveOp::batch_normalization,
                           {x, scale, bias, running_mean, running_var, running_count}, std::move(attrs),
                           name);
}

}  // namespace ctk
