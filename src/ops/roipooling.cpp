// roipooling: CNTK's ROIPooling, max or average pooling of regions of interest to a fixed output size.
// In progress: the op is listed and registered; its rules land next.
#include "ctk/graph_ops.h"
#include "ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {
std::vector<OutputSpec> infer_not_yet(InferContext& c) {
    CTK_THROW(ValueError, c.where, ": not implemented yet");
}
}  // namespace

void register_roipooling_ops(OpTable& t) {
    t.add(PrimitiveOp::roipooling, OpDef{"ROIPooling", 2, 2, infer_not_yet, nullptr, nullptr});
}

}  // namespace detail

FunctionPtr roipooling(const Variable& operand, const Variable& rois, PoolingType, const Dims&, double,
                       const std::string& name) {
    return detail::make_op(PrimitiveOp::roipooling, {operand, rois}, {}, name);
}

}  // namespace ctk
