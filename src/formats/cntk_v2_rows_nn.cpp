// CNTK v2 rows, neural-network ops: convolution (and its transpose, one CNTK op), pooling, unpooling,
// batch normalization, dropout and the random distributions, each with its save and load side by side.
// CNTK wrote per-axis lists column-major at the operand's full rank; ctk keeps short row-major lists.
#include "ctk/graph/graph_ops.h"
#include "formats/cntk_v2_internal.h"

namespace ctk::formats::v2 {

namespace {

SavedOp save_convolution(const Function& f) {
    const Attributes& a = f.attributes();
    const std::vector<Variable> in = f.inputs();
    SavedOp s = primitive_form(kConvolution, in);
    const bool transpose = f.op() == PrimitiveOp::convolution_transpose;
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
    set(s, "strides", dv_shape(strides));
    set(s, "sharing", dv_bools_reversed(std::vector<bool>(rank, true)));
    set(s, "autoPadding", dv_bools_reversed(as_bools(pad)));
    set(s, "lowerPad", dv_shape(Dims(rank, 0)));
    set(s, "upperPad", dv_shape(Dims(rank, 0)));
    set(s, "dilation", dv_shape(dilation));
    set(s, "transpose", dv_bool(transpose));
    set(s, "maxTempMemSizeInSamples", dv_size_t(0));
    // CNTK 2.7 also wrote the kernel's shape, `sequential` and an output shape of [0] when none was given
    // (its Function.attributes shows them).
    set(s, "kernelShape", dv_shape(in[0].shape()));
    set(s, "sequential", dv_bool(false));
    if (transpose) {
        const Dims& given = a.get<Dims>("outputShape");
        if (given.empty()) {
            set(s, "outputShape", dv_shape(Dims{0}));
        } else {
            Dims full{in[0].shape()[1]};
            full.insert(full.end(), given.begin(), given.end());
            set(s, "outputShape", dv_shape(full));
        }
        set(s, "groups", dv_size_t(1));
    } else {
        set(s, "outputShape", dv_shape(Dims{0}));
        set(s, "groups", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("groups"))));
    }
    return s;
}
FunctionPtr load_convolution(const LoadCall& c) {
    c.expect(2, 2);
    const DictReader& r = c.r;
    const bool transpose = r.boolean("transpose", false);
    for (const char* key : {"lowerPad", "upperPad"})
        for (int64_t p : r.shape(key, Dims{0}))
            if (p != 0)
                throw NotImplementedError(r.where + ": explicit " + key +
                                          " padding (ctk convolutions take auto_padding only)");
    for (bool shared : r.bools_reversed("sharing", std::vector<bool>{true}))
        if (!shared) throw NotImplementedError(r.where + ": convolution without weight sharing");
    const Dims strides = r.shape("strides", Dims{1});
    const Dims pad = as_dims(r.bools_reversed("autoPadding", std::vector<bool>{false}));
    const Dims dilation = r.shape("dilation", Dims{1});
    if (transpose) {
        Dims out = r.shape("outputShape", Dims{});
        if (Shape(out).numel() == 0) out.clear();  // CNTK 2.7 wrote [0] for "not given"
        if (!out.empty() && out.size() == static_cast<size_t>(c.in[1].rank())) out.erase(out.begin());
        return c.make(
            PrimitiveOp::convolution_transpose, std::move(c.in),
            Attributes{
                {"strides", strides}, {"autoPadding", pad}, {"outputShape", out}, {"dilation", dilation}});
    }
    return c.make(PrimitiveOp::convolution, std::move(c.in),
                  Attributes{{"strides", strides},
                             {"autoPadding", pad},
                             {"dilation", dilation},
                             {"groups", r.integer("groups", 1)}});
}

