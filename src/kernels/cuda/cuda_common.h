// Internal to the CUDA kernels: each kernel family's registration entry point.
#pragma once

#include <cuda_runtime_api.h>

#include "ctk/kernels/kernel_table.h"

namespace ctk::cuda {

inline cudaStream_t stream_of(const KernelCall& call) {
    return static_cast<cudaStream_t>(call.ctx.stream);
}

void register_elementwise(KernelTable& t);  // elementwise.cu
void register_reduce(KernelTable& t);       // reduce.cu
void register_softmax(KernelTable& t);      // softmax.cu
void register_matmul(KernelTable& t);       // matmul.cpp (cuBLASLt)
void register_convolution(KernelTable& t);  // cudnn_convolution.cpp
void register_pooling(KernelTable& t);      // cudnn_pooling.cpp
void register_batch_norm(KernelTable& t);   // cudnn_batch_norm.cpp
void register_dropout(KernelTable& t);      // dropout.cu
void register_indexing(KernelTable& t);     // indexing.cu
void register_roi_pooling(KernelTable& t);  // roi_pooling.cu

}  // namespace ctk::cuda
