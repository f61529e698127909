// Device copies: host<->device through the device's ctk stream, and one strided kernel that converts
// dtypes on the way (every conversion goes through double, one kernel for all 49 dtype pairs: copies are
// bound by memory traffic, not by the conversion).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstring>
#include <iterator>

#include "core/cuda/copy.h"
#include "core/cuda/cuda_check.h"
#include "core/cuda/strided.cuh"
#include "ctk/core/cuda.h"

namespace ctk::cuda::detail {

namespace {

__device__ __forceinline__ double load_any(const char* p, DataType dt) {
    switch (dt) {
        case DataType::f32:
            return *reinterpret_cast<const float*>(p);
        case DataType::f64:
            return *reinterpret_cast<const double*>(p);
        case DataType::f16:
            return __half2float(*reinterpret_cast<const __half*>(p));
        case DataType::bf16:
            return __bfloat162float(*reinterpret_cast<const __nv_bfloat16*>(p));
        case DataType::i32:
            return *reinterpret_cast<const int32_t*>(p);
        case DataType::i64:
            return static_cast<double>(*reinterpret_cast<const int64_t*>(p));
        case DataType::u8:
            return *reinterpret_cast<const uint8_t*>(p);
    }
    return 0.0;
}

__device__ __forceinline__ void store_any(char* p, DataType dt, double v) {
    switch (dt) {
        case DataType::f32:
            *reinterpret_cast<float*>(p) = static_cast<float>(v);
            break;
        case DataType::f64:
            *reinterpret_cast<double*>(p) = v;
            break;
        case DataType::f16:
            *reinterpret_cast<__half*>(p) = __double2half(v);
            break;
        case DataType::bf16:
            *reinterpret_cast<__nv_bfloat16*>(p) = __double2bfloat16(v);
            break;
        case DataType::i32:
            *reinterpret_cast<int32_t*>(p) = static_cast<int32_t>(v);
            break;
        case DataType::i64:
            *reinterpret_cast<int64_t*>(p) = static_cast<int64_t>(v);
            break;
        case DataType::u8:
            *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(v);
            break;
    }
}

__global__ void convert_kernel(StridedOffsets<2> idx, char* dst, DataType dst_dt, const char* src,
                               DataType src_dt, int64_t n) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t off[2];
        idx.offsets(i, off);
        store_any(dst + off[0], dst_dt, load_any(src + off[1], src_dt));
    }
}

// Same dtype: move elements of sizeof(T) bytes, no conversion (exact for i64 beyond 2^53 too).
template <typename T>
__global__ void move_kernel(StridedOffsets<2> idx, char* dst, const char* src, int64_t n) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t off[2];
        idx.offsets(i, off);
        *reinterpret_cast<T*>(dst + off[0]) = *reinterpret_cast<const T*>(src + off[1]);
    }
}

// Every element <- the same bit pattern (T: the element's size).
template <typename T>
__global__ void fill_kernel(StridedOffsets<1> idx, char* dst, T bits, int64_t n) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        int64_t off[1];
        idx.offsets(i, off);
        *reinterpret_cast<T*>(dst + off[0]) = bits;
    }
}

template <typename T>
void launch_fill(const StridedOffsets<1>& idx, char* dst, const unsigned char* bytes, int64_t n,
                 cudaStream_t stream) {
    T bits;
    std::memcpy(&bits, bytes, sizeof(T));
    fill_kernel<T><<<grid_for(n), 256, 0, stream>>>(idx, dst, bits, n);
}

Dims strides_in_bytes(const Tensor& t) {
    Dims b = t.strides();
    for (auto& s : b) s *= static_cast<int64_t>(t.element_size());
    return b;
}

}  // namespace

void copy_on_device(const Tensor& src, const Tensor& dst) {
    CTK_CHECK(src.device() == dst.device() && dst.device().is_cuda(), DeviceError,
              "copy_on_device: ", src.device().to_string(), " -> ", dst.device().to_string());
    Tensor s = src.broadcast_to(dst.shape());
    const int64_t n = dst.numel();
    if (n == 0) return;
    cudaStream_t stream = cuda_stream(dst.device());
    if (s.dtype() == dst.dtype() && s.is_contiguous() && dst.is_contiguous()) {
        CTK_CUDA_CHECK(cudaMemcpyAsync(dst.raw_data(), s.raw_data(),
                                       static_cast<size_t>(n) * dst.element_size(), cudaMemcpyDeviceToDevice,
                                       stream));
        return;
    }
    auto plan =
        ::ctk::detail::make_strided_plan<2>(dst.shape().dims(), {strides_in_bytes(dst), strides_in_bytes(s)});
    auto idx = make_strided_offsets(plan);
    char* d = static_cast<char*>(dst.raw_data());
    const char* a = static_cast<const char*>(s.raw_data());
    const unsigned grid = grid_for(n);
    if (s.dtype() == dst.dtype()) {
        switch (dst.element_size()) {
            case 1:
                move_kernel<uint8_t><<<grid, 256, 0, stream>>>(idx, d, a, n);
                break;
            case 2:
                move_kernel<uint16_t><<<grid, 256, 0, stream>>>(idx, d, a, n);
                break;
            case 4:
                move_kernel<uint32_t><<<grid, 256, 0, stream>>>(idx, d, a, n);
                break;
            default:
                move_kernel<uint64_t><<<grid, 256, 0, stream>>>(idx, d, a, n);
                break;
        }
    } else {
        convert_kernel<<<grid, 256, 0, stream>>>(idx, d, dst.dtype(), a, s.dtype(), n);
    }
    CTK_CUDA_CHECK(cudaGetLastError());
}

