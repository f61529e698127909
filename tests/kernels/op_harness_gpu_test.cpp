// The op harness on every GPU: each case's forward (and backward) against the CPU result. Labelled
// `gpu`; without a GPU every test skips and says why.
#include <gtest/gtest.h>

#include "kernels/op_harness.h"

using namespace ctk;
using namespace ctk::test;

namespace {

const std::vector<OpCase>& cases() {
    static const std::vector<OpCase> all = all_op_cases();
    return all;
}

class OpHarnessGpu : public ::testing::TestWithParam<size_t> {
protected:
    void SetUp() override {
        if (!cuda::is_available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
    }
};

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
    std::string n = cases()[info.param].name;
    for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
}

}  // namespace

TEST_P(OpHarnessGpu, MatchesCpu) {
    EXPECT_EQ(check_backends(cases()[GetParam()]), "");
}

INSTANTIATE_TEST_SUITE_P(Cases, OpHarnessGpu, ::testing::Range<size_t>(0, cases().size()), case_name);

// Every op has a CUDA kernel for every floating-point type (the CUDA backend covers the whole op list, so
// a graph that runs on the CPU runs on a GPU: nothing fails mid-step for want of a kernel).
TEST(CudaCoverage, EveryOpHasAKernelForEveryFloatType) {
    if (!cuda::is_built()) GTEST_SKIP() << "this build has no CUDA backend";
    std::string missing;
    for (int i = 0; i < kNumOps; ++i) {
        const auto op = static_cast<OpKind>(i);
        for (DataType t : {DataType::f16, DataType::bf16, DataType::f32, DataType::f64})
            // The one-kernel update of batch normalization's running statistics is for f32 and f64
            // statistics (see OpHarnessCoverage.EveryOpHasACpuKernelForEveryFloatType).
            if (!kernel_table().supports(op, DeviceType::cuda, t) &&
                !(op == OpKind::batch_norm_running_update && (t == DataType::f16 || t == DataType::bf16)))
                missing += std::string(" ") + op_name(op) + "/" + dtype_name(t);
    }
    EXPECT_EQ(missing, "");
}
