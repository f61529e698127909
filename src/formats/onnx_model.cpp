// ONNX import and export through the protobuf schema of Debian's libonnx-dev: the file-level entry
// points (bounded parsing, atomic writing) and the tensor conversions shared by onnx_export.cpp and
// onnx_import.cpp. A corrupt or hostile file throws IOError naming it; nothing is allocated beyond what
// the file's own bytes justify.
#include <google/protobuf/io/coded_stream.h>
#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <cstring>
#include <fstream>
#include <limits>

#include "ctk/core/error.h"
#include "ctk/formats/model.h"
#include "formats/onnx_common.h"
#include "formats/onnx_tensor_file.h"

namespace ctk {
namespace detail::onnx_io {

DataType dtype_of_onnx(int32_t elem_type, const std::string& where) {
    using TP = onnx::TensorProto;
    switch (elem_type) {
        case TP::FLOAT:
        case TP::BOOL:
            return DataType::f32;
        case TP::DOUBLE:
            return DataType::f64;
        case TP::FLOAT16:
            return DataType::f16;
        case TP::BFLOAT16:
            return DataType::bf16;
        case TP::UINT8:
            return DataType::u8;
        case TP::INT8:
        case TP::INT16:
        case TP::UINT16:
        case TP::INT32:
            return DataType::i32;
        case TP::UINT32:
        case TP::INT64:
            return DataType::i64;
        default:
            CTK_THROW(NotImplementedError, where, ": ONNX element type ", elem_type,
                      " has no ctk dtype (strings, complex and unsigned 64-bit are not supported)");
    }
}

int32_t onnx_of_dtype(DataType dtype) {
    using TP = onnx::TensorProto;
    switch (dtype) {
        case DataType::f32:
            return TP::FLOAT;
        case DataType::f64:
            return TP::DOUBLE;
        case DataType::f16:
            return TP::FLOAT16;
        case DataType::bf16:
            return TP::BFLOAT16;
        case DataType::i32:
            return TP::INT32;
        case DataType::i64:
            return TP::INT64;
        case DataType::u8:
            return TP::UINT8;
    }
    return TP::UNDEFINED;
}

namespace {

// Bytes per element of an ONNX element type in raw_data (0: not a fixed-size type).
size_t onnx_element_size(int32_t t) {
    using TP = onnx::TensorProto;
    switch (t) {
        case TP::UINT8:
        case TP::INT8:
        case TP::BOOL:
            return 1;
        case TP::UINT16:
        case TP::INT16:
        case TP::FLOAT16:
        case TP::BFLOAT16:
            return 2;
        case TP::FLOAT:
        case TP::INT32:
        case TP::UINT32:
            return 4;
        case TP::DOUBLE:
        case TP::INT64:
        case TP::UINT64:
            return 8;
        default:
            return 0;
    }
}

// One element of raw little-endian data as a double (integers beyond 2^53 lose precision; they go
// through the i64 path below instead).
double raw_element(const char* p, int32_t t) {
    using TP = onnx::TensorProto;
    auto get = [p]<typename T>(T) {
        T v;
        std::memcpy(&v, p, sizeof(T));
        return v;
    };
    switch (t) {
        case TP::UINT8:
            return get(uint8_t{});
        case TP::INT8:
            return get(int8_t{});
        case TP::BOOL:
            return get(uint8_t{}) != 0 ? 1.0 : 0.0;
        case TP::UINT16:
            return get(uint16_t{});
        case TP::INT16:
            return get(int16_t{});
        case TP::FLOAT16:
            return half_bits_to_float(get(uint16_t{}));
        case TP::BFLOAT16:
            return static_cast<float>(BFloat16::from_bits(get(uint16_t{})));
        case TP::FLOAT:
            return get(float{});
        case TP::INT32:
            return get(int32_t{});
        case TP::UINT32:
            return get(uint32_t{});
        case TP::DOUBLE:
            return get(double{});
        case TP::INT64:
            return static_cast<double>(get(int64_t{}));
        default:
            return static_cast<double>(get(uint64_t{}));
    }
}

// Values held in int32_data: the integer types up to 32 bits, bool, and the 16-bit floats as bits.
double int32_field_element(int32_t v, int32_t t) {
    using TP = onnx::TensorProto;
    switch (t) {
        case TP::BOOL:
            return v != 0 ? 1.0 : 0.0;
        case TP::FLOAT16:
            return half_bits_to_float(static_cast<uint16_t>(v));
        case TP::BFLOAT16:
            return static_cast<float>(BFloat16::from_bits(static_cast<uint16_t>(v)));
        default:
            return v;
    }
}

}  // namespace

Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& where) {
    using TP = onnx::TensorProto;
    const std::string what = where + ": tensor '" + t.name() + "'";
    CTK_CHECK(t.data_location() != TP::EXTERNAL && t.external_data_size() == 0, IOError, what,
              " keeps its data in an external file; ctk reads only self-contained ONNX files");
    CTK_CHECK(!t.has_segment(), IOError, what, " is segmented; ctk does not read segmented tensors");
    const int32_t type = t.data_type();
    const DataType dtype = dtype_of_onnx(type, what);
    Dims dims;
    int64_t numel = 1;
    constexpr int64_t kMaxElements = int64_t(1) << 40;
    for (int64_t d : t.dims()) {
        CTK_CHECK(d >= 0 && d <= kMaxElements, IOError, what, " has an invalid dim ", d);
        CTK_CHECK(d == 0 || numel <= kMaxElements / d, IOError, what, " declares too many elements");
        numel *= d;
        CTK_CHECK(numel <= kMaxElements, IOError, what, " declares too many elements");
        dims.push_back(d);
    }
    const size_t esize = onnx_element_size(type);
    const auto n = static_cast<size_t>(numel);
    if (t.has_raw_data()) {
        CTK_CHECK(esize > 0 && t.raw_data().size() == n * esize, IOError, what, " declares ", numel,
                  " elements of ", esize, " bytes in dims ", dims_to_string(dims), " but holds ",
                  t.raw_data().size(), " bytes of raw data");
    } else {
        size_t have = 0;
        switch (type) {
            case TP::FLOAT:
                have = static_cast<size_t>(t.float_data_size());
                break;
            case TP::DOUBLE:
                have = static_cast<size_t>(t.double_data_size());
                break;
            case TP::INT64:
                have = static_cast<size_t>(t.int64_data_size());
                break;
            case TP::UINT32:
            case TP::UINT64:
                have = static_cast<size_t>(t.uint64_data_size());
                break;
            default:
                have = static_cast<size_t>(t.int32_data_size());
        }
        CTK_CHECK(have == n, IOError, what, " declares ", numel, " elements in dims ", dims_to_string(dims),
                  " but holds ", have);
    }
    Tensor out = Tensor::empty(Shape(dims), dtype);
    char* dst = static_cast<char*>(out.raw_data());
    const size_t dsize = size_of(dtype);
    if (t.has_raw_data()) {
        const char* src = t.raw_data().data();
        if ((type == TP::FLOAT && dtype == DataType::f32) || type == TP::DOUBLE || type == TP::INT64 ||
            type == TP::INT32 || type == TP::UINT8 || type == TP::FLOAT16 || type == TP::BFLOAT16) {
            std::memcpy(dst, src, n * esize);
        } else {
            for (size_t i = 0; i < n; ++i)
                store_from_double(dst + i * dsize, dtype, raw_element(src + i * esize, type));
        }
        return out;
    }
    for (size_t i = 0; i < n; ++i) {
        char* p = dst + i * dsize;
        const int k = static_cast<int>(i);
        switch (type) {
            case TP::FLOAT:
                store_from_double(p, dtype, t.float_data(k));
                break;
            case TP::DOUBLE:
                store_from_double(p, dtype, t.double_data(k));
                break;
            case TP::INT64: {
                const int64_t v = t.int64_data(k);
                std::memcpy(p, &v, 8);
                break;
            }
            case TP::UINT32:
            case TP::UINT64: {
                const auto v = static_cast<int64_t>(t.uint64_data(k));
                std::memcpy(p, &v, 8);
                break;
            }
            case TP::FLOAT16:
            case TP::BFLOAT16: {
                const auto bits = static_cast<uint16_t>(t.int32_data(k));
                std::memcpy(p, &bits, 2);
                break;
            }
            default:
                store_from_double(p, dtype, int32_field_element(t.int32_data(k), type));
        }
    }
    return out;
}

void tensor_to_proto(const Tensor& value, const std::string& name, onnx::TensorProto& out) {
    Tensor c = value.to(Device::cpu()).contiguous();
    out.set_name(name);
    out.set_data_type(onnx_of_dtype(c.dtype()));
    for (int64_t d : c.shape().dims()) out.add_dims(d);
    out.set_raw_data(std::string(static_cast<const char*>(c.raw_data()),
                                 static_cast<size_t>(c.numel()) * c.element_size()));
}

}  // namespace detail::onnx_io

