// CNTK v2 model files: a ctk graph to CNTK's serialized CompositeFunction Dictionary and back.
//
// The file is CNTK's: a Dictionary {version, type "CompositeFunction", uid, root, inputs (every leaf
// Variable, block placeholders included), primitive_functions (each PrimitiveFunction before its users,
// a block's inner functions before the block), state}. Each op is written with CNTK's op number, operand
// order and attribute names and types, converted from ctk's row-major conventions to CNTK's column-major
// ones (shapes reversed, static axis i written as CNTK's -i-1, per-axis lists reversed, times' operands
// swapped). The conversions for one op, both ways, sit together in the two switches below.
//
// ctk ops that CNTK wrote as composites of its primitives (square, selu, softplus, the sequence
// helpers, ...) are written as a ctk extension: op number kCtkExtensionOp with the ctk op's name and
// attributes. ctk reads them back exactly; CNTK 2.7 would refuse such a file with "Unexpected op".
#include <algorithm>
#include <functional>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "ctk/error.h"
#include "ctk/graph_ops.h"
#include "ctk/model.h"
#include "ctk/ops.h"
#include "formats/cntk_dictionary.h"
#include "graph/graph_internal.h"

namespace ctk {

namespace formats {
namespace {

using detail::FunctionAccess;

// CNTK 2.7's serialization versions (PrimitiveFunction 24 has every op ctk writes).
constexpr uint64_t kPrimitiveFunctionVersion = 24;
constexpr uint64_t kCompositeFunctionVersion = 3;
constexpr uint64_t kVariableVersion = 1;
// Above CNTK's op list: ctk ops that CNTK only had as composites.
constexpr uint64_t kCtkExtensionOp = 10000;

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

constexpr int32_t kAxisIndexEndStatic = 2147483647 - 3;  // CNTK's Axis::EndStaticAxis()

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

void put(proto::Dictionary& d, const std::string& key, proto::DictionaryValue v) {
    (*d.mutable_data())[key] = std::move(v);
}

// ---- ctk's attributes, generically (the extension encoding) ----
// Dims are an NDShape in ctk's row-major order (not reversed: these files are ctk's own), ints an Int or
// (beyond 32 bits) a SizeT holding the two's-complement bits, axes CNTK's Axis.
proto::Dictionary generic_attributes(const Attributes& attrs) {
    proto::Dictionary out;
    out.set_version(1);
    for (const auto& [key, value] : attrs.items()) {
        proto::DictionaryValue v;
        if (const auto* b = std::get_if<bool>(&value)) {
            v = dv_bool(*b);
        } else if (const auto* i = std::get_if<int64_t>(&value)) {
            v = (*i >= std::numeric_limits<int32_t>::min() && *i <= std::numeric_limits<int32_t>::max())
                    ? dv_int(static_cast<int32_t>(*i))
                    : dv_size_t(static_cast<uint64_t>(*i));
        } else if (const auto* x = std::get_if<double>(&value)) {
            v = dv_double(*x);
        } else if (const auto* s = std::get_if<std::string>(&value)) {
            v = dv_string(*s);
        } else if (const auto* dims = std::get_if<Dims>(&value)) {
            v = dv_shape(Dims(dims->rbegin(), dims->rend()));  // dv_shape reverses: stored row-major
        } else if (const auto* a = std::get_if<Axis>(&value)) {
            v = dv_axis(*a);
        } else {
            std::vector<proto::DictionaryValue> items;
            for (const Axis& axis : std::get<std::vector<Axis>>(value)) items.push_back(dv_axis(axis));
            v = dv_vector(std::move(items));
        }
        put(out, key, std::move(v));
    }
    return out;
}
Attributes attributes_from_generic(const DictReader& r) {
    Attributes out;
    for (const auto& [key, v] : r.d.data()) {
        switch (v.value_type()) {
            case proto::DictionaryValue::Bool:
                out.set(key, v.bool_value());
                break;
            case proto::DictionaryValue::Int:
                out.set(key, int64_t(v.int_value()));
                break;
            case proto::DictionaryValue::SizeT:
                out.set(key, static_cast<int64_t>(v.size_t_value()));
                break;
            case proto::DictionaryValue::Double:
                out.set(key, v.double_value());
                break;
            case proto::DictionaryValue::String:
                out.set(key, v.string_value());
                break;
            case proto::DictionaryValue::NDShape: {
                Dims d = r.shape(key);
                out.set(key, Dims(d.rbegin(), d.rend()));
                break;
            }
            case proto::DictionaryValue::Axis:
                out.set(key, r.axis(key));
                break;
            case proto::DictionaryValue::Vector:
                out.set(key, r.axes(key));
                break;
            default:
                throw IOError(r.where + ": ctk attribute '" + key + "' has unexpected type " +
                              dv_type_name(v.value_type()));
        }
    }
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
Dims as_dims(const std::vector<bool>& b) {
    return Dims(b.begin(), b.end());
}
proto::DictionaryValue dv_unknown_shape() {
    proto::DictionaryValue v = dv_shape({});
    v.mutable_nd_shape_value()->add_shape_dim(kUnknownShapeDim);
    return v;
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
// A CNTK static axis index (column-major, negative from the innermost end) as a row-major index.
int row_major_axis(int32_t cntk_index, int rank, const std::string& where) {
    const int i = cntk_index < 0 ? cntk_index + rank : cntk_index;
    if (i < 0 || i >= rank)
        throw IOError(where + ": axis " + std::to_string(cntk_index) + " is outside a rank-" +
                      std::to_string(rank) + " operand");
    return rank - 1 - i;
}

int normalized(int axis, int rank) {
    return axis < 0 ? axis + rank : axis;
}

// Attributes a CNTK file has and ctk's op does not read travel with the Function as one attribute holding
// their serialized Dictionary, hex-encoded (ctk's attributes hold text), and are written back on save.
constexpr const char* kUnknownAttributesKey = "cntkUnknownAttributes";

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

// ============================ saving ============================

struct SavedOp {
    uint64_t op = 0;
    std::vector<Variable> inputs;  // CNTK's operand order
    proto::Dictionary attributes;
};

SavedOp extension_op(const Function& f) {
    SavedOp s;
    s.op = kCtkExtensionOp;
    s.inputs = f.inputs();
    s.attributes.set_version(1);
    put(s.attributes, "ctkOp", dv_string(primitive_op_name(f.op())));
    put(s.attributes, "ctkAttributes", dv_dictionary(generic_attributes(f.attributes())));
    return s;
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

SavedOp save_op(const Function& f) {
    const PrimitiveOp op = f.op();
    const Attributes& a = f.attributes();
    std::vector<Variable> in = f.inputs();
    SavedOp s;
    s.attributes.set_version(1);
    s.inputs = in;
    const int cntk = cntk_op_type(op);
    auto attr = [&](const std::string& key, proto::DictionaryValue v) {
        put(s.attributes, key, std::move(v));
    };
    if (is_elementwise_unary(op)) {
        if (cntk < 0) return extension_op(f);
        s.op = static_cast<uint64_t>(cntk);
        if (op == PrimitiveOp::elu) attr("alpha", dv_double(a.get<double>("alpha")));
        return s;
    }
    if (is_elementwise_binary(op)) {
        if (cntk < 0) return extension_op(f);
        s.op = static_cast<uint64_t>(cntk);
        return s;
    }
    switch (op) {
        case PrimitiveOp::element_select:
        case PrimitiveOp::stop_gradient:
        case PrimitiveOp::pass:
        case PrimitiveOp::assign:
        case PrimitiveOp::squared_error:
        case PrimitiveOp::binary_cross_entropy:
        case PrimitiveOp::cosine_distance:
            s.op = static_cast<uint64_t>(cntk);
            return s;
        case PrimitiveOp::times:
            s.op = kTimes;
            s.inputs = {in[1], in[0]};
            attr("outputRank", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("outputRank"))));
            attr("inferInputRankToMap", dv_int(static_cast<int32_t>(a.get<int64_t>("inferInputRankToMap"))));
            return s;
        case PrimitiveOp::transpose_times:
            s.op = kTransposeTimes;
            s.inputs = {in[1], in[0]};
            attr("outputRank", dv_size_t(1));
            return s;
        case PrimitiveOp::reduce: {
            const std::string& reduction = a.get<std::string>("reductionOpName");
            if (reduction == "L1" || reduction == "L2" || reduction == "SumSquare") return extension_op(f);
            s.op = kReduceElements;
            s.attributes = reduce_attributes(a, reduction);
            return s;
        }
        case PrimitiveOp::argmax:
        case PrimitiveOp::argmin:
            s.op = kReduceElements;
            attr("reductionOpName", dv_string(op == PrimitiveOp::argmax ? "Argmax" : "Argmin"));
            attr("axis", dv_axis(a.has("axis") ? a.get<Axis>("axis") : Axis::all_static_axes()));
            attr("reductionKeepDimensions", dv_bool(true));
            return s;
        case PrimitiveOp::softmax:
        case PrimitiveOp::log_softmax:
        case PrimitiveOp::hardmax:
            s.op = static_cast<uint64_t>(cntk);
            if (a.has("axis")) attr("axis", dv_axis(a.get<Axis>("axis")));
            return s;
        case PrimitiveOp::reshape: {
            // CNTK's Reshape replaces the column-major static axes [beginAxis, endAxis).
            s.op = static_cast<uint64_t>(cntk);
            attr("newShape", dv_shape(a.get<Dims>("newShape")));
            const int rank = in[0].rank();
            const int b =
                a.has("beginAxis") ? normalized(static_cast<int>(a.get<int64_t>("beginAxis")), rank) : 0;
            const int e =
                a.has("endAxis") ? normalized(static_cast<int>(a.get<int64_t>("endAxis")), rank) : rank;
            attr("beginAxis", dv_raw_axis(e == rank ? 0 : rank - e));
            attr("endAxis", dv_raw_axis(b == 0 ? kAxisIndexEndStatic : rank - b));
            return s;
        }
        case PrimitiveOp::slice: {
            s.op = static_cast<uint64_t>(cntk);
            const auto& axes = a.get<std::vector<Axis>>("axes");
            const Dims &begin = a.get<Dims>("beginIndex"), &end = a.get<Dims>("endIndex");
            Dims strides = a.get<Dims>("sliceStrides");
            if (strides.empty()) strides.assign(axes.size(), 1);
            if (axes.size() == 1) {
                attr("axis", dv_axis(axes[0]));
                attr("beginIndex", dv_int(static_cast<int32_t>(begin[0])));
                attr("endIndex", dv_int(static_cast<int32_t>(end[0])));
                attr("sliceStrides", dv_int(static_cast<int32_t>(strides[0])));
            } else {
                std::vector<proto::DictionaryValue> ax, b, e, st;
                for (size_t i = 0; i < axes.size(); ++i) {
                    ax.push_back(dv_axis(axes[i]));
                    b.push_back(dv_int(static_cast<int32_t>(begin[i])));
                    e.push_back(dv_int(static_cast<int32_t>(end[i])));
                    st.push_back(dv_int(static_cast<int32_t>(strides[i])));
                }
                attr("axisVec", dv_vector(std::move(ax)));
                attr("beginIndexVec", dv_vector(std::move(b)));
                attr("endIndexVec", dv_vector(std::move(e)));
                attr("sliceStridesVec", dv_vector(std::move(st)));
            }
            return s;
        }
        case PrimitiveOp::splice:
            s.op = static_cast<uint64_t>(cntk);
            attr("axis", dv_axis(a.get<Axis>("axis")));
            return s;
        case PrimitiveOp::transpose: {
            // CNTK's permutation is column-major: P[j] = n-1-perm[n-1-j].
            s.op = static_cast<uint64_t>(cntk);
            const Dims& perm = a.get<Dims>("axisPermutation");
            const int n = static_cast<int>(perm.size());
            std::vector<proto::DictionaryValue> items;
            for (int j = 0; j < n; ++j)
                items.push_back(dv_raw_axis(static_cast<int32_t>(
                    n - 1 - normalized(static_cast<int>(perm[static_cast<size_t>(n - 1 - j)]), n))));
            attr("axisVec", dv_vector(std::move(items)));
            return s;
        }
        case PrimitiveOp::pad:
            s.op = static_cast<uint64_t>(cntk);
            attr("paddingHead", dv_shape(a.get<Dims>("padLo")));
            attr("paddingFoot", dv_shape(a.get<Dims>("padHi")));
            attr("paddingMode", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("mode"))));
            attr("paddingConstantValue", dv_double(a.get<double>("constantValue")));
            return s;
        case PrimitiveOp::gather:
            s.op = static_cast<uint64_t>(cntk);
            s.inputs = {in[1], in[0]};  // CNTK's Gather(indices, reference)
            return s;
        case PrimitiveOp::one_hot:
            s.op = static_cast<uint64_t>(cntk);
            attr("numClass", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("numClass"))));
            attr("outputSparse", dv_bool(a.get<bool>("outputSparse")));
            attr("axis", dv_axis(Axis(static_cast<int>(a.get<int64_t>("axis")))));
            return s;
        case PrimitiveOp::top_k:
            s.op = static_cast<uint64_t>(cntk);
            attr("numItems", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("numItems"))));
            attr("axis", dv_axis(Axis(static_cast<int>(a.get<int64_t>("axis")))));
            return s;
        case PrimitiveOp::cast:
            s.op = static_cast<uint64_t>(cntk);
            attr("newDataType", dv_size_t(cntk_dtype(static_cast<DataType>(a.get<int64_t>("newDataType")))));
            return s;
        case PrimitiveOp::convolution:
        case PrimitiveOp::convolution_transpose: {
            s.op = kConvolution;
            const bool transpose = op == PrimitiveOp::convolution_transpose;
            const Dims& x = in[1].shape();
            const size_t rank = x.size();
            const bool filled = a.get<Dims>("strides").size() < rank;
            Dims strides = full_rank(a.get<Dims>("strides"), rank);
            Dims pad = full_rank(a.get<Dims>("autoPadding"), rank);
            Dims dilation = full_rank(a.get<Dims>("dilation"), rank);
            if (filled && !transpose) {
                // The channel axis: the kernel spans it, so CNTK strides it by its size and never pads it.
                strides[0] = x[0];
                pad[0] = 0;
                dilation[0] = 1;
            }
            attr("strides", dv_shape(strides));
            attr("sharing", dv_bools_reversed(std::vector<bool>(rank, true)));
            attr("autoPadding", dv_bools_reversed(as_bools(pad)));
            attr("lowerPad", dv_shape(Dims(rank, 0)));
            attr("upperPad", dv_shape(Dims(rank, 0)));
            attr("dilation", dv_shape(dilation));
            attr("transpose", dv_bool(transpose));
            attr("maxTempMemSizeInSamples", dv_size_t(0));
            if (transpose) {
                const Dims& given = a.get<Dims>("outputShape");
                if (given.empty()) {
                    attr("outputShape", dv_unknown_shape());
                } else {
                    Dims full{in[0].shape()[1]};
                    full.insert(full.end(), given.begin(), given.end());
                    attr("outputShape", dv_shape(full));
                }
                attr("groups", dv_size_t(1));
            } else {
                attr("groups", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("groups"))));
            }
            return s;
        }
        case PrimitiveOp::pooling: {
            s.op = static_cast<uint64_t>(cntk);
            const Dims& window = a.get<Dims>("poolingWindowShape");
            attr("poolingType", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("poolingType"))));
            attr("poolingWindowShape", window.empty() ? dv_unknown_shape() : dv_shape(window));
            attr("strides", dv_shape(a.get<Dims>("strides")));
            attr("autoPadding", dv_bools_reversed(as_bools(a.get<Dims>("autoPadding"))));
            attr("lowerPad", dv_shape({0}));
            attr("upperPad", dv_shape({0}));
            attr("ceilOutDim", dv_bool(a.get<bool>("ceilOutDim")));
            attr("includePad", dv_bool(a.get<bool>("includePad")));
            return s;
        }
        case PrimitiveOp::unpooling:
            s.op = static_cast<uint64_t>(cntk);
            attr("poolingType", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("poolingType"))));
            attr("unpoolingWindowShape", dv_shape(a.get<Dims>("unpoolingWindowShape")));
            attr("strides", dv_shape(a.get<Dims>("strides")));
            attr("autoPadding", dv_bools_reversed(as_bools(a.get<Dims>("autoPadding"))));
            attr("lowerPad", dv_shape({0}));
            attr("upperPad", dv_shape({0}));
            return s;
        case PrimitiveOp::batch_normalization:
            s.op = kBatchNormalization;
            attr("spatial", dv_bool(a.get<bool>("spatial")));
            attr("normalizationTimeConstant", dv_double(a.get<double>("normalizationTimeConstant")));
            attr("blendTimeConstant", dv_double(a.get<double>("blendTimeConstant")));
            attr("epsilon", dv_double(a.get<double>("epsilon")));
            attr("useCuDNNEngine", dv_bool(true));
            return s;
        case PrimitiveOp::dropout:
            s.op = static_cast<uint64_t>(cntk);
            attr("dropoutRate", dv_double(a.get<double>("dropoutRate")));
            attr("rngSeed", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("rngSeed"))));
            attr("rngOffset", dv_size_t(0));
            return s;
        case PrimitiveOp::cross_entropy_with_softmax:
            s.op = static_cast<uint64_t>(cntk);
            attr("axis", dv_axis(a.get<Axis>("axis")));
            return s;
        case PrimitiveOp::classification_error:
            if (a.get<int64_t>("topN") != 1) return extension_op(f);  // CNTK fed topN as a Constant
            s.op = static_cast<uint64_t>(cntk);
            attr("axis", dv_axis(a.get<Axis>("axis")));
            return s;
        case PrimitiveOp::past_value:
        case PrimitiveOp::future_value:
            s.op = static_cast<uint64_t>(cntk);
            attr("offset", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("offset"))));
            return s;
        case PrimitiveOp::sequence_broadcast_as:
        case PrimitiveOp::reconcile_dynamic_axes:
        case PrimitiveOp::unpack_batch:
        case PrimitiveOp::to_batch:
            s.op = static_cast<uint64_t>(cntk);
            return s;
        case PrimitiveOp::random_distribution: {
            s.op = static_cast<uint64_t>(cntk);
            const std::string& kind = a.get<std::string>("rvType");
            attr("randomDistributionType", dv_string(kind));
            std::vector<proto::DictionaryValue> args{dv_double(a.get<double>("arg0"))};
            if (kind != "bernoulli") args.push_back(dv_double(a.get<double>("arg1")));
            attr("randomDistributionArgs", dv_vector(std::move(args)));
            if (in.empty()) {
                attr("newShape", dv_shape(a.get<Dims>("newShape")));
                attr("newDataType",
                     dv_size_t(cntk_dtype(static_cast<DataType>(a.get<int64_t>("newDataType")))));
            }
            attr("rngSeed", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("rngSeed"))));
            attr("rngOffset", dv_size_t(0));
            return s;
        }
        default:
            return extension_op(f);
    }
}

