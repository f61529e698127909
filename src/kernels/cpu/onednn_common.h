// Internal: the oneDNN CPU engine and stream, and memory descriptors built from ctk tensors (any
// strides, so views need no copy). oneDNN runs on the shared OpenMP pool.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include "ctk/tensor.h"

namespace ctk::cpu::onednn {

dnnl::engine& engine();
// A stream for the calling thread (oneDNN CPU streams are cheap, but not thread-safe to share).
dnnl::stream& stream();

dnnl::memory::data_type data_type(DataType dtype);  // throws TypeError for types oneDNN lacks
// A descriptor with the tensor's own dims and strides.
dnnl::memory::desc desc_of(const Tensor& t);
// A memory object over the tensor's data (no copy).
dnnl::memory memory_of(const Tensor& t);
dnnl::memory memory_of(const Tensor& t, const dnnl::memory::desc& desc);

// Converts oneDNN's exceptions into ctk errors that name the op.
[[noreturn]] void rethrow(const char* op, const dnnl::error& e);

}  // namespace ctk::cpu::onednn
