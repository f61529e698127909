// CPU element-wise kernels: unary ops and their backward rules, broadcasting binary ops, select, cast.
// The math is elementwise_math.h's, shared with the CUDA kernels; here are the loops. Inner loops are
// written for the contiguous and scalar-operand cases so the compiler vectorises them; other strides take
// the generic loop. 16-bit floats compute in float. Faster paths where a library or a hand loop beats the
// formula (SLEEF's exp, tanh and logistic for dense f32; dense bf16 relu and add) agree to rounding.
#include <cmath>

#include "ctk/core/parallel.h"
#include "kernels/cpu/bf16_loops.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/elementwise_math.h"

namespace ctk::cpu {

namespace {

// True when every tensor has `first`'s shape and the same dense memory order (all row-major, or all
// channels-last with the same strides): the elements can then be walked as one flat array.
bool same_dense_layout(const Tensor& first, std::initializer_list<const Tensor*> others) {
    const bool row_major = first.is_contiguous(), channels_last = is_channels_last(first);
    if (!row_major && !channels_last) return false;
    for (const Tensor* t : others) {
        if (t->shape() != first.shape() || t->strides() != first.strides()) return false;
        if (!(row_major ? t->is_contiguous() : is_channels_last(*t))) return false;
    }
    return true;
}

// Runs a dense bf16 loop (bf16_loops.h) over out and its operands, in parallel pieces.
const uint16_t* bits(const Tensor& t) {
    return static_cast<const uint16_t*>(t.raw_data());
}
void dense_bf16(const Tensor& out, void (*loop)(uint16_t*, const uint16_t*, int64_t), const Tensor& x) {
    uint16_t* o = static_cast<uint16_t*>(out.raw_data());
    parallel_for(0, out.numel(), 1 << 14, [&](int64_t b, int64_t e) { loop(o + b, bits(x) + b, e - b); });
}
void dense_bf16(const Tensor& out, void (*loop)(uint16_t*, const uint16_t*, const uint16_t*, int64_t),
                const Tensor& x, const Tensor& y) {
    uint16_t* o = static_cast<uint16_t*>(out.raw_data());
    parallel_for(0, out.numel(), 1 << 14,
                 [&](int64_t b, int64_t e) { loop(o + b, bits(x) + b, bits(y) + b, e - b); });
}

// Applies f over a 2-operand (out, in) plan.
template <typename T, typename F>
void unary_loop(const Tensor& out, const Tensor& x, F f) {
    auto plan = detail::make_strided_plan<2>(out.shape().dims(), {byte_strides(out), byte_strides(x)});
    detail::run_strided<2>(plan, {bytes(out), bytes(x)},
                           [&](std::array<char*, 2> p, int64_t n, std::array<int64_t, 2> s) {
                               T* o = reinterpret_cast<T*>(p[0]);
                               const T* a = reinterpret_cast<const T*>(p[1]);
                               if (s[0] == sizeof(T) && s[1] == sizeof(T)) {
                                   for (int64_t i = 0; i < n; ++i) o[i] = store<T>(f(load(a[i])));
                               } else {
                                   const int64_t so = s[0] / static_cast<int64_t>(sizeof(T));
                                   const int64_t sa = s[1] / static_cast<int64_t>(sizeof(T));
                                   for (int64_t i = 0; i < n; ++i) o[i * so] = store<T>(f(load(a[i * sa])));
                               }
                           });
}

template <typename T>
void unary_kernel(const KernelCall& call) {
    using C = compute_t<T>;
    const Tensor& x = call.inputs[0];
    const Tensor& out = call.outputs[0];
    if constexpr (std::is_same_v<T, float>) {
        // exp, tanh and the logistic function of contiguous f32 data: SLEEF's vector functions (the
        // fused recurrent cells use the same, so both paths agree).
        const auto vector_fn = call.op == OpKind::exp       ? vmath::exp
                               : call.op == OpKind::tanh    ? vmath::tanh
                               : call.op == OpKind::sigmoid ? vmath::sigmoid
                                                            : nullptr;
        if (vector_fn != nullptr && same_dense_layout(out, {&x})) {
            const float* in = x.data<float>();
            float* o = out.data<float>();
            parallel_for(0, out.numel(), 1 << 14,
                         [&](int64_t b, int64_t e) { vector_fn(o + b, in + b, e - b); });
            return;
        }
    }
    if constexpr (std::is_same_v<T, BFloat16>) {
        if (call.op == OpKind::relu && same_dense_layout(out, {&x})) return dense_bf16(out, bf16::relu, x);
    }
    const ScalarAttrs& s = call.attr<ScalarAttrs>();
    const C alpha = static_cast<C>(s.alpha), beta = static_cast<C>(s.beta);
    switch (call.op) {
#define CTK_UNARY_CASE(name, attrs) \
    case OpKind::name:              \
        return unary_loop<T>(       \
            out, x, [=](C v) { return elementwise_math::unary_value(OpKind::name, v, alpha, beta); });
        CTK_UNARY_OPS(CTK_UNARY_CASE)
#undef CTK_UNARY_CASE
        default:
            CTK_THROW(NotImplementedError, op_name(call.op), ": not a unary op");
    }
}

// Applies f(x, y, dy) -> dx over a 4-operand (dx, x, y, dy) plan.
template <typename T, typename F>
void grad_loop(const KernelCall& call, F f) {
    const Tensor &x = call.inputs[0], &y = call.inputs[1], &dy = call.inputs[2];
    const Tensor& dx = call.outputs[0];
    auto plan = detail::make_strided_plan<4>(
        dx.shape().dims(), {byte_strides(dx), byte_strides(x), byte_strides(y), byte_strides(dy)});
    detail::run_strided<4>(plan, {bytes(dx), bytes(x), bytes(y), bytes(dy)},
                           [&](std::array<char*, 4> p, int64_t n, std::array<int64_t, 4> s) {
                               constexpr int64_t e = sizeof(T);
                               if (s[0] == e && s[1] == e && s[2] == e && s[3] == e) {
                                   // Dense rows: unit-stride indexing lets the compiler vectorize.
                                   T* o = reinterpret_cast<T*>(p[0]);
                                   const T* xs = reinterpret_cast<const T*>(p[1]);
                                   const T* ys = reinterpret_cast<const T*>(p[2]);
                                   const T* gs = reinterpret_cast<const T*>(p[3]);
                                   for (int64_t i = 0; i < n; ++i)
                                       o[i] = store<T>(f(load(xs[i]), load(ys[i]), load(gs[i])));
                                   return;
                               }
                               for (int64_t i = 0; i < n; ++i) {
                                   auto xv = load(*reinterpret_cast<const T*>(p[1] + i * s[1]));
                                   auto yv = load(*reinterpret_cast<const T*>(p[2] + i * s[2]));
                                   auto gv = load(*reinterpret_cast<const T*>(p[3] + i * s[3]));
                                   *reinterpret_cast<T*>(p[0] + i * s[0]) = store<T>(f(xv, yv, gv));
                               }
                           });
}

template <typename T>
void unary_backward_kernel(const KernelCall& call) {
    using C = compute_t<T>;
    const auto& a = call.attr<UnaryGradAttrs>();
    if constexpr (std::is_same_v<T, BFloat16>) {
        const Tensor &y = call.inputs[1], &dy = call.inputs[2], &dx = call.outputs[0];
        if (a.fn == OpKind::relu && same_dense_layout(dx, {&y, &dy}))
            return dense_bf16(dx, bf16::relu_grad, y, dy);
    }
    const C alpha = static_cast<C>(a.scalars.alpha), beta = static_cast<C>(a.scalars.beta);
    switch (a.fn) {
#define CTK_GRAD_CASE(name, attrs)                                                   \
    case OpKind::name:                                                               \
        return grad_loop<T>(call, [=](C x, C y, C g) {                               \
            return elementwise_math::unary_grad(OpKind::name, x, y, g, alpha, beta); \
        });
        CTK_UNARY_OPS(CTK_GRAD_CASE)
#undef CTK_GRAD_CASE
        default:
            CTK_THROW(NotImplementedError, "unary_backward: ", op_name(a.fn), " is not a unary op");
    }
}

// Applies f over a 3-operand (out, a, b) plan with fast paths for contiguous and scalar operands.
template <typename T, typename F>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, F f) {
    auto plan = detail::make_strided_plan<3>(out.shape().dims(),
                                             {byte_strides(out), byte_strides(a), byte_strides(b)});
    constexpr int64_t e = sizeof(T);
    detail::run_strided<3>(plan, {bytes(out), bytes(a), bytes(b)},
                           [&](std::array<char*, 3> p, int64_t n, std::array<int64_t, 3> s) {
                               T* o = reinterpret_cast<T*>(p[0]);
                               const T* x = reinterpret_cast<const T*>(p[1]);
                               const T* y = reinterpret_cast<const T*>(p[2]);
                               if (s[0] == e && s[1] == e && s[2] == e) {
                                   for (int64_t i = 0; i < n; ++i) o[i] = store<T>(f(load(x[i]), load(y[i])));
                               } else if (s[0] == e && s[1] == e && s[2] == 0) {
                                   const auto yv = load(y[0]);
                                   for (int64_t i = 0; i < n; ++i) o[i] = store<T>(f(load(x[i]), yv));
                               } else if (s[0] == e && s[1] == 0 && s[2] == e) {
                                   const auto xv = load(x[0]);
                                   for (int64_t i = 0; i < n; ++i) o[i] = store<T>(f(xv, load(y[i])));
                               } else {
                                   const int64_t so = s[0] / e, sx = s[1] / e, sy = s[2] / e;
                                   for (int64_t i = 0; i < n; ++i)
                                       o[i * so] = store<T>(f(load(x[i * sx]), load(y[i * sy])));
                               }
                           });
}

template <typename T>
void binary_kernel(const KernelCall& call) {
    using C = compute_t<T>;
    const Tensor &a = call.inputs[0], &b = call.inputs[1];
    const Tensor& out = call.outputs[0];
    if constexpr (std::is_same_v<T, BFloat16>) {
        if (call.op == OpKind::plus && same_dense_layout(out, {&a, &b}))
            return dense_bf16(out, bf16::add, a, b);
    }
    switch (call.op) {
#define CTK_BINARY_CASE(name, attrs)     \
    case OpKind::name:                   \
        return binary_loop<T>(out, a, b, \
                              [](C x, C y) { return elementwise_math::binary_value(OpKind::name, x, y); });
        CTK_BINARY_OPS(CTK_BINARY_CASE)
#undef CTK_BINARY_CASE
        default:
            CTK_THROW(NotImplementedError, op_name(call.op), ": not a binary op");
    }
}

template <typename T>
void select_kernel(const KernelCall& call) {
    const Tensor &c = call.inputs[0], &a = call.inputs[1], &b = call.inputs[2];
    const Tensor& out = call.outputs[0];
    auto plan = detail::make_strided_plan<4>(
        out.shape().dims(), {byte_strides(out), byte_strides(c), byte_strides(a), byte_strides(b)});
    detail::run_strided<4>(plan, {bytes(out), bytes(c), bytes(a), bytes(b)},
                           [](std::array<char*, 4> p, int64_t n, std::array<int64_t, 4> s) {
                               for (int64_t i = 0; i < n; ++i) {
                                   bool take_a = load(*reinterpret_cast<const T*>(p[1] + i * s[1])) != 0;
                                   *reinterpret_cast<T*>(p[0] + i * s[0]) =
                                       *reinterpret_cast<const T*>(p[take_a ? 2 : 3] + i * s[take_a ? 2 : 3]);
                               }
                           });
}

void cast_kernel(const KernelCall& call) {
    call.outputs[0].copy_from(call.inputs[0]);
}

template <typename T>
void register_float_type(KernelTable& t) {
    constexpr DataType d = dtype_v<T>;
#define CTK_REG_UNARY(name, attrs) t.add(OpKind::name, DeviceType::cpu, d, unary_kernel<T>);
    CTK_UNARY_OPS(CTK_REG_UNARY)
#undef CTK_REG_UNARY
#define CTK_REG_BINARY(name, attrs) t.add(OpKind::name, DeviceType::cpu, d, binary_kernel<T>);
    CTK_BINARY_OPS(CTK_REG_BINARY)
#undef CTK_REG_BINARY
    t.add(OpKind::unary_backward, DeviceType::cpu, d, unary_backward_kernel<T>);
    t.add(OpKind::element_select, DeviceType::cpu, d, select_kernel<T>);
}

}  // namespace

void register_elementwise(KernelTable& t) {
    register_float_type<float>(t);
    register_float_type<double>(t);
    register_float_type<Half>(t);
    register_float_type<BFloat16>(t);
    for (int d = 0; d < kNumDataTypes; ++d)
        t.add(OpKind::cast, DeviceType::cpu, static_cast<DataType>(d), cast_kernel);
}

}  // namespace ctk::cpu
