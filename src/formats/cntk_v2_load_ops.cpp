// CNTK v2 model files: load_op, one CNTK primitive as ctk reads it (the save side, save_op, is in
// cntk_v2_ops.cpp). CNTK's column-major conventions become ctk's row-major ones: shapes reversed, CNTK's
// static axis -i-1 read as axis i, per-axis lists reversed, times' operands swapped back. The ctk extension
// op (kCtkExtensionOp) carries a ctk op's name and attributes and is read back exactly.
#include <algorithm>
#include <limits>

#include "ctk/graph/graph_ops.h"
#include "ctk/kernels/tensor_ops.h"
#include "formats/cntk_v2_internal.h"

namespace ctk::formats::v2 {

namespace {

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

Dims as_dims(const std::vector<bool>& b) {
    return Dims(b.begin(), b.end());
}
// A CNTK static axis index (column-major, negative from the innermost end) as a row-major index.
int row_major_axis(int32_t cntk_index, int rank, const std::string& where) {
    const int i = cntk_index < 0 ? cntk_index + rank : cntk_index;
    if (i < 0 || i >= rank)
        throw IOError(where + ": axis " + std::to_string(cntk_index) + " is outside a rank-" +
                      std::to_string(rank) + " operand");
    return rank - 1 - i;
}

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
    return primitive_function(op, std::move(inputs), std::move(attrs), name);
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
                if (Shape(out).numel() == 0) out.clear();  // CNTK 2.7 wrote [0] for "not given"
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
            // disableRegularization (CNTK 2.2+): the learners leave scale and bias unregularized.
            if (r.boolean("disableRegularization", false)) {
                in[1].set_regularization_enabled(false);
                in[2].set_regularization_enabled(false);
            }
            Attributes attrs{{"spatial", r.boolean("spatial")},
                             {"normalizationTimeConstant", r.real("normalizationTimeConstant", 0.0)},
                             {"blendTimeConstant", blend},
                             {"epsilon", r.real("epsilon", 1e-5)}};
            if (r.boolean("disableRegularization", false)) attrs.set("disableRegularization", true);
            return make(PrimitiveOp::batch_normalization, std::move(in), std::move(attrs));
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
