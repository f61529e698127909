// Internal: a recurrent loop of the plan compiled for the fused CPU cell kernel (ctk/kernels/cell_program.h).
// A loop made only of delays, matrix products with a fixed matrix, the element-wise ops the kernel has,
// slices of contiguous ranges, reshapes and aliases (CNTK's LSTM, GRU and RNNStep cells in Recurrence,
// RecurrenceFrom and Fold, optimized_rnnstack, stacked and both directions) runs as one kernel call;
// any other loop keeps the executor's frame-by-frame path, and so does a minibatch the kernel cannot
// take (a GPU, 16-bit floats, sequences continued from the previous minibatch).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ctk/kernels/cell_program.h"
#include "graph/executor.h"

namespace ctk::detail {

struct FusedLoop {
    cell::Program program;
    std::vector<int> input_slot;  // per node: the plan slot an input node reads (-1: computed)
    // Every loop step output: its slot, the node (and range) holding it, and whether anything outside the
    // loop reads it (only those are written out as [N, T, sample...] values).
    struct Output {
        int slot;
        cell::Ref ref;
        bool read_outside;
    };
    std::vector<Output> outputs;
};

// The loop compiled, or null with `why` set (the first step the kernel cannot run).
std::shared_ptr<const FusedLoop> compile_fused_loop(const Plan& plan, const Loop& loop, std::string& why);

// Forward of a compiled loop over `values` (fills its outputs' slots). Returns the run (with what its
// backward needs when `for_backward`), or null when this minibatch must take the general path.
std::shared_ptr<const cell::Run> run_fused_forward(const Plan& plan, const FusedLoop& fused,
                                                   std::vector<Value>& values, bool for_backward);

// Backward of a fused loop: adds the gradients of its operands (`leads` marks those wanted) into `grads`.
void run_fused_backward(const FusedLoop& fused, const cell::Run& run, const std::vector<Value>& values,
                        std::vector<Tensor>& grads, const std::vector<bool>& leads);

}  // namespace ctk::detail