SavedOp save_pooling(const Function& f) {
    const Attributes& a = f.attributes();
    SavedOp s = as_numbered(f);
    const Dims& window = a.get<Dims>("poolingWindowShape");
    set(s, "poolingType", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("poolingType"))));
    set(s, "poolingWindowShape", window.empty() ? dv_unknown_shape() : dv_shape(window));
    set(s, "strides", dv_shape(a.get<Dims>("strides")));
    set(s, "autoPadding", dv_bools_reversed(as_bools(a.get<Dims>("autoPadding"))));
    set(s, "lowerPad", dv_shape({0}));
    set(s, "upperPad", dv_shape({0}));
    set(s, "ceilOutDim", dv_bool(a.get<bool>("ceilOutDim")));
    set(s, "includePad", dv_bool(a.get<bool>("includePad")));
    return s;
}
FunctionPtr load_pooling(const LoadCall& c) {
    c.expect(1, 1);
    const DictReader& r = c.r;
    for (const char* key : {"lowerPad", "upperPad"})
        for (int64_t p : r.shape(key, Dims{0}))
            if (p != 0) throw NotImplementedError(r.where + ": explicit " + key + " padding in pooling");
    return c.make(
        PrimitiveOp::pooling, std::move(c.in),
        Attributes{{"poolingType", r.integer("poolingType")},
                   {"poolingWindowShape", r.shape("poolingWindowShape")},
                   {"strides", r.shape("strides", Dims{1})},
                   {"autoPadding", as_dims(r.bools_reversed("autoPadding", std::vector<bool>{false}))},
                   {"ceilOutDim", r.boolean("ceilOutDim", false)},
                   {"includePad", r.boolean("includePad", false)}});
}

SavedOp save_unpooling(const Function& f) {
    const Attributes& a = f.attributes();
    SavedOp s = as_numbered(f);
    set(s, "poolingType", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("poolingType"))));
    set(s, "unpoolingWindowShape", dv_shape(a.get<Dims>("unpoolingWindowShape")));
    set(s, "strides", dv_shape(a.get<Dims>("strides")));
    set(s, "autoPadding", dv_bools_reversed(as_bools(a.get<Dims>("autoPadding"))));
    set(s, "lowerPad", dv_shape({0}));
    set(s, "upperPad", dv_shape({0}));
    return s;
}
FunctionPtr load_unpooling(const LoadCall& c) {
    c.expect(2, 2);
    const DictReader& r = c.r;
    return c.make(
        PrimitiveOp::unpooling, std::move(c.in),
        Attributes{{"poolingType", r.integer("poolingType", 0)},
                   {"unpoolingWindowShape", r.shape("unpoolingWindowShape")},
                   {"strides", r.shape("strides", Dims{1})},
                   {"autoPadding", as_dims(r.bools_reversed("autoPadding", std::vector<bool>{false}))}});
}

SavedOp save_batch_normalization(const Function& f) {
    const Attributes& a = f.attributes();
    SavedOp s = primitive_form(kBatchNormalization, f.inputs());
    set(s, "spatial", dv_bool(a.get<bool>("spatial")));
    set(s, "normalizationTimeConstant", dv_double(a.get<double>("normalizationTimeConstant")));
    set(s, "blendTimeConstant", dv_double(a.get<double>("blendTimeConstant")));
    set(s, "epsilon", dv_double(a.get<double>("epsilon")));
    set(s, "useCuDNNEngine", dv_bool(true));
    set(s, "disableRegularization", dv_bool(a.get_or<bool>("disableRegularization", false)));
    return s;
}
FunctionPtr load_batch_normalization(const LoadCall& c) {
    c.expect(5, 6);
    const DictReader& r = c.r;
    std::vector<Variable>& in = c.in;
    // Files before PrimitiveFunction version 4 have no running sample count: CNTK adds a 0.
    if (in.size() == 5) in.push_back(constant(0.0, in[0].dtype(), "BatchNormSampleCount"));
    const double blend = r.real("blendTimeConstant", 0.0);
    if (blend != 0.0)
        throw NotImplementedError(r.where + ": BatchNormalization with blendTimeConstant " +
                                  std::to_string(blend));
    // disableRegularization (CNTK 2.2+): the learners leave scale and bias unregularized.
    const bool unregularized = r.boolean("disableRegularization", false);
    if (unregularized) {
        in[1].set_regularization_enabled(false);
        in[2].set_regularization_enabled(false);
    }
    Attributes attrs{{"spatial", r.boolean("spatial")},
                     {"normalizationTimeConstant", r.real("normalizationTimeConstant", 0.0)},
                     {"blendTimeConstant", blend},
                     {"epsilon", r.real("epsilon", 1e-5)}};
    if (unregularized) attrs.set("disableRegularization", true);
    return c.make(PrimitiveOp::batch_normalization, std::move(in), std::move(attrs));
}

