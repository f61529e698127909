// CNTK v2 rows, shapes and plumbing: reshape, slice (and CNTK's Slice on the sequence axis, read as
// sequence_slice), splice, transpose, pad, gather, one_hot, top_k, cast, stop_gradient, pass and assign,
// each with its save and load side by side. CNTK's axes are column-major: static axis i of ctk is CNTK's
// -i-1, permutations and Reshape's axis ranges are mirrored, Gather's operands are swapped.
#include "ctk/graph/graph_ops.h"
#include "formats/cntk_v2_internal.h"

namespace ctk::formats::v2 {

namespace {

// CNTK's Reshape replaces the column-major static axes [beginAxis, endAxis).
SavedOp save_reshape(const Function& f) {
    const Attributes& a = f.attributes();
    SavedOp s = as_numbered(f);
    set(s, "newShape", dv_shape(a.get<Dims>("newShape")));
    const int rank = f.inputs()[0].rank();
    const int b = a.has("beginAxis") ? normalized(static_cast<int>(a.get<int64_t>("beginAxis")), rank) : 0;
    const int e = a.has("endAxis") ? normalized(static_cast<int>(a.get<int64_t>("endAxis")), rank) : rank;
    set(s, "beginAxis", dv_raw_axis(e == rank ? 0 : rank - e));
    set(s, "endAxis", dv_raw_axis(b == 0 ? kAxisIndexEndStatic : rank - b));
    return s;
}
FunctionPtr load_reshape(const LoadCall& c) {
    c.expect(1, 1);
    const int rank = c.in[0].rank();
    Attributes attrs{{"newShape", c.r.shape("newShape")}};
    auto index = [&](const char* key, int fallback) {
        if (!c.r.has(key)) return fallback;
        const int32_t i = c.r.axis_proto(key).static_axis_idx();
        return i == kAxisIndexEndStatic ? rank : (i < 0 ? i + rank : i);
    };
    const int cb = index("beginAxis", 0), ce = index("endAxis", rank);
    if (cb < 0 || ce > rank || cb > ce)
        throw IOError(c.r.where + ": Reshape axes [" + std::to_string(cb) + ", " + std::to_string(ce) +
                      ") outside a rank-" + std::to_string(rank) + " operand");
    if (cb != 0 || ce != rank) {
        attrs.set("beginAxis", int64_t(rank - ce));
        attrs.set("endAxis", int64_t(rank - cb));
    }
    return c.make(PrimitiveOp::reshape, std::move(c.in), std::move(attrs));
}

// One axis as scalars, several as CNTK's *Vec lists.
SavedOp save_slice(const Function& f) {
    const Attributes& a = f.attributes();
    SavedOp s = as_numbered(f);
    const auto& axes = a.get<std::vector<Axis>>("axes");
    const Dims &begin = a.get<Dims>("beginIndex"), &end = a.get<Dims>("endIndex");
    Dims strides = a.get<Dims>("sliceStrides");
    if (strides.empty()) strides.assign(axes.size(), 1);
    if (axes.size() == 1) {
        set(s, "axis", dv_axis(axes[0]));
        set(s, "beginIndex", dv_int(static_cast<int32_t>(begin[0])));
        set(s, "endIndex", dv_int(static_cast<int32_t>(end[0])));
        set(s, "sliceStrides", dv_int(static_cast<int32_t>(strides[0])));
        return s;
    }
    std::vector<proto::DictionaryValue> ax, b, e, st;
    for (size_t i = 0; i < axes.size(); ++i) {
        ax.push_back(dv_axis(axes[i]));
        b.push_back(dv_int(static_cast<int32_t>(begin[i])));
        e.push_back(dv_int(static_cast<int32_t>(end[i])));
        st.push_back(dv_int(static_cast<int32_t>(strides[i])));
    }
    set(s, "axisVec", dv_vector(std::move(ax)));
    set(s, "beginIndexVec", dv_vector(std::move(b)));
    set(s, "endIndexVec", dv_vector(std::move(e)));
    set(s, "sliceStridesVec", dv_vector(std::move(st)));
    return s;
}
FunctionPtr load_slice(const LoadCall& c) {
    c.expect(1, 1);
    const DictReader& r = c.r;
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
        throw IOError(r.where + ": Slice lists of different lengths");
    if (axes.size() == 1 && axes[0].is_sequence()) {
        if (strides[0] != 1) throw NotImplementedError(r.where + ": strided sequence slice");
        return c.make(PrimitiveOp::sequence_slice, std::move(c.in),
                      Attributes{{"beginIndex", begin[0]},
                                 {"endIndex", end[0]},
                                 {"newAxis", Axis::new_unique_dynamic_axis("sliceAxis").name()}});
    }
    return c.make(
        PrimitiveOp::slice, std::move(c.in),
        Attributes{{"axes", axes}, {"beginIndex", begin}, {"endIndex", end}, {"sliceStrides", strides}});
}

// CNTK's permutation is column-major: P[j] = n-1-perm[n-1-j]; CNTK also wrote a swap of two axes.
SavedOp save_transpose(const Function& f) {
    SavedOp s = as_numbered(f);
    const Dims& perm = f.attributes().get<Dims>("axisPermutation");
    const int n = static_cast<int>(perm.size());
    std::vector<proto::DictionaryValue> items;
    for (int j = 0; j < n; ++j)
        items.push_back(dv_raw_axis(static_cast<int32_t>(
            n - 1 - normalized(static_cast<int>(perm[static_cast<size_t>(n - 1 - j)]), n))));
    set(s, "axisVec", dv_vector(std::move(items)));
    return s;
}
FunctionPtr load_transpose(const LoadCall& c) {
    c.expect(1, 1);
    const DictReader& r = c.r;
    const int n = c.in[0].rank();
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
            throw IOError(r.where + ": permutation of " + std::to_string(p.size()) + " axes for a rank-" +
                          std::to_string(n) + " operand");
        for (int k = 0; k < n; ++k)
            perm[static_cast<size_t>(k)] = n - 1 - normalized(p[static_cast<size_t>(n - 1 - k)], n);
    } else {
        const int a = row_major_axis(r.axis_proto("axis1").static_axis_idx(), n, r.where);
        const int b = row_major_axis(r.axis_proto("axis2").static_axis_idx(), n, r.where);
        std::swap(perm[static_cast<size_t>(a)], perm[static_cast<size_t>(b)]);
    }
    return c.make(PrimitiveOp::transpose, std::move(c.in), Attributes{{"axisPermutation", perm}});
}

SavedOp save_pad(const Function& f) {
    const Attributes& a = f.attributes();
    SavedOp s = as_numbered(f);
    set(s, "paddingHead", dv_shape(a.get<Dims>("padLo")));
    set(s, "paddingFoot", dv_shape(a.get<Dims>("padHi")));
    set(s, "paddingMode", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("mode"))));
    set(s, "paddingConstantValue", dv_double(a.get<double>("constantValue")));
    return s;
}
FunctionPtr load_pad(const LoadCall& c) {
    c.expect(1, 1);
    return c.make(PrimitiveOp::pad, std::move(c.in),
                  Attributes{{"padLo", c.r.shape("paddingHead")},
                             {"padHi", c.r.shape("paddingFoot")},
                             {"mode", c.r.integer("paddingMode", 0)},
                             {"constantValue", c.r.real("paddingConstantValue", 0.0)}});
}

