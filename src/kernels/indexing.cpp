// Indexing and layout op API (gather, scatter_add, permute, concat, pad, one_hot, top_k): operand checks
// with typed errors, output shapes, allocation, dispatch. Index operands are checked here, once, on the
// host, and reach the kernels as contiguous int64 tensors whose values are known to be in range.
#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "ctk/kernels/kernel_table.h"
#include "ctk/kernels/tensor_ops.h"
#include "kernels/pad_source.h"

namespace ctk {

namespace {

void check_defined(const char* op, const char* operand, const Tensor& t) {
    CTK_CHECK(t.defined(), ValueError, op, ": operand '", operand, "' is undefined");
}

// Normalises an axis of an operand (or of a result of rank `rank`), naming the op and the shape.
int checked_axis(const char* op, const char* operand, const Shape& shape, int axis, int rank) {
    CTK_CHECK(axis >= -rank && axis < rank, ValueError, op, ": axis ", axis, " is out of range [", -rank,
              ", ", rank, ") for operand '", operand, "' of shape ", shape.to_string());
    return axis < 0 ? axis + rank : axis;
}

// Returns `indices` as a contiguous int64 tensor after checking that every value is an integer (floating
// indices must hold integral values, as CNTK feeds them) in [0, size). `where` names the indexed axis.
Tensor checked_indices(const char* op, const Tensor& indices, int64_t size, const std::string& where) {
    // The scan reads the values on the host, so indices on a GPU make a round trip (and the error names
    // the bad value exactly). Checking inside the kernels instead would save the copies.
    if (!indices.device().is_cpu())
        return checked_indices(op, indices.to(Device::cpu()), size, where).to(indices.device());
    Tensor src = indices.contiguous();
    const bool reuse = src.dtype() == DataType::i64;
    Tensor out = reuse ? src : Tensor::empty(src.shape(), DataType::i64, src.device());
    const int64_t n = src.numel();
    if (n == 0) return out;
    int64_t* dst = out.data<int64_t>();
    auto fail_range = [&](const auto& value) {
        CTK_THROW(IndexError, op, ": index ", value, " is out of range [0, ", size, ") for ", where);
    };
    visit_dtype(src.dtype(), [&](auto tag) {
        using T = decltype(tag);
        const T* p = static_cast<const T*>(src.raw_data());
        for (int64_t i = 0; i < n; ++i) {
            int64_t k;
            if constexpr (std::is_integral_v<T>) {
                if (static_cast<int64_t>(p[i]) < 0 || static_cast<int64_t>(p[i]) >= size) fail_range(+p[i]);
                k = static_cast<int64_t>(p[i]);
            } else {
                double v;
                if constexpr (std::is_same_v<T, double>)
                    v = p[i];
                else
                    v = static_cast<float>(p[i]);  // f32, f16 and bf16 all widen exactly through float
                CTK_CHECK(std::isfinite(v) && v == std::floor(v), ValueError, op, ": index ", v,
                          " in operand 'indices' of shape ", indices.shape().to_string(),
                          " is not an integer (floating indices must hold integral values)");
                if (v < 0 || v >= static_cast<double>(size)) fail_range(v);
                k = static_cast<int64_t>(v);
            }
            if (!reuse) dst[i] = k;
        }
    });
    return out;
}

std::string axis_description(int axis, const char* operand, const Shape& shape) {
    return detail::concat("axis ", axis, " of operand '", operand, "' of shape ", shape.to_string());
}

// NumPy take: data.shape[:axis] + indices.shape + data.shape[axis+1:].
Shape gather_shape(const Shape& data, const Shape& indices, int axis) {
    Dims dims(data.dims().begin(), data.dims().begin() + axis);
    dims.insert(dims.end(), indices.dims().begin(), indices.dims().end());
    dims.insert(dims.end(), data.dims().begin() + axis + 1, data.dims().end());
    return Shape(dims);
}

}  // namespace

Tensor gather(const Tensor& data, const Tensor& indices, int axis) {
    check_defined("gather", "data", data);
    check_defined("gather", "indices", indices);
    CTK_CHECK(data.rank() > 0, ValueError, "gather: operand 'data' of shape ", data.shape().to_string(),
              " is a scalar; it has no axis to index");
    const int a = checked_axis("gather", "data", data.shape(), axis, data.rank());
    Tensor idx = checked_indices("gather", indices, data.dim(a), axis_description(a, "data", data.shape()));
    return detail::gather_of_checked(data, idx, a);
}

Tensor scatter_add(const Tensor& target, const Tensor& indices, const Tensor& updates, int axis) {
    check_defined("scatter_add", "target", target);
    check_defined("scatter_add", "indices", indices);
    check_defined("scatter_add", "updates", updates);
    CTK_CHECK(target.rank() > 0, ValueError, "scatter_add: operand 'target' of shape ",
              target.shape().to_string(), " is a scalar; it has no axis to index");
    CTK_CHECK(updates.dtype() == target.dtype(), TypeError, "scatter_add: operand 'updates' of shape ",
              updates.shape().to_string(), " has dtype ", dtype_name(updates.dtype()),
              " but operand 'target' of shape ", target.shape().to_string(), " has dtype ",
              dtype_name(target.dtype()));
    const int a = checked_axis("scatter_add", "target", target.shape(), axis, target.rank());
    Tensor idx =
        checked_indices("scatter_add", indices, target.dim(a), axis_description(a, "target", target.shape()));
    const Shape expected = gather_shape(target.shape(), idx.shape(), a);
    CTK_CHECK(updates.shape() == expected, ShapeError, "scatter_add: operand 'updates' has shape ",
              updates.shape().to_string(), " but target ", target.shape().to_string(), " indexed by indices ",
              idx.shape().to_string(), " along axis ", a, " needs ", expected.to_string());
    return detail::scatter_add_of_checked(target, idx, updates, a);
}

Tensor permute(const Tensor& x, const std::vector<int>& order) {
    check_defined("permute", "x", x);
    CTK_CHECK(static_cast<int>(order.size()) == x.rank(), ValueError, "permute: order ",
              dims_to_string(Dims(order.begin(), order.end())), " has ", order.size(),
              " axes but operand 'x' of shape ", x.shape().to_string(), " has rank ", x.rank());
    std::vector<int> normalized;
    std::vector<bool> seen(order.size(), false);
    Dims dims;
    for (int axis : order) {
        const int a = checked_axis("permute", "x", x.shape(), axis, x.rank());
        CTK_CHECK(!seen[static_cast<size_t>(a)], ValueError, "permute: axis ", axis,
                  " appears twice in order ", dims_to_string(Dims(order.begin(), order.end())),
                  " for operand 'x' of shape ", x.shape().to_string());
        seen[static_cast<size_t>(a)] = true;
        normalized.push_back(a);
        dims.push_back(x.dim(a));
    }
    Tensor out = Tensor::empty(Shape(dims), x.dtype(), x.device());
    if (out.numel() == 0) return out;
    const Tensor inputs[] = {x};
    dispatch(OpKind::permute, inputs, std::span<Tensor>(&out, 1), PermuteAttrs{normalized});
    return out;
}

Tensor concat(const std::vector<Tensor>& xs, int axis) {
    CTK_CHECK(!xs.empty(), ValueError, "concat: no operands were given");
    for (size_t i = 0; i < xs.size(); ++i)
        CTK_CHECK(xs[i].defined(), ValueError, "concat: operand ", i, " is undefined");
    const Tensor& first = xs[0];
    CTK_CHECK(first.rank() > 0, ValueError, "concat: operand 0 of shape ", first.shape().to_string(),
              " is a scalar; scalars have no axis to join along");
    const int a = checked_axis("concat", "0", first.shape(), axis, first.rank());
    Dims dims = first.shape().dims();
    dims[static_cast<size_t>(a)] = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
        const Tensor& x = xs[i];
        CTK_CHECK(x.dtype() == first.dtype(), TypeError, "concat: operand ", i, " of shape ",
                  x.shape().to_string(), " has dtype ", dtype_name(x.dtype()), " but operand 0 of shape ",
                  first.shape().to_string(), " has dtype ", dtype_name(first.dtype()));
        CTK_CHECK(x.device() == first.device(), DeviceError, "concat: operand ", i, " is on ",
                  x.device().to_string(), " but operand 0 is on ", first.device().to_string());
        bool fits = x.rank() == first.rank();
        for (int d = 0; fits && d < x.rank(); ++d) fits = d == a || x.dim(d) == first.dim(d);
        CTK_CHECK(fits, ShapeError, "concat: operand ", i, " of shape ", x.shape().to_string(),
                  " does not match operand 0 of shape ", first.shape().to_string(), " outside axis ", a);
        dims[static_cast<size_t>(a)] += x.dim(a);
    }
    Tensor out = Tensor::empty(Shape(dims), first.dtype(), first.device());
    if (out.numel() == 0) return out;
    dispatch(OpKind::concat, xs, std::span<Tensor>(&out, 1), AxisAttrs{a});
    return out;
}

