// CUDA element-wise kernels: unary ops and their backward rules, broadcasting binary ops, select, cast.
// The math is elementwise_math.h's, shared with the CPU kernels (the op harness compares the two). The op
// is a runtime switch inside one kernel per dtype: the branch is uniform across a warp, the kernels are
// bound by memory traffic, and it keeps the build to a few instantiations per architecture.
#include <cfloat>

#include "core/cuda/copy.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/map.cuh"
#include "kernels/elementwise_math.h"

namespace ctk::cuda {

namespace {

using elementwise_math::binary_value;
using elementwise_math::unary_grad;
using elementwise_math::unary_value;

template <typename D>
struct UnaryFn {
    using element = D;  // all operands hold D: the contiguous case vectorizes
    OpKind op;
    comp_t<D> alpha, beta;
    __device__ void operator()(char** q) const {
        *reinterpret_cast<D*>(q[0]) =
            from_comp<D>(unary_value(op, to_comp(*reinterpret_cast<const D*>(q[1])), alpha, beta));
    }
};

template <typename D>
struct UnaryGradFn {
    using element = D;  // all operands hold D: the contiguous case vectorizes
    OpKind op;
    comp_t<D> alpha, beta;
    __device__ void operator()(char** q) const {
        auto x = to_comp(*reinterpret_cast<const D*>(q[1]));
        auto y = to_comp(*reinterpret_cast<const D*>(q[2]));
        auto g = to_comp(*reinterpret_cast<const D*>(q[3]));
        *reinterpret_cast<D*>(q[0]) = from_comp<D>(unary_grad(op, x, y, g, alpha, beta));
    }
};

template <typename D>
struct BinaryFn {
    using element = D;  // all operands hold D: the contiguous case vectorizes
    OpKind op;
    __device__ void operator()(char** q) const {
        auto x = to_comp(*reinterpret_cast<const D*>(q[1]));
        auto y = to_comp(*reinterpret_cast<const D*>(q[2]));
        *reinterpret_cast<D*>(q[0]) = from_comp<D>(binary_value(op, x, y));
    }
};

template <typename D>
struct SelectFn {
    using element = D;  // all operands hold D: the contiguous case vectorizes
    __device__ void operator()(char** q) const {
        bool take_a = to_comp(*reinterpret_cast<const D*>(q[1])) != comp_t<D>(0);
        *reinterpret_cast<D*>(q[0]) = *reinterpret_cast<const D*>(q[take_a ? 2 : 3]);
    }
};

template <typename T>
void unary_kernel(const KernelCall& call) {
    using D = dev_t<T>;
    const auto& s = call.attr<ScalarAttrs>();
    UnaryFn<D> f{call.op, static_cast<comp_t<D>>(s.alpha), static_cast<comp_t<D>>(s.beta)};
    launch_map<2>({call.outputs[0], call.inputs[0]}, f, stream_of(call));
}

template <typename T>
void unary_backward_kernel(const KernelCall& call) {
    using D = dev_t<T>;
    const auto& a = call.attr<UnaryGradAttrs>();
    UnaryGradFn<D> f{a.fn, static_cast<comp_t<D>>(a.scalars.alpha), static_cast<comp_t<D>>(a.scalars.beta)};
    launch_map<4>({call.outputs[0], call.inputs[0], call.inputs[1], call.inputs[2]}, f, stream_of(call));
}

template <typename T>
void binary_kernel(const KernelCall& call) {
    launch_map<3>({call.outputs[0], call.inputs[0], call.inputs[1]}, BinaryFn<dev_t<T>>{call.op},
                  stream_of(call));
}

template <typename T>
void select_kernel(const KernelCall& call) {
    launch_map<4>({call.outputs[0], call.inputs[0], call.inputs[1], call.inputs[2]}, SelectFn<dev_t<T>>{},
                  stream_of(call));
}

void cast_kernel(const KernelCall& call) {
    detail::copy_on_device(call.inputs[0], call.outputs[0]);
}

template <typename T>
void register_float_type(KernelTable& t) {
    constexpr DataType d = dtype_v<T>;
#define CTK_REG_UNARY(name, attrs) t.add(OpKind::name, DeviceType::cuda, d, unary_kernel<T>);
    CTK_UNARY_OPS(CTK_REG_UNARY)
#undef CTK_REG_UNARY
#define CTK_REG_BINARY(name, attrs) t.add(OpKind::name, DeviceType::cuda, d, binary_kernel<T>);
    CTK_BINARY_OPS(CTK_REG_BINARY)
#undef CTK_REG_BINARY
    t.add(OpKind::unary_backward, DeviceType::cuda, d, unary_backward_kernel<T>);
    t.add(OpKind::element_select, DeviceType::cuda, d, select_kernel<T>);
}

}  // namespace

void register_elementwise(KernelTable& t) {
    register_float_type<float>(t);
    register_float_type<double>(t);
    register_float_type<Half>(t);
    register_float_type<BFloat16>(t);
    for (int d = 0; d < kNumDataTypes; ++d)
        t.add(OpKind::cast, DeviceType::cuda, static_cast<DataType>(d), cast_kernel);
}

}  // namespace ctk::cuda
