// Program: one compiled evaluation of a graph: the forward of `outputs` and, when `wrt` is not empty,
// the backward that gives their gradients, scheduled once when it is made (blocks inlined, recurrent
// loops grouped, liveness known) and run as often as asked, its memory planned (memory_plan.h) so that
// repeated runs take nothing from the allocators. A Trainer's step is one run of a Program; a gradient-
// ready callback hears of each gradient as soon as backward has finished it (where distributed training
// starts its all-reduce while backward goes on).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ctk/core/memory_plan.h"
#include "ctk/graph/function.h"

namespace ctk {

// Whether Programs plan their memory unless told: true, or the environment's CTK_MEMORY_PLAN (0, off or
// false turns it off: every block then comes from the allocators, as for a first run). Throws ValueError
// for another value.
bool memory_plan_by_default();

// Whether recurrent loops made of matrix products and element-wise ops (LSTM, GRU, RNN cells) run on
// the CPU as one fused kernel (ctk/kernels/cell_program.h) instead of frame by frame: on unless turned off
// here or by the environment's CTK_FUSED_RECURRENCE (0, off or false). Both paths give the same values
// to rounding; the switch is for comparing them.
void set_fused_recurrence(bool on);
bool fused_recurrence();

struct ProgramOptions {
    Device device = default_device();
    bool plan_memory = memory_plan_by_default();  // runs take their blocks from the Program's MemoryPlan
};

class Program {
public:
    // `outputs`: what runs return; backward starts from the first (the loss). `wrt`: the variables
    // whose gradients runs give (usually parameters); empty: forward only. Throws, naming what is wrong,
    // when the graph cannot run (an unbound placeholder, a loop without a delay), a `wrt` variable is
    // not upstream of the outputs, or the device is not available.
    Program(std::vector<Variable> outputs, std::vector<Variable> wrt = {}, ProgramOptions options = {});
    ~Program();
    Program(const Program&) = delete;
    Program& operator=(const Program&) = delete;

    // Called once per `wrt` variable, as soon as no step left to run adds to its gradient.
    using GradientReady = std::function<void(const Variable& wrt, const Value& gradient)>;

    struct RunOptions {
        bool is_training = true;     // dropout drops, batch norm uses (and updates) batch statistics
        double root_gradient = 1.0;  // backward's seed on every element of the first output
        GradientReady on_gradient_ready;
        // Called with the outputs as soon as forward has made them (a Trainer starts the loss on its way
        // to the host there); returning false skips backward (an empty minibatch).
        std::function<bool(const ValueMap& outputs)> after_forward;
        // False when the caller already runs in a Scope of memory_plan() (a Trainer's whole step).
        bool open_memory_scope = true;
    };
    struct Result {
        ValueMap outputs;
        ValueMap gradients;  // of `wrt`, on the Program's device
    };
    Result run(const ValueMap& arguments, const RunOptions& options);
    Result run(const ValueMap& arguments) { return run(arguments, RunOptions{}); }

    const std::vector<Variable>& outputs() const { return outputs_; }
    const std::vector<Variable>& wrt() const { return wrt_; }
    // `wrt` in the order on_gradient_ready hears of them (the same for every run: it follows the
    // schedule), so that workers can agree on how to group gradients before any run.
    const std::vector<Variable>& gradient_order() const { return gradient_order_; }
    Device device() const { return options_.device; }
    bool plans_memory() const { return options_.plan_memory; }
    // The number of primitive steps in the schedule (a recurrent loop's steps counted once).
    int64_t num_steps() const;
    // False once the graph was edited in place (replace_placeholders): make a new Program (a run
    // compiles the edited graph again, but what the Program reported when made is not updated).
    bool current() const;
    // Distinct for every Program made in this process.
    uint64_t id() const { return id_; }
    // The parameters and constants the schedule reads (what a recorded CUDA Graph reads by address).
    const std::vector<Variable>& parameters_and_constants() const { return stored_; }
    // Why a run cannot be recorded as a CUDA Graph ("Dropout 'd': its random stream ..."), from the ops'
    // definitions; empty when nothing in the schedule rules it out.
    const std::string& capture_refusal() const { return capture_refusal_; }

    MemoryPlan& memory_plan() { return memory_; }
    MemoryPlanStats memory_stats() const { return memory_.stats(); }

private:
    std::vector<Variable> outputs_, wrt_, gradient_order_;
    ProgramOptions options_;
    std::shared_ptr<const detail::Plan> plan_;  // the compiled schedule (built once, when made)
    int64_t num_steps_ = 0;
    uint64_t id_ = 0;
    std::vector<Variable> stored_;
    std::string capture_refusal_;
    MemoryPlan memory_;
};

}  // namespace ctk
