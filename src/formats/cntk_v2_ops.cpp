// CNTK v2 model files: one ctk primitive as CNTK writes it and back. The conversions for one op, both
// ways, sit together here: save_op (and the composites in cntk_v2_model.cpp's Saver::expand for ops CNTK
// had only as composites) and load_op. Each turns ctk's row-major conventions into CNTK's column-major
// ones (shapes reversed, static axis i written as CNTK's -i-1, per-axis lists reversed, times' operands
// swapped) or back. ctk ops with no CNTK form are written as a ctk extension: op number kCtkExtensionOp
// with the ctk op's name and attributes, which ctk reads back exactly and CNTK 2.7 would refuse.
#include <algorithm>
#include <limits>

#include "ctk/graph_ops.h"
#include "ctk/ops.h"
#include "formats/cntk_v2_internal.h"
#include "graph/graph_internal.h"

namespace ctk::formats::v2 {

using detail::FunctionAccess;

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
SavedOp extension_op(const Function& f) {
    SavedOp s;
    s.op = kCtkExtensionOp;
    s.inputs = f.inputs();
    s.attributes.set_version(1);
    put(s.attributes, "ctkOp", dv_string(primitive_op_name(f.op())));
    put(s.attributes, "ctkAttributes", dv_dictionary(generic_attributes(f.attributes())));
    return s;
}

}  // namespace

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
    CTK_CHECK(op != PrimitiveOp::user_function, NotImplementedError, "save_model: '", f.name(),
              "' is a user function (", f.op_name(),
              "): its callbacks live in this process and cannot be saved");
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
            if (auto special = save_special_op(f)) return *special;
            return extension_op(f);
    }
}
namespace {

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

}  // namespace

FunctionPtr make_loaded_op(PrimitiveOp op, std::vector<Variable> inputs, Attributes attrs,
                           const DictReader& r, const std::string& name) {
    const proto::Dictionary unread = r.unread();
    if (!unread.data().empty()) attrs.set(kUnknownAttributesKey, to_hex(serialize_cntk_dictionary(unread)));
    return FunctionAccess::make_primitive(op, std::move(inputs), std::move(attrs), name);
}

FunctionPtr load_op(uint64_t cntk, std::vector<Variable> in, const DictReader& r, const std::string& name) {
    const std::string& where = r.where;
    auto make = [&](PrimitiveOp op, std::vector<Variable> inputs, Attributes attrs) {
        return make_loaded_op(op, std::move(inputs), std::move(attrs), r, name);
    };
    if (cntk == kCtkExtensionOp) {
        const std::string& op_name = r.string("ctkOp");
        auto op = op_by_name(op_name);
        if (!op) throw NotImplementedError(where + ": ctk op '" + op_name + "' is not known to this version");
        DictReader ar{r.dictionary("ctkAttributes"), where + "/ctkAttributes"};
        return make(*op, std::move(in), attributes_from_generic(ar));
    }
    const int c = static_cast<int>(cntk);
    // CNTK's element-wise op numbers are their own (no other op shares one), so the arity decides.
    if (in.size() == 1) {
        if (auto op = elementwise_op(c, 1)) {
            Attributes attrs = unary_defaults(*op);
            if (*op == PrimitiveOp::elu) attrs.set("alpha", r.real("alpha", 1.0));
            return make(*op, std::move(in), std::move(attrs));
        }
    }
    if (in.size() == 2) {
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
            // CNTK's ReconcileDynamicAxis both broadcasts a non-sequence over `like`'s frames and relabels
            // a sequence (UnfoldFrom's loop state): ctk's reconcile_dynamic_axes does both.
            expect_inputs(in, 2, 2, where);
            return make(PrimitiveOp::reconcile_dynamic_axes, std::move(in), {});
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
            if (FunctionPtr special = load_special_op(c, in, r, name)) return special;
            throw NotImplementedError(where + ": CNTK op " + std::to_string(cntk) +
                                      " is not supported by ctk's CNTK v2 reader");
    }
}

}  // namespace ctk::formats::v2