class Saver {
public:
    proto::Dictionary save(const FunctionPtr& model) {
        proto::Dictionary top;
        top.set_version(1);
        const std::string root = root_uid(*model, model->outputs());
        put(top, "version", dv_size_t(kCompositeFunctionVersion));
        put(top, "type", dv_string("CompositeFunction"));
        put(top, "uid", dv_string("CompositeFunction_" + model->uid()));
        if (!model->name().empty()) put(top, "name", dv_string(model->name()));
        put(top, "root", dv_string(root));
        put(top, "inputs", dv_vector(std::move(leaves_)));
        put(top, "primitive_functions", dv_vector(std::move(functions_)));
        proto::Dictionary state;
        state.set_version(1);
        put(top, "state", dv_dictionary(std::move(state)));
        return top;
    }

private:
    static std::string variable_uid(const Variable& v) {
        if (v.is_output()) return v.owner()->uid() + "_Output_" + std::to_string(v.output_index());
        return v.uid();
    }

    // The uid of a primitive whose outputs are `outputs`: their owner when it is one Function with exactly
    // these outputs, otherwise a Combine written for them.
    std::string root_uid(const Function& f, const std::vector<Variable>& outputs) {
        if (!f.is_composite()) {
            emit(f);
            return f.uid();
        }
        if (!outputs.empty() && outputs[0].is_output()) {
            FunctionPtr owner = outputs[0].owner();
            const auto owned = owner->outputs();
            bool same = owned.size() == outputs.size();
            for (size_t i = 0; same && i < outputs.size(); ++i) same = owned[i] == outputs[i];
            if (same) {
                emit(*owner);
                return owner->uid();
            }
        }
        std::vector<proto::DictionaryValue> inputs;
        for (const Variable& v : outputs) {
            visit_variable(v);
            inputs.push_back(dv_string(variable_uid(v)));
        }
        const std::string uid = "Combine_" + f.uid();
        proto::Dictionary d;
        d.set_version(1);
        put(d, "version", dv_size_t(kPrimitiveFunctionVersion));
        put(d, "type", dv_string("PrimitiveFunction"));
        put(d, "uid", dv_string(uid));
        put(d, "op", dv_size_t(kCombine));
        put(d, "inputs", dv_vector(std::move(inputs)));
        proto::Dictionary attrs;
        attrs.set_version(1);
        put(d, "attributes", dv_dictionary(std::move(attrs)));
        functions_.push_back(dv_dictionary(std::move(d)));
        return uid;
    }

