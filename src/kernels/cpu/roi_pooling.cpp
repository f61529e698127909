// CPU ROI pooling (max): hand-written, as neither oneDNN nor OpenBLAS has it. Forward runs one (sample,
// ROI) pair per task; backward adds each bin's gradient at its argmax one (sample, channel) plane per
// task, so the sums never race and are reproducible for any thread count.
#include <vector>

#include "ctk/core/parallel.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/roi_pooling_geometry.h"

namespace ctk::cpu {

namespace {

template <typename T>
void roi_pool_forward(const KernelCall& call) {
    const auto& a = call.attr<RoiPoolAttrs>();
    const Tensor &x = call.inputs[0], &rois = call.inputs[1];
    Tensor &y = call.outputs[0], &argmax = call.outputs[1];
    const int64_t n = x.dim(0), channels = x.dim(1), height = x.dim(2), width = x.dim(3);
    const int64_t r_count = rois.dim(1), out_h = a.output[0], out_w = a.output[1];
    const T* xp = x.data<T>();
    const T* rp = rois.data<T>();
    T* yp = y.data<T>();
    int64_t* ap = argmax.data<int64_t>();
    const int64_t plane = height * width, bins = out_h * out_w;
    parallel_for(0, n * r_count, 1, [&](int64_t begin, int64_t end) {
        for (int64_t nr = begin; nr < end; ++nr) {
            const int64_t s = nr / r_count;
            const T* roi = rp + nr * 4;
            const detail::RoiBox box = detail::roi_box(load(roi[0]), load(roi[1]), load(roi[2]), load(roi[3]),
                                                       a.spatial_scale, out_h, out_w);
            for (int64_t c = 0; c < channels; ++c) {
                const T* xc = xp + (s * channels + c) * plane;
                const int64_t out = (nr * channels + c) * bins;
                for (int64_t i = 0; i < out_h; ++i) {
                    const detail::Span rows = detail::roi_bin(i, box.bin_h, box.y0, height);
                    for (int64_t j = 0; j < out_w; ++j) {
                        const detail::Span cols = detail::roi_bin(j, box.bin_w, box.x0, width);
                        // The first maximum in row-major order wins ties, and a number beats NaN (CNTK
                        // skipped NaN); a bin of NaN only gives NaN. An empty bin gives 0, argmax -1.
                        compute_t<T> best = 0;
                        int64_t at = -1;
                        for (int64_t h = rows.begin; h < rows.end; ++h)
                            for (int64_t w = cols.begin; w < cols.end; ++w) {
                                const compute_t<T> v = load(xc[h * width + w]);
                                if (at < 0 || v > best || best != best) best = v, at = h * width + w;
                            }
                        yp[out + i * out_w + j] = store<T>(at < 0 ? compute_t<T>(0) : best);
                        ap[out + i * out_w + j] = at;
                    }
                }
            }
        }
    });
}

template <typename T>
void roi_pool_backward(const KernelCall& call) {
    const Tensor &dy = call.inputs[0], &argmax = call.inputs[1];
    Tensor& dx = call.outputs[0];
    const int64_t n = dy.dim(0), r_count = dy.dim(1), channels = dy.dim(2), bins = dy.dim(3) * dy.dim(4);
    const int64_t plane = dx.dim(2) * dx.dim(3);
    const T* gp = dy.data<T>();
    const int64_t* ap = argmax.data<int64_t>();
    T* dp = dx.data<T>();
    parallel_for(0, n * channels, 1, [&](int64_t begin, int64_t end) {
        std::vector<compute_t<T>> sum(static_cast<size_t>(plane));
        for (int64_t nc = begin; nc < end; ++nc) {
            const int64_t s = nc / channels, c = nc % channels;
            std::fill(sum.begin(), sum.end(), compute_t<T>(0));
            for (int64_t r = 0; r < r_count; ++r) {
                const int64_t base = ((s * r_count + r) * channels + c) * bins;
                for (int64_t b = 0; b < bins; ++b)
                    if (ap[base + b] >= 0) sum[static_cast<size_t>(ap[base + b])] += load(gp[base + b]);
            }
            for (int64_t k = 0; k < plane; ++k) dp[nc * plane + k] = store<T>(sum[static_cast<size_t>(k)]);
        }
    });
}

}  // namespace

void register_roi_pooling(KernelTable& t) {
    t.add(OpKind::roi_pooling, DeviceType::cpu, DataType::f32, roi_pool_forward<float>);
    t.add(OpKind::roi_pooling, DeviceType::cpu, DataType::f64, roi_pool_forward<double>);
    t.add(OpKind::roi_pooling, DeviceType::cpu, DataType::f16, roi_pool_forward<Half>);
    t.add(OpKind::roi_pooling, DeviceType::cpu, DataType::bf16, roi_pool_forward<BFloat16>);
    t.add(OpKind::roi_pooling_backward, DeviceType::cpu, DataType::f32, roi_pool_backward<float>);
    t.add(OpKind::roi_pooling_backward, DeviceType::cpu, DataType::f64, roi_pool_backward<double>);
    t.add(OpKind::roi_pooling_backward, DeviceType::cpu, DataType::f16, roi_pool_backward<Half>);
    t.add(OpKind::roi_pooling_backward, DeviceType::cpu, DataType::bf16, roi_pool_backward<BFloat16>);
}

}  // namespace ctk::cpu
