// A serialized onnx::TensorProto file (the input_N.pb / output_N.pb of ONNX's node tests) read into a
// ctk tensor, for tests and tools that do not link the ONNX schema themselves.
#pragma once

#include <string>

#include "ctk/core/tensor.h"

namespace ctk {

struct OnnxTensorFile {
    std::string name;  // the tensor's name in the file (may be empty)
    Tensor value;      // booleans as f32 0/1, as the importer represents them
};
// Throws IOError naming the file when it is unreadable, corrupt, or its data does not fit its dims.
OnnxTensorFile load_onnx_tensor_file(const std::string& path);

}  // namespace ctk
