// CNTK v2 rows, special ops: the sampling, ROI pooling, ranking, metric, CTC, crop, *_like and
// negative-sample cosine primitives (CNTK ops 45-47, 59-61, 63, 66, 67, 84, 89, 92, 94) both ways, save and
// load side by side, and CNTK's OptimizedRNNStack (49) read as ctk's graph form. Attribute names and types
// are CNTK 2.7's (PrimitiveFunctionAttribute; EditDistanceError's penalties are Floats;
// CosDistanceWithNegativeSamples takes its shift and count as scalar Constant operands).
#include "ctk/graph/graph_ops.h"
#include "formats/cntk_v2_internal.h"

namespace ctk::formats::v2 {

namespace {

proto::DictionaryValue dv_float(double f) {
    proto::DictionaryValue v;
    v.set_version(1);
    v.set_value_type(proto::DictionaryValue::Float);
    v.set_float_value(static_cast<float>(f));
    return v;
}

SavedOp save_special(const Function& f) {
    const Attributes& a = f.attributes();
    SavedOp s;
    s.attributes.set_version(1);
    s.inputs = f.inputs();
    s.op = static_cast<uint64_t>(cntk_op_type(f.op()));
    auto attr = [&](const std::string& key, proto::DictionaryValue v) {
        put(s.attributes, key, std::move(v));
    };
    switch (f.op()) {
        case PrimitiveOp::random_sample:
        case PrimitiveOp::random_sample_inclusion_frequency:
            attr("numSamples", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("numSamples"))));
            attr("allowDuplicates", dv_bool(a.get<bool>("allowDuplicates")));
            attr("rngSeed", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("rngSeed"))));
            attr("rngOffset", dv_size_t(0));
            return s;
        case PrimitiveOp::roipooling:
            attr("poolingType", dv_size_t(0));                                // max, the only kind CNTK had
            attr("roiOutputShape", dv_shape(a.get<Dims>("roiOutputShape")));  // CNTK's [W, H]
            attr("spatialScale", dv_double(a.get<double>("spatialScale")));
            return s;
        case PrimitiveOp::lambda_rank:
        case PrimitiveOp::ndcg_at_1:
            return s;
        case PrimitiveOp::edit_distance_error: {
            attr("SubstitutionPenalty", dv_float(a.get<double>("subPen")));
            attr("DeletionPenalty", dv_float(a.get<double>("delPen")));
            attr("InsertionPenalty", dv_float(a.get<double>("insPen")));
            attr("SquashInputs", dv_bool(a.get<bool>("squashInputs")));
            std::vector<proto::DictionaryValue> ignore;
            for (int64_t t : a.get<Dims>("tokensToIgnore"))
                ignore.push_back(dv_size_t(static_cast<uint64_t>(t)));
            attr("TokensToIgnore", dv_vector(std::move(ignore)));
            return s;
        }
        case PrimitiveOp::labels_to_graph:
        case PrimitiveOp::straight_through:
            return s;
        case PrimitiveOp::forward_backward:
            attr("BlankTokenId", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("blankTokenId"))));
            attr("DelayConstraint", dv_int(static_cast<int32_t>(a.get<int64_t>("delayConstraint"))));
            return s;
        case PrimitiveOp::constant_like:
            attr("fillValue", dv_double(a.get<double>("fillValue")));
            return s;
        case PrimitiveOp::eye_like:
            attr("OutputSparse", dv_bool(a.get<bool>("OutputSparse")));
            return s;
        case PrimitiveOp::crop: {
            const Dims& off = a.get<Dims>("offset");
            attr("offset", dv_vector({dv_size_t(static_cast<uint64_t>(off[0])),
                                      dv_size_t(static_cast<uint64_t>(off[1]))}));
            return s;
        }
        case PrimitiveOp::cosine_distance_with_negative_samples: {
            const DataType dt = s.inputs[0].dtype();
            s.inputs.push_back(constant(static_cast<double>(a.get<int64_t>("shift")), dt, "shift"));
            s.inputs.push_back(constant(static_cast<double>(a.get<int64_t>("numNegativeSamples")), dt,
                                        "numNegativeSamples"));
            return s;
        }
        default:
            return extension_op(f);
    }
}

