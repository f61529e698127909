// The graph op harness on every GPU: each case computed on the GPU (forward, and backward with the same
// root gradient) against the same case on the CPU, in f32 and f64. Labelled `gpu`; without a GPU every
// test skips and says why.
#include <gtest/gtest.h>

#include "graph/graph_harness.h"

using namespace ctk;
using namespace ctk::test;

namespace {

const std::vector<GraphCase>& cases() {
    return cached_graph_cases();
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
    return graph_case_test_name(info.param);
}

class GraphHarnessGpu : public ::testing::TestWithParam<size_t> {
protected:
    void SetUp() override {
        if (!cuda::is_available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
    }
};

}  // namespace

// GPU kernels sum in other orders than the CPU's (and TF32 stays off), so the case's tolerances are
// doubled, as in the kernel op harness.
TEST_P(GraphHarnessGpu, F32MatchesCpu) {
    for (int d = 0; d < cuda::device_count(); ++d)
        EXPECT_EQ(check_graph_on_device(cases()[GetParam()], DataType::f32, Device::cuda(d), 2.0), "");
}
TEST_P(GraphHarnessGpu, F64MatchesCpu) {
    for (int d = 0; d < cuda::device_count(); ++d)
        EXPECT_EQ(check_graph_on_device(cases()[GetParam()], DataType::f64, Device::cuda(d), 2.0), "");
}

INSTANTIATE_TEST_SUITE_P(Cases, GraphHarnessGpu, ::testing::Range<size_t>(0, cases().size()), case_name);
