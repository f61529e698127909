// Internal to the graph layer: the data behind a Variable, the op definitions the executor calls, and
// the builder that makes Functions. Ops (src/graph/ops) implement OpDefs; nothing outside src/graph
// includes this.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ctk/graph/function.h"

namespace ctk::detail {

struct VariableData {
    VariableKind kind = VariableKind::input;
    Dims shape;
    bool shape_known = true;
    DataType dtype = DataType::f32;
    std::vector<Axis> dynamic_axes;
    std::string name, uid;
    bool needs_gradient = false;
    bool is_sparse = false;
    bool regularized = true;  // parameters: learners apply L1/L2 regularization to it
    // Parameters and constants: the value, or the initializer that makes it once the shape is known.
    Tensor value;
    Initializer init;
    std::weak_ptr<Function> owner;  // outputs: the producing Function (weak: it owns this data)
    int output_index = 0;
};

std::string new_uid(const char* prefix);
std::shared_ptr<VariableData> make_variable_data(VariableKind kind, Dims shape, DataType dtype,
                                                 std::vector<Axis> dynamic_axes, const std::string& name);
// "[#, *]" style text of dynamic axes.
std::string dynamic_axes_string(const std::vector<Axis>& axes);
// Shape text with CNTK's sentinels: "[784 x -1]", "[]".
std::string static_shape_string(const Dims& shape);

// ---- op definitions ----
struct OutputSpec {
    Dims shape;
    DataType dtype = DataType::f32;
    std::vector<Axis> dynamic_axes;
};

struct InferContext {
    PrimitiveOp op;
    Attributes& attrs;              // ops may normalise their attributes here
    std::vector<Variable>& inputs;  // parameters with inferred dims may be resolved here
    std::string where;              // "times 'name'": for error messages
};

struct ForwardContext {
    const Attributes& attrs;
    std::span<const Value> inputs;
    std::span<const Variable> input_vars;
    std::vector<Value>& outputs;  // filled by the op (layout may be left empty: the default rule applies)
    std::vector<Tensor>& saved;   // what backward needs beyond inputs and outputs
    bool training;
    bool keep_for_backward;  // backward may follow: keep what it needs (e.g. a pooling workspace)
    uint64_t& rng_offset;    // the Function's random stream position
    const std::string& where;
    Device device;  // where the evaluation computes: tensors an op makes from nothing go here
    int dyn_rank(size_t i) const { return input_vars[i].dynamic_rank(); }
};

struct BackwardContext {
    const Attributes& attrs;
    std::span<const Value> inputs;
    std::span<const Variable> input_vars;
    std::span<const Value> outputs;
    std::span<const Tensor> output_grads;  // undefined: that output got no gradient (zero)
    std::span<const Tensor> saved;
    std::vector<bool> needs;           // per input: is its gradient wanted
    std::vector<Tensor>& input_grads;  // filled by the op where needs[i] (input's data shape)
    const std::string& where;
    int dyn_rank(size_t i) const { return input_vars[i].dynamic_rank(); }
};

// An op's side effect on a leaf (assign writes its parameter or constant), run once the evaluation is
// over: after forward when no backward can follow (retain_for empty), else after the first backward.
// `saved` is what the op's forward kept. Steps commit in execution order.
struct CommitContext {
    std::span<const Variable> input_vars;  // the operands as the plan resolved them (placeholders bound)
    std::span<const Tensor> saved;
    const std::string& where;
};

// What an op's backward reads: bit i for operand i (operands past 30 share bit 30), the top bit for
// its outputs. Only shapes, dtypes and layouts of the rest.
inline constexpr uint32_t kReadsNothing = 0, kReadsOutputs = 1u << 31, kReadsInputs = kReadsOutputs - 1;
constexpr uint32_t reads_input(int i) {
    return 1u << (i < 30 ? i : 30);
}

// How an op treats 16-bit operands in the autocast rewrite (ctk/graph/mixed_precision.h): `low` runs
// in the 16-bit type (what tensor cores speed up: products, convolutions); `follow` takes 16-bit
// operands as they come (element-wise, shape and data movement); `follow_data` lets operand 0 follow
// while the others (statistics, indices, lengths) keep their dtype; `keep_f32` gets its f32 operands
// back in f32 (reductions, softmax, losses: what loses accuracy in 16 bits); `any` for ops whose output
// dtype is their attribute (cast).
enum class Autocast : uint8_t { keep_f32, low, follow, follow_data, any };

struct OpDef {
    const char* cntk_name = "";  // CNTK's op name, shown in Function::op_name
    int min_inputs = 1;
    int max_inputs = 1;
    std::vector<OutputSpec> (*infer)(InferContext&) = nullptr;
    void (*forward)(ForwardContext&) = nullptr;
    void (*backward)(BackwardContext&) = nullptr;  // null: no gradient flows through the op
    // False for ops that look across frames or samples (sequence ops, batch statistics): they cannot
    // run inside a recurrent loop, which executes one frame at a time. Where it depends on a Function's
    // attributes or operands, `frame_local_for` (below) decides instead.
    bool frame_local = true;
    // Ops with a deferred side effect (assign): applies it once the evaluation is over (see CommitContext).
    void (*commit)(const CommitContext&) = nullptr;
    // Which values `backward` reads (beyond their shapes, dtypes and layouts). A forward that keeps
    // state for backward releases every other value after its last forward reader, so a training step
    // holds only what the backward rules need (as PyTorch's saved tensors). Declared per op where its
    // backward rule was checked; the graph harness verifies it by poisoning every value not declared.
    uint32_t backward_reads = kReadsInputs | kReadsOutputs;
    // Why a step of this op cannot be recorded once as a CUDA Graph and replayed, after the step's name
    // ("is a random op, ..."); null: it can.
    const char* capture_refusal = nullptr;
    Autocast autocast = Autocast::keep_f32;  // its rule in the mixed-precision rewrite
    // Delays (CNTK's past_value, future_value; operands: the sequence, the initial state; attribute
    // "offset"): the executor runs them itself, frame by frame inside recurrent loops, from this
    // description. -1: frame t is frame t - offset of the operand (the first frames from the initial state,
    // or, for a sequence marked as continuing, from the previous minibatch); +1: frame t + offset, while
    // inside the sequence; 0: not a delay.
    int delay_direction = 0;
    // Whether a Function of this op is frame-local when that depends on its attributes or operands (a
    // reduction over the batch axis is not; one over static axes is); null: `frame_local` says.
    bool (*frame_local_for)(const Function&) = nullptr;
};

// A parameter's or constant's value on `device`, moved there for good when it lives elsewhere (a graph
// computes where it is asked to; its parameters follow, and learners update them there).
Tensor value_on(const Variable& v, Device device);

// A delay's initial state as one frame [N, 1, sample...] (a per-sequence [#] state, or a value that
// broadcasts over the sample), and the gradient of that state from a frame gradient [N, 1, sample...].
// An initial state that is itself a sequence (CNTK's per-sequence state; offset 1) gives each sequence
// its last frame for a past delay, its first for a future one (`past`).
Tensor delay_initial_frame(const Variable& init_var, const Value& init, const Dims& frame_dims, bool past);
Tensor delay_initial_grad(const Variable& init_var, const Value& init, const Tensor& frame_grad, bool past);

// The op table (src/graph/ops/op_table.cpp), built on first use from each family's explicit registration.
const OpDef& op_def(PrimitiveOp op);

// Visits every Function upstream of `roots` once, operands before users (post-order); with
// `into_blocks` the graphs inside blocks too. Leaves are reported in first-visit order.
void walk(const std::vector<Variable>& roots, bool into_blocks,
          const std::function<void(const FunctionPtr&)>& on_function,
          const std::function<void(const Variable&)>& on_leaf);

// ---- building Functions ----
struct FunctionAccess {
    // A primitive Function applying `op` to `inputs`; infers the outputs (throws naming the op).
    static FunctionPtr make_primitive(PrimitiveOp op, std::vector<Variable> inputs, Attributes attrs,
                                      const std::string& name);
    static FunctionPtr make_composite(std::vector<Variable> outputs, const std::string& name);
    static FunctionPtr make_block(FunctionPtr composite, std::vector<std::pair<Variable, Variable>> map,
                                  const std::string& op_name, const std::string& name);
    // allow_partial: a binary element-wise op with one operand of unknown shape takes the other's
    // (used only while closing recurrent loops in replace_placeholders).
    static void reinfer(Function& f, bool allow_partial = false);
    // The graph upstream of `f` rebuilt with `map` applied (old variable -> new); fills `map` as it goes.
    static FunctionPtr clone(const Function& f, CloneMethod method, VariableMap& map);
    static uint64_t& rng_offset(Function& f);
    static std::vector<Variable>& argument_order(Function& f);
    static std::vector<Variable>& inputs(Function& f) { return f.inputs_; }
    // What a forward kept for backward (executor.cpp's run_backward).
    struct KeptState {
        const Plan* plan;
        const std::vector<Value>& values;
        const std::vector<std::vector<std::vector<Tensor>>>& saved;
        const std::vector<std::shared_ptr<const cell::Run>>& fused_runs;
        Device device;
        bool& committed;
    };
    static KeptState kept(const BackPropState& s) {
        return {s.plan_.get(), s.values_, s.saved_, s.fused_runs_, s.device_, s.committed_};
    }
    // A forward's state as run_forward (executor.cpp) fills it.
    struct ForwardState {
        std::shared_ptr<const Plan>& plan;
        std::vector<Value>& values;
        std::vector<std::vector<std::vector<Tensor>>>& saved;
        std::vector<std::shared_ptr<const cell::Run>>& fused_runs;
        bool& training;
        Device& device;
        int64_t& peak_bytes;
        bool& committed;
    };
    static ForwardState forward_state(BackPropState& s) {
        return {s.plan_,     s.values_, s.saved_,      s.fused_runs_,
                s.training_, s.device_, s.peak_bytes_, s.committed_};
    }
    static const std::vector<std::shared_ptr<VariableData>>& owned_outputs(const Function& f) {
        return f.outputs_;
    }
};

}  // namespace ctk::detail
