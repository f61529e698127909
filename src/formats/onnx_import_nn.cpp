// ONNX import of the convolution family: Conv, ConvTranspose, MaxPool, AveragePool (and the Global
// forms) and BatchNormalization, on [N, C, spatial...] with N the batch axis or a static leading dim.
#include <cmath>

#include "formats/onnx_import_internal.h"

namespace ctk::detail::onnx_io::importer {
namespace {

// Runs `fn` on x as [N, C, spatial...]: the batch axis, or for a static x its leading dim (dropped
// when it is 1, else turned into the batch axis and back).
Variable with_batch(NodeCtx& c, const Variable& x, const std::function<Variable(const Variable&)>& fn) {
    if (dyn_of(c, x) == 1 || c.im.merged(x)) return fn(x);  // ctk's ops treat every frame alike
    if (dyn_of(c, x) > 1)
        unsupported(c, "a value with batch and sequence dims (merge them with Reshape first)");
    CTK_CHECK(x.rank() >= 3, ShapeError, c.where, ": needs [N, C, spatial...], got ", x.to_string());
    const Dims& s = x.shape();
    if (s[0] == 1) {
        Variable y = fn(reshape(x, Dims(s.begin() + 1, s.end())));
        Dims out{1};
        out.insert(out.end(), y.shape().begin(), y.shape().end());
        return reshape(y, out);
    }
    return unpack_batch(fn(to_batch(x)));
}

// ONNX pads for auto_pad SAME_UPPER / SAME_LOWER / VALID / NOTSET on one axis.
void onnx_pads(const NodeCtx& c, const std::string& auto_pad, int64_t in, int64_t ext, int64_t stride,
               const Dims& pads, size_t i, size_t n, int64_t& lo, int64_t& hi) {
    if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
        const int64_t out = (in + stride - 1) / stride;
        const int64_t total = std::max<int64_t>(0, (out - 1) * stride + ext - in);
        lo = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
        hi = total - lo;
    } else if (auto_pad == "VALID") {
        lo = hi = 0;
    } else {
        CTK_CHECK(auto_pad == "NOTSET" || auto_pad.empty(), ValueError, c.where, ": unknown auto_pad '",
                  auto_pad, "'");
        lo = pads.empty() ? 0 : pads.at(i);
        hi = pads.empty() ? 0 : pads.at(i + n);
    }
    CTK_CHECK(lo >= 0 && hi >= 0, ValueError, c.where, ": negative pads");
}

Dims spatial_dims_of(NodeCtx& c, const Variable& x) {
    // x's [C, spatial...] without N: the static shape for a batched x, else without the leading dim.
    Dims s = x.shape();
    if (dyn_of(c, x) == 0) {
        CTK_CHECK(!s.empty(), ShapeError, c.where, ": operand without dims");
        s.erase(s.begin());
    }
    for (int64_t d : s)
        if (d < 0) unsupported(c, "free spatial dims");
    return s;
}

}  // namespace

