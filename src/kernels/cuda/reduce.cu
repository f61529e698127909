// CUDA reductions over any set of axes, and argmax/argmin. The input is viewed as [rows, cols] with the
// reduced axes last (rows.cuh); each block reduces one row, and long rows with few of them are split
// over several blocks whose partial results a second launch combines. No atomics: results are
// deterministic run to run. Accumulation is in the compute type (float for f32 and 16-bit, double for
// f64); the tree order keeps float sums of long rows accurate.
#include <cfloat>

#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/rows.cuh"

namespace ctk::cuda {

namespace {

enum class Acc { sum, max, min, prod, abs_sum, square_sum };

struct ReduceKind {
    Acc acc;
    bool mean = false, sqrt_result = false;
};

ReduceKind kind_of(OpKind op) {
    switch (op) {
        case OpKind::reduce_sum:
            return {Acc::sum};
        case OpKind::reduce_mean:
            return {Acc::sum, true};
        case OpKind::reduce_max:
            return {Acc::max};
        case OpKind::reduce_min:
            return {Acc::min};
        case OpKind::reduce_prod:
            return {Acc::prod};
        case OpKind::reduce_l1:
            return {Acc::abs_sum};
        case OpKind::reduce_l2:
            return {Acc::square_sum, false, true};
        case OpKind::reduce_sum_square:
            return {Acc::square_sum};
        default:
            CTK_THROW(NotImplementedError, op_name(op), ": not a reduction");
    }
}

template <Acc A, typename C>
__device__ __forceinline__ C init_of() {
    if constexpr (A == Acc::max)
        return -INFINITY;
    else if constexpr (A == Acc::min)
        return INFINITY;
    else if constexpr (A == Acc::prod)
        return C(1);
    else
        return C(0);
}

// Folds one input value into the accumulator.
template <Acc A, typename C>
__device__ __forceinline__ C step(C acc, C x) {
    if constexpr (A == Acc::sum)
        return acc + x;
    else if constexpr (A == Acc::max)
        return (x > acc || x != x) ? x : acc;  // NaN wins and stays
    else if constexpr (A == Acc::min)
        return (x < acc || x != x) ? x : acc;
    else if constexpr (A == Acc::prod)
        return acc * x;
    else if constexpr (A == Acc::abs_sum)
        return acc + fabs(x);
    else
        return acc + x * x;
}

// Combines two accumulators.
template <Acc A>
struct Combine {
    template <typename C>
    __device__ C operator()(C a, C b) const {
        if constexpr (A == Acc::max || A == Acc::min)
            return step<A>(a, b);
        else if constexpr (A == Acc::prod)
            return a * b;
        else
            return a + b;
    }
};

// Block (row, part) reduces cols [part*span, ...) of its row. `partial` (when splits > 1) receives the
// accumulator; otherwise the finished value goes to out[row].
template <typename D, Acc A, bool FromPartial>
__global__ void reduce_rows_kernel(const void* in, int64_t cols, int64_t span, int splits, D* out,
                                   comp_t<D>* partial, int64_t n_total, bool mean, bool sqrt_result) {
    using C = comp_t<D>;
    __shared__ C shared[8];
    const int64_t row = blockIdx.x / splits;
    const int part = blockIdx.x % splits;
    const int64_t begin = part * span, end = min(cols, begin + span);
    C acc = init_of<A, C>();
    if constexpr (FromPartial) {
        const C* p = static_cast<const C*>(in) + row * cols;
        for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) acc = Combine<A>()(acc, p[j]);
    } else {
        const D* p = static_cast<const D*>(in) + row * cols;
        for (int64_t j = begin + threadIdx.x; j < end; j += blockDim.x) acc = step<A>(acc, to_comp(p[j]));
    }
    acc = block_reduce(acc, Combine<A>(), shared);
    if (threadIdx.x != 0) return;
    if (splits > 1) {
        partial[blockIdx.x] = acc;
        return;
    }
    if (mean) acc = acc / C(n_total);
    if (sqrt_result) acc = sqrt(acc);
    out[row] = from_comp<D>(acc);
}

template <typename D, Acc A>
void reduce_rows(const Rows& r, const Tensor& out, const ReduceKind& k, cudaStream_t stream) {
    using C = comp_t<D>;
    D* o = ptr<D>(out);
    const int block = row_block(r.cols);
    // Few long rows: split each row so that about two blocks per SM are busy, then combine.
    int splits = 1;
    if (r.rows < 256 && r.cols >= 8192)
        splits = static_cast<int>(std::min<int64_t>(256 / r.rows + 1, r.cols / 4096));
    if (splits > 1) {
        const int64_t span = (r.cols + splits - 1) / splits;
        const DataType acc_dtype = std::is_same_v<C, double> ? DataType::f64 : DataType::f32;
        Tensor partial = Tensor::empty(Shape{r.rows * splits}, acc_dtype, out.device());
        reduce_rows_kernel<D, A, false><<<static_cast<unsigned>(r.rows * splits), block, 0, stream>>>(
            r.data.raw_data(), r.cols, span, splits, o, ptr<C>(partial), r.cols, false, false);
        CTK_CUDA_LAUNCH_CHECK();
        reduce_rows_kernel<D, A, true><<<static_cast<unsigned>(r.rows), row_block(splits), 0, stream>>>(
            partial.raw_data(), splits, splits, 1, o, nullptr, r.cols, k.mean, k.sqrt_result);
    } else {
        reduce_rows_kernel<D, A, false><<<static_cast<unsigned>(r.rows), block, 0, stream>>>(
            r.data.raw_data(), r.cols, r.cols, 1, o, nullptr, r.cols, k.mean, k.sqrt_result);
    }
    CTK_CUDA_LAUNCH_CHECK();
}

// log(sum(exp(x))) per row, shifted by the row max (rows of -inf give -inf; NaN propagates).
template <typename D>
__global__ void log_sum_exp_kernel(const D* in, int64_t cols, D* out) {
    using C = comp_t<D>;
    __shared__ C shared[8];
    const D* p = in + blockIdx.x * cols;
    C m = -INFINITY;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) m = step<Acc::max>(m, to_comp(p[j]));
    m = block_reduce(m, Combine<Acc::max>(), shared);
    const C shift = isinf(m) ? C(0) : m;
    C s = 0;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) s += exp(to_comp(p[j]) - shift);
    s = block_reduce(s, Combine<Acc::sum>(), shared);
    if (threadIdx.x == 0) out[blockIdx.x] = from_comp<D>(m != m ? m : shift + log(s));
}

