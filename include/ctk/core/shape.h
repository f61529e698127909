// Shape: the dims of a tensor, row-major (last axis fastest), as NumPy and CNTK's Python API show them.
// Model files store CNTK's column-major order; the conversion lives in the model-file code.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace ctk {

using Dims = std::vector<int64_t>;

// The most axes a shape built from an argument may have (CNTK v1 files cap their ranks at the same):
// an axis index past it is an error, not a request for millions of unit axes.
inline constexpr int kMaxRank = 64;

class Shape {
public:
    Shape() = default;
    // Throw ShapeError for a negative dim and ValueError for a shape whose element count passes int64.
    Shape(std::initializer_list<int64_t> dims);
    explicit Shape(Dims dims);

    int rank() const { return static_cast<int>(dims_.size()); }
    int64_t operator[](int axis) const { return dims_[static_cast<size_t>(axis)]; }
    int64_t& operator[](int axis) { return dims_[static_cast<size_t>(axis)]; }
    int64_t dim(int axis) const;  // negative axes count from the end; throws ValueError
    const Dims& dims() const { return dims_; }
    int64_t numel() const;
    bool empty() const { return numel() == 0; }

    // Normalises a possibly negative axis into [0, rank); throws ValueError naming `what`.
    int normalize_axis(int axis, const char* what = "axis") const;
    // Row-major (C-order) strides in elements.
    Dims contiguous_strides() const;

    std::string to_string() const;  // "[2, 3]"
    bool operator==(const Shape& other) const { return dims_ == other.dims_; }
    bool operator!=(const Shape& other) const { return dims_ != other.dims_; }

private:
    Dims dims_;
};

// NumPy broadcasting of two shapes; throws ShapeError naming `op` and both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);

std::string dims_to_string(const Dims& dims);

// The number of elements of `dims`, checked: throws ValueError naming `what` and the dims when a dim is
// negative or the count passes int64's range. Every count that sizes memory goes through this (or
// checked_nbytes in tensor.h), so that no absurd shape wraps around into a small allocation.
int64_t checked_numel(const Dims& dims, std::string_view what);

}  // namespace ctk
