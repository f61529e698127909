// STUB: replaced by the real implementation.
#include "ctk/ops.h"

namespace ctk {

}  // namespace ctk
