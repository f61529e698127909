// CPU dropout: element i (row-major) keeps its value, scaled by 1 / (1 - rate), when the Philox draw
// for counter offset + i is below 1 - rate. Each element is a pure function of its counter, so the
// result does not depend on the thread count or on the input strides. 16-bit floats compute in float.
#include "ctk/core/rng.h"
#include "kernels/cpu/cpu_common.h"

namespace ctk::cpu {

namespace {

template <typename T>
void dropout_kernel(const KernelCall& call) {
    const auto& attrs = call.attr<DropoutAttrs>();
    const Tensor& x = call.inputs[0];
    const Tensor &y = call.outputs[0], &mask = call.outputs[1];
    const double keep = 1.0 - attrs.rate;
    // The mask holds the scale rounded to T, and y multiplies by that same value, so dx = dy * mask
    // reproduces the forward exactly.
    const T kept = store<T>(static_cast<compute_t<T>>(1.0 / keep));
    const T dropped = store<T>(compute_t<T>(0));
    const uint64_t seed = attrs.seed, offset = attrs.offset;
    const char* y_base = bytes(y);
    constexpr int64_t e = sizeof(T);
    auto plan = detail::make_strided_plan<3>(y.shape().dims(),
                                             {byte_strides(y), byte_strides(mask), byte_strides(x)});
    // Philox costs far more than a copy, so threads pay off on smaller pieces than the default grain.
    detail::run_strided<3>(
        plan, {bytes(y), bytes(mask), bytes(x)},
        [&](std::array<char*, 3> p, int64_t n, std::array<int64_t, 3> s) {
            // y is contiguous: its byte position is the element's row-major number, which picks the counter.
            const uint64_t first = static_cast<uint64_t>((p[0] - y_base) / e),
                           step = static_cast<uint64_t>(s[0] / e);
            for (int64_t i = 0; i < n; ++i) {
                const auto w = philox_draw(seed, offset + first + static_cast<uint64_t>(i) * step);
                const T m = uniform_double(w[0], w[1]) < keep ? kept : dropped;
                const T xv = *reinterpret_cast<const T*>(p[2] + i * s[2]);
                *reinterpret_cast<T*>(p[1] + i * s[1]) = m;
                *reinterpret_cast<T*>(p[0] + i * s[0]) = store<T>(load(xv) * load(m));
            }
        },
        4096);
}

}  // namespace

void register_dropout(KernelTable& t) {
    t.add(OpKind::dropout, DeviceType::cpu, DataType::f32, dropout_kernel<float>);
    t.add(OpKind::dropout, DeviceType::cpu, DataType::f64, dropout_kernel<double>);
    t.add(OpKind::dropout, DeviceType::cpu, DataType::f16, dropout_kernel<Half>);
    t.add(OpKind::dropout, DeviceType::cpu, DataType::bf16, dropout_kernel<BFloat16>);
}

}  // namespace ctk::cpu
