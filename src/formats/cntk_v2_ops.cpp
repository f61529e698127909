// CNTK v2 model files: save_op, one ctk primitive as CNTK writes it (the read side, load_op, is in
// cntk_v2_load_ops.cpp; the composites for ops CNTK had only as composites are in cntk_v2_model.cpp's
// Saver::expand). ctk's row-major conventions become CNTK's column-major ones (shapes reversed, static
// axis i written as CNTK's -i-1, per-axis lists reversed, times' operands swapped). ctk ops with no CNTK
// form are written as a ctk extension: op number kCtkExtensionOp with the ctk op's name and attributes,
// which ctk reads back exactly and CNTK 2.7 would refuse.
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
            // CNTK 2.7 also wrote the kernel's shape, `sequential` and an output shape of [0] when none
            // was given (its Function.attributes shows them).
            attr("kernelShape", dv_shape(in[0].shape()));
            attr("sequential", dv_bool(false));
            if (transpose) {
                const Dims& given = a.get<Dims>("outputShape");
                if (given.empty()) {
                    attr("outputShape", dv_shape(Dims{0}));
                } else {
                    Dims full{in[0].shape()[1]};
                    full.insert(full.end(), given.begin(), given.end());
                    attr("outputShape", dv_shape(full));
                }
                attr("groups", dv_size_t(1));
            } else {
                attr("outputShape", dv_shape(Dims{0}));
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
            attr("disableRegularization", dv_bool(a.get_or<bool>("disableRegularization", false)));
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

}  // namespace ctk::formats::v2
