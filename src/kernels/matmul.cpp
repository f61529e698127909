// Matrix product API: shape rule with broadcast batch axes and optional transposes.
#include "ctk/kernels/kernel_table.h"
#include "ctk/kernels/tensor_ops.h"

namespace ctk {

Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a, bool trans_b) {
    CTK_CHECK(a.defined() && b.defined(), ValueError, "matmul: undefined operand");
    for (const auto* t : {&a, &b}) {
        const char* name = t == &a ? "a" : "b";
        CTK_CHECK(t->rank() >= 2, ShapeError, "matmul: operand '", name, "' of shape ",
                  t->shape().to_string(), " must have rank >= 2 ([..., rows, cols])");
        CTK_CHECK(is_floating(t->dtype()), TypeError, "matmul: operand '", name, "' of shape ",
                  t->shape().to_string(), " has dtype ", dtype_name(t->dtype()),
                  "; a floating-point dtype is required");
    }
    CTK_CHECK(a.dtype() == b.dtype(), TypeError, "matmul: operand dtypes differ (a ", dtype_name(a.dtype()),
              " ", a.shape().to_string(), ", b ", dtype_name(b.dtype()), " ", b.shape().to_string(), ")");
    int64_t m = trans_a ? a.dim(-1) : a.dim(-2), ka = trans_a ? a.dim(-2) : a.dim(-1);
    int64_t kb = trans_b ? b.dim(-1) : b.dim(-2), n = trans_b ? b.dim(-2) : b.dim(-1);
    CTK_CHECK(ka == kb, ShapeError, "matmul: inner dimensions differ: a ", a.shape().to_string(),
              (trans_a ? " (transposed)" : ""), " has ", ka, " columns but b ", b.shape().to_string(),
              (trans_b ? " (transposed)" : ""), " has ", kb, " rows");
    Dims ab(a.shape().dims().begin(), a.shape().dims().end() - 2);
    Dims bb(b.shape().dims().begin(), b.shape().dims().end() - 2);
    Dims batch = broadcast_shapes(Shape(ab), Shape(bb), "matmul (batch axes)").dims();
    Dims out_dims = batch;
    out_dims.push_back(m);
    out_dims.push_back(n);
    Dims a_full = batch, b_full = batch;
    a_full.insert(a_full.end(), a.shape().dims().end() - 2, a.shape().dims().end());
    b_full.insert(b_full.end(), b.shape().dims().end() - 2, b.shape().dims().end());
    Tensor out = Tensor::empty(Shape(out_dims), a.dtype(), a.device());
    const Tensor inputs[] = {a.broadcast_to(Shape(a_full)), b.broadcast_to(Shape(b_full))};
    dispatch(OpKind::matmul, inputs, std::span<Tensor>(&out, 1), MatmulAttrs{trans_a, trans_b});
    return out;
}

}  // namespace ctk
