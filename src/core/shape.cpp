// Shape arithmetic and NumPy broadcasting.
#include "ctk/core/shape.h"

#include <algorithm>

#include "ctk/core/error.h"

namespace ctk {

namespace {
void check_dims(const Dims& dims) {
    for (int64_t d : dims)
        CTK_CHECK(d >= 0, ShapeError, "shape ", dims_to_string(dims), " has a negative dimension");
    checked_numel(dims, "shape");
}
}  // namespace

Shape::Shape(std::initializer_list<int64_t> dims) : dims_(dims) {
    check_dims(dims_);
}
Shape::Shape(Dims dims) : dims_(std::move(dims)) {
    check_dims(dims_);
}

int64_t Shape::dim(int axis) const {
    return dims_[static_cast<size_t>(normalize_axis(axis))];
}

int64_t Shape::numel() const {
    return checked_numel(dims_, "shape");
}

int64_t checked_numel(const Dims& dims, std::string_view what) {
    int64_t n = 1;
    bool overflow = false;
    for (int64_t d : dims) {
        CTK_CHECK(d >= 0, ValueError, what, ": shape ", dims_to_string(dims), " has a negative dimension");
        overflow = overflow || __builtin_mul_overflow(n, d, &n);
    }
    // A zero dim makes the count 0 whatever the others are; an overflow before it still names a shape
    // no one can mean.
    CTK_CHECK(!overflow, ValueError, what, ": shape ", dims_to_string(dims),
              " has more elements than a 64-bit count can hold");
    return n;
}

int Shape::normalize_axis(int axis, const char* what) const {
    int r = rank();
    CTK_CHECK(axis >= -r && axis < r, ValueError, what, " ", axis, " is out of range for shape ", to_string(),
              " of rank ", r);
    return axis < 0 ? axis + r : axis;
}

Dims Shape::contiguous_strides() const {
    Dims strides(dims_.size());
    int64_t s = 1;
    for (int i = rank() - 1; i >= 0; --i) {
        strides[static_cast<size_t>(i)] = s;
        s *= std::max<int64_t>(dims_[static_cast<size_t>(i)], 1);
    }
    return strides;
}

std::string dims_to_string(const Dims& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) {
        if (i) s += ", ";
        s += std::to_string(dims[i]);
    }
    return s + "]";
}

std::string Shape::to_string() const {
    return dims_to_string(dims_);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
    int r = std::max(a.rank(), b.rank());
    Dims out(static_cast<size_t>(r));
    for (int i = 0; i < r; ++i) {
        int ia = a.rank() - r + i, ib = b.rank() - r + i;
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        CTK_CHECK(da == db || da == 1 || db == 1, ShapeError, op, ": operand shapes ", a.to_string(), " and ",
                  b.to_string(), " cannot be broadcast together (axis ", i - r, ": ", da, " vs ", db, ")");
        out[static_cast<size_t>(i)] = da == 1 ? db : da;
    }
    return Shape(std::move(out));
}

}  // namespace ctk
