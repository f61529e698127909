// The op profile (ctk/core/op_profile.h): a forward and backward with profiling on count each op once per
// phase with its host time, nothing when off, and the table divides by the steps it is given.
#include <gtest/gtest.h>

#include <map>

#include "ctk/ctk.h"

namespace ctk {
namespace {

std::map<std::string, OpProfileEntry> by_label() {
    std::map<std::string, OpProfileEntry> m;
    for (const OpProfileEntry& e : op_profile()) m.emplace(e.label, e);
    return m;
}

void step(const FunctionPtr& y, const Variable& x) {
    Tensor xv = Tensor::from_vector<double>({0.1, -0.2, 0.3, 0.4}, Shape{1, 4});
    ValueMap outs{{y->output(), Value()}};
    auto state = y->forward({{x, Value(xv)}}, outs, {y->output()});
    y->backward(*state, {{y->output(), Value(Tensor::ones(Shape{}, DataType::f64))}}, {x});
}

TEST(OpProfile, CountsEachOpPerPhaseOnlyWhileOn) {
    const bool was_on = op_profile_enabled();
    Variable x = input_variable({4}, DataType::f64);
    FunctionPtr y = reduce_sum(square(tanh(x)), {Axis::all_axes()});

    set_op_profile(false);
    reset_op_profile();
    step(y, x);
    EXPECT_TRUE(op_profile().empty());

    set_op_profile(true);
    step(y, x);
    step(y, x);
    auto m = by_label();
    set_op_profile(was_on);
    ASSERT_TRUE(m.count("tanh forward")) << op_profile_table(2);
    ASSERT_TRUE(m.count("tanh backward")) << op_profile_table(2);
    EXPECT_EQ(m.at("tanh forward").calls, 2);
    EXPECT_EQ(m.at("tanh backward").calls, 2);
    EXPECT_GE(m.at("tanh forward").host_ms, 0.0);
    EXPECT_EQ(m.at("tanh forward").gpu_ms, 0.0);  // on the CPU
    EXPECT_EQ(m.at("tanh forward").host_waits, 0);
    const std::string table = op_profile_table(2);
    EXPECT_NE(table.find("tanh forward"), std::string::npos);
    EXPECT_NE(table.find("total"), std::string::npos);

    reset_op_profile();
    EXPECT_TRUE(op_profile().empty());
}

}  // namespace
}  // namespace ctk
