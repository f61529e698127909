// Reduction op API: axis validation, output shapes, sum_to_shape.
#include <algorithm>

#include "ctk/kernels/kernel_table.h"
#include "ctk/kernels/tensor_ops.h"

namespace ctk {

namespace {

// Sorted, unique, non-negative axes; empty means all.
std::vector<int> normalize_axes(const char* op, const Tensor& x, const std::vector<int>& axes) {
    std::vector<int> out;
    if (axes.empty()) {
        for (int i = 0; i < x.rank(); ++i) out.push_back(i);
        return out;
    }
    for (int a : axes) {
        CTK_CHECK(a >= -x.rank() && a < x.rank(), ValueError, op, ": axis ", a,
                  " is out of range for operand 'x' of shape ", x.shape().to_string());
        int n = a < 0 ? a + x.rank() : a;
        CTK_CHECK(std::find(out.begin(), out.end(), n) == out.end(), ValueError, op, ": axis ", a,
                  " is given twice for operand 'x' of shape ", x.shape().to_string());
        out.push_back(n);
    }
    std::sort(out.begin(), out.end());
    return out;
}

Shape reduced_shape(const Tensor& x, const std::vector<int>& axes, bool keepdims) {
    Dims dims;
    for (int i = 0; i < x.rank(); ++i) {
        bool reduced = std::binary_search(axes.begin(), axes.end(), i);
        if (!reduced)
            dims.push_back(x.shape()[i]);
        else if (keepdims)
            dims.push_back(1);
    }
    return Shape(dims);
}

void check_operand(const char* op, const Tensor& x) {
    CTK_CHECK(x.defined(), ValueError, op, ": operand 'x' is undefined");
    CTK_CHECK(is_floating(x.dtype()), TypeError, op, ": operand 'x' of shape ", x.shape().to_string(),
              " has dtype ", dtype_name(x.dtype()), "; a floating-point dtype is required");
}

}  // namespace

Tensor reduce(OpKind op, const Tensor& x, const std::vector<int>& axes, bool keepdims) {
    CTK_CHECK(is_reduction(op), ValueError, "reduce: ", op_name(op), " is not a reduction");
    check_operand(op_name(op), x);
    std::vector<int> ax = normalize_axes(op_name(op), x, axes);
    if (op == OpKind::reduce_max || op == OpKind::reduce_min) {
        for (int a : ax)
            CTK_CHECK(x.shape()[a] > 0, ValueError, op_name(op), ": cannot reduce the empty axis ", a,
                      " of operand 'x' of shape ", x.shape().to_string());
    }
    if (is_channels_last(x)) {
        // Reduce in memory order ([N, spatial..., C], a row-major view): summing a bias gradient over all
        // but the channels is then a column sum over rows of C, not a walk with stride C.
        std::vector<int> order{0};
        for (int i = 2; i < x.rank(); ++i) order.push_back(i);
        order.push_back(1);
        std::vector<int> position(order.size());  // where each axis went; also the permutation back
        for (size_t i = 0; i < order.size(); ++i)
            position[static_cast<size_t>(order[i])] = static_cast<int>(i);
        std::vector<int> memory_axes;
        for (int a : ax) memory_axes.push_back(position[static_cast<size_t>(a)]);
        const Tensor r = reduce(op, x.permute(order), memory_axes, true).permute(position);
        return keepdims ? r : r.reshape(reduced_shape(x, ax, false).dims());
    }
    Tensor out = Tensor::empty(reduced_shape(x, ax, keepdims), x.dtype(), x.device());
    const Tensor inputs[] = {x};
    dispatch(op, inputs, std::span<Tensor>(&out, 1), ReduceAttrs{ax, keepdims});
    return out;
}

Tensor reduce_sum(const Tensor& x, const std::vector<int>& axes, bool k) {
    return reduce(OpKind::reduce_sum, x, axes, k);
}
Tensor reduce_mean(const Tensor& x, const std::vector<int>& axes, bool k) {
    return reduce(OpKind::reduce_mean, x, axes, k);
}
Tensor reduce_max(const Tensor& x, const std::vector<int>& axes, bool k) {
    return reduce(OpKind::reduce_max, x, axes, k);
}
Tensor reduce_min(const Tensor& x, const std::vector<int>& axes, bool k) {
    return reduce(OpKind::reduce_min, x, axes, k);
}
Tensor reduce_prod(const Tensor& x, const std::vector<int>& axes, bool k) {
    return reduce(OpKind::reduce_prod, x, axes, k);
}
Tensor reduce_log_sum_exp(const Tensor& x, const std::vector<int>& axes, bool k) {
    return reduce(OpKind::reduce_log_sum_exp, x, axes, k);
}
Tensor reduce_l1(const Tensor& x, const std::vector<int>& axes, bool k) {
    return reduce(OpKind::reduce_l1, x, axes, k);
}
Tensor reduce_l2(const Tensor& x, const std::vector<int>& axes, bool k) {
    return reduce(OpKind::reduce_l2, x, axes, k);
}
Tensor reduce_sum_square(const Tensor& x, const std::vector<int>& axes, bool k) {
    return reduce(OpKind::reduce_sum_square, x, axes, k);
}

namespace {
Tensor arg_reduce(OpKind op, const Tensor& x, int axis, bool keepdims) {
    check_operand(op_name(op), x);
    CTK_CHECK(x.rank() > 0, ValueError, op_name(op), ": operand 'x' is a scalar; it has no axis ", axis);
    std::vector<int> ax = normalize_axes(op_name(op), x, {axis});
    CTK_CHECK(x.shape()[ax[0]] > 0, ValueError, op_name(op), ": axis ", axis, " of operand 'x' of shape ",
              x.shape().to_string(), " is empty");
    Tensor out = Tensor::empty(reduced_shape(x, ax, keepdims), DataType::i64, x.device());
    const Tensor inputs[] = {x};
    dispatch(op, inputs, std::span<Tensor>(&out, 1), ReduceAttrs{ax, keepdims});
    return out;
}
}  // namespace

Tensor argmax(const Tensor& x, int axis, bool keepdims) {
    return arg_reduce(OpKind::argmax, x, axis, keepdims);
}
Tensor argmin(const Tensor& x, int axis, bool keepdims) {
    return arg_reduce(OpKind::argmin, x, axis, keepdims);
}

Tensor sum_to_shape(const Tensor& x, const Shape& shape) {
    if (x.shape() == shape) return x;
    CTK_CHECK(shape.rank() <= x.rank(), ShapeError, "sum_to_shape: cannot sum shape ", x.shape().to_string(),
              " down to ", shape.to_string());
    std::vector<int> axes;
    int lead = x.rank() - shape.rank();
    for (int i = 0; i < x.rank(); ++i) {
        if (i < lead) {
            axes.push_back(i);
        } else if (shape[i - lead] != x.shape()[i]) {
            CTK_CHECK(shape[i - lead] == 1, ShapeError, "sum_to_shape: cannot sum shape ",
                      x.shape().to_string(), " down to ", shape.to_string());
            axes.push_back(i);
        }
    }
    if (axes.empty()) return x.reshape(shape.dims());
    return reduce_sum(x, axes, true).reshape(shape.dims());
}

}  // namespace ctk
