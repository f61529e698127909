// Distributed training (ctk_distributed): the communicator and CNTK's distributed learners.
#pragma once

#include "ctk/distributed/communicator.h"  // IWYU pragma: export
#include "ctk/distributed/learners.h"      // IWYU pragma: export
