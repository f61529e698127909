// Direct-loop convolution for f64, which oneDNN lacks: plain and slow on purpose. The float64
// gradient checks run on it, and the oneDNN kernels are tested against it.
#include <array>
#include <cstring>

#include "kernels/cpu/cpu_common.h"

namespace ctk::cpu {

namespace {

// Every convolution seen as a 3-D one: missing leading spatial axes have size 1 (kernel 1, stride 1).
struct Geometry3d {
    int64_t batch = 1, channels = 1, out_channels = 1, groups = 1;
    std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, dilation{1, 1, 1},
        pad{0, 0, 0};
};

Geometry3d geometry(const Shape& x, const Shape& w, const Shape& y, const ConvAttrs& a) {
    Geometry3d g;
    g.batch = x[0];
    g.channels = x[1];
    g.out_channels = w[0];
    g.groups = a.groups;
    const int spatial = x.rank() - 2, shift = 3 - spatial;
    for (int i = 0; i < spatial; ++i) {
        const size_t s = static_cast<size_t>(i), d = static_cast<size_t>(i + shift);
        g.in[d] = x[i + 2];
        g.out[d] = y[i + 2];
        g.kernel[d] = w[i + 2];
        g.stride[d] = a.strides[s];
        g.dilation[d] = a.dilation[s];
        g.pad[d] = a.pad_lo[s];
    }
    return g;
}

// Calls fn(x_index, w_index, y_index) for every pair of an output cell and a kernel tap whose input
// cell lies inside x (taps on padding read zeros, so they are skipped). Indices are into dense
// row-major x [N, C, D, H, W], w [O, C/G, KD, KH, KW] and y [N, O, OD, OH, OW].
template <typename Fn>
void for_each_tap(const Geometry3d& g, Fn fn) {
    const int64_t cg = g.channels / g.groups, og = g.out_channels / g.groups;
    const auto& in = g.in;
    const auto& out = g.out;
    const auto& k = g.kernel;
    for (int64_t n = 0; n < g.batch; ++n)
        for (int64_t o = 0; o < g.out_channels; ++o)
            for (int64_t c = 0; c < cg; ++c) {
                const int64_t xc = (o / og) * cg + c;  // the input channel in o's group
                for (int64_t od = 0; od < out[0]; ++od)
                    for (int64_t oh = 0; oh < out[1]; ++oh)
                        for (int64_t ow = 0; ow < out[2]; ++ow) {
                            const int64_t yi =
                                (((n * g.out_channels + o) * out[0] + od) * out[1] + oh) * out[2] + ow;
                            for (int64_t kd = 0; kd < k[0]; ++kd) {
                                const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
                                if (id < 0 || id >= in[0]) continue;
                                for (int64_t kh = 0; kh < k[1]; ++kh) {
                                    const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
                                    if (ih < 0 || ih >= in[1]) continue;
                                    for (int64_t kw = 0; kw < k[2]; ++kw) {
                                        const int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
                                        if (iw < 0 || iw >= in[2]) continue;
                                        const int64_t xi =
                                            (((n * g.channels + xc) * in[0] + id) * in[1] + ih) * in[2] + iw;
                                        const int64_t wi =
                                            (((o * cg + c) * k[0] + kd) * k[1] + kh) * k[2] + kw;
                                        fn(xi, wi, yi);
                                    }
                                }
                            }
                        }
            }
}

void zero(const Tensor& t) {
    std::memset(t.raw_data(), 0, static_cast<size_t>(t.numel()) * t.element_size());
}

void forward(const KernelCall& call) {
    const ConvAttrs& a = call.attr<ConvAttrs>();
    const Tensor x = call.inputs[0].contiguous(), w = call.inputs[1].contiguous();
    const Tensor& y = call.outputs[0];
    const double *xp = x.data<double>(), *wp = w.data<double>();
    double* yp = y.data<double>();
    zero(y);
    for_each_tap(geometry(x.shape(), w.shape(), y.shape(), a),
                 [&](int64_t xi, int64_t wi, int64_t yi) { yp[yi] += xp[xi] * wp[wi]; });
    if (call.inputs.size() > 2 && call.inputs[2].defined()) {
        const Tensor b = call.inputs[2].contiguous();
        const int64_t o = y.dim(1), cells = y.numel() / (y.dim(0) * o);
        for (int64_t i = 0; i < y.numel(); ++i) yp[i] += b.data<double>()[(i / cells) % o];
    }
}

void backward_data(const KernelCall& call) {
    const ConvAttrs& a = call.attr<ConvAttrs>();
    const Tensor dy = call.inputs[0].contiguous(), w = call.inputs[1].contiguous();
    const Tensor& dx = call.outputs[0];
    const double *dyp = dy.data<double>(), *wp = w.data<double>();
    double* dxp = dx.data<double>();
    zero(dx);
    for_each_tap(geometry(dx.shape(), w.shape(), dy.shape(), a),
                 [&](int64_t xi, int64_t wi, int64_t yi) { dxp[xi] += dyp[yi] * wp[wi]; });
}

void backward_weights(const KernelCall& call) {
    const ConvAttrs& a = call.attr<ConvAttrs>();
    const Tensor x = call.inputs[0].contiguous(), dy = call.inputs[1].contiguous();
    const Tensor& dw = call.outputs[0];
    const double *xp = x.data<double>(), *dyp = dy.data<double>();
    double* dwp = dw.data<double>();
    zero(dw);
    for_each_tap(geometry(x.shape(), dw.shape(), dy.shape(), a),
                 [&](int64_t xi, int64_t wi, int64_t yi) { dwp[wi] += xp[xi] * dyp[yi]; });
    if (call.outputs.size() > 1 && call.outputs[1].defined()) {
        const Tensor& db = call.outputs[1];
        zero(db);
        const int64_t o = dy.dim(1), cells = dy.numel() / (dy.dim(0) * o);
        for (int64_t i = 0; i < dy.numel(); ++i) db.data<double>()[(i / cells) % o] += dyp[i];
    }
}

}  // namespace

void register_reference_convolution(KernelTable& t) {
    t.add(OpKind::convolution, DeviceType::cpu, DataType::f64, forward);
    t.add(OpKind::convolution_backward_data, DeviceType::cpu, DataType::f64, backward_data);
    t.add(OpKind::convolution_backward_weights, DeviceType::cpu, DataType::f64, backward_weights);
}

}  // namespace ctk::cpu
