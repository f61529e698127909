// Internal: the compiled plans of Function::forward, outside the Function. A plan depends only on the
// outputs asked for; it is kept per (root Function, requested outputs) until the graph is edited
// (graph_generation) or the root Function is destroyed, so that evaluating a Function again builds
// nothing. A Program keeps its own plan instead (ctk/graph/program.h).
#pragma once

#include <memory>
#include <vector>

#include "graph/executor.h"

namespace ctk::detail {

// The plan for `wanted` (in the caller's stable order) from `root`, built on first request. Thread-safe:
// several threads may evaluate one Function.
std::shared_ptr<const Plan> cached_plan(const Function& root, const std::vector<Variable>& wanted);
// Drops `root`'s plans (its destructor).
void forget_plans(const Function& root) noexcept;

}  // namespace ctk::detail
