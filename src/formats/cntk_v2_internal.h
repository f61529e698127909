// CNTK v2 model files, internal: the pieces shared by the rows (cntk_v2_rows*.cpp: per op, save and load
// side by side) and the graph walks that write and read a whole model (cntk_v2_model.cpp).
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

// ---- one op, both ways: the rows (cntk_v2_rows.cpp and the family files cntk_v2_rows_*.cpp) ----
// A ctk primitive as CNTK writes it: the op number, the operands in CNTK's order and the attributes.
struct SavedOp {
    uint64_t op = 0;
    std::vector<Variable> inputs;  // CNTK's operand order
    proto::Dictionary attributes;
};

// What a row's composite writes with (the Saver in cntk_v2_model.cpp): CNTK's primitives of the op's
// expansion, each after its operands.
class CompositeWriter {
public:
    virtual ~CompositeWriter() = default;
    // The uid of an operand's output, the operand written first when it is not yet.
    virtual std::string operand(const Variable& v) = 0;
    // A scalar Constant of the op's dtype.
    virtual std::string scalar(double value) = 0;
    // One CNTK primitive over `inputs` (uids); the one marked `last` takes the op's uid and name, so that
    // the op's users find it. Returns the uid of its output.
    virtual std::string primitive(bool last, uint64_t cntk_op, const std::vector<std::string>& inputs,
                                  proto::Dictionary attributes = proto::Dictionary()) = 0;
};

// A CNTK primitive being read: its operands in CNTK's order, its attributes, the Function's name.
struct LoadCall {
    int cntk_op;
    std::vector<Variable>& in;
    const DictReader& r;
    const std::string& name;
    // An IOError naming the CNTK op unless lo <= operands <= hi.
    void expect(size_t lo, size_t hi) const;
    // The loaded primitive; the attributes no read asked for travel with it (kUnknownAttributesKey).
    FunctionPtr make(PrimitiveOp op, std::vector<Variable> inputs, Attributes attrs) const;
};

// One row: some ctk ops and the CNTK op numbers they are read from, save and load side by side. Every
// ctk op is written by exactly one row, and every CNTK op number ctk reads is read by exactly one row;
// the table checks both when it is built (OpCoverage tests it).
struct Row {
    std::vector<PrimitiveOp> ops;  // the ctk ops it writes (none: a CNTK op read into a graph form)
    std::vector<int> cntk_ops;     // the CNTK op numbers it reads (none: written as a ctk extension)
    // The op as one CNTK primitive (the ctk extension op for forms CNTK had none for).
    SavedOp (*save)(const Function& f) = nullptr;
    // Where CNTK had no primitive for the op (or this form of it): the composite CNTK's own API built,
    // so that CNTK reads the file; false when this form is written by `save`. Null: always `save`.
    bool (*save_composite)(const Function& f, CompositeWriter& w) = nullptr;
    FunctionPtr (*load)(const LoadCall& c) = nullptr;
};
using Rows = std::vector<Row>;
void add_math_rows(Rows& rows);   // cntk_v2_rows_math.cpp: element-wise, times, reductions, softmax, losses
void add_shape_rows(Rows& rows);  // cntk_v2_rows_shape.cpp: reshape, slice, splice, transpose, ...
void add_nn_rows(Rows& rows);     // cntk_v2_rows_nn.cpp: convolution, pooling, normalization, random
void add_sequence_rows(Rows& rows);  // cntk_v2_rows_sequence.cpp: delays, dynamic axes
void add_special_rows(Rows& rows);   // cntk_v2_rows_special.cpp: sampling, ranking, CTC, ...
// The row that writes `op`, or null (only user functions have none: they cannot be saved).
const Row* row_for(PrimitiveOp op);
// The row that reads CNTK op number `cntk_op`, or null.
const Row* row_reading(int cntk_op);

SavedOp save_op(const Function& f);  // by its row; user functions are refused
// The ctk extension op: op number kCtkExtensionOp with the ctk op's name and attributes (written by ctk's
// rows for ops and forms CNTK had no primitive for; CNTK 2.7 refuses it, ctk reads it back exactly).
SavedOp extension_op(const Function& f);
// The ctk Function for a CNTK primitive (operands in CNTK's order); throws NotImplementedError naming the
// op number for ops ctk does not read.
FunctionPtr load_op(uint64_t cntk, std::vector<Variable> in, const DictReader& r, const std::string& name);

// ---- conversions the rows share (cntk_v2_common.cpp) ----
// CNTK op `cntk_op` over `inputs` (CNTK's order), no attributes yet; as_numbered: the op's own CNTK number
// (cntk_op_type) over its operands. `set` adds an attribute.
SavedOp primitive_form(uint64_t cntk_op, std::vector<Variable> inputs);
SavedOp as_numbered(const Function& f);
// The load of an op that has operands and no attributes: lo..hi operands in ctk's order.
template <PrimitiveOp Op, size_t Lo, size_t Hi>
FunctionPtr load_plain(const LoadCall& c) {
    c.expect(Lo, Hi);
    return c.make(Op, std::move(c.in), {});
}
// The row of such an op: written as its own CNTK number, read back with lo..hi operands.
template <PrimitiveOp Op, size_t Lo, size_t Hi>
Row plain_row(std::vector<int> cntk_ops) {
    return {{Op}, std::move(cntk_ops), as_numbered, nullptr, load_plain<Op, Lo, Hi>};
}
void set(SavedOp& s, const std::string& key, proto::DictionaryValue v);
// A possibly negative static axis as 0..rank-1.
inline int normalized(int axis, int rank) {
    return axis < 0 ? axis + rank : axis;
}
// ReduceElements' attributes for ctk's reduce attributes with CNTK's reduction `name`.
proto::Dictionary reduce_attributes(const Attributes& a, const std::string& name);
// A per-axis list of ctk's (row-major, a short list extended at the front with its first value) at a
// sample's full rank.
Dims full_rank(Dims list, size_t rank);
// Bools written in CNTK's column-major order, and the inverse helpers.
proto::DictionaryValue dv_bools_reversed(const std::vector<bool>& row_major);
std::vector<bool> as_bools(const Dims& d);
Dims as_dims(const std::vector<bool>& b);
// A CNTK static-axis value with a raw index (CNTK's Axis(i), EndStaticAxis, ...).
proto::DictionaryValue dv_raw_axis(int32_t index);
// A CNTK static axis index (column-major, negative from the innermost end) as a row-major index.
int row_major_axis(int32_t cntk_index, int rank, const std::string& where);
// A Vector of SizeT as ints.
Dims size_ts(const DictReader& r, const std::string& key);

}  // namespace ctk::formats::v2
