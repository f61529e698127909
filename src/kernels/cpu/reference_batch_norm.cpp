// Direct-loop batch normalization for f64, which oneDNN lacks: plain and slow on purpose (gradient
// checks and the reference the oneDNN kernels are tested against). x is seen as [N, C, S]: per
// channel S is the spatial size; per activation C is the sample size and S = 1.
#include <cmath>

#include "kernels/cpu/cpu_common.h"

namespace ctk::cpu {

namespace {

struct Layout {
    int64_t n = 1, c = 1, s = 1;
    int64_t at(int64_t i, int64_t ch, int64_t j) const { return (i * c + ch) * s + j; }
    double count() const { return static_cast<double>(n * s); }  // values per statistic
};

Layout layout_of(const Shape& x, bool spatial) {
    Layout l;
    l.n = x[0];
    l.c = spatial ? x[1] : x.numel() / x[0];
    l.s = x.numel() / (l.n * l.c);
    return l;
}

const double* in(const KernelCall& call, size_t i, Tensor& keep) {
    keep = call.inputs[i].contiguous();
    return keep.data<double>();
}

void normalize(const Layout& l, const double* x, const double* scale, const double* bias, const double* mean,
               const double* var, double epsilon, double* y) {
    for (int64_t ch = 0; ch < l.c; ++ch) {
        const double inv_std = 1.0 / std::sqrt(var[ch] + epsilon);
        for (int64_t i = 0; i < l.n; ++i)
            for (int64_t j = 0; j < l.s; ++j) {
                const int64_t k = l.at(i, ch, j);
                y[k] = scale[ch] * (x[k] - mean[ch]) * inv_std + bias[ch];
            }
    }
}

void training(const KernelCall& call) {
    const BatchNormAttrs& a = call.attr<BatchNormAttrs>();
    Tensor kx, ks, kb;
    const double *x = in(call, 0, kx), *scale = in(call, 1, ks), *bias = in(call, 2, kb);
    const Layout l = layout_of(kx.shape(), a.spatial);
    double *mean = call.outputs[1].data<double>(), *var = call.outputs[2].data<double>();
    for (int64_t ch = 0; ch < l.c; ++ch) {
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < l.n; ++i)
            for (int64_t j = 0; j < l.s; ++j) sum += x[l.at(i, ch, j)];
        mean[ch] = sum / l.count();
        for (int64_t i = 0; i < l.n; ++i)
            for (int64_t j = 0; j < l.s; ++j) {
                const double d = x[l.at(i, ch, j)] - mean[ch];
                sq += d * d;
            }
        var[ch] = sq / l.count();  // biased, as CNTK and oneDNN normalize with it
    }
    normalize(l, x, scale, bias, mean, var, a.epsilon, call.outputs[0].data<double>());
}

void inference(const KernelCall& call) {
    const BatchNormAttrs& a = call.attr<BatchNormAttrs>();
    Tensor k[5];
    const double *x = in(call, 0, k[0]), *scale = in(call, 1, k[1]), *bias = in(call, 2, k[2]),
                 *mean = in(call, 3, k[3]), *var = in(call, 4, k[4]);
    normalize(layout_of(k[0].shape(), a.spatial), x, scale, bias, mean, var, a.epsilon,
              call.outputs[0].data<double>());
}

// The gradient through batch statistics: with xhat = (x - mean) / std and M values per statistic,
// dbias = sum(dy), dscale = sum(dy * xhat), dx = scale / std * (dy - dbias / M - xhat * dscale / M).
void backward(const KernelCall& call) {
    const BatchNormAttrs& a = call.attr<BatchNormAttrs>();
    Tensor k[5];
    const double *x = in(call, 0, k[0]), *dy = in(call, 1, k[1]), *scale = in(call, 2, k[2]),
                 *mean = in(call, 3, k[3]), *var = in(call, 4, k[4]);
    const Layout l = layout_of(k[0].shape(), a.spatial);
    double *dx = call.outputs[0].data<double>(), *dscale = call.outputs[1].data<double>(),
           *dbias = call.outputs[2].data<double>();
    for (int64_t ch = 0; ch < l.c; ++ch) {
        const double inv_std = 1.0 / std::sqrt(var[ch] + a.epsilon);
        double sum_dy = 0, sum_dy_xhat = 0;
        for (int64_t i = 0; i < l.n; ++i)
            for (int64_t j = 0; j < l.s; ++j) {
                const int64_t q = l.at(i, ch, j);
                sum_dy += dy[q];
                sum_dy_xhat += dy[q] * (x[q] - mean[ch]) * inv_std;
            }
        dbias[ch] = sum_dy;
        dscale[ch] = sum_dy_xhat;
        for (int64_t i = 0; i < l.n; ++i)
            for (int64_t j = 0; j < l.s; ++j) {
                const int64_t q = l.at(i, ch, j);
                const double xhat = (x[q] - mean[ch]) * inv_std;
                dx[q] = scale[ch] * inv_std * (dy[q] - sum_dy / l.count() - xhat * sum_dy_xhat / l.count());
            }
    }
}

// The running statistics' blend (ops.h batch_norm_update_running): a loop over the statistics is all it
// is, for every dtype it is registered for (no library has this step).
// CNTK's weight of the batch (BatchNormalizationNode): all of it for the first batch and for a time
// constant of 0; then 1 - exp(-samples / T); none for T = infinity (frozen after the first batch); the
// cumulative average samples / (count + samples) for T < 0 (CNTK's corpus-level statistics).
template <typename T>
T running_weight(const BatchNormRunningAttrs& a, T count) {
    if (a.time_constant == 0 || count == T(0)) return T(1);
    if (a.time_constant < 0) return T(a.samples) / (count + T(a.samples));
    if (std::isinf(a.time_constant)) return T(0);
    return T(1.0 - std::exp(-a.samples / a.time_constant));
}

template <typename T>
void running_update(const KernelCall& call) {
    const BatchNormRunningAttrs& a = call.attr<BatchNormRunningAttrs>();
    const T *mean = call.inputs[0].data<T>(), *var = call.inputs[1].data<T>();
    T *rmean = call.outputs[0].data<T>(), *rvar = call.outputs[1].data<T>(),
      *count = call.outputs[2].data<T>();
    const T w = running_weight<T>(a, *count), keep = T(1) - w, unbias = T(a.unbias);
    for (int64_t i = 0; i < call.inputs[0].numel(); ++i) {
        const T batch_var = var[i] * unbias;
        if (a.time_constant == 0) {
            rmean[i] = mean[i];
            rvar[i] = batch_var;
        } else {
            rmean[i] = rmean[i] * keep + mean[i] * w;
            rvar[i] = rvar[i] * keep + batch_var * w;
        }
    }
    *count = *count + T(a.samples);
}

}  // namespace

void register_reference_batch_norm(KernelTable& t) {
    t.add(OpKind::batch_norm_running_update, DeviceType::cpu, DataType::f32, running_update<float>);
    t.add(OpKind::batch_norm_running_update, DeviceType::cpu, DataType::f64, running_update<double>);
    t.add(OpKind::batch_norm_training, DeviceType::cpu, DataType::f64, training);
    t.add(OpKind::batch_norm_inference, DeviceType::cpu, DataType::f64, inference);
    t.add(OpKind::batch_norm_backward, DeviceType::cpu, DataType::f64, backward);
}

}  // namespace ctk::cpu