    void visit_variable(const Variable& v) {
        if (v.is_output()) {
            emit(*v.owner());
            return;
        }
        if (!seen_leaves_.insert(v.impl()).second) return;
        leaves_.push_back(dv_dictionary(variable_dict(v)));
    }

    static proto::Dictionary variable_dict(const Variable& v) {
        proto::Dictionary d;
        d.set_version(1);
        put(d, "version", dv_size_t(kVariableVersion));
        put(d, "type", dv_string("Variable"));
        put(d, "uid", dv_string(v.uid()));
        put(d, "kind", dv_size_t(static_cast<uint64_t>(v.kind())));
        put(d, "data_type", dv_size_t(cntk_dtype(v.dtype())));
        std::vector<proto::DictionaryValue> axes;
        const auto& dyn = v.dynamic_axes();
        for (auto it = dyn.rbegin(); it != dyn.rend(); ++it) axes.push_back(dv_axis(*it));
        put(d, "dynamic_axis", dv_vector(std::move(axes)));
        put(d, "is_sparse", dv_bool(v.is_sparse()));
        if (!v.name().empty()) put(d, "name", dv_string(v.name()));
        put(d, "needs_gradient", dv_bool(v.needs_gradient()));
        put(d, "shape", v.shape_known() ? dv_shape(v.shape()) : dv_unknown_shape());
        if (v.is_parameter() || v.is_constant()) {
            if (v.has_inferred_dims())
                throw ShapeError("save_model: " + v.to_string() +
                                 " still has inferred dims; evaluate the model once (or give the dims) "
                                 "before saving it");
            put(d, "value", dv_tensor(v.value()));
        }
        return d;
    }