// CNTK's CONSTANT, REFLECT and SYMMETRIC pads with NumPy's meaning: reflect mirrors about the edge
// element (pad < dim), symmetric mirrors including it (pad <= dim). `value` is used by constant only.
Tensor pad(const Tensor& x, const Dims& lo, const Dims& hi, PadMode mode, double value) {
    check_defined("pad", "x", x);
    CTK_CHECK(static_cast<int>(lo.size()) == x.rank() && static_cast<int>(hi.size()) == x.rank(), ValueError,
              "pad: pads lo ", dims_to_string(lo), " and hi ", dims_to_string(hi),
              " need one entry per axis of operand 'x' of shape ", x.shape().to_string());
    Dims dims = x.shape().dims();
    for (int d = 0; d < x.rank(); ++d) {
        const int64_t l = lo[static_cast<size_t>(d)], h = hi[static_cast<size_t>(d)], n = x.dim(d);
        CTK_CHECK(l >= 0 && h >= 0, ValueError, "pad: negative padding lo ", dims_to_string(lo), ", hi ",
                  dims_to_string(hi), " for operand 'x' of shape ", x.shape().to_string());
        // NumPy's 'reflect' leaves the edge out, so it can mirror at most n - 1 cells; 'symmetric'
        // repeats the edge and can mirror n. Larger pads would need repeated reflection, which CNTK lacks.
        if (mode == PadMode::reflect)
            CTK_CHECK(std::max(l, h) == 0 || std::max(l, h) < n, ValueError, "pad: reflect padding ",
                      std::max(l, h), " on axis ", d, " of operand 'x' of shape ", x.shape().to_string(),
                      " must be smaller than the axis size ", n);
        if (mode == PadMode::symmetric)
            CTK_CHECK(std::max(l, h) <= n, ValueError, "pad: symmetric padding ", std::max(l, h), " on axis ",
                      d, " of operand 'x' of shape ", x.shape().to_string(),
                      " must not exceed the axis size ", n);
        dims[static_cast<size_t>(d)] += l + h;
    }
    Tensor out = Tensor::empty(Shape(dims), x.dtype(), x.device());
    if (out.numel() == 0) return out;
    const Tensor inputs[] = {x};
    dispatch(OpKind::pad, inputs, std::span<Tensor>(&out, 1), PadAttrs{lo, hi, mode, value});
    return out;
}

