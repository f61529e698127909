// Ranking criteria and sequence metrics: lambda_rank, ndcg_at_1 (CNTK's LambdaRank and NDCG) and
// edit_distance_error.
// In progress: the ops are listed and registered; their rules land next.
#include "ctk/graph_ops.h"
#include "ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {
std::vector<OutputSpec> infer_not_yet(InferContext& c) {
    CTK_THROW(ValueError, c.where, ": not implemented yet");
}
}  // namespace

void register_ranking_ops(OpTable& t) {
    t.add(PrimitiveOp::lambda_rank, OpDef{"LambdaRank", 3, 3, infer_not_yet, nullptr, nullptr});
    t.add(PrimitiveOp::ndcg_at_1, OpDef{"NDCG", 3, 3, infer_not_yet, nullptr, nullptr});
    t.add(PrimitiveOp::edit_distance_error, OpDef{"EditDistanceError", 2, 2, infer_not_yet, nullptr, nullptr});
}

}  // namespace detail

FunctionPtr lambda_rank(const Variable& output, const Variable& gain, const Variable& group,
                        const std::string& name) {
    return detail::make_op(PrimitiveOp::lambda_rank, {output, gain, group}, {}, name);
}

FunctionPtr ndcg_at_1(const Variable& output, const Variable& gain, const Variable& group,
                      const std::string& name) {
    return detail::make_op(PrimitiveOp::ndcg_at_1, {output, gain, group}, {}, name);
}

FunctionPtr edit_distance_error(const Variable& input_a, const Variable& input_b, double, double, double, bool,
                                const std::vector<int64_t>&, const std::string& name) {
    return detail::make_op(PrimitiveOp::edit_distance_error, {input_a, input_b}, {}, name);
}

}  // namespace ctk
