// Direct-loop pooling for f64, which oneDNN lacks: plain and slow on purpose (gradient checks and the
// reference the oneDNN kernels are tested against). Its max-pooling workspace holds, per output cell,
// the int64 index of the winning cell within its [D, H, W] input plane.
#include <array>
#include <cstring>
#include <limits>

#include "kernels/cpu/cpu_common.h"

namespace ctk::cpu {

namespace {

// Every pooling seen as a 3-D one over planes = N * C; missing leading axes have size 1.
struct Geometry3d {
    int64_t planes = 1;
    std::array<int64_t, 3> in{1, 1, 1}, out{1, 1, 1}, kernel{1, 1, 1}, stride{1, 1, 1}, pad{0, 0, 0};
    int64_t in_cells() const { return in[0] * in[1] * in[2]; }
    int64_t out_cells() const { return out[0] * out[1] * out[2]; }
};

Geometry3d geometry(const Shape& x, const Shape& y, const PoolAttrs& a) {
    Geometry3d g;
    g.planes = x[0] * x[1];
    const int spatial = x.rank() - 2, shift = 3 - spatial;
    for (int i = 0; i < spatial; ++i) {
        const size_t s = static_cast<size_t>(i), d = static_cast<size_t>(i + shift);
        g.in[d] = x[i + 2];
        g.out[d] = y[i + 2];
        g.kernel[d] = a.kernel[s];
        g.stride[d] = a.strides[s];
        g.pad[d] = a.pad_lo[s];
    }
    return g;
}

// Calls fn(out_cell, cells) for every output cell of one plane, with the in-plane indices of the
// input cells its window covers (padding excluded; every window holds at least one, see pooling.cpp).
template <typename Fn>
void for_each_window(const Geometry3d& g, Fn fn) {
    std::vector<int64_t> cells;
    for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh)
            for (int64_t ow = 0; ow < g.out[2]; ++ow) {
                cells.clear();
                for (int64_t kd = 0; kd < g.kernel[0]; ++kd) {
                    const int64_t id = od * g.stride[0] - g.pad[0] + kd;
                    if (id < 0 || id >= g.in[0]) continue;
                    for (int64_t kh = 0; kh < g.kernel[1]; ++kh) {
                        const int64_t ih = oh * g.stride[1] - g.pad[1] + kh;
                        if (ih < 0 || ih >= g.in[1]) continue;
                        for (int64_t kw = 0; kw < g.kernel[2]; ++kw) {
                            const int64_t iw = ow * g.stride[2] - g.pad[2] + kw;
                            if (iw >= 0 && iw < g.in[2]) cells.push_back((id * g.in[1] + ih) * g.in[2] + iw);
                        }
                    }
                }
                fn((od * g.out[1] + oh) * g.out[2] + ow, cells);
            }
}

// The divisor of average pooling: the whole window, or only its cells inside x.
double divisor(const Geometry3d& g, const PoolAttrs& a, size_t inside) {
    return a.include_pad ? static_cast<double>(g.kernel[0] * g.kernel[1] * g.kernel[2])
                         : static_cast<double>(inside);
}

void forward(const KernelCall& call) {
    const PoolAttrs& a = call.attr<PoolAttrs>();
    const Tensor x = call.inputs[0].contiguous();
    const Tensor& y = call.outputs[0];
    const Geometry3d g = geometry(x.shape(), y.shape(), a);
    int64_t* argmax = nullptr;
    if (call.outputs.size() > 1) {
        call.outputs[1] =
            Tensor::empty(Shape{y.numel() * int64_t(sizeof(int64_t))}, DataType::u8, y.device());
        argmax = reinterpret_cast<int64_t*>(call.outputs[1].raw_data());
    }
    for (int64_t p = 0; p < g.planes; ++p) {
        const double* xp = x.data<double>() + p * g.in_cells();
        double* yp = y.data<double>() + p * g.out_cells();
        for_each_window(g, [&](int64_t o, const std::vector<int64_t>& cells) {
            if (a.kind == PoolKind::max) {
                int64_t best = cells[0];  // the first maximum wins, as in oneDNN
                for (int64_t c : cells)
                    if (xp[c] > xp[best]) best = c;
                yp[o] = xp[best];
                if (argmax) argmax[p * g.out_cells() + o] = best;
            } else {
                double sum = 0;
                for (int64_t c : cells) sum += xp[c];
                yp[o] = sum / divisor(g, a, cells.size());
            }
        });
    }
}

void backward(const KernelCall& call) {
    const PoolAttrs& a = call.attr<PoolAttrs>();
    const Tensor dy = call.inputs[0].contiguous();
    const Tensor& workspace = call.inputs[2];
    const Tensor& dx = call.outputs[0];
    const Geometry3d g = geometry(dx.shape(), dy.shape(), a);
    std::memset(dx.raw_data(), 0, static_cast<size_t>(dx.numel()) * sizeof(double));
    const int64_t* argmax = nullptr;
    if (a.kind == PoolKind::max) {
        CTK_CHECK(workspace.numel() == dy.numel() * int64_t(sizeof(int64_t)), ValueError,
                  "pooling_backward: workspace ", workspace.to_string(),
                  " does not match the float64 pooling output ", dy.shape().to_string());
        argmax = reinterpret_cast<const int64_t*>(workspace.raw_data());
    }
    for (int64_t p = 0; p < g.planes; ++p) {
        const double* dyp = dy.data<double>() + p * g.out_cells();
        double* dxp = dx.data<double>() + p * g.in_cells();
        if (argmax) {
            for (int64_t o = 0; o < g.out_cells(); ++o) {
                const int64_t cell = argmax[p * g.out_cells() + o];
                CTK_CHECK(cell >= 0 && cell < g.in_cells(), ValueError, "pooling_backward: workspace entry ",
                          cell, " is outside the input plane of ", g.in_cells(),
                          " cells; it is not from this pooling");
                dxp[cell] += dyp[o];
            }
            continue;
        }
        for_each_window(g, [&](int64_t o, const std::vector<int64_t>& cells) {
            const double share = dyp[o] / divisor(g, a, cells.size());
            for (int64_t c : cells) dxp[c] += share;
        });
    }
}

}  // namespace

void register_reference_pooling(KernelTable& t) {
    t.add(OpKind::pooling, DeviceType::cpu, DataType::f64, forward);
    t.add(OpKind::pooling_backward, DeviceType::cpu, DataType::f64, backward);
}

}  // namespace ctk::cpu
