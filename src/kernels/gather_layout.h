// Internal, shared by the CPU and CUDA gather kernels: how gather's operands advance over its output.
#pragma once

#include <utility>

#include "ctk/core/shape.h"

namespace ctk::detail {

// Over the output's axes (data.shape[:axis] + indices.shape + data.shape[axis+1:]), data advances along
// its own axes and stays put along those that come from the indices; the indices do the opposite. The
// indexed axis enters through the loaded index. Returns (data strides, index strides), in bytes.
inline std::pair<Dims, Dims> gather_strides(const Dims& data_strides, const Dims& idx_strides, int axis) {
    Dims ds(data_strides.begin(), data_strides.begin() + axis), is(static_cast<size_t>(axis), 0);
    ds.resize(ds.size() + idx_strides.size(), 0);
    is.insert(is.end(), idx_strides.begin(), idx_strides.end());
    ds.insert(ds.end(), data_strides.begin() + axis + 1, data_strides.end());
    is.resize(ds.size(), 0);
    return {ds, is};
}

}  // namespace ctk::detail