namespace {

// Parses `path` as a protobuf message, never reading more than the file's own bytes.
void parse_file(const std::string& path, const char* what, google::protobuf::MessageLite& message) {
    std::ifstream in(path, std::ios::binary);
    CTK_CHECK(in, IOError, what, ": cannot open '", path, "'");
    in.seekg(0, std::ios::end);
    const std::streamoff size = in.tellg();
    CTK_CHECK(size >= 0, IOError, what, ": cannot read '", path, "'");
    CTK_CHECK(size < std::numeric_limits<int>::max(), IOError, what, ": '", path,
              "' is larger than 2 GB; ctk reads only self-contained ONNX files");
    in.seekg(0);
    std::string bytes(static_cast<size_t>(size), '\0');
    in.read(bytes.data(), size);
    CTK_CHECK(in.gcount() == size, IOError, what, ": cannot read '", path, "'");
    google::protobuf::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(bytes.data()),
                                                  static_cast<int>(bytes.size()));
    stream.SetTotalBytesLimit(static_cast<int>(bytes.size()));
    CTK_CHECK(message.ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage(), IOError, what, ": '",
              path, "' is not a valid ONNX file (protobuf parsing failed)");
}

// ONNX's strings are UTF-8, but protobuf's proto2 does not check: a file's names with other bytes are
// written \xNN (the same for every reference to a name, so the graph stays connected), so that the
// Variables and Functions made from them carry names Python, C# and terminals can take.
void escape_names(onnx::GraphProto& g) {
    auto fix = [](std::string* s) {
        if (std::string e = escape_invalid_utf8(*s); e != *s) *s = std::move(e);
    };
    fix(g.mutable_name());
    for (auto& n : *g.mutable_node()) {
        fix(n.mutable_name());
        for (auto& s : *n.mutable_input()) fix(&s);
        for (auto& s : *n.mutable_output()) fix(&s);
        for (auto& a : *n.mutable_attribute()) {
            if (a.has_g()) escape_names(*a.mutable_g());
            for (auto& sub : *a.mutable_graphs()) escape_names(sub);
        }
    }
    for (auto& v : *g.mutable_input()) fix(v.mutable_name());
    for (auto& v : *g.mutable_output()) fix(v.mutable_name());
    for (auto& v : *g.mutable_value_info()) fix(v.mutable_name());
    for (auto& t : *g.mutable_initializer()) fix(t.mutable_name());
}

}  // namespace

