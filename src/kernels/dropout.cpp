// Dropout API: rate validation, allocation, and the generator bookkeeping. The kernel draws element i
// from the Philox counter offset + i and the generator advances by numel, the same convention as
// Generator::bernoulli, so dropout(x, rate) equals x * bernoulli(1 - rate) / (1 - rate) at that offset.
#include "ctk/kernels/kernel_table.h"
#include "ctk/kernels/tensor_ops.h"

namespace ctk {

DropoutResult dropout(const Tensor& x, double rate, Generator& generator) {
    CTK_CHECK(x.defined(), ValueError, "dropout: operand 'x' is undefined");
    CTK_CHECK(is_floating(x.dtype()), TypeError, "dropout: operand 'x' of shape ", x.shape().to_string(),
              " has dtype ", dtype_name(x.dtype()), "; a floating-point dtype is required");
    // Written so that NaN fails too; rate 1 would scale by 1 / 0.
    CTK_CHECK(rate >= 0.0 && rate < 1.0, ValueError, "dropout: rate must be in [0, 1), got ", rate,
              " for operand 'x' of shape ", x.shape().to_string());
    // Row-major outputs whatever x's layout: the mask's random stream is indexed by the row-major
    // position, the same on every device and layout.
    DropoutResult r{Tensor::empty(x.shape(), x.dtype(), x.device()),
                    Tensor::empty(x.shape(), x.dtype(), x.device())};
    if (x.numel() > 0) {
        const Tensor inputs[] = {x};
        Tensor outputs[] = {r.y, r.mask};
        dispatch(OpKind::dropout, inputs, outputs, DropoutAttrs{rate, generator.seed(), generator.offset()});
    }
    generator.set_offset(generator.offset() + static_cast<uint64_t>(x.numel()));
    return r;
}

}  // namespace ctk
