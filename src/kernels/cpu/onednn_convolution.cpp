// CPU convolution through oneDNN (f32, bf16): forward, backward-data and backward-weights primitives.
// Activations in the channels-last layout (what the convolution op allocates on the CPU: ctk/core/tensor.h)
// run as they are; otherwise the primitives are created with format_tag::any, so oneDNN picks its
// blocked layouts (nChw16c, ...). Weights always take oneDNN's layout (OIhw16i16o, ...). Operands in
// another layout than the primitive's are reordered in and out through per-thread scratch buffers.
// Primitives and their reorders are cached per geometry. f64, which oneDNN lacks, is
// reference_convolution.cpp.
#include <optional>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/onednn_common.h"

namespace ctk::cpu {

void register_reference_convolution(KernelTable& t);  // reference_convolution.cpp

namespace {

using dnnl::memory;
namespace onednn = ctk::cpu::onednn;

enum class Pass : int64_t { forward = 1, backward_data = 2, backward_weights = 3 };

// Scratch slots (see onednn::scratch): the two staged inputs, the staged output, the scratchpad.
constexpr int kSlotA = 0, kSlotB = 1, kSlotOut = 2, kSlotScratchpad = 3;
constexpr int64_t kCacheFamily = 1;  // onednn::base_key's family tag for convolutions

// An operand as the user holds it and as the primitive wants it.
struct Staged {
    memory::desc user, prim;
    std::optional<dnnl::reorder> reorder;  // user -> prim for inputs, prim -> user for the output
};

Staged stage(const memory::desc& user, const memory::desc& prim, bool is_input) {
    Staged s{user, prim, std::nullopt};
    if (user != prim) {
        s.reorder =
            is_input
                ? dnnl::reorder(dnnl::reorder::primitive_desc(onednn::engine(), user, onednn::engine(), prim))
                : dnnl::reorder(
                      dnnl::reorder::primitive_desc(onednn::engine(), prim, onednn::engine(), user));
    }
    return s;
}

// A cached convolution pass. Per pass, (a, b) -> out is:
//   forward          (x, w) -> y   [+ bias input]
//   backward_data    (dy, w) -> dx
//   backward_weights (x, dy) -> dw [+ db output]
struct Plan {
    dnnl::primitive prim;
    Staged a, b, out;
    int arg_a = 0, arg_b = 0, arg_out = 0, arg_bias = 0;
    memory::desc bias;  // plain [O]; zero-sized when there is no bias
    memory::desc scratchpad;
};

memory::dims to_dims(const Dims& d) {
    return memory::dims(d.begin(), d.end());
}

// A dense row-major descriptor of `shape`.
memory::desc plain_desc(const Shape& shape, DataType dtype) {
    return memory::desc(to_dims(shape.dims()), onednn::data_type(dtype), to_dims(shape.contiguous_strides()));
}

// Weights [O, C/G, k...] as oneDNN's grouped [G, O/G, C/G, k...] when groups > 1.
memory::desc weights_desc(const Shape& w, DataType dtype, int64_t groups) {
    if (groups == 1) return plain_desc(w, dtype);
    Dims d = {groups, w[0] / groups};
    d.insert(d.end(), w.dims().begin() + 1, w.dims().end());
    return plain_desc(Shape(d), dtype);
}

memory::desc any_desc(const memory::desc& d) {
    return memory::desc(d.dims(), d.data_type(), memory::format_tag::any);
}

// `d`'s dims in the channels-last layout.
memory::desc channels_last_like(const memory::desc& d) {
    const memory::dims dims = d.dims();  // a copy: dims() returns a new vector per call
    const Dims strides = channels_last_strides(Shape(Dims(dims.begin(), dims.end())));
    return memory::desc(dims, d.data_type(), memory::dims(strides.begin(), strides.end()));
}

bool is_reference_impl(const dnnl::primitive_desc_base& pd) {
    return std::string(pd.impl_info_str()).find("ref") != std::string::npos;
}

// channels_last: the activations run in the channels-last layout (nhwc), which oneDNN's JIT kernels take
// as they are, so activations that are already channels-last need no reorder; otherwise oneDNN picks
// its blocked layouts. A CPU without a JIT kernel for channels-last falls back to the blocked ones.
Plan make_plan(Pass pass, const memory::desc& x, const memory::desc& w, const memory::desc& y,
               const memory::desc& bias, const ConvAttrs& a, bool channels_last) {
    memory::desc xa = channels_last ? channels_last_like(x) : any_desc(x), wa = any_desc(w),
                 ya = channels_last ? channels_last_like(y) : any_desc(y);
    const bool has_bias = bias.get_size() != 0;
    memory::dims dilates;  // oneDNN counts the cells inserted between taps: ctk's dilation - 1
    for (int64_t d : a.dilation) dilates.push_back(d - 1);
    const memory::dims strides = to_dims(a.strides), pad_l = to_dims(a.pad_lo), pad_r = to_dims(a.pad_hi);
    // Direct convolution, as PyTorch uses: Winograd would be faster on some 3x3 shapes but changes
    // the numerics.
    const auto alg = dnnl::algorithm::convolution_direct;
    const dnnl::primitive_attr attr = onednn::user_scratchpad_attr();
    using fwd = dnnl::convolution_forward;
    const auto fwd_desc = has_bias ? fwd::desc(dnnl::prop_kind::forward_training, alg, xa, wa, bias, ya,
                                               strides, dilates, pad_l, pad_r)
                                   : fwd::desc(dnnl::prop_kind::forward_training, alg, xa, wa, ya, strides,
                                               dilates, pad_l, pad_r);
    fwd::primitive_desc fwd_pd(fwd_desc, attr, onednn::engine());
    if (channels_last && is_reference_impl(fwd_pd)) return make_plan(pass, x, w, y, bias, a, false);
    Plan p;
    p.bias = bias;
    switch (pass) {
        case Pass::forward:
            p.prim = fwd(fwd_pd);
            p.a = stage(x, fwd_pd.src_desc(), true);
            p.b = stage(w, fwd_pd.weights_desc(), true);
            p.out = stage(y, fwd_pd.dst_desc(), false);
            p.arg_a = DNNL_ARG_SRC, p.arg_b = DNNL_ARG_WEIGHTS, p.arg_out = DNNL_ARG_DST,
            p.arg_bias = DNNL_ARG_BIAS;
            p.scratchpad = fwd_pd.scratchpad_desc();
            break;
        case Pass::backward_data: {
            using bwd = dnnl::convolution_backward_data;
            const bwd::primitive_desc pd(bwd::desc(alg, xa, wa, ya, strides, dilates, pad_l, pad_r), attr,
                                         onednn::engine(), fwd_pd);
            p.prim = bwd(pd);
            p.a = stage(y, pd.diff_dst_desc(), true);
            p.b = stage(w, pd.weights_desc(), true);
            p.out = stage(x, pd.diff_src_desc(), false);
            p.arg_a = DNNL_ARG_DIFF_DST, p.arg_b = DNNL_ARG_WEIGHTS, p.arg_out = DNNL_ARG_DIFF_SRC;
            p.scratchpad = pd.scratchpad_desc();
            break;
        }
        case Pass::backward_weights: {
            using bwd = dnnl::convolution_backward_weights;
            const auto desc = has_bias ? bwd::desc(alg, xa, wa, bias, ya, strides, dilates, pad_l, pad_r)
                                       : bwd::desc(alg, xa, wa, ya, strides, dilates, pad_l, pad_r);
            bwd::primitive_desc pd(desc, attr, onednn::engine(), fwd_pd);
            // With fewer input channels than a SIMD block (a network's first layer: 1 or 3 channels)
            // the direct JIT kernel pads the channels to the block and runs 2-3x slower than oneDNN's
            // im2col + GEMM kernel, which it only offers for plain layouts (measured on the MNIST
            // ConvNet's 5x5 conv over 1 channel: 10.5 ms vs 4.2 ms per call on AVX2).
            const int64_t channels = x.dims()[1] / a.groups;
            const int64_t block = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core ? 16 : 8;
            if (channels < block && !channels_last) {
                const auto plain = has_bias ? bwd::desc(alg, x, w, bias, y, strides, dilates, pad_l, pad_r)
                                            : bwd::desc(alg, x, w, y, strides, dilates, pad_l, pad_r);
                const bwd::primitive_desc plain_pd(plain, attr, onednn::engine(), fwd_pd);
                if (std::string(plain_pd.impl_info_str()).find("gemm") != std::string::npos) pd = plain_pd;
            }
            p.prim = bwd(pd);
            p.a = stage(x, pd.src_desc(), true);
            p.b = stage(y, pd.diff_dst_desc(), true);
            p.out = stage(w, pd.diff_weights_desc(), false);
            p.arg_a = DNNL_ARG_SRC, p.arg_b = DNNL_ARG_DIFF_DST, p.arg_out = DNNL_ARG_DIFF_WEIGHTS;
            p.arg_bias = DNNL_ARG_DIFF_BIAS;
            p.scratchpad = pd.scratchpad_desc();
            break;
        }
    }
    return p;
}

// The user's memory for an input, reordered into scratch when the primitive wants another layout.
memory stage_in(const Staged& s, void* data, int slot) {
    memory user(s.user, onednn::engine(), data);
    if (!s.reorder) return user;
    memory prim(s.prim, onednn::engine(), onednn::scratch(slot, s.prim.get_size()));
    s.reorder->execute(onednn::stream(), user, prim);
    return prim;
}

void run(const Plan& p, const Tensor& a, const Tensor& b, const Tensor& out, const Tensor& bias) {
    dnnl::stream& s = onednn::stream();
    std::unordered_map<int, memory> args;
    args.insert({p.arg_a, stage_in(p.a, a.raw_data(), kSlotA)});
    args.insert({p.arg_b, stage_in(p.b, b.raw_data(), kSlotB)});
    memory out_user(p.out.user, onednn::engine(), out.raw_data());
    memory out_prim =
        p.out.reorder ? memory(p.out.prim, onednn::engine(), onednn::scratch(kSlotOut, p.out.prim.get_size()))
                      : out_user;
    args.insert({p.arg_out, out_prim});
    if (bias.defined()) args.insert({p.arg_bias, memory(p.bias, onednn::engine(), bias.raw_data())});
    onednn::add_scratchpad(args, p.scratchpad, kSlotScratchpad);
    p.prim.execute(s, args);
    if (p.out.reorder) p.out.reorder->execute(s, out_prim, out_user);
    s.wait();
}

onednn::PlanCache<Plan>& plan_cache() {
    // Enough for every convolution of a large network in all three passes.
    static onednn::PlanCache<Plan> cache(1024);
    return cache;
}

void convolution_kernel(const KernelCall& call) {
    const ConvAttrs& attrs = call.attr<ConvAttrs>();
    const Pass pass = call.op == OpKind::convolution                 ? Pass::forward
                      : call.op == OpKind::convolution_backward_data ? Pass::backward_data
                                                                     : Pass::backward_weights;
    // Dense inputs (row-major or channels-last) let the reorders use their JIT kernels; other strided
    // views would take oneDNN's generic reorder.
    // The second operand is the weight (row-major, as the plan describes it) except in the weight
    // gradient's pass, where it is dy.
    const Tensor a = onednn::dense(call.inputs[0]);
    const Tensor b =
        pass == Pass::backward_weights ? onednn::dense(call.inputs[1]) : call.inputs[1].contiguous();
    const Tensor& out = call.outputs[0];
    Tensor bias;
    if (pass == Pass::forward && call.inputs.size() > 2 && call.inputs[2].defined())
        bias = call.inputs[2].contiguous();
    if (pass == Pass::backward_weights && call.outputs.size() > 1 && call.outputs[1].defined())
        bias = call.outputs[1];
    // Name the user tensors by their role in the forward convolution.
    const Tensor& xt = pass == Pass::backward_data ? out : a;
    const Tensor& yt = pass == Pass::forward ? out : pass == Pass::backward_data ? a : b;
    const Shape& x = xt.shape();
    const Shape& w = pass == Pass::backward_weights ? out.shape() : b.shape();
    const Shape& y = yt.shape();
    // The pass runs channels-last when what it writes (or, for the weight gradient, dy) is.
    const bool channels_last = is_channels_last(pass == Pass::backward_weights ? b : out);
    const DataType dtype = out.dtype();

    onednn::CacheKey key = onednn::base_key(kCacheFamily, dtype);
    onednn::append(key, {static_cast<int64_t>(pass), attrs.groups, bias.defined() ? 1 : 0,
                         channels_last ? 1 : 0, onednn::layout_code(xt), onednn::layout_code(yt)});
    for (const Dims* d :
         {&x.dims(), &w.dims(), &y.dims(), &attrs.strides, &attrs.dilation, &attrs.pad_lo, &attrs.pad_hi})
        onednn::append(key, *d);
    try {
        auto plan = plan_cache().get(key, [&] {
            memory::desc bias_md = bias.defined() ? plain_desc(bias.shape(), dtype) : memory::desc();
            return make_plan(pass, onednn::desc_of(xt), weights_desc(w, dtype, attrs.groups),
                             onednn::desc_of(yt), bias_md, attrs, channels_last);
        });
        run(*plan, a, b, out, bias);
    } catch (const dnnl::error& e) {
        if (e.status == dnnl_unimplemented)
            CTK_THROW(NotImplementedError, op_name(call.op), ": oneDNN has no ", dtype_name(dtype),
                      " implementation for x ", x.to_string(), " and w ", w.to_string(), " on this CPU");
        onednn::rethrow(op_name(call.op), e);
    }
}

}  // namespace

void register_convolution(KernelTable& t) {
    for (OpKind op :
         {OpKind::convolution, OpKind::convolution_backward_data, OpKind::convolution_backward_weights}) {
        t.add(op, DeviceType::cpu, DataType::f32, convolution_kernel);
        t.add(op, DeviceType::cpu, DataType::bf16, onednn::bf16_kernel<convolution_kernel>());
        t.add(op, DeviceType::cpu, DataType::f16,
              onednn::via_f32<convolution_kernel>);  // no f16 in oneDNN here
    }
    register_reference_convolution(t);
}

}  // namespace ctk::cpu
