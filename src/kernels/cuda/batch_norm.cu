// CUDA batch normalization (training statistics, inference, backward), by hand rather than through
// cuDNN: ctk's op returns the biased batch variance (cuDNN saves the inverse standard deviation) and
// takes any per-channel or per-activation layout. x is seen as [N, C, S]; blocks reduce runs of a
// channel's values, a merge kernel combines them per channel, and element-wise kernels apply the
// result. Mirrors cpu/reference_batch_norm.cpp (the inverse standard deviation with rsqrt, within an ulp
// or two of its 1 / sqrt). D is the data's type, P the parameters' and statistics':
// D itself, or float for bf16/f16 data under mixed precision.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/fast_divmod.h"
#include "kernels/cuda/rows.cuh"

namespace ctk::cuda {

namespace {

// x as [n, c, s]. Below 2^31 elements (`narrow`) the per-element index math divides with FastDivmod;
// above, with 64-bit division (a software routine on a GPU, which cost more than the memory traffic).
struct Layout {
    int64_t n = 1, c = 1, s = 1;
    bool narrow = false;
    FastDivmod by_s, by_c;
};

Layout layout_of(const Shape& x, bool spatial) {
    Layout l;
    l.n = x[0];
    l.c = spatial ? x[1] : x.numel() / std::max<int64_t>(x[0], 1);
    l.s = x.numel() / std::max<int64_t>(l.n * l.c, 1);
    l.narrow = x.numel() < (int64_t(1) << 31) && l.c < (int64_t(1) << 31) && l.s < (int64_t(1) << 31);
    if (l.narrow) {
        l.by_s = FastDivmod(static_cast<uint32_t>(std::max<int64_t>(l.s, 1)));
        l.by_c = FastDivmod(static_cast<uint32_t>(std::max<int64_t>(l.c, 1)));
    }
    return l;
}

struct SumOp {
    template <typename C>
    __device__ C operator()(C a, C b) const {
        return a + b;
    }
};

// A channel's values are split over several blocks (grid.y), each reducing a contiguous run of about
// kPerBlock of them: one block per channel left most of the GPU idle on ResNet-50's first stages
// (64 channels of 400k values each). Each block writes its partial result; a merge kernel combines a
// channel's partials in split order, so the result is the same on every run (no atomics).
constexpr int64_t kPerBlock = 8192, kMaxSplits = 1024;

int64_t splits_of(const Layout& l) {
    const int64_t count = l.n * l.s;
    return std::clamp<int64_t>((count + kPerBlock - 1) / kPerBlock, 1, kMaxSplits);
}
// The values per split: ceil(count / splits) (the last split may hold fewer, or none).
int64_t per_split(const Layout& l, int64_t splits) {
    return (l.n * l.s + splits - 1) / splits;
}

// Where value k (in [0, N*S)) of channel ch lies in x.
__device__ __forceinline__ int64_t channel_offset(const Layout& l, int64_t ch, int64_t k) {
    if (l.narrow) {
        const uint32_t q = l.by_s.div(static_cast<uint32_t>(k)),
                       r = static_cast<uint32_t>(k) - q * l.by_s.divisor;
        return (int64_t(q) * l.c + ch) * l.s + r;
    }
    return ((k / l.s) * l.c + ch) * l.s + k % l.s;
}

// The channel of x's element i.
__device__ __forceinline__ int64_t channel_of(const Layout& l, int64_t i) {
    if (l.narrow) return l.by_c.mod(l.by_s.div(static_cast<uint32_t>(i)));
    return (i / l.s) % l.c;
}

// Per (channel, split): the count, mean and sum of squared deviations of its values, in double (two
// passes, so the variance does not suffer from cancellation). partial is [C, splits, 3].
template <typename D>
__global__ void partial_stats_kernel(Layout l, int64_t per, const D* x, double* partial) {
    __shared__ double shared[8];
    const int64_t ch = blockIdx.x, count = l.n * l.s;
    const int64_t begin = blockIdx.y * per, end = min(count, begin + per);
    const double n = double(max(end - begin, int64_t(0)));
    double sum = 0;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x)
        sum += to_comp(x[channel_offset(l, ch, k)]);
    sum = block_reduce(sum, SumOp(), shared);  // every thread takes part: it synchronizes the block
    const double m = n > 0 ? sum / n : 0.0;
    double sq = 0;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
        const double d = to_comp(x[channel_offset(l, ch, k)]) - m;
        sq += d * d;
    }
    sq = block_reduce(sq, SumOp(), shared);
    if (threadIdx.x == 0) {
        double* p = partial + (ch * gridDim.y + blockIdx.y) * 3;
        p[0] = n;
        p[1] = m;
        p[2] = sq;
    }
}

