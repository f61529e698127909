// The graph functions of the sequence ops (ctk::sequence::*, to_sequence, unpack_batch, ...): they build
// the primitives whose shape rules and kernels are in sequence.cpp, and CNTK's composites of them.
#include <cmath>
#include <limits>

#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace sequence {

namespace {
Variable default_initial_state(const Variable& x, const Variable& given) {
    if (given.defined()) return given;
    return constant(0.0, x.shape_known() ? x.dtype() : DataType::f32);
}
std::string new_axis_name(const char* prefix) {
    return Axis::new_unique_dynamic_axis(prefix).name();
}
}  // namespace

namespace {
// CNTK's per-sequence initial state: an initial state that is itself a sequence (one per sequence of
// x). PastValue's first k frames take the initial-state sequence's last k frames in order (FutureValue's
// last k its first k); an initial-state sequence of one frame is broadcast to all k. For k > 1 written
// with sequence ops (outside recurrent loops only: is_first and broadcast_as look across frames): the
// delayed x with zeros at the boundary, plus each boundary frame's mask times the initial-state frame
// it takes, broadcast along x.
FunctionPtr delay_from_sequence(bool past, const Variable& x, const Variable& init, int64_t k,
                                const std::string& name) {
    CTK_CHECK(k >= 1, ValueError, past ? "past_value" : "future_value", ": the offset must be at least 1");
    // One boundary frame: the initial-state sequence's last (first) frame is a per-sequence [#] value, the
    // delay's own initial-state form, which also works inside recurrent loops.
    if (k == 1) {
        return detail::make_op(past ? PrimitiveOp::past_value : PrimitiveOp::future_value,
                               {x, past ? last(init) : first(init)}, Attributes{{"offset", k}}, name);
    }
    auto shifted = [&](const Variable& v, int64_t by) -> Variable {
        if (by == 0) return v;
        return past ? past_value(v, constant(0.0, v.dtype()), by)
                    : future_value(v, constant(0.0, v.dtype()), by);
    };
    // 1 where the sequence has a single frame (CNTK broadcasts it), per sequence.
    Variable init_frames = sequence::reduce_sum(
        plus(element_times(is_first(init), constant(0.0, init.dtype())), constant(1.0, init.dtype())));
    Variable single = equal(init_frames, constant(1.0, init.dtype()));
    // The masks and broadcasts follow the delayed value, not x, so that inside a recurrence (x a
    // placeholder closed onto this output) every path from x to the result goes through the delay.
    const Variable delayed = shifted(x, k);
    Variable boundary = past ? is_first(delayed) : is_last(delayed);
    Variable out = delayed;
    for (int64_t dt = 0; dt < k; ++dt) {
        // Past: boundary frame dt takes init[T - k + dt]; future: frame T' - 1 - dt takes init[k - 1 - dt].
        Variable from_end =
            past ? Variable(last(shifted(init, k - 1 - dt))) : Variable(first(shifted(init, k - 1 - dt)));
        Variable value = element_select(single, past ? first(init) : last(init), from_end);
        Variable mask = shifted(boundary, dt);
        out = plus(out, element_times(mask, broadcast_as(value, delayed)));
    }
    return alias(out, name);
}
}  // namespace

FunctionPtr past_value(const Variable& x, const Variable& initial_state, int64_t time_step,
                       const std::string& name) {
    if (initial_state.defined() && initial_state.has_sequence_axis())
        return delay_from_sequence(true, x, initial_state, time_step, name);
    return detail::make_op(PrimitiveOp::past_value, {x, default_initial_state(x, initial_state)},
                           Attributes{{"offset", time_step}}, name);
}
FunctionPtr future_value(const Variable& x, const Variable& initial_state, int64_t time_step,
                         const std::string& name) {
    if (initial_state.defined() && initial_state.has_sequence_axis())
        return delay_from_sequence(false, x, initial_state, time_step, name);
    return detail::make_op(PrimitiveOp::future_value, {x, default_initial_state(x, initial_state)},
                           Attributes{{"offset", time_step}}, name);
}
FunctionPtr delay(const Variable& x, const Variable& initial_state, int64_t time_step,
                  const std::string& name) {
    if (time_step > 0) return past_value(x, initial_state, time_step, name);
    if (time_step < 0) return future_value(x, initial_state, -time_step, name);
    return alias(x, name);
}
FunctionPtr first(const Variable& x, const std::string& name) {
    return detail::make_op(PrimitiveOp::sequence_first, {x}, {}, name);
}
FunctionPtr last(const Variable& x, const std::string& name) {
    return detail::make_op(PrimitiveOp::sequence_last, {x}, {}, name);
}
FunctionPtr reduce_sum(const Variable& x, const std::string& name) {
    return detail::make_op(PrimitiveOp::sequence_reduce_sum, {x}, {}, name);
}
FunctionPtr reduce_max(const Variable& x, const std::string& name) {
    return detail::make_op(PrimitiveOp::sequence_reduce_max, {x}, {}, name);
}
FunctionPtr softmax(const Variable& x, const std::string& name) {
    return detail::make_op(PrimitiveOp::sequence_softmax, {x}, {}, name);
}
FunctionPtr is_first(const Variable& x, const std::string& name) {
    return detail::make_op(PrimitiveOp::sequence_is_first, {x}, {}, name);
}
FunctionPtr is_last(const Variable& x, const std::string& name) {
    return detail::make_op(PrimitiveOp::sequence_is_last, {x}, {}, name);
}
FunctionPtr broadcast_as(const Variable& operand, const Variable& broadcast_as_operand,
                         const std::string& name) {
    return detail::make_op(PrimitiveOp::sequence_broadcast_as, {operand, broadcast_as_operand}, {}, name);
}
FunctionPtr slice(const Variable& x, int64_t begin_index, int64_t end_index, const std::string& name) {
    // One frame per sequence (CNTK's derived axis of one fixed frame): no sequence axis left, a batch.
    if (end_index == begin_index + 1)
        return first(detail::make_op(PrimitiveOp::sequence_slice, {x},
                                     Attributes{{"beginIndex", begin_index},
                                                {"endIndex", end_index},
                                                {"newAxis", new_axis_name("sliceAxis")}},
                                     ""),
                     name);
    return detail::make_op(
        PrimitiveOp::sequence_slice, {x},
        Attributes{
            {"beginIndex", begin_index}, {"endIndex", end_index}, {"newAxis", new_axis_name("sliceAxis")}},
        name);
}
namespace {
// CNTK's axis for Where's output: named after the condition, so that ops on one condition share it.
std::string where_axis_name(const Variable& condition) {
    return "whereNodeDynamicAxis_conditionVar_" + condition.uid();
}
// CNTK's derived axis (its GetDerivedDynamicAxes): "" for none (one frame per sequence).
std::string derived_axis_name(const Variable& condition, DerivedAxis f, const char* where) {
    CTK_CHECK(f.first >= 0 && !(f.first == 0 && f.second <= 0), ValueError, where,
              ": new_sequence_axis_typeinfo (", f.first, ", ", f.second,
              ") gives sequences of no frames; scaling must be >= 0 and, when 0, additive > 0");
    CTK_CHECK(condition.has_sequence_axis(), ValueError, where, ": the condition ", condition.to_string(),
              " has no sequence axis to derive from");
    const std::string source = condition.dynamic_axes().back().name();
    if (f.first == 0 && f.second == 1) return "";
    if (f.first == 1 && f.second == 0) return source;
    if (f.first == 0) return source + "_fixedSliceOf_" + std::to_string(f.second);
    return source + "_times_" + std::to_string(f.first) +
           (f.second > 0 ? "_plus_" + std::to_string(f.second) : "_minus_" + std::to_string(-f.second));
}
}  // namespace

