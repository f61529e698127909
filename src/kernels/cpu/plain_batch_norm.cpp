// Per-channel f32 batch normalization on the plain [N, C, spatial] layout the graph holds. Hand-written
// because no library does it well: oneDNN 2.6 runs plain NCHW on a scalar loop, and its JIT kernel wants
// the blocked layout, so every call paid two or three reorders that cost more than the normalization
// (ResNet-20 inference: 0.8 ms per batch norm of [128, 32, 16, 16], of which 0.15 ms normalizing).
// Each plane (one sample's channel) is a contiguous run of `spatial` floats: the loops below work on
// 16 lanes that the compiler turns into one vector per ISA (target_clones picks the widest the CPU has).
// Statistics are accumulated per plane in f32 lanes and across planes in double, with the channel's
// first value subtracted first, so a one-pass variance does not cancel (the float64 reference in
// reference_batch_norm.cpp is what the tests hold these to).
#include "kernels/cpu/plain_batch_norm.h"

#include <cmath>
#include <cstring>

#include "ctk/core/parallel.h"
#include "kernels/cpu/cpu_common.h"

namespace ctk::cpu {

namespace {

constexpr int kLanes = 16;

// 16 floats as one value: one zmm register with AVX-512, two ymm or four xmm on the other clones.
typedef float Lanes __attribute__((vector_size(kLanes * sizeof(float))));

// Loads, and sums the lanes into double, in the caller's clone (a function taking or returning Lanes
// would have a different ABI per clone).
#define CTK_LOAD(v, p) std::memcpy(&(v), (p), sizeof(Lanes))
#define CTK_TOTAL(t, v) \
    for (int lane = 0; lane < kLanes; ++lane) t += (v)[lane]

// sum(x - shift) and sum((x - shift)^2) over one plane.
CTK_VECTOR_CLONES void plane_moments(const float* x, int64_t n, float shift, double* sum, double* sum_sq) {
    Lanes s = {}, q = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        Lanes d;
        CTK_LOAD(d, x + i);
        d -= shift;
        s += d;
        q += d * d;
    }
    double ts = 0, tq = 0;
    CTK_TOTAL(ts, s);
    CTK_TOTAL(tq, q);
    for (; i < n; ++i) {
        const double d = double(x[i]) - shift;
        ts += d;
        tq += d * d;
    }
    *sum += ts;
    *sum_sq += tq;
}

// y = x * a + b over one plane.
CTK_VECTOR_CLONES void plane_affine(const float* x, float* y, int64_t n, float a, float b) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * a + b;
}

// sum(dy) and sum(dy * (x - mean)) over one plane.
CTK_VECTOR_CLONES void plane_gradient_sums(const float* x, const float* dy, int64_t n, float mean,
                                           double* sum_dy, double* sum_dy_xc) {
    Lanes s = {}, p = {};
    int64_t i = 0;
    for (; i + kLanes <= n; i += kLanes) {
        Lanes g, v;
        CTK_LOAD(g, dy + i);
        CTK_LOAD(v, x + i);
        s += g;
        p += g * (v - mean);
    }
    double ts = 0, tp = 0;
    CTK_TOTAL(ts, s);
    CTK_TOTAL(tp, p);
    for (; i < n; ++i) {
        ts += dy[i];
        tp += double(dy[i]) * (double(x[i]) - mean);
    }
    *sum_dy += ts;
    *sum_dy_xc += tp;
}

// dx = k * dy - c * (x - mean) - d over one plane.
CTK_VECTOR_CLONES void plane_input_gradient(const float* x, const float* dy, float* dx, int64_t n, float k,
                                            float c, float mean, float d) {
    for (int64_t i = 0; i < n; ++i) dx[i] = k * dy[i] - c * (x[i] - mean) - d;
}

#undef CTK_LOAD
#undef CTK_TOTAL

struct Geometry {
    int64_t n, c, s;
    int64_t plane(int64_t sample, int64_t channel) const { return (sample * c + channel) * s; }
    double count() const { return static_cast<double>(n * s); }
};

