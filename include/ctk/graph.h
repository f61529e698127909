// The graph layer's umbrella (ctk_graph): CNTK's symbolic graph: variables, functions, the graph op list and
// its builders, compiled Programs, values with dynamic axes, initializers, mixed precision.
#pragma once

#include "ctk/graph/axis.h"             // IWYU pragma: export
#include "ctk/graph/bind.h"             // IWYU pragma: export
#include "ctk/graph/function.h"         // IWYU pragma: export
#include "ctk/graph/graph_op_list.h"    // IWYU pragma: export
#include "ctk/graph/graph_ops.h"        // IWYU pragma: export
#include "ctk/graph/initializer.h"      // IWYU pragma: export
#include "ctk/graph/mixed_precision.h"  // IWYU pragma: export
#include "ctk/graph/program.h"          // IWYU pragma: export
#include "ctk/graph/user_function.h"    // IWYU pragma: export
#include "ctk/graph/value.h"            // IWYU pragma: export
#include "ctk/graph/variable.h"         // IWYU pragma: export
