// Function: a node of CNTK's symbolic graph. A primitive Function applies one PrimitiveOp to its input
// Variables; a composite (combine) groups outputs of other Functions; a block (as_block) wraps a
// composite so that it looks like one op. Every Function is also the root of the graph upstream of its
// outputs, so graph queries (parameters, arguments, find_by_name) and execution (eval, forward,
// backward, grad) work on any of them. Functions are immutable once built, except that
// replace_placeholders rebinds placeholders and parameters with inferred dims take their shape on first
// use.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "ctk/graph/graph_op_list.h"
#include "ctk/graph/value.h"
#include "ctk/graph/variable.h"

namespace ctk {

// An attribute only this process can hold (a user function's callbacks): compared by identity; model
// files refuse the ops that carry one.
struct OpaqueAttr {
    std::shared_ptr<const void> ptr;
    bool operator==(const OpaqueAttr& o) const { return ptr == o.ptr; }
};

// An attribute value (CNTK's DictionaryValue, reduced to the types ctk's ops use).
using AttrValue = std::variant<bool, int64_t, double, std::string, Dims, Axis, std::vector<Axis>, OpaqueAttr>;

class Attributes {
public:
    Attributes() = default;
    Attributes(std::initializer_list<std::pair<const std::string, AttrValue>> items) : items_(items) {}
    void set(const std::string& key, AttrValue v) { items_[key] = std::move(v); }
    bool has(const std::string& key) const { return items_.count(key) > 0; }
    // Throws ValueError naming the key when it is missing or of another type.
    template <typename T>
    const T& get(const std::string& key) const {
        auto it = items_.find(key);
        if (it == items_.end()) throw_missing(key);
        const T* v = std::get_if<T>(&it->second);
        if (!v) throw_wrong_type(key);
        return *v;
    }
    template <typename T>
    T get_or(const std::string& key, T fallback) const {
        auto it = items_.find(key);
        return it == items_.end() ? fallback : std::get<T>(it->second);
    }
    const std::map<std::string, AttrValue>& items() const { return items_; }

private:
    [[noreturn]] static void throw_missing(const std::string& key);
    [[noreturn]] static void throw_wrong_type(const std::string& key);
    std::map<std::string, AttrValue> items_;
};

using ValueMap = std::unordered_map<Variable, Value, VariableHash>;
using VariableMap = std::unordered_map<Variable, Variable, VariableHash>;

// How clone() treats parameters: new copies, the same parameters, or constants holding their values.
enum class CloneMethod : uint8_t { clone, share, freeze };

class BackPropState;
namespace cell {
class Run;
}  // namespace cell
namespace detail {
struct Plan;
struct FunctionAccess;
}  // namespace detail

class Function : public std::enable_shared_from_this<Function> {
public:
    enum class Kind : uint8_t { primitive, composite, block };

    Kind kind() const { return kind_; }
    bool is_primitive() const { return kind_ == Kind::primitive; }
    bool is_composite() const { return kind_ == Kind::composite; }
    bool is_block() const { return kind_ == Kind::block; }
    PrimitiveOp op() const { return op_; }
    // CNTK's op name: "Plus", "Times", ...; a block's own op name ("Dense"); "Combine" for composites.
    std::string op_name() const;
    const std::string& name() const { return name_; }
    // Python's `f.name = ...` (CNTK let a Function built without a name be named once).
    void set_name(std::string name) { name_ = std::move(name); }
    const std::string& uid() const { return uid_; }
    const Attributes& attributes() const { return attributes_; }
    // CNTK's Function.set_attribute: the attributes CNTK let change after construction, "dropoutRate" of
    // dropout (in [0, 1)) and "rngSeed" of dropout and the random ops (its stream restarts). Others:
    // ValueError naming the attribute. A composite changes its root primitive's.
    void set_attribute(const std::string& name, const AttrValue& value);

    // Primitives and blocks: their operands. Composites: the leaves of the graph (as CNTK's Inputs()).
    std::vector<Variable> inputs() const;
    std::vector<Variable> outputs() const;
    // The single output; throws ValueError when there are several.
    Variable output() const;

    // The leaves of the graph upstream of this Function's outputs, in first-visit order.
    std::vector<Variable> arguments() const;  // inputs (CNTK's Arguments(): placeholders too)
    std::vector<Variable> parameters() const;
    std::vector<Variable> constants() const;
    std::vector<Variable> placeholders() const;
    // The placeholders a Function made from a Python function declared as its parameters (CNTK's
    // @Function signature), in order; empty for other Functions. Placeholders it closed over from an
    // enclosing function follow them in placeholders(): calling it binds the declared ones only.
    std::vector<Variable> declared_placeholders() const;
    // The first Function (blocks searched too when `nested`) named `name`, or null.
    FunctionPtr find_by_name(const std::string& name, bool nested = false) const;
    std::vector<FunctionPtr> find_all_with_name(const std::string& name, bool nested = false) const;
    // Blocks: the composite inside and how its placeholders map to the block's operands.
    FunctionPtr block_root() const { return block_root_; }
    const std::vector<std::pair<Variable, Variable>>& block_arguments_mapping() const { return block_map_; }

