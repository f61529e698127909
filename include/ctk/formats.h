// Model files (ctk_formats): CNTK v2, CNTK v1 and ONNX.
#pragma once

#include "ctk/formats/model.h"  // IWYU pragma: export
