// CNTK v2 model files: the conversions every row shares (cntk_v2_internal.h): CNTK's data type numbers,
// hex for carried attributes, and ctk's row-major conventions against CNTK's column-major ones (shapes
// reversed, static axis i written as CNTK's -i-1, per-axis lists reversed).
#include <algorithm>
#include <limits>

#include "ctk/graph/graph_ops.h"
#include "ctk/kernels/tensor_ops.h"
#include "formats/cntk_v2_internal.h"

namespace ctk::formats::v2 {

void put(proto::Dictionary& d, const std::string& key, proto::DictionaryValue v) {
    (*d.mutable_data())[key] = std::move(v);
}

// ---- CNTK data types (CNTK's DataType numbers; 100 + ctk's for types CNTK lacked) ----
uint64_t cntk_dtype(DataType t) {
    switch (t) {
        case DataType::f32:
            return 1;
        case DataType::f64:
            return 2;
        case DataType::f16:
            return 4;
        default:
            return 100 + static_cast<uint64_t>(t);
    }
}
DataType ctk_dtype(uint64_t t, const std::string& where) {
    switch (t) {
        case 1:
            return DataType::f32;
        case 2:
            return DataType::f64;
        case 4:
            return DataType::f16;
        default:
            if (t >= 100 && t < 100 + kNumDataTypes) return static_cast<DataType>(t - 100);
            throw IOError(where + ": data type " + std::to_string(t) + " is not supported");
    }
}

proto::DictionaryValue dv_unknown_shape() {
    proto::DictionaryValue v = dv_shape({});
    v.mutable_nd_shape_value()->add_shape_dim(kUnknownShapeDim);
    return v;
}

std::string to_hex(const std::string& bytes) {
    static const char* const kDigits = "0123456789abcdef";
    std::string out;
    out.reserve(bytes.size() * 2);
    for (unsigned char c : bytes) {
        out.push_back(kDigits[c >> 4]);
        out.push_back(kDigits[c & 15]);
    }
    return out;
}
std::string from_hex(const std::string& hex, const std::string& where) {
    auto digit = [&](char c) -> int {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        throw IOError(where + ": malformed " + kUnknownAttributesKey);
    };
    if (hex.size() % 2) throw IOError(where + ": malformed " + kUnknownAttributesKey);
    std::string out(hex.size() / 2, '\0');
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = static_cast<char>(digit(hex[2 * i]) * 16 + digit(hex[2 * i + 1]));
    return out;
}

// ---- per-axis lists between ctk (row-major, a short list extended at the front with its first value)
// and CNTK (column-major, written at the sample's full rank) ----
Dims full_rank(Dims list, size_t rank) {
    if (list.empty()) list.push_back(1);
    while (list.size() < rank) list.insert(list.begin(), list.front());
    return list;
}
proto::DictionaryValue dv_bools_reversed(const std::vector<bool>& row_major) {
    std::vector<proto::DictionaryValue> items;
    for (auto it = row_major.rbegin(); it != row_major.rend(); ++it) items.push_back(dv_bool(*it));
    return dv_vector(std::move(items));
}
std::vector<bool> as_bools(const Dims& d) {
    return std::vector<bool>(d.begin(), d.end());
}
proto::DictionaryValue dv_raw_axis(int32_t index) {
    proto::Axis a;
    a.set_static_axis_idx(index);
    a.set_name("staticAxis_" + std::to_string(index));
    a.set_is_ordered_dynamic_axis(true);
    proto::DictionaryValue v = dv_axis(Axis(0));
    *v.mutable_axis_value() = a;
    return v;
}
SavedOp primitive_form(uint64_t cntk_op, std::vector<Variable> inputs) {
    SavedOp s;
    s.op = cntk_op;
    s.inputs = std::move(inputs);
    s.attributes.set_version(1);
    return s;
}
SavedOp as_numbered(const Function& f) {
    return primitive_form(static_cast<uint64_t>(cntk_op_type(f.op())), f.inputs());
}
void set(SavedOp& s, const std::string& key, proto::DictionaryValue v) {
    put(s.attributes, key, std::move(v));
}

Dims as_dims(const std::vector<bool>& b) {
    return Dims(b.begin(), b.end());
}
int row_major_axis(int32_t cntk_index, int rank, const std::string& where) {
    const int i = cntk_index < 0 ? cntk_index + rank : cntk_index;
    if (i < 0 || i >= rank)
        throw IOError(where + ": axis " + std::to_string(cntk_index) + " is outside a rank-" +
                      std::to_string(rank) + " operand");
    return rank - 1 - i;
}
Dims size_ts(const DictReader& r, const std::string& key) {
    Dims out;
    for (const auto& item : r.vector(key)) {
        if (item.value_type() != proto::DictionaryValue::SizeT) r.wrong(key, "a Vector of SizeT", item);
        out.push_back(static_cast<int64_t>(item.size_t_value()));
    }
    return out;
}

// ReduceElements' attributes for ctk's reduce attributes with CNTK's reduction `name`.
proto::Dictionary reduce_attributes(const Attributes& a, const std::string& name) {
    proto::Dictionary d;
    d.set_version(1);
    put(d, "reductionOpName", dv_string(name));
    const auto& axes = a.get<std::vector<Axis>>("axes");
    if (axes.size() == 1) {
        put(d, "axis", dv_axis(axes[0]));
    } else {
        std::vector<proto::DictionaryValue> items;
        for (const Axis& x : axes) items.push_back(dv_axis(x));
        put(d, "axisVec", dv_vector(std::move(items)));
    }
    put(d, "reductionKeepDimensions", dv_bool(a.get<bool>("keepdims")));
    return d;
}

}  // namespace ctk::formats::v2
