// Internal to the CUDA kernels: cuDNN handles (one per device, bound to the ctk stream per call), error
// checking, descriptors that clean up after themselves, and the workspace limit.
#pragma once

#include <cudnn.h>

#include "ctk/error.h"
#include "ctk/tensor.h"
#include "kernels/cuda/cuda_common.h"

namespace ctk::cuda {

#define CTK_CUDNN_CHECK(call)                                                 \
    do {                                                                      \
        cudnnStatus_t st_ = (call);                                           \
        CTK_CHECK(st_ == CUDNN_STATUS_SUCCESS, DeviceError, "cuDNN: ", #call, \
                  " failed: ", cudnnGetErrorString(st_));                     \
    } while (0)

// The device's cuDNN handle, set to `stream`.
cudnnHandle_t cudnn_handle(Device device, cudaStream_t stream);
cudnnDataType_t cudnn_type(DataType dtype);
// The most workspace a convolution algorithm may use: CTK_CUDNN_WORKSPACE_MB, default 1024 MiB.
size_t cudnn_workspace_limit();

struct TensorDesc {
    cudnnTensorDescriptor_t h = nullptr;
    TensorDesc(DataType dtype, const Dims& dims);  // packed NC... layout
    ~TensorDesc() { cudnnDestroyTensorDescriptor(h); }
    TensorDesc(const TensorDesc&) = delete;
    TensorDesc& operator=(const TensorDesc&) = delete;
};

}  // namespace ctk::cuda
