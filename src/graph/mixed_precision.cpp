// Mixed precision: the autocast graph rewrite and dynamic loss scaling (declared in
// ctk/graph/mixed_precision.h).
#include "ctk/graph/mixed_precision.h"

#include <cmath>
#include <cstdlib>
#include <map>
#include <unordered_set>
#include <utility>

#include "ctk/graph/graph_ops.h"
#include "graph/graph_internal.h"

namespace ctk {

namespace {

class Rewriter {
public:
    Rewriter(DataType low, VariableMap& map) : low_(low), map_(map) {}

    // Rewrites the graph upstream of `roots` (a block's inner graph shares the map: its placeholders
    // are mapped to the block's rewritten operands, so the block is inlined).
    void rewrite(const std::vector<Variable>& roots) {
        detail::walk(
            roots, false,
            [&](const FunctionPtr& g) {
                if (g->is_composite()) return;
                if (g->is_block()) return inline_block(*g);
                rewrite_primitive(g);
            },
            [&](const Variable& v) { map_.emplace(v, v); });
    }

    // Binds the loops' back edges to the rewritten producers (already in the original dtype, see
    // bind_output: a cast made here would be reachable only through the back edge, which
    // replace_placeholders would then hold strongly, a reference cycle).
    void close_loops(const FunctionPtr& result) {
        if (back_edges_.empty()) return;
        VariableMap close;
        for (const auto& [p, v] : back_edges_) close.emplace(p, map_.at(v));
        result->replace_placeholders(close);
    }

    // `v` in `dtype`: itself, or one cast per (variable, dtype) shared by all its users.
    Variable cast_to(const Variable& v, DataType dtype) {
        if (v.dtype() == dtype) return v;
        auto key = std::make_pair(static_cast<const void*>(v.impl()), dtype);
        auto it = casts_.find(key);
        if (it != casts_.end()) return it->second;
        Variable c = cast(v, dtype)->output();
        casts_.emplace(key, c);
        return c;
    }

private:
    void inline_block(const Function& g) {
        const auto inputs = g.inputs();
        for (size_t i = 0; i < g.block_arguments_mapping().size(); ++i) {
            const Variable& p = g.block_arguments_mapping()[i].first;
            CTK_CHECK(map_.emplace(p, operand(inputs[i])).second, NotImplementedError, "autocast: block ",
                      g.op_name(), " '", g.name(), "' shares its inner graph with another block");
        }
        rewrite(g.block_root()->outputs());
        const auto outer = g.outputs(), inner = g.block_root()->outputs();
        for (size_t i = 0; i < outer.size(); ++i) bind_output(outer[i], map_.at(inner[i]));
    }

    // Maps an original output to its rewrite; the target of a loop's back edge keeps its original dtype
    // (cast back here, on the forward path), so the loop closes without a new node.
    void bind_output(const Variable& original, const Variable& rewritten) {
        const bool loop_target = back_edge_targets_.count(original.impl()) > 0;
        map_.emplace(original, loop_target ? cast_to(rewritten, original.dtype()) : rewritten);
    }

    // An operand's rewritten counterpart; a recurrent loop's back edge (its producer not rewritten
    // yet) becomes a placeholder in the original dtype, bound by close_loops().
    Variable operand(const Variable& v) {
        auto it = map_.find(v);
        if (it != map_.end()) return it->second;
        if (!v.owner()) return map_.emplace(v, v).first->second;
        Variable p =
            v.shape_known() ? placeholder(v.shape(), v.dynamic_axes(), v.name()) : placeholder(v.name());
        p.impl()->dtype = v.dtype();
        back_edges_.emplace_back(p, v);
        back_edge_targets_.insert(v.impl());
        return p;
    }

    void rewrite_primitive(const FunctionPtr& g) {
        const std::vector<Variable> original = g->inputs();
        std::vector<Variable> in;
        for (const Variable& v : original) in.push_back(operand(v));
        detail::Autocast cls = detail::op_def(g->op()).autocast;
        for (size_t i = 0; i < in.size();
             ++i)  // sparse products stay in f32 (a block's operand may be sparse)
            if (original[i].is_sparse() || in[i].is_sparse()) cls = detail::Autocast::keep_f32;
        auto lowerable = [&](size_t i) {
            return original[i].dtype() == DataType::f32 && (cls != detail::Autocast::follow_data || i == 0);
        };
        bool lower = cls == detail::Autocast::low;
        if (cls == detail::Autocast::follow || cls == detail::Autocast::follow_data)
            for (size_t i = 0; i < in.size(); ++i) lower = lower || (lowerable(i) && in[i].dtype() == low_);
        for (size_t i = 0; i < in.size(); ++i) {
            if (!is_floating(original[i].dtype()) || cls == detail::Autocast::any) continue;
            in[i] = cast_to(in[i], lower && lowerable(i) ? low_ : original[i].dtype());
        }
        bool same = true;  // a back edge's placeholder differs from the original operand
        for (size_t i = 0; i < in.size() && same; ++i) same = in[i].impl() == original[i].impl();
        const auto outs = g->outputs();
        if (same) {  // nothing changed upstream: the original node serves both graphs
            for (const Variable& o : outs) map_.emplace(o, o);
            return;
        }
        FunctionPtr copy = detail::FunctionAccess::make_primitive(g->op(), in, g->attributes(), g->name());
        detail::FunctionAccess::rng_offset(*copy) = detail::FunctionAccess::rng_offset(*g);
        const auto new_outs = copy->outputs();
        for (size_t i = 0; i < outs.size(); ++i) bind_output(outs[i], new_outs[i]);
    }