// Merges each channel's partials in split order (Chan et al.'s pairwise update).
template <typename P>
__global__ void merge_stats_kernel(int64_t channels, int64_t splits, const double* partial, P* mean, P* var) {
    for (int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; ch < channels;
         ch += int64_t(gridDim.x) * blockDim.x) {
        double n = 0, m = 0, m2 = 0;
        for (int64_t s = 0; s < splits; ++s) {
            const double* p = partial + (ch * splits + s) * 3;
            if (p[0] == 0) continue;
            const double total = n + p[0], d = p[1] - m;
            m += d * p[0] / total;
            m2 += p[2] + d * d * n * p[0] / total;
            n = total;
        }
        mean[ch] = from_comp<P>(comp_t<P>(m));
        var[ch] = from_comp<P>(comp_t<P>(m2 / n));  // biased, as CNTK normalizes with it
    }
}

template <typename D, typename P>
__global__ void normalize_kernel(Layout l, const D* x, const P* scale, const P* bias, const P* mean,
                                 const P* var, double epsilon, D* y) {
    using C = comp_t<D>;
    const int64_t total = l.n * l.c * l.s;
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t ch = channel_of(l, i);
        const C inv_std = rsqrt(to_comp(var[ch]) + C(epsilon));
        y[i] = from_comp<D>(to_comp(scale[ch]) * (to_comp(x[i]) - to_comp(mean[ch])) * inv_std +
                            to_comp(bias[ch]));
    }
}

// dbias = sum(dy), dscale = sum(dy * xhat) per channel: sums per (channel, split) into partial
// ([C, splits, 2]), then added in split order.
template <typename D, typename P>
__global__ void partial_grad_kernel(Layout l, int64_t per, const D* x, const D* dy, const P* mean,
                                    const P* var, double epsilon, double* partial) {
    __shared__ double shared[8];
    const int64_t ch = blockIdx.x, count = l.n * l.s;
    const int64_t begin = blockIdx.y * per, end = min(count, begin + per);
    const double m = to_comp(mean[ch]), inv_std = 1.0 / sqrt(double(to_comp(var[ch])) + epsilon);
    double s_dy = 0, s_dyx = 0;
    for (int64_t k = begin + threadIdx.x; k < end; k += blockDim.x) {
        const int64_t q = channel_offset(l, ch, k);
        const double g = to_comp(dy[q]);
        s_dy += g;
        s_dyx += g * (double(to_comp(x[q])) - m) * inv_std;
    }
    s_dy = block_reduce(s_dy, SumOp(), shared);
    s_dyx = block_reduce(s_dyx, SumOp(), shared);
    if (threadIdx.x == 0) {
        double* p = partial + (ch * gridDim.y + blockIdx.y) * 2;
        p[0] = s_dy;
        p[1] = s_dyx;
    }
}

template <typename P>
__global__ void merge_grad_kernel(int64_t channels, int64_t splits, const double* partial, P* dscale,
                                  P* dbias) {
    for (int64_t ch = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; ch < channels;
         ch += int64_t(gridDim.x) * blockDim.x) {
        double s_dy = 0, s_dyx = 0;
        for (int64_t s = 0; s < splits; ++s) {
            s_dy += partial[(ch * splits + s) * 2];
            s_dyx += partial[(ch * splits + s) * 2 + 1];
        }
        dbias[ch] = from_comp<P>(comp_t<P>(s_dy));
        dscale[ch] = from_comp<P>(comp_t<P>(s_dyx));
    }
}

// dx = scale / std * (dy - dbias / M - xhat * dscale / M), M values per statistic.
template <typename D, typename P>
__global__ void grad_input_kernel(Layout l, const D* x, const D* dy, const P* scale, const P* mean,
                                  const P* var, const P* dscale, const P* dbias, double epsilon, D* dx) {
    using C = comp_t<D>;
    const int64_t total = l.n * l.c * l.s;
    const C count = C(l.n * l.s);
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total;
         i += int64_t(gridDim.x) * blockDim.x) {
        const int64_t ch = channel_of(l, i);
        const C inv_std = rsqrt(to_comp(var[ch]) + C(epsilon));
        const C xhat = (to_comp(x[i]) - to_comp(mean[ch])) * inv_std;
        dx[i] =
            from_comp<D>(to_comp(scale[ch]) * inv_std *
                         (to_comp(dy[i]) - to_comp(dbias[ch]) / count - xhat * to_comp(dscale[ch]) / count));
    }
}

