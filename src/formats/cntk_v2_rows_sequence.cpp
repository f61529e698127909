// CNTK v2 rows, sequences and dynamic axes: the delays (PastValue, FutureValue), ReconcileDynamicAxis,
// ToSequence, ToSequenceLike and the batch-axis ops (UnpackBatch, ToBatch), each with its save and load
// side by side. ctk's other sequence ops are written as the ctk extension (cntk_v2_rows.cpp): CNTK built
// them as blocks of primitives (Where, PackedIndex, GatherPacked, ...) that ctk's graph has as single ops,
// and CNTK's UnpackSequence has a mask output that ctk's unpack does not.
#include "ctk/graph/graph_ops.h"
#include "formats/cntk_v2_internal.h"

namespace ctk::formats::v2 {

namespace {

SavedOp save_delay(const Function& f) {
    SavedOp s = as_numbered(f);
    set(s, "offset", dv_size_t(static_cast<uint64_t>(f.attributes().get<int64_t>("offset"))));
    return s;
}
// Operands (sequence, initial state).
FunctionPtr load_delay(const LoadCall& c) {
    c.expect(2, 2);
    return c.make(c.cntk_op == 37 ? PrimitiveOp::past_value : PrimitiveOp::future_value, std::move(c.in),
                  Attributes{{"offset", c.r.integer("offset", 1)}});
}

FunctionPtr load_batch_axis_op(const LoadCall& c) {
    c.expect(1, 1);
    return c.make(c.cntk_op == 79 ? PrimitiveOp::unpack_batch : PrimitiveOp::to_batch, std::move(c.in), {});
}

// CNTK's ToSequence(x[, lengths]) names its new sequence axis from a prefix ("sequenceAxis"); ctk makes
// the axis unique per Function, from the same prefix.
SavedOp save_to_sequence(const Function& f) {
    SavedOp s = as_numbered(f);
    set(s, "sequenceAxis", dv_string("toSequence_"));
    return s;
}
FunctionPtr load_to_sequence(const LoadCall& c) {
    c.expect(1, 2);
    const std::string prefix = c.r.has("sequenceAxis") ? c.r.string("sequenceAxis") : "toSequence_";
    return c.make(PrimitiveOp::to_sequence, std::move(c.in),
                  Attributes{{"newAxis", Axis::new_unique_dynamic_axis(prefix).name()}});
}

}  // namespace

void add_sequence_rows(Rows& rows) {
    rows.push_back(
        {{PrimitiveOp::past_value, PrimitiveOp::future_value}, {37, 38}, save_delay, nullptr, load_delay});
    // CNTK's ReconcileDynamicAxis both broadcasts a non-sequence over `like`'s frames and relabels a
    // sequence (UnfoldFrom's loop state): ctk's reconcile_dynamic_axes does both, and sequence broadcast_as
    // is written as it.
    rows.push_back({{PrimitiveOp::sequence_broadcast_as, PrimitiveOp::reconcile_dynamic_axes},
                    {50},
                    as_numbered,
                    nullptr,
                    load_plain<PrimitiveOp::reconcile_dynamic_axes, 2, 2>});
    rows.push_back({{PrimitiveOp::to_sequence}, {70}, save_to_sequence, nullptr, load_to_sequence});
    rows.push_back(plain_row<PrimitiveOp::to_sequence_like, 2, 2>({71}));
    rows.push_back({{PrimitiveOp::unpack_batch, PrimitiveOp::to_batch},
                    {79, 80},
                    as_numbered,
                    nullptr,
                    load_batch_axis_op});
}

}  // namespace ctk::formats::v2
