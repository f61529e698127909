// CNTK v2's protobuf Dictionary: files (plain, or CNTK's framing for files over 2 GB), and the conversions
// between its messages and ctk's types. Shapes are column-major on disk (the innermost dim first) and
// row-major in ctk, so every shape is reversed on the way in and out; tensor data needs no reordering,
// since a column-major layout of the reversed dims is the row-major layout of the dims.
#pragma once

#include <cstdint>
#include <string>

#include "cntk.pb.h"
#include "ctk/core/dictionary.h"
#include "ctk/core/tensor.h"
#include "ctk/graph/axis.h"
#include "ctk/graph/function.h"
#include "ctk/graph/user_function.h"

namespace ctk::formats {

namespace proto = ::ctk::cntk_v2;

// CNTK's magic word 0x636e746b, written little-endian ("ktnc" on disk), that starts a file over
// protobuf's 2 GB message limit.
inline constexpr uint32_t kCntkLargeFileMagic = 0x636e746bU;
// Axis sentinels (CNTK's Axis::SentinelStaticAxisIndexValueFor*).
inline constexpr int32_t kAxisIndexDynamic = 2147483647;
inline constexpr int32_t kAxisIndexAllStatic = 2147483647 - 1;
inline constexpr int32_t kAxisIndexUnknown = 2147483647 - 2;
inline constexpr int32_t kAxisIndexAllAxes = 2147483647 - 4;
// NDShape's sentinel for an unknown shape (a placeholder's before it is bound).
inline constexpr uint64_t kUnknownShapeDim = static_cast<uint64_t>(-2);

// Protobuf logs a parse failure (invalid UTF-8, say) to stderr before returning false; ctk reports it as
// an exception naming the file instead, so the readers silence protobuf's own messages (all but FATAL).
// Process-wide, once.
void quiet_protobuf_logging();

// Parses a whole file's bytes; `source` names the file in errors. Every length is checked by protobuf
// against the bytes present; every tensor's element count is checked against its shape before a byte is
// allocated for it.
proto::Dictionary parse_cntk_dictionary(const std::string& bytes, const std::string& source);
proto::Dictionary read_cntk_dictionary_file(const std::string& path);
// The file's bytes: a plain protobuf, or, when the tensors make it `large_threshold` bytes or more, CNTK's
// large-file framing (magic, metadata size, the metadata without tensor values, then every float/double
// tensor's values little-endian in the order of a depth-first walk with keys sorted). Serialization is
// deterministic (map keys sorted), so equal Dictionaries give equal bytes.
std::string serialize_cntk_dictionary(const proto::Dictionary& d, uint64_t large_threshold = 0x7fffffffULL);
// Writes atomically (a temporary file, then rename).
void write_cntk_dictionary_file(const proto::Dictionary& d, const std::string& path);

// ---- conversions (`where` names the place in errors) ----
void dims_to_proto(const Dims& dims, proto::NDShape* out);
Dims dims_from_proto(const proto::NDShape& shape, const std::string& where);
void tensor_to_proto(const Tensor& t, proto::NDArrayView* out);
Tensor tensor_from_proto(const proto::NDArrayView& view, const std::string& where);
// Static axes: CNTK counts them column-major (and CNTK's Python API stores Python's axis i as -i-1);
// ctk's index is Python's, so the map is index -> -index-1 both ways.
void axis_to_proto(const Axis& axis, proto::Axis* out);
Axis axis_from_proto(const proto::Axis& axis, const std::string& where);

// ctk's Dictionary and CNTK's: ints become Int (-2^31..-1) or SizeT (the rest, as bits), doubles Double,
// tensors NDArrayView, lists Vector. Back: Int and SizeT become ints (a SizeT above 2^63 keeps its bits),
// Float and Double doubles, NDShape a list of its dims row-major, Axis a Dictionary {static_axis_idx, name,
// is_ordered_dynamic_axis}, and a value of a type this version does not know None (as CNTK does).
proto::Dictionary to_cntk_proto(const Dictionary& d);
Dictionary from_cntk_proto(const proto::Dictionary& d, const std::string& where);

// Small builders for DictionaryValues.
proto::DictionaryValue dv_bool(bool v);
proto::DictionaryValue dv_int(int32_t v);
proto::DictionaryValue dv_size_t(uint64_t v);
proto::DictionaryValue dv_double(double v);
proto::DictionaryValue dv_string(const std::string& v);
proto::DictionaryValue dv_shape(const Dims& dims);
proto::DictionaryValue dv_axis(const Axis& axis);
proto::DictionaryValue dv_tensor(const Tensor& t);
proto::DictionaryValue dv_vector(std::vector<proto::DictionaryValue> items);
proto::DictionaryValue dv_dictionary(proto::Dictionary d);
const char* dv_type_name(int type);

}  // namespace ctk::formats

namespace ctk::formats {
// A model as CNTK's CompositeFunction Dictionary, and back (src/formats/cntk_v2_model.cpp).
proto::Dictionary cntk_v2_model_dictionary(const FunctionPtr& model);
FunctionPtr cntk_v2_model_from_dictionary(const proto::Dictionary& d, const std::string& source,
                                          const UserFunctionDeserializer& user_functions = {});
}  // namespace ctk::formats
