// CUDA softmax family along one axis: the axis is moved last (rows.cuh), one block per row, and the
// result is written back through the inverse permutation. Mirrors cpu/softmax.cpp.
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/rows.cuh"

namespace ctk::cuda {

namespace {

struct MaxOp {
    template <typename C>
    __device__ C operator()(C a, C b) const {
        return (b > a || b != b) ? b : a;
    }
};
struct SumOp {
    template <typename C>
    __device__ C operator()(C a, C b) const {
        return a + b;
    }
};

template <typename D>
__global__ void softmax_rows(const D* x, D* y, int64_t n, bool log_form) {
    using C = comp_t<D>;
    __shared__ C shared[8];
    const D* p = x + blockIdx.x * n;
    D* q = y + blockIdx.x * n;
    C m = -INFINITY;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = MaxOp()(m, to_comp(p[j]));
    m = block_reduce(m, MaxOp(), shared);
    if (isinf(m)) m = C(0);  // all -inf: exp(-inf) = 0 below; NaN propagates
    C s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += exp(to_comp(p[j]) - m);
    s = block_reduce(s, SumOp(), shared);
    if (log_form) {
        const C log_sum = log(s);  // (x - m) - log(sum), as the CPU kernel, for large x
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
            q[j] = from_comp<D>((to_comp(p[j]) - m) - log_sum);
    } else {
        const C inv = C(1) / s;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
            q[j] = from_comp<D>(exp(to_comp(p[j]) - m) * inv);
    }
}

// The CPU scan keeps the first strict maximum from element 0 on: a NaN at 0 wins (nothing compares
// greater), a NaN anywhere else never does. Otherwise largest first, lower index first among equals.
struct HardmaxOrder {
    template <typename C>
    __device__ bool operator()(C a, int64_t ia, C b, int64_t ib) const {
        auto rank = [](C v, int64_t i) { return v != v ? (i == 0 ? 2 : 0) : 1; };  // NaN at 0 > number > NaN
        const int ra = rank(a, ia), rb = rank(b, ib);
        if (ra != rb) return ra > rb;
        if (ra == 1 && a != b) return a > b;
        return ia < ib;
    }
};

template <typename D>
__global__ void hardmax_rows(const D* x, D* y, int64_t n) {
    using C = comp_t<D>;
    __shared__ C sv[256];
    __shared__ int64_t si[256];
    const D* p = x + blockIdx.x * n;
    C best = 0;
    int64_t win = -1;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        keep_best(best, win, to_comp(p[j]), j, HardmaxOrder());
    block_best(best, win, HardmaxOrder(), sv, si);
    D* q = y + blockIdx.x * n;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) q[j] = from_comp<D>(C(j == win ? 1 : 0));
}

template <typename D>
__global__ void softmax_backward_rows(const D* y, const D* dy, D* dx, int64_t n, bool log_form) {
    using C = comp_t<D>;
    __shared__ C shared[8];
    const int64_t base = blockIdx.x * n;
    C dot = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x)
        dot += log_form ? to_comp(dy[base + j]) : to_comp(dy[base + j]) * to_comp(y[base + j]);
    dot = block_reduce(dot, SumOp(), shared);
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
        C yv = to_comp(y[base + j]), g = to_comp(dy[base + j]);
        dx[base + j] = from_comp<D>(log_form ? g - exp(yv) * dot : yv * (g - dot));
    }
}

int normalized_axis(const Tensor& t, int axis) {
    return axis < 0 ? axis + t.rank() : axis;
}

// Writes rows laid out in `order` back into out.
void scatter_rows(const Tensor& rows, const Tensor& out, const std::vector<int>& order) {
    Tensor view = out.permute(order);
    if (view.shares_storage(rows)) return;
    view.copy_from(rows.view(view.shape().dims()));
}

template <typename T>
void softmax_kernel(const KernelCall& call) {
    using D = dev_t<T>;
    const Tensor& out = call.outputs[0];
    if (out.numel() == 0) return;
    Rows r = as_rows(call.inputs[0], {normalized_axis(out, call.attr<AxisAttrs>().axis)});
    Tensor y = Tensor::empty(Shape{r.rows, r.cols}, out.dtype(), out.device());
    const unsigned grid = static_cast<unsigned>(r.rows);
    if (call.op == OpKind::hardmax)
        hardmax_rows<D><<<grid, row_block(r.cols), 0, stream_of(call)>>>(ptr<D>(r.data), ptr<D>(y), r.cols);
    else
        softmax_rows<D><<<grid, row_block(r.cols), 0, stream_of(call)>>>(ptr<D>(r.data), ptr<D>(y), r.cols,
                                                                         call.op == OpKind::log_softmax);
    CTK_CUDA_LAUNCH_CHECK();
    scatter_rows(y, out, r.order);
}

template <typename T>
void softmax_backward_kernel(const KernelCall& call) {
    using D = dev_t<T>;
    const Tensor& dx = call.outputs[0];
    if (dx.numel() == 0) return;
    const int axis = normalized_axis(dx, call.attr<AxisAttrs>().axis);
    Rows y = as_rows(call.inputs[0], {axis});
    Rows dy = as_rows(call.inputs[1], {axis});
    Tensor g = Tensor::empty(Shape{y.rows, y.cols}, dx.dtype(), dx.device());
    softmax_backward_rows<D><<<static_cast<unsigned>(y.rows), row_block(y.cols), 0, stream_of(call)>>>(
        ptr<D>(y.data), ptr<D>(dy.data), ptr<D>(g), y.cols, call.op == OpKind::log_softmax_backward);
    CTK_CUDA_LAUNCH_CHECK();
    scatter_rows(g, dx, y.order);
}

}  // namespace

void register_softmax(KernelTable& t) {
    auto add = [&](auto tag) {
        using T = decltype(tag);
        constexpr DataType d = dtype_v<T>;
        t.add(OpKind::softmax, DeviceType::cuda, d, softmax_kernel<T>);
        t.add(OpKind::log_softmax, DeviceType::cuda, d, softmax_kernel<T>);
        t.add(OpKind::hardmax, DeviceType::cuda, d, softmax_kernel<T>);
        t.add(OpKind::softmax_backward, DeviceType::cuda, d, softmax_backward_kernel<T>);
        t.add(OpKind::log_softmax_backward, DeviceType::cuda, d, softmax_backward_kernel<T>);
    };
    add(float{});
    add(double{});
    add(Half{});
    add(BFloat16{});
}

}  // namespace ctk::cuda
