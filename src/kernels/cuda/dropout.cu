// CUDA dropout: the same rule and the same Philox4x32-10 stream as cpu/dropout.cpp, so a given seed and
// offset drop the same elements on every device (element i, row-major, uses counter offset + i).
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/map.cuh"

namespace ctk::cuda {

namespace {

// Philox4x32-10 (Salmon et al., SC'11), as ctk/core/rng.h computes it on the host.
__device__ __forceinline__ void philox(uint32_t c[4], uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; ++round) {
        const uint32_t hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
        const uint32_t hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
        const uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
        c[0] = n0;
        c[1] = lo1;
        c[2] = n2;
        c[3] = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

template <typename D>
__global__ void dropout_kernel(const D* x, D* y, D* mask, int64_t n, uint64_t seed, uint64_t offset,
                               double keep, D kept, D dropped) {
    for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
         i += int64_t(gridDim.x) * blockDim.x) {
        const uint64_t index = offset + static_cast<uint64_t>(i);
        uint32_t c[4] = {static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), 0u, 0u};
        philox(c, static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
        const double u = static_cast<double>((static_cast<uint64_t>(c[0]) << 21) ^ (c[1] >> 11)) * 0x1.0p-53;
        const D m = u < keep ? kept : dropped;
        mask[i] = m;
        y[i] = from_comp<D>(to_comp(x[i]) * to_comp(m));
    }
}

template <typename T>
void dropout(const KernelCall& call) {
    using D = dev_t<T>;
    const auto& a = call.attr<DropoutAttrs>();
    const Tensor x = call.inputs[0].contiguous();
    const Tensor &y_out = call.outputs[0], &mask_out = call.outputs[1];
    Tensor y = y_out.is_contiguous() ? y_out : Tensor::empty(y_out.shape(), y_out.dtype(), y_out.device());
    Tensor mask = mask_out.is_contiguous()
                      ? mask_out
                      : Tensor::empty(mask_out.shape(), mask_out.dtype(), mask_out.device());
    const double keep = 1.0 - a.rate;
    // The mask holds the scale rounded to T, so dx = dy * mask reproduces the forward exactly.
    const T kept_host =
        T(static_cast<std::conditional_t<std::is_same_v<T, double>, double, float>>(1.0 / keep));
    D kept, dropped;
    std::memcpy(&kept, &kept_host, sizeof(D));
    const T zero_host = T(0);
    std::memcpy(&dropped, &zero_host, sizeof(D));
    const int64_t n = x.numel();
    if (n > 0) {
        dropout_kernel<D><<<grid_for(n), 256, 0, stream_of(call)>>>(ptr<D>(x), ptr<D>(y), ptr<D>(mask), n,
                                                                    a.seed, a.offset, keep, kept, dropped);
        CTK_CUDA_LAUNCH_CHECK();
    }
    if (!y.shares_storage(y_out)) Tensor(y_out).copy_from(y);
    if (!mask.shares_storage(mask_out)) Tensor(mask_out).copy_from(mask);
}

}  // namespace

void register_dropout(KernelTable& t) {
    t.add(OpKind::dropout, DeviceType::cuda, DataType::f32, dropout<float>);
    t.add(OpKind::dropout, DeviceType::cuda, DataType::f64, dropout<double>);
    t.add(OpKind::dropout, DeviceType::cuda, DataType::f16, dropout<Half>);
    t.add(OpKind::dropout, DeviceType::cuda, DataType::bf16, dropout<BFloat16>);
}

}  // namespace ctk::cuda