std::vector<Variable> conv_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0), w = c.im.in(c, 1);
    const Dims xs = spatial_dims_of(c, x);
    const Dims& ws = w.shape();
    CTK_CHECK(ws.size() == xs.size() + 1 && xs.size() >= 2, ShapeError, c.where, ": kernel ", w.to_string(),
              " does not fit ", x.to_string());
    const size_t sp = xs.size() - 1;
    const Dims strides = attr_ints(c, "strides").value_or(Dims(sp, 1));
    const Dims dil = attr_ints(c, "dilations").value_or(Dims(sp, 1));
    const Dims pads = attr_ints(c, "pads").value_or(Dims{});
    const std::string auto_pad = attr_s(c, "auto_pad", "NOTSET");
    CTK_CHECK(strides.size() == sp && dil.size() == sp && (pads.empty() || pads.size() == 2 * sp), ValueError,
              c.where, ": strides, dilations or pads do not match ", sp, " spatial axes");
    const int64_t group = attr_i(c, "group", 1);
    std::vector<bool> autop{false};
    Dims lo_all{0}, hi_all{0};
    bool explicit_pad = false;
    for (size_t i = 0; i < sp; ++i) {
        const int64_t ext = (ws[i + 2] - 1) * dil[i] + 1;
        int64_t lo, hi;
        onnx_pads(c, auto_pad, xs[i + 1], ext, strides[i], pads, i, sp, lo, hi);
        int64_t clo = 0, chi = 0;
        cntk_auto_pad(xs[i + 1], ws[i + 2], strides[i], dil[i], clo, chi);
        const bool same =
            clo == lo &&
            (chi == hi || (chi < 0 && hi == 0 &&
                           (xs[i + 1] + lo - ext) / strides[i] == (xs[i + 1] + lo + chi - ext) / strides[i]));
        autop.push_back(same && (lo != 0 || hi != 0));
        if (!same && (lo != 0 || hi != 0)) explicit_pad = true;
        lo_all.push_back(lo);
        hi_all.push_back(hi);
    }
    Variable y = with_batch(c, x, [&](const Variable& xb) {
        Variable in = xb;
        std::vector<bool> ap = autop;
        if (explicit_pad) {
            std::vector<std::pair<int64_t, int64_t>> pat;
            for (size_t i = 0; i < lo_all.size(); ++i) pat.emplace_back(lo_all[i], hi_all[i]);
            in = pad(xb, pat);
            ap.assign(ap.size(), false);
        }
        Variable out = convolution(w, in, strides, ap, dil, group, c.im.has_input(c, 2) ? "" : c.name);
        if (c.im.has_input(c, 2)) {
            Dims bs{ws[0]};
            bs.resize(sp + 1, 1);
            out = plus(out, reshape(c.im.in(c, 2), bs), c.name);
        }
        return out;
    });
    return {y};
}

std::vector<Variable> conv_transpose_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0), w = c.im.in(c, 1);
    const Dims xs = spatial_dims_of(c, x);
    const Dims& ws = w.shape();
    CTK_CHECK(ws.size() == xs.size() + 1 && xs.size() >= 2, ShapeError, c.where, ": kernel ", w.to_string(),
              " does not fit ", x.to_string());
    if (attr_i(c, "group", 1) != 1) unsupported(c, "grouped ConvTranspose");
    const size_t sp = xs.size() - 1;
    const Dims strides = attr_ints(c, "strides").value_or(Dims(sp, 1));
    const Dims dil = attr_ints(c, "dilations").value_or(Dims(sp, 1));
    const Dims pads = attr_ints(c, "pads").value_or(Dims{});
    const Dims out_pad = attr_ints(c, "output_padding").value_or(Dims(sp, 0));
    const std::optional<Dims> out_shape = attr_ints(c, "output_shape");
    const std::string auto_pad = attr_s(c, "auto_pad", "NOTSET");
    CTK_CHECK(strides.size() == sp && dil.size() == sp && out_pad.size() == sp &&
                  (pads.empty() || pads.size() == 2 * sp) && (!out_shape || out_shape->size() == sp),
              ValueError, c.where, ": attributes do not match ", sp, " spatial axes");
    Dims full, begin, end;
    std::vector<Axis> axes;
    std::vector<std::pair<int64_t, int64_t>> grow(sp + 1, {0, 0});  // zeros added per static axis
    for (size_t i = 0; i < sp; ++i) {
        const int64_t ext = (ws[i + 2] - 1) * dil[i] + 1;
        const int64_t in = xs[i + 1];
        int64_t lo = 0, hi = 0, op = out_pad[i];
        if (out_shape) {
            // A negative total (output_shape past the full output) pads the output with zeros.
            const int64_t total = strides[i] * (in - 1) + op + ext - (*out_shape)[i];
            const int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor, as ONNX's reference
            lo = auto_pad == "SAME_UPPER" ? half : total - half;
            hi = total - lo;
        } else if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") {
            const int64_t total = std::max<int64_t>(0, strides[i] * (in - 1) + op + ext - in * strides[i]);
            lo = auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
            hi = total - lo;
        } else if (auto_pad != "VALID") {
            lo = pads.empty() ? 0 : pads[i];
            hi = pads.empty() ? 0 : pads[i + sp];
        }
        if (op < 0 || op >= std::max(strides[i], dil[i])) unsupported(c, "output_padding out of range");
        const int64_t f = strides[i] * (in - 1) + ext + op;
        full.push_back(f);
        if (lo < 0 || hi < 0) {
            grow[i + 1] = {std::max<int64_t>(0, -lo), std::max<int64_t>(0, -hi)};
            lo = std::max<int64_t>(0, lo);
            hi = std::max<int64_t>(0, hi);
        }
        if (lo != 0 || hi != 0) {
            CTK_CHECK(lo >= 0 && hi >= 0 && lo + hi < f, ValueError, c.where, ": invalid pads");
            axes.emplace_back(static_cast<int>(i + 1));
            begin.push_back(lo);
            end.push_back(f - hi);
        }
    }
    Variable y = with_batch(c, x, [&](const Variable& xb) {
        Variable out = convolution_transpose(w, xb, strides, {false}, full, dil);
        if (!axes.empty()) out = slice(out, axes, begin, end);
        if (std::any_of(grow.begin(), grow.end(), [](const auto& g) { return g.first || g.second; }))
            out = pad(out, grow);
        if (c.im.has_input(c, 2)) {
            Dims bs{ws[1]};
            bs.resize(sp + 1, 1);
            out = plus(out, reshape(c.im.in(c, 2), bs));
        }
        return Variable(alias(out, c.name));
    });
    return {y};
}