void check_not_capturing(Device device, const char* what) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    CTK_CUDA_CHECK(cudaStreamIsCapturing(cuda_stream(device), &capture));
    CTK_CHECK(capture == cudaStreamCaptureStatusNone, DeviceError, what, " on ", device.to_string(),
              " cannot be recorded in a CUDA Graph");
}

void fill(const Tensor& dst, double value) {
    CTK_CHECK(dst.device().is_cuda(), DeviceError, "fill: ", dst.device().to_string(), " is not a GPU");
    const int64_t n = dst.numel();
    if (n == 0) return;
    unsigned char bytes[8] = {};
    store_from_double(bytes, dst.dtype(), value);  // the element exactly as the host would store it
    cudaStream_t stream = cuda_stream(dst.device());
    const bool zero = std::all_of(std::begin(bytes), std::end(bytes), [](unsigned char b) { return b == 0; });
    if (zero && dst.is_contiguous()) {
        CTK_CUDA_CHECK(
            cudaMemsetAsync(dst.raw_data(), 0, static_cast<size_t>(n) * dst.element_size(), stream));
        return;
    }
    const auto idx = make_strided_offsets(
        ::ctk::detail::make_strided_plan<1>(dst.shape().dims(), {strides_in_bytes(dst)}));
    char* d = static_cast<char*>(dst.raw_data());
    switch (dst.element_size()) {
        case 1:
            launch_fill<uint8_t>(idx, d, bytes, n, stream);
            break;
        case 2:
            launch_fill<uint16_t>(idx, d, bytes, n, stream);
            break;
        case 4:
            launch_fill<uint32_t>(idx, d, bytes, n, stream);
            break;
        default:
            launch_fill<uint64_t>(idx, d, bytes, n, stream);
            break;
    }
    CTK_CUDA_CHECK(cudaGetLastError());
}

void copy_tensor(const Tensor& src, const Tensor& dst, bool async) {
    Tensor s = src.broadcast_to(dst.shape());
    if (dst.numel() == 0) return;
    const size_t bytes = static_cast<size_t>(dst.numel()) * dst.element_size();
    if (s.device().is_cuda() && dst.device().is_cuda()) {
        if (s.device() == dst.device()) return copy_on_device(s, dst);
        // Between GPUs: make a packed copy in dst's dtype, move it, then lay it out on dst's device.
        Tensor packed = Tensor::empty(dst.shape(), dst.dtype(), s.device());
        copy_on_device(s, packed);
        Tensor landed = Tensor::empty(dst.shape(), dst.dtype(), dst.device());
        synchronize(s.device());
        CTK_CUDA_CHECK(cudaMemcpyPeerAsync(landed.raw_data(), dst.device().index, packed.raw_data(),
                                           s.device().index, bytes, cuda_stream(dst.device())));
        copy_on_device(landed, dst);
        synchronize(dst.device());  // `packed` is freed on return: the peer copy must be done
        return;
    }
    if (dst.device().is_cuda() && src.numel() == 1 && dst.numel() > 1) {  // a fill: move one element
        Tensor one = Tensor::empty(Shape{}, dst.dtype(), dst.device());
        copy_tensor(src.reshape({}), one);
        return copy_on_device(one, dst);
    }
    if (dst.device().is_cuda()) {  // host -> device
        Tensor host = s.contiguous().to(dst.dtype());
        check_not_capturing(dst.device(), "a copy from host memory");
        Tensor target = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), dst.device());
        // From pageable memory the driver stages the data itself and may hold the host until the stream
        // reaches the copy (every mask or index table a step uploads would drain the GPU's queue), so up to
        // kMaxStagedUpload it goes through a pinned copy made here: the call returns at once, the caller may
        // write its buffer again, and the cache keeps the staging block until the copy has run. From the
        // caller's pinned memory it returns at once too, and unless asked for an asynchronous copy we wait,
        // so the caller may write the buffer again.
        const bool wait = !async && is_pinned(host);
        if (!is_pinned(host)) {
            Tensor staged = staged_for_upload(host);
            if (staged.defined()) host = staged;
        }
        CTK_CUDA_CHECK(cudaMemcpyAsync(target.raw_data(), host.raw_data(), bytes, cudaMemcpyHostToDevice,
                                       cuda_stream(dst.device())));
        if (!dst.is_contiguous()) copy_on_device(target, dst);
        if (wait) synchronize(dst.device());
        return;
    }
    // device -> host
    Tensor packed = s;
    if (!(s.is_contiguous() && s.dtype() == dst.dtype())) {
        packed = Tensor::empty(dst.shape(), dst.dtype(), s.device());
        copy_on_device(s, packed);
    }
    Tensor target = dst.is_contiguous() ? dst : Tensor::empty(dst.shape(), dst.dtype(), Device::cpu());
    CTK_CUDA_CHECK(cudaMemcpyAsync(target.raw_data(), packed.raw_data(), bytes, cudaMemcpyDeviceToHost,
                                   cuda_stream(s.device())));
    synchronize(s.device());
    if (!dst.is_contiguous()) Tensor(dst).copy_from(target);
}

}  // namespace ctk::cuda::detail