SavedOp save_dropout(const Function& f) {
    const Attributes& a = f.attributes();
    SavedOp s = as_numbered(f);
    set(s, "dropoutRate", dv_double(a.get<double>("dropoutRate")));
    set(s, "rngSeed", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("rngSeed"))));
    set(s, "rngOffset", dv_size_t(0));
    return s;
}
FunctionPtr load_dropout(const LoadCall& c) {
    c.expect(1, 1);
    return c.make(
        PrimitiveOp::dropout, std::move(c.in),
        Attributes{{"dropoutRate", c.r.real("dropoutRate")}, {"rngSeed", c.r.integer("rngSeed", 0)}});
}

// CNTK's RandomDistribution: with an operand, a sample of its shape (*_like); without, of newShape.
SavedOp save_random_distribution(const Function& f) {
    const Attributes& a = f.attributes();
    SavedOp s = as_numbered(f);
    const std::string& kind = a.get<std::string>("rvType");
    set(s, "randomDistributionType", dv_string(kind));
    std::vector<proto::DictionaryValue> args{dv_double(a.get<double>("arg0"))};
    if (kind != "bernoulli") args.push_back(dv_double(a.get<double>("arg1")));
    set(s, "randomDistributionArgs", dv_vector(std::move(args)));
    if (f.inputs().empty()) {
        set(s, "newShape", dv_shape(a.get<Dims>("newShape")));
        set(s, "newDataType", dv_size_t(cntk_dtype(static_cast<DataType>(a.get<int64_t>("newDataType")))));
    }
    set(s, "rngSeed", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("rngSeed"))));
    set(s, "rngOffset", dv_size_t(0));
    return s;
}
FunctionPtr load_random_distribution(const LoadCall& c) {
    c.expect(0, 1);
    const DictReader& r = c.r;
    const std::string& kind = r.string("randomDistributionType");
    std::vector<double> args;
    for (const auto& item : r.vector("randomDistributionArgs")) {
        if (item.value_type() != proto::DictionaryValue::Double)
            r.wrong("randomDistributionArgs", "a Vector of Double", item);
        args.push_back(item.double_value());
    }
    if (args.empty()) throw IOError(r.where + ": RandomDistribution without arguments");
    Attributes attrs{{"rvType", kind},
                     {"arg0", args[0]},
                     {"arg1", args.size() > 1 ? args[1] : 0.0},
                     {"rngSeed", r.integer("rngSeed", 0)}};
    r.integer("rngOffset", 0);
    const bool like = !c.in.empty();
    attrs.set("newShape", like ? Dims{} : r.shape("newShape"));
    attrs.set("newDataType",
              int64_t(like ? DataType::f32
                           : ctk_dtype(static_cast<uint64_t>(r.integer("newDataType", 1)), r.where)));
    return c.make(PrimitiveOp::random_distribution, std::move(c.in), std::move(attrs));
}

}  // namespace

void add_nn_rows(Rows& rows) {
    rows.push_back({{PrimitiveOp::convolution, PrimitiveOp::convolution_transpose},
                    {kConvolution},
                    save_convolution,
                    nullptr,
                    load_convolution});
    rows.push_back({{PrimitiveOp::pooling}, {17}, save_pooling, nullptr, load_pooling});
    rows.push_back({{PrimitiveOp::unpooling}, {58}, save_unpooling, nullptr, load_unpooling});
    rows.push_back({{PrimitiveOp::batch_normalization},
                    {kBatchNormalization},
                    save_batch_normalization,
                    nullptr,
                    load_batch_normalization});
    rows.push_back({{PrimitiveOp::dropout}, {15}, save_dropout, nullptr, load_dropout});
    rows.push_back({{PrimitiveOp::random_distribution},
                    {76},
                    save_random_distribution,
                    nullptr,
                    load_random_distribution});
}

}  // namespace ctk::formats::v2
