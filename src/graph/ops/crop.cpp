// crop: CNTK's Crop: the last two static axes (height, width) of the input cut to the referent's,
// starting at (offset_y, offset_x). The gradient goes to the input only, padded back with zeros; the
// referent lends its shape. crop_automatic finds the offsets as CNTK did (CropNode::ComputeCropOffsets):
// from how the convolutions, poolings and element-wise ops between a common ancestor and each input
// move spatial coordinates.
#include <map>

#include <cmath>

#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

std::vector<OutputSpec> infer_crop(InferContext& c) {
    const Variable &x = c.inputs[0], &ref = c.inputs[1];
    CTK_CHECK(x.rank() >= 2 && x.rank() == ref.rank(), ShapeError, c.where, ": the input ", x.to_string(),
              " and the referent ", ref.to_string(), " must have the same rank, at least 2");
    const Dims& off = c.attrs.get<Dims>("offset");  // (x, y): width, height
    Dims out = x.shape();
    const size_t r = out.size();
    for (size_t i = 0; i < 2; ++i) {
        const size_t axis = r - 1 - i;  // width, then height
        const int64_t in = x.shape()[axis], want = ref.shape()[axis], o = off[i];
        CTK_CHECK(want >= 0 && in >= 0, ShapeError, c.where, ": crop needs known spatial dims, got ",
                  x.to_string(), " and ", ref.to_string());
        CTK_CHECK(o >= 0 && o + want <= in, ShapeError, c.where, ": the input ", x.to_string(),
                  " is too small to crop ", want, " at offset ", o, " along its ",
                  i == 0 ? "width" : "height");
        out[axis] = want;
    }
    (void)merge_dynamic_axes(c.inputs, c.where);
    return {{out, x.dtype(), x.dynamic_axes()}};
}

Tensor cropped(const Tensor& x, const Dims& off, const Dims& out_shape) {
    const int rank = x.rank();
    const int64_t h = out_shape[out_shape.size() - 2], w = out_shape.back();
    return x.slice(rank - 2, off[1], off[1] + h).slice(rank - 1, off[0], off[0] + w);
}

void forward_crop(ForwardContext& c) {
    const Dims& shape = c.input_vars[1].shape();
    c.outputs.push_back(Value(cropped(c.inputs[0].data(), c.attrs.get<Dims>("offset"), shape).contiguous()));
}

void backward_crop(BackwardContext& c) {
    if (!c.needs[0]) return;
    const Tensor& x = c.inputs[0].data();  // its shape only
    const Tensor& dy = c.output_grads[0];
    const Dims& off = c.attrs.get<Dims>("offset");
    Dims lo(static_cast<size_t>(x.rank()), 0), hi(lo);
    const size_t r = lo.size();
    lo[r - 1] = off[0], lo[r - 2] = off[1];
    hi[r - 1] = x.dim(x.rank() - 1) - off[0] - dy.dim(dy.rank() - 1);
    hi[r - 2] = x.dim(x.rank() - 2) - off[1] - dy.dim(dy.rank() - 2);
    c.input_grads[0] = ctk::pad(dy, lo, hi);
}

}  // namespace

void register_crop_ops(OpTable& t) {
    t.add(PrimitiveOp::crop, OpDef{"Crop", 2, 2, infer_crop, forward_crop, backward_crop});
    t.backward_reads(PrimitiveOp::crop, kReadsNothing);
    t.autocast({PrimitiveOp::crop}, Autocast::follow);
}

namespace {

using detail::SpatialTransform;

SpatialTransform compose(const SpatialTransform& a, const SpatialTransform& b) {  // a after b
    SpatialTransform t;
    for (int i = 0; i < 2; ++i) {
        t.scale[i] = a.scale[i] * b.scale[i];
        t.translate[i] = a.scale[i] * b.translate[i] + a.translate[i];
    }
    return t;
}
SpatialTransform inverse(const SpatialTransform& a) {
    SpatialTransform t;
    for (int i = 0; i < 2; ++i) {
        t.scale[i] = 1.0 / a.scale[i];
        t.translate[i] = -a.translate[i] / a.scale[i];
    }
    return t;
}
bool same(const SpatialTransform& a, const SpatialTransform& b) {
    for (int i = 0; i < 2; ++i)
        if (std::fabs(a.scale[i] - b.scale[i]) > 1e-9 || std::fabs(a.translate[i] - b.translate[i]) > 1e-9)
            return false;
    return true;
}

// Ops that leave spatial coordinates alone: element-wise and per-cell ops.
bool keeps_coordinates(const Function& f) {
    const PrimitiveOp op = f.op();
    return is_elementwise_unary(op) || is_elementwise_binary(op) || op == PrimitiveOp::batch_normalization ||
           op == PrimitiveOp::dropout || op == PrimitiveOp::pass || op == PrimitiveOp::stop_gradient ||
           op == PrimitiveOp::element_select || op == PrimitiveOp::straight_through;
}

// For every variable upstream of `v` (blocks walked inside) reachable through ops with a spatial map, the
// map from its coordinates to the start's; `order` keeps the order found (depth first, as CNTK).
struct Ancestors {
    std::map<const detail::VariableData*, SpatialTransform> map;
    std::vector<Variable> order;
};
void walk(const Variable& v, const SpatialTransform& to_start, Ancestors& a, const std::string& where) {
    auto [it, fresh] = a.map.emplace(v.impl(), to_start);
    if (!fresh) {
        CTK_CHECK(same(it->second, to_start), ValueError, where, ": ", v.to_string(),
                  " reaches the cropped operand along paths that move coordinates differently");
        return;
    }
    a.order.push_back(v);
    const FunctionPtr f = v.is_output() ? v.owner() : nullptr;
    if (!f) return;
    const auto inputs = f->inputs();
    if (f->is_block()) {
        // The block's output inside, and its placeholders back to its operands.
        const FunctionPtr root = f->block_root();
        const auto outs = f->outputs();
        for (size_t i = 0; i < outs.size(); ++i)
            if (outs[i] == v) walk(root->outputs()[i], to_start, a, where);
        for (const auto& [inner, outer] : f->block_arguments_mapping()) {
            auto found = a.map.find(inner.impl());
            if (found != a.map.end()) walk(outer, found->second, a, where);
        }
        return;
    }
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (inputs[i].is_parameter() || inputs[i].is_constant()) continue;
        if (keeps_coordinates(*f)) {
            walk(inputs[i], to_start, a, where);
        } else if (auto t = detail::spatial_transform(*f, i)) {
            walk(inputs[i], compose(to_start, *t), a, where);
        } else if (f->op() == PrimitiveOp::crop && i == 0) {
            const Dims& off = f->attributes().get<Dims>("offset");
            SpatialTransform t;
            t.translate[0] = -static_cast<double>(off[0]);
            t.translate[1] = -static_cast<double>(off[1]);
            walk(inputs[i], compose(to_start, t), a, where);
        }
    }
}