// The running statistics' blend (ops.h batch_norm_update_running), in one block: every thread reads the
// count before thread 0 advances it, which a grid of several blocks could not order. Per-channel batch
// norms have a few thousand statistics at most; a per-activation one may have 100k (some 400 values per
// thread, still a short launch). The point is one launch instead of the twenty of the composite formula.
template <typename T>
__global__ void running_update_kernel(int64_t n, double samples, double unbias, double time_constant,
                                      double fixed_weight, const T* mean, const T* var, T* rmean, T* rvar,
                                      T* count) {
    const T c = count[0];
    T w;  // as the CPU kernel's running_weight (CNTK's)
    if (time_constant == 0 || c == T(0))
        w = T(1);
    else if (time_constant < 0)
        w = T(samples) / (c + T(samples));
    else
        w = T(fixed_weight);
    const T keep = T(1) - w;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
        const T batch_var = var[i] * T(unbias);
        if (time_constant == 0) {
            rmean[i] = mean[i];
            rvar[i] = batch_var;
        } else {
            rmean[i] = rmean[i] * keep + mean[i] * w;
            rvar[i] = rvar[i] * keep + batch_var * w;
        }
    }
    __syncthreads();  // every thread has read the count
    if (threadIdx.x == 0) count[0] = c + T(samples);
}

template <typename T>
void running_update(const KernelCall& call) {
    const auto& a = call.attr<BatchNormRunningAttrs>();
    // 1 - exp(-samples / T) on the host, in double as the CPU kernel computes it (0 for T = infinity).
    const double fixed = a.time_constant > 0 ? 1.0 - std::exp(-a.samples / a.time_constant) : 1.0;
    running_update_kernel<T><<<1, 256, 0, stream_of(call)>>>(
        call.inputs[0].numel(), a.samples, a.unbias, a.time_constant, fixed, ptr<T>(call.inputs[0]),
        ptr<T>(call.inputs[1]), ptr<T>(call.outputs[0]), ptr<T>(call.outputs[1]), ptr<T>(call.outputs[2]));
    CTK_CUDA_LAUNCH_CHECK();
}

// A contiguous version of an output to write into, and the copy back when one was needed.
Tensor writable(const Tensor& t) {
    return t.is_contiguous() ? t : Tensor::empty(t.shape(), t.dtype(), t.device());
}
void settle(const Tensor& tmp, const Tensor& out) {
    if (!tmp.shares_storage(out)) Tensor(out).copy_from(tmp);
}

// The kernels for data D with statistics P.
template <typename D, typename P>
void training(const KernelCall& call) {
    const auto& a = call.attr<BatchNormAttrs>();
    const Tensor x = call.inputs[0].contiguous(), scale = call.inputs[1].contiguous(),
                 bias = call.inputs[2].contiguous();
    const Layout l = layout_of(x.shape(), a.spatial);
    Tensor y = writable(call.outputs[0]), mean = writable(call.outputs[1]), var = writable(call.outputs[2]);
    cudaStream_t s = stream_of(call);
    const int64_t splits = splits_of(l);
    // Released after the launches: the allocator gives it out again only to work queued later on this stream.
    const Tensor partial = Tensor::empty(Shape{l.c, splits, 3}, DataType::f64, x.device());
    partial_stats_kernel<D><<<dim3(static_cast<unsigned>(l.c), static_cast<unsigned>(splits)), 256, 0, s>>>(
        l, per_split(l, splits), ptr<D>(x), ptr<double>(partial));
    CTK_CUDA_LAUNCH_CHECK();
    merge_stats_kernel<P>
        <<<grid_for(l.c), 256, 0, s>>>(l.c, splits, ptr<double>(partial), ptr<P>(mean), ptr<P>(var));
    CTK_CUDA_LAUNCH_CHECK();
    normalize_kernel<D, P><<<grid_for(x.numel()), 256, 0, s>>>(
        l, ptr<D>(x), ptr<P>(scale), ptr<P>(bias), ptr<P>(mean), ptr<P>(var), a.epsilon, ptr<D>(y));
    CTK_CUDA_LAUNCH_CHECK();
    settle(y, call.outputs[0]);
    settle(mean, call.outputs[1]);
    settle(var, call.outputs[2]);
}

