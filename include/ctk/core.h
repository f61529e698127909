// The core layer's umbrella (ctk_core): dtypes, shapes, devices, storage and allocators, tensors, the RNG,
// the thread pool, CNTK's Dictionary, the op profile, the memory plan. One header per concept in ctk/core/.
#pragma once

#include "ctk/core/atomic_file.h"     // IWYU pragma: export
#include "ctk/core/build_info.h"      // IWYU pragma: export
#include "ctk/core/cuda.h"            // IWYU pragma: export
#include "ctk/core/device.h"          // IWYU pragma: export
#include "ctk/core/dictionary.h"      // IWYU pragma: export
#include "ctk/core/dtype.h"           // IWYU pragma: export
#include "ctk/core/error.h"           // IWYU pragma: export
#include "ctk/core/launcher.h"        // IWYU pragma: export
#include "ctk/core/memory_plan.h"     // IWYU pragma: export
#include "ctk/core/op_profile.h"      // IWYU pragma: export
#include "ctk/core/parallel.h"        // IWYU pragma: export
#include "ctk/core/rng.h"             // IWYU pragma: export
#include "ctk/core/shape.h"           // IWYU pragma: export
#include "ctk/core/shared_library.h"  // IWYU pragma: export
#include "ctk/core/storage.h"         // IWYU pragma: export
#include "ctk/core/tensor.h"          // IWYU pragma: export