FunctionPtr load_special(const LoadCall& c) {
    const int cntk = c.cntk_op;
    std::vector<Variable>& in = c.in;
    const DictReader& r = c.r;
    const std::string& where = r.where;
    const std::string& name = c.name;
    auto expect = [&](size_t n) { c.expect(n, n); };
    auto sampling = [&](PrimitiveOp op) {
        expect(1);
        Attributes attrs{{"numSamples", r.integer("numSamples")},
                         {"allowDuplicates", r.boolean("allowDuplicates")},
                         {"rngSeed", r.integer("rngSeed", 0)}};
        r.integer("rngOffset", 0);
        return c.make(op, std::move(in), std::move(attrs));
    };
    switch (cntk) {
        case 45:
            return sampling(PrimitiveOp::random_sample);
        case 46:
            return sampling(PrimitiveOp::random_sample_inclusion_frequency);
        case 47: {
            expect(2);
            if (r.integer("poolingType", 0) != 0)
                throw NotImplementedError(where + ": ROIPooling with average pooling (CNTK refused it too)");
            return c.make(PrimitiveOp::roipooling, std::move(in),
                          Attributes{{"roiOutputShape", r.shape("roiOutputShape")},
                                     {"poolingType", int64_t(0)},
                                     {"spatialScale", r.real("spatialScale", 1.0 / 16)}});
        }
        case 49: {
            // CNTK's cuDNN stack, operands (operand, weights): ctk builds its graph form on them.
            expect(2);
            return optimized_rnnstack(in[0], in[1], r.integer("hiddenSize"), r.integer("numLayers"),
                                      r.boolean("bidirectional"), r.string("recurrentOp"), name);
        }
        case 59:
        case 60:
            expect(3);
            return c.make(cntk == 59 ? PrimitiveOp::lambda_rank : PrimitiveOp::ndcg_at_1, std::move(in), {});
        case 61: {
            expect(2);
            const Dims ignore = size_ts(r, "TokensToIgnore");
            return c.make(PrimitiveOp::edit_distance_error, std::move(in),
                          Attributes{{"subPen", r.real("SubstitutionPenalty")},
                                     {"delPen", r.real("DeletionPenalty")},
                                     {"insPen", r.real("InsertionPenalty")},
                                     {"squashInputs", r.boolean("SquashInputs")},
                                     {"tokensToIgnore", ignore}});
        }
        case 63:
            expect(1);
            return c.make(PrimitiveOp::labels_to_graph, std::move(in), {});
        case 94:
            expect(1);
            return c.make(PrimitiveOp::straight_through, std::move(in), {});
        case 66:
            expect(2);
            return c.make(PrimitiveOp::forward_backward, std::move(in),
                          Attributes{{"blankTokenId", r.integer("BlankTokenId")},
                                     {"delayConstraint", r.integer("DelayConstraint", -1)}});
        case 89:
            expect(1);
            return c.make(PrimitiveOp::constant_like, std::move(in),
                          Attributes{{"fillValue", r.real("fillValue")}});
        case 92:
            expect(1);
            return c.make(PrimitiveOp::eye_like, std::move(in),
                          Attributes{{"OutputSparse", r.boolean("OutputSparse", true)}});
        case 84: {
            if (in.size() != 2 || !r.has("offset"))
                throw NotImplementedError(where +
                                          ": Crop without offsets (crop_automatic) is not supported yet");
            const Dims off = size_ts(r, "offset");
            if (off.size() != 2) throw IOError(where + ": Crop's offset must hold (x, y)");
            return c.make(PrimitiveOp::crop, std::move(in), Attributes{{"offset", off}});
        }
        case 67: {
            expect(4);
            for (size_t i = 2; i < 4; ++i)
                if (!in[i].is_constant())
                    throw IOError(where + ": CosDistanceWithNegativeSamples' operand " + std::to_string(i) +
                                  " must be a scalar Constant");
            const auto shift = static_cast<int64_t>(in[2].value().item());
            const auto count = static_cast<int64_t>(in[3].value().item());
            in.resize(2);
            return c.make(PrimitiveOp::cosine_distance_with_negative_samples, std::move(in),
                          Attributes{{"shift", shift}, {"numNegativeSamples", count}});
        }
        default:
            throw NotImplementedError(where + ": CNTK op " + std::to_string(cntk) + " has no special row");
    }
}

}  // namespace

void add_special_rows(Rows& rows) {
    rows.push_back({{PrimitiveOp::random_sample, PrimitiveOp::random_sample_inclusion_frequency},
                    {45, 46},
                    save_special,
                    nullptr,
                    load_special});
    rows.push_back({{PrimitiveOp::roipooling}, {47}, save_special, nullptr, load_special});
    rows.push_back({{}, {49}, nullptr, nullptr, load_special});  // OptimizedRNNStack: read as a graph
    rows.push_back(
        {{PrimitiveOp::lambda_rank, PrimitiveOp::ndcg_at_1}, {59, 60}, save_special, nullptr, load_special});
    rows.push_back({{PrimitiveOp::edit_distance_error}, {61}, save_special, nullptr, load_special});
    rows.push_back({{PrimitiveOp::labels_to_graph}, {63}, save_special, nullptr, load_special});
    rows.push_back({{PrimitiveOp::straight_through}, {94}, save_special, nullptr, load_special});
    rows.push_back({{PrimitiveOp::forward_backward}, {66}, save_special, nullptr, load_special});
    rows.push_back({{PrimitiveOp::constant_like}, {89}, save_special, nullptr, load_special});
    rows.push_back({{PrimitiveOp::eye_like}, {92}, save_special, nullptr, load_special});
    rows.push_back({{PrimitiveOp::crop}, {84}, save_special, nullptr, load_special});
    rows.push_back(
        {{PrimitiveOp::cosine_distance_with_negative_samples}, {67}, save_special, nullptr, load_special});
}

}  // namespace ctk::formats::v2