std::vector<Variable> pool_node(NodeCtx& c, bool is_max) {
    if (c.node.output_size() > 1 && !c.node.output(1).empty()) unsupported(c, "MaxPool's Indices output");
    Variable x = c.im.in(c, 0);
    const Dims xs = spatial_dims_of(c, x);
    const size_t sp = xs.size() - 1;
    const Dims kernel = attr_ints(c, "kernel_shape").value_or(Dims{});
    CTK_CHECK(kernel.size() == sp && sp >= 1, ValueError, c.where, ": kernel_shape does not match ", sp,
              " spatial axes");
    const Dims strides = attr_ints(c, "strides").value_or(Dims(sp, 1));
    const Dims dil = attr_ints(c, "dilations").value_or(Dims(sp, 1));
    const Dims pads = attr_ints(c, "pads").value_or(Dims{});
    CTK_CHECK(strides.size() == sp && dil.size() == sp && (pads.empty() || pads.size() == 2 * sp), ValueError,
              c.where, ": strides, dilations or pads do not match ", sp, " spatial axes");
    for (int64_t d : dil)
        if (d != 1) unsupported(c, "dilated pooling");
    if (attr_i(c, "storage_order", 0) != 0) unsupported(c, "storage_order 1");
    const bool ceil_mode = attr_i(c, "ceil_mode", 0) != 0;
    const bool include_pad = attr_i(c, "count_include_pad", 0) != 0;
    const std::string auto_pad = attr_s(c, "auto_pad", "NOTSET");
    std::vector<bool> autop{false};
    Dims lo_all{0}, hi_all{0};
    bool explicit_pad = false;
    for (size_t i = 0; i < sp; ++i) {
        int64_t lo, hi;
        onnx_pads(c, auto_pad, xs[i + 1], kernel[i], strides[i], pads, i, sp, lo, hi);
        int64_t clo = 0, chi = 0;
        cntk_auto_pad(xs[i + 1], kernel[i], strides[i], 1, clo, chi);
        const bool same = clo == lo && chi == hi;
        autop.push_back(same && (lo != 0 || hi != 0));
        if (!same && (lo != 0 || hi != 0)) explicit_pad = true;
        lo_all.push_back(lo);
        hi_all.push_back(hi);
    }
    if (explicit_pad && !is_max && ceil_mode) unsupported(c, "AveragePool with explicit pads and ceil_mode");
    Variable y = with_batch(c, x, [&](const Variable& xb) {
        Variable in = xb;
        std::vector<bool> ap = autop;
        if (explicit_pad) {
            std::vector<std::pair<int64_t, int64_t>> pat;
            for (size_t i = 0; i < lo_all.size(); ++i) pat.emplace_back(lo_all[i], hi_all[i]);
            in = pad(xb, pat, PadMode::constant, is_max ? -std::numeric_limits<double>::infinity() : 0.0);
            ap.assign(ap.size(), false);
            if (!is_max && !include_pad) {
                // The average of the real elements only: the padded input's window means over the
                // share of real elements in each window (a pooled mask of ones).
                Variable mask = pad(ones_like(xb), pat, PadMode::constant, 0.0);
                auto mean = [&](const Variable& v) {
                    return Variable(pooling(v, PoolingType::average, kernel, strides, ap, ceil_mode, true));
                };
                return Variable(element_divide(mean(in), mean(mask), c.name));
            }
        }
        return Variable(pooling(in, is_max ? PoolingType::max : PoolingType::average, kernel, strides, ap,
                                ceil_mode, include_pad, c.name));
    });
    return {y};
}

