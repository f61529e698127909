// CNTK v2 model files: the rows' table (one row per ctk op family and CNTK op, save and load side by side
// in the family files cntk_v2_rows_*.cpp), built once and checked (each ctk op written by one row, each
// CNTK op number read by one), the dispatch of save_op and load_op over it, and the ctk extension op for
// what CNTK had no primitive for: op number kCtkExtensionOp with the ctk op's name and attributes, which
// ctk reads back exactly and CNTK 2.7 would refuse.
#include <limits>
#include <map>

#include "ctk/graph/graph_ops.h"
#include "formats/cntk_v2_internal.h"

namespace ctk::formats::v2 {

namespace {

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
        } else if (std::holds_alternative<OpaqueAttr>(value)) {
            CTK_THROW(NotImplementedError, "save_model: attribute '", key, "' lives in this process only");
        } else {
            std::vector<proto::DictionaryValue> items;
            for (const Axis& axis : std::get<std::vector<Axis>>(value)) items.push_back(dv_axis(axis));
            v = dv_vector(std::move(items));
        }
        put(out, key, std::move(v));
    }
    return out;
}

// The inverse of the save side's generic_attributes (the extension encoding).
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

std::optional<PrimitiveOp> op_by_name(const std::string& name) {
    for (int i = 0; i < kNumPrimitiveOps; ++i)
        if (name == primitive_op_name(static_cast<PrimitiveOp>(i))) return static_cast<PrimitiveOp>(i);
    return std::nullopt;
}

// The ctk ops CNTK had no primitive or composite for in any form: written as the extension op only, and
// read back from it.
void add_extension_rows(Rows& rows) {
    rows.push_back(
        {{PrimitiveOp::sequence_first, PrimitiveOp::sequence_last, PrimitiveOp::sequence_reduce_sum,
          PrimitiveOp::sequence_reduce_max, PrimitiveOp::sequence_softmax, PrimitiveOp::sequence_is_first,
          PrimitiveOp::sequence_is_last, PrimitiveOp::sequence_slice, PrimitiveOp::sequence_gather,
          PrimitiveOp::sequence_where, PrimitiveOp::sequence_scatter, PrimitiveOp::sequence_unpack,
          PrimitiveOp::combine, PrimitiveOp::block},
         {},
         extension_op});
}

struct Table {
    Rows rows;
    std::vector<const Row*> by_op = std::vector<const Row*>(static_cast<size_t>(kNumPrimitiveOps), nullptr);
    std::map<int, const Row*> by_cntk;
};

const Table& table() {
    static const Table t = [] {
        Table t;
        add_math_rows(t.rows);
        add_shape_rows(t.rows);
        add_nn_rows(t.rows);
        add_sequence_rows(t.rows);
        add_special_rows(t.rows);
        add_extension_rows(t.rows);
        for (const Row& row : t.rows) {
            CTK_CHECK(row.ops.empty() || row.save, Error, "CNTK v2 rows: a row writing ",
                      primitive_op_name(row.ops[0]), " has no save");
            CTK_CHECK(row.cntk_ops.empty() || row.load, Error, "CNTK v2 rows: a row reading CNTK op ",
                      row.cntk_ops[0], " has no load");
            for (PrimitiveOp op : row.ops) {
                const Row*& slot = t.by_op[static_cast<size_t>(op)];
                CTK_CHECK(slot == nullptr, Error, "CNTK v2 rows: ", primitive_op_name(op),
                          " is written by two rows");
                slot = &row;
            }
            for (int c : row.cntk_ops)
                CTK_CHECK(t.by_cntk.emplace(c, &row).second, Error, "CNTK v2 rows: CNTK op ", c,
                          " is read by two rows");
        }
        return t;
    }();
    return t;
}

}  // namespace

const Row* row_for(PrimitiveOp op) {
    return table().by_op[static_cast<size_t>(op)];
}

const Row* row_reading(int cntk_op) {
    const auto& m = table().by_cntk;
    auto it = m.find(cntk_op);
    return it == m.end() ? nullptr : it->second;
}

SavedOp extension_op(const Function& f) {
    SavedOp s;
    s.op = kCtkExtensionOp;
    s.inputs = f.inputs();
    s.attributes.set_version(1);
    put(s.attributes, "ctkOp", dv_string(primitive_op_name(f.op())));
    put(s.attributes, "ctkAttributes", dv_dictionary(generic_attributes(f.attributes())));
    return s;
}

SavedOp save_op(const Function& f) {
    CTK_CHECK(f.op() != PrimitiveOp::user_function, NotImplementedError, "save_model: '", f.name(),
              "' is a user function (", f.op_name(),
              "): its callbacks live in this process and cannot be saved");
    const Row* row = row_for(f.op());
    CTK_CHECK(row != nullptr, NotImplementedError, "save_model: op ", primitive_op_name(f.op()),
              " has no CNTK v2 row (src/formats/cntk_v2_rows_*.cpp)");
    return row->save(f);
}

void LoadCall::expect(size_t lo, size_t hi) const {
    if (in.size() < lo || in.size() > hi)
        throw IOError(r.where + ": CNTK op " + std::to_string(cntk_op) + " takes " + std::to_string(lo) +
                      (lo == hi ? "" : " to " + std::to_string(hi)) + " operands, the file gives " +
                      std::to_string(in.size()));
}

FunctionPtr LoadCall::make(PrimitiveOp op, std::vector<Variable> inputs, Attributes attrs) const {
    const proto::Dictionary unread = r.unread();
    if (!unread.data().empty()) attrs.set(kUnknownAttributesKey, to_hex(serialize_cntk_dictionary(unread)));
    return primitive_function(op, std::move(inputs), std::move(attrs), name);
}

FunctionPtr load_op(uint64_t cntk, std::vector<Variable> in, const DictReader& r, const std::string& name) {
    const int c = cntk > static_cast<uint64_t>(std::numeric_limits<int>::max()) ? -1 : static_cast<int>(cntk);
    const LoadCall call{c, in, r, name};
    if (cntk == kCtkExtensionOp) {
        const std::string& op_name = r.string("ctkOp");
        auto op = op_by_name(op_name);
        if (!op)
            throw NotImplementedError(r.where + ": ctk op '" + op_name + "' is not known to this version");
        DictReader ar{r.dictionary("ctkAttributes"), r.where + "/ctkAttributes"};
        return call.make(*op, std::move(in), attributes_from_generic(ar));
    }
    const Row* row = row_reading(c);
    if (!row)
        throw NotImplementedError(r.where + ": CNTK op " + std::to_string(cntk) +
                                  " is not supported by ctk's CNTK v2 reader");
    return row->load(call);
}

}  // namespace ctk::formats::v2
