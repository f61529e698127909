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

// Every op has a CUDA kernel for f32 (the CUDA backend covers the whole op list).
TEST(CudaCoverage, EveryOpHasAKernel) {
    if (!cuda::is_built()) GTEST_SKIP() << "this build has no CUDA backend";
    std::string missing;
    for (int i = 0; i < kNumOps; ++i) {
        const auto op = static_cast<OpKind>(i);
        if (!kernel_table().supports(op, DeviceType::cuda, DataType::f32))
            missing += std::string(" ") + op_name(op);
    }
    EXPECT_EQ(missing, "");
}
