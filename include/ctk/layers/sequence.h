// CNTK's recurrent layers (cntk.layers' blocks.py step functions and sequence.py): LSTM, GRU and RNNStep
// steps, and Recurrence, RecurrenceFrom and Fold that run a step along a sequence axis.
#pragma once

#include <optional>
#include <string>

#include "ctk/layers/layers.h"

namespace ctk::layers {

// Step functions: blocks whose operands are the previous state(s), then the input x. RNNStep and GRU:
// (h, x) -> h; LSTM: (h, c, x) -> (h, c), two outputs. W [inferred, k * cell], H [shape, k * cell] and
// b [k * cell] stack the gates along the last axis in CNTK's order (LSTM: input, cell candidate, forget,
// output; GRU: update, reset, candidate, with H1 [shape, cell] for the candidate). cell_shape given: the
// cell is that size and P [cell, shape] projects it to the output. enable_self_stabilization: CNTK's
// Stabilizers on the previous states and on h before the projection. Defaults as CNTK: activation tanh
// (RNNStep: sigmoid), init glorot_uniform, init_bias 0, no peepholes, no stabilization.
struct RecurrentOptions {
    std::optional<Dims> cell_shape{};
    std::optional<ActivationFn> activation{};
    std::optional<bool> use_peepholes{};  // LSTM only: Ci, Cf, Co [cell] on the cell state
    std::optional<Initializer> init{};
    std::optional<double> init_bias{};
    std::optional<bool> enable_self_stabilization{};
    std::string name{};
};
FunctionPtr LSTM(const Dims& shape, const RecurrentOptions& options = {});
FunctionPtr GRU(const Dims& shape, const RecurrentOptions& options = {});
FunctionPtr RNNStep(const Dims& shape, const RecurrentOptions& options = {});

// CNTK's Recurrence: applies `step` along the sequence axis of x, each step's state(s) fed back through
// past_value (go_backwards: future_value) starting from `initial_state` (a scalar or a Variable that
// broadcasts to the state). Unset go_backwards and initial_state take default_options' values, else
// false and 0. The result is the first state (h) over the sequence, or every state when
// return_full_state.
FunctionPtr Recurrence(const FunctionPtr& step, std::optional<bool> go_backwards = std::nullopt,
                       const Variable& initial_state = {}, bool return_full_state = false,
                       const std::string& name = "");
// CNTK's RecurrenceFrom: Recurrence whose initial states are operands, one per state, before x: the
// layer is applied as layer(s0, ..., x) (call with all operands), e.g. a decoder started from an
// encoder's final state (a per-sequence [#] value, or a static one that broadcasts).
FunctionPtr RecurrenceFrom(const FunctionPtr& step, std::optional<bool> go_backwards = std::nullopt,
                           bool return_full_state = false, const std::string& name = "");
// Recurrence, then the last step of the sequence (go_backwards: the first): CNTK's Fold.
FunctionPtr Fold(const FunctionPtr& step, std::optional<bool> go_backwards = std::nullopt,
                 const Variable& initial_state = {}, bool return_full_state = false,
                 const std::string& name = "");

}  // namespace ctk::layers
