// Executes graphs: compiles a root Function's graph into a Plan once (blocks inlined, placeholders
// resolved, loops rejected), then runs forward over the steps and backward in reverse, accumulating
// gradients per value slot. Values not needed for backward are released after their last reader.
#include "graph/executor.h"
#include "graph/fused_loop.h"
#include "graph/plan_cache.h"

#include <atomic>
#include <limits>
#include <map>
#include <mutex>

#include "ctk/core/cuda.h"
#include "ctk/core/op_profile.h"
#include "ctk/graph/bind.h"
#include "ctk/graph/program.h"
#include "ctk/kernels/tensor_ops.h"

namespace ctk {

namespace detail {

namespace {

int64_t bytes_of(const Value& v) {
    return v.defined() ? v.data().numel() * static_cast<int64_t>(v.data().element_size()) : 0;
}

std::atomic<bool> g_poison_unread{false};

// One NaN element per dtype and device, shared by every released value. While a CUDA Graph records, a
// marker of the recording's own (its memory is the graph's, and its fill runs only at replay).
Tensor released_marker(DataType dtype, Device device) {
    if (device.is_cuda() && cuda::recording_on_this_thread())
        return Tensor::full(Shape{}, std::numeric_limits<double>::quiet_NaN(), dtype, device);
    static std::mutex mutex;
    static std::map<std::pair<int, std::string>, Tensor>* markers =
        new std::map<std::pair<int, std::string>, Tensor>;
    std::lock_guard<std::mutex> lock(mutex);
    Tensor& m = (*markers)[{static_cast<int>(dtype), device.to_string()}];
    if (!m.defined()) m = Tensor::full(Shape{}, std::numeric_limits<double>::quiet_NaN(), dtype, device);
    return m;
}

// A value whose data backward never reads, released: its shape, dtype and layout stay (gradients are
// shaped by them), its data is one shared NaN, so a rule that reads it anyway gives NaN, not garbage.
Value released(const Value& v) {
    const Tensor& d = v.data();
    return Value(released_marker(d.dtype(), d.device()).broadcast_to(d.shape()), v.layout());
}
bool is_released(const Value& v) {
    if (!v.defined()) return false;
    const Tensor& d = v.data();
    for (int i = 0; i < d.rank(); ++i)  // cheap rejection first: a released value has only zero strides
        if (d.strides()[static_cast<size_t>(i)] != 0 && d.dim(i) != 1) return false;
    return d.shares_storage(released_marker(d.dtype(), d.device()));
}

// Runs the deferred side effects of a finished evaluation (assign), in execution order. Loops never
// hold such steps (they are not frame-local).
void commit_side_effects(const Plan& plan, const std::vector<std::vector<std::vector<Tensor>>>& saved) {
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        const Step& step = plan.steps[i];
        if (!step.def->commit) continue;
        std::vector<Variable> resolved;
        for (int s : step.in) resolved.push_back(plan.slot_vars[static_cast<size_t>(s)]);
        static const std::vector<Tensor> kNone;
        const std::vector<Tensor>& kept = saved[i].empty() ? kNone : saved[i][0];
        step.def->commit(CommitContext{resolved, kept, step.where});
    }
}

// The leaves that a deferred side effect will overwrite, so that values handed out alias none of them.
std::vector<Tensor> committed_leaf_values(const Plan& plan) {
    std::vector<Tensor> out;
    for (const Step& step : plan.steps)
        if (step.def->commit)
            for (int s : step.in) {
                const Variable& v = plan.slot_vars[static_cast<size_t>(s)];
                if (v.is_parameter() || v.is_constant()) out.push_back(v.value());
            }
    return out;
}

}  // namespace

void set_poison_unread_values(bool on) {
    g_poison_unread = on;
}
bool poison_unread_values() {
    return g_poison_unread;
}

}  // namespace detail

