// CUDA indexing and layout kernels: gather, scatter_add, permute, concat, pad, one_hot, top_k. Index
// operands arrive as contiguous int64 tensors already checked by the op API. Mirrors cpu/indexing.cpp.
#include "core/cuda/copy.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/map.cuh"
#include "kernels/cuda/rows.cuh"
#include "kernels/gather_layout.h"
#include "kernels/pad_source.h"

namespace ctk::cuda {

namespace {

int64_t product(const Shape& shape, int begin, int end) {
    int64_t n = 1;
    for (int d = begin; d < end; ++d) n *= shape[d];
    return n;
}

// ---- gather: out[..., j..., ...] = data[..., idx[j...], ...] ----
template <typename U>
struct GatherFn {
    int64_t axis_bytes;
    __device__ void operator()(char** q) const {
        const int64_t k = *reinterpret_cast<const int64_t*>(q[2]);
        *reinterpret_cast<U*>(q[0]) = *reinterpret_cast<const U*>(q[1] + k * axis_bytes);
    }
};

template <typename U>
void gather_kernel(const KernelCall& call) {
    const Tensor &data = call.inputs[0], &idx = call.inputs[1];
    const Tensor& out = call.outputs[0];
    const int axis = call.attr<AxisAttrs>().axis;
    const Dims data_strides = byte_strides(data), idx_strides = byte_strides(idx);
    const auto [ds, is] = ::ctk::detail::gather_strides(data_strides, idx_strides, axis);
    launch_map_strided<3>(out.shape().dims(),
                          {static_cast<char*>(out.raw_data()), static_cast<char*>(data.raw_data()),
                           static_cast<char*>(idx.raw_data())},
                          {byte_strides(out), ds, is}, GatherFn<U>{data_strides[static_cast<size_t>(axis)]},
                          stream_of(call));
}

// ---- scatter_add: out = target; out[o, idx[j], i] += updates[o, j, i] ----
// One thread per (outer, inner) column walks the indices in order: duplicates accumulate without atomics
// and the sum is deterministic (at the price of parallelism when the columns are few).
template <typename D>
__global__ void scatter_add_columns(D* out, const D* updates, const int64_t* idx, int64_t outer, int64_t size,
                                    int64_t inner, int64_t n) {
    using C = comp_t<D>;
    const int64_t cols = outer * inner;
    for (int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; c < cols;
         c += int64_t(gridDim.x) * blockDim.x) {
        const int64_t o = c / inner, i = c % inner;
        for (int64_t j = 0; j < n; ++j) {
            D* dst = out + (o * size + idx[j]) * inner + i;
            *dst = from_comp<D>(to_comp(*dst) + to_comp(updates[(o * n + j) * inner + i]));
        }
    }
}

template <typename T>
void scatter_add_kernel(const KernelCall& call) {
    using D = dev_t<T>;
    const Tensor &target = call.inputs[0], &idx = call.inputs[1];
    const Tensor updates = call.inputs[2].contiguous();
    const Tensor& out_user = call.outputs[0];
    const int axis = call.attr<AxisAttrs>().axis;
    Tensor out = out_user.is_contiguous()
                     ? out_user
                     : Tensor::empty(out_user.shape(), out_user.dtype(), out_user.device());
    detail::copy_on_device(target, out);
    const Shape& shape = out.shape();
    const int64_t outer = product(shape, 0, axis), size = shape[axis],
                  inner = product(shape, axis + 1, shape.rank());
    const int64_t n = idx.numel();
    if (n > 0 && outer * inner > 0) {
        scatter_add_columns<D><<<grid_for(outer * inner), 256, 0, stream_of(call)>>>(
            ptr<D>(out), ptr<D>(updates), ptr<int64_t>(idx), outer, size, inner, n);
        CTK_CUDA_LAUNCH_CHECK();
    }
    if (!out.shares_storage(out_user)) detail::copy_on_device(out, out_user);
}

// ---- permute and concat: strided copies ----
void permute_kernel(const KernelCall& call) {
    detail::copy_on_device(call.inputs[0].permute(call.attr<PermuteAttrs>().order), call.outputs[0]);
}

void concat_kernel(const KernelCall& call) {
    const int axis = call.attr<AxisAttrs>().axis;
    int64_t at = 0;
    for (const Tensor& x : call.inputs) {
        const int64_t n = x.dim(axis);
        if (n > 0) detail::copy_on_device(x, call.outputs[0].slice(axis, at, at + n));
        at += n;
    }
}

// ---- pad: each output cell reads its mirrored (or constant) source ----
struct PadGeom {
    int rank = 0;
    int64_t out_dims[detail::kMaxCudaDims] = {};
    int64_t in_dims[detail::kMaxCudaDims] = {};
    int64_t in_strides[detail::kMaxCudaDims] = {};  // elements
    int64_t lo[detail::kMaxCudaDims] = {};
    int mode = 0;  // PadMode
};

template <typename D>
__global__ void pad_kernel(PadGeom g, const D* x, D* out, int64_t n, D value) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t rem = i, src = 0;
        bool inside = true;
        for (int d = g.rank - 1; d >= 0; --d) {
            int64_t k = rem % g.out_dims[d] - g.lo[d];
            rem /= g.out_dims[d];
            k = ctk::detail::pad_source(k, g.in_dims[d], static_cast<PadMode>(g.mode));
            if (k < 0) {  // the constant fill
                inside = false;
                break;
            }
            src += k * g.in_strides[d];
        }
        out[i] = inside ? x[src] : value;
    }
}

