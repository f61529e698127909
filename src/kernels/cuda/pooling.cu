// CUDA max and average pooling, 1-D to 3-D, written by hand rather than through cuDNN: cuDNN pads both
// sides alike and CNTK's auto-padding does not, and the backward pass here gathers (each input cell
// sums the output cells whose window holds it) so it needs no atomics and is deterministic. The
// max-pooling workspace holds, per output cell, the int64 index of the winning cell within its input
// plane, the same layout as the CPU reference kernel. Mirrors cpu/reference_pooling.cpp.
#include <algorithm>

#include "kernels/cuda/cuda_common.cuh"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/fast_divmod.h"

namespace ctk::cuda {

namespace {

// Every pooling seen as a 3-D one over planes = N * C; missing leading axes have size 1.
struct Geom {
    int64_t planes = 1;
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, kernel[3] = {1, 1, 1}, stride[3] = {1, 1, 1},
            pad[3] = {0, 0, 0};
    bool include_pad = false;
    // Below 2^30 cells (`narrow`), the per-cell index math divides with FastDivmod rather than with
    // 64-bit division, a software routine on a GPU that cost more than the pooling's memory traffic.
    bool narrow = false;
    FastDivmod by_in_cells, by_in_plane, by_in2, by_out_cells, by_out_plane, by_out2, by_stride[3];
    __host__ __device__ int64_t in_cells() const { return in[0] * in[1] * in[2]; }
    __host__ __device__ int64_t out_cells() const { return out[0] * out[1] * out[2]; }
};

// n / d, with d's FastDivmod where the geometry is narrow.
__device__ __forceinline__ int64_t quotient(const Geom& g, int64_t n, int64_t d, const FastDivmod& f) {
    return g.narrow ? int64_t(f.div(static_cast<uint32_t>(n))) : n / d;
}

// Cell `cell` of a [planes, size[0], size[1], size[2]] grid as (plane, position).
__device__ __forceinline__ int64_t split_cell(const Geom& g, int64_t cell, const int64_t size[3],
                                              const FastDivmod& by_cells, const FastDivmod& by_plane,
                                              const FastDivmod& by_2, int64_t pos[3]) {
    const int64_t plane_size = size[1] * size[2], cells = size[0] * plane_size;
    const int64_t p = quotient(g, cell, cells, by_cells);
    const int64_t c = cell - p * cells;
    pos[0] = quotient(g, c, plane_size, by_plane);
    const int64_t r = c - pos[0] * plane_size;
    pos[1] = quotient(g, r, size[2], by_2);
    pos[2] = r - pos[1] * size[2];
    return p;
}

Geom geometry(const Shape& x, const Shape& y, const PoolAttrs& a) {
    Geom g;
    g.planes = x[0] * x[1];
    g.include_pad = a.include_pad;
    const int spatial = x.rank() - 2, shift = 3 - spatial;
    for (int i = 0; i < spatial; ++i) {
        const size_t s = static_cast<size_t>(i);
        g.in[i + shift] = x[i + 2];
        g.out[i + shift] = y[i + 2];
        g.kernel[i + shift] = a.kernel[s];
        g.stride[i + shift] = a.strides[s];
        g.pad[i + shift] = a.pad_lo[s];
    }
    constexpr int64_t kNarrow = int64_t(1) << 30;
    g.narrow = g.in_cells() < kNarrow && g.out_cells() < kNarrow &&
               g.planes * std::max(g.in_cells(), g.out_cells()) < kNarrow;
    for (int d = 0; d < 3; ++d) g.narrow = g.narrow && g.kernel[d] + g.stride[d] + g.pad[d] < kNarrow;
    if (g.narrow) {
        auto fast = [](int64_t d) { return FastDivmod(static_cast<uint32_t>(std::max<int64_t>(d, 1))); };
        g.by_in_cells = fast(g.in_cells());
        g.by_in_plane = fast(g.in[1] * g.in[2]);
        g.by_in2 = fast(g.in[2]);
        g.by_out_cells = fast(g.out_cells());
        g.by_out_plane = fast(g.out[1] * g.out[2]);
        g.by_out2 = fast(g.out[2]);
        for (int d = 0; d < 3; ++d) g.by_stride[d] = fast(g.stride[d]);
    }
    return g;
}

// The window of output cell (od, oh, ow) clipped to the input: [lo, hi) per axis.
__device__ __forceinline__ void window(const Geom& g, const int64_t o[3], int64_t lo[3], int64_t hi[3]) {
    for (int d = 0; d < 3; ++d) {
        const int64_t start = o[d] * g.stride[d] - g.pad[d];
        lo[d] = max(start, int64_t(0));
        hi[d] = min(start + g.kernel[d], g.in[d]);
    }
}

template <typename D>
__global__ void pool_forward_kernel(Geom g, bool is_max, const D* x, D* y, int64_t* argmax) {
    using C = comp_t<D>;
    const int64_t total = g.planes * g.out_cells();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t o[3];
        const int64_t p = split_cell(g, i, g.out, g.by_out_cells, g.by_out_plane, g.by_out2, o);
        int64_t lo[3], hi[3];
        window(g, o, lo, hi);
        const D* xp = x + p * g.in_cells();
        if (is_max) {
            int64_t best = -1;
            C bv = 0;
            for (int64_t d = lo[0]; d < hi[0]; ++d)
                for (int64_t h = lo[1]; h < hi[1]; ++h)
                    for (int64_t w = lo[2]; w < hi[2]; ++w) {
                        const int64_t c = (d * g.in[1] + h) * g.in[2] + w;
                        const C v = to_comp(xp[c]);
                        if (best < 0 || v > bv) {  // the first maximum wins
                            best = c;
                            bv = v;
                        }
                    }
            y[i] = xp[best];
            if (argmax) argmax[i] = best;
        } else {
            C sum = 0;
            for (int64_t d = lo[0]; d < hi[0]; ++d)
                for (int64_t h = lo[1]; h < hi[1]; ++h)
                    for (int64_t w = lo[2]; w < hi[2]; ++w)
                        sum += to_comp(xp[(d * g.in[1] + h) * g.in[2] + w]);
            const int64_t n = g.include_pad ? g.kernel[0] * g.kernel[1] * g.kernel[2]
                                            : (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
            y[i] = from_comp<D>(sum / C(n));
        }
    }
}

// Each input cell gathers from the output cells whose window holds it.
template <typename D>
__global__ void pool_backward_kernel(Geom g, bool is_max, const D* dy, const int64_t* argmax, D* dx) {
    using C = comp_t<D>;
    const int64_t total = g.planes * g.in_cells();
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t c[3];
        const int64_t p = split_cell(g, i, g.in, g.by_in_cells, g.by_in_plane, g.by_in2, c);
        const int64_t ic = i - p * g.in_cells();
        int64_t olo[3], ohi[3];
        for (int d = 0; d < 3; ++d) {
            // o * stride - pad <= c <= o * stride - pad + kernel - 1
            const int64_t a = c[d] + g.pad[d] - g.kernel[d] + 1;
            olo[d] = a <= 0 ? 0 : quotient(g, a + g.stride[d] - 1, g.stride[d], g.by_stride[d]);
            ohi[d] = min(quotient(g, c[d] + g.pad[d], g.stride[d], g.by_stride[d]) + 1, g.out[d]);
        }
        C acc = 0;
        const D* dyp = dy + p * g.out_cells();
        for (int64_t od = olo[0]; od < ohi[0]; ++od)
            for (int64_t oh = olo[1]; oh < ohi[1]; ++oh)
                for (int64_t ow = olo[2]; ow < ohi[2]; ++ow) {
                    const int64_t oc = (od * g.out[1] + oh) * g.out[2] + ow;
                    if (is_max) {
                        if (argmax[p * g.out_cells() + oc] == ic) acc += to_comp(dyp[oc]);
                    } else {
                        const int64_t o[3] = {od, oh, ow};
                        int64_t lo[3], hi[3];
                        window(g, o, lo, hi);
                        const int64_t n = g.include_pad ? g.kernel[0] * g.kernel[1] * g.kernel[2]
                                                        : (hi[0] - lo[0]) * (hi[1] - lo[1]) * (hi[2] - lo[2]);
                        acc += to_comp(dyp[oc]) / C(n);
                    }
                }
        dx[i] = from_comp<D>(acc);
    }
}

template <typename T>
void forward(const KernelCall& call) {
    using D = dev_t<T>;
    const PoolAttrs& a = call.attr<PoolAttrs>();
    const Tensor x = call.inputs[0].contiguous();
    const Tensor& y_out = call.outputs[0];
    const Geom g = geometry(x.shape(), y_out.shape(), a);
    Tensor y = y_out.is_contiguous() ? y_out : Tensor::empty(y_out.shape(), y_out.dtype(), y_out.device());
    int64_t* argmax = nullptr;
    if (call.outputs.size() > 1) {
        call.outputs[1] =
            Tensor::empty(Shape{y.numel() * int64_t(sizeof(int64_t))}, DataType::u8, y.device());
        argmax = static_cast<int64_t*>(call.outputs[1].raw_data());
    }
    const int64_t n = g.planes * g.out_cells();
    pool_forward_kernel<D>
        <<<grid_for(n), 256, 0, stream_of(call)>>>(g, a.kind == PoolKind::max, ptr<D>(x), ptr<D>(y), argmax);
    CTK_CUDA_LAUNCH_CHECK();
    if (!y.shares_storage(y_out)) Tensor(y_out).copy_from(y);
}

template <typename T>
void backward(const KernelCall& call) {
    using D = dev_t<T>;
    const PoolAttrs& a = call.attr<PoolAttrs>();
    const Tensor dy = call.inputs[0].contiguous();
    const Tensor& workspace = call.inputs[2];
    const Tensor& dx_out = call.outputs[0];
    const Geom g = geometry(dx_out.shape(), dy.shape(), a);
    const bool is_max = a.kind == PoolKind::max;
    if (is_max)
        CTK_CHECK(workspace.defined() && workspace.numel() == dy.numel() * int64_t(sizeof(int64_t)) &&
                      workspace.device() == dy.device(),
                  ValueError, "pooling_backward: workspace ", workspace.to_string(),
                  " does not match the pooling output ", dy.shape().to_string(), " on ",
                  dy.device().to_string());
    Tensor dx =
        dx_out.is_contiguous() ? dx_out : Tensor::empty(dx_out.shape(), dx_out.dtype(), dx_out.device());
    const int64_t n = g.planes * g.in_cells();
    pool_backward_kernel<D><<<grid_for(n), 256, 0, stream_of(call)>>>(
        g, is_max, ptr<D>(dy), is_max ? static_cast<const int64_t*>(workspace.raw_data()) : nullptr,
        ptr<D>(dx));
    CTK_CUDA_LAUNCH_CHECK();
    if (!dx.shares_storage(dx_out)) Tensor(dx_out).copy_from(dx);
}

template <typename T>
void add(KernelTable& t) {
    t.add(OpKind::pooling, DeviceType::cuda, dtype_v<T>, forward<T>);
    t.add(OpKind::pooling_backward, DeviceType::cuda, dtype_v<T>, backward<T>);
}

}  // namespace

void register_pooling(KernelTable& t) {
    add<float>(t);
    add<double>(t);
    add<Half>(t);
    add<BFloat16>(t);
}

}  // namespace ctk::cuda