    // ---- execution ----
    // Execution happens on `device` (CNTK's computeDevice; default: default_device()). Arguments are
    // copied there; parameters and constants move there for good (see detail::value_on); results and
    // gradients are on it.
    //
    // The values of `outputs` (default: this Function's outputs) for the given argument values.
    ValueMap eval(const ValueMap& arguments, const std::vector<Variable>& outputs = {},
                  Device device = default_device());
    // Computes `outputs` and keeps what backward() needs for the gradients of `retain_for` (CNTK's
    // outputsToRetainBackwardStateFor). is_training: dropout drops, batch norm uses batch statistics
    // and updates its running statistics.
    std::shared_ptr<BackPropState> forward(const ValueMap& arguments, ValueMap& outputs,
                                           const std::vector<Variable>& retain_for = {},
                                           bool is_training = true, Device device = default_device());
    // Gradients of the sum of root_gradient * root over all elements, for each variable in `wrt`
    // (parameters, inputs, or intermediate outputs), on the forward's device. Padded sequence frames
    // get zero gradients.
    ValueMap backward(const BackPropState& state, const ValueMap& root_gradients,
                      const std::vector<Variable>& wrt);
    // forward + backward with a root gradient of ones on `of` (default: the single output).
    ValueMap grad(const ValueMap& arguments, const std::vector<Variable>& wrt, const Variable& of = {},
                  Device device = default_device());

    // ---- graph editing ----
    // A copy of the graph upstream of this Function's outputs; `substitutions` replace variables (a
    // placeholder by what it stands for, an input by another variable). Parameters per `method`.
    FunctionPtr clone(CloneMethod method = CloneMethod::clone, const VariableMap& substitutions = {}) const;
    // Rebinds placeholders in this graph (in place) and re-infers the shapes downstream. Returns this.
    FunctionPtr replace_placeholders(const VariableMap& map);
    // CNTK's __call__: binds this Function's placeholders (or, without placeholders, its arguments) in
    // order to `args`, on a clone that shares parameters.
    FunctionPtr operator()(const std::vector<Variable>& args) const;

    // The positions of the random streams of the random ops upstream (dropout, random draws; blocks
    // included), in graph order. Checkpoints keep them so that a restored run draws the same masks as
    // an uninterrupted one. Setting checks the count.
    std::vector<uint64_t> random_stream_positions() const;
    void set_random_stream_positions(const std::vector<uint64_t>& positions) const;

    // "Plus: Output('Plus12', [#], [3])"
    std::string to_string() const;

    ~Function();

private:
    friend struct detail::FunctionAccess;
    Function() = default;

    Kind kind_ = Kind::primitive;
    PrimitiveOp op_ = PrimitiveOp::combine;
    std::string name_, uid_, block_op_name_;
    Attributes attributes_;
    std::vector<Variable> inputs_;                                // operands (primitive, block)
    std::vector<std::shared_ptr<detail::VariableData>> outputs_;  // owned outputs (primitive, block)
    std::vector<Variable> composite_outputs_;                     // composite: outputs of other Functions
    std::vector<Variable> argument_order_;                        // composite: arguments listed first
    FunctionPtr block_root_;
    std::vector<std::pair<Variable, Variable>> block_map_;  // (placeholder inside, operand outside)
    // (Its compiled plans live in the graph layer's plan cache, src/graph/plan_cache.cpp, keyed by this
    // Function and dropped with it.)
    uint64_t rng_offset_ = 0;  // random ops: the position of this Function's Philox stream
};

// A Function whose outputs are the given variables (CNTK's combine).
FunctionPtr combine(const std::vector<Variable>& outputs, const std::string& name = "");
// Wraps `composite` as one op: its placeholders are bound to the operands in `arguments` (placeholder,
// operand); the block's outputs mirror the composite's.
FunctionPtr as_block(const FunctionPtr& composite,
                     const std::vector<std::pair<Variable, Variable>>& arguments,
                     const std::string& block_op_name, const std::string& block_name = "");
// A Function from a Variable: its owner for outputs, otherwise a composite returning it.
FunctionPtr as_function(const Variable& v);
// A composite of f's outputs whose arguments() and placeholders() list `arguments` first, in this order,
// then any others in graph order (CNTK's @Function: the arguments follow the Python signature, so that
// f(a, b) and f.train((A, B)) bind by position). Clones and placeholder replacements keep the order.
FunctionPtr with_argument_order(const FunctionPtr& f, const std::vector<Variable>& arguments,
                                const std::string& name = "");

// Gradients of padded frames are zero; values are as computed. Counters kept across a forward/backward.
class BackPropState {
public:
    // Bytes held by the values this state keeps at its peak during forward.
    int64_t peak_bytes() const { return peak_bytes_; }
    bool is_training() const { return training_; }
    Device device() const { return device_; }

private:
    friend struct detail::FunctionAccess;
    std::shared_ptr<const detail::Plan> plan_;
    std::vector<Value> values_;
    std::vector<std::vector<std::vector<Tensor>>>
        saved_;  // per step and frame: what the op kept for backward
    std::vector<std::shared_ptr<const cell::Run>> fused_runs_;  // per recurrent loop run fused: its kept run
    bool training_ = true;
    Device device_;
    int64_t peak_bytes_ = 0;
    // Whether the deferred side effects (assign) of this evaluation have been applied.
    mutable bool committed_ = false;
};

}  // namespace ctk
