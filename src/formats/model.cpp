// The model-file entry points: format detection and dispatch.
#include "ctk/formats/model.h"

#include <cstring>
#include <fstream>

#include "ctk/core/error.h"

namespace ctk {

const char* model_format_name(ModelFormat format) {
    switch (format) {
        case ModelFormat::cntk_v2:
            return "CNTKv2";
        case ModelFormat::onnx:
            return "ONNX";
        case ModelFormat::cntk_v1:
            return "CNTKv1";
    }
    return "?";
}

ModelFormat detect_model_format(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw IOError("cannot open model file '" + path + "'");
    unsigned char head[8] = {};
    in.read(reinterpret_cast<char*>(head), sizeof(head));
    const auto got = static_cast<size_t>(in.gcount());
    // v1: UTF-16LE "BCN\0" (CNTK's BackCompat IsLegacyModel).
    static const unsigned char kV1[8] = {'B', 0, 'C', 0, 'N', 0, 0, 0};
    if (got == 8 && std::memcmp(head, kV1, 8) == 0) return ModelFormat::cntk_v1;
    // v2 larger than 2 GB: the magic 0x636e746b little-endian ("ktnc" on disk).
    if (got >= 4 && std::memcmp(head, "ktnc", 4) == 0) return ModelFormat::cntk_v2;
    // v2 plain: a Dictionary starting with version = 1 (field 1, varint: 08 01), then its data (field 2).
    // ONNX ModelProto also starts with field 1 (ir_version), but ONNX IR versions 1 and 2 predate every
    // opset ctk reads, so "08 01" is CNTK v2 and "08 n" with n >= 3 is ONNX.
    if (got >= 3 && head[0] == 0x08 && head[1] == 0x01 && head[2] == 0x12) return ModelFormat::cntk_v2;
    if (got >= 2 && head[0] == 0x08 && head[1] >= 0x03 && head[1] < 0x80) return ModelFormat::onnx;
    throw IOError("'" + path + "' is not a model file ctk knows: not CNTK v2, CNTK v1 or ONNX (first bytes)");
}

void save_model(const FunctionPtr& model, const std::string& path, ModelFormat format) {
    if (!model) throw ValueError("save_model: null Function");
    switch (format) {
        case ModelFormat::cntk_v2:
            return save_cntk_v2_model(model, path);
        case ModelFormat::onnx:
            return save_onnx_model(model, path);
        case ModelFormat::cntk_v1:
            throw ValueError(
                "save_model: CNTK v1 models can be read but not written; save as CNTKv2 or ONNX");
    }
}

FunctionPtr load_model(const std::string& path, std::optional<ModelFormat> format,
                       const UserFunctionDeserializer& user_functions) {
    switch (format ? *format : detect_model_format(path)) {
        case ModelFormat::cntk_v2:
            return load_cntk_v2_model(path, user_functions);
        case ModelFormat::onnx:
            return load_onnx_model(path);
        case ModelFormat::cntk_v1:
            return load_cntk_v1_model(path);
    }
    throw ValueError("load_model: unknown format");
}

}  // namespace ctk
