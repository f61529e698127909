// roipooling: CNTK's ROIPooling (Fast R-CNN's max pooling of regions of interest to a fixed size). Each
// sample's feature map [C, H, W] is pooled for each of its ROIs [R, 4] (x1, y1, x2, y2 in image
// coordinates, mapped onto the map by spatial_scale) into [R, C, h, w]; the kernels are the
// roi_pooling ops. The gradient reaches the feature map only, at each bin's maximum.
#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

RoiPoolAttrs roi_attrs(const Attributes& a) {
    return {a.get<Dims>("roiOutputShape"), a.get<double>("spatialScale")};
}

std::vector<OutputSpec> infer_roipooling(InferContext& c) {
    const Variable &x = c.inputs[0], &rois = c.inputs[1];
    CTK_CHECK(x.rank() == 3, ShapeError, c.where, ": the operand ", x.to_string(),
              " must be a feature map [C, H, W]");
    CTK_CHECK(x.shape()[0] >= 1, ShapeError, c.where, ": the operand ", x.to_string(),
              " needs a known number of channels");
    CTK_CHECK(!x.dynamic_axes().empty(), ShapeError, c.where, ": the operand ", x.to_string(),
              " needs a batch axis (one feature map per image)");
    CTK_CHECK(rois.rank() == 2 && rois.shape()[1] == 4 && rois.shape()[0] >= 1, ShapeError, c.where,
              ": rois ", rois.to_string(), " must be [R, 4]: (x1, y1, x2, y2) per region");
    CTK_CHECK(rois.dynamic_axes().empty() || rois.dynamic_axes() == x.dynamic_axes(), ShapeError, c.where,
              ": rois ", rois.to_string(),
              " must have the operand's dynamic axes (one set per image) or none");
    const Dims& out = c.attrs.get<Dims>("roiOutputShape");
    CTK_CHECK(out.size() == 2 && out[0] >= 1 && out[1] >= 1, ValueError, c.where, ": roi_output_shape ",
              dims_to_string(out), " must be (h, w) with h, w >= 1");
    const double scale = c.attrs.get<double>("spatialScale");
    CTK_CHECK(scale > 0, ValueError, c.where, ": spatial_scale ", scale, " must be positive");
    return {{Dims{rois.shape()[0], x.shape()[0], out[0], out[1]}, common_dtype(c.inputs, c.where),
             x.dynamic_axes()}};
}

// The ROIs as [N, R, 4] for the folded feature maps [N, C, H, W] (static ROIs serve every image).
Tensor rois_for(const ForwardContext& c, int64_t images) {
    const Tensor& r = c.inputs[1].data();
    if (c.dyn_rank(1) > 0) return fold_dynamic(r, c.dyn_rank(1));
    return r.expand_dims(0).broadcast_to(Shape{images, r.dim(0), 4});
}

void forward_roipooling(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const Tensor maps = fold_dynamic(x, c.dyn_rank(0));
    const Tensor rois = rois_for(c, maps.dim(0)).contiguous();
    RoiPoolResult r = roi_pooling(maps, rois, roi_attrs(c.attrs));
    c.outputs.push_back(Value(unfold_dynamic(r.y, x, c.dyn_rank(0))));
    if (c.keep_for_backward) {
        c.saved.push_back(r.argmax);
        c.saved.push_back(rois);
    }
}

void backward_roipooling(BackwardContext& c) {
    if (!c.needs[0]) return;
    const Tensor& x = c.inputs[0].data();  // its shape only (backward reads no operand)
    const int dyn = c.dyn_rank(0);
    Dims folded{1};
    for (int i = 0; i < dyn; ++i) folded[0] *= x.dim(i);
    for (int i = dyn; i < x.rank(); ++i) folded.push_back(x.dim(i));
    Tensor dx = roi_pooling_backward(fold_dynamic(c.output_grads[0].contiguous(), dyn), c.saved[0],
                                     c.saved[1], Shape(folded), roi_attrs(c.attrs));
    c.input_grads[0] = dx.reshape(x.shape().dims());
}

}  // namespace

void register_roipooling_ops(OpTable& t) {
    t.add(PrimitiveOp::roipooling,
          OpDef{"ROIPooling", 2, 2, infer_roipooling, forward_roipooling, backward_roipooling});
    t.backward_reads(PrimitiveOp::roipooling, kReadsNothing);  // the argmax and ROIs are saved
}

}  // namespace detail

FunctionPtr roipooling(const Variable& operand, const Variable& rois, PoolingType pooling_type,
                       const Dims& roi_output_shape, double spatial_scale, const std::string& name) {
    // CNTK 2.7 too: "Unsupported pooling type, ROIPooling support only MAX pooling."
    CTK_CHECK(pooling_type == PoolingType::max, ValueError, "roipooling '", name,
              "': only max pooling is supported (as in CNTK)");
    return detail::make_op(PrimitiveOp::roipooling, {operand, rois},
                           Attributes{{"roiOutputShape", roi_output_shape},
                                      {"poolingType", int64_t(0)},
                                      {"spatialScale", spatial_scale}},
                           name);
}

}  // namespace ctk