OnnxTensorFile load_onnx_tensor_file(const std::string& path) {
    onnx::TensorProto t;
    parse_file(path, "load_onnx_tensor_file", t);
    return {escape_invalid_utf8(t.name()),
            detail::onnx_io::tensor_from_proto(t, "load_onnx_tensor_file '" + path + "'")};
}

FunctionPtr load_onnx_model(const std::string& path, const std::map<std::string, Tensor>& fixed_inputs) {
    onnx::ModelProto model;
    parse_file(path, "load_onnx_model", model);
    CTK_CHECK(model.ByteSizeLong() > 0, IOError, "load_onnx_model: '", path, "' is empty");
    escape_names(*model.mutable_graph());
    const std::string source = "load_onnx_model '" + path + "'";
    try {
        return detail::onnx_io::import_model(model, source, fixed_inputs);
    } catch (const Error&) {
        throw;
    } catch (const std::exception& e) {
        CTK_THROW(IOError, source, ": ", e.what());
    }
}

void save_onnx_model(const FunctionPtr& model, const std::string& path, int64_t opset) {
    using namespace detail::onnx_io;
    CTK_CHECK(model != nullptr, ValueError, "save_onnx_model: null model for '", path, "'");
    CTK_CHECK(opset >= kMinExportOpset && opset <= kMaxExportOpset, ValueError, "save_onnx_model: opset ",
              opset, " for '", path, "' is outside the ones ctk writes (", kMinExportOpset, " to ",
              kMaxExportOpset, ")");
    onnx::ModelProto proto;
    export_model(model, proto, opset);
    // ONNX's own checker (each node against its operator schema at this opset, the graph's names and
    // types): ctk never writes a file that other ONNX readers would refuse.
    try {
        onnx::checker::check_model(proto);
    } catch (const onnx::checker::ValidationError& e) {
        CTK_THROW(NotImplementedError, "save_onnx_model: the model exported for '", path,
                  "' fails ONNX's checker at opset ", opset, ": ", e.what());
    }
    // And ONNX's shape inference, strict (a node whose inference fails, or a type or shape that disagrees
    // with what ctk declared, is an error), on a copy: the file keeps only what ctk wrote.
    try {
        onnx::ModelProto inferred = proto;
        onnx::shape_inference::InferShapes(inferred, onnx::OpSchemaRegistry::Instance(),
                                           onnx::ShapeInferenceOptions(true, 1, false));
    } catch (const std::exception& e) {
        CTK_THROW(NotImplementedError, "save_onnx_model: the model exported for '", path,
                  "' fails ONNX's shape inference at opset ", opset, ": ", e.what());
    }
    std::string bytes;
    CTK_CHECK(proto.SerializeToString(&bytes), IOError, "save_onnx_model: cannot serialize the model for '",
              path, "' (over 2 GB?)");
    write_file_atomically(path, bytes);
}

}  // namespace ctk