// The offsets that crop node_input to node_referent: the map between them through their common ancestor
// (or the given pair of ancestors) must be a shift by a non-positive amount.
Dims automatic_offsets(const Variable& input, const Variable& referent, const Variable& ancestor_input,
                       const Variable& ancestor_referent, const std::string& where) {
    Ancestors from_input, from_referent;
    walk(input, SpatialTransform{}, from_input, where);
    walk(referent, SpatialTransform{}, from_referent, where);
    std::optional<SpatialTransform> to_input, to_referent;
    if (ancestor_input.impl() && ancestor_referent.impl()) {
        auto i = from_input.map.find(ancestor_input.impl());
        auto r = from_referent.map.find(ancestor_referent.impl());
        CTK_CHECK(i != from_input.map.end() && r != from_referent.map.end(), ValueError, where,
                  ": the ancestors are not connected to the inputs through convolution, pooling or "
                  "element-wise ops");
        to_input = i->second, to_referent = r->second;
    } else {
        for (const Variable& v : from_referent.order) {
            auto i = from_input.map.find(v.impl());
            if (i == from_input.map.end()) continue;
            to_input = i->second, to_referent = from_referent.map.at(v.impl());
            break;
        }
        CTK_CHECK(
            to_input.has_value(), ValueError, where, ": ", input.to_string(), " and ", referent.to_string(),
            " have no common ancestor through convolution, pooling or element-wise ops (give the offsets "
            "with crop_manual)");
    }
    const SpatialTransform t = compose(*to_referent, inverse(*to_input));  // input -> referent coordinates
    Dims off;
    for (int i = 0; i < 2; ++i) {
        CTK_CHECK(std::fabs(t.scale[i] - 1.0) < 1e-9, ValueError, where, ": the ",
                  i == 0 ? "width" : "height", " of the input is scaled by ", t.scale[i],
                  " against the referent's; crop needs scale 1");
        CTK_CHECK(t.translate[i] <= 1e-9 && std::fabs(t.translate[i] - std::round(t.translate[i])) < 1e-9,
                  ValueError, where, ": the input is shifted by ", t.translate[i],
                  " against the referent along its ", i == 0 ? "width" : "height",
                  "; crop needs a whole, non-positive shift");
        off.push_back(static_cast<int64_t>(std::llround(-t.translate[i])));
    }
    return off;
}

}  // namespace

}  // namespace detail

FunctionPtr crop_automatic(const Variable& node_input, const Variable& node_referent,
                           const std::string& name) {
    const Dims off =
        detail::automatic_offsets(node_input, node_referent, {}, {}, "crop_automatic '" + name + "'");
    return crop_manual(node_input, node_referent, off[0], off[1], name);
}

FunctionPtr crop_automatic_with_ancestors(const Variable& node_input, const Variable& node_referent,
                                          const Variable& ancestor_input, const Variable& ancestor_referent,
                                          const std::string& name) {
    const Dims off = detail::automatic_offsets(node_input, node_referent, ancestor_input, ancestor_referent,
                                               "crop_automatic_with_ancestors '" + name + "'");
    return crop_manual(node_input, node_referent, off[0], off[1], name);
}

FunctionPtr crop_manual(const Variable& node_input, const Variable& node_referent, int64_t offset_x,
                        int64_t offset_y, const std::string& name) {
    return detail::make_op(PrimitiveOp::crop, {node_input, node_referent},
                           Attributes{{"offset", Dims{offset_x, offset_y}}}, name);
}

}  // namespace ctk