namespace {

using detail::Loop;
using detail::Plan;
using detail::Step;

Tensor frame(const Tensor& t, int64_t f) {
    return t.slice(1, f, f + 1);
}

// [N, 1, 1, ...] (rank `rank`): 1 where frame `f` is a real frame of its sequence.
Tensor frame_mask(const SequenceLayout* layout, int64_t n, int64_t f, int rank, DataType dtype,
                  Device device) {
    Dims dims{n, 1};
    dims.resize(static_cast<size_t>(rank), 1);
    if (layout == nullptr) return Tensor::ones(Shape(dims), dtype, device);
    // A column of the layout's mask, which is built (and uploaded) once per dtype and device: a recurrent
    // loop asks for a frame's mask per step and frame, forward and backward.
    if (layout->num_sequences() == n && f < layout->max_length())
        return layout->mask(dtype, device).slice(1, f, f + 1).reshape(dims);
    Tensor m = Tensor::empty(Shape{n}, DataType::f64);
    for (int64_t s = 0; s < n; ++s)
        m.data<double>()[s] = f < layout->lengths()[static_cast<size_t>(s)] ? 1.0 : 0.0;
    return m.to(dtype).to(device).reshape(dims);
}

// t with the frames the mask [N, 1, 1...] marks as padding zeroed; the mask takes t's rank (the
// operands of one op in a loop can have ranks other than its output's: splice of a vector and a
// [1 x 1 x n] attention result).
Tensor masked(const Tensor& t, const Tensor& mask) {
    Tensor m = mask;
    if (mask.rank() != t.rank() && t.rank() >= 2) {
        Dims dims{mask.shape()[0], 1};
        dims.resize(static_cast<size_t>(t.rank()), 1);
        m = mask.reshape(dims);
    }
    return element_select(m, t, Tensor::full(Shape{}, 0.0, t.dtype(), t.device()));
}

void accumulate(Tensor& acc, const Tensor& g) {
    acc = acc.defined() ? plus(acc, g) : g;
}

void accumulate_frame(Tensor& acc, const Value& value, int64_t f, const Tensor& g) {
    if (!acc.defined())
        acc = Tensor::zeros(value.data().shape(), value.data().dtype(), value.data().device());
    Tensor view = frame(acc, f);
    view.copy_from(plus(view, g));
}

}  // namespace

