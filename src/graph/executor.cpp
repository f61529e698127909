// Executes graphs: compiles a root Function's graph into a Plan once (blocks inlined, placeholders
// resolved, loops rejected), then runs forward over the steps and backward in reverse, accumulating
// gradients per value slot. Values not needed for backward are released after their last reader.
#include "graph/executor.h"

#include <atomic>
#include <unordered_set>

#include "ctk/ops.h"

namespace ctk {

namespace detail {

namespace {
std::atomic<uint64_t> g_generation{1};
}
uint64_t graph_generation() {
    return g_generation.load();
}
void bump_graph_generation() {
    ++g_generation;
}

int Plan::slot(const Variable& v) const {
    auto it = slot_of.find(v.impl());
    return it == slot_of.end() ? -1 : it->second;
}

namespace {

std::string function_label(const Function& f) {
    return f.op_name() + " '" + (f.name().empty() ? f.uid() : f.name()) + "'";
}

class PlanBuilder {
public:
    explicit PlanBuilder(Plan& plan) : plan_(plan) {}

    int visit(const Variable& v) {
        auto it = plan_.slot_of.find(v.impl());
        if (it != plan_.slot_of.end()) return it->second;
        if (v.is_placeholder()) {
            auto b = bound_.find(v.impl());
            CTK_CHECK(
                b != bound_.end(), ValueError, v.to_string(),
                " is not bound: replace it (replace_placeholders, or call the Function on arguments) first");
            return alias(v, visit(b->second));
        }
        FunctionPtr f = v.owner();
        if (!f) {
            const int s = new_slot(v);
            plan_.leaves.push_back(s);
            return s;
        }
        CTK_CHECK(!in_progress_.count(f.get()), ValueError, "the graph has a loop through ",
                  function_label(*f), " with no past_value/future_value delay in it");
        in_progress_.insert(f.get());
        int result;
        if (f->is_block()) {
            for (const auto& [inner, outer] : f->block_arguments_mapping()) bound_[inner.impl()] = outer;
            result = alias(v, visit(f->block_root()->outputs()[static_cast<size_t>(v.output_index())]));
        } else {
            Step step;
            step.fn = f.get();
            step.def = &op_def(f->op());
            step.where = function_label(*f);
            for (const Variable& in : f->inputs()) step.in.push_back(visit(in));
            for (const Variable& out : f->outputs()) step.out.push_back(new_slot(out));
            plan_.steps.push_back(std::move(step));
            result = plan_.slot_of.at(v.impl());
        }
        in_progress_.erase(f.get());
        return result;
    }

private:
    int new_slot(const Variable& v) {
        const int s = static_cast<int>(plan_.slot_vars.size());
        plan_.slot_vars.push_back(v);
        plan_.slot_of[v.impl()] = s;
        return s;
    }
    int alias(const Variable& v, int s) {
        plan_.slot_of[v.impl()] = s;
        return s;
    }
    Plan& plan_;
    std::unordered_map<const void*, Variable> bound_;
    std::unordered_set<const void*> in_progress_;
};

std::shared_ptr<Plan> build_plan(const std::vector<Variable>& outputs) {
    auto plan = std::make_shared<Plan>();
    plan->generation = graph_generation();
    PlanBuilder builder(*plan);
    for (const Variable& v : outputs) plan->requested.push_back(builder.visit(v));
    plan->last_use.assign(plan->slot_vars.size(), -1);
    for (size_t i = 0; i < plan->steps.size(); ++i)
        for (int s : plan->steps[i].in) plan->last_use[static_cast<size_t>(s)] = static_cast<int>(i);
    return plan;
}

// Checks an argument's value against its variable and converts its dtype if needed.
Value bind_argument(const Variable& var, const Value& value) {
    CTK_CHECK(value.defined(), ValueError, "no data given for ", var.to_string());
    Tensor data = value.data();
    const int dyn = var.dynamic_rank();
    const Dims& shape = var.shape();
    auto describe = [&] { return "data of shape " + data.shape().to_string() + " for " + var.to_string(); };
    CTK_CHECK(data.rank() == dyn + static_cast<int>(shape.size()), ShapeError, describe(), ": expected ", dyn,
              " leading dynamic axes (", detail::dynamic_axes_string(var.dynamic_axes()),
              ") and the sample shape ", detail::static_shape_string(shape));
    for (size_t i = 0; i < shape.size(); ++i)
        CTK_CHECK(shape[i] == kFreeDim || shape[i] == data.dim(dyn + static_cast<int>(i)), ShapeError,
                  describe(), ": sample dim ", i, " is ", data.dim(dyn + static_cast<int>(i)), ", expected ",
                  shape[i]);
    if (var.has_sequence_axis() && value.layout()) {
        const SequenceLayout& l = *value.layout();
        CTK_CHECK(l.num_sequences() == data.dim(0) && l.max_length() == data.dim(1), ShapeError, describe(),
                  ": its sequence layout has ", l.num_sequences(), " sequences of at most ", l.max_length(),
                  " frames");
    }
    CTK_CHECK(is_floating(data.dtype()), TypeError, describe(), ": dtype ", dtype_name(data.dtype()),
              " is not floating-point");
    if (data.dtype() != var.dtype()) data = data.to(var.dtype());
    if (!var.has_sequence_axis()) return Value(data);
    // Padding is zeroed once here, so that no op ever sees garbage (NaN, inf) in padded frames.
    return Value(Value(data, value.layout()).masked_data(0.0), value.layout());
}

int64_t bytes_of(const Value& v) {
    return v.defined() ? v.data().numel() * static_cast<int64_t>(v.data().element_size()) : 0;
}

}  // namespace

}  // namespace detail

namespace {

std::shared_ptr<detail::Plan> plan_for(
    const Function& f, std::map<std::vector<const void*>, std::shared_ptr<detail::Plan>>& cache,
    const std::vector<Variable>& outputs) {
    std::vector<const void*> key;
    for (const Variable& v : outputs) key.push_back(v.impl());
    auto it = cache.find(key);
    if (it != cache.end() && it->second->generation == detail::graph_generation()) return it->second;
    (void)f;
    auto plan = detail::build_plan(outputs);
    cache[key] = plan;
    return plan;
}

}  // namespace

std::shared_ptr<BackPropState> Function::forward(const ValueMap& arguments, ValueMap& outputs,
                                                 const std::vector<Variable>& retain_for, bool is_training) {
    std::vector<Variable> wanted;
    for (const auto& [v, value] : outputs) wanted.push_back(v);
    if (wanted.empty()) wanted = this->outputs();
    // A stable order for the plan cache key.
    std::sort(wanted.begin(), wanted.end(),
              [](const Variable& a, const Variable& b) { return a.uid() < b.uid(); });
    for (const Variable& v : retain_for)
        if (std::find(wanted.begin(), wanted.end(), v) == wanted.end()) wanted.push_back(v);
    const bool keep_all = !retain_for.empty();

    auto state = std::make_shared<BackPropState>();
    state->plan_ = plan_for(*this, plans_, wanted);
    state->function_ = this;
    state->training_ = is_training;
    const detail::Plan& plan = *state->plan_;
    for (const auto& [v, value] : arguments)
        CTK_CHECK(plan.slot(v) >= 0 || !v.is_input(), ValueError, "forward: ", v.to_string(),
                  " is not an argument of this graph");
    auto& values = state->values_;
    values.assign(plan.slot_vars.size(), Value());
    state->saved_.assign(plan.steps.size(), {});
    for (int s : plan.leaves) {
        const Variable& v = plan.slot_vars[static_cast<size_t>(s)];
        if (v.is_input()) {
            auto it = arguments.find(v);
            CTK_CHECK(it != arguments.end(), ValueError, "forward: no value given for argument ",
                      v.to_string());
            values[static_cast<size_t>(s)] = detail::bind_argument(v, it->second);
        } else {
            values[static_cast<size_t>(s)] = Value(v.value());
        }
    }
    std::vector<bool> is_requested(values.size(), false);
    for (int s : plan.requested) is_requested[static_cast<size_t>(s)] = true;
    int64_t live = 0;
    for (size_t i = 0; i < plan.steps.size(); ++i) {
        const detail::Step& step = plan.steps[i];
        std::vector<Value> ins;
        for (int s : step.in) ins.push_back(values[static_cast<size_t>(s)]);
        std::vector<Value> outs;
        auto inputs = step.fn->inputs();
        detail::ForwardContext ctx{step.fn->attributes(),
                                   ins,
                                   inputs,
                                   outs,
                                   state->saved_[i],
                                   is_training,
                                   keep_all,
                                   detail::FunctionAccess::rng_offset(*step.fn),
                                   step.where};
        step.def->forward(ctx);
        CTK_CHECK(outs.size() == step.out.size(), Error, step.where, ": produced ", outs.size(),
                  " outputs, expected ", step.out.size());
        for (size_t k = 0; k < outs.size(); ++k) {
            const Variable& ov = plan.slot_vars[static_cast<size_t>(step.out[k])];
            Value out = outs[k];
            if (ov.has_sequence_axis() && !out.has_layout())
                for (size_t j = 0; j < ins.size(); ++j)
                    if (inputs[j].has_sequence_axis() && ins[j].has_layout()) {
                        out = Value(out.data(), ins[j].layout());
                        break;
                    }
            const Tensor& d = out.data();
            const int dyn = ov.dynamic_rank();
            bool ok = d.rank() == dyn + ov.rank();
            for (int a = 0; ok && a < ov.rank(); ++a)
                ok = ov.shape()[static_cast<size_t>(a)] < 0 ||
                     ov.shape()[static_cast<size_t>(a)] == d.dim(dyn + a);
            CTK_CHECK(ok, ShapeError, step.where, ": computed data of shape ", d.shape().to_string(), " for ",
                      ov.to_string(), " (a shape rule and its kernel disagree)");
            live += detail::bytes_of(out);
            values[static_cast<size_t>(step.out[k])] = std::move(out);
        }
        state->peak_bytes_ = std::max(state->peak_bytes_, live);
        if (!keep_all)
            for (int s : step.in)
                if (plan.last_use[static_cast<size_t>(s)] == static_cast<int>(i) &&
                    !is_requested[static_cast<size_t>(s)] &&
                    plan.slot_vars[static_cast<size_t>(s)].is_output()) {
                    live -= detail::bytes_of(values[static_cast<size_t>(s)]);
                    values[static_cast<size_t>(s)] = Value();
                }
    }
    for (auto& [v, value] : outputs) {
        const int s = plan.slot(v);
        value = values[static_cast<size_t>(s)];
    }
    return state;
}

ValueMap Function::eval(const ValueMap& arguments, const std::vector<Variable>& outputs) {
    ValueMap out;
    for (const Variable& v : outputs.empty() ? this->outputs() : outputs) out.emplace(v, Value());
    forward(arguments, out, {}, false);
    return out;
}

ValueMap Function::backward(const BackPropState& state, const ValueMap& root_gradients,
                            const std::vector<Variable>& wrt) {
    CTK_CHECK(state.plan_ != nullptr, ValueError, "backward: the state comes from no forward call");
    const detail::Plan& plan = *state.plan_;
    const auto& values = state.values_;
    std::vector<Tensor> grads(values.size());
    std::vector<bool> leads(values.size(), false), wanted(values.size(), false);
    for (const Variable& v : wrt) {
        const int s = plan.slot(v);
        CTK_CHECK(s >= 0, ValueError, "backward: ", v.to_string(),
                  " is not part of the graph that forward ran");
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
        grads[static_cast<size_t>(s)] = Value(g.data().to(val.data().dtype()), val.layout()).masked_data(0.0);
    }
    // Backward rules see operands with padded frames zeroed: a padded frame computed from zeros can
    // still be inf (log(0)) and would turn a zero gradient into NaN inside a product over frames.
    std::vector<Value> padded_zeroed(values.size());
    auto zero_padded = [&](int s) -> const Value& {
        const Value& v = values[static_cast<size_t>(s)];
        if (!v.defined() || !v.has_layout() || !v.layout()->has_padding()) return v;
        Value& z = padded_zeroed[static_cast<size_t>(s)];
        if (!z.defined()) z = Value(v.masked_data(0.0), v.layout());
        return z;
    };
    for (const detail::Step& step : plan.steps) {
        if (!step.def->backward) continue;
        bool any = false;
        for (int s : step.in) any = any || leads[static_cast<size_t>(s)];
        if (any)
            for (int s : step.out) leads[static_cast<size_t>(s)] = true;
    }
    for (size_t i = plan.steps.size(); i-- > 0;) {
        const detail::Step& step = plan.steps[i];
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
            std::vector<Value> ins, outs;
            for (int s : step.in) ins.push_back(zero_padded(s));
            for (int s : step.out) outs.push_back(zero_padded(s));
            for (size_t k = 0; k < outs.size(); ++k)
                if (!outs[k].defined() && out_grads[k].defined())
                    CTK_THROW(ValueError, "backward: ", step.where,
                              " kept no values (forward ran without retain_for)");
            std::vector<Tensor> in_grads(ins.size());
            auto inputs = step.fn->inputs();
            detail::BackwardContext ctx{step.fn->attributes(), ins,   inputs,   outs,      out_grads,
                                        state.saved_[i],       needs, in_grads, step.where};
            step.def->backward(ctx);
            for (size_t j = 0; j < ins.size(); ++j) {
                if (!needs[j] || !in_grads[j].defined()) continue;
                Tensor g = in_grads[j];
                CTK_CHECK(g.shape() == ins[j].data().shape(), ShapeError, step.where, ": gradient of shape ",
                          g.shape().to_string(), " for operand ", j, " of shape ",
                          ins[j].data().shape().to_string());
                if (ins[j].has_layout()) g = Value(g, ins[j].layout()).masked_data(0.0);
                Tensor& acc = grads[static_cast<size_t>(step.in[j])];
                acc = acc.defined() ? plus(acc, g) : g;
            }
        }
        for (int s : step.out)
            if (!wanted[static_cast<size_t>(s)]) grads[static_cast<size_t>(s)] = Tensor();
    }
    ValueMap result;
    for (const Variable& v : wrt) {
        const int s = plan.slot(v);
        const Value& val = values[static_cast<size_t>(s)];
        Tensor g = grads[static_cast<size_t>(s)];
        if (!g.defined()) g = Tensor::zeros(val.data().shape(), val.data().dtype(), val.data().device());
        result.emplace(v, Value(g, val.layout()));
    }
    return result;
}

ValueMap Function::grad(const ValueMap& arguments, const std::vector<Variable>& wrt, const Variable& of) {
    Variable root = of.defined() ? of : output();
    ValueMap outs{{root, Value()}};
    auto state = forward(arguments, outs, {root}, false);
    const Value& y = outs.at(root);
    Tensor ones = Tensor::ones(y.data().shape(), y.data().dtype(), y.data().device());
    return backward(*state, {{root, Value(ones, y.layout())}}, wrt);
}

}  // namespace ctk
