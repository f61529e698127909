// CNTK v2 rows, math: element-wise ops (CNTK's primitives where it had them, the composites its own API
// built where it did not), times, reductions, softmax and the losses, each with its save and load side by
// side. times' operands are swapped both ways (CNTK's Times(W, x) is ctk's times(x, W)).
#include <map>

#include "ctk/graph/graph_ops.h"
#include "ctk/kernels/tensor_ops.h"
#include "formats/cntk_v2_internal.h"

namespace ctk::formats::v2 {

namespace {

// CNTK's element-wise op numbers that the composites below are made of.
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

// ---- element-wise ----
// CNTK's own number where it had the op (elu with its alpha); otherwise the ctk extension, which
// `elementwise_composite` replaces by CNTK's composite where CNTK's API built one.
SavedOp save_elementwise(const Function& f) {
    if (cntk_op_type(f.op()) < 0) return extension_op(f);
    SavedOp s = as_numbered(f);
    if (f.op() == PrimitiveOp::elu) set(s, "alpha", dv_double(f.attributes().get<double>("alpha")));
    return s;
}

bool elementwise_composite(const Function& f, CompositeWriter& w) {
    const Attributes& a = f.attributes();
    const std::vector<Variable> in = f.inputs();
    auto p = [&](bool last, uint64_t op, const std::vector<std::string>& ins) {
        return w.primitive(last, op, ins);
    };
    auto k = [&](double v) { return w.scalar(v); };
    auto alpha = [&] { return a.get<double>("alpha"); };
    auto beta = [&] { return a.get<double>("beta"); };
    switch (f.op()) {
        case PrimitiveOp::square: {
            const std::string x = w.operand(in[0]);
            p(true, kElementTimes, {x, x});
            return true;
        }
        case PrimitiveOp::ceil:
            p(true, kNegate, {p(false, kFloor, {p(false, kNegate, {w.operand(in[0])})})});
            return true;
        case PrimitiveOp::round:
            p(true, kFloor, {p(false, kPlus, {w.operand(in[0]), k(0.5)})});
            return true;
        case PrimitiveOp::selu: {  // alpha: the scale, beta: the ELU alpha
            const std::string x = w.operand(in[0]);
            const std::string pos = p(false, kElementTimes, {k(alpha()), x});
            const std::string em1 = p(false, kMinus, {p(false, kExp, {x}), k(1.0)});
            const std::string neg = p(false, kElementTimes, {k(alpha() * beta()), em1});
            p(true, kSelect, {p(false, kGreater, {x, k(0.0)}), pos, neg});
            return true;
        }
        case PrimitiveOp::leaky_relu: {
            const std::string x = w.operand(in[0]);
            p(true, kSelect, {p(false, kGreater, {x, k(0.0)}), x, p(false, kElementTimes, {k(alpha()), x})});
            return true;
        }
        case PrimitiveOp::softplus:
            p(true, kLogPlus, {w.operand(in[0]), k(0.0)});
            return true;
        case PrimitiveOp::softsign: {
            const std::string x = w.operand(in[0]);
            p(true, kElementTimes,
              {x, p(false, kReciprocal, {p(false, kPlus, {k(1.0), p(false, kAbs, {x})})})});
            return true;
        }
        case PrimitiveOp::hard_sigmoid: {
            const std::string x = w.operand(in[0]);
            const std::string lin = p(false, kPlus, {p(false, kElementTimes, {k(alpha()), x}), k(beta())});
            p(true, kClip, {lin, k(0.0), k(1.0)});
            return true;
        }
        case PrimitiveOp::clip:
            p(true, kClip, {w.operand(in[0]), k(alpha()), k(beta())});
            return true;
        case PrimitiveOp::element_not:
            p(true, kEqual, {w.operand(in[0]), k(0.0)});
            return true;
        case PrimitiveOp::element_divide:
            p(true, kElementTimes, {w.operand(in[0]), p(false, kReciprocal, {w.operand(in[1])})});
            return true;
        case PrimitiveOp::element_max:
        case PrimitiveOp::element_min: {
            const std::string x = w.operand(in[0]), y = w.operand(in[1]);
            p(true, kSelect, {p(false, f.op() == PrimitiveOp::element_max ? kGreater : kLess, {x, y}), x, y});
            return true;
        }
        case PrimitiveOp::element_and:
        case PrimitiveOp::element_or:
        case PrimitiveOp::element_xor: {
            const std::string x = p(false, kNotEqual, {w.operand(in[0]), k(0.0)});
            const std::string y = p(false, kNotEqual, {w.operand(in[1]), k(0.0)});
            if (f.op() == PrimitiveOp::element_and) p(true, kElementTimes, {x, y});
            if (f.op() == PrimitiveOp::element_or) p(true, kNotEqual, {p(false, kPlus, {x, y}), k(0.0)});
            if (f.op() == PrimitiveOp::element_xor) p(true, kNotEqual, {x, y});
            return true;
        }
        case PrimitiveOp::param_relu: {  // operands (x, alpha)
            const std::string x = w.operand(in[0]), slope = w.operand(in[1]);
            p(true, kSelect, {p(false, kGreater, {x, k(0.0)}), x, p(false, kElementTimes, {slope, x})});
            return true;
        }
        default:
            return false;
    }
}

// The element-wise op of a CNTK number: CNTK's numbers are their own (no other op shares one), and a
// number CNTK used for a unary and a binary op is told apart by the operand count.
FunctionPtr load_elementwise(const LoadCall& c) {
    const int arity = c.in.size() == 1 ? 1 : 2;
    const int begin = arity == 1 ? 0 : kNumUnaryOps,
              end = arity == 1 ? kNumUnaryOps : kNumUnaryOps + kNumBinaryOps;
    for (int i = begin; i < end; ++i) {
        const auto op = static_cast<PrimitiveOp>(i);
        if (cntk_op_type(op) != c.cntk_op) continue;
        c.expect(static_cast<size_t>(arity), static_cast<size_t>(arity));
        Attributes attrs;
        if (arity == 1) {
            const ScalarAttrs d = default_scalars(elementwise_kernel_op(op));
            attrs = Attributes{{"alpha", d.alpha}, {"beta", d.beta}};
            if (op == PrimitiveOp::elu) attrs.set("alpha", c.r.real("alpha", 1.0));
        }
        return c.make(op, std::move(c.in), std::move(attrs));
    }
    throw IOError(c.r.where + ": CNTK op " + std::to_string(c.cntk_op) + " with " +
                  std::to_string(c.in.size()) + " operands");
}

// CNTK's Clip(x, min, max) with Constant bounds (what CNTK's clip built from numbers).
FunctionPtr load_clip(const LoadCall& c) {
    c.expect(3, 3);
    if (!c.in[1].is_constant() || !c.in[2].is_constant())
        throw NotImplementedError(c.r.where + ": Clip with bounds that are not Constants");
    return c.make(PrimitiveOp::clip, {c.in[0]},
                  Attributes{{"alpha", c.in[1].value().item()}, {"beta", c.in[2].value().item()}});
}

void add_elementwise_rows(Rows& rows) {
    std::map<int, Row> by_number;
    for (int i = 0; i < kNumUnaryOps + kNumBinaryOps; ++i) {
        const auto op = static_cast<PrimitiveOp>(i);
        const int cntk = cntk_op_type(op);
        if (op == PrimitiveOp::clip) {
            rows.push_back({{op}, {kClip}, save_elementwise, elementwise_composite, load_clip});
        } else if (cntk < 0) {
            rows.push_back({{op}, {}, save_elementwise, elementwise_composite, nullptr});
        } else {
            Row& row = by_number[cntk];
            row.ops.push_back(op);
            row.cntk_ops = {cntk};
            row.save = save_elementwise;
            row.save_composite = elementwise_composite;
            row.load = load_elementwise;
        }
    }
    for (auto& [number, row] : by_number) rows.push_back(std::move(row));
}

// ---- products ----
SavedOp save_times(const Function& f) {
    const Attributes& a = f.attributes();
    const std::vector<Variable> in = f.inputs();
    if (f.op() == PrimitiveOp::transpose_times) {
        SavedOp s = primitive_form(kTransposeTimes, {in[1], in[0]});
        set(s, "outputRank", dv_size_t(1));
        return s;
    }
    SavedOp s = primitive_form(kTimes, {in[1], in[0]});
    set(s, "outputRank", dv_size_t(static_cast<uint64_t>(a.get<int64_t>("outputRank"))));
    set(s, "inferInputRankToMap", dv_int(static_cast<int32_t>(a.get<int64_t>("inferInputRankToMap"))));
    return s;
}
FunctionPtr load_times(const LoadCall& c) {
    c.expect(2, 2);
    if (c.cntk_op == kTransposeTimes) {
        if (c.r.integer("outputRank", 1) != 1)
            throw NotImplementedError(c.r.where + ": TransposeTimes with outputRank other than 1");
        return c.make(PrimitiveOp::transpose_times, {c.in[1], c.in[0]}, {});
    }
    return c.make(PrimitiveOp::times, {c.in[1], c.in[0]},
                  Attributes{{"outputRank", c.r.integer("outputRank", 1)},
                             {"inferInputRankToMap", c.r.integer("inferInputRankToMap", -1)}});
}

// ---- reductions: CNTK's ReduceElements (and SumAll, read) ----
bool is_composite_reduction(const std::string& reduction) {
    return reduction == "L1" || reduction == "L2" || reduction == "SumSquare";
}
SavedOp save_reduce(const Function& f) {
    const Attributes& a = f.attributes();
    if (f.op() == PrimitiveOp::argmax || f.op() == PrimitiveOp::argmin) {
        SavedOp s = primitive_form(kReduceElements, f.inputs());
        set(s, "reductionOpName", dv_string(f.op() == PrimitiveOp::argmax ? "Argmax" : "Argmin"));
        set(s, "axis", dv_axis(a.has("axis") ? a.get<Axis>("axis") : Axis::all_static_axes()));
        set(s, "reductionKeepDimensions", dv_bool(true));
        return s;
    }
    const std::string& reduction = a.get<std::string>("reductionOpName");
    if (is_composite_reduction(reduction)) return extension_op(f);  // what reads attributes
    SavedOp s = primitive_form(kReduceElements, f.inputs());
    s.attributes = reduce_attributes(a, reduction);
    return s;
}
// CNTK's API built the L1 and L2 norms and the sum of squares from ReduceElements' Sum.
bool reduce_composite(const Function& f, CompositeWriter& w) {
    if (f.op() != PrimitiveOp::reduce) return false;
    const Attributes& a = f.attributes();
    const std::string& reduction = a.get<std::string>("reductionOpName");
    if (!is_composite_reduction(reduction)) return false;
    const std::string x = w.operand(f.inputs()[0]);
    const std::string t =
        reduction == "L1" ? w.primitive(false, kAbs, {x}) : w.primitive(false, kElementTimes, {x, x});
    if (reduction == "L2")
        w.primitive(true, kSqrt, {w.primitive(false, kReduceElements, {t}, reduce_attributes(a, "Sum"))});
    else
        w.primitive(true, kReduceElements, {t}, reduce_attributes(a, "Sum"));
    return true;
}
FunctionPtr load_reduce(const LoadCall& c) {
    c.expect(1, 1);
    if (c.cntk_op == kSumAll)
        return c.make(PrimitiveOp::reduce, std::move(c.in),
                      Attributes{{"reductionOpName", std::string("Sum")},
                                 {"axes", std::vector<Axis>{Axis::all_axes()}},
                                 {"keepdims", false}});
    const std::string& reduction = c.r.string("reductionOpName");
    if (reduction == "Argmax" || reduction == "Argmin") {
        Attributes attrs;
        const Axis axis = c.r.axis("axis");
        if (axis.kind() != Axis::Kind::all_static) attrs.set("axis", axis);
        return c.make(reduction == "Argmax" ? PrimitiveOp::argmax : PrimitiveOp::argmin, std::move(c.in),
                      std::move(attrs));
    }
    std::vector<Axis> axes = c.r.has("axisVec") ? c.r.axes("axisVec") : std::vector<Axis>{c.r.axis("axis")};
    if (axes.size() == 1 && axes[0].is_sequence())
        return c.make(
            reduction == "Max" ? PrimitiveOp::sequence_reduce_max : PrimitiveOp::sequence_reduce_sum,
            std::move(c.in), {});
    return c.make(PrimitiveOp::reduce, std::move(c.in),
                  Attributes{{"reductionOpName", reduction},
                             {"axes", axes},
                             {"keepdims", c.r.boolean("reductionKeepDimensions", true)}});
}

// ---- softmax, log_softmax, hardmax ----
SavedOp save_softmax(const Function& f) {
    SavedOp s = as_numbered(f);
    if (f.attributes().has("axis")) set(s, "axis", dv_axis(f.attributes().get<Axis>("axis")));
    return s;
}
FunctionPtr load_softmax(const LoadCall& c) {
    c.expect(1, 1);
    Attributes attrs;
    if (c.r.has("axis")) {
        const Axis axis = c.r.axis("axis");
        if (axis.kind() != Axis::Kind::all_static) attrs.set("axis", axis);
    }
    const PrimitiveOp op = c.cntk_op == 10   ? PrimitiveOp::softmax
                           : c.cntk_op == 11 ? PrimitiveOp::hardmax
                                             : PrimitiveOp::log_softmax;
    return c.make(op, std::move(c.in), std::move(attrs));
}

// ---- losses and metrics ----
SavedOp save_with_axis(const Function& f) {
    SavedOp s = as_numbered(f);
    set(s, "axis", dv_axis(f.attributes().get<Axis>("axis")));
    return s;
}
SavedOp save_classification_error(const Function& f) {
    if (f.attributes().get<int64_t>("topN") != 1) return extension_op(f);  // what reads attributes
    return save_with_axis(f);
}
// CNTK fed top-N classification error its N as a Constant operand.
bool classification_error_composite(const Function& f, CompositeWriter& w) {
    const Attributes& a = f.attributes();
    if (a.get<int64_t>("topN") == 1) return false;
    proto::Dictionary attrs;
    put(attrs, "axis", dv_axis(a.get<Axis>("axis")));
    const std::vector<Variable> in = f.inputs();
    w.primitive(true, kClassificationError,
                {w.operand(in[0]), w.operand(in[1]), w.scalar(static_cast<double>(a.get<int64_t>("topN")))},
                std::move(attrs));
    return true;
}
FunctionPtr load_classification_error(const LoadCall& c) {
    c.expect(2, 3);
    int64_t top_n = 1;
    if (c.in.size() == 3) {
        if (!c.in[2].is_constant())
            throw IOError(c.r.where + ": ClassificationError's topN is not a Constant");
        top_n = static_cast<int64_t>(c.in[2].value().item());
        c.in.pop_back();
    }
    return c.make(PrimitiveOp::classification_error, std::move(c.in),
                  Attributes{{"axis", c.r.has("axis") ? c.r.axis("axis") : Axis(-1)}, {"topN", top_n}});
}

}  // namespace

void add_math_rows(Rows& rows) {
    add_elementwise_rows(rows);
    rows.push_back({{PrimitiveOp::times, PrimitiveOp::transpose_times},
                    {kTimes, kTransposeTimes},
                    save_times,
                    nullptr,
                    load_times});
    rows.push_back({{PrimitiveOp::reduce, PrimitiveOp::argmax, PrimitiveOp::argmin},
                    {kReduceElements, kSumAll},
                    save_reduce,
                    reduce_composite,
                    load_reduce});
    rows.push_back({{PrimitiveOp::softmax, PrimitiveOp::hardmax, PrimitiveOp::log_softmax},
                    {10, 11, 51},
                    save_softmax,
                    nullptr,
                    load_softmax});
    rows.push_back(plain_row<PrimitiveOp::element_select, 3, 3>({42}));
    rows.push_back(plain_row<PrimitiveOp::squared_error, 2, 2>({34}));
    // CNTK's Logistic, with an optional weight operand.
    rows.push_back(plain_row<PrimitiveOp::binary_cross_entropy, 2, 3>({48}));
    rows.push_back(plain_row<PrimitiveOp::cosine_distance, 2, 2>({53}));
    rows.push_back(
        {{PrimitiveOp::cross_entropy_with_softmax}, {35}, save_with_axis, nullptr, [](const LoadCall& c) {
             c.expect(2, 2);
             return c.make(PrimitiveOp::cross_entropy_with_softmax, std::move(c.in),
                           Attributes{{"axis", c.r.has("axis") ? c.r.axis("axis") : Axis(-1)}});
         }});
    rows.push_back({{PrimitiveOp::classification_error},
                    {36},
                    save_classification_error,
                    classification_error_composite,
                    load_classification_error});
}

}  // namespace ctk::formats::v2
