// cuDNN is opened with dlopen on first use (kernels/cuda/cudnn_library.cpp): without a GPU the library
// still loads and its host-side entry points answer through the table.
#include <gtest/gtest.h>

#include <cstring>

#include "kernels/cuda/cudnn_common.h"

TEST(CudnnLibrary, OpensWithoutAGpuAndItsEntryPointsAnswer) {
    const ctk::cuda::Cudnn& dnn = ctk::cuda::dnn();
    EXPECT_STREQ(dnn.GetErrorString(CUDNN_STATUS_SUCCESS), "CUDNN_STATUS_SUCCESS");
    cudnnTensorDescriptor_t t = nullptr;
    ASSERT_EQ(dnn.CreateTensorDescriptor(&t), CUDNN_STATUS_SUCCESS);
    const int dims[4] = {2, 3, 4, 5}, strides[4] = {60, 20, 5, 1};
    EXPECT_EQ(dnn.SetTensorNdDescriptor(t, CUDNN_DATA_FLOAT, 4, dims, strides), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(dnn.DestroyTensorDescriptor(t), CUDNN_STATUS_SUCCESS);
    cudnnFilterDescriptor_t f = nullptr;
    ASSERT_EQ(dnn.CreateFilterDescriptor(&f), CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(dnn.SetFilterNdDescriptor(f, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 4, dims),
              CUDNN_STATUS_SUCCESS);
    EXPECT_EQ(dnn.DestroyFilterDescriptor(f), CUDNN_STATUS_SUCCESS);
}
