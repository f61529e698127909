// CPU reductions over any set of axes, and argmax/argmin. The input is viewed as blocks of kept (K)
// and reduced (R) axes: [K, R] reduces contiguous rows, [K, R, K] reduces columns vectorised over the
// inner kept block; other patterns are permuted to [K, R] first. Accumulation is in double, and
// long rows are cut into fixed chunks whose partial results combine in a fixed order, so results do not
// depend on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/vector_math.h"

namespace ctk::cpu {

namespace {

constexpr int64_t kChunk = 16384;  // fixed partial-sum length: independent of the thread count

enum class Acc { sum, max, min, prod, abs_sum, square_sum };

struct ReduceKind {
    Acc acc;
    double init;
    bool mean = false, sqrt_result = false;
};

ReduceKind kind_of(OpKind op) {
    constexpr double inf = std::numeric_limits<double>::infinity();
    switch (op) {
        case OpKind::reduce_sum:
            return {Acc::sum, 0.0};
        case OpKind::reduce_mean:
            return {Acc::sum, 0.0, true};
        case OpKind::reduce_max:
            return {Acc::max, -inf};
        case OpKind::reduce_min:
            return {Acc::min, inf};
        case OpKind::reduce_prod:
            return {Acc::prod, 1.0};
        case OpKind::reduce_l1:
            return {Acc::abs_sum, 0.0};
        case OpKind::reduce_l2:
            return {Acc::square_sum, 0.0, false, true};
        case OpKind::reduce_sum_square:
            return {Acc::square_sum, 0.0};
        default:
            CTK_THROW(NotImplementedError, op_name(op), ": not a reduction");
    }
}

template <Acc A>
inline double step(double acc, double x) {
    if constexpr (A == Acc::sum)
        return acc + x;
    else if constexpr (A == Acc::max)
        return (x > acc || x != x) ? x : acc;  // NaN wins and stays
    else if constexpr (A == Acc::min)
        return (x < acc || x != x) ? x : acc;
    else if constexpr (A == Acc::prod)
        return acc * x;
    else if constexpr (A == Acc::abs_sum)
        return acc + std::fabs(x);
    else
        return acc + x * x;
}
template <Acc A>
inline double combine(double a, double b) {
    if constexpr (A == Acc::max || A == Acc::min)
        return step<A>(a, b);
    else if constexpr (A == Acc::prod)
        return a * b;
    else
        return a + b;
}

// Reduces n contiguous values in fixed-size chunks; 8 lanes inside a chunk keep the loop vectorisable.
template <Acc A, typename T>
double reduce_chunk(const T* p, int64_t n, double init) {
    double lane[8];
    for (double& l : lane) l = init;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; ++k) lane[k] = step<A>(lane[k], static_cast<double>(load(p[i + k])));
    for (int k = 0; i < n; ++i, ++k) lane[k] = step<A>(lane[k], static_cast<double>(load(p[i])));
    double r = lane[0];
    for (int k = 1; k < 8; ++k) r = combine<A>(r, lane[k]);
    return r;
}

template <Acc A, typename T>
double reduce_row(const T* p, int64_t n, double init, bool parallel) {
    int64_t chunks = (n + kChunk - 1) / kChunk;
    if (chunks <= 1) return reduce_chunk<A>(p, n, init);
    std::vector<double> partial(static_cast<size_t>(chunks));
    auto run = [&](int64_t b, int64_t e) {
        for (int64_t c = b; c < e; ++c)
            partial[static_cast<size_t>(c)] =
                reduce_chunk<A>(p + c * kChunk, std::min(kChunk, n - c * kChunk), init);
    };
    if (parallel)
        parallel_for(0, chunks, 1, run);
    else
        run(0, chunks);
    double r = partial[0];
    for (size_t c = 1; c < partial.size(); ++c) r = combine<A>(r, partial[c]);
    return r;
}

double finish(const ReduceKind& k, double acc, int64_t n) {
    if (k.mean) return acc / static_cast<double>(n);
    if (k.sqrt_result) return std::sqrt(acc);
    return acc;
}

// Blocks of alternating kept/reduced axes after merging neighbours and dropping size-1 axes.
struct Blocks {
    std::vector<int64_t> size;
    std::vector<bool> reduced;
};

Blocks make_blocks(const Shape& shape, const std::vector<int>& axes) {
    Blocks b;
    for (int i = 0; i < shape.rank(); ++i) {
        if (shape[i] == 1) continue;
        bool red = std::find(axes.begin(), axes.end(), i) != axes.end();
        if (!b.size.empty() && b.reduced.back() == red) {
            b.size.back() *= shape[i];
        } else {
            b.size.push_back(shape[i]);
            b.reduced.push_back(red);
        }
    }
    return b;
}

// out[a] = reduce(x[a, 0:r]) for contiguous x of shape [rows, r].
template <Acc A, typename T>
void reduce_rows(const T* x, T* out, int64_t rows, int64_t r, const ReduceKind& k) {
    bool few_rows = rows < num_threads();
    parallel_for(0, rows, std::max<int64_t>(1, kChunk / std::max<int64_t>(r, 1)), [&](int64_t b, int64_t e) {
        for (int64_t a = b; a < e; ++a)
            out[a] = store<T>(
                static_cast<compute_t<T>>(finish(k, reduce_row<A>(x + a * r, r, k.init, few_rows), r)));
    });
}

// out[a, j] = reduce over i of x[a, i, j] for contiguous x of shape [outer, r, inner]. Tasks are blocks of
// columns; when there are few of them (a bias gradient: [1, N*H*W, C] in channels-last memory order),
// the rows are cut as well, into runs of a fixed length whose partial results combine in order, so that
// every thread works and the result does not depend on the thread count.
template <Acc A, typename T>
void reduce_columns(const T* x, T* out, int64_t outer, int64_t r, int64_t inner, const ReduceKind& k) {
    constexpr int64_t kCols = 256;  // columns per task: the accumulators stay in L1
    constexpr int64_t kFewTasks = 64, kMaxRuns = 32;
    const int64_t col_blocks = (inner + kCols - 1) / kCols, tasks = outer * col_blocks;
    const int64_t width = std::min(inner, kCols);  // of a task's accumulators
    // At least kChunk values a run, at most kMaxRuns runs: a function of the shape alone.
    const int64_t runs = tasks < kFewTasks ? std::clamp<int64_t>(r * width / kChunk, 1, kMaxRuns) : 1;
    const int64_t run_rows = (r + runs - 1) / runs;
    // Reduces rows [i0, i1) of task t into out_acc (nj columns, starting from init); the accumulators
    // themselves live on the stack, where the compiler keeps them out of memory.
    auto reduce_run = [&](int64_t t, int64_t i0, int64_t i1, double* out_acc) {
        const int64_t a = t / col_blocks, j0 = (t % col_blocks) * kCols, nj = std::min(kCols, inner - j0);
        double acc[kCols];
        for (int64_t j = 0; j < nj; ++j) acc[j] = k.init;
        const T* base = x + a * r * inner + j0;
        for (int64_t i = i0; i < i1; ++i) {
            const T* row = base + i * inner;
            for (int64_t j = 0; j < nj; ++j) acc[j] = step<A>(acc[j], static_cast<double>(load(row[j])));
        }
        std::copy(acc, acc + nj, out_acc);
    };
    auto write = [&](int64_t t, const double* acc) {
        const int64_t a = t / col_blocks, j0 = (t % col_blocks) * kCols, nj = std::min(kCols, inner - j0);
        for (int64_t j = 0; j < nj; ++j)
            out[a * inner + j0 + j] = store<T>(static_cast<compute_t<T>>(finish(k, acc[j], r)));
    };
    if (runs <= 1) {
        parallel_for(0, tasks, std::max<int64_t>(1, kChunk / std::max<int64_t>(r * kCols, 1)),
                     [&](int64_t b, int64_t e) {
                         double acc[kCols];
                         for (int64_t t = b; t < e; ++t) {
                             reduce_run(t, 0, r, acc);
                             write(t, acc);
                         }
                     });
        return;
    }
    std::vector<double> partial(static_cast<size_t>(tasks * runs * width));
    parallel_for(0, tasks * runs, 1, [&](int64_t b, int64_t e) {
        for (int64_t q = b; q < e; ++q) {
            const int64_t t = q / runs, i0 = (q % runs) * run_rows;
            reduce_run(t, i0, std::min(r, i0 + run_rows), partial.data() + q * width);
        }
    });
    for (int64_t t = 0; t < tasks; ++t) {
        double* acc = partial.data() + t * runs * width;
        for (int64_t q = 1; q < runs; ++q)
            for (int64_t j = 0; j < width; ++j) acc[j] = combine<A>(acc[j], acc[q * width + j]);
        write(t, acc);
    }
}

// Brings x to a contiguous [outer, r, inner] form; returns false if it had to permute to [outer, r].
template <typename T>
Tensor as_three_blocks(const Tensor& x, const std::vector<int>& axes, int64_t& outer, int64_t& r,
                       int64_t& inner) {
    Tensor xc = x.contiguous();
    Blocks b = make_blocks(xc.shape(), axes);
    outer = 1, r = 1, inner = 1;
    size_t n = b.size.size();
    int reduced_blocks = 0;
    for (size_t i = 0; i < n; ++i) reduced_blocks += b.reduced[i];
    if (reduced_blocks <= 1) {
        size_t i = 0;
        for (; i < n && !b.reduced[i]; ++i) outer *= b.size[i];
        if (i < n) r = b.size[i++];
        for (; i < n; ++i) inner *= b.size[i];
        return xc;
    }
    // Several separated reduced blocks: move all reduced axes last and copy.
    std::vector<int> order;
    for (int i = 0; i < x.rank(); ++i)
        if (std::find(axes.begin(), axes.end(), i) == axes.end()) order.push_back(i);
    for (int a : axes) order.push_back(a);
    Tensor p = x.permute(order).contiguous();
    for (int i = 0; i < x.rank(); ++i) {
        if (std::find(axes.begin(), axes.end(), i) == axes.end())
            outer *= x.shape()[i];
        else
            r *= x.shape()[i];
    }
    return p;
}

template <Acc A, typename T>
void reduce_dispatch(const Tensor& x, const Tensor& out, const std::vector<int>& axes, const ReduceKind& k) {
    int64_t outer, r, inner;
    Tensor xc = as_three_blocks<T>(x, axes, outer, r, inner);
    const T* px = xc.data<T>();
    T* po = out.data<T>();
    if (inner == 1)
        reduce_rows<A>(px, po, outer, r, k);
    else
        reduce_columns<A>(px, po, outer, r, inner, k);
}

template <typename T>
void log_sum_exp(const Tensor& x, const Tensor& out, const std::vector<int>& axes) {
    // max first, then log(sum(exp(x - max))) + max, as two passes of the same machinery.
    Tensor m = Tensor::empty(out.shape(), DataType::f64);
    Tensor x64 = x.to(DataType::f64);
    reduce_dispatch<Acc::max, double>(x64, m, axes, kind_of(OpKind::reduce_max));
    Dims keep = x.shape().dims();
    for (int a : axes) keep[static_cast<size_t>(a)] = 1;
    Tensor mk = m.reshape(keep);
    Tensor safe_m = Tensor::empty(mk.shape(), DataType::f64);  // -inf rows (all -inf) shift by 0
    const double* pm = mk.data<double>();
    double* ps = safe_m.data<double>();
    for (int64_t i = 0; i < mk.numel(); ++i) ps[i] = std::isfinite(pm[i]) ? pm[i] : 0.0;
    Tensor shifted = Tensor::empty(x.shape(), DataType::f64);
    {
        auto plan = detail::make_strided_plan<3>(
            x.shape().dims(),
            {byte_strides(shifted), byte_strides(x64), byte_strides(safe_m.broadcast_to(x.shape()))});
        detail::run_strided<3>(plan, {bytes(shifted), bytes(x64), bytes(safe_m)},
                               [](std::array<char*, 3> p, int64_t n, std::array<int64_t, 3> s) {
                                   for (int64_t i = 0; i < n; ++i)
                                       *reinterpret_cast<double*>(p[0] + i * s[0]) =
                                           std::exp(*reinterpret_cast<double*>(p[1] + i * s[1]) -
                                                    *reinterpret_cast<double*>(p[2] + i * s[2]));
                               });
    }
    Tensor s = Tensor::empty(out.shape(), DataType::f64);
    reduce_dispatch<Acc::sum, double>(shifted, s, axes, kind_of(OpKind::reduce_sum));
    const double* psum = s.data<double>();
    T* po = out.data<T>();
    for (int64_t i = 0; i < out.numel(); ++i)
        po[i] = store<T>(static_cast<compute_t<T>>(std::log(psum[i]) + ps[i]));
}

template <typename T>
void reduce_kernel(const KernelCall& call) {
    const auto& attrs = call.attr<ReduceAttrs>();
    const Tensor& x = call.inputs[0];
    const Tensor& out = call.outputs[0];
    if (call.op == OpKind::reduce_log_sum_exp) return log_sum_exp<T>(x, out, attrs.axes);
    ReduceKind k = kind_of(call.op);
    switch (k.acc) {
        case Acc::sum:
            return reduce_dispatch<Acc::sum, T>(x, out, attrs.axes, k);
        case Acc::max:
            return reduce_dispatch<Acc::max, T>(x, out, attrs.axes, k);
        case Acc::min:
            return reduce_dispatch<Acc::min, T>(x, out, attrs.axes, k);
        case Acc::prod:
            return reduce_dispatch<Acc::prod, T>(x, out, attrs.axes, k);
        case Acc::abs_sum:
            return reduce_dispatch<Acc::abs_sum, T>(x, out, attrs.axes, k);
        case Acc::square_sum:
            return reduce_dispatch<Acc::square_sum, T>(x, out, attrs.axes, k);
    }
}

// argmax/argmin: the first extreme element along one axis; a NaN counts as the extreme (NumPy's rule).
template <typename T>
void arg_kernel(const KernelCall& call) {
    const int axis = call.attr<ReduceAttrs>().axes.at(0);
    const Tensor& x = call.inputs[0];
    int64_t outer, r, inner;
    Tensor xc = as_three_blocks<T>(x, {axis}, outer, r, inner);
    const T* px = xc.data<T>();
    int64_t* po = call.outputs[0].data<int64_t>();
    const bool is_max = call.op == OpKind::argmax;
    if constexpr (std::is_same_v<T, float>) {
        if (is_max && inner == 1) {  // contiguous rows (a classifier's scores): vectorised
            parallel_for(0, outer, std::max<int64_t>(1, 4096 / std::max<int64_t>(r, 1)),
                         [&](int64_t b, int64_t e) {
                             for (int64_t t = b; t < e; ++t) po[t] = vmath::argmax(px + t * r, r);
                         });
            return;
        }
    }
    parallel_for(0, outer * inner, 1024, [&](int64_t b, int64_t e) {
        for (int64_t t = b; t < e; ++t) {
            int64_t a = t / inner, j = t % inner;
            const T* p = px + a * r * inner + j;
            auto best = load(p[0]);
            int64_t best_i = 0;
            for (int64_t i = 1; i < r && best == best; ++i) {
                auto v = load(p[i * inner]);
                if (v != v || (is_max ? v > best : v < best)) {
                    best = v;
                    best_i = i;
                }
            }
            po[t] = best_i;
        }
    });
}

}  // namespace

void register_reduce(KernelTable& t) {
    auto add = [&]<typename T>(T) {
        constexpr DataType d = dtype_v<T>;
#define CTK_REG_REDUCE(name, attrs) t.add(OpKind::name, DeviceType::cpu, d, reduce_kernel<T>);
        CTK_REDUCE_OPS(CTK_REG_REDUCE)
#undef CTK_REG_REDUCE
        t.add(OpKind::argmax, DeviceType::cpu, d, arg_kernel<T>);
        t.add(OpKind::argmin, DeviceType::cpu, d, arg_kernel<T>);
    };
    add(float{});
    add(double{});
    add(Half{});
    add(BFloat16{});
}

}  // namespace ctk::cpu
