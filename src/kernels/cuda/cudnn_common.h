// Internal to the CUDA kernels: cuDNN handles (one per device, bound to the ctk stream per call), error
// checking, descriptors that clean up after themselves, and the workspace limit.
#pragma once

#include <cudnn.h>

#include "ctk/core/error.h"
#include "ctk/core/tensor.h"
#include "kernels/cuda/cuda_common.h"

namespace ctk::cuda {

// cuDNN's entry points, resolved from libcudnn.so.<major> with dlopen on first use (as cuBLASLt's in
// matmul.cpp): ctk's libraries then load on machines without cuDNN, which only a GPU run needs. A missing
// library is a DeviceError naming it, raised by the first call.
struct Cudnn {
    decltype(&cudnnAddTensor) AddTensor;
    decltype(&cudnnConvolutionBackwardBias) ConvolutionBackwardBias;
    decltype(&cudnnConvolutionBackwardData) ConvolutionBackwardData;
    decltype(&cudnnConvolutionBackwardFilter) ConvolutionBackwardFilter;
    decltype(&cudnnConvolutionForward) ConvolutionForward;
    decltype(&cudnnCreate) Create;
    decltype(&cudnnCreateConvolutionDescriptor) CreateConvolutionDescriptor;
    decltype(&cudnnCreateFilterDescriptor) CreateFilterDescriptor;
    decltype(&cudnnCreateTensorDescriptor) CreateTensorDescriptor;
    decltype(&cudnnDestroyConvolutionDescriptor) DestroyConvolutionDescriptor;
    decltype(&cudnnDestroyFilterDescriptor) DestroyFilterDescriptor;
    decltype(&cudnnDestroyTensorDescriptor) DestroyTensorDescriptor;
    decltype(&cudnnFindConvolutionBackwardDataAlgorithmEx) FindConvolutionBackwardDataAlgorithmEx;
    decltype(&cudnnFindConvolutionBackwardFilterAlgorithmEx) FindConvolutionBackwardFilterAlgorithmEx;
    decltype(&cudnnFindConvolutionForwardAlgorithmEx) FindConvolutionForwardAlgorithmEx;
    decltype(&cudnnGetConvolutionBackwardDataAlgorithm_v7) GetConvolutionBackwardDataAlgorithm_v7;
    decltype(&cudnnGetConvolutionBackwardFilterAlgorithm_v7) GetConvolutionBackwardFilterAlgorithm_v7;
    decltype(&cudnnGetConvolutionForwardAlgorithm_v7) GetConvolutionForwardAlgorithm_v7;
    decltype(&cudnnGetErrorString) GetErrorString;
    decltype(&cudnnSetConvolutionGroupCount) SetConvolutionGroupCount;
    decltype(&cudnnSetConvolutionMathType) SetConvolutionMathType;
    decltype(&cudnnSetConvolutionNdDescriptor) SetConvolutionNdDescriptor;
    decltype(&cudnnSetFilterNdDescriptor) SetFilterNdDescriptor;
    decltype(&cudnnSetStream) SetStream;
    decltype(&cudnnSetTensorNdDescriptor) SetTensorNdDescriptor;
};
const Cudnn& dnn();

#define CTK_CUDNN_CHECK(call)                                                 \
    do {                                                                      \
        cudnnStatus_t st_ = (call);                                           \
        CTK_CHECK(st_ == CUDNN_STATUS_SUCCESS, DeviceError, "cuDNN: ", #call, \
                  " failed: ", dnn().GetErrorString(st_));                    \
    } while (0)

// The device's cuDNN handle, set to `stream`.
cudnnHandle_t cudnn_handle(Device device, cudaStream_t stream);
cudnnDataType_t cudnn_type(DataType dtype);
// The most workspace a convolution algorithm may use: CTK_CUDNN_WORKSPACE_MB, default 1024 MiB.
size_t cudnn_workspace_limit();

struct TensorDesc {
    cudnnTensorDescriptor_t h = nullptr;
    TensorDesc(DataType dtype, const Dims& dims);  // packed NC... layout
    ~TensorDesc() { dnn().DestroyTensorDescriptor(h); }
    TensorDesc(const TensorDesc&) = delete;
    TensorDesc& operator=(const TensorDesc&) = delete;
};

}  // namespace ctk::cuda
