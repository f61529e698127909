// CNTK's layers library (cntk.layers) in C++ (ctk_layers): layers, recurrent layers, higher-order layers.
#pragma once

#include "ctk/layers/higher_order.h"  // IWYU pragma: export
#include "ctk/layers/layers.h"        // IWYU pragma: export
#include "ctk/layers/sequence.h"      // IWYU pragma: export
