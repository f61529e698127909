// CPU batch normalization (f32, bf16 data with f32 statistics; f16 data through f32, as oneDNN 2.6 has
// no f16 batch norm on CPUs). Per-channel f32 statistics over planes of 8 or more values run on the plain
// layout in plain_batch_norm.cpp, without reorders; the rest through oneDNN. Per-activation statistics
// reuse the per-channel primitive on x viewed as [N, C * spatial, 1, 1]. With 16 or more channels the
// data is reordered into oneDNN's blocked layout (nChw16c) for its JIT kernel; fewer channels run on the
// plain layout. Primitives are cached per shape. f64 is reference_batch_norm.cpp.
#include <cstring>
#include <optional>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/onednn_common.h"
#include "kernels/cpu/plain_batch_norm.h"

namespace ctk::cpu {

void register_reference_batch_norm(KernelTable& t);  // reference_batch_norm.cpp

namespace {

using dnnl::memory;
namespace onednn = ctk::cpu::onednn;

// Scratch slots (see onednn::scratch): the scratchpad and the blocked copies of x, dy and y or dx.
constexpr int kSlotScratchpad = 0, kSlotX = 1, kSlotDy = 2, kSlotOut = 3;
constexpr int64_t kCacheFamily = 3;  // onednn::base_key's family tag for batch normalization
// oneDNN 2.6 has JIT batch norm only for blocked and channels-last layouts; on plain NCHW it runs a
// scalar loop ("ncsp_bnorm") that is ~10x slower. From 16 channels the two reorders cost less than
// that difference (measured on [128, C, 32, 32]: C = 16 takes 5.6 ms instead of 11.2 ms for forward
// plus backward); below, the padding of channel blocks to 16 loses.
constexpr int64_t kMinBlockedChannels = 16;

enum class Pass : int64_t { training = 1, inference = 2, backward = 3 };

struct Plan {
    dnnl::primitive prim;
    memory::desc user, data, stats;  // x (and y, dy, dx) as the user holds it and as the primitive runs it
    std::optional<dnnl::reorder> to_data, to_user;  // absent when the primitive runs on the plain layout
    memory::desc scratchpad;
};

// The dims oneDNN normalizes over: [N, C, H, W] or [N, C, D, H, W] per channel; [N, C * spatial, 1, 1]
// per activation. Other ranks are viewed as 4-D ([N, C, prod(spatial), 1]): oneDNN 2.6 has its JIT
// kernel only for 4-D and 5-D data and runs everything else ([N, C, W] included) on its reference
// loop, which made ResNet-20's batch norms 90 % of a CPU training step.
memory::dims data_dims(const Shape& x, bool spatial) {
    if (spatial && (x.rank() == 4 || x.rank() == 5)) return memory::dims(x.dims().begin(), x.dims().end());
    if (spatial && x.rank() > 2) return {x[0], x[1], x.numel() / (x[0] * x[1]), 1};
    return {x[0], x.numel() / x[0], 1, 1};
}

memory::desc dense_desc(const memory::dims& dims, memory::data_type dt) {
    memory::dims strides(dims.size(), 1);
    for (size_t i = dims.size() - 1; i > 0; --i) strides[i - 1] = strides[i] * dims[i];
    return memory::desc(dims, dt, strides);
}

memory::desc primitive_layout(const memory::dims& dims, memory::data_type dt) {
    using tag = memory::format_tag;
    if (dims[1] < kMinBlockedChannels) return dense_desc(dims, dt);
    const tag blocked = dims.size() == 4 ? tag::nChw16c : tag::nCdhw16c;  // data_dims gives 4-D or 5-D
    return memory::desc(dims, dt, blocked);
}

// channels_last: the user's tensors are channels-last, which oneDNN's JIT kernel takes as they are.
Plan make_plan(Pass pass, const memory::dims& dims, DataType dtype, float epsilon, bool channels_last) {
    using flags = dnnl::normalization_flags;
    const flags scale_shift = flags::use_scale | flags::use_shift;
    const dnnl::primitive_attr attr = onednn::user_scratchpad_attr();
    Plan p;
    p.user = channels_last ? onednn::channels_last_desc(Shape(Dims(dims.begin(), dims.end())), dtype)
                           : dense_desc(dims, onednn::data_type(dtype));
    p.data = channels_last ? p.user : primitive_layout(dims, onednn::data_type(dtype));
    p.stats = memory::desc({dims[1]}, memory::data_type::f32, memory::format_tag::a);
    if (p.data != p.user) {
        const dnnl::engine& e = onednn::engine();
        p.to_data = dnnl::reorder(dnnl::reorder::primitive_desc(e, p.user, e, p.data));
        p.to_user = dnnl::reorder(dnnl::reorder::primitive_desc(e, p.data, e, p.user));
    }
    using fwd = dnnl::batch_normalization_forward;
    if (pass == Pass::inference) {
        const fwd::primitive_desc pd(fwd::desc(dnnl::prop_kind::forward_inference, p.data, epsilon,
                                               scale_shift | flags::use_global_stats),
                                     attr, onednn::engine());
        p.prim = fwd(pd);
        p.scratchpad = pd.scratchpad_desc();
        return p;
    }
    const fwd::primitive_desc train_pd(
        fwd::desc(dnnl::prop_kind::forward_training, p.data, epsilon, scale_shift), attr, onednn::engine());
    if (pass == Pass::training) {
        p.prim = fwd(train_pd);
        p.scratchpad = train_pd.scratchpad_desc();
        return p;
    }
    using bwd = dnnl::batch_normalization_backward;
    const bwd::primitive_desc pd(bwd::desc(dnnl::prop_kind::backward, p.data, p.data, epsilon, scale_shift),
                                 attr, onednn::engine(), train_pd);
    p.prim = bwd(pd);
    p.scratchpad = pd.scratchpad_desc();
    return p;
}

onednn::PlanCache<Plan>& plan_cache() {
    static onednn::PlanCache<Plan> cache(512);
    return cache;
}

// oneDNN keeps statistics and scale/shift in f32 whatever the data type.
Tensor stats_in(const Tensor& t) {
    return t.dtype() == DataType::f32 ? t.contiguous() : t.to(DataType::f32);
}
Tensor stats_out(const Tensor& t) {
    return t.dtype() == DataType::f32 ? t : Tensor::empty(t.shape(), DataType::f32, t.device());
}
void finish_stats(const Tensor& computed, Tensor out) {
    if (!computed.shares_storage(out)) out.copy_from(computed);
}

// A data operand in the primitive's layout: the user's memory, or its blocked copy in scratch.
memory data_in(const Plan& p, const Tensor& t, int slot) {
    memory user(p.user, onednn::engine(), t.raw_data());
    if (!p.to_data) return user;
    memory staged(p.data, onednn::engine(), onednn::scratch(slot, p.data.get_size()));
    p.to_data->execute(onednn::stream(), user, staged);
    return staged;
}
memory data_out(const Plan& p, const Tensor& t) {
    if (!p.to_user) return memory(p.user, onednn::engine(), t.raw_data());
    return memory(p.data, onednn::engine(), onednn::scratch(kSlotOut, p.data.get_size()));
}

// f32 per-channel statistics on the plain layout, without reorders (plain_batch_norm.cpp).
void plain_kernel(const KernelCall& call, Pass pass, const Tensor& x) {
    const float epsilon = static_cast<float>(call.attr<BatchNormAttrs>().epsilon);
    auto in = [&](size_t i) { return call.inputs[i].contiguous(); };
    auto out = [&](size_t i) { return call.outputs[i].data<float>(); };
    if (pass == Pass::training) {
        const Tensor scale = in(1), bias = in(2);
        plain_batch_norm_training(x.data<float>(), scale.data<float>(), bias.data<float>(), epsilon,
                                  x.shape(), out(0), out(1), out(2));
    } else if (pass == Pass::inference) {
        const Tensor scale = in(1), bias = in(2), mean = in(3), var = in(4);
        plain_batch_norm_inference(x.data<float>(), scale.data<float>(), bias.data<float>(),
                                   mean.data<float>(), var.data<float>(), epsilon, x.shape(), out(0));
    } else {
        const Tensor dy = in(1), scale = in(2), mean = in(3), var = in(4);
        plain_batch_norm_backward(x.data<float>(), dy.data<float>(), scale.data<float>(), mean.data<float>(),
                                  var.data<float>(), epsilon, x.shape(), out(0), out(1), out(2));
    }
}

void batch_norm_kernel(const KernelCall& call) {
    const BatchNormAttrs& attrs = call.attr<BatchNormAttrs>();
    const Pass pass = call.op == OpKind::batch_norm_training    ? Pass::training
                      : call.op == OpKind::batch_norm_inference ? Pass::inference
                                                                : Pass::backward;
    // Channels-last activations (4-D and 5-D, per channel: the op allocated y or dx so too) stay so.
    const bool channels_last = is_channels_last(call.inputs[0]) && is_channels_last(call.outputs[0]);
    const Tensor x = channels_last ? call.inputs[0] : call.inputs[0].contiguous();
    const DataType dtype = x.dtype();
    if (!channels_last && dtype == DataType::f32 && plain_batch_norm_fits(x.shape(), attrs.spatial))
        return plain_kernel(call, pass, x);
    const memory::dims dims = data_dims(x.shape(), attrs.spatial);
    const float epsilon = static_cast<float>(attrs.epsilon);
    uint32_t epsilon_bits;
    std::memcpy(&epsilon_bits, &epsilon, sizeof epsilon);
    onednn::CacheKey key = onednn::base_key(kCacheFamily, dtype);
    onednn::append(key,
                   {static_cast<int64_t>(pass), static_cast<int64_t>(epsilon_bits), channels_last ? 1 : 0});
    onednn::append(key, Dims(dims.begin(), dims.end()));
    try {
        auto plan =
            plan_cache().get(key, [&] { return make_plan(pass, dims, dtype, epsilon, channels_last); });
        auto stats = [&](const Tensor& t) { return memory(plan->stats, onednn::engine(), t.raw_data()); };
        const Tensor& out = call.outputs[0];
        std::unordered_map<int, memory> args;
        args.insert({DNNL_ARG_SRC, data_in(*plan, x, kSlotX)});
        memory out_mem = data_out(*plan, out);
        // f32 copies of the per-channel operands (or the operands themselves), alive until the run ends.
        Tensor scale, shift, mean, var, dy, dscale, dbias;
        if (pass == Pass::backward) {
            dy = channels_last ? onednn::as_channels_last(call.inputs[1]) : call.inputs[1].contiguous();
            scale = stats_in(call.inputs[2]), mean = stats_in(call.inputs[3]), var = stats_in(call.inputs[4]);
            dscale = stats_out(call.outputs[1]), dbias = stats_out(call.outputs[2]);
            args.insert({DNNL_ARG_DIFF_DST, data_in(*plan, dy, kSlotDy)});
            args.insert({DNNL_ARG_DIFF_SRC, out_mem});
            args.insert({DNNL_ARG_DIFF_SCALE, stats(dscale)});
            args.insert({DNNL_ARG_DIFF_SHIFT, stats(dbias)});
            // oneDNN 2.6 lists the shift as an input of the backward pass with use_shift and refuses to run
            // without one, though the gradients do not depend on it: any [C] f32 memory will do.
            args.insert({DNNL_ARG_SHIFT, stats(scale)});
        } else {
            scale = stats_in(call.inputs[1]), shift = stats_in(call.inputs[2]);
            if (pass == Pass::training) {
                mean = stats_out(call.outputs[1]), var = stats_out(call.outputs[2]);
            } else {
                mean = stats_in(call.inputs[3]), var = stats_in(call.inputs[4]);
            }
            args.insert({DNNL_ARG_DST, out_mem});
            args.insert({DNNL_ARG_SHIFT, stats(shift)});
        }
        args.insert({DNNL_ARG_SCALE, stats(scale)});
        args.insert({DNNL_ARG_MEAN, stats(mean)});
        args.insert({DNNL_ARG_VARIANCE, stats(var)});
        onednn::add_scratchpad(args, plan->scratchpad, kSlotScratchpad);
        plan->prim.execute(onednn::stream(), args);
        if (plan->to_user) {
            memory user(plan->user, onednn::engine(), out.raw_data());
            plan->to_user->execute(onednn::stream(), out_mem, user);
        }
        onednn::stream().wait();
        if (pass == Pass::training) {
            finish_stats(mean, call.outputs[1]);
            finish_stats(var, call.outputs[2]);
        } else if (pass == Pass::backward) {
            finish_stats(dscale, call.outputs[1]);
            finish_stats(dbias, call.outputs[2]);
        }
    } catch (const dnnl::error& e) {
        onednn::rethrow(op_name(call.op), e);
    }
}

}  // namespace

void register_batch_norm(KernelTable& t) {
    for (OpKind op :
         {OpKind::batch_norm_training, OpKind::batch_norm_inference, OpKind::batch_norm_backward}) {
        t.add(op, DeviceType::cpu, DataType::f32, batch_norm_kernel);
        t.add(op, DeviceType::cpu, DataType::bf16, onednn::bf16_kernel<batch_norm_kernel>());
        t.add(op, DeviceType::cpu, DataType::f16, onednn::via_f32<batch_norm_kernel>);
    }
    register_reference_batch_norm(t);
}

}  // namespace ctk::cpu
