// CNTK's argument forms that ctk's graph ops take through a rewrite (ops.cpp binds them): gather along
// an axis, a negative slice stride, convolutions of an operand without a channel axis (reduction_rank=0).
#pragma once

#include <string>
#include <vector>

#include "convert.h"

namespace ctk::python {

// gather(reference, indices, axis): NumPy's take along a static axis of the reference.
FunctionPtr gather_along(const Variable& ref, const Variable& indices, int axis, const std::string& name);
// x with one static axis in reverse order (a negative slice stride).
FunctionPtr reverse_along(const Variable& x, int axis, const std::string& name);
// convolution(..., reduction_rank=0): a kernel [filters, spatial...] or [spatial...] over an operand
// [spatial...]; the output keeps a map axis (of 1 without filters), as CNTK's.
FunctionPtr convolution_without_channels(const Variable& w, const Variable& x, const Dims& strides,
                                         const std::vector<bool>& pads, const Dims& dilation,
                                         const std::string& name);
// convolution_transpose(..., reduction_rank=0): a kernel of the operand's rank; output_shape holds the
// spatial dims.
FunctionPtr convolution_transpose_without_channels(const Variable& w, const Variable& x, const Dims& strides,
                                                   const std::vector<bool>& pads, const Dims& output_shape,
                                                   const Dims& dilation, const std::string& name);

}  // namespace ctk::python