FunctionPtr gather(const Variable& x, const Variable& condition, const std::string& name) {
    return detail::make_op(PrimitiveOp::sequence_gather, {x, condition},
                           Attributes{{"newAxis", where_axis_name(condition)}}, name);
}
FunctionPtr where(const Variable& condition, const std::string& name) {
    return detail::make_op(PrimitiveOp::sequence_where, {condition},
                           Attributes{{"newAxis", where_axis_name(condition)}}, name);
}
FunctionPtr gather(const Variable& x, const Variable& condition, DerivedAxis new_axis,
                   const std::string& name) {
    const std::string axis = derived_axis_name(condition, new_axis, "sequence.gather");
    if (axis.empty()) return first(sequence::gather(x, condition), name);
    return detail::make_op(PrimitiveOp::sequence_gather, {x, condition}, Attributes{{"newAxis", axis}}, name);
}
FunctionPtr where(const Variable& condition, DerivedAxis new_axis, const std::string& name) {
    const std::string axis = derived_axis_name(condition, new_axis, "sequence.where");
    if (axis.empty()) return first(sequence::where(condition), name);
    return detail::make_op(PrimitiveOp::sequence_where, {condition}, Attributes{{"newAxis", axis}}, name);
}
FunctionPtr scatter(const Variable& x, const Variable& condition, const std::string& name) {
    // CNTK scatters a per-sequence value ([#], e.g. sequence.last(x)) as a one-frame sequence each.
    if (x.shape_known() && x.has_batch_axis() && !x.has_sequence_axis() && condition.has_sequence_axis()) {
        Dims one_frame = x.shape();
        one_frame.insert(one_frame.begin(), 1);
        const FunctionPtr frames = to_sequence(reshape(x, one_frame));
        return detail::make_op(PrimitiveOp::sequence_scatter, {frames->output(), condition}, {}, name);
    }
    return detail::make_op(PrimitiveOp::sequence_scatter, {x, condition}, {}, name);
}
FunctionPtr unpack(const Variable& x, double padding_value, const std::string& name) {
    return detail::make_op(PrimitiveOp::sequence_unpack, {x}, Attributes{{"paddingValue", padding_value}},
                           name);
}

}  // namespace sequence

FunctionPtr to_sequence(const Variable& x, const Variable& sequence_lengths, const std::string& name) {
    // (Built whole: GCC 12 warns falsely on a one-element vector grown by push_back here.)
    const std::vector<Variable> inputs =
        sequence_lengths.defined() ? std::vector<Variable>{x, sequence_lengths} : std::vector<Variable>{x};
    return detail::FunctionAccess::make_primitive(
        PrimitiveOp::to_sequence, inputs,
        Attributes{{"newAxis", Axis::new_unique_dynamic_axis("toSequence_").name()}}, name);
}

FunctionPtr to_sequence_like(const Variable& x, const Variable& dynamic_axes_like, const std::string& name) {
    return detail::FunctionAccess::make_primitive(PrimitiveOp::to_sequence_like, {x, dynamic_axes_like}, {},
                                                  name);
}

FunctionPtr reconcile_dynamic_axes(const Variable& x, const Variable& dynamic_axes_as,
                                   const std::string& name) {
    return detail::FunctionAccess::make_primitive(PrimitiveOp::reconcile_dynamic_axes, {x, dynamic_axes_as},
                                                  {}, name);
}

FunctionPtr unpack_batch(const Variable& x, const std::string& name) {
    return detail::FunctionAccess::make_primitive(PrimitiveOp::unpack_batch, {x}, {}, name);
}

FunctionPtr to_batch(const Variable& x, const std::string& name) {
    return detail::FunctionAccess::make_primitive(PrimitiveOp::to_batch, {x}, {}, name);
}

}  // namespace ctk
