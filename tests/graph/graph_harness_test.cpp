// Runs every graph harness case (forward in f32 and f64, gradients in f64) and checks that every graph
// op has a case.
#include <gtest/gtest.h>

#include <set>

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
}  // namespace

class GraphHarness : public ::testing::TestWithParam<size_t> {
protected:
    const GraphCase& graph_case() const { return cases()[GetParam()]; }
};

TEST_P(GraphHarness, ForwardF32) {
    EXPECT_EQ(check_graph_forward(graph_case(), DataType::f32), "");
}
TEST_P(GraphHarness, ForwardF64) {
    EXPECT_EQ(check_graph_forward(graph_case(), DataType::f64), "");
}
TEST_P(GraphHarness, Gradient) {
    if (!graph_case().gradient) GTEST_SKIP() << "not differentiable";
    ScopedNumThreads one(1);
    EXPECT_EQ(check_graph_gradient(graph_case()), "");
}

INSTANTIATE_TEST_SUITE_P(Cases, GraphHarness, ::testing::Range<size_t>(0, cases().size()), case_name);

TEST(GraphHarnessCoverage, EveryGraphOpHasACase) {
    std::set<PrimitiveOp> covered;
    for (const auto& c : cases()) covered.insert(c.ops.begin(), c.ops.end());
    for (int i = 0; i < kNumPrimitiveOps; ++i) {
        const auto op = static_cast<PrimitiveOp>(i);
        if (op == PrimitiveOp::combine || op == PrimitiveOp::block)
            continue;  // structural, tested in graph_test
        EXPECT_TRUE(covered.count(op)) << primitive_op_name(op) << " has no graph harness case";
    }
}

TEST(GraphHarnessSelfTest, DetectsWrongReferenceAndWrongGradient) {
    GraphCase c;
    c.name = "self/wrong";
    c.slots = {Slot::input({3})};
    c.build = [](const std::vector<Variable>& v) { return ctk::exp(v[0]); };
    c.reference = [](const std::vector<Tensor>& in) { return ctk::exp(ctk::negate(in[0])); };
    EXPECT_NE(check_graph_forward(c, DataType::f64), "");
    // A graph whose backward is cut (stop_gradient) disagrees with the numerical gradient of its output.
    c.build = [](const std::vector<Variable>& v) { return ctk::plus(v[0], ctk::stop_gradient(v[0])); };
    EXPECT_NE(check_graph_gradient(c), "");
}

// Every case computed on a logical second CPU device: an op that creates a tensor on the default device
// instead of its operands' (which a GPU run would refuse) fails here, without a GPU.
TEST_P(GraphHarness, OnAnotherDevice) {
    EXPECT_EQ(check_graph_on_device(graph_case(), DataType::f64, Device::cpu(1), 0.0), "");
}
