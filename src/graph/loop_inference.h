// Shape inference's guesses while a recurrent loop is being closed (see loop_inference.cpp).
#pragma once

#include <optional>
#include <vector>

#include "graph/graph_internal.h"

namespace ctk::detail {

// The dynamic axes that v, of unknown shape, will have: those of the known values it is computed
// from, when they agree; nullopt when nothing tells, they disagree, or an op on the way changes axes.
std::optional<std::vector<Axis>> loop_axes(const Variable& v);

// Whether a binary element-wise op with some operands unknown may take the shape its known operands
// give (they are not a broadcasting parameter alone).
bool may_guess_from_known_operands(const Function& f, const std::vector<Variable>& known_inputs);

// f's outputs guessed from its known operands alone (a delay from its initial state, a product from
// its weight, a broadcast from the sequence's axes), or nullopt.
std::optional<std::vector<OutputSpec>> guess_loop_outputs(const Function& f);

}  // namespace ctk::detail