template <typename D, typename P>
void inference(const KernelCall& call) {
    const auto& a = call.attr<BatchNormAttrs>();
    Tensor in[5];
    for (size_t i = 0; i < 5; ++i) in[i] = call.inputs[i].contiguous();
    const Layout l = layout_of(in[0].shape(), a.spatial);
    Tensor y = writable(call.outputs[0]);
    normalize_kernel<D, P><<<grid_for(y.numel()), 256, 0, stream_of(call)>>>(
        l, ptr<D>(in[0]), ptr<P>(in[1]), ptr<P>(in[2]), ptr<P>(in[3]), ptr<P>(in[4]), a.epsilon, ptr<D>(y));
    CTK_CUDA_LAUNCH_CHECK();
    settle(y, call.outputs[0]);
}

template <typename D, typename P>
void backward(const KernelCall& call) {
    const auto& a = call.attr<BatchNormAttrs>();
    Tensor in[5];  // x, dy, scale, mean, var
    for (size_t i = 0; i < 5; ++i) in[i] = call.inputs[i].contiguous();
    const Layout l = layout_of(in[0].shape(), a.spatial);
    Tensor dx = writable(call.outputs[0]), dscale = writable(call.outputs[1]),
           dbias = writable(call.outputs[2]);
    cudaStream_t s = stream_of(call);
    const int64_t splits = splits_of(l);
    const Tensor partial = Tensor::empty(Shape{l.c, splits, 2}, DataType::f64, in[0].device());
    partial_grad_kernel<D, P><<<dim3(static_cast<unsigned>(l.c), static_cast<unsigned>(splits)), 256, 0, s>>>(
        l, per_split(l, splits), ptr<D>(in[0]), ptr<D>(in[1]), ptr<P>(in[3]), ptr<P>(in[4]), a.epsilon,
        ptr<double>(partial));
    CTK_CUDA_LAUNCH_CHECK();
    merge_grad_kernel<P>
        <<<grid_for(l.c), 256, 0, s>>>(l.c, splits, ptr<double>(partial), ptr<P>(dscale), ptr<P>(dbias));
    CTK_CUDA_LAUNCH_CHECK();
    grad_input_kernel<D, P><<<grid_for(dx.numel()), 256, 0, s>>>(
        l, ptr<D>(in[0]), ptr<D>(in[1]), ptr<P>(in[2]), ptr<P>(in[3]), ptr<P>(in[4]), ptr<P>(dscale),
        ptr<P>(dbias), a.epsilon, ptr<D>(dx));
    CTK_CUDA_LAUNCH_CHECK();
    settle(dx, call.outputs[0]);
    settle(dscale, call.outputs[1]);
    settle(dbias, call.outputs[2]);
}

// A 16-bit type's kernel: statistics in that type, or in f32 when an f32 scale comes with the data
// (operand 1 in all three ops; the op API has checked that the other statistics match it).
template <void (*Same)(const KernelCall&), void (*Mixed)(const KernelCall&)>
void by_stats_dtype(const KernelCall& call) {
    const int scale = call.op == OpKind::batch_norm_backward ? 2 : 1;
    if (call.inputs[scale].dtype() == DataType::f32) return Mixed(call);
    Same(call);
}

template <typename T>
void add(KernelTable& t) {
    using D = dev_t<T>;
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
        t.add(OpKind::batch_norm_training, DeviceType::cuda, dtype_v<T>, training<D, D>);
        t.add(OpKind::batch_norm_inference, DeviceType::cuda, dtype_v<T>, inference<D, D>);
        t.add(OpKind::batch_norm_backward, DeviceType::cuda, dtype_v<T>, backward<D, D>);
    } else {
        t.add(OpKind::batch_norm_training, DeviceType::cuda, dtype_v<T>,
              by_stats_dtype<training<D, D>, training<D, float>>);
        t.add(OpKind::batch_norm_inference, DeviceType::cuda, dtype_v<T>,
              by_stats_dtype<inference<D, D>, inference<D, float>>);
        t.add(OpKind::batch_norm_backward, DeviceType::cuda, dtype_v<T>,
              by_stats_dtype<backward<D, D>, backward<D, float>>);
    }
}

}  // namespace

void register_batch_norm(KernelTable& t) {
    t.add(OpKind::batch_norm_running_update, DeviceType::cuda, DataType::f32, running_update<float>);
    t.add(OpKind::batch_norm_running_update, DeviceType::cuda, DataType::f64, running_update<double>);
    add<float>(t);
    add<double>(t);
    add<Half>(t);
    add<BFloat16>(t);
}

}  // namespace ctk::cuda