    // ---- CNTK's composites for ctk ops CNTK had no primitive for, so that CNTK can read the file ----
    std::string ref(const Variable& v) {
        visit_variable(v);
        return variable_uid(v);
    }
    std::string scalar(double value, DataType dtype) {
        Variable c = constant(value, dtype);
        keep_.push_back(c);
        return ref(c);
    }
    // One CNTK primitive of an expansion; the last takes `f`'s uid and name, so users of f's output find
    // it. Returns the uid of its output.
    std::string primitive(const Function& f, int& counter, bool last, uint64_t op,
                          const std::vector<std::string>& in, proto::Dictionary attrs = proto::Dictionary()) {
        const std::string uid = last ? f.uid() : f.uid() + "_cntk" + std::to_string(counter++);
        proto::Dictionary d;
        d.set_version(1);
        attrs.set_version(1);
        put(d, "version", dv_size_t(kPrimitiveFunctionVersion));
        put(d, "type", dv_string("PrimitiveFunction"));
        put(d, "uid", dv_string(uid));
        if (last && !f.name().empty()) put(d, "name", dv_string(f.name()));
        put(d, "op", dv_size_t(op));
        put(d, "attributes", dv_dictionary(std::move(attrs)));
        std::vector<proto::DictionaryValue> uids;
        for (const std::string& i : in) uids.push_back(dv_string(i));
        put(d, "inputs", dv_vector(std::move(uids)));
        functions_.push_back(dv_dictionary(std::move(d)));
        return uid + "_Output_0";
    }

    // Writes `f` as the composite CNTK's own API built for it; false when there is none.
    bool expand(const Function& f) {
        enum : uint64_t {
            kNegate = 0,
            kRelu = 3,
            kExp = 4,
            kSqrt = 6,
            kFloor = 7,
            kAbs = 8,
            kReciprocal = 9,
            kPlus = 19,
            kMinus = 20,
            kElementTimes = 21,
            kEqual = 22,
            kNotEqual = 23,
            kLess = 24,
            kGreater = 26,
            kClassificationError = 36,
            kSelect = 42,
            kLogPlus = 52,
        };
        const PrimitiveOp op = f.op();
        const Attributes& a = f.attributes();
        const std::vector<Variable> in = f.inputs();
        const DataType dt = f.outputs().front().dtype();
        int n = 0;
        auto p = [&](bool last, uint64_t cntk, const std::vector<std::string>& ins,
                     proto::Dictionary attrs = proto::Dictionary()) {
            return primitive(f, n, last, cntk, ins, std::move(attrs));
        };
        auto k = [&](double v) { return scalar(v, dt); };
        auto alpha = [&] { return a.get<double>("alpha"); };
        auto beta = [&] { return a.get<double>("beta"); };
        switch (op) {
            case PrimitiveOp::square: {
                const std::string x = ref(in[0]);
                p(true, kElementTimes, {x, x});
                return true;
            }
            case PrimitiveOp::ceil: {
                const std::string x = ref(in[0]);
                p(true, kNegate, {p(false, kFloor, {p(false, kNegate, {x})})});
                return true;
            }
            case PrimitiveOp::round: {
                const std::string x = ref(in[0]);
                p(true, kFloor, {p(false, kPlus, {x, k(0.5)})});
                return true;
            }
            case PrimitiveOp::selu: {  // alpha: the scale, beta: the ELU alpha
                const std::string x = ref(in[0]);
                const std::string pos = p(false, kElementTimes, {k(alpha()), x});
                const std::string em1 = p(false, kMinus, {p(false, kExp, {x}), k(1.0)});
                const std::string neg = p(false, kElementTimes, {k(alpha() * beta()), em1});
                p(true, kSelect, {p(false, kGreater, {x, k(0.0)}), pos, neg});
                return true;
            }
            case PrimitiveOp::leaky_relu: {
                const std::string x = ref(in[0]);
                p(true, kSelect,
                  {p(false, kGreater, {x, k(0.0)}), x, p(false, kElementTimes, {k(alpha()), x})});
                return true;
            }
            case PrimitiveOp::softplus:
                p(true, kLogPlus, {ref(in[0]), k(0.0)});
                return true;
            case PrimitiveOp::softsign: {
                const std::string x = ref(in[0]);
                p(true, kElementTimes,
                  {x, p(false, kReciprocal, {p(false, kPlus, {k(1.0), p(false, kAbs, {x})})})});
                return true;
            }
            case PrimitiveOp::hard_sigmoid: {
                const std::string x = ref(in[0]);
                const std::string lin =
                    p(false, kPlus, {p(false, kElementTimes, {k(alpha()), x}), k(beta())});
                p(true, kClip, {lin, k(0.0), k(1.0)});
                return true;
            }
            case PrimitiveOp::clip:
                p(true, kClip, {ref(in[0]), k(alpha()), k(beta())});
                return true;
            case PrimitiveOp::element_not:
                p(true, kEqual, {ref(in[0]), k(0.0)});
                return true;
            case PrimitiveOp::element_divide:
                p(true, kElementTimes, {ref(in[0]), p(false, kReciprocal, {ref(in[1])})});
                return true;
            case PrimitiveOp::element_max:
            case PrimitiveOp::element_min: {
                const std::string x = ref(in[0]), y = ref(in[1]);
                p(true, kSelect, {p(false, op == PrimitiveOp::element_max ? kGreater : kLess, {x, y}), x, y});
                return true;
            }
            case PrimitiveOp::element_and:
            case PrimitiveOp::element_or:
            case PrimitiveOp::element_xor: {
                const std::string x = p(false, kNotEqual, {ref(in[0]), k(0.0)});
                const std::string y = p(false, kNotEqual, {ref(in[1]), k(0.0)});
                if (op == PrimitiveOp::element_and) p(true, kElementTimes, {x, y});
                if (op == PrimitiveOp::element_or) p(true, kNotEqual, {p(false, kPlus, {x, y}), k(0.0)});
                if (op == PrimitiveOp::element_xor) p(true, kNotEqual, {x, y});
                return true;
            }
            case PrimitiveOp::param_relu: {  // operands (x, alpha)
                const std::string x = ref(in[0]), slope = ref(in[1]);
                p(true, kSelect, {p(false, kGreater, {x, k(0.0)}), x, p(false, kElementTimes, {slope, x})});
                return true;
            }
            case PrimitiveOp::reduce: {
                const std::string& reduction = a.get<std::string>("reductionOpName");
                if (reduction != "L1" && reduction != "L2" && reduction != "SumSquare") return false;
                const std::string x = ref(in[0]);
                const std::string t =
                    reduction == "L1" ? p(false, kAbs, {x}) : p(false, kElementTimes, {x, x});
                if (reduction == "L2")
                    p(true, kSqrt, {p(false, kReduceElements, {t}, reduce_attributes(a, "Sum"))});
                else
                    p(true, kReduceElements, {t}, reduce_attributes(a, "Sum"));
                return true;
            }
            case PrimitiveOp::classification_error: {
                if (a.get<int64_t>("topN") == 1) return false;
                proto::Dictionary attrs;
                put(attrs, "axis", dv_axis(a.get<Axis>("axis")));
                p(true, kClassificationError,
                  {ref(in[0]), ref(in[1]), k(static_cast<double>(a.get<int64_t>("topN")))}, std::move(attrs));
                return true;
            }
            default:
                return false;
        }
    }