namespace {

struct LoopFrames {
    int64_t n = 0, frames = 0;
    std::shared_ptr<const SequenceLayout> layout;
};

// The frame count and layout of a loop, from its sequence operands that come from outside it.
LoopFrames loop_frames(const Plan& plan, const Loop& loop, const std::vector<Value>& values) {
    std::vector<bool> inside(plan.slot_vars.size(), false);
    for (int k = 0; k < loop.count; ++k)
        for (int s : plan.steps[static_cast<size_t>(loop.first + k)].out)
            inside[static_cast<size_t>(s)] = true;
    for (int k = 0; k < loop.count; ++k)
        for (int s : plan.steps[static_cast<size_t>(loop.first + k)].in) {
            const Value& v = values[static_cast<size_t>(s)];
            if (inside[static_cast<size_t>(s)] ||
                !plan.slot_vars[static_cast<size_t>(s)].has_sequence_axis() || !v.defined())
                continue;
            return {v.data().dim(0), v.data().dim(1), v.layout()};
        }
    CTK_THROW(ValueError, "the recurrent loop through ", plan.steps[static_cast<size_t>(loop.first)].where,
              " has no sequence operand from outside the loop to step over");
}

int64_t delay_offset(const Step& step) {
    return step.fn->attributes().get<int64_t>("offset");
}

void run_loop_forward(const Plan& plan, const Loop& loop, std::vector<Value>& values,
                      std::vector<std::vector<std::vector<Tensor>>>& saved, bool training, bool keep,
                      Device device) {
    const LoopFrames lf = loop_frames(plan, loop, values);
    std::vector<Tensor> buffers(plan.slot_vars.size());
    for (int64_t i = 0; i < lf.frames; ++i) {
        const int64_t t = loop.backward_in_time ? lf.frames - 1 - i : i;
        for (int k = 0; k < loop.count; ++k) {
            const size_t si = static_cast<size_t>(loop.first + k);
            const Step& step = plan.steps[si];
            std::vector<Value> outs;
            const std::vector<Variable>& inputs = step.in_vars;
            if (step.def->delay_direction != 0) {
                const Variable& ov = plan.slot_vars[static_cast<size_t>(step.out[0])];
                Dims dims{lf.n, 1};
                for (int64_t d : ov.shape()) {
                    CTK_CHECK(d >= 0, ShapeError, step.where,
                              ": a delay inside a recurrent loop needs a known sample shape, got ",
                              ov.to_string());
                    dims.push_back(d);
                }
                const Value& x = values[static_cast<size_t>(step.in[0])];
                Tensor init = detail::delay_initial_frame(inputs[1], values[static_cast<size_t>(step.in[1])],
                                                          dims, step.def->delay_direction < 0);
                const int64_t off = delay_offset(step);
                const int64_t src = step.def->delay_direction < 0 ? t - off : t + off;
                Tensor y = Tensor::empty(Shape(dims), ov.dtype(), init.device());
                if (src < 0 || src >= lf.frames) {
                    y.copy_from(init);
                    if (src < 0 && step.def->delay_direction < 0 && lf.layout &&
                        lf.layout->has_start_flags()) {
                        const Tensor& carry = detail::checked_carry(plan, si, *lf.layout, y, step.where);
                        for (int64_t q = 0; q < lf.n; ++q)
                            if (lf.layout->continues(q) && off + src >= 0)
                                y.slice(0, q, q + 1)
                                    .copy_from(carry.slice(0, q, q + 1).slice(1, off + src, off + src + 1));
                    }
                } else if (step.def->delay_direction < 0) {
                    y.copy_from(frame(x.data(), src));
                } else {  // a future frame exists only while it is inside the sequence
                    Tensor valid = frame_mask(lf.layout.get(), lf.n, src, static_cast<int>(dims.size()),
                                              y.dtype(), y.device());
                    y.copy_from(element_select(valid, frame(x.data(), src), init));
                }
                outs.push_back(Value(y));
            } else {
                std::vector<Value> ins;
                for (size_t j = 0; j < step.in.size(); ++j) {
                    const Value& v = values[static_cast<size_t>(step.in[j])];
                    ins.push_back(inputs[j].has_sequence_axis() ? Value(frame(v.data(), t)) : v);
                }
                auto& frame_saved = saved[si];
                if (frame_saved.size() < static_cast<size_t>(lf.frames))
                    frame_saved.resize(static_cast<size_t>(lf.frames));
                detail::ForwardContext ctx{step.fn->attributes(),
                                           ins,
                                           inputs,
                                           outs,
                                           frame_saved[static_cast<size_t>(t)],
                                           training,
                                           keep,
                                           detail::FunctionAccess::rng_offset(*step.fn),
                                           step.where,
                                           device};
                step.def->forward(ctx);
            }
            for (size_t o = 0; o < step.out.size(); ++o) {
                const size_t slot = static_cast<size_t>(step.out[o]);
                const Tensor& d = outs[o].data();
                CTK_CHECK(d.rank() >= 2 && d.dim(0) == lf.n && d.dim(1) == 1, ShapeError, step.where,
                          ": inside a recurrent loop it produced ", d.shape().to_string(), " for one frame");
                if (!buffers[slot].defined()) {
                    Dims full = d.shape().dims();
                    full[1] = lf.frames;
                    buffers[slot] = Tensor::zeros(Shape(full), d.dtype(), d.device());
                    values[slot] = Value(buffers[slot], lf.layout);
                }
                Tensor view = frame(buffers[slot], t);
                view.copy_from(d);
            }
        }
    }
    // Padded frames computed from padding hold no meaning: zero, as the fused kernel leaves them.
    if (lf.layout && lf.layout->has_padding())
        for (size_t slot = 0; slot < buffers.size(); ++slot)
            if (buffers[slot].defined()) values[slot] = Value(values[slot].masked_data(0.0), lf.layout);
}

}  // namespace

std::shared_ptr<BackPropState> Function::forward(const ValueMap& arguments, ValueMap& outputs,
                                                 const std::vector<Variable>& retain_for, bool is_training,
                                                 Device device) {
    std::vector<Variable> wanted;
    for (const auto& [v, value] : outputs) wanted.push_back(v);
    if (wanted.empty()) wanted = this->outputs();
    // A stable order for the plan cache key.
    std::sort(wanted.begin(), wanted.end(),
              [](const Variable& a, const Variable& b) { return a.uid() < b.uid(); });
    for (const Variable& v : retain_for)
        if (std::find(wanted.begin(), wanted.end(), v) == wanted.end()) wanted.push_back(v);
    return detail::run_forward(detail::cached_plan(*this, wanted), arguments, outputs, !retain_for.empty(),
                               is_training, device);
}

