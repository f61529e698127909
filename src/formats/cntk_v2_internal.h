// CNTK v2 model files, internal: the pieces shared by the per-op conversions (cntk_v2_ops.cpp) and the
// graph walks that write and read a whole model (cntk_v2_model.cpp).
#pragma once

#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "ctk/core/error.h"
#include "ctk/graph/function.h"
#include "formats/cntk_dictionary.h"

namespace ctk::formats::v2 {

// CNTK 2.7's serialization versions (PrimitiveFunction 24 has every op ctk writes).
inline constexpr uint64_t kPrimitiveFunctionVersion = 24;
inline constexpr uint64_t kCompositeFunctionVersion = 3;
inline constexpr uint64_t kVariableVersion = 1;
// Above CNTK's op list: ctk ops that CNTK only had as composites.
inline constexpr uint64_t kCtkExtensionOp = 10000;

// CNTK's PrimitiveOpType numbers that need special handling here.
enum CntkOp : int {
    kTimes = 31,
    kTransposeTimes = 32,
    kConvolution = 33,
    kReduceElements = 39,
    kBatchNormalization = 40,
    kClip = 41,
    kCombine = 44,
    kBlock = 57,
    kSumAll = 18,
};

inline constexpr int32_t kAxisIndexEndStatic = 2147483647 - 3;  // CNTK's Axis::EndStaticAxis()

// Attributes a CNTK file has and ctk's op does not read travel with the Function as one attribute holding
// their serialized Dictionary, hex-encoded (ctk's attributes hold text), and are written back on save.
inline constexpr const char* kUnknownAttributesKey = "cntkUnknownAttributes";
std::string to_hex(const std::string& bytes);
std::string from_hex(const std::string& hex, const std::string& where);

void put(proto::Dictionary& d, const std::string& key, proto::DictionaryValue v);
// CNTK's DataType numbers (100 + ctk's for types CNTK lacked).
uint64_t cntk_dtype(DataType t);
DataType ctk_dtype(uint64_t t, const std::string& where);
// CNTK's unknown NDShape (a placeholder's shape before binding, a global pooling window).
proto::DictionaryValue dv_unknown_shape();

// ---- reading values out of a CNTK Dictionary ----
struct DictReader {
    const proto::Dictionary& d;
    std::string where;
    mutable std::unordered_set<std::string> used{};  // the keys read so far

