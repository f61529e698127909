// The one list of graph-level primitive ops. Element-wise ops come from the kernel op list
// (ctk/kernels/kernel_op_list.h), so a new element-wise kernel op is a graph op too; the rest are listed
// here. Each op's shape rule, forward and backward live together in src/graph/ops/<family>.cpp.
// cntk_op_type() maps an op to CNTK's PrimitiveOpType number (kept for model files; -1 where CNTK wrote the
// op as a composite).
#pragma once

#include <cstdint>

#include "ctk/kernels/kernel_op_list.h"

namespace ctk {

// X(name, cntk_op_type)
#define CTK_GRAPH_OTHER_OPS(X)                                                       \
    X(element_select, 42)                                                            \
    X(times, 31)                                                                     \
    X(transpose_times, 32)                                                           \
    X(reduce, 39) /* ReduceElements: attrs reductionOpName, axes, keepdims */        \
    X(argmax, 39)                                                                    \
    X(argmin, 39)                                                                    \
    X(softmax, 10)                                                                   \
    X(log_softmax, 51)                                                               \
    X(hardmax, 11)                                                                   \
    X(reshape, 16)                                                                   \
    X(slice, 14)                                                                     \
    X(splice, 43)                                                                    \
    X(transpose, 12) /* TransposeAxes, with a permutation or a pair of axes */       \
    X(pad, 83)                                                                       \
    X(gather, 74)                                                                    \
    X(one_hot, 68)                                                                   \
    X(top_k, 87)                                                                     \
    X(cast, 91)                                                                      \
    X(stop_gradient, 64)                                                             \
    X(pass, 56) /* alias */                                                          \
    X(assign, 73)                                                                    \
    X(convolution, 33)                                                               \
    X(convolution_transpose, 33) /* Convolution with transpose = true */             \
    X(pooling, 17)                                                                   \
    X(unpooling, 58) /* max only, as CNTK */                                         \
    X(batch_normalization, 40)                                                       \
    X(dropout, 15)                                                                   \
    X(random_distribution, 76) /* cntk.random: uniform, normal, bernoulli, gumbel */ \
    X(random_sample, 45)                                                             \
    X(random_sample_inclusion_frequency, 46)                                         \
    X(roipooling, 47)                                                                \
    X(crop, 84)                                                                      \
    X(constant_like, 89) /* ConstantOp: ones_like, zeros_like */                     \
    X(eye_like, 92)                                                                  \
    X(straight_through, 94)                                                          \
    X(squared_error, 34)                                                             \
    X(cross_entropy_with_softmax, 35)                                                \
    X(classification_error, 36)                                                      \
    X(binary_cross_entropy, 48) /* Logistic, with an optional weight operand */      \
    X(cosine_distance, 53)                                                           \
    X(cosine_distance_with_negative_samples, 67)                                     \
    X(labels_to_graph, 63)                                                           \
    X(forward_backward, 66) /* CTC */                                                \
    X(lambda_rank, 59)                                                               \
    X(ndcg_at_1, 60) /* NDCG */                                                      \
    X(edit_distance_error, 61)                                                       \
    X(past_value, 37)                                                                \
    X(future_value, 38)                                                              \
    X(sequence_first, -1)                                                            \
    X(sequence_last, -1)                                                             \
    X(sequence_reduce_sum, 39)                                                       \
    X(sequence_reduce_max, 39)                                                       \
    X(sequence_softmax, -1)                                                          \
    X(sequence_is_first, -1)                                                         \
    X(sequence_is_last, -1)                                                          \
    X(sequence_broadcast_as, 50) /* ReconcileDynamicAxis */                          \
    X(sequence_slice, 14)                                                            \
    X(sequence_gather, 29) /* GatherPacked */                                        \
    X(sequence_where, 13)                                                            \
    X(sequence_scatter, 30) /* ScatterPacked */                                      \
    X(sequence_unpack, 72)                                                           \
    X(to_sequence, 70)                                                               \
    X(reconcile_dynamic_axes, 50)                                                    \
    X(to_sequence_like, 71)                                                          \
    X(unpack_batch, 79)                                                              \
    X(to_batch, 80)                                                                  \
    X(user_function, -1) /* callbacks (CNTK's UserFunction); never saved */          \
    X(combine, 44)       /* never executed: composites are flattened */              \
    X(block, 57)         /* never executed: blocks are inlined */

enum class PrimitiveOp : uint16_t {
#define CTK_GRAPH_KERNEL_OP(name, attrs) name,
    CTK_UNARY_OPS(CTK_GRAPH_KERNEL_OP) CTK_BINARY_OPS(CTK_GRAPH_KERNEL_OP)
#undef CTK_GRAPH_KERNEL_OP
#define CTK_GRAPH_OP(name, id) name,
        CTK_GRAPH_OTHER_OPS(CTK_GRAPH_OP)
#undef CTK_GRAPH_OP
};

#define CTK_GRAPH_COUNT_ONE(...) +1
inline constexpr int kNumPrimitiveOps =
    kNumUnaryOps + kNumBinaryOps + (0 CTK_GRAPH_OTHER_OPS(CTK_GRAPH_COUNT_ONE));
#undef CTK_GRAPH_COUNT_ONE
// Adding a graph op? Add its OpDef in src/graph/ops, its case in tests/graph/cases, and bump this count.
static_assert(kNumPrimitiveOps == 119,
              "graph op list changed: update src/graph/ops and the graph op harness");

const char* primitive_op_name(PrimitiveOp op);  // ctk's name: "plus", "times", ...
int cntk_op_type(PrimitiveOp op);
bool is_elementwise_unary(PrimitiveOp op);
bool is_elementwise_binary(PrimitiveOp op);
// The kernel op of an element-wise graph op.
OpKind elementwise_kernel_op(PrimitiveOp op);

}  // namespace ctk
