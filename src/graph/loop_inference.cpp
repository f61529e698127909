// Shape inference's guesses while a recurrent loop is being closed. A Recurrence's step is built on a
// state placeholder of unknown shape; once the loop is closed (the placeholder replaced by the step's
// own output, through a delay), inference runs in rounds, and in the first one the far end of the loop
// is still unknown. An op with an unknown operand then guesses its outputs from what it does know; the
// next round checks the guess against the real operand, and the strict round at the end reports what
// is really contradictory. A guess must never be able to fix a parameter's inferred dims wrongly:
// hence the care below about operands that broadcast.
#include "graph/loop_inference.h"

#include "graph/executor.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace ctk::detail {

namespace {

// Whether v is computed from parameters and constants alone (looking `depth` producers up; deeper: no).
bool computed_from_parameters(const Variable& v, int depth) {
    if (v.is_parameter() || v.is_constant()) return true;
    const FunctionPtr owner = v.owner();
    if (!owner || depth == 0 || owner->is_composite()) return false;
    for (const Variable& in : owner->inputs())
        if (!computed_from_parameters(in, depth - 1)) return false;
    return true;
}

bool has_unit_or_unknown_dim(const Dims& dims) {
    return std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d <= 1; });
}

// Ops whose outputs have their operands' dynamic axes (the operands that have any).
bool keeps_axes(PrimitiveOp op) {
    switch (op) {
        case PrimitiveOp::element_select:
        case PrimitiveOp::times:
        case PrimitiveOp::transpose_times:
        case PrimitiveOp::softmax:
        case PrimitiveOp::log_softmax:
        case PrimitiveOp::hardmax:
        case PrimitiveOp::reshape:
        case PrimitiveOp::slice:
        case PrimitiveOp::splice:
        case PrimitiveOp::transpose:
        case PrimitiveOp::pad:
        case PrimitiveOp::cast:
        case PrimitiveOp::stop_gradient:
        case PrimitiveOp::pass:
        case PrimitiveOp::dropout:
        case PrimitiveOp::straight_through:
            return true;
        default:
            return is_elementwise_unary(op) || is_elementwise_binary(op);
    }
}

// The dynamic axes of the values a variable of unknown shape is computed from: a walk up its producers
// (into blocks, whose placeholders stand for their operands) that stops at known values and gives up
// at ops that change axes and at free placeholders.
class AxesSearch {
public:
    std::optional<std::vector<Axis>> run(const Variable& v) {
        if (!visit(v, 64) || found_.size() != 1) return std::nullopt;  // gave up, nothing known, or disagree
        return found_[0];
    }

private:
    void note(const std::vector<Axis>& axes) {
        if (!axes.empty() && std::find(found_.begin(), found_.end(), axes) == found_.end())
            found_.push_back(axes);
    }
    bool visit_inputs(const std::vector<Variable>& ins, int depth) {
        for (const Variable& in : ins)
            if (!visit(in, depth)) return false;
        return true;
    }
    // False: gave up.
    bool visit(const Variable& v, int depth) {
        if (v.is_parameter() || v.is_constant()) return true;
        if (!seen_.insert(v.impl()).second) return true;  // a loop's back edge, or shared upstream
        if (v.shape_known() || (v.is_placeholder() && v.dynamic_rank() > 0)) {
            note(v.dynamic_axes());
            return true;
        }
        if (depth == 0) return false;
        if (v.is_placeholder()) {
            const auto it = operand_of_.find(v.impl());
            return it != operand_of_.end() && visit(it->second, depth - 1);
        }
        const FunctionPtr f = v.owner();
        if (!f || f->is_composite()) return false;
        if (f->is_block()) {
            for (const auto& [inner, outer] : f->block_arguments_mapping()) operand_of_[inner.impl()] = outer;
            const std::vector<Variable> outs = f->outputs(), inner_outs = f->block_root()->outputs();
            for (size_t i = 0; i < outs.size() && i < inner_outs.size(); ++i)
                if (outs[i].impl() == v.impl()) return visit(inner_outs[i], depth - 1);
            return false;
        }
        const std::vector<Variable> ins = f->inputs();
        if (is_delay(f->op())) return visit(ins[0], depth - 1);  // (the initial state is broadcast)
        switch (f->op()) {
            case PrimitiveOp::reconcile_dynamic_axes:
            case PrimitiveOp::sequence_broadcast_as:
                return visit(ins[1], depth - 1);
            case PrimitiveOp::reduce: {
                const auto& axes = f->attributes().get<std::vector<Axis>>("axes");
                const bool static_only = std::all_of(axes.begin(), axes.end(), [](const Axis& a) {
                    return a.kind() == Axis::Kind::static_axis || a.kind() == Axis::Kind::all_static;
                });
                return static_only && visit_inputs(ins, depth - 1);
            }
            default:
                return keeps_axes(f->op()) && visit_inputs(ins, depth - 1);
        }
    }