template <typename T>
void pad_kernel_launch(const KernelCall& call) {
    using D = dev_t<T>;
    const auto& a = call.attr<PadAttrs>();
    const Tensor& x = call.inputs[0];
    const Tensor& out_user = call.outputs[0];
    CTK_CHECK(x.rank() <= detail::kMaxCudaDims, NotImplementedError, "pad: CUDA kernel takes at most ",
              detail::kMaxCudaDims, " axes, got ", x.shape().to_string());
    Tensor out = out_user.is_contiguous()
                     ? out_user
                     : Tensor::empty(out_user.shape(), out_user.dtype(), out_user.device());
    PadGeom g;
    g.rank = x.rank();
    g.mode = static_cast<int>(a.mode);
    for (int d = 0; d < x.rank(); ++d) {
        g.out_dims[d] = out.dim(d);
        g.in_dims[d] = x.dim(d);
        g.in_strides[d] = x.strides()[static_cast<size_t>(d)];
        g.lo[d] = a.lo[static_cast<size_t>(d)];
    }
    const T v_host = T(static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(a.value));
    D value;
    std::memcpy(&value, &v_host, sizeof(D));
    const int64_t n = out.numel();
    if (n > 0) {
        pad_kernel<D><<<grid_for(n), 256, 0, stream_of(call)>>>(g, ptr<D>(x), ptr<D>(out), n, value);
        CTK_CUDA_LAUNCH_CHECK();
    }
    if (!out.shares_storage(out_user)) detail::copy_on_device(out, out_user);
}

// ---- one_hot: zeros, then a one at each index's class ----
template <typename D>
__global__ void one_hot_kernel(const int64_t* idx, int64_t n, int64_t classes, int64_t after, D* out) {
    for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n;
         j += int64_t(gridDim.x) * blockDim.x) {
        const int64_t b = j / after, r = j % after, c = idx[j];
        if (c >= 0) out[(b * classes + c) * after + r] = from_comp<D>(comp_t<D>(1));  // -1: a zero row
    }
}

template <typename T>
void one_hot_launch(const KernelCall& call) {
    using D = dev_t<T>;
    const auto& a = call.attr<OneHotAttrs>();
    const Tensor idx = call.inputs[0].contiguous();
    const Tensor& out_user = call.outputs[0];
    Tensor out = out_user.is_contiguous()
                     ? out_user
                     : Tensor::empty(out_user.shape(), out_user.dtype(), out_user.device());
    CTK_CUDA_CHECK(cudaMemsetAsync(out.raw_data(), 0, static_cast<size_t>(out.numel()) * out.element_size(),
                                   stream_of(call)));
    const int64_t after = product(idx.shape(), a.axis, idx.rank());
    if (idx.numel() > 0) {
        one_hot_kernel<D><<<grid_for(idx.numel()), 256, 0, stream_of(call)>>>(
            ptr<int64_t>(idx), idx.numel(), a.num_classes, after, ptr<D>(out));
        CTK_CUDA_LAUNCH_CHECK();
    }
    if (!out.shares_storage(out_user)) detail::copy_on_device(out, out_user);
}

