// Functions: construction, shape inference, graph queries and editing (declared in ctk/graph/function.h).
// Execution lives in executor.cpp.
#include <algorithm>
#include <functional>
#include <optional>
#include <unordered_set>

#include "ctk/graph/graph_ops.h"
#include "graph/executor.h"
#include "graph/graph_internal.h"
#include "graph/loop_inference.h"
#include "graph/plan_cache.h"

namespace ctk {

void Attributes::throw_missing(const std::string& key) {
    CTK_THROW(ValueError, "attribute '", key, "' is missing");
}
void Attributes::throw_wrong_type(const std::string& key) {
    CTK_THROW(ValueError, "attribute '", key, "' has another type");
}

Function::~Function() {
    detail::forget_plans(*this);
}

std::string Function::op_name() const {
    if (kind_ == Kind::block) return block_op_name_;
    if (kind_ == Kind::composite) return "Combine";
    if (op_ == PrimitiveOp::user_function) return attributes_.get<std::string>("opName");
    return detail::op_def(op_).cntk_name;
}

void Function::set_attribute(const std::string& name, const AttrValue& value) {
    if (kind_ == Kind::composite && composite_outputs_.size() == 1 && composite_outputs_[0].owner() &&
        composite_outputs_[0].owner().get() != this)
        return composite_outputs_[0].owner()->set_attribute(name, value);
    const std::string who = op_name() + " '" + name_ + "'";
    if (name == "dropoutRate") {
        CTK_CHECK(kind_ == Kind::primitive && op_ == PrimitiveOp::dropout, ValueError, "set_attribute: ", who,
                  " has no dropoutRate (only dropout does)");
        const double* d = std::get_if<double>(&value);
        const int64_t* i = std::get_if<int64_t>(&value);
        CTK_CHECK(d || i, TypeError, "set_attribute: ", who, ": dropoutRate must be a number");
        const double rate = d ? *d : static_cast<double>(*i);
        CTK_CHECK(rate >= 0.0 && rate < 1.0, ValueError, "set_attribute: ", who, ": dropoutRate ", rate,
                  " must be in [0, 1)");
        attributes_.set(name, rate);
        return;
    }
    if (name == "rngSeed") {
        CTK_CHECK(kind_ == Kind::primitive && attributes_.has("rngSeed"), ValueError, "set_attribute: ", who,
                  " has no rngSeed (only dropout and the random ops do)");
        const int64_t* seed = std::get_if<int64_t>(&value);
        CTK_CHECK(seed, TypeError, "set_attribute: ", who, ": rngSeed must be an integer");
        attributes_.set(name, *seed);
        rng_offset_ = 0;  // the new seed's stream from its start
        return;
    }
    CTK_THROW(ValueError, "set_attribute: attribute '", name, "' of ", who,
              " cannot be changed (CNTK allows dropoutRate and rngSeed)");
}

std::vector<Variable> Function::outputs() const {
    if (kind_ == Kind::composite) return composite_outputs_;
    std::vector<Variable> out;
    auto self = std::const_pointer_cast<Function>(shared_from_this());
    for (const auto& d : outputs_) out.emplace_back(d, self);
    return out;
}

Variable Function::output() const {
    auto outs = outputs();
    CTK_CHECK(outs.size() == 1, ValueError, op_name(), " '", name_, "' has ", outs.size(),
              " outputs; pick one from outputs()");
    return outs[0];
}

namespace detail {

void walk(const std::vector<Variable>& roots, bool into_blocks,
          const std::function<void(const FunctionPtr&)>& on_function,
          const std::function<void(const Variable&)>& on_leaf) {
    std::unordered_set<const void*> seen;
    struct Frame {
        FunctionPtr f;
        size_t next = 0;
        std::vector<Variable> deps;
    };
    auto deps_of = [&](const FunctionPtr& f) {
        std::vector<Variable> d = f->is_composite() ? f->outputs() : f->inputs();
        if (into_blocks && f->is_block())
            for (const Variable& v : f->block_root()->outputs()) d.push_back(v);
        return d;
    };
    std::vector<Frame> stack;
    auto push_var = [&](const Variable& v) {
        if (!seen.insert(v.impl()).second) return;
        if (FunctionPtr o = v.owner()) {
            if (seen.insert(o.get()).second) stack.push_back({o, 0, deps_of(o)});
        } else if (on_leaf) {
            on_leaf(v);
        }
    };
    for (const Variable& r : roots) {
        push_var(r);
        while (!stack.empty()) {
            Frame& top = stack.back();
            if (top.next < top.deps.size()) {
                Variable v = top.deps[top.next++];
                push_var(v);
                continue;
            }
            FunctionPtr f = top.f;
            stack.pop_back();
            if (on_function) on_function(f);
        }
    }
}

}  // namespace detail

namespace {
using detail::walk;

std::vector<Variable> roots_of(const Function& f) {
    return f.outputs();
}

std::vector<Variable> leaves(const Function& f, bool include_block_placeholders) {
    std::vector<Variable> out;
    std::unordered_set<const void*> block_placeholders;
    walk(
        roots_of(f), true,
        [&](const FunctionPtr& g) {
            if (g->is_block())
                for (const auto& [inner, outer] : g->block_arguments_mapping())
                    block_placeholders.insert(inner.impl());
        },
        [&](const Variable& v) { out.push_back(v); });
    if (!include_block_placeholders)
        std::erase_if(out, [&](const Variable& v) { return block_placeholders.count(v.impl()) > 0; });
    return out;
}

std::vector<Variable> leaves_of_kind(const Function& f, VariableKind kind) {
    std::vector<Variable> out;
    for (const Variable& v : leaves(f, false))
        if (v.kind() == kind) out.push_back(v);
    return out;
}

}  // namespace

std::vector<Variable> Function::inputs() const {
    if (kind_ == Kind::composite) return leaves(*this, false);
    return inputs_;
}

namespace {
// The declared argument order of a composite first (those still in the graph), then the rest.
std::vector<Variable> in_declared_order(const std::vector<Variable>& declared, std::vector<Variable> found) {
    if (declared.empty()) return found;
    std::vector<Variable> out;
    for (const Variable& d : declared) {
        auto it = std::find(found.begin(), found.end(), d);
        if (it == found.end()) continue;
        out.push_back(d);
        found.erase(it);
    }
    out.insert(out.end(), found.begin(), found.end());
    return out;
}
}  // namespace

std::vector<Variable> Function::arguments() const {
    std::vector<Variable> out;
    for (const Variable& v : leaves(*this, false))
        if (v.is_input() || v.is_placeholder()) out.push_back(v);
    return in_declared_order(argument_order_, std::move(out));
}
std::vector<Variable> Function::parameters() const {
    return leaves_of_kind(*this, VariableKind::parameter);
}
std::vector<Variable> Function::constants() const {
    return leaves_of_kind(*this, VariableKind::constant);
}
std::vector<Variable> Function::placeholders() const {
    return in_declared_order(argument_order_, leaves_of_kind(*this, VariableKind::placeholder));
}
std::vector<Variable> Function::declared_placeholders() const {
    std::vector<Variable> out;
    for (const Variable& v : argument_order_)
        if (v.is_placeholder()) out.push_back(v);
    return out;
}

std::vector<FunctionPtr> Function::find_all_with_name(const std::string& name, bool nested) const {
    std::vector<FunctionPtr> found;
    // Blocks' inner graphs are searched only when nested; the walk then enters them.
    walk(
        roots_of(*this), nested,
        [&](const FunctionPtr& g) {
            if (g->name() == name) found.push_back(g);
        },
        nullptr);
    std::reverse(found.begin(), found.end());  // closest to the root first, as CNTK's search
    return found;
}

namespace {
std::vector<FunctionPtr> random_functions(const Function& f) {
    std::vector<FunctionPtr> out;
    walk(
        roots_of(f), true,
        [&](const FunctionPtr& g) {
            if (g->is_primitive() && g->attributes().has("rngSeed")) out.push_back(g);
        },
        nullptr);
    return out;
}
}  // namespace

std::vector<uint64_t> Function::random_stream_positions() const {
    std::vector<uint64_t> out;
    for (const FunctionPtr& g : random_functions(*this)) out.push_back(g->rng_offset_);
    return out;
}

void Function::set_random_stream_positions(const std::vector<uint64_t>& positions) const {
    auto fs = random_functions(*this);
    CTK_CHECK(fs.size() == positions.size(), ValueError, "set_random_stream_positions: the graph of ",
              to_string(), " has ", fs.size(), " random ops, but ", positions.size(),
              " positions were given");
    for (size_t i = 0; i < fs.size(); ++i) fs[i]->rng_offset_ = positions[i];
}

FunctionPtr Function::find_by_name(const std::string& name, bool nested) const {
    auto all = find_all_with_name(name, nested);
    return all.empty() ? nullptr : all.front();
}

std::string Function::to_string() const {
    std::string s = op_name() + ": ";
    auto outs = outputs();
    for (size_t i = 0; i < outs.size(); ++i) s += (i ? ", " : "") + outs[i].to_string();
    return s;
}

// ---- construction and inference ----

namespace detail {

namespace {
void apply_specs(Function& f, const std::vector<OutputSpec>& specs, bool known) {
    auto& outs = const_cast<std::vector<std::shared_ptr<VariableData>>&>(FunctionAccess::owned_outputs(f));
    if (outs.empty()) {
        for (size_t i = 0; i < specs.size(); ++i) {
            auto d = std::make_shared<VariableData>();
            d->kind = VariableKind::output;
            d->uid = new_uid("Output");
            d->name =
                specs.size() == 1 ? f.name() : (f.name().empty() ? "" : f.name() + "_" + std::to_string(i));
            d->owner = f.weak_from_this();
            d->output_index = static_cast<int>(i);
            outs.push_back(d);
        }
    }
    CTK_CHECK(outs.size() == specs.size(), ShapeError, f.op_name(), " '", f.name(),
              "': output count changed from ", outs.size(), " to ", specs.size(), " on re-inference");
    for (size_t i = 0; i < specs.size(); ++i) {
        outs[i]->shape = specs[i].shape;
        outs[i]->dtype = specs[i].dtype;
        outs[i]->dynamic_axes = specs[i].dynamic_axes;
        outs[i]->shape_known = known;
        outs[i]->needs_gradient = true;
    }
}

std::string describe_inputs(const std::vector<Variable>& inputs) {
    std::string s;
    for (size_t i = 0; i < inputs.size(); ++i) s += (i ? ", " : "") + inputs[i].to_string();
    return s;
}
}  // namespace

namespace {
// CNTK's rule for constants among an op's operands: a floating constant whose dtype differs from the one
// dtype of the other (non-constant) operands is converted to it, so that `x + 1` or a constant array
// keeps working when x turns out float64 (a placeholder bound later, update_signature(np.float64)).
void adopt_operand_dtype(std::vector<Variable>& inputs) {
    std::optional<DataType> others;
    for (const Variable& v : inputs) {
        if (v.is_constant()) continue;
        if (others && *others != v.dtype()) return;  // the op's own check names the mismatch
        others = v.dtype();
    }
    if (!others || !is_floating(*others)) return;
    for (Variable& v : inputs)
        if (v.is_constant() && v.dtype() != *others && is_floating(v.dtype()))
            v = constant(v.value().to(*others), v.name());
}
}  // namespace

void FunctionAccess::reinfer(Function& f, bool allow_partial) {
    if (f.kind_ == Function::Kind::composite) return;
    if (f.kind_ == Function::Kind::block) {
        bool known = true;
        for (const auto& [inner, outer] : f.block_map_) {
            VariableData& p = *inner.impl();
            p.shape = outer.shape();
            p.shape_known = outer.shape_known();
            p.dtype = outer.dtype();
            p.dynamic_axes = outer.dynamic_axes();
            if (allow_partial && !outer.shape_known()) {
                // A loop being closed: the operand's axes, when known, for the guesses inside.
                if (auto axes = loop_axes(outer)) p.dynamic_axes = std::move(*axes);
            }
            known = known && outer.shape_known();
        }
        std::vector<OutputSpec> specs;
        if (known || allow_partial) {
            // A recurrent loop inside (a Recurrence layer), or a loop through this block being closed
            // (allow_partial: some operands still unknown), needs the lenient rounds that close loops;
            // any other inner graph is one strict pass.
            bool has_loop = !known;
            walk(
                f.block_root_->outputs(), false,
                [&](const FunctionPtr& g) { has_loop = has_loop || detail::is_delay(g->op_); }, nullptr);
            if (has_loop) {
                std::string before;
                for (int round = 0; round < 16; ++round) {
                    std::string after;
                    walk(
                        f.block_root_->outputs(), false,
                        [&](const FunctionPtr& g) {
                            reinfer(*g, true);
                            for (const Variable& o : g->outputs()) after += o.to_string();
                        },
                        nullptr);
                    if (after == before) break;
                    before = std::move(after);
                }
            }
            if (known)
                walk(
                    f.block_root_->outputs(), false, [](const FunctionPtr& g) { reinfer(*g); }, nullptr);
            known = true;
        }
        for (const Variable& v : f.block_root_->outputs()) {
            specs.push_back({v.shape(), v.dtype(), v.dynamic_axes()});
            known = known && v.shape_known();
        }
        apply_specs(f, specs, known);
        return;
    }
    const OpDef& def = op_def(f.op_);
    bool known = true;
    for (const Variable& v : f.inputs_) known = known && v.shape_known();
    std::string where = std::string(def.cntk_name) + " '" + (f.name_.empty() ? f.uid_ : f.name_) + "'";
    // Element-wise ops and products only: elsewhere a constant's own dtype can be meant (batch
    // normalization's f32 statistics beside f16 data under mixed precision).
    if (known && (is_elementwise_binary(f.op_) || f.op_ == PrimitiveOp::element_select ||
                  f.op_ == PrimitiveOp::times || f.op_ == PrimitiveOp::transpose_times))
        adopt_operand_dtype(f.inputs_);
    std::vector<Variable> known_inputs;
    for (const Variable& v : f.inputs_)
        if (v.shape_known()) known_inputs.push_back(v);
    // Some operands still unknown (the far end of a recurrent loop being closed): a guess from the
    // known ones (loop_inference.cpp). A binary element-wise op takes the known operands' shape.
    const bool partial = allow_partial && !known && may_guess_from_known_operands(f, known_inputs);
    if (allow_partial && !known && !partial) {
        if (auto guess = guess_loop_outputs(f)) {
            apply_specs(f, *guess, true);
            return;
        }
    }
    if (!known && !partial) {
        // A placeholder of unknown shape upstream: the outputs stay unknown until it is bound.
        std::vector<OutputSpec> specs(f.outputs_.empty() ? 1 : f.outputs_.size());
        if (f.op_ == PrimitiveOp::top_k || f.op_ == PrimitiveOp::sequence_unpack) specs.resize(2);
        apply_specs(f, specs, false);
        return;
    }
    InferContext ctx{f.op_, f.attributes_, partial ? known_inputs : f.inputs_, where};
    std::vector<OutputSpec> specs;
    try {
        specs = def.infer(ctx);
    } catch (const Error& e) {
        // The lenient rounds that close a loop can guess wrong while an unbound placeholder is upstream
        // (a layer built before its input is known): leave the outputs unknown; the strict round that
        // ends replace_placeholders reports what is really contradictory.
        if (allow_partial) {
            std::vector<OutputSpec> unknown(f.outputs_.empty() ? 1 : f.outputs_.size());
            apply_specs(f, unknown, false);
            return;
        }
        // Re-thrown with the operands, so a contradictory graph names every Function and shape involved.
        std::string msg = std::string(e.what()) + " [operands: " + describe_inputs(f.inputs_) + "]";
        if (dynamic_cast<const TypeError*>(&e)) throw TypeError(msg);
        if (dynamic_cast<const ValueError*>(&e)) throw ValueError(msg);
        throw ShapeError(msg);
    }
    apply_specs(f, specs, true);
}

FunctionPtr FunctionAccess::make_primitive(PrimitiveOp op, std::vector<Variable> inputs, Attributes attrs,
                                           const std::string& name) {
    const OpDef& def = op_def(op);
    const int n = static_cast<int>(inputs.size());
    CTK_CHECK(n >= def.min_inputs && n <= def.max_inputs, ValueError, def.cntk_name, " '", name, "': takes ",
              def.min_inputs,
              def.min_inputs == def.max_inputs ? "" : (" to " + std::to_string(def.max_inputs)),
              " operands, got ", n);
    for (int i = 0; i < n; ++i)
        CTK_CHECK(inputs[static_cast<size_t>(i)].defined(), ValueError, def.cntk_name, " '", name,
                  "': operand ", i, " is an undefined Variable");
    FunctionPtr f(new Function());
    f->kind_ = Function::Kind::primitive;
    f->op_ = op;
    f->name_ = name;
    f->uid_ = new_uid(def.cntk_name);
    f->attributes_ = std::move(attrs);
    f->inputs_ = std::move(inputs);
    reinfer(*f);
    return f;
}

uint64_t& FunctionAccess::rng_offset(Function& f) {
    return f.rng_offset_;
}
std::vector<Variable>& FunctionAccess::argument_order(Function& f) {
    return f.argument_order_;
}

}  // namespace detail

FunctionPtr primitive_function(PrimitiveOp op, std::vector<Variable> inputs, Attributes attributes,
                               const std::string& name) {
    CTK_CHECK(op != PrimitiveOp::combine, ValueError,
              "primitive_function: combine is not a primitive (use combine())");
    return detail::FunctionAccess::make_primitive(op, std::move(inputs), std::move(attributes), name);
}

void restore_uid(const Variable& leaf, const std::string& uid) {
    CTK_CHECK(!leaf.is_output(), ValueError, "restore_uid: ", leaf.to_string(),
              " is an output of a Function");
    leaf.impl()->uid = uid;
}

FunctionPtr combine(const std::vector<Variable>& outputs, const std::string& name) {
    CTK_CHECK(!outputs.empty(), ValueError, "combine '", name, "': no outputs given");
    for (const Variable& v : outputs)
        CTK_CHECK(v.defined(), ValueError, "combine '", name, "': undefined Variable");
    return detail::FunctionAccess::make_composite(outputs, name);
}

FunctionPtr with_argument_order(const FunctionPtr& f, const std::vector<Variable>& arguments,
                                const std::string& name) {
    CTK_CHECK(f, ValueError, "with_argument_order: no Function given");
    FunctionPtr c = detail::FunctionAccess::make_composite(f->outputs(), name.empty() ? f->name() : name);
    detail::FunctionAccess::argument_order(*c) = arguments;
    return c;
}

FunctionPtr as_function(const Variable& v) {
    CTK_CHECK(v.defined(), ValueError, "as_function: undefined Variable");
    if (FunctionPtr o = v.owner()) return o;
    return combine({v});
}

FunctionPtr as_block(const FunctionPtr& composite,
                     const std::vector<std::pair<Variable, Variable>>& arguments,
                     const std::string& block_op_name, const std::string& block_name) {
    CTK_CHECK(composite != nullptr, ValueError, "as_block '", block_name, "': null composite");
    auto placeholders = composite->placeholders();
    for (const auto& [inner, outer] : arguments) {
        CTK_CHECK(inner.defined() && inner.is_placeholder(), ValueError, "as_block '", block_name,
                  "': ", inner.to_string(), " is not a placeholder");
        CTK_CHECK(outer.defined(), ValueError, "as_block '", block_name, "': undefined operand for ",
                  inner.to_string());
        CTK_CHECK(std::find(placeholders.begin(), placeholders.end(), inner) != placeholders.end(),
                  ValueError, "as_block '", block_name, "': ", inner.to_string(),
                  " is not a placeholder of the composite");
    }
    CTK_CHECK(arguments.size() == placeholders.size(), ValueError, "as_block '", block_name,
              "': the composite has ", placeholders.size(), " placeholders but ", arguments.size(),
              " are mapped");
    return detail::FunctionAccess::make_block(composite, arguments, block_op_name, block_name);
}

namespace detail {

FunctionPtr FunctionAccess::make_composite(std::vector<Variable> outputs, const std::string& name) {
    FunctionPtr f(new Function());
    f->kind_ = Function::Kind::composite;
    f->op_ = PrimitiveOp::combine;
    f->name_ = name;
    f->uid_ = new_uid("Combine");
    f->composite_outputs_ = std::move(outputs);
    return f;
}

FunctionPtr FunctionAccess::make_block(FunctionPtr composite, std::vector<std::pair<Variable, Variable>> map,
                                       const std::string& op_name, const std::string& name) {
    FunctionPtr f(new Function());
    f->kind_ = Function::Kind::block;
    f->op_ = PrimitiveOp::block;
    f->name_ = name;
    f->block_op_name_ = op_name;
    f->uid_ = new_uid(op_name.c_str());
    f->block_root_ = std::move(composite);
    for (const auto& [inner, outer] : map) f->inputs_.push_back(outer);
    f->block_map_ = std::move(map);
    reinfer(*f);
    return f;
}

FunctionPtr FunctionAccess::clone(const Function& root, CloneMethod method, VariableMap& map) {
    auto mapped = [&](const Variable& v) -> Variable {
        auto it = map.find(v);
        if (it != map.end()) return it->second;
        if (v.owner()) return v;  // not reached: owners are cloned before their users
        Variable out = v;
        if (v.is_parameter() && method == CloneMethod::clone) {
            out = v.has_inferred_dims() ? Variable() : parameter_from(v.value(), v.name());
            if (!out.defined()) {  // not materialised yet: a fresh parameter with the same initializer
                auto d = std::make_shared<VariableData>(*v.impl());
                d->uid = new_uid("Parameter");
                out = Variable(d, nullptr);
            }
        } else if (v.is_parameter() && method == CloneMethod::freeze) {
            out = constant(v.value(), v.name());
        }
        map.emplace(v, out);
        return out;
    };
    std::vector<Variable> roots = root.outputs();
    std::vector<std::pair<Variable, Variable>> back_edges;  // (placeholder in the copy, original variable)
    walk(
        roots, false,
        [&](const FunctionPtr& g) {
            if (g->is_composite()) return;
            std::vector<Variable> new_inputs;
            for (const Variable& v : g->inputs_) {
                if (!v.owner()) {
                    new_inputs.push_back(mapped(v));
                } else if (map.count(v)) {
                    new_inputs.push_back(map.at(v));
                } else {  // the back edge of a recurrent loop: bound once its producer is cloned
                    // (of unknown shape when the original's is not known yet: a layer built on placeholders)
                    Variable p = v.shape_known() ? placeholder(v.shape(), v.dynamic_axes(), v.name())
                                                 : placeholder(v.name());
                    p.impl()->dtype = v.dtype();
                    back_edges.emplace_back(p, v);
                    new_inputs.push_back(p);
                }
            }
            FunctionPtr copy;
            if (g->is_block()) {
                // The inner graph gets its own placeholders so that the copy is independent of the original.
                VariableMap inner_map;
                std::vector<std::pair<Variable, Variable>> new_block_map;
                for (size_t i = 0; i < g->block_map_.size(); ++i) {
                    const Variable& p = g->block_map_[i].first;
                    Variable np = p.shape_known() ? placeholder(p.shape(), p.dynamic_axes(), p.name())
                                                  : placeholder(p.name());
                    inner_map.emplace(p, np);
                    new_block_map.emplace_back(np, new_inputs[i]);
                }
                // Parameters inside the block follow the method too, and are shared with the outer map.
                for (const auto& [k, val] : map) inner_map.emplace(k, val);
                FunctionPtr inner = clone(*g->block_root_, method, inner_map);
                for (const auto& [k, val] : inner_map)
                    if (!k.owner() && !k.is_placeholder()) map.emplace(k, val);
                copy = make_block(inner, new_block_map, g->block_op_name_, g->name_);
            } else {
                copy = make_primitive(g->op_, new_inputs, g->attributes_, g->name_);
            }
            auto old_outs = g->outputs(), new_outs = copy->outputs();
            for (size_t i = 0; i < old_outs.size(); ++i) map.emplace(old_outs[i], new_outs[i]);
        },
        [&](const Variable& v) { mapped(v); });
    std::vector<Variable> new_roots;
    for (const Variable& v : roots) new_roots.push_back(map.count(v) ? map.at(v) : v);
    FunctionPtr result = root.is_composite() ? make_composite(new_roots, root.name_) : new_roots[0].owner();
    if (root.is_composite())
        for (const Variable& a : root.argument_order_)
            result->argument_order_.push_back(map.count(a) ? map.at(a) : a);
    if (!back_edges.empty()) {
        VariableMap close;
        for (const auto& [p, v] : back_edges) close.emplace(p, map.at(v));
        result->replace_placeholders(close);
    }
    return result;
}

}  // namespace detail

FunctionPtr Function::clone(CloneMethod method, const VariableMap& substitutions) const {
    VariableMap map = substitutions;
    return detail::FunctionAccess::clone(*this, method, map);
}

FunctionPtr Function::replace_placeholders(const VariableMap& replacements) {
    for (const auto& [p, v] : replacements) {
        CTK_CHECK(p.defined() && p.is_placeholder(), ValueError, "replace_placeholders: ", p.to_string(),
                  " is not a placeholder");
        CTK_CHECK(v.defined(), ValueError, "replace_placeholders: ", p.to_string(),
                  " is mapped to an undefined Variable");
    }
    // Rebind operands everywhere upstream (blocks' inner graphs included), then re-infer in order.
    std::vector<FunctionPtr> order;
    walk(
        outputs(), true, [&](const FunctionPtr& g) { order.push_back(g); }, nullptr);
    std::unordered_set<const Function*> in_graph;
    for (const FunctionPtr& g : order) in_graph.insert(g.get());
    for (const FunctionPtr& g : order) {
        auto& ins = detail::FunctionAccess::inputs(*g);
        for (size_t i = 0; i < ins.size(); ++i) {
            auto it = replacements.find(ins[i]);
            if (it == replacements.end()) continue;
            // An output of this very graph closes a loop: keep it without the strong owner reference,
            // which would be a reference cycle (the graph is alive through its root anyway).
            FunctionPtr owner = it->second.owner();
            ins[i] = owner && in_graph.count(owner.get()) ? it->second.weak() : it->second;
            if (g->is_block()) g->block_map_[i].second = ins[i];
        }
    }
    if (is_composite()) {
        for (Variable& v : composite_outputs_) {
            auto it = replacements.find(v);
            if (it != replacements.end()) v = it->second;
        }
        for (Variable& a : argument_order_) {
            auto it = replacements.find(a);
            if (it != replacements.end()) a = it->second;
        }
    }
    detail::bump_graph_generation();
    // The walk again, now through the new operands, re-inferring operands before users; a recurrent
    // loop needs more than one round (its far end is unknown in the first), so repeat until stable.
    auto signature = [&] {
        std::string sig;
        walk(
            outputs(), true,
            [&](const FunctionPtr& g) {
                for (const Variable& o : g->outputs()) sig += o.to_string();
            },
            nullptr);
        return sig;
    };
    // The lenient rounds guess shapes from one known operand, which is only sound once every input of
    // the graph is known: with a placeholder still unbound upstream (a layer built before it is applied)
    // the loop stays unknown until a later binding closes it.
    bool unbound = false;
    for (const Variable& v : leaves(*this, false))
        unbound = unbound || (v.is_placeholder() && !v.shape_known());
    std::string before;
    for (int round = 0; round < 16 && !unbound; ++round) {
        walk(
            outputs(), true, [&](const FunctionPtr& g) { detail::FunctionAccess::reinfer(*g, true); },
            nullptr);
        std::string after = signature();
        if (after == before) break;
        before = std::move(after);
    }
    // A last strict round: whatever still depends on an unbound placeholder is unknown again.
    walk(
        outputs(), true, [&](const FunctionPtr& g) { detail::FunctionAccess::reinfer(*g); }, nullptr);
    return shared_from_this();
}

FunctionPtr Function::operator()(const std::vector<Variable>& args) const {
    std::vector<Variable> params = placeholders();
    if (params.empty()) params = arguments();
    // CNTK's @Function: called with its declared parameters (listed first); the placeholders it closed
    // over stay free, to be bound with the enclosing function's.
    const size_t declared = declared_placeholders().size();
    if (declared > 0 && args.size() == declared && declared < params.size()) params.resize(declared);
    CTK_CHECK(params.size() == args.size(), ValueError, op_name(), " '", name_, "' takes ", params.size(),
              " arguments but was called with ", args.size());
    VariableMap subst;
    for (size_t i = 0; i < args.size(); ++i) subst.emplace(params[i], args[i]);
    return clone(CloneMethod::share, subst);
}

}  // namespace ctk