    // Writes `f` after everything it uses (post-order). A Function met again while it is being written
    // is the far end of a recurrent loop: its uid is referenced before it is written, as CNTK does.
    void emit(const Function& f) {
        if (done_.count(&f) || active_.count(&f)) return;
        active_.insert(&f);
        if (f.is_composite()) {
            for (const Variable& v : f.outputs()) visit_variable(v);
            active_.erase(&f);
            done_.insert(&f);
            return;
        }
        if (f.is_primitive() && expand(f)) {
            active_.erase(&f);
            done_.insert(&f);
            return;
        }
        proto::Dictionary d;
        d.set_version(1);
        put(d, "version", dv_size_t(kPrimitiveFunctionVersion));
        put(d, "type", dv_string("PrimitiveFunction"));
        put(d, "uid", dv_string(f.uid()));
        if (!f.name().empty()) put(d, "name", dv_string(f.name()));
        std::vector<Variable> inputs;
        if (f.is_block()) {
            const FunctionPtr& inner = f.block_root();
            const std::string inner_root = root_uid(*inner, inner->outputs());
            proto::Dictionary composite;
            composite.set_version(1);
            put(composite, "version", dv_size_t(kCompositeFunctionVersion));
            put(composite, "type", dv_string("CompositeFunction"));
            put(composite, "root", dv_string(inner_root));
            put(composite, "uid", dv_string("CompositeFunction_" + inner->uid()));
            put(d, "block_function_composite", dv_dictionary(std::move(composite)));
            put(d, "block_function_op_name", dv_string(f.op_name()));
            std::vector<proto::DictionaryValue> keys, values;
            for (const auto& [placeholder, operand] : f.block_arguments_mapping()) {
                visit_variable(placeholder);
                keys.push_back(dv_string(variable_uid(placeholder)));
                values.push_back(dv_string(variable_uid(operand)));
            }
            put(d, "block_function_composite_arguments_map_keys", dv_vector(std::move(keys)));
            put(d, "block_function_composite_arguments_map_values", dv_vector(std::move(values)));
            put(d, "op", dv_size_t(kBlock));
            proto::Dictionary attrs;
            attrs.set_version(1);
            put(d, "attributes", dv_dictionary(std::move(attrs)));
            inputs = f.inputs();
        } else {
            SavedOp s = save_op(f);
            if (s.op != kCtkExtensionOp && f.attributes().has(kUnknownAttributesKey)) {
                proto::Dictionary unknown;
                const std::string bytes =
                    from_hex(f.attributes().get<std::string>(kUnknownAttributesKey), f.uid());
                if (!unknown.ParseFromString(bytes))
                    throw IOError(f.uid() + ": malformed " + kUnknownAttributesKey);
                for (const auto& [k, v] : unknown.data())
                    if (!s.attributes.data().count(k)) (*s.attributes.mutable_data())[k] = v;
            }
            put(d, "op", dv_size_t(s.op));
            put(d, "attributes", dv_dictionary(std::move(s.attributes)));
            inputs = std::move(s.inputs);
        }
        std::vector<proto::DictionaryValue> uids;
        for (const Variable& v : inputs) {
            visit_variable(v);
            uids.push_back(dv_string(variable_uid(v)));
        }
        put(d, "inputs", dv_vector(std::move(uids)));
        functions_.push_back(dv_dictionary(std::move(d)));
        active_.erase(&f);
        done_.insert(&f);
    }

    std::vector<proto::DictionaryValue> leaves_, functions_;
    std::vector<Variable> keep_;  // the constants expansions add, alive until the file is written
    std::unordered_set<const void*> seen_leaves_;
    std::unordered_set<const Function*> done_, active_;
};

// ============================ loading ============================

// The ctk op of a CNTK element-wise op number.
std::optional<PrimitiveOp> elementwise_op(int cntk, int arity) {
    const int begin = arity == 1 ? 0 : kNumUnaryOps,
              end = arity == 1 ? kNumUnaryOps : kNumUnaryOps + kNumBinaryOps;
    for (int i = begin; i < end; ++i)
        if (cntk_op_type(static_cast<PrimitiveOp>(i)) == cntk) return static_cast<PrimitiveOp>(i);
    return std::nullopt;
}

std::optional<PrimitiveOp> op_by_name(const std::string& name) {
    for (int i = 0; i < kNumPrimitiveOps; ++i)
        if (name == primitive_op_name(static_cast<PrimitiveOp>(i))) return static_cast<PrimitiveOp>(i);
    return std::nullopt;
}

Attributes unary_defaults(PrimitiveOp op) {
    const ScalarAttrs d = default_scalars(elementwise_kernel_op(op));
    return Attributes{{"alpha", d.alpha}, {"beta", d.beta}};
}

void expect_inputs(const std::vector<Variable>& in, size_t lo, size_t hi, const std::string& where) {
    if (in.size() < lo || in.size() > hi)
        throw IOError(where + ": " + std::to_string(in.size()) + " operands where " + std::to_string(lo) +
                      (lo == hi ? "" : " to " + std::to_string(hi)) + " are expected");
}

