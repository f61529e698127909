// GoogleTest driver for the op harness: one parameterised test per case and check.
#include <gtest/gtest.h>

#include <set>

#include "kernels/op_harness.h"

using namespace ctk;
using namespace ctk::test;

namespace {

const std::vector<OpCase>& cases() {
    static const std::vector<OpCase> all = all_op_cases();
    return all;
}

class OpHarness : public ::testing::TestWithParam<size_t> {
protected:
    const OpCase& op_case() const { return cases()[GetParam()]; }
};

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
    std::string n = cases()[info.param].name;
    for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
}

}  // namespace

TEST_P(OpHarness, ForwardF32) {
    EXPECT_EQ(check_forward(op_case(), DataType::f32), "");
}
TEST_P(OpHarness, ForwardF64) {
    EXPECT_EQ(check_forward(op_case(), DataType::f64), "");
}
TEST_P(OpHarness, Forward16Bit) {
    EXPECT_EQ(check_forward(op_case(), DataType::bf16), "");
    EXPECT_EQ(check_forward(op_case(), DataType::f16), "");
}
TEST_P(OpHarness, MixedPrecisionBackward) {
    EXPECT_EQ(check_mixed_backward(op_case(), DataType::bf16), "");
    EXPECT_EQ(check_mixed_backward(op_case(), DataType::f16), "");
}
TEST_P(OpHarness, NonContiguous) {
    EXPECT_EQ(check_non_contiguous(op_case(), DataType::f32), "");
    EXPECT_EQ(check_non_contiguous(op_case(), DataType::f64), "");
}
TEST_P(OpHarness, Gradient) {
    EXPECT_EQ(check_gradients(op_case()), "");
}

INSTANTIATE_TEST_SUITE_P(Cases, OpHarness, ::testing::Range<size_t>(0, cases().size()), case_name);

TEST(OpHarnessCoverage, CaseNamesAreUnique) {
    std::set<std::string> names;
    for (const auto& c : cases()) EXPECT_TRUE(names.insert(c.name).second) << "duplicate case " << c.name;
}

// The harness itself must be able to fail: a wrong reference and a wrong gradient are caught.
TEST(OpHarnessSelfTest, DetectsWrongResults) {
    OpCase c;
    c.name = "self/wrong";
    c.inputs = {InputSpec::uniform({3, 4})};
    c.forward = [](const Tensors& in) { return Tensors{ctk::exp(in[0])}; };
    c.reference = [](const Tensors& in) { return Tensors{ctk::exp(in[0]).to(DataType::f64)}; };
    c.backward = [](const Tensors& in, const Tensors& dy) {
        return Tensors{ctk::element_times(dy[0], in[0])};
    };
    EXPECT_EQ(check_forward(c, DataType::f64), "");
    EXPECT_NE(check_gradients(c), "");  // d exp(x) is exp(x), not x
    c.reference = [](const Tensors& in) { return Tensors{ctk::sin(in[0])}; };
    EXPECT_NE(check_forward(c, DataType::f32), "");
}

// A new op is not done until it has a case: every op in the list must be exercised by one.
TEST(OpHarnessCoverage, EveryOpHasACase) {
    std::set<int> covered;
    for (const auto& c : cases())
        for (OpKind op : c.ops) covered.insert(static_cast<int>(op));
    for (int i = 0; i < kNumOps; ++i)
        EXPECT_TRUE(covered.count(i))
            << "op '" << op_name(static_cast<OpKind>(i)) << "' has no op-harness case";
}

// Every op has a CPU kernel for every floating-point type (the harness compares other backends against
// the CPU's, and mixed precision runs f16 and bf16 graphs on the CPU too).
// Batch normalization's one-kernel update of its running statistics is for f32 and f64 statistics on
// either backend; statistics of other types are blended by the same formula from element-wise ops
// (src/graph/ops/conv_pool_norm.cpp).
TEST(OpHarnessCoverage, EveryOpHasACpuKernelForEveryFloatType) {
    for (int i = 0; i < kNumOps; ++i) {
        auto op = static_cast<OpKind>(i);
        for (DataType t : {DataType::f16, DataType::bf16, DataType::f32, DataType::f64}) {
            if (op == OpKind::batch_norm_running_update && !(t == DataType::f32 || t == DataType::f64)) {
                EXPECT_FALSE(supports(op, Device::cpu(), t))
                    << "take batch_norm_running_update off this list";
                continue;
            }
            EXPECT_TRUE(supports(op, Device::cpu(), t)) << op_name(op) << " " << dtype_name(t);
        }
    }
}
