// Op-harness cases for convolution: 1-D, 2-D and 3-D; strides, dilation, groups (depthwise too),
// asymmetric pads, CNTK's auto-padding (negative pads included), with and without bias, batch 1.
// The reference is a naive float64 loop over output cells and kernel taps.
#include <string>

#include "kernels/op_harness.h"

namespace ctk::test {

namespace {

// y[n, o, p...] = b[o] + sum over c and taps k of x[n, group(o) * C/G + c, p * stride - pad_lo + k *
// dilation]
// * w[o, c, k...]; taps that land outside x (padding, or cells cropped by negative pads) read zero.
Tensor conv_reference(const Tensor& x, const Tensor& w, const Tensor& b, const ConvAttrs& a) {
    const int spatial = x.rank() - 2;
    const int64_t groups = a.groups, cg = w.dim(1), og = w.dim(0) / groups;
    Dims out = {x.dim(0), w.dim(0)};
    for (int i = 0; i < spatial; ++i) {
        const size_t s = static_cast<size_t>(i);
        const int64_t extent = (w.dim(i + 2) - 1) * a.dilation[s] + 1;
        out.push_back((x.dim(i + 2) + a.pad_lo[s] + a.pad_hi[s] - extent) / a.strides[s] + 1);
    }
    Tensor y = Tensor::empty(Shape(out), DataType::f64);
    Dims taps = {cg};
    for (int i = 0; i < spatial; ++i) taps.push_back(w.dim(i + 2));
    for_each_index(y.shape(), [&](const Dims& yi) {
        const int64_t n = yi[0], o = yi[1];
        double sum = b.defined() ? b.at({o}) : 0.0;
        for_each_index(Shape(taps), [&](const Dims& t) {
            Dims xi = {n, (o / og) * cg + t[0]};
            for (int i = 0; i < spatial; ++i) {
                const size_t s = static_cast<size_t>(i);
                const int64_t pos = yi[s + 2] * a.strides[s] - a.pad_lo[s] + t[s + 1] * a.dilation[s];
                if (pos < 0 || pos >= x.dim(i + 2)) return;
                xi.push_back(pos);
            }
            Dims wi = {o};
            wi.insert(wi.end(), t.begin(), t.end());
            sum += x.at(xi) * w.at(wi);
        });
        y.set(yi, sum);
    });
    return y;
}

// Fills empty per-axis attributes with their defaults, as the reference needs them explicit.
ConvAttrs explicit_attrs(ConvAttrs a, int spatial) {
    auto fill = [&](Dims& v, int64_t value) {
        if (v.empty()) v.assign(static_cast<size_t>(spatial), value);
    };
    fill(a.strides, 1);
    fill(a.dilation, 1);
    fill(a.pad_lo, 0);
    fill(a.pad_hi, 0);
    return a;
}

struct ConvSpec {
    std::string name;
    Shape x, w;
    bool bias;
    ConvAttrs attrs;
    bool bf16 = false;  // also check the bf16 forward
};

OpCase make_case(const ConvSpec& s) {
    OpCase c;
    c.name = "convolution/" + s.name;
    c.ops = {OpKind::convolution, OpKind::convolution_backward_data, OpKind::convolution_backward_weights};
    c.inputs = {InputSpec::uniform(s.x), InputSpec::uniform(s.w)};
    if (s.bias) c.inputs.push_back(InputSpec::uniform(Shape{s.w[0]}));
    const ConvAttrs a = s.attrs;
    const ConvAttrs ref_attrs = explicit_attrs(s.attrs, s.x.rank() - 2);
    const bool bias = s.bias;
    c.forward = [a, bias](const Tensors& in) {
        return Tensors{convolution(in[0], in[1], bias ? in[2] : Tensor(), a)};
    };
    c.reference = [ref_attrs, bias](const Tensors& in) {
        return Tensors{conv_reference(in[0], in[1], bias ? in[2] : Tensor(), ref_attrs)};
    };
    c.backward = [a, bias](const Tensors& in, const Tensors& dy) {
        Tensor dx = convolution_backward_data(dy[0], in[1], in[0].shape(), a);
        ConvWeightGrads g = convolution_backward_weights(in[0], dy[0], in[1].shape(), a, bias);
        return bias ? Tensors{dx, g.dw, g.db} : Tensors{dx, g.dw};
    };
    if (s.bf16) c.dtypes = {DataType::f32, DataType::f64, DataType::bf16};
    // Sums of up to ~50 products of values in [-1, 1]: f32 rounding stays well under 1e-5.
    c.rtol_f32 = 1e-4;
    c.atol_f32 = 1e-5;
    c.grad_atol = 1e-7;
    return c;
}

ConvAttrs attrs(Dims strides, Dims dilation, Dims pad_lo, Dims pad_hi, int64_t groups = 1) {
    ConvAttrs a;
    a.strides = std::move(strides);
    a.dilation = std::move(dilation);
    a.pad_lo = std::move(pad_lo);
    a.pad_hi = std::move(pad_hi);
    a.groups = groups;
    return a;
}

// CNTK auto-padding along every spatial axis.
ConvAttrs auto_padded(const Shape& x, const Shape& w, Dims strides, Dims dilation) {
    ConvAttrs a = attrs(strides, dilation, {}, {});
    for (size_t i = 0; i < strides.size(); ++i) {
        int64_t lo = 0, hi = 0;
        cntk_auto_pad(x[static_cast<int>(i) + 2], w[static_cast<int>(i) + 2], strides[i], dilation[i], lo,
                      hi);
        a.pad_lo.push_back(lo);
        a.pad_hi.push_back(hi);
    }
    return a;
}

}  // namespace

std::vector<OpCase> convolution_cases() {
    std::vector<ConvSpec> specs = {
        {"1d/pad", {2, 3, 9}, {4, 3, 3}, true, attrs({}, {}, {1}, {1})},
        {"2d/basic", {2, 3, 6, 5}, {4, 3, 3, 3}, true, attrs({}, {}, {1, 1}, {1, 1}), true},
        // 16 channels: oneDNN reorders into its blocked layouts (nChw16c) and back.
        {"2d/blocked_16ch", {1, 16, 3, 3}, {16, 16, 3, 3}, true, attrs({}, {}, {1, 1}, {1, 1})},
        {"2d/default_attrs", {2, 2, 5, 4}, {3, 2, 2, 3}, false, ConvAttrs{}},
        {"2d/stride2_batch1_nobias", {1, 2, 7, 7}, {3, 2, 3, 3}, false, attrs({2, 2}, {}, {}, {})},
        {"2d/dilation", {2, 2, 7, 6}, {2, 2, 3, 2}, true, attrs({1, 1}, {2, 3}, {1, 0}, {2, 1})},
        {"2d/groups", {2, 4, 5, 5}, {6, 2, 3, 3}, true, attrs({}, {}, {1, 1}, {1, 1}, 2)},
        {"2d/depthwise", {2, 3, 5, 5}, {3, 1, 3, 3}, true, attrs({}, {}, {1, 1}, {1, 1}, 3), true},
        {"2d/depthwise_multiplier_stride",
         {1, 2, 6, 6},
         {4, 1, 3, 3},
         false,
         attrs({2, 2}, {}, {1, 1}, {0, 0}, 2)},
        {"2d/asymmetric_pads", {1, 2, 6, 5}, {2, 2, 3, 2}, true, attrs({1, 2}, {}, {0, 2}, {2, 1})},
        {"3d/pad_stride",
         {1, 2, 4, 4, 3},
         {2, 2, 2, 3, 2},
         true,
         attrs({1, 2, 1}, {}, {1, 1, 0}, {1, 1, 0}),
         true},
        {"3d/dilation_groups",
         {2, 2, 5, 3, 4},
         {2, 1, 2, 1, 2},
         false,
         attrs({}, {2, 1, 2}, {0, 0, 1}, {1, 0, 0}, 2)},
    };
    // CNTK auto-padding, negative pads included: (in, kernel, stride) = (6, 1, 3) gives pads -1/-1.
    struct AutoSpec {
        int64_t in, kernel, stride, dilation;
    };
    for (const AutoSpec& t :
         {AutoSpec{6, 1, 3, 1}, AutoSpec{7, 1, 4, 1}, AutoSpec{6, 2, 3, 1}, AutoSpec{8, 4, 3, 1},
          AutoSpec{5, 2, 2, 1}, AutoSpec{7, 3, 2, 1}, AutoSpec{10, 2, 4, 1}, AutoSpec{9, 3, 2, 2}}) {
        Shape x{2, 2, t.in}, w{3, 2, t.kernel};
        specs.push_back({"auto_pad/1d_in" + std::to_string(t.in) + "_k" + std::to_string(t.kernel) + "_s" +
                             std::to_string(t.stride) + "_d" + std::to_string(t.dilation),
                         x, w, true, auto_padded(x, w, {t.stride}, {t.dilation})});
    }
    {
        Shape x{2, 2, 6, 7}, w{3, 2, 1, 3};
        specs.push_back({"auto_pad/2d_negative", x, w, false, auto_padded(x, w, {3, 2}, {1, 1})});
    }
    std::vector<OpCase> cases;
    for (const auto& s : specs) cases.push_back(make_case(s));
    return cases;
}

}  // namespace ctk::test
