// Internal: the compiled form of a graph. A Plan is built once per (root Function, requested outputs)
// and reused: a list of primitive steps over numbered value slots in execution order, with blocks
// inlined and composites flattened. Recurrent loops (cycles through past_value/future_value) are
// strongly connected groups of steps that the executor runs frame by frame.
#pragma once

#include <functional>
#include <vector>

#include "graph/graph_internal.h"

namespace ctk::detail {

struct Step {
    Function* fn = nullptr;
    const OpDef* def = nullptr;
    std::vector<int> in;            // slots of the operands
    std::vector<int> out;           // slots of the outputs
    std::vector<Variable> in_vars;  // the operands' variables (without owners), for the op contexts
    std::string where;              // "Times 'name'" for messages
    int loop = -1;                  // the recurrent loop this step belongs to, if any
};

// A recurrent loop: steps plan.steps[first, first + count) run for each frame, in that order.
struct Loop {
    int first = 0, count = 0;
    bool backward_in_time = false;  // future_value loops run from the last frame to the first
};

struct FusedLoop;  // fused_loop.h

struct Plan {
    std::vector<Step> steps;
    std::vector<Loop> loops;
    // Per loop: compiled for the fused cell kernel, or null with the reason in fused_refusal.
    std::vector<std::shared_ptr<const FusedLoop>> fused;
    std::vector<std::string> fused_refusal;
    std::vector<Variable> slot_vars;               // the variable whose value each slot holds
    std::unordered_map<const void*, int> slot_of;  // VariableData* -> slot (block outputs alias inner ones)
    std::vector<int> leaves;                       // slots of inputs, parameters and constants
    std::vector<int> requested;                    // slots of the requested outputs
    std::vector<int> last_use;                     // per slot: the last step reading it (-1: none)
    std::vector<int> first_use;  // per slot: the first step reading it (-1: none); backward is done with
                                 // a slot's gradient once it has gone back past this step
    std::vector<bool> read_by_backward;  // per slot: some backward rule reads its value
    uint64_t generation = 0;             // graph_generation() when built
    bool has_side_effects = false;       // some step commits a side effect (assign)
    // Per step, for a past_value given sequences with seq_starts: its input's last `offset` frames per
    // sequence [sequences, offset, sample...] from the latest forward, which a following minibatch's
    // continuing sequences read (CNTK's state carried across minibatches). Empty until then.
    // Evaluating one Function with continuing sequences from several threads at once is not supported.
    mutable std::vector<Tensor> delay_carry;
    int slot(const Variable& v) const;  // -1 when the variable is not part of this plan
};

std::shared_ptr<Plan> build_plan(const std::vector<Variable>& outputs);

// The forward of `plan` (the values of its requested outputs into `outputs`, keyed by variable) on
// `device`. keep_all: a backward may follow, so what its rules read is kept in the returned state.
// Function::forward runs it over its cached plan (plan_cache.h), a Program over its own.
std::shared_ptr<BackPropState> run_forward(std::shared_ptr<const Plan> plan, const ValueMap& arguments,
                                           ValueMap& outputs, bool keep_all, bool is_training, Device device);

// (bind.cpp) Inputs on one sequence axis are frames of the same sequences (CNTK's rule): a ValueError naming
// both inputs when their bound values have sequences of other lengths.
void check_shared_sequence_axes(const Plan& plan, const std::vector<Value>& values);

// Called by backward as soon as the gradient of one of `wrt` is final (no step left to run adds to it),
// in the order they become final; a variable no step reads gets its zero gradient at the end.
using GradientReady = std::function<void(const Variable& wrt, const Value& gradient)>;
// Function::backward with a GradientReady callback (which may be empty).
ValueMap run_backward(const BackPropState& state, const ValueMap& root_gradients,
                      const std::vector<Variable>& wrt, const GradientReady& on_ready);

// CNTK's seq_starts (delay_carry.cpp). The carry a continuing sequence reads, checked against this
// minibatch's output y of the past_value at `step`; the first `k` frames of y for the continuing
// sequences; after a forward step, the carry kept for the next minibatch; g's rows of continuing
// sequences zeroed (their gradient reaches no previous minibatch).
const Tensor& checked_carry(const Plan& plan, size_t step, const SequenceLayout& layout, const Tensor& y,
                            const std::string& where);
void apply_delay_carry(const Plan& plan, size_t step, const SequenceLayout& layout, int64_t k, Tensor& y,
                       const std::string& where);
void record_delay_carry(const Plan& plan, size_t step_index, const std::vector<Value>& values);
Tensor without_continuing(const Tensor& g, const SequenceLayout* layout);
bool is_delay(PrimitiveOp op);

// Test hook: a forward that keeps state for backward replaces every value backward does not read
// (leaves and requested outputs too) with NaN, so that a backward rule reading a value its op did not
// declare (OpDef::backward_reads) gives NaN gradients. Off by default; the graph harness turns it on.
void set_poison_unread_values(bool on);
bool poison_unread_values();

// Bumped by every in-place graph edit (replace_placeholders): cached plans older than it are rebuilt.
uint64_t graph_generation();
void bump_graph_generation();

}  // namespace ctk::detail
