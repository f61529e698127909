// The umbrella header: everything a ctk user needs, layer by layer (each layer's umbrella includes one
// header per concept from its folder: ctk/core/, ctk/kernels/, ctk/graph/, ...; docs/architecture.md).
#pragma once

#include "ctk/core.h"         // IWYU pragma: export
#include "ctk/distributed.h"  // IWYU pragma: export
#include "ctk/formats.h"      // IWYU pragma: export
#include "ctk/graph.h"        // IWYU pragma: export
#include "ctk/io.h"           // IWYU pragma: export
#include "ctk/kernels.h"      // IWYU pragma: export
#include "ctk/layers.h"       // IWYU pragma: export
#include "ctk/learners.h"     // IWYU pragma: export
#include "ctk/train.h"        // IWYU pragma: export
