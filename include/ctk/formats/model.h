// Model files: CNTK v2 models (read and written), CNTK v1 models (cntk.exe / BrainScript, read only) and
// ONNX (read and written). save_model/load_model are the one entry point; load_model finds the format
// from the file's first bytes. CNTK v2 Dictionaries (the `.ckp` checkpoint and learner state, written in
// the same protobuf format) are read and written here too.
//
// Every reader checks each length and count against the bytes left, so a truncated, corrupt or hostile
// file throws IOError naming the file and what is wrong, never crashes or allocates unbounded memory.
#pragma once

#include <map>
#include <optional>
#include <string>

#include "ctk/core/dictionary.h"
#include "ctk/graph/function.h"
#include "ctk/graph/user_function.h"

namespace ctk {

// CNTK's ModelFormat (CNTKv2 = 0, ONNX = 1), plus the legacy v1 format ctk reads.
enum class ModelFormat : uint8_t { cntk_v2, onnx, cntk_v1 };
const char* model_format_name(ModelFormat format);  // "CNTKv2", "ONNX", "CNTKv1"

// The format of a model file from its first bytes; throws IOError naming the file when it is none of them.
ModelFormat detect_model_format(const std::string& path);

// Writes `model` atomically (a temporary file, then rename). CNTK v1 cannot be written.
void save_model(const FunctionPtr& model, const std::string& path, ModelFormat format = ModelFormat::cntk_v2);
// Reads a model; without `format` it is detected. The result is a composite whose outputs are the
// model's outputs, with its parameters, constants and inputs as in the file. A CNTK v2 file's user
// functions are rebuilt by `user_functions` (without one, such a file is a NotImplementedError naming
// the function).
FunctionPtr load_model(const std::string& path, std::optional<ModelFormat> format = std::nullopt,
                       const UserFunctionDeserializer& user_functions = {});

// CNTK v2 Dictionary files (a Trainer's `.ckp`, a learner's state): CNTK's protobuf, written
// atomically. SizeT and Int become ints (a SizeT above 2^63 keeps its bits), Float and Double doubles,
// NDShape a list of dims (row-major), Axis a Dictionary {static_axis_idx, name, is_ordered_dynamic_axis};
// value types newer than this reader become None, as in CNTK.
Dictionary load_cntk_dictionary(const std::string& path);
void save_cntk_dictionary(const Dictionary& d, const std::string& path);
// The same bytes in memory (what distributed training sends between workers); `source` names them in
// errors.
std::string cntk_dictionary_bytes(const Dictionary& d);
Dictionary cntk_dictionary_from_bytes(const std::string& bytes, const std::string& source);

// CNTK's Function.attributes: a primitive Function's attributes with the names and types CNTK's v2 model
// format gives them (in load_cntk_dictionary's types); an op CNTK did not have shows ctk's own
// (`ctkOp`, `ctkAttributes`). ValueError for a composite or block.
Dictionary cntk_v2_attributes(const Function& f);

// ---- the individual formats (load_model/save_model dispatch to these) ----
FunctionPtr load_cntk_v2_model(const std::string& path, const UserFunctionDeserializer& user_functions = {});
void save_cntk_v2_model(const FunctionPtr& model, const std::string& path);
// The bytes of a CNTK v2 model file, and a model from them (CNTK's Function::Load from a buffer);
// `source` names the bytes in errors.
std::string serialize_cntk_v2_model(const FunctionPtr& model);
FunctionPtr deserialize_cntk_v2_model(const std::string& bytes, const std::string& source = "<buffer>",
                                      const UserFunctionDeserializer& user_functions = {});
FunctionPtr load_cntk_v1_model(const std::string& path);
// ONNX opsets 1 to 17 are read. ctk's graphs have static shapes, so an operand that sets a shape (a
// Reshape target, Slice's starts, TopK's k, ...) must be a constant; a model that takes one as a graph
// input is read with that input fixed: `fixed_inputs` maps input names to their values, and those inputs
// become constants (ValueError for a name that is no graph input or a value of another shape).
FunctionPtr load_onnx_model(const std::string& path, const std::map<std::string, Tensor>& fixed_inputs = {});
// Writes ai.onnx opset `opset` (13 to 17), checked by ONNX's own checker before it is written.
void save_onnx_model(const FunctionPtr& model, const std::string& path, int64_t opset = 17);

}  // namespace ctk