// BatchNormalization with training_mode 1 (opset 14+): normalized by the batch's own statistics (over N
// and the spatial dims, variance biased), with the running statistics' update as outputs 1 and 2:
// running * momentum + batch * (1 - momentum).
std::vector<Variable> batch_norm_training(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    if (dyn_of(c, x) != 0) unsupported(c, "training_mode 1 on a batched value");
    const int r = x.rank();
    CTK_CHECK(r >= 2, ShapeError, c.where, ": the input must be [N, C, ...]");
    std::vector<Axis> axes{Axis(0)};
    for (int i = 2; i < r; ++i) axes.emplace_back(i);
    const DataType d = x.dtype();
    const double eps = attr_f(c, "epsilon", 1e-5), momentum = attr_f(c, "momentum", 0.9);
    Variable mean = reduce_mean(x, axes, true);
    Variable centered = minus(x, mean);
    Variable var = reduce_mean(square(centered), axes, true);
    Dims per_channel{x.shape()[1]};
    Dims bcast(static_cast<size_t>(r - 2), 1);
    bcast.insert(bcast.begin(), x.shape()[1]);
    auto channel = [&](int i) { return reshape(c.im.in(c, i), bcast); };
    Variable y = element_divide(centered, sqrt(plus(var, constant(eps, d))));
    y = plus(element_times(y, channel(1)), channel(2), c.name);
    auto running = [&](int i, const Variable& batch) {
        return Variable(plus(element_times(c.im.in(c, i), constant(momentum, d)),
                             element_times(reshape(batch, per_channel), constant(1 - momentum, d))));
    };
    return {y, running(3, mean), running(4, var)};
}

std::vector<Variable> batch_norm_node(NodeCtx& c) {
    if (attr_i(c, "training_mode", 0) != 0) return batch_norm_training(c);
    // Opsets 7 and 8 had `spatial` (default 1); 0 meant statistics per element, another layout.
    if (c.im.opset_ < 9 && attr_i(c, "spatial", 1) == 0)
        unsupported(c, "spatial 0 (per-activation statistics)");
    for (int i = 1; i < c.node.output_size(); ++i)
        if (!c.node.output(i).empty()) unsupported(c, "the running-statistics outputs");
    Variable x = c.im.in(c, 0);
    std::vector<Variable> p;
    for (int i = 1; i <= 4; ++i) {
        Variable v = c.im.in(c, i);
        if (v.is_parameter() && i >= 3) v = constant(v.value(), v.name());
        p.push_back(v);
    }
    const double eps = attr_f(c, "epsilon", 1e-5);
    Variable y = with_batch(c, x, [&](const Variable& xb) {
        return Variable(batch_normalization(xb, p[0], p[1], p[2], p[3], constant(Dims{}, 0.0, p[0].dtype()),
                                            true, 5000.0, 0.0, eps, c.name));
    });
    return {y};
}

std::vector<Variable> global_pool_node(NodeCtx& c, bool is_max) {
    Variable x = c.im.in(c, 0);
    (void)spatial_dims_of(c, x);
    return {with_batch(c, x, [&](const Variable& xb) {
        return Variable(pooling(xb, is_max ? PoolingType::max : PoolingType::average, {}, {1}, {false}, false,
                                false, c.name));
    })};
}

}  // namespace ctk::detail::onnx_io::importer
