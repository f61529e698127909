// Shared pieces of ONNX import and export (src/formats/onnx_*.cpp): element-type mapping, tensor
// conversion with bounds checks, and the opset range ctk reads and writes.
#pragma once

#include <onnx/onnx_pb.h>  // defines ONNX_API, then includes onnx-ml.pb.h

#include <map>
#include <string>

#include "ctk/core/error.h"
#include "ctk/graph/function.h"

namespace ctk::detail::onnx_io {

// Export writes opsets 13 to 17 (17 unless asked); import reads 1 to 17. Below 7, a model is read when
// each of its ops is defined at its opset as at opset 7 (ONNX's schema registry says), since ctk
// implements the opset-7 forms and later.
inline constexpr int64_t kMinExportOpset = 13;
inline constexpr int64_t kMaxExportOpset = 17;
inline constexpr int64_t kExportIrVersion = 8;
inline constexpr int64_t kMinImportOpset = 1;
inline constexpr int64_t kMaxImportOpset = 17;

// The ctk dtype that holds an ONNX element type. Booleans become f32 0/1 (ctk's logic ops compute on
// floats); narrow integers widen. Throws NotImplementedError for strings, complex and unknown types.
DataType dtype_of_onnx(int32_t elem_type, const std::string& where);
int32_t onnx_of_dtype(DataType dtype);

// A ctk tensor from a TensorProto: the data size is checked against the dims before anything is
// allocated; external data is refused. Throws IOError naming `where`.
Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& where);
void tensor_to_proto(const Tensor& value, const std::string& name, onnx::TensorProto& out);

// a * b for dims and element counts, which a hostile file can make overflow: throws ShapeError naming
// `where` instead.
inline int64_t checked_mul(int64_t a, int64_t b, const std::string& where) {
    int64_t r = 0;
    if (__builtin_mul_overflow(a, b, &r)) throw ShapeError(where + ": dimension product overflows");
    return r;
}

// The graph of a model: export builds a ModelProto, import reads one.
void export_model(const FunctionPtr& model, onnx::ModelProto& out, int64_t opset);
// `fixed_inputs`: graph inputs read as constants with these values (see load_onnx_model).
FunctionPtr import_model(const onnx::ModelProto& model, const std::string& source,
                         const std::map<std::string, Tensor>& fixed_inputs);

}  // namespace ctk::detail::onnx_io