std::shared_ptr<BackPropState> detail::run_forward(std::shared_ptr<const Plan> plan_ptr,
                                                   const ValueMap& arguments, ValueMap& outputs,
                                                   bool keep_all, bool is_training, Device device) {
    CTK_CHECK(device_available(device), DeviceError, "forward: device ", device.to_string(),
              " is not available here");
    auto state = std::make_shared<BackPropState>();
    const FunctionAccess::ForwardState st = FunctionAccess::forward_state(*state);
    st.plan = std::move(plan_ptr);
    st.training = is_training;
    st.device = device;
    const Plan& plan = *st.plan;
    // Values for inputs this graph does not read are ignored, as CNTK's Forward did (a dict built for a
    // whole network can evaluate any part of it).
    auto& values = st.values;
    values.assign(plan.slot_vars.size(), Value());
    st.saved.assign(plan.steps.size(), {});
    for (int s : plan.leaves) {
        const Variable& v = plan.slot_vars[static_cast<size_t>(s)];
        if (v.is_input()) {
            auto it = arguments.find(v);
            CTK_CHECK(it != arguments.end(), ValueError, "forward: no value given for argument ",
                      v.to_string());
            values[static_cast<size_t>(s)] = bind_input(
                v, it->second, BindOptions{.device = device, .reshape_samples = false, .stream = {}});
        } else {
            values[static_cast<size_t>(s)] = Value(detail::value_on(v, device));
        }
    }
    detail::check_shared_sequence_axes(plan, values);
    std::vector<bool> is_requested(values.size(), false);
    for (int s : plan.requested) is_requested[static_cast<size_t>(s)] = true;
    int64_t live = 0;
    size_t i = 0;
    while (i < plan.steps.size()) {
        const Step& step = plan.steps[i];
        size_t unit_end = i + 1;
        if (step.loop >= 0) {
            const Loop& loop = plan.loops[static_cast<size_t>(step.loop)];
            std::shared_ptr<const cell::Run> fused;
            const auto& compiled = plan.fused[static_cast<size_t>(step.loop)];
            if (compiled && fused_recurrence()) {
                detail::OpProfileScope profiled("fused recurrent loop", "forward", device);
                fused = detail::run_fused_forward(plan, *compiled, values, keep_all);
            }
            if (fused) {
                live += fused->kept_bytes();
                if (keep_all) {
                    st.fused_runs.resize(plan.loops.size());
                    st.fused_runs[static_cast<size_t>(step.loop)] = fused;
                }
            } else {
                detail::OpProfileScope profiled("recurrent loop", "forward", device);
                run_loop_forward(plan, loop, values, st.saved, is_training, keep_all, device);
            }
            unit_end = static_cast<size_t>(loop.first + loop.count);
            for (size_t k = i; k < unit_end; ++k) detail::record_delay_carry(plan, k, values);
            for (size_t k = i; k < unit_end; ++k)
                for (int s : plan.steps[k].out) live += detail::bytes_of(values[static_cast<size_t>(s)]);
        } else {
            detail::OpProfileScope profiled(primitive_op_name(step.fn->op()), "forward", device);
            std::vector<Value> ins;
            for (int s : step.in) ins.push_back(values[static_cast<size_t>(s)]);
            std::vector<Value> outs;
            const std::vector<Variable>& inputs = step.in_vars;
            st.saved[i].resize(1);
            detail::ForwardContext ctx{step.fn->attributes(),
                                       ins,
                                       inputs,
                                       outs,
                                       st.saved[i][0],
                                       is_training,
                                       keep_all,
                                       detail::FunctionAccess::rng_offset(*step.fn),
                                       step.where,
                                       device};
            step.def->forward(ctx);
            CTK_CHECK(outs.size() == step.out.size(), Error, step.where, ": produced ", outs.size(),
                      " outputs, expected ", step.out.size());
            if (step.def->delay_direction < 0 && ins[0].has_layout() && ins[0].layout()->has_start_flags()) {
                Tensor y = outs[0].data();
                detail::apply_delay_carry(plan, i, *ins[0].layout(), delay_offset(step), y, step.where);
                detail::record_delay_carry(plan, i, values);
            }
            for (size_t k = 0; k < outs.size(); ++k) {
                const Variable& ov = plan.slot_vars[static_cast<size_t>(step.out[k])];
                Value out = outs[k];
                if (ov.has_sequence_axis() && !out.has_layout())
                    for (size_t j = 0; j < ins.size(); ++j)
                        if (inputs[j].has_sequence_axis() && ins[j].has_layout()) {
                            out = Value(out.data(), ins[j].layout());
                            break;
                        }
                for (size_t j = 0; j < ins.size(); ++j)  // two sequence operands must have the same lengths
                    if (out.has_layout() && inputs[j].dynamic_axes() == ov.dynamic_axes() &&
                        ins[j].has_layout())
                        CTK_CHECK(*ins[j].layout() == *out.layout(), ShapeError, step.where,
                                  ": operands are sequences of different lengths");
                const Tensor& d = out.data();
                const int dyn = ov.dynamic_rank();
                bool ok = d.rank() == dyn + ov.rank();
                for (int a = 0; ok && a < ov.rank(); ++a)
                    ok = ov.shape()[static_cast<size_t>(a)] < 0 ||
                         ov.shape()[static_cast<size_t>(a)] == d.dim(dyn + a);
                CTK_CHECK(ok, ShapeError, step.where, ": computed data of shape ", d.shape().to_string(),
                          " for ", ov.to_string(), " (a shape rule and its kernel disagree)");
                live += detail::bytes_of(out);
                values[static_cast<size_t>(step.out[k])] = std::move(out);
            }
        }
        st.peak_bytes = std::max(st.peak_bytes, live);
        // Liveness: a computed value goes after its last forward reader, unless it was asked for or
        // (when backward may follow) a backward rule reads it.
        for (size_t k = i; k < unit_end; ++k)
            for (int s : plan.steps[k].in) {
                const size_t si = static_cast<size_t>(s);
                Value& v = values[si];
                if (plan.last_use[si] != static_cast<int>(unit_end - 1) || is_requested[si] ||
                    !plan.slot_vars[si].is_output() || !v.defined() ||
                    (keep_all && plan.read_by_backward[si]) || detail::is_released(v))
                    continue;
                live -= detail::bytes_of(v);
                v = keep_all ? detail::released(v) : Value();
            }
        i = unit_end;
    }
    for (auto& [v, value] : outputs) value = values[static_cast<size_t>(plan.slot(v))];
    if (keep_all && detail::poison_unread_values())
        for (size_t s = 0; s < values.size(); ++s)
            if (!plan.read_by_backward[s] && values[s].defined()) values[s] = detail::released(values[s]);
    if (plan.has_side_effects) {
        // An output that is (a view of) a leaf about to be assigned keeps the value this evaluation saw.
        const std::vector<Tensor> overwritten = detail::committed_leaf_values(plan);
        for (auto& [v, value] : outputs)
            for (const Tensor& t : overwritten)
                if (value.defined() && value.data().shares_storage(t)) {
                    value = Value(value.data().clone(), value.layout());
                    break;
                }
        // Without a backward to follow, the evaluation is over (CNTK's PostForwardAndBackProp).
        if (!keep_all) {
            st.committed = true;
            detail::commit_side_effects(plan, st.saved);
        }
    }
    return state;
}

