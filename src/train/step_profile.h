// Internal to the training layer: the op-profile label of a whole training step, which the Trainer
// times under and the profiler's summary counts steps by.
#pragma once

namespace ctk::detail {

inline constexpr const char* kStepProfileLabel = "train_minibatch";
inline constexpr const char* kStepProfilePhase = "whole step";

}  // namespace ctk::detail
