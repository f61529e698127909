// CUDA element-wise kernels: unary ops and their backward rules, broadcasting binary ops, select, cast.
// The math mirrors cpu/elementwise.cpp op for op (the op harness compares the two). The op is a runtime
// switch inside one kernel per dtype: the branch is uniform across a warp, the kernels are bound by
// memory traffic, and it keeps the build to a few instantiations per architecture.
#include <cfloat>

#include "core/cuda/copy.h"
#include "kernels/cntk_math.h"
#include "kernels/cuda/cuda_common.h"
#include "kernels/cuda/map.cuh"

namespace ctk::cuda {

namespace {

template <typename C>
__device__ __forceinline__ C sigmoid_of(C x) {
    if (x >= C(0)) return C(1) / (C(1) + exp(-x));
    C e = exp(x);
    return e / (C(1) + e);
}

template <typename C>
__device__ __forceinline__ C unary_value(OpKind op, C v, C alpha, C beta) {
    switch (op) {
        case OpKind::negate:
            return -v;
        case OpKind::abs:
            return fabs(v);
        case OpKind::sqrt:
            return cntk_math::sqrt_of(v);
        case OpKind::square:
            return v * v;
        case OpKind::exp:
            return exp(v);
        case OpKind::log:
            return cntk_math::log_of(v);
        case OpKind::floor:
            return floor(v);
        case OpKind::ceil:
            return ceil(v);
        case OpKind::round:
            return floor(v + C(0.5));  // CNTK rounds halves up
        case OpKind::sin:
            return sin(v);
        case OpKind::cos:
            return cos(v);
        case OpKind::tan:
            return tan(v);
        case OpKind::asin:
            return asin(v);
        case OpKind::acos:
            return acos(v);
        case OpKind::atan:
            return atan(v);
        case OpKind::sinh:
            return sinh(v);
        case OpKind::cosh:
            return cosh(v);
        case OpKind::tanh:
            return tanh(v);
        case OpKind::asinh:
            return asinh(v);
        case OpKind::erf:
            return erf(v);
        case OpKind::atanh:
            return atanh(v);
        case OpKind::reciprocal:
            return cntk_math::reciprocal_of(v);
        case OpKind::sigmoid:
            return sigmoid_of(v);
        case OpKind::relu:
            return v < C(0) ? C(0) : v;
        case OpKind::elu:
            return v > C(0) ? v : alpha * expm1(v);
        case OpKind::selu:
            return v > C(0) ? alpha * v : alpha * beta * expm1(v);
        case OpKind::leaky_relu:
            return v > C(0) ? v : alpha * v;
        case OpKind::softplus:
            return fmax(v, C(0)) + log1p(exp(-fabs(v)));
        case OpKind::softsign:
            return v / (C(1) + fabs(v));
        case OpKind::hard_sigmoid:
            return fmin(C(1), fmax(C(0), alpha * v + beta));
        case OpKind::element_not:
            return v == C(0) ? C(1) : C(0);
        case OpKind::clip: {  // the upper bound last, as the CPU kernel
            const C low = v < alpha ? alpha : v;
            return low > beta ? beta : low;
        }
        default:
            return v;
    }
}

template <typename C>
__device__ __forceinline__ C unary_grad(OpKind op, C x, C y, C g, C alpha, C beta) {
    const C one(1), zero(0);
    switch (op) {
        case OpKind::negate:
            return -g;
        case OpKind::abs:
            return x > zero ? g : (x < zero ? -g : zero);
        case OpKind::sqrt:
            return g / (C(2) * y);
        case OpKind::square:
            return C(2) * x * g;
        case OpKind::exp:
            return y * g;
        case OpKind::log:
            return cntk_math::log_grad(x, g);
        case OpKind::floor:
        case OpKind::ceil:
        case OpKind::round:
        case OpKind::element_not:
            return zero;
        case OpKind::sin:
            return cos(x) * g;
        case OpKind::cos:
            return -sin(x) * g;
        case OpKind::tan:
            return (one + y * y) * g;
        case OpKind::asin:
            return g / sqrt(one - x * x);
        case OpKind::acos:
            return -g / sqrt(one - x * x);
        case OpKind::atan:
            return g / (one + x * x);
        case OpKind::sinh:
            return cosh(x) * g;
        case OpKind::cosh:
            return sinh(x) * g;
        case OpKind::tanh:
            return (one - y * y) * g;
        case OpKind::asinh:
            return g / sqrt(x * x + one);
        case OpKind::erf:  // 2 / sqrt(pi) exp(-x^2)
            return C(1.1283791670955126) * exp(-x * x) * g;
        case OpKind::atanh:
            return g / (one - x * x);
        case OpKind::reciprocal:
            return -y * y * g;
        case OpKind::sigmoid:
            return y * (one - y) * g;
        case OpKind::relu:  // from y, as the CPU kernel
            return y > zero ? g : zero;
        case OpKind::elu:
            return x > zero ? g : (y + alpha) * g;
        case OpKind::selu:  // at x = 0 the positive side's slope, as the CPU kernel
            return x >= zero ? alpha * g : (y + alpha * beta) * g;
        case OpKind::leaky_relu:
            return x >= zero ? g : alpha * g;
        case OpKind::softplus:
            return sigmoid_of(x) * g;
        case OpKind::softsign: {
            C d = one + fabs(x);
            return g / (d * d);
        }
        case OpKind::hard_sigmoid: {
            C v = alpha * x + beta;
            return (v > zero && v < one) ? alpha * g : zero;
        }
        case OpKind::clip:
            return (x >= alpha && x <= beta) ? g : zero;
        default:
            return zero;
    }
}

template <typename C>
__device__ __forceinline__ C binary_value(OpKind op, C x, C y) {
    const C one(1), zero(0);
    switch (op) {
        case OpKind::plus:
            return x + y;
        case OpKind::minus:
            return x - y;
        case OpKind::element_times:
            return x * y;
        case OpKind::element_divide:
            return cntk_math::divide(x, y);
        case OpKind::pow:
            return cntk_math::pow_of(x, y);
        case OpKind::element_max:
            return (x > y || x != x) ? x : y;  // NaN propagates
        case OpKind::element_min:
            return (x < y || x != x) ? x : y;
        case OpKind::log_add_exp: {
            C m = fmax(x, y);
            if (isinf(m) && m < zero) return m;
            return m + log1p(exp(-fabs(x - y)));
        }
        case OpKind::equal:
            return x == y ? one : zero;
        case OpKind::not_equal:
            return x != y ? one : zero;
        case OpKind::less:
            return x < y ? one : zero;
        case OpKind::less_equal:
            return x <= y ? one : zero;
        case OpKind::greater:
            return x > y ? one : zero;
        case OpKind::greater_equal:
            return x >= y ? one : zero;
        case OpKind::element_and:
            return (x != zero && y != zero) ? one : zero;
        case OpKind::element_or:
            return (x != zero || y != zero) ? one : zero;
        case OpKind::element_xor:
            return ((x != zero) != (y != zero)) ? one : zero;
        case OpKind::param_relu:
            return x > zero ? x : y * x;
        default:
            return zero;
    }
}

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