ValueMap Function::eval(const ValueMap& arguments, const std::vector<Variable>& outputs, Device device) {
    ValueMap out;
    for (const Variable& v : outputs.empty() ? this->outputs() : outputs) out.emplace(v, Value());
    forward(arguments, out, {}, false, device);
    return out;
}

namespace {

// Backward through one recurrent loop, frame by frame in the reverse of the forward order.
// `zero_padded(slot)` gives a value with padded frames zeroed; padded frames get no gradient.
template <typename ZeroPadded>
void run_loop_backward(const Plan& plan, const Loop& loop, const std::vector<Value>& values,
                       std::vector<Tensor>& grads, const std::vector<bool>& leads,
                       const std::vector<std::vector<std::vector<Tensor>>>& saved, ZeroPadded&& zero_padded) {
    bool any_grad = false;
    for (int k = 0; k < loop.count; ++k)
        for (int s : plan.steps[static_cast<size_t>(loop.first + k)].out)
            any_grad = any_grad || grads[static_cast<size_t>(s)].defined();
    if (!any_grad) return;
    const Value& some_out = values[static_cast<size_t>(plan.steps[static_cast<size_t>(loop.first)].out[0])];
    const int64_t n = some_out.data().dim(0), frames = some_out.data().dim(1);
    const SequenceLayout* layout = some_out.layout().get();
    for (int64_t i = 0; i < frames; ++i) {
        const int64_t t = loop.backward_in_time ? i : frames - 1 - i;
        for (int k = loop.count - 1; k >= 0; --k) {
            const size_t si = static_cast<size_t>(loop.first + k);
            const Step& step = plan.steps[si];
            const Value& yv = values[static_cast<size_t>(step.out[0])];
            const Tensor& gfull = grads[static_cast<size_t>(step.out[0])];
            if (step.out.size() == 1 && !gfull.defined()) continue;
            const std::vector<Variable>& inputs = step.in_vars;
            if (step.def->delay_direction != 0) {
                const Tensor mask =
                    frame_mask(layout, n, t, yv.data().rank(), yv.data().dtype(), yv.data().device());
                const Tensor g = masked(frame(gfull, t), mask);
                const int xs = step.in[0], is = step.in[1];
                const int64_t off = delay_offset(step);
                const int64_t src = step.def->delay_direction < 0 ? t - off : t + off;
                Tensor to_x = g, to_init;
                if (step.def->delay_direction > 0) {
                    Tensor valid = src < frames ? frame_mask(layout, n, src, g.rank(), g.dtype(), g.device())
                                                : Tensor::zeros(mask.shape(), g.dtype(), g.device());
                    to_x = masked(g, valid);
                    to_init = minus(g, to_x);
                } else if (src < 0) {
                    to_init = detail::without_continuing(
                        g, layout);  // truncated: nothing flows to a previous minibatch
                }
                if (src >= 0 && src < frames && leads[static_cast<size_t>(xs)])
                    accumulate_frame(grads[static_cast<size_t>(xs)], values[static_cast<size_t>(xs)], src,
                                     to_x);
                if (to_init.defined() && leads[static_cast<size_t>(is)])
                    accumulate(grads[static_cast<size_t>(is)],
                               detail::delay_initial_grad(inputs[1], values[static_cast<size_t>(is)], to_init,
                                                          step.def->delay_direction < 0));
                continue;
            }
            if (!step.def->backward) continue;
            std::vector<bool> needs;
            bool any_need = false;
            for (int s : step.in) {
                needs.push_back(leads[static_cast<size_t>(s)]);
                any_need = any_need || leads[static_cast<size_t>(s)];
            }
            if (!any_need) continue;
            const Tensor mask =
                frame_mask(layout, n, t, yv.data().rank(), yv.data().dtype(), yv.data().device());
            std::vector<Value> ins, outs;
            std::vector<Tensor> out_grads;
            for (size_t j = 0; j < step.in.size(); ++j) {
                const Value& v = zero_padded(step.in[j]);
                ins.push_back(inputs[j].has_sequence_axis() ? Value(frame(v.data(), t)) : v);
            }
            for (int s : step.out) {
                outs.push_back(Value(frame(zero_padded(s).data(), t)));
                const Tensor& g = grads[static_cast<size_t>(s)];
                out_grads.push_back(g.defined() ? masked(frame(g, t), mask) : Tensor());
            }
            std::vector<Tensor> in_grads(ins.size());
            detail::BackwardContext ctx{step.fn->attributes(),
                                        ins,
                                        inputs,
                                        outs,
                                        out_grads,
                                        saved[si][static_cast<size_t>(t)],
                                        needs,
                                        in_grads,
                                        step.where};
            step.def->backward(ctx);
            for (size_t j = 0; j < ins.size(); ++j) {
                if (!needs[j] || !in_grads[j].defined()) continue;
                const size_t s = static_cast<size_t>(step.in[j]);
                if (inputs[j].has_sequence_axis())
                    accumulate_frame(grads[s], values[s], t, masked(in_grads[j], mask));
                else
                    accumulate(grads[s], in_grads[j]);
            }
        }
    }
}

}  // namespace