// The adjoint of pad: the gradient of x from the gradient of pad's output. Constant padding keeps the
// interior; reflect and symmetric padding add each padded axis's mirrored cells back onto the cells they
// copied, one scatter_add per padded axis (the mirrors of different axes compose, as the copies did).
Tensor pad_grad(const Tensor& dy, const Shape& x_shape, const Dims& lo, PadMode mode) {
    check_defined("pad_grad", "dy", dy);
    CTK_CHECK(static_cast<int>(lo.size()) == dy.rank() && x_shape.rank() == dy.rank(), ValueError,
              "pad_grad: pads lo ", dims_to_string(lo), " and operand shape ", x_shape.to_string(),
              " need one entry per axis of the gradient of shape ", dy.shape().to_string());
    Tensor g = dy;
    for (int d = 0; d < dy.rank(); ++d) {
        const int64_t l = lo[static_cast<size_t>(d)], n = x_shape[d], out_n = g.dim(d);
        CTK_CHECK(l >= 0 && out_n >= l + n, ValueError, "pad_grad: the gradient of shape ",
                  dy.shape().to_string(), " does not hold operand shape ", x_shape.to_string(), " at lo ",
                  dims_to_string(lo));
        if (out_n == n) continue;
        if (mode == PadMode::constant) {
            g = g.slice(d, l, l + n);
            continue;
        }
        Tensor source = Tensor::empty(Shape{out_n}, DataType::i64, Device::cpu());
        auto* s = static_cast<int64_t*>(source.raw_data());
        for (int64_t j = 0; j < out_n; ++j) {
            s[j] = detail::pad_source(j - l, n, mode);  // the cell the pad kernels copied
            CTK_CHECK(s[j] >= 0 && s[j] < n, ValueError, "pad_grad: padding ", l, " on axis ", d,
                      " mirrors outside the operand's ", n, " cells");
        }
        Dims target = g.shape().dims();
        target[static_cast<size_t>(d)] = n;
        g = detail::scatter_add_of_checked(Tensor::zeros(Shape(target), g.dtype(), g.device()),
                                           source.to(g.device()), g.contiguous(), d);
    }
    return g.contiguous();
}