// ---- top_k: k passes over each row, each taking the best element ranked after the previous pick ----
// The order (LargestFirst): NaN above every number, larger first, the lower index first among equals.
template <typename D>
__global__ void top_k_rows(const D* x, int64_t n, int64_t k, D* values, int64_t* indices) {
    using C = comp_t<D>;
    __shared__ C sv[256];
    __shared__ int64_t si[256];
    const LargestFirst before;
    const D* p = x + blockIdx.x * n;
    C prev = 0;
    int64_t prev_i = -1;
    for (int64_t pass = 0; pass < k; ++pass) {
        C best = 0;
        int64_t bi = -1;
        for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
            const C v = to_comp(p[j]);
            if (prev_i >= 0 && !before(prev, prev_i, v, j)) continue;  // already taken
            keep_best(best, bi, v, j, before);
        }
        block_best(best, bi, before, sv, si);
        prev = best;
        prev_i = bi;
        if (threadIdx.x == 0) {
            values[blockIdx.x * k + pass] = p[prev_i];
            indices[blockIdx.x * k + pass] = prev_i;
        }
    }
}

template <typename T>
void top_k_launch(const KernelCall& call) {
    using D = dev_t<T>;
    const auto& a = call.attr<TopKAttrs>();
    const Tensor &values_out = call.outputs[0], &indices_out = call.outputs[1];
    Rows r = as_rows(call.inputs[0], {a.axis});
    Tensor v = Tensor::empty(Shape{r.rows, a.k}, values_out.dtype(), values_out.device());
    Tensor i = Tensor::empty(Shape{r.rows, a.k}, DataType::i64, values_out.device());
    if (r.rows > 0) {
        top_k_rows<D><<<static_cast<unsigned>(r.rows), row_block(r.cols), 0, stream_of(call)>>>(
            ptr<D>(r.data), r.cols, a.k, ptr<D>(v), ptr<int64_t>(i));
        CTK_CUDA_LAUNCH_CHECK();
    }
    // Rows are in (kept axes..., axis) order: write back through the same permutation.
    Tensor vv = values_out.permute(r.order), iv = indices_out.permute(r.order);
    detail::copy_on_device(v.view(vv.shape().dims()), vv);
    detail::copy_on_device(i.view(iv.shape().dims()), iv);
}

template <typename T>
void register_float(KernelTable& t) {
    constexpr DataType d = dtype_v<T>;
    t.add(OpKind::scatter_add, DeviceType::cuda, d, scatter_add_kernel<T>);
    t.add(OpKind::pad, DeviceType::cuda, d, pad_kernel_launch<T>);
    t.add(OpKind::one_hot, DeviceType::cuda, d, one_hot_launch<T>);
    t.add(OpKind::top_k, DeviceType::cuda, d, top_k_launch<T>);
}

}  // namespace

void register_indexing(KernelTable& t) {
    for (int i = 0; i < kNumDataTypes; ++i) {
        const auto d = static_cast<DataType>(i);
        switch (size_of(d)) {
            case 1:
                t.add(OpKind::gather, DeviceType::cuda, d, gather_kernel<uint8_t>);
                break;
            case 2:
                t.add(OpKind::gather, DeviceType::cuda, d, gather_kernel<uint16_t>);
                break;
            case 4:
                t.add(OpKind::gather, DeviceType::cuda, d, gather_kernel<uint32_t>);
                break;
            default:
                t.add(OpKind::gather, DeviceType::cuda, d, gather_kernel<uint64_t>);
                break;
        }
        t.add(OpKind::permute, DeviceType::cuda, d, permute_kernel);
        t.add(OpKind::concat, DeviceType::cuda, d, concat_kernel);
    }
    register_float<float>(t);
    register_float<double>(t);
    register_float<Half>(t);
    register_float<BFloat16>(t);
}

}  // namespace ctk::cuda
