// CNTK's learners and training-parameter schedules (ctk_learners). See docs/training.md.
#pragma once

#include "ctk/learners/learner.h"    // IWYU pragma: export
#include "ctk/learners/schedules.h"  // IWYU pragma: export