    std::unordered_set<const void*> seen_;
    std::unordered_map<const void*, Variable> operand_of_;
    std::vector<std::vector<Axis>> found_;
};

}  // namespace

std::optional<std::vector<Axis>> loop_axes(const Variable& v) {
    return AxesSearch().run(v);
}

bool may_guess_from_known_operands(const Function& f, const std::vector<Variable>& known_inputs) {
    if (!is_elementwise_binary(f.op()) || known_inputs.empty()) return false;
    // Not from a parameter or constant alone that has a dim of 1: it broadcasts (a convolution's bias
    // [C x 1 x 1]), and a product downstream would fix a Dense weight's inferred dims from the guess
    // (CNTK's ConvNet_CIFAR10_DataAug: Sequential([Convolution2D, ..., Dense])). Nor from a scalar
    // computed from parameters and constants alone (a Stabilizer's learnt factor): it broadcasts to any
    // shape. Nor from parameters and constants alone when no known operand has dynamic axes (an LSTM's
    // bias meeting its self-stabilized state): the far end of a loop has the loop's axes.
    const bool with_axes = std::any_of(known_inputs.begin(), known_inputs.end(),
                                       [](const Variable& v) { return v.dynamic_rank() > 0; });
    return std::any_of(known_inputs.begin(), known_inputs.end(), [&](const Variable& v) {
        if (!v.is_parameter() && !v.is_constant()) return v.rank() > 0 || !computed_from_parameters(v, 8);
        return (v.rank() == 0 || with_axes) && !has_unit_or_unknown_dim(v.shape());
    });
}

std::optional<std::vector<OutputSpec>> guess_loop_outputs(const Function& f) {
    const std::vector<Variable> ins = f.inputs();
    if (is_delay(f.op())) {
        // A delay whose operand is the far end takes a (non-scalar, static) initial state's shape: a
        // loop whose state only a product or a softmax makes (UnfoldFrom's decoders). Not from an
        // initial state with a dim of 1, which may broadcast to a larger state.
        if (ins.size() < 2 || ins[0].shape_known() || !ins[1].shape_known()) return std::nullopt;
        const Variable& init = ins[1];
        if (init.rank() == 0 || !init.dynamic_axes().empty() || has_unit_or_unknown_dim(init.shape()))
            return std::nullopt;
        // Its axes are the loop's (UnfoldFrom's state is relabelled to the axes it unfolds along):
        // no guess until they are known.
        const auto axes = loop_axes(ins[0]);
        if (!axes) return std::nullopt;
        return std::vector<OutputSpec>{{init.shape(), init.dtype(), *axes}};
    }
    switch (f.op()) {
        case PrimitiveOp::times: {
            // A product of an unknown x by a weight whose output dims are known gives those dims when x
            // is all contracted (inferInputRankToMap 0), or taken to be (a weight applied to a vector:
            // an LSTM's recurrent matrix on its past state, a Dense layer's with input_rank=1); the
            // weight's input dims may still be to infer (CNTK inferred so). A loop whose frame is
            // spliced from its input and its past state (an attention decoder) closes through it.
            const Variable &x = ins[0], &w = ins[1];
            if (x.shape_known() || !w.shape_known() || !(w.is_parameter() || w.is_constant()))
                return std::nullopt;
            const Dims& ws = w.shape();
            const auto output_rank = static_cast<size_t>(f.attributes().get<int64_t>("outputRank"));
            if (f.attributes().get<int64_t>("inferInputRankToMap") > 0 || ws.size() <= output_rank)
                return std::nullopt;
            const Dims out(ws.end() - static_cast<std::ptrdiff_t>(output_rank), ws.end());
            if (std::any_of(out.begin(), out.end(), [](int64_t d) { return d < 0; })) return std::nullopt;
            const auto axes = loop_axes(x);
            if (!axes) return std::nullopt;
            return std::vector<OutputSpec>{{out, w.dtype(), *axes}};
        }
        case PrimitiveOp::reconcile_dynamic_axes:
        case PrimitiveOp::sequence_broadcast_as: {
            // x broadcast along a sequence whose shape is unknown: x's shape, that sequence's axes.
            if (!ins[0].shape_known() || ins[1].shape_known()) return std::nullopt;
            const auto axes = loop_axes(ins[1]);
            if (!axes) return std::nullopt;
            return std::vector<OutputSpec>{{ins[0].shape(), ins[0].dtype(), *axes}};
        }
        default:
            return std::nullopt;
    }
}

}  // namespace ctk::detail