FunctionPtr load_op(uint64_t cntk, std::vector<Variable> in, const DictReader& r, const std::string& name) {
    const std::string& where = r.where;
    auto make = [&](PrimitiveOp op, std::vector<Variable> inputs, Attributes attrs) {
        const proto::Dictionary unread = r.unread();
        if (!unread.data().empty())
            attrs.set(kUnknownAttributesKey, to_hex(serialize_cntk_dictionary(unread)));
        return FunctionAccess::make_primitive(op, std::move(inputs), std::move(attrs), name);
    };
    if (cntk == kCtkExtensionOp) {
        const std::string& op_name = r.string("ctkOp");
        auto op = op_by_name(op_name);
        if (!op) throw NotImplementedError(where + ": ctk op '" + op_name + "' is not known to this version");
        DictReader ar{r.dictionary("ctkAttributes"), where + "/ctkAttributes"};
        return make(*op, std::move(in), attributes_from_generic(ar));
    }
    const int c = static_cast<int>(cntk);
    if (in.size() == 1 && c != 10 && c != 11 && c != 51 && c != 15 && c != 16 && c != 14 && c != 12 &&
        c != 17 && c != 83 && c != 68 && c != 87 && c != 91 && c != 64 && c != 56 && c != 39 && c != 43 &&
        c != kCombine && c != kSumAll) {
        if (auto op = elementwise_op(c, 1)) {
            Attributes attrs = unary_defaults(*op);
            if (*op == PrimitiveOp::elu) attrs.set("alpha", r.real("alpha", 1.0));
            return make(*op, std::move(in), std::move(attrs));
        }
    }
    if (in.size() == 2 && c != kTimes && c != kTransposeTimes && c != 74 && c != kCombine) {
        if (auto op = elementwise_op(c, 2)) return make(*op, std::move(in), {});
    }
    switch (c) {
        case 42:  // Select
            expect_inputs(in, 3, 3, where);
            return make(PrimitiveOp::element_select, std::move(in), {});
        case 64:
            expect_inputs(in, 1, 1, where);
            return make(PrimitiveOp::stop_gradient, std::move(in), {});
        case 56:
        case 62:  // Pass, NoOp
            expect_inputs(in, 1, 1, where);
            return make(PrimitiveOp::pass, std::move(in), {});
        case 73:
            expect_inputs(in, 2, 2, where);
            return make(PrimitiveOp::assign, std::move(in), {});
        case 34:
            expect_inputs(in, 2, 2, where);
            return make(PrimitiveOp::squared_error, std::move(in), {});
        case 48:
            expect_inputs(in, 2, 3, where);
            return make(PrimitiveOp::binary_cross_entropy, std::move(in), {});
        case 53:
            expect_inputs(in, 2, 2, where);
            return make(PrimitiveOp::cosine_distance, std::move(in), {});
        case kTimes:
            expect_inputs(in, 2, 2, where);
            return make(PrimitiveOp::times, {in[1], in[0]},
                        Attributes{{"outputRank", r.integer("outputRank", 1)},
                                   {"inferInputRankToMap", r.integer("inferInputRankToMap", -1)}});
        case kTransposeTimes:
            expect_inputs(in, 2, 2, where);
            if (r.integer("outputRank", 1) != 1)
                throw NotImplementedError(where + ": TransposeTimes with outputRank other than 1");
            return make(PrimitiveOp::transpose_times, {in[1], in[0]}, {});
        case kSumAll:
            expect_inputs(in, 1, 1, where);
            return make(PrimitiveOp::reduce, std::move(in),
                        Attributes{{"reductionOpName", std::string("Sum")},
                                   {"axes", std::vector<Axis>{Axis::all_axes()}},
                                   {"keepdims", false}});
        case kReduceElements: {
            expect_inputs(in, 1, 1, where);
            const std::string& reduction = r.string("reductionOpName");
            if (reduction == "Argmax" || reduction == "Argmin") {
                Attributes attrs;
                const Axis axis = r.axis("axis");
                if (axis.kind() != Axis::Kind::all_static) attrs.set("axis", axis);
                return make(reduction == "Argmax" ? PrimitiveOp::argmax : PrimitiveOp::argmin, std::move(in),
                            std::move(attrs));
            }
            std::vector<Axis> axes = r.has("axisVec") ? r.axes("axisVec") : std::vector<Axis>{r.axis("axis")};
            if (axes.size() == 1 && axes[0].is_sequence())
                return make(
                    reduction == "Max" ? PrimitiveOp::sequence_reduce_max : PrimitiveOp::sequence_reduce_sum,
                    std::move(in), {});
            return make(PrimitiveOp::reduce, std::move(in),
                        Attributes{{"reductionOpName", reduction},
                                   {"axes", axes},
                                   {"keepdims", r.boolean("reductionKeepDimensions", true)}});
        }
        case 10:
        case 11:
        case 51: {
            expect_inputs(in, 1, 1, where);
            Attributes attrs;
            if (r.has("axis")) {
                const Axis axis = r.axis("axis");
                if (axis.kind() != Axis::Kind::all_static) attrs.set("axis", axis);
            }
            const PrimitiveOp op = c == 10   ? PrimitiveOp::softmax
                                   : c == 11 ? PrimitiveOp::hardmax
                                             : PrimitiveOp::log_softmax;
            return make(op, std::move(in), std::move(attrs));
        }
        case 16: {  // Reshape of the column-major static axes [beginAxis, endAxis)
            expect_inputs(in, 1, 1, where);
            const int rank = in[0].rank();
            Attributes attrs{{"newShape", r.shape("newShape")}};
            int cb = 0, ce = rank;
            if (r.has("beginAxis")) {
                const int32_t i = r.axis_proto("beginAxis").static_axis_idx();
                cb = i == kAxisIndexEndStatic ? rank : (i < 0 ? i + rank : i);
            }
            if (r.has("endAxis")) {
                const int32_t i = r.axis_proto("endAxis").static_axis_idx();
                ce = i == kAxisIndexEndStatic ? rank : (i < 0 ? i + rank : i);
            }
            if (cb < 0 || ce > rank || cb > ce)
                throw IOError(where + ": Reshape axes [" + std::to_string(cb) + ", " + std::to_string(ce) +
                              ") outside a rank-" + std::to_string(rank) + " operand");
            if (cb != 0 || ce != rank) {
                attrs.set("beginAxis", int64_t(rank - ce));
                attrs.set("endAxis", int64_t(rank - cb));
            }
            return make(PrimitiveOp::reshape, std::move(in), std::move(attrs));
        }
        case 14: {  // Slice
            expect_inputs(in, 1, 1, where);
            std::vector<Axis> axes;
            Dims begin, end, strides;
            if (r.has("axisVec")) {
                axes = r.axes("axisVec");
                begin = r.ints("beginIndexVec");
                end = r.ints("endIndexVec");
                strides = r.has("sliceStridesVec") ? r.ints("sliceStridesVec") : Dims(axes.size(), 1);
            } else {
                axes = {r.axis("axis")};
                begin = {r.integer("beginIndex")};
                end = {r.integer("endIndex")};
                strides = {r.integer("sliceStrides", 1)};
            }
            if (begin.size() != axes.size() || end.size() != axes.size() || strides.size() != axes.size())
                throw IOError(where + ": Slice lists of different lengths");
            if (axes.size() == 1 && axes[0].is_sequence()) {
                if (strides[0] != 1) throw NotImplementedError(where + ": strided sequence slice");
                return make(PrimitiveOp::sequence_slice, std::move(in),
                            Attributes{{"beginIndex", begin[0]},
                                       {"endIndex", end[0]},
                                       {"newAxis", Axis::new_unique_dynamic_axis("sliceAxis").name()}});
            }
            return make(
                PrimitiveOp::slice, std::move(in),
                Attributes{
                    {"axes", axes}, {"beginIndex", begin}, {"endIndex", end}, {"sliceStrides", strides}});
        }
        case 43:
            if (in.empty()) throw IOError(where + ": Splice without operands");
            return make(PrimitiveOp::splice, std::move(in), Attributes{{"axis", r.axis("axis")}});
        case 12: {  // TransposeAxes
            expect_inputs(in, 1, 1, where);
            const int n = in[0].rank();
            Dims perm(static_cast<size_t>(n));
            for (int i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
            if (r.has("axisVec")) {
                std::vector<int32_t> p;
                for (const auto& item : r.vector("axisVec")) {
                    if (item.value_type() != proto::DictionaryValue::Axis)
                        r.wrong("axisVec", "a Vector of Axis", item);
                    p.push_back(item.axis_value().static_axis_idx());
                }
                if (static_cast<int>(p.size()) != n)
                    throw IOError(where + ": permutation of " + std::to_string(p.size()) +
                                  " axes for a rank-" + std::to_string(n) + " operand");
                for (int k = 0; k < n; ++k)
                    perm[static_cast<size_t>(k)] = n - 1 - normalized(p[static_cast<size_t>(n - 1 - k)], n);
            } else {
                const int a = row_major_axis(r.axis_proto("axis1").static_axis_idx(), n, where);
                const int b = row_major_axis(r.axis_proto("axis2").static_axis_idx(), n, where);
                std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
            }
            return make(PrimitiveOp::transpose, std::move(in), Attributes{{"axisPermutation", perm}});
        }
        case 83:
            expect_inputs(in, 1, 1, where);
            return make(PrimitiveOp::pad, std::move(in),
                        Attributes{{"padLo", r.shape("paddingHead")},
                                   {"padHi", r.shape("paddingFoot")},
                                   {"mode", r.integer("paddingMode", 0)},
                                   {"constantValue", r.real("paddingConstantValue", 0.0)}});
        case 74:
            expect_inputs(in, 2, 2, where);
            return make(PrimitiveOp::gather, {in[1], in[0]}, {});
        case 68: {
            expect_inputs(in, 1, 1, where);
            const Axis axis = r.axis("axis");
            return make(PrimitiveOp::one_hot, std::move(in),
                        Attributes{{"numClass", r.integer("numClass")},
                                   {"outputSparse", r.boolean("outputSparse", false)},
                                   {"axis", int64_t(axis.static_index())}});
        }
        case 87: {
            expect_inputs(in, 1, 1, where);
            const Axis axis = r.axis("axis");
            return make(
                PrimitiveOp::top_k, std::move(in),
                Attributes{{"numItems", r.integer("numItems")}, {"axis", int64_t(axis.static_index())}});
        }
        case 91:
            expect_inputs(in, 1, 1, where);
            return make(
                PrimitiveOp::cast, std::move(in),
                Attributes{{"newDataType",
                            int64_t(ctk_dtype(static_cast<uint64_t>(r.integer("newDataType")), where))}});
        case kConvolution: {
            expect_inputs(in, 2, 2, where);
            const bool transpose = r.boolean("transpose", false);
            for (const char* key : {"lowerPad", "upperPad"})
                for (int64_t p : r.shape(key, Dims{0}))
                    if (p != 0)
                        throw NotImplementedError(where + ": explicit " + key +
                                                  " padding (ctk convolutions take auto_padding only)");
            for (bool shared : r.bools_reversed("sharing", std::vector<bool>{true}))
                if (!shared) throw NotImplementedError(where + ": convolution without weight sharing");
            const Dims strides = r.shape("strides", Dims{1});
            const Dims pad = as_dims(r.bools_reversed("autoPadding", std::vector<bool>{false}));
            const Dims dilation = r.shape("dilation", Dims{1});
            if (transpose) {
                Dims out = r.shape("outputShape", Dims{});
                if (!out.empty() && out.size() == static_cast<size_t>(in[1].rank())) out.erase(out.begin());
                return make(PrimitiveOp::convolution_transpose, std::move(in),
                            Attributes{{"strides", strides},
                                       {"autoPadding", pad},
                                       {"outputShape", out},
                                       {"dilation", dilation}});
            }
            return make(PrimitiveOp::convolution, std::move(in),
                        Attributes{{"strides", strides},
                                   {"autoPadding", pad},
                                   {"dilation", dilation},
                                   {"groups", r.integer("groups", 1)}});
        }
        case 17: {
            expect_inputs(in, 1, 1, where);
            for (const char* key : {"lowerPad", "upperPad"})
                for (int64_t p : r.shape(key, Dims{0}))
                    if (p != 0)
                        throw NotImplementedError(where + ": explicit " + key + " padding in pooling");
            return make(PrimitiveOp::pooling, std::move(in),
                        Attributes{{"poolingType", r.integer("poolingType")},
                                   {"poolingWindowShape", r.shape("poolingWindowShape")},
                                   {"strides", r.shape("strides", Dims{1})},
                                   {"autoPadding",
                                    as_dims(r.bools_reversed("autoPadding", std::vector<bool>{false}))},
                                   {"ceilOutDim", r.boolean("ceilOutDim", false)},
                                   {"includePad", r.boolean("includePad", false)}});
        }
        case 58:
            expect_inputs(in, 2, 2, where);
            return make(PrimitiveOp::unpooling, std::move(in),
                        Attributes{{"poolingType", r.integer("poolingType", 0)},
                                   {"unpoolingWindowShape", r.shape("unpoolingWindowShape")},
                                   {"strides", r.shape("strides", Dims{1})},
                                   {"autoPadding",
                                    as_dims(r.bools_reversed("autoPadding", std::vector<bool>{false}))}});
        case kBatchNormalization: {
            expect_inputs(in, 5, 6, where);
            // Files before PrimitiveFunction version 4 have no running sample count: CNTK adds a 0.
            if (in.size() == 5) in.push_back(constant(0.0, in[0].dtype(), "BatchNormSampleCount"));
            const double blend = r.real("blendTimeConstant", 0.0);
            if (blend != 0.0)
                throw NotImplementedError(where + ": BatchNormalization with blendTimeConstant " +
                                          std::to_string(blend));
            return make(PrimitiveOp::batch_normalization, std::move(in),
                        Attributes{{"spatial", r.boolean("spatial")},
                                   {"normalizationTimeConstant", r.real("normalizationTimeConstant", 0.0)},
                                   {"blendTimeConstant", blend},
                                   {"epsilon", r.real("epsilon", 1e-5)}});
        }
        case 15:
            expect_inputs(in, 1, 1, where);
            return make(
                PrimitiveOp::dropout, std::move(in),
                Attributes{{"dropoutRate", r.real("dropoutRate")}, {"rngSeed", r.integer("rngSeed", 0)}});
        case 35:
            expect_inputs(in, 2, 2, where);
            return make(PrimitiveOp::cross_entropy_with_softmax, std::move(in),
                        Attributes{{"axis", r.has("axis") ? r.axis("axis") : Axis(-1)}});
        case 36: {
            expect_inputs(in, 2, 3, where);
            int64_t top_n = 1;
            if (in.size() == 3) {
                if (!in[2].is_constant())
                    throw IOError(where + ": ClassificationError's topN is not a Constant");
                top_n = static_cast<int64_t>(in[2].value().item());
                in.pop_back();
            }
            return make(PrimitiveOp::classification_error, std::move(in),
                        Attributes{{"axis", r.has("axis") ? r.axis("axis") : Axis(-1)}, {"topN", top_n}});
        }
        case 37:
        case 38:
            expect_inputs(in, 2, 2, where);
            return make(c == 37 ? PrimitiveOp::past_value : PrimitiveOp::future_value, std::move(in),
                        Attributes{{"offset", r.integer("offset", 1)}});
        case 50:
            expect_inputs(in, 2, 2, where);
            return make(PrimitiveOp::sequence_broadcast_as, std::move(in), {});
        case 79:
        case 80:
            expect_inputs(in, 1, 1, where);
            return make(c == 79 ? PrimitiveOp::unpack_batch : PrimitiveOp::to_batch, std::move(in), {});
        case 76: {
            expect_inputs(in, 0, 1, where);
            const std::string& kind = r.string("randomDistributionType");
            std::vector<double> args;
            for (const auto& item : r.vector("randomDistributionArgs")) {
                if (item.value_type() != proto::DictionaryValue::Double)
                    r.wrong("randomDistributionArgs", "a Vector of Double", item);
                args.push_back(item.double_value());
            }
            if (args.empty()) throw IOError(where + ": RandomDistribution without arguments");
            Attributes attrs{{"rvType", kind},
                             {"arg0", args[0]},
                             {"arg1", args.size() > 1 ? args[1] : 0.0},
                             {"rngSeed", r.integer("rngSeed", 0)}};
            r.integer("rngOffset", 0);
            attrs.set("newShape", in.empty() ? r.shape("newShape") : Dims{});
            attrs.set(
                "newDataType",
                int64_t(in.empty() ? ctk_dtype(static_cast<uint64_t>(r.integer("newDataType", 1)), where)
                                   : DataType::f32));
            return make(PrimitiveOp::random_distribution, std::move(in), std::move(attrs));
        }
        case kClip:
            expect_inputs(in, 3, 3, where);
            if (!in[1].is_constant() || !in[2].is_constant())
                throw NotImplementedError(where + ": Clip with bounds that are not Constants");
            return make(PrimitiveOp::clip, {in[0]},
                        Attributes{{"alpha", in[1].value().item()}, {"beta", in[2].value().item()}});
        default:
            throw NotImplementedError(where + ": CNTK op " + std::to_string(cntk) +
                                      " is not supported by ctk's CNTK v2 reader");
    }
}

class Loader {
public:
    explicit Loader(std::string source) : source_(std::move(source)) {}

    FunctionPtr load(const proto::Dictionary& top) {
        DictReader r{top, source_};
        const std::string& type = r.string("type");
        if (type != "CompositeFunction")
            throw IOError(source_ + ": the file holds a '" + type + "', not a model (CompositeFunction)");
        int i = 0;
        for (const auto& v : r.vector("inputs")) {
            const std::string where = source_ + ": inputs[" + std::to_string(i++) + "]";
            if (v.value_type() != proto::DictionaryValue::Dictionary)
                throw IOError(where + " is a " + dv_type_name(v.value_type()) + ", not a Variable");
            load_variable(DictReader{v.dictionary_value(), where});
        }
        i = 0;
        for (const auto& v : r.vector("primitive_functions")) {
            const std::string where = source_ + ": primitive_functions[" + std::to_string(i++) + "]";
            if (v.value_type() != proto::DictionaryValue::Dictionary)
                throw IOError(where + " is a " + dv_type_name(v.value_type()) + ", not a Function");
            load_function(DictReader{v.dictionary_value(), where});
        }
        FunctionPtr root = function(r.string("root"), source_ + ": root");
        // Close recurrent loops: a placeholder stood for each output used before it was built.
        if (!forward_.empty()) {
            VariableMap map;
            for (auto& [uid, placeholder] : forward_) {
                auto it = variables_.find(uid);
                if (it == variables_.end())
                    throw IOError(source_ + ": no Variable with uid '" + uid + "' exists in the file");
                map.emplace(placeholder, it->second);
            }
            root->replace_placeholders(map);
        }
        const std::string name = top.data().count("name") ? r.string("name") : std::string();
        return combine(root->outputs(), name);
    }

private:
    void load_variable(const DictReader& r) {
        const std::string& uid = r.string("uid");
        const int64_t kind = r.integer("kind");
        const DataType dtype = ctk_dtype(static_cast<uint64_t>(r.integer("data_type", 1)), r.where);
        const std::string name = r.has("name") ? r.string("name") : std::string();
        std::vector<Axis> dyn;
        if (r.has("dynamic_axis")) {
            for (const auto& item : r.vector("dynamic_axis")) {
                if (item.value_type() != proto::DictionaryValue::Axis)
                    r.wrong("dynamic_axis", "a Vector of Axis", item);
                dyn.insert(dyn.begin(), axis_from_proto(item.axis_value(), r.where));
            }
        }
        const auto& shape_proto = r.shape_proto("shape");
        const bool unknown_shape =
            shape_proto.shape_dim_size() == 1 && shape_proto.shape_dim(0) == kUnknownShapeDim;
        const Dims shape = unknown_shape ? Dims{} : r.shape("shape");
        Variable v;
        switch (kind) {
            case 0:
                v = input_variable(shape, dtype, r.boolean("needs_gradient", false),
                                   r.boolean("is_sparse", false), dyn, name);
                break;
            case 2:
            case 3: {
                Tensor value = tensor_from_proto(
                    [&]() -> const proto::NDArrayView& {
                        const auto& val = r.at("value");
                        if (val.value_type() != proto::DictionaryValue::NDArrayView)
                            r.wrong("value", "NDArrayView", val);
                        return val.nd_array_view_value();
                    }(),
                    r.where + "/value");
                if (value.shape().dims() != shape)
                    throw IOError(r.where + ": value of shape " + value.shape().to_string() +
                                  " for a variable of shape " + Shape(shape).to_string());
                if (value.dtype() != dtype) value = value.to(dtype);
                v = kind == 2 ? parameter_from(value, name) : constant(value, name);
                break;
            }
            case 4:
                v = unknown_shape ? placeholder(name) : placeholder(shape, dyn, name);
                break;
            default:
                throw IOError(r.where + ": variable kind " + std::to_string(kind) +
                              " cannot be a graph input");
        }
        if (!variables_.emplace(uid, v).second) throw IOError(r.where + ": duplicate uid '" + uid + "'");
        v.impl()->uid = uid;  // as CNTK: a loaded variable keeps its uid (unnamed inputs are known by it)
    }

    Variable variable(const std::string& uid, const std::string& where) {
        auto it = variables_.find(uid);
        if (it != variables_.end()) return it->second;
        // An output used before its Function is built: the far end of a recurrent loop.
        if (uid.find("_Output_") == std::string::npos)
            throw IOError(where + ": no Variable with uid '" + uid + "' precedes its use");
        auto f = forward_.find(uid);
        if (f != forward_.end()) return f->second;
        Variable p = placeholder(uid);
        forward_.emplace(uid, p);
        return p;
    }

    FunctionPtr function(const std::string& uid, const std::string& where) {
        auto it = functions_.find(uid);
        if (it == functions_.end()) throw IOError(where + ": no Function with uid '" + uid + "'");
        return it->second;
    }

    void load_function(const DictReader& r) {
        const std::string& uid = r.string("uid");
        const std::string name = r.has("name") ? r.string("name") : std::string();
        const std::string where = r.where + " ('" + uid + "')";
        const uint64_t op = static_cast<uint64_t>(r.integer("op"));
        std::vector<Variable> inputs;
        for (const std::string& in : r.strings("inputs")) inputs.push_back(variable(in, where));
        FunctionPtr f;
        if (op == kBlock) {
            DictReader composite{r.dictionary("block_function_composite"),
                                 where + "/block_function_composite"};
            FunctionPtr inner = function(composite.string("root"), composite.where);
            const auto keys = r.strings("block_function_composite_arguments_map_keys");
            const auto values = r.strings("block_function_composite_arguments_map_values");
            if (keys.size() != values.size())
                throw IOError(where + ": " + std::to_string(keys.size()) + " block argument keys but " +
                              std::to_string(values.size()) + " values");
            std::vector<std::pair<Variable, Variable>> mapping;
            for (size_t i = 0; i < keys.size(); ++i)
                mapping.emplace_back(variable(keys[i], where), variable(values[i], where));
            f = as_block(combine(inner->outputs()), mapping, r.string("block_function_op_name"), name);
        } else if (op == kCombine) {
            f = combine(inputs, name);
        } else {
            DictReader attrs{r.dictionary("attributes"), where};
            try {
                f = load_op(op, std::move(inputs), attrs, name);
            } catch (const IOError&) {
                throw;
            } catch (const NotImplementedError&) {
                throw;
            } catch (const Error& e) {
                throw IOError(where + ": " + e.what());
            }
        }
        if (!functions_.emplace(uid, f).second) throw IOError(where + ": duplicate uid '" + uid + "'");
        const auto outs = f->outputs();
        for (size_t i = 0; i < outs.size(); ++i) variables_[uid + "_Output_" + std::to_string(i)] = outs[i];
    }

    std::string source_;
    std::unordered_map<std::string, Variable> variables_;
    std::unordered_map<std::string, FunctionPtr> functions_;
    std::unordered_map<std::string, Variable> forward_;
};

}  // namespace

proto::Dictionary cntk_v2_model_dictionary(const FunctionPtr& model) {
    return Saver().save(model);
}

FunctionPtr cntk_v2_model_from_dictionary(const proto::Dictionary& d, const std::string& source) {
    return Loader(source).load(d);
}

}  // namespace formats

FunctionPtr load_cntk_v2_model(const std::string& path) {
    return formats::cntk_v2_model_from_dictionary(formats::read_cntk_dictionary_file(path), "'" + path + "'");
}

std::string serialize_cntk_v2_model(const FunctionPtr& model) {
    if (!model) throw ValueError("serialize_cntk_v2_model: null Function");
    return formats::serialize_cntk_dictionary(formats::cntk_v2_model_dictionary(model));
}

FunctionPtr deserialize_cntk_v2_model(const std::string& bytes, const std::string& source) {
    return formats::cntk_v2_model_from_dictionary(formats::parse_cntk_dictionary(bytes, source), source);
}

void save_cntk_v2_model(const FunctionPtr& model, const std::string& path) {
    if (!model) throw ValueError("save_model: null Function");
    formats::write_cntk_dictionary_file(formats::cntk_v2_model_dictionary(model), path);
}

}  // namespace ctk
