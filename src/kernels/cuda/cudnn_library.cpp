// cuDNN opened with dlopen on first use (see cudnn_common.h): the library is found as the CUDA toolkit
// installs it (libcudnn.so.<major>, on the loader's path or beside CUDA's libraries).
#include <string>

#include "ctk/core/shared_library.h"
#include "kernels/cuda/cudnn_common.h"

namespace ctk::cuda {

const Cudnn& dnn() {
    static const Cudnn table = [] {
        const SharedLibrary lib("libcudnn.so." + std::to_string(CUDNN_MAJOR), "cuDNN",
                                "install cuDNN " + std::to_string(CUDNN_MAJOR));
        Cudnn t{};
        lib.bind(t.AddTensor, "cudnnAddTensor");
        lib.bind(t.ConvolutionBackwardBias, "cudnnConvolutionBackwardBias");
        lib.bind(t.ConvolutionBackwardData, "cudnnConvolutionBackwardData");
        lib.bind(t.ConvolutionBackwardFilter, "cudnnConvolutionBackwardFilter");
        lib.bind(t.ConvolutionForward, "cudnnConvolutionForward");
        lib.bind(t.Create, "cudnnCreate");
        lib.bind(t.CreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor");
        lib.bind(t.CreateFilterDescriptor, "cudnnCreateFilterDescriptor");
        lib.bind(t.CreateTensorDescriptor, "cudnnCreateTensorDescriptor");
        lib.bind(t.DestroyConvolutionDescriptor, "cudnnDestroyConvolutionDescriptor");
        lib.bind(t.DestroyFilterDescriptor, "cudnnDestroyFilterDescriptor");
        lib.bind(t.DestroyTensorDescriptor, "cudnnDestroyTensorDescriptor");
        lib.bind(t.FindConvolutionBackwardDataAlgorithmEx, "cudnnFindConvolutionBackwardDataAlgorithmEx");
        lib.bind(t.FindConvolutionBackwardFilterAlgorithmEx, "cudnnFindConvolutionBackwardFilterAlgorithmEx");
        lib.bind(t.FindConvolutionForwardAlgorithmEx, "cudnnFindConvolutionForwardAlgorithmEx");
        lib.bind(t.GetConvolutionBackwardDataAlgorithm_v7, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
        lib.bind(t.GetConvolutionBackwardFilterAlgorithm_v7, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
        lib.bind(t.GetConvolutionForwardAlgorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7");
        lib.bind(t.GetErrorString, "cudnnGetErrorString");
        lib.bind(t.SetConvolutionGroupCount, "cudnnSetConvolutionGroupCount");
        lib.bind(t.SetConvolutionMathType, "cudnnSetConvolutionMathType");
        lib.bind(t.SetConvolutionNdDescriptor, "cudnnSetConvolutionNdDescriptor");
        lib.bind(t.SetFilterNdDescriptor, "cudnnSetFilterNdDescriptor");
        lib.bind(t.SetStream, "cudnnSetStream");
        lib.bind(t.SetTensorNdDescriptor, "cudnnSetTensorNdDescriptor");
        return t;
    }();
    return table;
}

}  // namespace ctk::cuda
