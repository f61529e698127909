// STUB: replaced by the real implementation.
#include "ctk/ops.h"

namespace ctk {

void cntk_auto_pad(int64_t, int64_t, int64_t, int64_t, int64_t&, int64_t&) { CTK_THROW(NotImplementedError, "cntk_auto_pad"); }
Dims conv_output_spatial(const Shape&, const Shape&, const ConvAttrs&) { CTK_THROW(NotImplementedError, "convolution"); }
Tensor convolution(const Tensor&, const Tensor&, const Tensor&, const ConvAttrs&) { CTK_THROW(NotImplementedError, "convolution"); }
Tensor convolution_backward_data(const Tensor&, const Tensor&, const Shape&, const ConvAttrs&) { CTK_THROW(NotImplementedError, "convolution"); }
ConvWeightGrads convolution_backward_weights(const Tensor&, const Tensor&, const Shape&, const ConvAttrs&, bool) { CTK_THROW(NotImplementedError, "convolution"); }
}  // namespace ctk
