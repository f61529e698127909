// STUB: replaced by the real implementation.
#include "ctk/ops.h"

namespace ctk {

Tensor gather(const Tensor&, const Tensor&, int) { CTK_THROW(NotImplementedError, "gather"); }
Tensor scatter_add(const Tensor&, const Tensor&, const Tensor&, int) { CTK_THROW(NotImplementedError, "scatter_add"); }
Tensor permute(const Tensor&, const std::vector<int>&) { CTK_THROW(NotImplementedError, "permute"); }
Tensor concat(const std::vector<Tensor>&, int) { CTK_THROW(NotImplementedError, "concat"); }
Tensor pad(const Tensor&, const Dims&, const Dims&, PadMode, double) { CTK_THROW(NotImplementedError, "pad"); }
Tensor one_hot(const Tensor&, int64_t, int, DataType) { CTK_THROW(NotImplementedError, "one_hot"); }
TopKResult top_k(const Tensor&, int64_t, int) { CTK_THROW(NotImplementedError, "top_k"); }
}  // namespace ctk
