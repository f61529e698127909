// STUB: replaced by the real implementation.
#include "ctk/ops.h"

namespace ctk {

PoolResult pooling(const Tensor&, const PoolAttrs&, bool) { CTK_THROW(NotImplementedError, "pooling"); }
Tensor pooling_backward(const Tensor&, const Tensor&, const Tensor&, const PoolAttrs&) { CTK_THROW(NotImplementedError, "pooling"); }
}  // namespace ctk
