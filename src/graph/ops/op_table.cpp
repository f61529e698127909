// The graph op table: every PrimitiveOp's OpDef, registered explicitly by family; plus the op list's
// names and CNTK op-type numbers.
#include "graph/ops/ops_common.h"

namespace ctk {

namespace {
struct OpInfo {
    const char* name;
    int cntk_type;
};
// CNTK's PrimitiveOpType numbers of the element-wise kernel ops that CNTK also had as primitives.
int cntk_elementwise_type(OpKind op) {
    switch (op) {
        case OpKind::negate:
            return 0;
        case OpKind::sigmoid:
            return 1;
        case OpKind::tanh:
            return 2;
        case OpKind::relu:
            return 3;
        case OpKind::exp:
            return 4;
        case OpKind::log:
            return 5;
        case OpKind::sqrt:
            return 6;
        case OpKind::floor:
            return 7;
        case OpKind::abs:
            return 8;
        case OpKind::reciprocal:
            return 9;
        case OpKind::plus:
            return 19;
        case OpKind::minus:
            return 20;
        case OpKind::element_times:
            return 21;
        case OpKind::equal:
            return 22;
        case OpKind::not_equal:
            return 23;
        case OpKind::less:
            return 24;
        case OpKind::less_equal:
            return 25;
        case OpKind::greater:
            return 26;
        case OpKind::greater_equal:
            return 27;
        case OpKind::log_add_exp:
            return 52;
        case OpKind::sin:
            return 54;
        case OpKind::cos:
            return 55;
        case OpKind::elu:
            return 65;
        case OpKind::pow:
            return 69;
        case OpKind::sinh:
            return 77;
        case OpKind::cosh:
            return 78;
        case OpKind::asin:
            return 81;
        case OpKind::acos:
            return 82;
        case OpKind::atanh:
            return 85;
        case OpKind::asinh:
            return 86;
        case OpKind::tan:
            return 95;
        case OpKind::atan:
            return 96;
        default:
            return -1;  // CNTK wrote these as composites of its primitives
    }
}
const OpInfo kOtherOps[] = {
#define CTK_GRAPH_OP_INFO(name, id) {#name, id},
    CTK_GRAPH_OTHER_OPS(CTK_GRAPH_OP_INFO)
#undef CTK_GRAPH_OP_INFO
};
constexpr int kNumElementwise = kNumUnaryOps + kNumBinaryOps;
static_assert(sizeof(kOtherOps) / sizeof(kOtherOps[0]) + kNumElementwise == kNumPrimitiveOps);
}  // namespace

bool is_elementwise_unary(PrimitiveOp op) {
    return static_cast<int>(op) < kNumUnaryOps;
}
bool is_elementwise_binary(PrimitiveOp op) {
    const int i = static_cast<int>(op);
    return i >= kNumUnaryOps && i < kNumElementwise;
}
OpKind elementwise_kernel_op(PrimitiveOp op) {
    CTK_CHECK(static_cast<int>(op) < kNumElementwise, ValueError, primitive_op_name(op),
              " is not element-wise");
    // The first graph ops are the kernel list's unary then binary ops, in the same order.
    return static_cast<OpKind>(static_cast<int>(op));
}
const char* primitive_op_name(PrimitiveOp op) {
    const int i = static_cast<int>(op);
    if (i < kNumElementwise) return op_name(static_cast<OpKind>(i));
    return kOtherOps[i - kNumElementwise].name;
}
int cntk_op_type(PrimitiveOp op) {
    const int i = static_cast<int>(op);
    if (i < kNumElementwise) return cntk_elementwise_type(static_cast<OpKind>(i));
    return kOtherOps[i - kNumElementwise].cntk_type;
}

namespace detail {

const OpDef& op_def(PrimitiveOp op) {
    static const OpTable table = [] {
        OpTable t;
        register_elementwise_ops(t);
        register_times_ops(t);
        register_reduce_ops(t);
        register_shape_ops(t);
        register_softmax_ops(t);
        register_loss_ops(t);
        register_conv_ops(t);
        register_random_ops(t);
        register_plumbing_ops(t);
        register_sequence_ops(t);
        register_sampling_ops(t);
        register_ranking_ops(t);
        register_roipooling_ops(t);
        register_like_ops(t);
        register_ctc_ops(t);
        register_crop_ops(t);
        register_user_function_ops(t);
        // combine and block are flattened by the executor; their entries only name them.
        t.add(PrimitiveOp::combine, OpDef{"Combine", 0, 1 << 20, nullptr, nullptr, nullptr});
        t.add(PrimitiveOp::block, OpDef{"Block", 0, 1 << 20, nullptr, nullptr, nullptr});
        for (int i = 0; i < kNumPrimitiveOps; ++i)
            CTK_CHECK(t.present[static_cast<size_t>(i)], Error, "graph op ",
                      primitive_op_name(static_cast<PrimitiveOp>(i)), " has no OpDef");
        return t;
    }();
    return table.defs[static_cast<size_t>(op)];
}

}  // namespace detail

}  // namespace ctk