// The class axis is inserted at `axis` of the result (-1: last, CNTK's default).
Tensor one_hot(const Tensor& indices, int64_t num_classes, int axis, DataType dtype) {
    check_defined("one_hot", "indices", indices);
    CTK_CHECK(num_classes > 0, ValueError, "one_hot: num_classes must be positive, got ", num_classes,
              " for operand 'indices' of shape ", indices.shape().to_string());
    CTK_CHECK(is_floating(dtype), TypeError, "one_hot: output dtype ", dtype_name(dtype),
              " is not a floating-point dtype");
    // The class axis is an axis of the result, which has one more axis than the indices.
    const int a = checked_axis("one_hot", "indices", indices.shape(), axis, indices.rank() + 1);
    Tensor idx = checked_indices("one_hot", indices, num_classes,
                                 detail::concat(num_classes, " classes (operand 'indices' of shape ",
                                                indices.shape().to_string(), ")"));
    Dims dims = indices.shape().dims();
    dims.insert(dims.begin() + a, num_classes);
    Tensor out = Tensor::empty(Shape(dims), dtype, indices.device());
    if (out.numel() == 0) return out;
    const Tensor inputs[] = {idx};
    dispatch(OpKind::one_hot, inputs, std::span<Tensor>(&out, 1), OneHotAttrs{num_classes, a, dtype}, dtype);
    return out;
}

namespace detail {

Tensor gather_of_checked(const Tensor& data, const Tensor& indices, int axis) {
    CTK_CHECK(indices.dtype() == DataType::i64 && axis >= 0 && axis < data.rank(), ValueError,
              "gather_of_checked: int64 indices and an axis of data are required");
    Tensor out =
        Tensor::empty(gather_shape(data.shape(), indices.shape(), axis), data.dtype(), data.device());
    if (out.numel() == 0) return out;
    const Tensor inputs[] = {data, indices.contiguous()};
    dispatch(OpKind::gather, inputs, std::span<Tensor>(&out, 1), AxisAttrs{axis});
    return out;
}

Tensor scatter_add_of_checked(const Tensor& target, const Tensor& indices, const Tensor& updates, int axis) {
    CTK_CHECK(indices.dtype() == DataType::i64 && axis >= 0 && axis < target.rank() &&
                  updates.shape() == gather_shape(target.shape(), indices.shape(), axis),
              ValueError,
              "scatter_add_of_checked: int64 indices, an axis of target and matching updates are required");
    Tensor out = Tensor::empty(target.shape(), target.dtype(), target.device());
    if (out.numel() == 0) return out;
    const Tensor inputs[] = {target, indices.contiguous(), updates};
    dispatch(OpKind::scatter_add, inputs, std::span<Tensor>(&out, 1), AxisAttrs{axis});
    return out;
}

Tensor one_hot_of_checked(const Tensor& indices, int64_t num_classes, DataType dtype) {
    check_defined("one_hot", "indices", indices);
    CTK_CHECK(indices.dtype() == DataType::i64, TypeError, "one_hot_of_checked: indices must be int64, not ",
              dtype_name(indices.dtype()));
    CTK_CHECK(num_classes > 0 && is_floating(dtype), ValueError, "one_hot_of_checked: ", num_classes,
              " classes of dtype ", dtype_name(dtype));
    Dims dims = indices.shape().dims();
    dims.push_back(num_classes);
    Tensor out = Tensor::empty(Shape(dims), dtype, indices.device());
    if (out.numel() == 0) return out;
    const Tensor inputs[] = {indices.contiguous()};
    dispatch(OpKind::one_hot, inputs, std::span<Tensor>(&out, 1),
             OneHotAttrs{num_classes, indices.rank(), dtype}, dtype);
    return out;
}

}  // namespace detail

// The order reported: larger values first; NaN ranks above every number (argmax's rule, NumPy's for
// maxima); equal values, including +0/-0 and NaN among NaNs, keep the lower index first.
TopKResult top_k(const Tensor& x, int64_t k, int axis) {
    check_defined("top_k", "x", x);
    CTK_CHECK(x.rank() > 0, ValueError, "top_k: operand 'x' of shape ", x.shape().to_string(),
              " is a scalar; it has no axis ", axis);
    const int a = checked_axis("top_k", "x", x.shape(), axis, x.rank());
    CTK_CHECK(k >= 1 && k <= x.dim(a), ValueError, "top_k: k = ", k, " is out of range [1, ", x.dim(a),
              "] for axis ", a, " of operand 'x' of shape ", x.shape().to_string());
    Dims dims = x.shape().dims();
    dims[static_cast<size_t>(a)] = k;
    TopKResult r{Tensor::empty(Shape(dims), x.dtype(), x.device()),
                 Tensor::empty(Shape(dims), DataType::i64, x.device())};
    if (r.values.numel() == 0) return r;
    const Tensor inputs[] = {x};
    Tensor outputs[] = {r.values, r.indices};
    dispatch(OpKind::top_k, inputs, outputs, TopKAttrs{k, a});
    return r;
}

}  // namespace ctk
