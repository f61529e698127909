// cuDNN opened with dlopen on first use (see cudnn_common.h): the library is found as the CUDA toolkit
// installs it (libcudnn.so.<major>, on the loader's path or beside CUDA's libraries).
#include <dlfcn.h>

#include <string>
#include <type_traits>

#include "kernels/cuda/cudnn_common.h"

namespace ctk::cuda {

const Cudnn& dnn() {
    static const Cudnn table = [] {
        const std::string lib = "libcudnn.so." + std::to_string(CUDNN_MAJOR);
        void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!h)
            CTK_THROW(DeviceError, "cuDNN: cannot load ", lib, " (install cuDNN ", CUDNN_MAJOR,
                      "): ", dlerror());
        auto sym = [&](auto& fn, const char* name) {
            fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(h, name));
            CTK_CHECK(fn != nullptr, DeviceError, "cuDNN: ", lib, " has no ", name);
        };
        Cudnn t{};
        sym(t.AddTensor, "cudnnAddTensor");
        sym(t.ConvolutionBackwardBias, "cudnnConvolutionBackwardBias");
        sym(t.ConvolutionBackwardData, "cudnnConvolutionBackwardData");
        sym(t.ConvolutionBackwardFilter, "cudnnConvolutionBackwardFilter");
        sym(t.ConvolutionForward, "cudnnConvolutionForward");
        sym(t.Create, "cudnnCreate");
        sym(t.CreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor");
        sym(t.CreateFilterDescriptor, "cudnnCreateFilterDescriptor");
        sym(t.CreateTensorDescriptor, "cudnnCreateTensorDescriptor");
        sym(t.DestroyConvolutionDescriptor, "cudnnDestroyConvolutionDescriptor");
        sym(t.DestroyFilterDescriptor, "cudnnDestroyFilterDescriptor");
        sym(t.DestroyTensorDescriptor, "cudnnDestroyTensorDescriptor");
        sym(t.FindConvolutionBackwardDataAlgorithmEx, "cudnnFindConvolutionBackwardDataAlgorithmEx");
        sym(t.FindConvolutionBackwardFilterAlgorithmEx, "cudnnFindConvolutionBackwardFilterAlgorithmEx");
        sym(t.FindConvolutionForwardAlgorithmEx, "cudnnFindConvolutionForwardAlgorithmEx");
        sym(t.GetConvolutionBackwardDataAlgorithm_v7, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
        sym(t.GetConvolutionBackwardFilterAlgorithm_v7, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
        sym(t.GetConvolutionForwardAlgorithm_v7, "cudnnGetConvolutionForwardAlgorithm_v7");
        sym(t.GetErrorString, "cudnnGetErrorString");
        sym(t.SetConvolutionGroupCount, "cudnnSetConvolutionGroupCount");
        sym(t.SetConvolutionMathType, "cudnnSetConvolutionMathType");
        sym(t.SetConvolutionNdDescriptor, "cudnnSetConvolutionNdDescriptor");
        sym(t.SetFilterNdDescriptor, "cudnnSetFilterNdDescriptor");
        sym(t.SetStream, "cudnnSetStream");
        sym(t.SetTensorNdDescriptor, "cudnnSetTensorNdDescriptor");
        return t;
    }();
    return table;
}

}  // namespace ctk::cuda