template <typename T>
void reduce_kernel(const KernelCall& call) {
    using D = dev_t<T>;
    const Tensor& x = call.inputs[0];
    const Tensor& out = call.outputs[0];
    const auto& attrs = call.attr<ReduceAttrs>();
    cudaStream_t stream = stream_of(call);
    if (out.numel() == 0) return;
    Rows r = as_rows(x, attrs.axes);
    if (r.cols == 0) {  // an empty reduction: the identity (max/min of nothing is rejected by the API)
        const double id = call.op == OpKind::reduce_prod ? 1.0 : (call.op == OpKind::reduce_mean ? NAN : 0.0);
        Tensor(out).fill(call.op == OpKind::reduce_log_sum_exp ? -INFINITY : id);
        return;
    }
    // Rows are written in kept-axis order, which is out's row-major order.
    Tensor target = out.is_contiguous() ? out : Tensor::empty(out.shape(), out.dtype(), out.device());
    if (call.op == OpKind::reduce_log_sum_exp) {
        log_sum_exp_kernel<D><<<static_cast<unsigned>(r.rows), row_block(r.cols), 0, stream>>>(
            ptr<D>(r.data), r.cols, ptr<D>(target));
        CTK_CUDA_LAUNCH_CHECK();
    } else {
        const ReduceKind k = kind_of(call.op);
        switch (k.acc) {
            case Acc::sum:
                reduce_rows<D, Acc::sum>(r, target, k, stream);
                break;
            case Acc::max:
                reduce_rows<D, Acc::max>(r, target, k, stream);
                break;
            case Acc::min:
                reduce_rows<D, Acc::min>(r, target, k, stream);
                break;
            case Acc::prod:
                reduce_rows<D, Acc::prod>(r, target, k, stream);
                break;
            case Acc::abs_sum:
                reduce_rows<D, Acc::abs_sum>(r, target, k, stream);
                break;
            case Acc::square_sum:
                reduce_rows<D, Acc::square_sum>(r, target, k, stream);
                break;
        }
    }
    if (!target.shares_storage(out)) Tensor(out).copy_from(target);
}

// argmax/argmin along one axis: the first extreme element; a NaN counts as the extreme (NumPy's rule).
template <typename D, typename Before>
__global__ void arg_kernel(const D* in, int64_t cols, int64_t* out) {
    using C = comp_t<D>;
    __shared__ C sv[256];
    __shared__ int64_t si[256];
    const D* p = in + blockIdx.x * cols;
    C best = 0;
    int64_t bi = -1;
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) keep_best(best, bi, to_comp(p[j]), j, Before());
    block_best(best, bi, Before(), sv, si);
    if (threadIdx.x == 0) out[blockIdx.x] = bi;
}

template <typename T>
void arg_reduce_kernel(const KernelCall& call) {
    using D = dev_t<T>;
    const Tensor& out = call.outputs[0];
    if (out.numel() == 0) return;
    Rows r = as_rows(call.inputs[0], call.attr<ReduceAttrs>().axes);
    Tensor target = out.is_contiguous() ? out : Tensor::empty(out.shape(), out.dtype(), out.device());
    const unsigned grid = static_cast<unsigned>(r.rows);
    if (call.op == OpKind::argmax)
        arg_kernel<D, LargestFirst>
            <<<grid, row_block(r.cols), 0, stream_of(call)>>>(ptr<D>(r.data), r.cols, ptr<int64_t>(target));
    else
        arg_kernel<D, SmallestFirst>
            <<<grid, row_block(r.cols), 0, stream_of(call)>>>(ptr<D>(r.data), r.cols, ptr<int64_t>(target));
    CTK_CUDA_LAUNCH_CHECK();
    if (!target.shares_storage(out)) Tensor(out).copy_from(target);
}

template <typename T>
void register_type(KernelTable& t) {
    constexpr DataType d = dtype_v<T>;
#define CTK_REG_REDUCE(name, attrs) t.add(OpKind::name, DeviceType::cuda, d, reduce_kernel<T>);
    CTK_REDUCE_OPS(CTK_REG_REDUCE)
#undef CTK_REG_REDUCE
    t.add(OpKind::argmax, DeviceType::cuda, d, arg_reduce_kernel<T>);
    t.add(OpKind::argmin, DeviceType::cuda, d, arg_reduce_kernel<T>);
}

}  // namespace

void register_reduce(KernelTable& t) {
    register_type<float>(t);
    register_type<double>(t);
    register_type<Half>(t);
    register_type<BFloat16>(t);
}

}  // namespace ctk::cuda
