// Tensor: a typed, shaped view (strides and offset in elements) over a shared Storage.
// Views (slice, transpose, permute, broadcast_to, view) never copy; contiguous(), clone() and to() do.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "ctk/core/dtype.h"
#include "ctk/core/error.h"
#include "ctk/core/shape.h"
#include "ctk/core/storage.h"

namespace ctk {

// The bytes that `dims` elements of `dtype` take, checked: throws ValueError naming `what`, the shape and
// the dtype when the count passes what an allocation can be asked for (PTRDIFF_MAX bytes).
size_t checked_nbytes(const Dims& dims, DataType dtype, std::string_view what);

class Tensor {
public:
    Tensor() = default;  // an undefined tensor

    // ---- factories ----
    static Tensor empty(const Shape& shape, DataType dtype = DataType::f32, Device device = Device::cpu());
    static Tensor zeros(const Shape& shape, DataType dtype = DataType::f32, Device device = Device::cpu());
    static Tensor ones(const Shape& shape, DataType dtype = DataType::f32, Device device = Device::cpu());
    static Tensor full(const Shape& shape, double value, DataType dtype = DataType::f32,
                       Device device = Device::cpu());
    static Tensor scalar(double value, DataType dtype = DataType::f32);
    // 0, 1, ..., n-1 reshaped to `shape`.
    static Tensor arange(const Shape& shape, DataType dtype = DataType::f32);
    template <typename T>
    static Tensor from_vector(const std::vector<T>& values, const Shape& shape);
    // Wraps existing memory without copying; `keep_alive` owns it. Strides in elements; checked to
    // stay inside [data, data + bytes).
    static Tensor wrap(void* data, size_t bytes, const Shape& shape, const Dims& strides, DataType dtype,
                       Device device, std::shared_ptr<void> keep_alive);

    // ---- properties ----
    bool defined() const { return storage_ != nullptr; }
    const Shape& shape() const { return shape_; }
    int rank() const { return shape_.rank(); }
    int64_t dim(int axis) const { return shape_.dim(axis); }
    int64_t numel() const { return shape_.numel(); }
    DataType dtype() const { return dtype_; }
    Device device() const;
    const Dims& strides() const { return strides_; }
    int64_t offset() const { return offset_; }
    const std::shared_ptr<Storage>& storage() const { return storage_; }
    bool is_contiguous() const;
    size_t element_size() const { return size_of(dtype_); }
    // Address of the element at index 0 (storage base + offset).
    void* raw_data() const;
    // Typed address of element 0; throws TypeError if T is not the tensor's dtype.
    template <typename T>
    T* data() const;
    // True if `other` views (part of) the same storage.
    bool shares_storage(const Tensor& other) const { return storage_ && storage_ == other.storage_; }

    // ---- views (no copies) ----
    Tensor slice(int axis, int64_t begin, int64_t end, int64_t step = 1) const;
    Tensor select(int axis, int64_t index) const;  // drops the axis
    Tensor permute(const std::vector<int>& order) const;
    Tensor transpose(int axis0, int axis1) const;
    Tensor broadcast_to(const Shape& shape) const;
    Tensor expand_dims(int axis) const;
    Tensor squeeze(int axis) const;
    // A view with new dims (one may be -1); throws ShapeError when the strides cannot express it.
    Tensor view(const Dims& dims) const;
    Tensor as_strided(const Shape& shape, const Dims& strides, int64_t offset) const;

    // ---- copies ----
    Tensor reshape(const Dims& dims) const;  // a view when possible, otherwise a copy
    Tensor contiguous() const;               // this tensor if already contiguous
    Tensor clone() const;                    // always a new contiguous tensor
    Tensor to(DataType dtype) const;         // a converted copy (this tensor if dtype matches)
    Tensor to(Device device) const;          // a copy on `device` (this tensor if already there)
    // Copies src into this tensor, broadcasting src and converting its dtype.
    void copy_from(const Tensor& src);
    void fill(double value);

    // ---- element access (for tests and small tensors; slow) ----
    double item() const;  // the single element of a tensor with numel 1
    double at(const Dims& index) const;
    void set(const Dims& index, double value);
    template <typename T>
    std::vector<T> to_vector() const;  // row-major values converted to T

    std::string to_string() const;  // "Tensor(float32, [2, 3], CPU)"

private:
    std::shared_ptr<Storage> storage_;
    Shape shape_;
    Dims strides_;
    int64_t offset_ = 0;
    DataType dtype_ = DataType::f32;

    void check_view_in_bounds(const char* op) const;
    int64_t element_offset(const Dims& index) const;
};

// Channels-last: an [N, C, spatial...] tensor laid out in memory as [N, spatial..., C] (oneDNN's nwc,
// nhwc, ndhwc). CPU convolutions write their activations so, and the ops between two convolutions
// (batch normalization, pooling, element-wise) keep the layout, so that no reorder runs between them;
// anything else reads such a tensor through its strides or .contiguous() (docs/foundation.md).
Dims channels_last_strides(const Shape& shape);  // rank >= 3
// True when t's strides are channels-last and not also row-major (a channel or spatial size of 1 makes
// the two layouts one).
bool is_channels_last(const Tensor& t);
Tensor empty_channels_last(const Shape& shape, DataType dtype, Device device = Device::cpu());
// An uninitialised tensor of `shape` and `dtype` on like's device, channels-last when `like` is and
// `shape` has like's rank (the same axes: an element-wise result, a pooled map), row-major otherwise.
Tensor empty_in_layout_of(const Tensor& like, const Shape& shape, DataType dtype);

// Values and conversions through double, for element access and reference code.
double load_as_double(const void* p, DataType dtype);
void store_from_double(void* p, DataType dtype, double value);

template <typename T>
T* Tensor::data() const {
    CTK_CHECK(dtype_v<T> == dtype_, TypeError, "tensor of dtype ", dtype_name(dtype_), " accessed as ",
              dtype_name(dtype_v<T>));
    return static_cast<T*>(raw_data());
}

template <typename T>
Tensor Tensor::from_vector(const std::vector<T>& values, const Shape& shape) {
    CTK_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), ShapeError,
              "from_vector: ", values.size(), " values do not fill shape ", shape.to_string());
    Tensor t = empty(shape, dtype_v<T>);
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
}

template <typename T>
std::vector<T> Tensor::to_vector() const {
    Tensor c = to(Device::cpu()).contiguous().to(dtype_v<T>);
    const T* p = c.data<T>();
    return std::vector<T>(p, p + c.numel());
}

}  // namespace ctk