Geometry geometry(const Shape& x) {
    return {x[0], x[1], x.numel() / (x[0] * x[1])};
}

}  // namespace

bool plain_batch_norm_fits(const Shape& x, bool spatial) {
    return spatial && x.rank() >= 3 && x[0] > 0 && x[1] > 0 && x.numel() / (x[0] * x[1]) >= kLanes / 2;
}

void plain_batch_norm_training(const float* x, const float* scale, const float* bias, float epsilon,
                               const Shape& shape, float* y, float* mean, float* var) {
    const Geometry g = geometry(shape);
    parallel_for(0, g.c, 1, [&](int64_t begin, int64_t end) {
        for (int64_t ch = begin; ch < end; ++ch) {
            const float shift = x[g.plane(0, ch)];
            double sum = 0, sum_sq = 0;
            for (int64_t i = 0; i < g.n; ++i) plane_moments(x + g.plane(i, ch), g.s, shift, &sum, &sum_sq);
            const double m = sum / g.count();
            const double v = std::max(sum_sq / g.count() - m * m, 0.0);  // biased, as CNTK normalizes with it
            mean[ch] = static_cast<float>(shift + m);
            var[ch] = static_cast<float>(v);
            const double inv_std = 1.0 / std::sqrt(v + epsilon);
            const float a = static_cast<float>(scale[ch] * inv_std);
            const float b = static_cast<float>(bias[ch] - (shift + m) * scale[ch] * inv_std);
            for (int64_t i = 0; i < g.n; ++i) plane_affine(x + g.plane(i, ch), y + g.plane(i, ch), g.s, a, b);
        }
    });
}

void plain_batch_norm_inference(const float* x, const float* scale, const float* bias, const float* mean,
                                const float* var, float epsilon, const Shape& shape, float* y) {
    const Geometry g = geometry(shape);
    parallel_for(0, g.n * g.c, 1, [&](int64_t begin, int64_t end) {
        for (int64_t p = begin; p < end; ++p) {
            const int64_t ch = p % g.c;
            const double inv_std = 1.0 / std::sqrt(double(var[ch]) + epsilon);
            const float a = static_cast<float>(scale[ch] * inv_std);
            const float b = static_cast<float>(bias[ch] - double(mean[ch]) * scale[ch] * inv_std);
            plane_affine(x + p * g.s, y + p * g.s, g.s, a, b);
        }
    });
}

// With xhat = (x - mean) / std and M values per channel: dbias = sum(dy), dscale = sum(dy * xhat),
// dx = scale / std * (dy - dbias / M - xhat * dscale / M).
void plain_batch_norm_backward(const float* x, const float* dy, const float* scale, const float* mean,
                               const float* var, float epsilon, const Shape& shape, float* dx, float* dscale,
                               float* dbias) {
    const Geometry g = geometry(shape);
    parallel_for(0, g.c, 1, [&](int64_t begin, int64_t end) {
        for (int64_t ch = begin; ch < end; ++ch) {
            double sum_dy = 0, sum_dy_xc = 0;
            for (int64_t i = 0; i < g.n; ++i)
                plane_gradient_sums(x + g.plane(i, ch), dy + g.plane(i, ch), g.s, mean[ch], &sum_dy,
                                    &sum_dy_xc);
            const double inv_std = 1.0 / std::sqrt(double(var[ch]) + epsilon);
            dbias[ch] = static_cast<float>(sum_dy);
            dscale[ch] = static_cast<float>(sum_dy_xc * inv_std);
            const double k = scale[ch] * inv_std;
            const float c = static_cast<float>(k * sum_dy_xc * inv_std * inv_std / g.count());
            const float d = static_cast<float>(k * sum_dy / g.count());
            for (int64_t i = 0; i < g.n; ++i)
                plane_input_gradient(x + g.plane(i, ch), dy + g.plane(i, ch), dx + g.plane(i, ch), g.s,
                                     static_cast<float>(k), c, mean[ch], d);
        }
    });
}

}  // namespace ctk::cpu
