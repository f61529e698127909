// STUB: replaced by the real implementation.
#include "kernels/cpu/cpu_common.h"

namespace ctk::cpu {
void register_convolution(KernelTable&) {}
}  // namespace ctk::cpu
