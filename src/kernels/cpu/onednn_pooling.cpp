// CPU pooling through oneDNN (f32, bf16) on [N, C, spatial...] tensors, row-major or channels-last (kept
// as they are: ctk/core/tensor.h); max pooling in training
// returns oneDNN's workspace (where the maxima were) as a u8 tensor for the backward pass. Primitives
// are cached per geometry. f64 is reference_pooling.cpp.
// oneDNN 2.6 has no JIT pooling for plain NCHW on AVX2 (it takes "simple_nchw", ~20x slower than its
// JIT kernel on channel-blocked data), so when that is all it offers for the plain layout, the plan
// stages the operands through the channel-blocked layout (nChw8c, or nChw16c on AVX-512) with reorders.
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/onednn_common.h"

namespace ctk::cpu {

void register_reference_pooling(KernelTable& t);  // reference_pooling.cpp

namespace {

using dnnl::memory;
namespace onednn = ctk::cpu::onednn;

constexpr int kSlotScratchpad = 0;
constexpr int kSlotBlockedSrc = 1;  // staged operands in the blocked layout
constexpr int kSlotBlockedDst = 2;
constexpr int64_t kCacheFamily = 2;  // onednn::base_key's family tag for pooling

enum class Pass : int64_t { inference = 1, training = 2, backward = 3 };

struct Plan {
    dnnl::primitive prim;
    memory::desc src, dst;   // diff_src, diff_dst for the backward pass (plain, as the tensors are)
    memory::desc workspace;  // zero-sized when the pass has none
    memory::desc scratchpad;
    // Staging through the blocked layout: the primitive runs on src_blk/dst_blk; the reorders move the
    // input in and the output out (forward: src in, dst out; backward: diff_dst in, diff_src out).
    bool staged = false;
    memory::desc src_blk, dst_blk;
    dnnl::reorder in, out;
};

memory::dims to_dims(const Dims& d) {
    return memory::dims(d.begin(), d.end());
}

memory::desc plain_desc(const Shape& shape, DataType dtype) {
    return memory::desc(to_dims(shape.dims()), onednn::data_type(dtype), to_dims(shape.contiguous_strides()));
}

dnnl::algorithm algorithm_of(const PoolAttrs& a) {
    if (a.kind == PoolKind::max) return dnnl::algorithm::pooling_max;
    return a.include_pad ? dnnl::algorithm::pooling_avg_include_padding
                         : dnnl::algorithm::pooling_avg_exclude_padding;
}

// The channel-blocked layout oneDNN's JIT pooling runs on for this ISA (nChw8c / nChw16c and their
// 1-D and 3-D kin).
memory::desc blocked_desc(const memory::desc& plain) {
    const bool avx512 = dnnl::get_effective_cpu_isa() >= dnnl::cpu_isa::avx512_core;
    using tag = memory::format_tag;
    tag t = tag::undef;
    switch (plain.dims().size()) {
        case 3:
            t = avx512 ? tag::aBc16b : tag::aBc8b;
            break;
        case 4:
            t = avx512 ? tag::aBcd16b : tag::aBcd8b;
            break;
        case 5:
            t = avx512 ? tag::aBcde16b : tag::aBcde8b;
            break;
        default:
            return plain;
    }
    return memory::desc(plain.dims(), plain.data_type(), t);
}

bool is_slow_impl(const dnnl::primitive_desc_base& pd) {
    const std::string impl = pd.impl_info_str();
    return impl.find("jit") == std::string::npos;
}

Plan make_plan(Pass pass, const memory::desc& x, const memory::desc& y, const PoolAttrs& a) {
    const dnnl::primitive_attr attr = onednn::user_scratchpad_attr();
    const memory::dims strides = to_dims(a.strides), kernel = to_dims(a.kernel), pad_l = to_dims(a.pad_lo),
                       pad_r = to_dims(a.pad_hi);
    using fwd = dnnl::pooling_forward;
    using bwd = dnnl::pooling_backward;
    const auto prop =
        pass == Pass::inference ? dnnl::prop_kind::forward_inference : dnnl::prop_kind::forward_training;
    auto fwd_pd_for = [&](const memory::desc& xs, const memory::desc& ys) {
        return fwd::primitive_desc(fwd::desc(prop, algorithm_of(a), xs, ys, strides, kernel, pad_l, pad_r),
                                   attr, onednn::engine());
    };
    Plan p;
    p.src = x;
    p.dst = y;
    fwd::primitive_desc fwd_pd = fwd_pd_for(x, y);
    if (is_slow_impl(fwd_pd)) {
        const memory::desc xb = blocked_desc(x), yb = blocked_desc(y);
        fwd::primitive_desc blocked = fwd_pd_for(xb, yb);
        if (!is_slow_impl(blocked)) {
            fwd_pd = blocked;
            p.staged = true;
            p.src_blk = xb;
            p.dst_blk = yb;
        }
    }
    const memory::desc& xs = p.staged ? p.src_blk : x;
    const memory::desc& ys = p.staged ? p.dst_blk : y;
    if (pass != Pass::backward) {
        p.prim = fwd(fwd_pd);
        p.workspace = fwd_pd.workspace_desc();
        p.scratchpad = fwd_pd.scratchpad_desc();
        if (p.staged) {
            p.in = dnnl::reorder(dnnl::reorder::primitive_desc(onednn::engine(), x, onednn::engine(), xs));
            p.out = dnnl::reorder(dnnl::reorder::primitive_desc(onednn::engine(), ys, onednn::engine(), y));
        }
        return p;
    }
    const bwd::primitive_desc pd(bwd::desc(algorithm_of(a), xs, ys, strides, kernel, pad_l, pad_r), attr,
                                 onednn::engine(), fwd_pd);
    p.prim = bwd(pd);
    p.workspace = pd.workspace_desc();
    p.scratchpad = pd.scratchpad_desc();
    if (p.staged) {
        p.in = dnnl::reorder(dnnl::reorder::primitive_desc(onednn::engine(), y, onednn::engine(), ys));
        p.out = dnnl::reorder(dnnl::reorder::primitive_desc(onednn::engine(), xs, onednn::engine(), x));
    }
    return p;
}

onednn::PlanCache<Plan>& plan_cache() {
    static onednn::PlanCache<Plan> cache(512);
    return cache;
}

// channels_last: the user's x and y (dx and dy) are channels-last, which the JIT kernels take as they are.
std::shared_ptr<const Plan> plan_for(Pass pass, const Shape& x, const Shape& y, DataType dtype,
                                     const PoolAttrs& a, bool channels_last) {
    onednn::CacheKey key = onednn::base_key(kCacheFamily, dtype);
    onednn::append(key, {static_cast<int64_t>(pass), static_cast<int64_t>(a.kind), a.include_pad ? 1 : 0,
                         channels_last ? 1 : 0});
    for (const Dims* d : {&x.dims(), &y.dims(), &a.kernel, &a.strides, &a.pad_lo, &a.pad_hi})
        onednn::append(key, *d);
    return plan_cache().get(key, [&] {
        if (channels_last)
            return make_plan(pass, onednn::channels_last_desc(x, dtype), onednn::channels_last_desc(y, dtype),
                             a);
        return make_plan(pass, plain_desc(x, dtype), plain_desc(y, dtype), a);
    });
}

void pooling_kernel(const KernelCall& call) {
    const PoolAttrs& a = call.attr<PoolAttrs>();
    // oneDNN's JIT pooling wants dense tensors; strided views would take its reference kernel. The layout
    // follows x, as the backward kernel's does (both see x), so the workspace means the same to both; y
    // is written through a staging tensor when it lies otherwise (x a cropped view of a channels-last map).
    const bool channels_last = is_channels_last(call.inputs[0]);
    const Tensor x = channels_last ? call.inputs[0] : call.inputs[0].contiguous();
    const Tensor y = onednn::output_in_layout(call.outputs[0], channels_last);
    const bool with_workspace = call.outputs.size() > 1;
    try {
        auto plan = plan_for(with_workspace ? Pass::training : Pass::inference, x.shape(), y.shape(),
                             y.dtype(), a, channels_last);
        memory src(plan->src, onednn::engine(), x.raw_data()), dst(plan->dst, onednn::engine(), y.raw_data());
        std::unordered_map<int, memory> args;
        if (plan->staged) {
            memory src_blk(plan->src_blk, onednn::engine(),
                           onednn::scratch(kSlotBlockedSrc, plan->src_blk.get_size()));
            memory dst_blk(plan->dst_blk, onednn::engine(),
                           onednn::scratch(kSlotBlockedDst, plan->dst_blk.get_size()));
            plan->in.execute(onednn::stream(), src, src_blk);
            args.insert({DNNL_ARG_SRC, src_blk});
            args.insert({DNNL_ARG_DST, dst_blk});
        } else {
            args.insert({DNNL_ARG_SRC, src});
            args.insert({DNNL_ARG_DST, dst});
        }
        if (with_workspace) {
            const int64_t bytes = static_cast<int64_t>(plan->workspace.get_size());
            call.outputs[1] = Tensor::empty(Shape{bytes}, DataType::u8, y.device());
            args.insert(
                {DNNL_ARG_WORKSPACE, memory(plan->workspace, onednn::engine(), call.outputs[1].raw_data())});
        }
        onednn::add_scratchpad(args, plan->scratchpad, kSlotScratchpad);
        plan->prim.execute(onednn::stream(), args);
        if (plan->staged) plan->out.execute(onednn::stream(), args.at(DNNL_ARG_DST), dst);
        onednn::stream().wait();
        if (!y.shares_storage(call.outputs[0])) call.outputs[0].copy_from(y);
    } catch (const dnnl::error& e) {
        onednn::rethrow("pooling", e);
    }
}

void pooling_backward_kernel(const KernelCall& call) {
    const PoolAttrs& a = call.attr<PoolAttrs>();
    // The forward's layout, decided by x as there, which the workspace was written for.
    const bool channels_last = is_channels_last(call.inputs[1]);
    const Tensor dx = onednn::output_in_layout(call.outputs[0], channels_last);
    const Tensor dy = channels_last ? onednn::as_channels_last(call.inputs[0]) : call.inputs[0].contiguous();
    const Tensor& workspace = call.inputs[2];
    try {
        auto plan = plan_for(Pass::backward, dx.shape(), dy.shape(), dx.dtype(), a, channels_last);
        memory diff_dst(plan->dst, onednn::engine(), dy.raw_data()),
            diff_src(plan->src, onednn::engine(), dx.raw_data());
        std::unordered_map<int, memory> args;
        if (plan->staged) {
            memory dst_blk(plan->dst_blk, onednn::engine(),
                           onednn::scratch(kSlotBlockedDst, plan->dst_blk.get_size()));
            memory src_blk(plan->src_blk, onednn::engine(),
                           onednn::scratch(kSlotBlockedSrc, plan->src_blk.get_size()));
            plan->in.execute(onednn::stream(), diff_dst, dst_blk);
            args.insert({DNNL_ARG_DIFF_DST, dst_blk});
            args.insert({DNNL_ARG_DIFF_SRC, src_blk});
        } else {
            args.insert({DNNL_ARG_DIFF_DST, diff_dst});
            args.insert({DNNL_ARG_DIFF_SRC, diff_src});
        }
        const size_t bytes = plan->workspace.get_size();
        if (bytes > 0) {
            CTK_CHECK(workspace.defined() && static_cast<size_t>(workspace.numel()) == bytes, ValueError,
                      "pooling_backward: workspace ", workspace.to_string(), " does not hold the ", bytes,
                      " bytes that pooling(training=true) of x ", dx.shape().to_string(), " returns");
            args.insert(
                {DNNL_ARG_WORKSPACE, memory(plan->workspace, onednn::engine(), workspace.raw_data())});
        }
        onednn::add_scratchpad(args, plan->scratchpad, kSlotScratchpad);
        plan->prim.execute(onednn::stream(), args);
        if (plan->staged) plan->out.execute(onednn::stream(), args.at(DNNL_ARG_DIFF_SRC), diff_src);
        onednn::stream().wait();
        if (!dx.shares_storage(call.outputs[0])) call.outputs[0].copy_from(dx);
    } catch (const dnnl::error& e) {
        onednn::rethrow("pooling_backward", e);
    }
}

}  // namespace

void register_pooling(KernelTable& t) {
    t.add(OpKind::pooling, DeviceType::cpu, DataType::f32, pooling_kernel);
    t.add(OpKind::pooling_backward, DeviceType::cpu, DataType::f32, pooling_backward_kernel);
    t.add(OpKind::pooling, DeviceType::cpu, DataType::bf16, onednn::bf16_kernel<pooling_kernel>());
    t.add(OpKind::pooling_backward, DeviceType::cpu, DataType::bf16,
          onednn::bf16_kernel<pooling_backward_kernel>());
    t.add(OpKind::pooling, DeviceType::cpu, DataType::f16, onednn::via_f32<pooling_kernel>);
    t.add(OpKind::pooling_backward, DeviceType::cpu, DataType::f16, onednn::via_f32<pooling_backward_kernel>);
    register_reference_pooling(t);
}

}  // namespace ctk::cpu
