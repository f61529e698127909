// STUB: replaced by the real implementation.
#include "ctk/ops.h"

namespace ctk {

DropoutResult dropout(const Tensor&, double, Generator&) { CTK_THROW(NotImplementedError, "dropout"); }
}  // namespace ctk