// CNTK's keys are numClass, oneHotOutputSparse and onehotAxis; ctk before 2026-11 wrote outputSparse and
// axis, which are still read.
SavedOp save_one_hot(const Function& f) {
    const Attributes& a = f.attributes();
    SavedOp s = as_numbered(f);
    set(s, "numClass", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("numClass"))));
    set(s, "oneHotOutputSparse", dv_bool(a.get<bool>("outputSparse")));
    set(s, "onehotAxis", dv_axis(Axis(static_cast<int>(a.get<int64_t>("axis")))));
    return s;
}
FunctionPtr load_one_hot(const LoadCall& c) {
    c.expect(1, 1);
    const DictReader& r = c.r;
    const bool sparse =
        r.has("oneHotOutputSparse") ? r.boolean("oneHotOutputSparse") : r.boolean("outputSparse", false);
    const Axis axis = r.has("onehotAxis") ? r.axis("onehotAxis") : r.axis("axis");
    return c.make(PrimitiveOp::one_hot, std::move(c.in),
                  Attributes{{"numClass", r.integer("numClass")},
                             {"outputSparse", sparse},
                             {"axis", int64_t(axis.static_index())}});
}

SavedOp save_top_k(const Function& f) {
    const Attributes& a = f.attributes();
    SavedOp s = as_numbered(f);
    set(s, "numItems", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("numItems"))));
    set(s, "axis", dv_axis(Axis(static_cast<int>(a.get<int64_t>("axis")))));
    return s;
}
FunctionPtr load_top_k(const LoadCall& c) {
    c.expect(1, 1);
    const Axis axis = c.r.axis("axis");
    return c.make(PrimitiveOp::top_k, std::move(c.in),
                  Attributes{{"numItems", c.r.integer("numItems")}, {"axis", int64_t(axis.static_index())}});
}