ValueMap Function::backward(const BackPropState& state, const ValueMap& root_gradients,
                            const std::vector<Variable>& wrt) {
    return detail::run_backward(state, root_gradients, wrt, {});
}

ValueMap detail::run_backward(const BackPropState& kept_state, const ValueMap& root_gradients,
                              const std::vector<Variable>& wrt, const GradientReady& on_ready) {
    const FunctionAccess::KeptState state = FunctionAccess::kept(kept_state);
    CTK_CHECK(state.plan != nullptr, ValueError, "backward: the state comes from no forward call");
    const Plan& plan = *state.plan;
    const auto& values = state.values;
    std::vector<Tensor> grads(values.size());
    std::vector<bool> leads(values.size(), false), wanted(values.size(), false);
    std::vector<size_t> wrt_slot;  // per wrt variable
    for (const Variable& v : wrt) {
        const int s = plan.slot(v);
        CTK_CHECK(s >= 0, ValueError, "backward: ", v.to_string(),
                  " is not part of the graph that forward ran");
        wrt_slot.push_back(static_cast<size_t>(s));
        leads[static_cast<size_t>(s)] = wanted[static_cast<size_t>(s)] = true;
    }
    for (const auto& [v, g] : root_gradients) {
        const int s = plan.slot(v);
        CTK_CHECK(s >= 0 && values[static_cast<size_t>(s)].defined(), ValueError, "backward: ", v.to_string(),
                  " was not kept by forward (pass it in retain_for)");
        const Value& val = values[static_cast<size_t>(s)];
        CTK_CHECK(g.data().shape() == val.data().shape(), ShapeError, "backward: root gradient of shape ",
                  g.data().shape().to_string(), " for ", v.to_string(), " whose value has shape ",
                  val.data().shape().to_string());
        grads[static_cast<size_t>(s)] =
            Value(g.data().to(state.device).to(val.data().dtype()), val.layout()).masked_data(0.0);
    }
    // Which values lead to a wanted variable (a fixed point: loops feed back into themselves).
    for (bool changed = true; changed;) {
        changed = false;
        for (const Step& step : plan.steps) {
            if (!step.def->backward && !step.def->delay_direction != 0) continue;
            bool any = false;
            for (int s : step.in) any = any || leads[static_cast<size_t>(s)];
            if (any)
                for (int s : step.out)
                    if (!leads[static_cast<size_t>(s)]) leads[static_cast<size_t>(s)] = changed = true;
        }
    }
    // Backward rules see operands with padded frames zeroed: a padded frame computed from zeros can
    // still be inf (log(0)) and would turn a zero gradient into NaN inside a product over frames.
    std::vector<Value> padded_zeroed(values.size());
    auto zero_padded = [&](int s) -> const Value& {
        const Value& v = values[static_cast<size_t>(s)];
        if (!v.defined() || !v.has_layout() || !v.layout()->has_padding() || v.is_one_hot() ||
            detail::is_released(v))
            return v;  // (one-hot padding is already zero)
        Value& z = padded_zeroed[static_cast<size_t>(s)];
        if (!z.defined()) z = Value(v.masked_data(0.0), v.layout());
        return z;
    };
    // The wanted variables by their first reader, latest first: the order their gradients become final.
    ValueMap result;
    std::vector<size_t> by_first_use;
    for (size_t k = 0; k < wrt.size(); ++k)
        if (!result.count(wrt[k])) {
            result.emplace(wrt[k], Value());
            by_first_use.push_back(k);
        }
    std::stable_sort(by_first_use.begin(), by_first_use.end(), [&](size_t a, size_t b) {
        return plan.first_use[wrt_slot[a]] > plan.first_use[wrt_slot[b]];
    });
    size_t next_ready = 0;
    auto finish = [&](size_t k) {
        const Value& val = values[wrt_slot[k]];
        Tensor g = grads[wrt_slot[k]];
        if (!g.defined()) g = Tensor::zeros(val.data().shape(), val.data().dtype(), val.data().device());
        Value& out = result.at(wrt[k]) = Value(g, val.layout());
        if (on_ready) on_ready(wrt[k], out);
    };
    size_t i = plan.steps.size();
    while (i > 0) {
        const Step& last = plan.steps[i - 1];
        size_t unit_begin = i - 1;
        if (last.loop >= 0) {
            const Loop& loop = plan.loops[static_cast<size_t>(last.loop)];
            const Value& first_out =
                values[static_cast<size_t>(plan.steps[static_cast<size_t>(loop.first)].out[0])];
            const size_t li = static_cast<size_t>(last.loop);
            if (li < state.fused_runs.size() && state.fused_runs[li]) {
                detail::OpProfileScope profiled("fused recurrent loop", "backward", Device::cpu());
                detail::run_fused_backward(*plan.fused[li], *state.fused_runs[li], values, grads, leads);
            } else {
                detail::OpProfileScope profiled(
                    "recurrent loop", "backward",
                    first_out.defined() ? first_out.data().device() : Device::cpu());
                run_loop_backward(plan, loop, values, grads, leads, state.saved, zero_padded);
            }
            unit_begin = static_cast<size_t>(loop.first);
        } else {
            const Step& step = last;
            std::vector<Tensor> out_grads;
            bool any_grad = false;
            for (int s : step.out) {
                out_grads.push_back(grads[static_cast<size_t>(s)]);
                any_grad = any_grad || grads[static_cast<size_t>(s)].defined();
            }
            std::vector<bool> needs;
            bool any_need = false;
            for (int s : step.in) {
                needs.push_back(leads[static_cast<size_t>(s)]);
                any_need = any_need || leads[static_cast<size_t>(s)];
            }
            if (any_grad && any_need && step.def->backward) {
                Device on = Device::cpu();  // where the gradients are
                for (const Tensor& g : out_grads)
                    if (g.defined()) {
                        on = g.device();
                        break;
                    }
                detail::OpProfileScope profiled(primitive_op_name(step.fn->op()), "backward", on);
                std::vector<Value> ins, outs;
                for (int s : step.in) ins.push_back(zero_padded(s));
                for (int s : step.out) outs.push_back(zero_padded(s));
                // A continuing sequence's first frames came from the previous minibatch: their gradient
                // reaches neither that minibatch nor the initial state (CNTK's truncated BPTT).
                if (step.def->delay_direction < 0 && out_grads[0].defined() && ins[0].has_layout() &&
                    ins[0].layout()->has_start_flags()) {
                    const int64_t m = std::min(delay_offset(step), out_grads[0].dim(1));
                    Tensor g = out_grads[0].clone();
                    for (int64_t q = 0; q < ins[0].layout()->num_sequences(); ++q)
                        if (ins[0].layout()->continues(q)) g.slice(0, q, q + 1).slice(1, 0, m).fill(0.0);
                    out_grads[0] = g;
                }
                for (size_t k = 0; k < outs.size(); ++k)
                    if (!outs[k].defined() && out_grads[k].defined())
                        CTK_THROW(ValueError, "backward: ", step.where,
                                  " kept no values (forward ran without retain_for)");
                std::vector<Tensor> in_grads(ins.size());
                const std::vector<Variable>& inputs = step.in_vars;
                static const std::vector<Tensor> kNone;
                const auto& saved = state.saved[unit_begin].empty() ? kNone : state.saved[unit_begin][0];
                detail::BackwardContext ctx{
                    step.fn->attributes(), ins, inputs, outs, out_grads, saved, needs, in_grads, step.where};
                step.def->backward(ctx);
                for (size_t j = 0; j < ins.size(); ++j) {
                    if (!needs[j] || !in_grads[j].defined()) continue;
                    Tensor g = in_grads[j];
                    CTK_CHECK(g.shape() == ins[j].data().shape(), ShapeError, step.where,
                              ": gradient of shape ", g.shape().to_string(), " for operand ", j, " of shape ",
                              ins[j].data().shape().to_string());
                    if (ins[j].has_layout()) g = Value(g, ins[j].layout()).masked_data(0.0);
                    accumulate(grads[static_cast<size_t>(step.in[j])], g);
                }
            }
        }
        for (size_t k = unit_begin; k < i; ++k)
            for (int s : plan.steps[k].out)
                if (!wanted[static_cast<size_t>(s)]) grads[static_cast<size_t>(s)] = Tensor();
        i = unit_begin;
        // Gradients that no earlier step adds to are final.
        while (next_ready < by_first_use.size() &&
               plan.first_use[wrt_slot[by_first_use[next_ready]]] >= static_cast<int>(i))
            finish(by_first_use[next_ready++]);
    }
    while (next_ready < by_first_use.size()) finish(by_first_use[next_ready++]);
    // Forward and backward are over: assignments take effect (once, however many backward calls follow).
    if (plan.has_side_effects && !state.committed) {
        state.committed = true;
        detail::commit_side_effects(plan, state.saved);
    }
    return result;
}

ValueMap Function::grad(const ValueMap& arguments, const std::vector<Variable>& wrt, const Variable& of,
                        Device device) {
    Variable root = of.defined() ? of : output();
    ValueMap outs{{root, Value()}};
    // CNTK runs a gradient's forward in training mode (batch statistics, dropout), as a Trainer does.
    auto state = forward(arguments, outs, {root}, true, device);
    const Value& y = outs.at(root);
    Tensor ones = Tensor::ones(y.data().shape(), y.data().dtype(), y.data().device());
    return backward(*state, {{root, Value(ones, y.layout())}}, wrt);
}

}  // namespace ctk
