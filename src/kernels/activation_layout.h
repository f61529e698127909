// Where the op functions allocate channels-last results (ctk/core/tensor.h): on the CPU in f32 and bf16,
// whose oneDNN kernels read and write that layout. f64 (the reference kernels) and f16 results, and those on
// other devices, are row-major. Element-wise ops, whose loops take any strides, use empty_in_layout_of.
#pragma once

#include "ctk/core/tensor.h"

namespace ctk::detail {

inline bool cpu_kernels_take_channels_last(const Tensor& like) {
    return like.device().is_cpu() && (like.dtype() == DataType::f32 || like.dtype() == DataType::bf16);
}

// A result of `shape` for an op on `x`: in x's layout where the kernels take channels-last, else row-major.
inline Tensor activation_in_layout_of(const Tensor& x, const Shape& shape) {
    return cpu_kernels_take_channels_last(x) ? empty_in_layout_of(x, shape, x.dtype())
                                             : Tensor::empty(shape, x.dtype(), x.device());
}

}  // namespace ctk::detail
