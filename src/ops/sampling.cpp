// Sampling ops: random_sample and random_sample_inclusion_frequency (CNTK's RandomSample and
// RandomSampleInclusionFrequency), and nce_loss, the composite built on them.
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

void register_sampling_ops(OpTable& t) {
    t.add(PrimitiveOp::random_sample, OpDef{"RandomSample", 1, 1, infer_not_yet, nullptr, nullptr});
    t.add(PrimitiveOp::random_sample_inclusion_frequency,
          OpDef{"RandomSampleInclusionFrequency", 1, 1, infer_not_yet, nullptr, nullptr});
}

}  // namespace detail

FunctionPtr random_sample(const Variable& weights, int64_t num_samples, bool allow_duplicates, uint64_t seed,
                          const std::string& name) {
    (void)num_samples, (void)allow_duplicates, (void)seed;
    return detail::make_op(PrimitiveOp::random_sample, {weights}, {}, name);
}

FunctionPtr random_sample_inclusion_frequency(const Variable& weights, int64_t num_samples,
                                              bool allow_duplicates, uint64_t seed, const std::string& name) {
    (void)num_samples, (void)allow_duplicates, (void)seed;
    return detail::make_op(PrimitiveOp::random_sample_inclusion_frequency, {weights}, {}, name);
}

FunctionPtr nce_loss(const Variable&, const Variable&, const Variable&, const Variable&, const Variable&,
                     int64_t, bool, uint64_t, const std::string& name) {
    CTK_THROW(ValueError, "nce_loss '", name, "': not implemented yet");
}

}  // namespace ctk