SavedOp save_cast(const Function& f) {
    SavedOp s = as_numbered(f);
    set(s, "newDataType",
        dv_size_t(cntk_dtype(static_cast<DataType>(f.attributes().get<int64_t>("newDataType")))));
    return s;
}
FunctionPtr load_cast(const LoadCall& c) {
    c.expect(1, 1);
    return c.make(
        PrimitiveOp::cast, std::move(c.in),
        Attributes{{"newDataType",
                    int64_t(ctk_dtype(static_cast<uint64_t>(c.r.integer("newDataType")), c.r.where))}});
}

}  // namespace

void add_shape_rows(Rows& rows) {
    rows.push_back({{PrimitiveOp::reshape}, {16}, save_reshape, nullptr, load_reshape});
    rows.push_back({{PrimitiveOp::slice}, {14}, save_slice, nullptr, load_slice});
    rows.push_back(
        {{PrimitiveOp::splice},
         {43},
         [](const Function& f) {
             SavedOp s = as_numbered(f);
             set(s, "axis", dv_axis(f.attributes().get<Axis>("axis")));
             return s;
         },
         nullptr,
         [](const LoadCall& c) {
             if (c.in.empty()) throw IOError(c.r.where + ": Splice without operands");
             return c.make(PrimitiveOp::splice, std::move(c.in), Attributes{{"axis", c.r.axis("axis")}});
         }});
    rows.push_back({{PrimitiveOp::transpose}, {12}, save_transpose, nullptr, load_transpose});
    rows.push_back({{PrimitiveOp::pad}, {83}, save_pad, nullptr, load_pad});
    // CNTK's Gather(indices, reference) is ctk's gather(reference, indices).
    rows.push_back({{PrimitiveOp::gather},
                    {74},
                    [](const Function& f) {
                        const std::vector<Variable> in = f.inputs();
                        return primitive_form(static_cast<uint64_t>(cntk_op_type(f.op())), {in[1], in[0]});
                    },
                    nullptr,
                    [](const LoadCall& c) {
                        c.expect(2, 2);
                        return c.make(PrimitiveOp::gather, {c.in[1], c.in[0]}, {});
                    }});
    rows.push_back({{PrimitiveOp::one_hot}, {68}, save_one_hot, nullptr, load_one_hot});
    rows.push_back({{PrimitiveOp::top_k}, {87}, save_top_k, nullptr, load_top_k});
    rows.push_back({{PrimitiveOp::cast}, {91}, save_cast, nullptr, load_cast});
    rows.push_back(plain_row<PrimitiveOp::stop_gradient, 1, 1>({64}));
    // CNTK's Pass and NoOp.
    rows.push_back(plain_row<PrimitiveOp::pass, 1, 1>({56, 62}));
    rows.push_back(plain_row<PrimitiveOp::assign, 2, 2>({73}));
}

}  // namespace ctk::formats::v2
