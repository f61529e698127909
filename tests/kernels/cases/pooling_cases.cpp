// Op-harness cases for pooling: max and average (padding counted or not), 1-D, 2-D and 3-D, strides,
// asymmetric and negative (CNTK auto-padding) pads. Max pooling runs in training mode so its backward
// can use the workspace; its forward hands the harness y only.
#include <limits>
#include <string>

#include "kernels/op_harness.h"

namespace ctk::test {

namespace {

// Each output cell reduces the input cells its window covers; windows may hang over padding, which
// never wins a maximum and counts in an average only with include_pad.
Tensor pool_reference(const Tensor& x, const PoolAttrs& a) {
    const int spatial = x.rank() - 2;
    Dims out = {x.dim(0), x.dim(1)};
    for (int i = 0; i < spatial; ++i) {
        const size_t s = static_cast<size_t>(i);
        out.push_back((x.dim(i + 2) + a.pad_lo[s] + a.pad_hi[s] - a.kernel[s]) / a.strides[s] + 1);
    }
    Tensor y = Tensor::empty(Shape(out), DataType::f64);
    for_each_index(y.shape(), [&](const Dims& yi) {
        double best = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t inside = 0, window = 0;
        for_each_index(Shape(a.kernel), [&](const Dims& k) {
            ++window;
            Dims xi = {yi[0], yi[1]};
            for (int i = 0; i < spatial; ++i) {
                const size_t s = static_cast<size_t>(i);
                const int64_t pos = yi[s + 2] * a.strides[s] - a.pad_lo[s] + k[s];
                if (pos < 0 || pos >= x.dim(i + 2)) return;
                xi.push_back(pos);
            }
            const double v = x.at(xi);
            best = std::max(best, v);
            sum += v;
            ++inside;
        });
        if (a.kind == PoolKind::max)
            y.set(yi, best);
        else
            y.set(yi, sum / static_cast<double>(a.include_pad ? window : inside));
    });
    return y;
}

struct PoolSpec {
    std::string name;
    Shape x;
    PoolAttrs attrs;
    double lo = -1, hi = 1;  // input range
    bool bf16 = false;
};

PoolAttrs pool(PoolKind kind, Dims kernel, Dims strides, Dims pad_lo, Dims pad_hi, bool include_pad = false) {
    PoolAttrs a;
    a.kind = kind;
    a.kernel = std::move(kernel);
    a.strides = std::move(strides);
    a.pad_lo = std::move(pad_lo);
    a.pad_hi = std::move(pad_hi);
    a.include_pad = include_pad;
    return a;
}

// CNTK auto-padding for pooling windows (no dilation).
PoolAttrs auto_padded(PoolKind kind, const Shape& x, Dims kernel, Dims strides, bool include_pad = false) {
    PoolAttrs a = pool(kind, kernel, strides, {}, {}, include_pad);
    for (size_t i = 0; i < kernel.size(); ++i) {
        int64_t lo = 0, hi = 0;
        cntk_auto_pad(x[static_cast<int>(i) + 2], kernel[i], strides[i], 1, lo, hi);
        a.pad_lo.push_back(lo);
        a.pad_hi.push_back(hi);
    }
    return a;
}

OpCase make_case(const PoolSpec& s) {
    OpCase c;
    c.name = "pooling/" + s.name;
    c.ops = {OpKind::pooling, OpKind::pooling_backward};
    c.inputs = {InputSpec::uniform(s.x, s.lo, s.hi)};
    const PoolAttrs a = s.attrs;
    // The reference needs every per-axis vector explicit; ctk gets the attributes as written.
    PoolAttrs r = s.attrs;
    const size_t spatial = static_cast<size_t>(s.x.rank() - 2);
    if (r.strides.empty()) r.strides.assign(spatial, 1);
    if (r.pad_lo.empty()) r.pad_lo.assign(spatial, 0);
    if (r.pad_hi.empty()) r.pad_hi.assign(spatial, 0);
    c.forward = [a](const Tensors& in) { return Tensors{pooling(in[0], a, /*training=*/true).y}; };
    c.reference = [r](const Tensors& in) { return Tensors{pool_reference(in[0], r)}; };
    c.backward = [a](const Tensors& in, const Tensors& dy) {
        PoolResult r = pooling(in[0], a, /*training=*/true);
        return Tensors{pooling_backward(dy[0], in[0], r.workspace, a)};
    };
    if (s.bf16) c.dtypes = {DataType::f32, DataType::f64, DataType::bf16};
    c.grad_atol = 1e-7;
    return c;
}

}  // namespace

std::vector<OpCase> pooling_cases() {
    const PoolKind mx = PoolKind::max, avg = PoolKind::average;
    std::vector<PoolSpec> specs = {
        {"max/2d_k2_s2", {2, 3, 6, 6}, pool(mx, {2, 2}, {2, 2}, {0, 0}, {0, 0}), -1, 1, true},
        {"max/2d_default_stride", {1, 2, 4, 5}, pool(mx, {2, 3}, {}, {}, {})},
        // All-negative inputs: a padded (zero) cell would win if padding took part.
        {"max/2d_padded_negative", {1, 2, 5, 6}, pool(mx, {3, 3}, {2, 1}, {1, 1}, {1, 1}), -3, -1},
        {"max/1d_asymmetric", {2, 2, 9}, pool(mx, {3}, {2}, {1}, {0})},
        {"max/3d", {1, 2, 4, 5, 4}, pool(mx, {2, 3, 2}, {2, 1, 2}, {0, 1, 1}, {1, 1, 0}), -1, 1, true},
        {"avg/2d_include_pad", {2, 2, 5, 5}, pool(avg, {3, 3}, {2, 2}, {1, 1}, {1, 1}, true), -1, 1, true},
        {"avg/2d_exclude_pad", {2, 2, 5, 5}, pool(avg, {3, 3}, {2, 2}, {1, 1}, {1, 1}, false)},
        {"avg/1d_asymmetric", {2, 3, 8}, pool(avg, {3}, {1}, {2}, {1}, false)},
        {"avg/1d_asymmetric_include_pad", {2, 3, 8}, pool(avg, {3}, {1}, {2}, {1}, true)},
        {"avg/3d_include_pad", {1, 2, 4, 4, 4}, pool(avg, {2, 2, 2}, {2, 2, 2}, {1, 0, 1}, {1, 0, 0}, true)},
        {"avg/3d_exclude_pad", {1, 2, 3, 4, 4}, pool(avg, {2, 3, 2}, {1, 2, 2}, {1, 1, 0}, {0, 1, 1}, false)},
    };
    // CNTK auto-padding: (6, 1, 3) gives pads -1/-1 and (6, 2, 3) gives -1/0, so inputs are cropped.
    specs.push_back({"max/auto_pad_negative", {1, 2, 6, 6}, auto_padded(mx, {1, 2, 6, 6}, {1, 2}, {3, 3})});
    specs.push_back({"avg/auto_pad_negative", {2, 1, 6, 7}, auto_padded(avg, {2, 1, 6, 7}, {1, 3}, {3, 2})});
    specs.push_back(
        {"max/auto_pad_k3_s2", {1, 2, 7, 8}, auto_padded(mx, {1, 2, 7, 8}, {3, 3}, {2, 2}), -3, -1});
    specs.push_back({"avg/auto_pad_k3_s1_include_pad",
                     {2, 1, 5, 5},
                     auto_padded(avg, {2, 1, 5, 5}, {3, 3}, {1, 1}, true)});
    std::vector<OpCase> cases;
    for (const auto& s : specs) cases.push_back(make_case(s));
    return cases;
}

}  // namespace ctk::test
