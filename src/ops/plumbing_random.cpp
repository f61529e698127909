// Graph plumbing (stop_gradient, alias) and dropout. Dropout draws its mask from a Philox stream of its
// own (the Function's seed and a counter that advances per call), so runs are reproducible.
#include "ctk/graph_ops.h"
#include "ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

std::vector<OutputSpec> infer_identity(InferContext& c) {
    const Variable& x = c.inputs[0];
    return {{x.shape(), x.dtype(), x.dynamic_axes()}};
}
void forward_identity(ForwardContext& c) {
    c.outputs.push_back(c.inputs[0]);
}
void backward_identity(BackwardContext& c) {
    c.input_grads[0] = c.output_grads[0];
}

void forward_dropout(ForwardContext& c) {
    const double rate = c.attrs.get<double>("dropoutRate");
    if (!c.training || rate == 0.0) {
        c.outputs.push_back(c.inputs[0]);
        return;
    }
    Generator gen(static_cast<uint64_t>(c.attrs.get<int64_t>("rngSeed")), c.rng_offset);
    DropoutResult r = dropout(c.inputs[0].data(), rate, gen);
    c.rng_offset = gen.offset();
    c.outputs.push_back(Value(r.y));
    c.saved.push_back(r.mask);
}
void backward_dropout(BackwardContext& c) {
    c.input_grads[0] = c.saved.empty() ? c.output_grads[0] : element_times(c.output_grads[0], c.saved[0]);
}

}  // namespace

void register_plumbing_ops(OpTable& t) {
    t.add(PrimitiveOp::stop_gradient, OpDef{"StopGradient", 1, 1, infer_identity, forward_identity, nullptr});
    t.add(PrimitiveOp::pass, OpDef{"Pass", 1, 1, infer_identity, forward_identity, backward_identity});
}

void register_random_ops(OpTable& t) {
    t.add(PrimitiveOp::dropout, OpDef{"Dropout", 1, 1, infer_identity, forward_dropout, backward_dropout});
}

}  // namespace detail

FunctionPtr stop_gradient(const Variable& x, const std::string& name) {
    return detail::FunctionAccess::make_primitive(PrimitiveOp::stop_gradient, {x}, {}, name);
}

FunctionPtr alias(const Variable& x, const std::string& name) {
    return detail::FunctionAccess::make_primitive(PrimitiveOp::pass, {x}, {}, name);
}

FunctionPtr dropout(const Variable& x, double dropout_rate, uint64_t seed, const std::string& name) {
    CTK_CHECK(dropout_rate >= 0.0 && dropout_rate < 1.0, ValueError, "dropout '", name, "': rate ",
              dropout_rate, " must be in [0, 1)");
    const uint64_t s = seed == kSentinelSeed ? next_random_seed() : seed;
    return detail::FunctionAccess::make_primitive(
        PrimitiveOp::dropout, {x},
        Attributes{{"dropoutRate", dropout_rate}, {"rngSeed", static_cast<int64_t>(s)}}, name);
}

}  // namespace ctk
