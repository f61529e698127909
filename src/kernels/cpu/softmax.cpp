// CPU softmax family along one axis. Inputs are viewed as [outer, n, inner] (contiguous); each
// (outer, inner) line is handled by one thread in a fixed order, so results do not depend on threads.
// Sums accumulate in double; exponentials are computed in the element's compute type.
#include <cmath>
#include <limits>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/vector_math.h"

namespace ctk::cpu {

namespace {

struct Lines {
    int64_t outer = 1, n = 1, inner = 1;
};

Lines lines_of(const Shape& s, int axis) {
    Lines l;
    for (int i = 0; i < s.rank(); ++i) {
        if (i < axis)
            l.outer *= s[i];
        else if (i == axis)
            l.n = s[i];
        else
            l.inner *= s[i];
    }
    return l;
}

// Calls fn(line_index, in_ptrs..., out_ptr, stride) for every line, in parallel over lines.
template <typename T, int NIn, typename Fn>
void for_lines(const KernelCall& call, Fn fn) {
    const int axis = call.attr<AxisAttrs>().axis;
    std::array<Tensor, NIn> in;
    for (int k = 0; k < NIn; ++k) in[k] = call.inputs[k].contiguous();
    const Tensor& out = call.outputs[0];
    if (out.numel() == 0) return;
    Lines l = lines_of(out.shape(), axis);
    parallel_for(0, l.outer * l.inner, std::max<int64_t>(1, 4096 / std::max<int64_t>(l.n, 1)),
                 [&](int64_t b, int64_t e) {
                     for (int64_t t = b; t < e; ++t) {
                         int64_t off = (t / l.inner) * l.n * l.inner + t % l.inner;
                         std::array<const T*, NIn> p;
                         for (int k = 0; k < NIn; ++k) p[k] = in[k].template data<T>() + off;
                         fn(p, out.data<T>() + off, l.n, l.inner);
                     }
                 });
}

template <typename T>
void softmax_kernel(const KernelCall& call) {
    using C = compute_t<T>;
    const bool log_form = call.op == OpKind::log_softmax;
    for_lines<T, 1>(call, [&](std::array<const T*, 1> x, T* y, int64_t n, int64_t s) {
        C m = -std::numeric_limits<C>::infinity();
        if constexpr (std::is_same_v<T, float>) {
            if (s == 1) m = vmath::max(x[0], n);
        }
        if (s != 1 || !std::is_same_v<T, float>)
            for (int64_t i = 0; i < n; ++i) m = std::max(m, load(x[0][i * s]));
        if (!std::isfinite(m)) m = m != m ? m : C(0);  // all -inf: exp(-inf) = 0 below; NaN propagates
        double sum = 0;
        if constexpr (std::is_same_v<T, float>) {
            if (s == 1) {  // a contiguous line: the exponentials vectorised, into y first
                for (int64_t i = 0; i < n; ++i) y[i] = x[0][i] - m;
                vmath::exp(y, y, n);
                sum = vmath::sum(y, n);
                if (log_form) {
                    const float log_sum = static_cast<float>(std::log(sum));
                    for (int64_t i = 0; i < n; ++i) y[i] = (x[0][i] - m) - log_sum;
                } else {
                    const float inv = static_cast<float>(1.0 / sum);
                    for (int64_t i = 0; i < n; ++i) y[i] *= inv;
                }
                return;
            }
        }
        for (int64_t i = 0; i < n; ++i) {
            C e = std::exp(load(x[0][i * s]) - m);
            sum += e;
            if (!log_form) y[i * s] = store<T>(e);
        }
        if (log_form) {
            // (x - m) - log(sum), not x - (m + log(sum)): for large x, m + log(sum) rounds away the log.
            const C log_sum = static_cast<C>(std::log(sum));
            for (int64_t i = 0; i < n; ++i) y[i * s] = store<T>((load(x[0][i * s]) - m) - log_sum);
        } else {
            C inv = static_cast<C>(1.0 / sum);
            for (int64_t i = 0; i < n; ++i) y[i * s] = store<T>(load(y[i * s]) * inv);
        }
    });
}

template <typename T>
void hardmax_kernel(const KernelCall& call) {
    using C = compute_t<T>;
    for_lines<T, 1>(call, [&](std::array<const T*, 1> x, T* y, int64_t n, int64_t s) {
        int64_t best = 0;
        C bv = load(x[0][0]);
        for (int64_t i = 1; i < n; ++i) {
            C v = load(x[0][i * s]);
            if (v > bv) {
                bv = v;
                best = i;
            }
        }
        for (int64_t i = 0; i < n; ++i) y[i * s] = store<T>(i == best ? C(1) : C(0));
    });
}

template <typename T>
void softmax_backward_kernel(const KernelCall& call) {
    using C = compute_t<T>;
    const bool log_form = call.op == OpKind::log_softmax_backward;
    for_lines<T, 2>(call, [&](std::array<const T*, 2> in, T* dx, int64_t n, int64_t s) {
        const T *y = in[0], *dy = in[1];
        double dot = 0;
        if (log_form) {  // dx = dy - softmax * sum(dy), softmax = exp(log_softmax)
            if constexpr (std::is_same_v<T, float>) {
                if (s == 1) {
                    dot = vmath::sum(dy, n);
                    vmath::exp(dx, y, n);
                    const float d = static_cast<float>(dot);
                    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] - dx[i] * d;
                    return;
                }
            }
            for (int64_t i = 0; i < n; ++i) dot += load(dy[i * s]);
            for (int64_t i = 0; i < n; ++i)
                dx[i * s] = store<T>(load(dy[i * s]) - std::exp(load(y[i * s])) * static_cast<C>(dot));
        } else {  // dx = y * (dy - sum(dy * y))
            for (int64_t i = 0; i < n; ++i) dot += static_cast<double>(load(dy[i * s])) * load(y[i * s]);
            for (int64_t i = 0; i < n; ++i)
                dx[i * s] = store<T>(load(y[i * s]) * (load(dy[i * s]) - static_cast<C>(dot)));
        }
    });
}

}  // namespace

void register_softmax(KernelTable& t) {
    auto add = [&]<typename T>(T) {
        constexpr DataType d = dtype_v<T>;
        t.add(OpKind::softmax, DeviceType::cpu, d, softmax_kernel<T>);
        t.add(OpKind::log_softmax, DeviceType::cpu, d, softmax_kernel<T>);
        t.add(OpKind::hardmax, DeviceType::cpu, d, hardmax_kernel<T>);
        t.add(OpKind::softmax_backward, DeviceType::cpu, d, softmax_backward_kernel<T>);
        t.add(OpKind::log_softmax_backward, DeviceType::cpu, d, softmax_backward_kernel<T>);
    };
    add(float{});
    add(double{});
    add(Half{});
    add(BFloat16{});
}

}  // namespace ctk::cpu
