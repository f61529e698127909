// STUB: replaced by the real implementation.
#include "ctk/ops.h"

namespace ctk {

BatchNormResult batch_norm_training(const Tensor&, const Tensor&, const Tensor&, const BatchNormAttrs&) { CTK_THROW(NotImplementedError, "bn"); }
Tensor batch_norm_inference(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const BatchNormAttrs&) { CTK_THROW(NotImplementedError, "bn"); }
BatchNormGrads batch_norm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&, const BatchNormAttrs&) { CTK_THROW(NotImplementedError, "bn"); }
}  // namespace ctk
