// ONNX import and export through the protobuf schema of Debian's libonnx-dev.
#include "ctk/error.h"
#include "ctk/model.h"

namespace ctk {

FunctionPtr load_onnx_model(const std::string& path) {
    throw NotImplementedError("load_onnx_model: ONNX import is not implemented yet (" + path + ")");
}

void save_onnx_model(const FunctionPtr&, const std::string& path) {
    throw NotImplementedError("save_onnx_model: ONNX export is not implemented yet (" + path + ")");
}

}  // namespace ctk
