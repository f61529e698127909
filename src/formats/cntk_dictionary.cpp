// CNTK v2 Dictionary files and the conversions between CNTK's messages and ctk's types.
#include "formats/cntk_dictionary.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <mutex>

#include "ctk/core/error.h"
#include "ctk/formats/model.h"

namespace ctk::formats {

namespace {

uint32_t read_le32(const char* p) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
    return v;
}
void append_le32(std::string& out, uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// The element count of a shape, refusing counts no file could hold (a hostile shape must not make us
// allocate).
uint64_t checked_numel(const proto::NDShape& shape, const std::string& where) {
    constexpr uint64_t kMax = uint64_t(1) << 40;
    uint64_t n = 1;
    for (uint64_t d : shape.shape_dim()) {
        if (d > kMax)
            throw IOError(where + ": tensor dimension " + std::to_string(d) + " is not a real size");
        if (d != 0 && n > kMax / d)
            throw IOError(where + ": tensor of more than 2^40 elements declared (corrupt or hostile file)");
        n *= d;
    }
    return n;
}

size_t element_bytes(proto::NDArrayView::DataType t) {
    switch (t) {
        case proto::NDArrayView::Float:
            return 4;
        case proto::NDArrayView::Double:
            return 8;
        default:
            return 0;  // not carried in the large-file payload (CNTK wrote only float and double there)
    }
}

// Depth-first over every NDArrayView, map keys sorted: the payload order of the large-file framing.
template <typename Visit>
void walk_views(proto::Dictionary& d, Visit&& visit);
template <typename Visit>
void walk_views(proto::DictionaryValue& v, Visit&& visit) {
    switch (v.value_case()) {
        case proto::DictionaryValue::kNdArrayViewValue:
            visit(*v.mutable_nd_array_view_value());
            break;
        case proto::DictionaryValue::kVectorValue:
            for (auto& item : *v.mutable_vector_value()->mutable_value()) walk_views(item, visit);
            break;
        case proto::DictionaryValue::kDictionaryValue:
            walk_views(*v.mutable_dictionary_value(), visit);
            break;
        default:
            break;
    }
}
template <typename Visit>
void walk_views(proto::Dictionary& d, Visit&& visit) {
    std::vector<std::string> keys;
    keys.reserve(d.data().size());
    for (const auto& kv : d.data()) keys.push_back(kv.first);
    std::sort(keys.begin(), keys.end());
    for (const auto& k : keys) walk_views((*d.mutable_data())[k], visit);
}

}  // namespace

void quiet_protobuf_logging() {
    static std::once_flag once;
    std::call_once(once, [] {
        google::protobuf::SetLogHandler(
            [](google::protobuf::LogLevel level, const char* file, int line, const std::string& message) {
                if (level == google::protobuf::LOGLEVEL_FATAL)
                    std::fprintf(stderr, "[libprotobuf FATAL %s:%d] %s\n", file, line, message.c_str());
            });
    });
}

proto::Dictionary parse_cntk_dictionary(const std::string& bytes, const std::string& source) {
    quiet_protobuf_logging();
    if (bytes.empty()) throw IOError(source + ": empty file, not a CNTK v2 model or Dictionary");
    size_t meta_begin = 0, meta_size = bytes.size();
    const bool large = bytes.size() >= 8 && read_le32(bytes.data()) == kCntkLargeFileMagic;
    if (large) {
        meta_begin = 8;
        meta_size = read_le32(bytes.data() + 4);
        if (meta_size > bytes.size() - 8)
            throw IOError(source + ": large-file header declares " + std::to_string(meta_size) +
                          " bytes of metadata but only " + std::to_string(bytes.size() - 8) + " follow");
    }
    proto::Dictionary d;
    if (meta_size > static_cast<size_t>(std::numeric_limits<int>::max()) ||
        !d.ParseFromArray(bytes.data() + meta_begin, static_cast<int>(meta_size)))
        throw IOError(source +
                      ": not a valid CNTK v2 protobuf Dictionary (truncated or corrupt at some byte " +
                      "of its " + std::to_string(meta_size) + ")");
    size_t offset = meta_begin + meta_size;
    // Check every tensor's element count against its shape; in the large framing, take the values that
    // the metadata left out from the payload.
    walk_views(d, [&](proto::NDArrayView& view) {
        const uint64_t n = checked_numel(view.shape(), source);
        int have = -1;
        switch (view.values_case()) {
            case proto::NDArrayView::kFloatValues:
                have = view.float_values().value_size();
                break;
            case proto::NDArrayView::kDoubleValues:
                have = view.double_values().value_size();
                break;
            default:
                break;
        }
        const size_t esize = element_bytes(view.data_type());
        if (large && esize && static_cast<uint64_t>(std::max(have, 0)) != n) {
            if (n > (bytes.size() - offset) / esize)
                throw IOError(source + ": large-file payload ends before tensor of " + std::to_string(n) +
                              " elements (at byte " + std::to_string(offset) + ")");
            const char* p = bytes.data() + offset;
            if (view.data_type() == proto::NDArrayView::Float) {
                auto* values = view.mutable_float_values()->mutable_value();
                values->Resize(static_cast<int>(n), 0.0f);
                std::memcpy(values->mutable_data(), p, n * 4);  // little-endian on every supported host
            } else {
                auto* values = view.mutable_double_values()->mutable_value();
                values->Resize(static_cast<int>(n), 0.0);
                std::memcpy(values->mutable_data(), p, n * 8);
            }
            offset += n * esize;
        }
    });
    if (large && offset != bytes.size())
        throw IOError(source + ": " + std::to_string(bytes.size() - offset) +
                      " unexpected bytes after the large-file payload");
    return d;
}

proto::Dictionary read_cntk_dictionary_file(const std::string& path) {
    return parse_cntk_dictionary(read_file(path), "'" + path + "'");
}

std::string serialize_cntk_dictionary(const proto::Dictionary& d, uint64_t large_threshold) {
    auto deterministic = [](const proto::Dictionary& m) {
        std::string out;
        google::protobuf::io::StringOutputStream stream(&out);
        google::protobuf::io::CodedOutputStream coded(&stream);
        coded.SetSerializationDeterministic(true);
        if (!m.SerializeToCodedStream(&coded))
            throw Error("CNTK v2 Dictionary: protobuf serialization failed");
        coded.Trim();
        return out;
    };
    if (d.ByteSizeLong() < large_threshold) return deterministic(d);
    // The large framing: the values go after the metadata.
    proto::Dictionary meta = d;
    std::string payload;
    walk_views(meta, [&](proto::NDArrayView& view) {
        if (view.values_case() == proto::NDArrayView::kFloatValues) {
            const auto& v = view.float_values().value();
            payload.append(reinterpret_cast<const char*>(v.data()), static_cast<size_t>(v.size()) * 4);
            view.clear_float_values();
        } else if (view.values_case() == proto::NDArrayView::kDoubleValues) {
            const auto& v = view.double_values().value();
            payload.append(reinterpret_cast<const char*>(v.data()), static_cast<size_t>(v.size()) * 8);
            view.clear_double_values();
        }
    });
    std::string body = deterministic(meta);
    if (body.size() > std::numeric_limits<uint32_t>::max())
        throw ValueError("CNTK v2 Dictionary: metadata of " + std::to_string(body.size()) +
                         " bytes exceeds the large-file framing's 4 GB limit");
    std::string out;
    out.reserve(8 + body.size() + payload.size());
    append_le32(out, kCntkLargeFileMagic);
    append_le32(out, static_cast<uint32_t>(body.size()));
    out += body;
    out += payload;
    return out;
}

void write_cntk_dictionary_file(const proto::Dictionary& d, const std::string& path) {
    write_file_atomically(path, serialize_cntk_dictionary(d));
}

// ---- shapes, tensors, axes ----

void dims_to_proto(const Dims& dims, proto::NDShape* out) {
    out->clear_shape_dim();
    for (auto it = dims.rbegin(); it != dims.rend(); ++it) out->add_shape_dim(static_cast<uint64_t>(*it));
}

Dims dims_from_proto(const proto::NDShape& shape, const std::string& where) {
    Dims dims;
    for (int i = shape.shape_dim_size() - 1; i >= 0; --i) {
        const uint64_t d = shape.shape_dim(i);
        // -1 (inferred) and -3 (free) are CNTK's sentinels and ctk's; other huge values are corruption.
        if (d > (uint64_t(1) << 40) && d != static_cast<uint64_t>(kInferredDim) &&
            d != static_cast<uint64_t>(kFreeDim))
            throw IOError(where + ": shape dimension " + std::to_string(d) + " is not a real size");
        dims.push_back(static_cast<int64_t>(d));
    }
    return dims;
}

void tensor_to_proto(const Tensor& t, proto::NDArrayView* out) {
    out->Clear();
    out->set_storage_format(proto::NDArrayView::Dense);
    dims_to_proto(t.shape().dims(), out->mutable_shape());
    switch (t.dtype()) {
        case DataType::f32: {
            auto v = t.to_vector<float>();
            out->set_data_type(proto::NDArrayView::Float);
            out->mutable_float_values()->mutable_value()->Add(v.begin(), v.end());
            break;
        }
        case DataType::f64: {
            auto v = t.to_vector<double>();
            out->set_data_type(proto::NDArrayView::Double);
            out->mutable_double_values()->mutable_value()->Add(v.begin(), v.end());
            break;
        }
        case DataType::f16: {
            Tensor c = t.to(Device::cpu()).contiguous();
            out->set_data_type(proto::NDArrayView::Float16);
            out->mutable_bytes_value()->set_value(static_cast<const char*>(c.raw_data()),
                                                  static_cast<size_t>(c.numel()) * 2);
            break;
        }
        default:
            throw NotImplementedError(
                std::string("CNTK v2 files hold float, double and float16 tensors; a ") +
                dtype_name(t.dtype()) + " tensor cannot be written");
    }
}

Tensor tensor_from_proto(const proto::NDArrayView& view, const std::string& where) {
    if (view.storage_format() != proto::NDArrayView::Dense)
        throw NotImplementedError(where + ": sparse NDArrayView values are not supported");
    const uint64_t n = checked_numel(view.shape(), where);
    const Shape shape(dims_from_proto(view.shape(), where));
    auto count_mismatch = [&](uint64_t have) {
        return IOError(where + ": tensor of shape " + shape.to_string() + " needs " + std::to_string(n) +
                       " values but the file holds " + std::to_string(have));
    };
    switch (view.data_type()) {
        case proto::NDArrayView::Float: {
            const auto& v = view.float_values().value();
            if (static_cast<uint64_t>(v.size()) != n) throw count_mismatch(static_cast<uint64_t>(v.size()));
            Tensor t = Tensor::empty(shape, DataType::f32);
            if (n) std::memcpy(t.raw_data(), v.data(), n * 4);
            return t;
        }
        case proto::NDArrayView::Double: {
            const auto& v = view.double_values().value();
            if (static_cast<uint64_t>(v.size()) != n) throw count_mismatch(static_cast<uint64_t>(v.size()));
            Tensor t = Tensor::empty(shape, DataType::f64);
            if (n) std::memcpy(t.raw_data(), v.data(), n * 8);
            return t;
        }
        case proto::NDArrayView::Float16: {
            const auto& b = view.bytes_value().value();
            if (b.size() != n * 2) throw count_mismatch(b.size() / 2);
            Tensor t = Tensor::empty(shape, DataType::f16);
            if (n) std::memcpy(t.raw_data(), b.data(), n * 2);
            return t;
        }
        case proto::NDArrayView::Int16: {
            const auto& v = view.sint32_values().value();
            if (static_cast<uint64_t>(v.size()) != n) throw count_mismatch(static_cast<uint64_t>(v.size()));
            Tensor t = Tensor::empty(shape, DataType::i32);
            if (n) std::memcpy(t.raw_data(), v.data(), n * 4);
            return t;
        }
        default:
            throw NotImplementedError(where + ": NDArrayView data type " + std::to_string(view.data_type()) +
                                      " is not supported");
    }
}

void axis_to_proto(const Axis& axis, proto::Axis* out) {
    out->Clear();
    switch (axis.kind()) {
        case Axis::Kind::static_axis: {
            const int32_t idx = -axis.static_index() - 1;
            out->set_static_axis_idx(idx);
            out->set_name("staticAxis_" + std::to_string(idx));
            out->set_is_ordered_dynamic_axis(true);
            break;
        }
        case Axis::Kind::dynamic:
            out->set_static_axis_idx(kAxisIndexDynamic);
            out->set_name(axis.name());
            out->set_is_ordered_dynamic_axis(axis.is_ordered());
            break;
        case Axis::Kind::all_static:
            out->set_static_axis_idx(kAxisIndexAllStatic);
            out->set_name("staticAxis_" + std::to_string(kAxisIndexAllStatic));
            out->set_is_ordered_dynamic_axis(true);
            break;
        case Axis::Kind::all:
            out->set_static_axis_idx(kAxisIndexAllAxes);
            out->set_name("staticAxis_" + std::to_string(kAxisIndexAllAxes));
            out->set_is_ordered_dynamic_axis(true);
            break;
    }
}

Axis axis_from_proto(const proto::Axis& axis, const std::string& where) {
    const int32_t idx = axis.static_axis_idx();
    switch (idx) {
        case kAxisIndexDynamic:
            if (axis.name() == Axis::default_batch_axis().name()) return Axis::default_batch_axis();
            return Axis::dynamic(axis.name(), axis.is_ordered_dynamic_axis());
        case kAxisIndexAllStatic:
            return Axis::all_static_axes();
        case kAxisIndexAllAxes:
            return Axis::all_axes();
        case kAxisIndexUnknown:
            throw IOError(where + ": an Axis of unknown kind (CNTK's UnknownAxes) cannot be loaded");
        default:
            if (idx > kAxisIndexAllAxes - 16 || idx < -(1 << 20))
                throw IOError(where + ": axis index " + std::to_string(idx) + " is not a real axis");
            return Axis(-idx - 1);
    }
}

// ---- DictionaryValue builders ----

namespace {
proto::DictionaryValue typed(proto::DictionaryValue::Type t) {
    proto::DictionaryValue v;
    v.set_version(1);
    v.set_value_type(t);
    return v;
}
}  // namespace

proto::DictionaryValue dv_bool(bool b) {
    auto v = typed(proto::DictionaryValue::Bool);
    v.set_bool_value(b);
    return v;
}
proto::DictionaryValue dv_int(int32_t i) {
    auto v = typed(proto::DictionaryValue::Int);
    v.set_int_value(i);
    return v;
}
proto::DictionaryValue dv_size_t(uint64_t s) {
    auto v = typed(proto::DictionaryValue::SizeT);
    v.set_size_t_value(s);
    return v;
}
proto::DictionaryValue dv_double(double d) {
    auto v = typed(proto::DictionaryValue::Double);
    v.set_double_value(d);
    return v;
}
proto::DictionaryValue dv_string(const std::string& s) {
    auto v = typed(proto::DictionaryValue::String);
    v.set_string_value(s);
    return v;
}
proto::DictionaryValue dv_shape(const Dims& dims) {
    auto v = typed(proto::DictionaryValue::NDShape);
    dims_to_proto(dims, v.mutable_nd_shape_value());
    return v;
}
proto::DictionaryValue dv_axis(const Axis& axis) {
    auto v = typed(proto::DictionaryValue::Axis);
    axis_to_proto(axis, v.mutable_axis_value());
    return v;
}
proto::DictionaryValue dv_tensor(const Tensor& t) {
    auto v = typed(proto::DictionaryValue::NDArrayView);
    tensor_to_proto(t, v.mutable_nd_array_view_value());
    return v;
}
proto::DictionaryValue dv_vector(std::vector<proto::DictionaryValue> items) {
    auto v = typed(proto::DictionaryValue::Vector);
    auto* vec = v.mutable_vector_value();
    for (auto& item : items) *vec->add_value() = std::move(item);
    return v;
}
proto::DictionaryValue dv_dictionary(proto::Dictionary d) {
    auto v = typed(proto::DictionaryValue::Dictionary);
    *v.mutable_dictionary_value() = std::move(d);
    return v;
}

const char* dv_type_name(int type) {
    static const char* const kNames[] = {"None",   "Bool",    "Int",  "SizeT",  "Float",      "Double",
                                         "String", "NDShape", "Axis", "Vector", "Dictionary", "NDArrayView"};
    return type >= 0 && type < 12 ? kNames[type] : "unknown";
}

// ---- ctk Dictionary <-> CNTK Dictionary ----

namespace {

proto::DictionaryValue to_proto_value(const DictionaryValue& v) {
    if (v.is_none()) return typed(proto::DictionaryValue::None);
    if (v.is<bool>()) return dv_bool(v.as_bool());
    if (v.is<int64_t>()) {
        const int64_t i = v.as_int();
        if (i < 0 && i >= std::numeric_limits<int32_t>::min()) return dv_int(static_cast<int32_t>(i));
        return dv_size_t(static_cast<uint64_t>(i));  // below -2^31: the same bits, read back exactly
    }
    if (v.is<double>()) return dv_double(v.as_double());
    if (v.is<std::string>()) return dv_string(v.as_string());
    if (v.is<Tensor>()) return dv_tensor(v.as_tensor());
    if (v.is<DictionaryValue::List>()) {
        std::vector<proto::DictionaryValue> items;
        for (const auto& item : v.as_list()) items.push_back(to_proto_value(item));
        return dv_vector(std::move(items));
    }
    return dv_dictionary(to_cntk_proto(v.as_dictionary()));
}

DictionaryValue from_proto_value(const proto::DictionaryValue& v, const std::string& where) {
    switch (v.value_type()) {
        case proto::DictionaryValue::Bool:
            return DictionaryValue(v.bool_value());
        case proto::DictionaryValue::Int:
            return DictionaryValue(int64_t(v.int_value()));
        case proto::DictionaryValue::SizeT:
            return DictionaryValue(static_cast<int64_t>(v.size_t_value()));  // above 2^63: the same bits
        case proto::DictionaryValue::Float:
            return DictionaryValue(double(v.float_value()));
        case proto::DictionaryValue::Double:
            return DictionaryValue(v.double_value());
        case proto::DictionaryValue::String:
            return DictionaryValue(v.string_value());
        case proto::DictionaryValue::NDShape: {
            DictionaryValue::List dims;  // row-major; values are kept as they are (the same bits)
            const auto& s = v.nd_shape_value().shape_dim();
            for (auto it = s.rbegin(); it != s.rend(); ++it) dims.emplace_back(static_cast<int64_t>(*it));
            return DictionaryValue(std::move(dims));
        }
        case proto::DictionaryValue::Axis: {
            Dictionary a;
            a.set("static_axis_idx", int64_t(v.axis_value().static_axis_idx()));
            a.set("name", v.axis_value().name());
            a.set("is_ordered_dynamic_axis", v.axis_value().is_ordered_dynamic_axis());
            return DictionaryValue(a);
        }
        case proto::DictionaryValue::Vector: {
            DictionaryValue::List items;
            int i = 0;
            for (const auto& item : v.vector_value().value())
                items.push_back(from_proto_value(item, where + "[" + std::to_string(i++) + "]"));
            return DictionaryValue(std::move(items));
        }
        case proto::DictionaryValue::Dictionary:
            return DictionaryValue(from_cntk_proto(v.dictionary_value(), where));
        case proto::DictionaryValue::NDArrayView:
            return DictionaryValue(tensor_from_proto(v.nd_array_view_value(), where));
        default:
            return DictionaryValue();  // None, or a type from a newer format: dropped, as CNTK does
    }
}

}  // namespace

proto::Dictionary to_cntk_proto(const Dictionary& d) {
    proto::Dictionary out;
    out.set_version(1);
    for (const auto& [k, v] : d.items()) (*out.mutable_data())[k] = to_proto_value(v);
    return out;
}

Dictionary from_cntk_proto(const proto::Dictionary& d, const std::string& where) {
    Dictionary out;
    for (const auto& [k, v] : d.data()) out.set(k, from_proto_value(v, where + "/" + k));
    return out;
}

}  // namespace ctk::formats

namespace ctk {

Dictionary load_cntk_dictionary(const std::string& path) {
    return formats::from_cntk_proto(formats::read_cntk_dictionary_file(path), "'" + path + "'");
}

void save_cntk_dictionary(const Dictionary& d, const std::string& path) {
    formats::write_cntk_dictionary_file(formats::to_cntk_proto(d), path);
}

std::string cntk_dictionary_bytes(const Dictionary& d) {
    return formats::serialize_cntk_dictionary(formats::to_cntk_proto(d));
}

Dictionary cntk_dictionary_from_bytes(const std::string& bytes, const std::string& source) {
    return formats::from_cntk_proto(formats::parse_cntk_dictionary(bytes, source), source);
}

}  // namespace ctk