    const proto::DictionaryValue* find(const std::string& key) const {
        used.insert(key);
        auto it = d.data().find(key);
        return it == d.data().end() ? nullptr : &it->second;
    }
    // The entries no read has asked for: attributes of a newer CNTK, kept so that saving writes them back.
    proto::Dictionary unread() const {
        proto::Dictionary out;
        out.set_version(1);
        for (const auto& [k, v] : d.data())
            if (!used.count(k)) (*out.mutable_data())[k] = v;
        return out;
    }
    const proto::DictionaryValue& at(const std::string& key) const {
        const auto* v = find(key);
        if (!v) throw IOError(where + ": required key '" + key + "' is missing");
        return *v;
    }
    [[noreturn]] void wrong(const std::string& key, const char* want, const proto::DictionaryValue& v) const {
        throw IOError(where + ": '" + key + "' should be " + want + " but is " +
                      dv_type_name(v.value_type()));
    }
    bool has(const std::string& key) const { return find(key) != nullptr; }
    bool boolean(const std::string& key, std::optional<bool> fallback = std::nullopt) const {
        const auto* v = find(key);
        if (!v && fallback) return *fallback;
        if (!v) at(key);
        if (v->value_type() != proto::DictionaryValue::Bool) wrong(key, "Bool", *v);
        return v->bool_value();
    }
    int64_t integer(const std::string& key, std::optional<int64_t> fallback = std::nullopt) const {
        const auto* v = find(key);
        if (!v && fallback) return *fallback;
        if (!v) at(key);
        if (v->value_type() == proto::DictionaryValue::Int) return v->int_value();
        if (v->value_type() == proto::DictionaryValue::SizeT) return static_cast<int64_t>(v->size_t_value());
        wrong(key, "Int or SizeT", *v);
    }
    double real(const std::string& key, std::optional<double> fallback = std::nullopt) const {
        const auto* v = find(key);
        if (!v && fallback) return *fallback;
        if (!v) at(key);
        if (v->value_type() == proto::DictionaryValue::Double) return v->double_value();
        if (v->value_type() == proto::DictionaryValue::Float) return v->float_value();
        if (v->value_type() == proto::DictionaryValue::Int) return v->int_value();
        if (v->value_type() == proto::DictionaryValue::SizeT) return static_cast<double>(v->size_t_value());
        wrong(key, "a number", *v);
    }
    const std::string& string(const std::string& key) const {
        const auto& v = at(key);
        if (v.value_type() != proto::DictionaryValue::String) wrong(key, "String", v);
        return v.string_value();
    }
    const proto::NDShape& shape_proto(const std::string& key) const {
        const auto& v = at(key);
        if (v.value_type() != proto::DictionaryValue::NDShape) wrong(key, "NDShape", v);
        return v.nd_shape_value();
    }
    // An NDShape as row-major dims; CNTK's unknown shape reads as empty.
    Dims shape(const std::string& key, std::optional<Dims> fallback = std::nullopt) const {
        if (!has(key) && fallback) return *fallback;
        const auto& s = shape_proto(key);
        if (s.shape_dim_size() == 1 && s.shape_dim(0) == kUnknownShapeDim) return {};
        return dims_from_proto(s, where + "/" + key);
    }
    const proto::Axis& axis_proto(const std::string& key) const {
        const auto& v = at(key);
        if (v.value_type() != proto::DictionaryValue::Axis) wrong(key, "Axis", v);
        return v.axis_value();
    }
    Axis axis(const std::string& key) const { return axis_from_proto(axis_proto(key), where + "/" + key); }
    const google::protobuf::RepeatedPtrField<proto::DictionaryValue>& vector(const std::string& key) const {
        const auto& v = at(key);
        if (v.value_type() != proto::DictionaryValue::Vector) wrong(key, "Vector", v);
        return v.vector_value().value();
    }
    std::vector<Axis> axes(const std::string& key) const {
        std::vector<Axis> out;
        for (const auto& item : vector(key)) {
            if (item.value_type() != proto::DictionaryValue::Axis) wrong(key, "a Vector of Axis", item);
            out.push_back(axis_from_proto(item.axis_value(), where + "/" + key));
        }
        return out;
    }
    // A Vector of Bool in CNTK's column-major order, returned row-major.
    std::vector<bool> bools_reversed(const std::string& key,
                                     std::optional<std::vector<bool>> fallback) const {
        if (!has(key) && fallback) return *fallback;
        std::vector<bool> out;
        for (const auto& item : vector(key)) {
            if (item.value_type() != proto::DictionaryValue::Bool) wrong(key, "a Vector of Bool", item);
            out.push_back(item.bool_value());
        }
        std::reverse(out.begin(), out.end());
        return out;
    }
    std::vector<int64_t> ints(const std::string& key) const {
        std::vector<int64_t> out;
        for (const auto& item : vector(key)) {
            if (item.value_type() == proto::DictionaryValue::Int)
                out.push_back(item.int_value());
            else if (item.value_type() == proto::DictionaryValue::SizeT)
                out.push_back(static_cast<int64_t>(item.size_t_value()));
            else
                wrong(key, "a Vector of Int", item);
        }
        return out;
    }
    std::vector<std::string> strings(const std::string& key) const {
        std::vector<std::string> out;
        for (const auto& item : vector(key)) {
            if (item.value_type() != proto::DictionaryValue::String) wrong(key, "a Vector of String", item);
            out.push_back(item.string_value());
        }
        return out;
    }
    const proto::Dictionary& dictionary(const std::string& key) const {
        const auto& v = at(key);
        if (v.value_type() != proto::DictionaryValue::Dictionary) wrong(key, "Dictionary", v);
        return v.dictionary_value();
    }
};

// ---- one op, both ways (save: cntk_v2_ops.cpp, load: cntk_v2_load_ops.cpp) ----
// A ctk primitive as CNTK writes it: the op number, the operands in CNTK's order and the attributes.
struct SavedOp {
    uint64_t op = 0;
    std::vector<Variable> inputs;  // CNTK's operand order
    proto::Dictionary attributes;
};
SavedOp save_op(const Function& f);  // cntk_v2_ops.cpp
// A possibly negative static axis as 0..rank-1.
inline int normalized(int axis, int rank) {
    return axis < 0 ? axis + rank : axis;
}
// ReduceElements' attributes for ctk's reduce attributes with CNTK's reduction `name`.
proto::Dictionary reduce_attributes(const Attributes& a, const std::string& name);
// The ctk Function for a CNTK primitive (operands in CNTK's order); throws NotImplementedError naming the
// op number for ops ctk does not read.
// cntk_v2_load_ops.cpp
FunctionPtr load_op(uint64_t cntk, std::vector<Variable> in, const DictReader& r, const std::string& name);
// A loaded primitive: the attributes of `r` that no read asked for travel with it (kUnknownAttributesKey).
FunctionPtr make_loaded_op(PrimitiveOp op, std::vector<Variable> inputs, Attributes attrs,
                           const DictReader& r, const std::string& name);

// The sampling, ROI pooling, ranking, metric, CTC and *_like ops, crop and the negative-sample cosine
// (cntk_v2_ops_special.cpp): nullopt / null for other ops.
std::optional<SavedOp> save_special_op(const Function& f);
FunctionPtr load_special_op(int cntk, std::vector<Variable>& in, const DictReader& r,
                            const std::string& name);

}  // namespace ctk::formats::v2
