// Class-index labels (one-hot Values) in cross_entropy_with_softmax and classification_error: the
// sparse paths (src/graph/ops/softmax_losses.cpp) give the dense paths' losses, errors and gradients, for a
// batch and for sequences with padding and a row without a class (CNTK's all-zero target).
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ctk/ctk.h"

using namespace ctk;

namespace {

constexpr int64_t kClasses = 37;

Tensor random_tensor(const Shape& shape, uint32_t seed, double scale) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> u(-scale, scale);
    std::vector<double> v(static_cast<size_t>(shape.numel()));
    for (double& x : v) x = u(gen);
    return Tensor::from_vector(v, shape);
}

std::vector<double> flat(const Value& v) {
    return v.data().to(DataType::f64).contiguous().to_vector<double>();
}

void expect_near(const std::vector<double>& a, const std::vector<double>& b, double tol, const char* what) {
    ASSERT_EQ(a.size(), b.size()) << what;
    for (size_t i = 0; i < a.size(); ++i)
        EXPECT_NEAR(a[i], b[i], tol * std::max(1.0, std::abs(b[i]))) << what << " " << i;
}

// The loss, error and the logits' gradient (through a parameter) for labels as a one-hot value and as
// its dense rows.
void compare(const Variable& x, const Variable& y, const Value& xs, const Value& labels, DataType dtype) {
    Variable w = parameter({5, kClasses}, glorot_uniform(), dtype, "w");
    FunctionPtr z = times(x, w);
    FunctionPtr loss = cross_entropy_with_softmax(z, y), err = classification_error(z, y);
    ASSERT_TRUE(labels.is_one_hot());
    const Value dense(labels.data(), labels.layout());  // the same labels, dense
    ASSERT_FALSE(dense.is_one_hot());
    const double tol = dtype == DataType::f64 ? 1e-12 : 2e-6;
    for (FunctionPtr f : {loss, err}) {
        const Value sparse_out = f->eval({{x, xs}, {y, labels}}).begin()->second;
        const Value dense_out = f->eval({{x, xs}, {y, dense}}).begin()->second;
        EXPECT_EQ(sparse_out.data().shape(), dense_out.data().shape());
        expect_near(flat(Value(sparse_out.masked_data(0.0))), flat(Value(dense_out.masked_data(0.0))), tol,
                    f == loss ? "loss" : "error");
    }
    const Value g_sparse = loss->grad({{x, xs}, {y, labels}}, {w}).at(w);
    const Value g_dense = loss->grad({{x, xs}, {y, dense}}, {w}).at(w);
    expect_near(flat(g_sparse), flat(g_dense), tol, "gradient");
}

}  // namespace

TEST(SparseLabels, BatchLossErrorAndGradientMatchDenseLabels) {
    for (DataType dtype : {DataType::f32, DataType::f64}) {
        Variable x = input_variable({5}, dtype, false, false, default_batch_axes(), "x");
        Variable y = input_variable({kClasses}, dtype, false, true, default_batch_axes(), "y");
        const Value xs(random_tensor(Shape{6, 5}, 1, 3.0).to(dtype));
        // Row 3 has no class (-1): CNTK's all-zero target.
        const Value labels =
            Value::one_hot(Tensor::from_vector<int64_t>({0, 36, 5, -1, 17, 5}, Shape{6}), kClasses, dtype);
        compare(x, y, xs, labels, dtype);
    }
}

TEST(SparseLabels, SequencesWithPaddingMatchDenseLabels) {
    Variable x = sequence_input_variable({5}, DataType::f32, false, false, Axis::default_dynamic_axis(), "x");
    Variable y =
        sequence_input_variable({kClasses}, DataType::f32, false, true, Axis::default_dynamic_axis(), "y");
    const std::vector<int64_t> lengths{4, 1, 3};
    std::vector<Tensor> seqs;
    for (size_t i = 0; i < lengths.size(); ++i)
        seqs.push_back(
            random_tensor(Shape{lengths[i], 5}, static_cast<uint32_t>(10 + i), 2.0).to(DataType::f32));
    const Value xs = Value::from_sequences(seqs);
    const auto layout = std::make_shared<const SequenceLayout>(lengths);
    const Value labels =
        Value::one_hot(Tensor::from_vector<int64_t>({3, 1, 4, 1, 5, 0, 0, 0, 9, 2, 6, 0}, Shape{3, 4}),
                       kClasses, DataType::f32, layout);
    compare(x, y, xs, labels, DataType::f32);
}

TEST(SparseLabels, ErrorTakesTheFirstMaximumAsHardmaxDoes) {
    // Scores tied between classes 1 and 2: hardmax picks 1, so label 1 is right and label 2 wrong.
    Variable z = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "z");
    Variable y = input_variable({3}, DataType::f32, false, true, default_batch_axes(), "y");
    FunctionPtr err = classification_error(z, y);
    const Value scores(Tensor::from_vector<float>({0.f, 2.f, 2.f, 0.f, 2.f, 2.f}, Shape{2, 3}));
    const Value labels = Value::one_hot(Tensor::from_vector<int64_t>({1, 2}, Shape{2}), 3);
    EXPECT_EQ(err->eval({{z, scores}, {y, labels}}).begin()->second.data().to_vector<float>(),
              (std::vector<float>{0.f, 1.f}));
    EXPECT_EQ(err->eval({{z, scores}, {y, Value(labels.data())}}).begin()->second.data().to_vector<float>(),
              (std::vector<float>{0.f, 1.f}));
}
