// Training as CNTK users know it: Trainer (one minibatch at a time), Evaluator, training_session (the
// loop with checkpoints, cross-validation and a final test), progress writers with CNTK's exact log
// lines, and checkpoints that restore a run bit-identically. See docs/training.md.
#pragma once

// The training layer's umbrella: one header per concept under ctk/train/.
#include "ctk/train/profiler.h"  // IWYU pragma: export
#include "ctk/train/progress.h"  // IWYU pragma: export
#include "ctk/train/session.h"   // IWYU pragma: export
#include "ctk/train/trainer.h"   // IWYU pragma: export