    DataType low_;
    VariableMap& map_;
    std::map<std::pair<const void*, DataType>, Variable> casts_;
    std::vector<std::pair<Variable, Variable>> back_edges_;  // (placeholder, original producer's output)
    std::unordered_set<const void*> back_edge_targets_;      // those producers' outputs
};

}  // namespace

AutocastGraph autocast(const FunctionPtr& f, DataType compute) {
    CTK_CHECK(f != nullptr, ValueError, "autocast: no function");
    CTK_CHECK(compute == DataType::bf16 || compute == DataType::f16, ValueError,
              "autocast: mixed precision computes in bf16 or f16, not ", dtype_name(compute));
    AutocastGraph out;
    Rewriter r(compute, out.map);
    const std::vector<Variable> roots = f->outputs();
    r.rewrite(roots);
    std::vector<Variable> new_roots;
    for (const Variable& v : roots) new_roots.push_back(r.cast_to(out.map.at(v), v.dtype()));
    out.function = f->is_composite() || new_roots.size() > 1
                       ? detail::FunctionAccess::make_composite(new_roots, f->name())
                       : new_roots[0].owner();  // a primitive's single output always has its owner
    r.close_loops(out.function);
    return out;
}

MixedPrecision MixedPrecision::parse(const std::string& text, const std::string& what) {
    if (text == "bf16" || text == "bfloat16") return bf16();
    if (text == "f16" || text == "float16") return f16();
    CTK_CHECK(text.empty() || text == "off", ValueError, what, ": mixed precision is bf16, f16 or off, not '",
              text, "'");
    return {};
}

MixedPrecision MixedPrecision::from_environment() {
    const char* v = std::getenv("CTK_MIXED_PRECISION");
    return v ? parse(v, "CTK_MIXED_PRECISION") : MixedPrecision{};
}

// ---- loss scaling ----

LossScaler::LossScaler(LossScaling options) : o_(options), scale_(options.initial_scale) {
    CTK_CHECK(o_.initial_scale > 0 && std::isfinite(o_.initial_scale), ValueError,
              "LossScaling: initial_scale must be positive and finite, not ", o_.initial_scale);
    CTK_CHECK(o_.growth_factor >= 1 && o_.backoff_factor > 0 && o_.backoff_factor < 1, ValueError,
              "LossScaling: growth_factor must be >= 1 and backoff_factor in (0, 1), not ", o_.growth_factor,
              " and ", o_.backoff_factor);
    CTK_CHECK(o_.growth_interval > 0, ValueError, "LossScaling: growth_interval must be positive, not ",
              o_.growth_interval);
}

void LossScaler::update(bool gradients_finite) {
    if (!gradients_finite) {
        scale_ *= o_.backoff_factor;
        good_steps_ = 0;
        ++skipped_;
        return;
    }
    if (++good_steps_ == o_.growth_interval) {
        // Stay finite in f32: the scaled root gradient is an f32 value.
        if (scale_ * o_.growth_factor < 3.0e38) scale_ *= o_.growth_factor;
        good_steps_ = 0;
    }
}

Dictionary LossScaler::state() const {
    return Dictionary{{"scale", scale_}, {"goodSteps", good_steps_}, {"skippedSteps", skipped_}};
}

void LossScaler::restore(const Dictionary& state) {
    CTK_CHECK(state.contains("scale") && state.contains("goodSteps"), ValueError,
              "loss scaler state needs 'scale' and 'goodSteps'");
    const double s = state.at("scale").as_double();
    CTK_CHECK(s > 0 && std::isfinite(s), ValueError, "loss scaler state: scale ", s, " is not positive");
    scale_ = s;
    good_steps_ = state.at("goodSteps").as_int();
    skipped_ = state.contains("skippedSteps") ? state.at("skippedSteps").as_int() : 0;
}

}  // namespace ctk
