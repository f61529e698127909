// Element-wise, reduction, softmax and matmul: CNTK-visible semantics, stability, determinism across
// thread counts, and the typed errors for bad input (messages name the op, operand and shapes).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ctk/ctk.h"

using namespace ctk;

namespace {

template <typename Fn>
void expect_error_mentions(Fn fn, std::initializer_list<const char*> parts) {
    try {
        fn();
        FAIL() << "no error thrown";
    } catch (const Error& e) {
        for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    }
}

Tensor vec(std::vector<float> v) {
    int64_t n = static_cast<int64_t>(v.size());
    return Tensor::from_vector(v, Shape{n});
}

}  // namespace

TEST(Elementwise, CntkSemantics) {
    // CNTK rounds halves up.
    EXPECT_EQ(ctk::round(vec({-0.5f, 0.5f, 1.5f, -1.5f, 2.4f})).to_vector<float>(),
              (std::vector<float>{0, 1, 2, -1, 2}));
    // Stable at the extremes.
    set_flush_denormals(false);  // IEEE gradual underflow, to see the subnormal
    auto s = sigmoid(vec({-100.f, 100.f})).to_vector<float>();
    EXPECT_GT(s[0], 0.0f);  // exp(-100) is a float subnormal: computed without overflow in exp(100)
    EXPECT_LT(s[0], 1e-40f);
    EXPECT_EQ(s[1], 1.0f);
    set_flush_denormals(true);  // ctk's default: the subnormal becomes 0
    EXPECT_EQ(sigmoid(vec({-100.f})).item(), 0.0f);
    auto sp = softplus(vec({-100.f, 100.f})).to_vector<float>();
    EXPECT_NEAR(sp[0], 0.0f, 1e-30);
    EXPECT_EQ(sp[1], 100.0f);
    // NaN propagates through element_max like NumPy's maximum.
    float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(element_max(vec({nan}), vec({1})).item()));
    EXPECT_TRUE(std::isnan(element_max(vec({1}), vec({nan})).item()));
    EXPECT_EQ(log_add_exp(vec({-INFINITY}), vec({-INFINITY})).item(), -INFINITY);
    EXPECT_NEAR(log_add_exp(vec({1000}), vec({1000})).item(), 1000 + std::log(2.0), 1e-3);
    // Comparisons return 0/1 in the operand dtype, as CNTK does.
    Tensor lt = less(vec({1, 2}), vec({2, 2}));
    EXPECT_EQ(lt.dtype(), DataType::f32);
    EXPECT_EQ(lt.to_vector<float>(), (std::vector<float>{1, 0}));
    EXPECT_EQ(clip(vec({-5, 0.5f, 5}), -1, 1).to_vector<float>(), (std::vector<float>{-1, 0.5f, 1}));
}

TEST(Elementwise, Errors) {
    Tensor a = Tensor::zeros(Shape{2, 3}), b = Tensor::zeros(Shape{4, 3});
    expect_error_mentions([&] { plus(a, b); }, {"plus", "[2, 3]", "[4, 3]"});
    EXPECT_THROW(plus(a, b), ShapeError);
    EXPECT_THROW(plus(a, Tensor::zeros(Shape{2, 3}, DataType::f64)), TypeError);
    expect_error_mentions([&] { ctk::exp(Tensor::zeros(Shape{2}, DataType::i32)); }, {"exp", "int32", "[2]"});
    EXPECT_THROW(ctk::exp(Tensor()), ValueError);
    EXPECT_THROW(clip(a, std::nan(""), 0), ValueError);
    // A min above the max gives the max everywhere (NumPy's and CNTK's order: the upper bound last).
    EXPECT_EQ(clip(vec({-5, 0.5f, 5}), 1, 0).to_vector<float>(), (std::vector<float>{0, 0, 0}));
    EXPECT_THROW(unary(OpKind::plus, a), ValueError);
    EXPECT_THROW(unary_backward(OpKind::relu, a, Tensor(), Tensor::zeros(Shape{3})), ShapeError);
    Tensor out = Tensor::zeros(Shape{2, 2});
    EXPECT_THROW(binary_into(OpKind::plus, a, a, out), ShapeError);
}

TEST(Elementwise, InPlaceAndDeviceChecks) {
    Tensor a = Tensor::ones(Shape{3});
    binary_into(OpKind::plus, a, a, a);  // out may alias the operands
    EXPECT_EQ(a.to_vector<float>(), (std::vector<float>{2, 2, 2}));
    EXPECT_TRUE(supports(OpKind::plus, Device::cpu(), DataType::bf16));
    EXPECT_FALSE(supports(OpKind::plus, Device::cpu(), DataType::i32));
    EXPECT_EQ(supports(OpKind::plus, Device::cuda(0), DataType::f32), cuda::is_built());
    // Kernels with the wrong attribute kind are refused by dispatch.
    Tensor o = Tensor::empty(Shape{3});
    const Tensor in[] = {a};
    EXPECT_THROW(dispatch(OpKind::relu, in, std::span<Tensor>(&o, 1), NoAttrs{}), ValueError);
}

TEST(Reduce, SemanticsAndErrors) {
    Tensor x = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
    EXPECT_EQ(reduce_sum(x).item(), 21);
    EXPECT_EQ(reduce_sum(x, {0}).to_vector<float>(), (std::vector<float>{5, 7, 9}));
    EXPECT_EQ(reduce_max(x, {-1}, true).shape(), (Shape{2, 1}));
    EXPECT_EQ(argmax(x, 1).to_vector<int64_t>(), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(argmax(x, 1).dtype(), DataType::i64);
    EXPECT_EQ(argmax(vec({1, 3, 3}), 0).item(), 1);  // first of ties
    float nan = std::numeric_limits<float>::quiet_NaN();
    EXPECT_TRUE(std::isnan(reduce_max(vec({1, nan, 2})).item()));
    EXPECT_EQ(argmax(vec({1, nan, 2}), 0).item(), 1);
    EXPECT_EQ(reduce_sum(Tensor::zeros(Shape{0, 3}), {0}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
    EXPECT_EQ(reduce_prod(Tensor::zeros(Shape{0})).item(), 1);
    EXPECT_NEAR(reduce_log_sum_exp(vec({1000, 1000})).item(), 1000 + std::log(2.0), 1e-3);
    EXPECT_EQ(reduce_log_sum_exp(vec({-INFINITY, -INFINITY})).item(), -INFINITY);
    expect_error_mentions([&] { reduce_sum(x, {2}); }, {"reduce_sum", "axis 2", "[2, 3]"});
    EXPECT_THROW(reduce_sum(x, {1, -1}), ValueError);
    EXPECT_THROW(reduce_max(Tensor::zeros(Shape{0})), ValueError);
    EXPECT_THROW(argmax(Tensor::scalar(1), 0), ValueError);
    EXPECT_THROW(reduce_sum(Tensor::zeros(Shape{2}, DataType::i64)), TypeError);
    EXPECT_EQ(sum_to_shape(Tensor::ones(Shape{4, 2, 3}), Shape{2, 1}).to_vector<float>(),
              (std::vector<float>{12, 12}));
    EXPECT_THROW(sum_to_shape(Tensor::ones(Shape{4, 2, 3}), Shape{5}), ShapeError);
}

TEST(Reduce, IndependentOfThreadCount) {
    Tensor x = Tensor::empty(Shape{3, 200003});
    Generator(1).normal(x);
    ScopedNumThreads restore(1);
    auto one = reduce_sum(x, {1}).to_vector<float>();
    auto one_all = reduce_sum(x).item();
    auto one_cols = reduce_mean(x, {0}).to_vector<float>();
    set_num_threads(2);
    EXPECT_EQ(reduce_sum(x, {1}).to_vector<float>(), one);
    EXPECT_EQ(reduce_sum(x).item(), one_all);
    EXPECT_EQ(reduce_mean(x, {0}).to_vector<float>(), one_cols);
}

// Few long columns (a bias gradient in channels-last order: [N*H*W, C]) are cut into runs of rows that
// the threads share: the sums match float64 and repeat to the bit at any thread count.
TEST(Reduce, LongColumnsAreSharedByTheThreads) {
    for (const Shape& shape : {Shape{50021, 37}, Shape{2, 9001, 300}, Shape{1, 70000, 1024}}) {
        SCOPED_TRACE(shape.to_string());
        Tensor x = Tensor::empty(shape);
        Generator(7).normal(x);
        const int axis = shape.rank() - 2;
        ScopedNumThreads restore(1);
        const auto one = reduce_sum(x, {axis}).to_vector<float>();
        const auto one_max = reduce_max(x, {axis}).to_vector<float>();
        set_num_threads(2);
        EXPECT_EQ(reduce_sum(x, {axis}).to_vector<float>(), one);
        EXPECT_EQ(reduce_max(x, {axis}).to_vector<float>(), one_max);
        // The reference: a plain loop in float64 over [outer, r, inner].
        const auto v = x.to_vector<float>();
        const int64_t inner = shape[shape.rank() - 1], r = shape[axis], outer = x.numel() / (r * inner);
        ASSERT_EQ(one.size(), static_cast<size_t>(outer * inner));
        for (int64_t a = 0; a < outer; ++a)
            for (int64_t j = 0; j < inner; ++j) {
                double sum = 0;
                for (int64_t i = 0; i < r; ++i) sum += v[static_cast<size_t>((a * r + i) * inner + j)];
                EXPECT_NEAR(one[static_cast<size_t>(a * inner + j)], sum, 1e-4 * (1 + std::fabs(sum)));
            }
    }
}

TEST(Softmax, StableAndChecked) {
    auto y = softmax(vec({1000, 1000})).to_vector<float>();
    EXPECT_FLOAT_EQ(y[0], 0.5f);
    auto ly = log_softmax(vec({0, -1000})).to_vector<float>();
    EXPECT_FLOAT_EQ(ly[0], 0.0f);
    EXPECT_FLOAT_EQ(ly[1], -1000.0f);
    EXPECT_EQ(hardmax(vec({1, 3, 3})).to_vector<float>(), (std::vector<float>{0, 1, 0}));
    expect_error_mentions([&] { softmax(Tensor::zeros(Shape{2, 3}), 2); }, {"softmax", "[2, 3]"});
    EXPECT_THROW(softmax_backward(Tensor::zeros(Shape{2}), Tensor::zeros(Shape{3})), ShapeError);
    EXPECT_THROW(softmax(Tensor::scalar(1.0)), ValueError);
}

TEST(Matmul, ValuesAndErrors) {
    Tensor a = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
    Tensor b = Tensor::from_vector<float>({1, 0, 0, 1, 1, 1}, Shape{3, 2});
    EXPECT_EQ(matmul(a, b).to_vector<float>(), (std::vector<float>{4, 5, 10, 11}));
    EXPECT_EQ(matmul(a, a, false, true).to_vector<float>(), (std::vector<float>{14, 32, 32, 77}));
    // A transposed view is passed to BLAS as a transpose, not copied.
    EXPECT_EQ(matmul(a.transpose(0, 1), b.transpose(0, 1), true, true).to_vector<float>(),
              (std::vector<float>{4, 5, 10, 11}));
    expect_error_mentions([&] { matmul(a, a); }, {"matmul", "[2, 3]", "3 columns", "2 rows"});
    EXPECT_THROW(matmul(a, a), ShapeError);
    EXPECT_THROW(matmul(vec({1, 2}), vec({1, 2})), ShapeError);
    EXPECT_THROW(matmul(a, b.to(DataType::f64)), TypeError);
    EXPECT_THROW(matmul(Tensor::zeros(Shape{2, 2, 3}), Tensor::zeros(Shape{3, 3, 2})), ShapeError);
    EXPECT_THROW(matmul(a.to(DataType::i32), b.to(DataType::i32)), TypeError);
    for (DataType low :
         {DataType::bf16, DataType::f16}) {  // f16: f32 arithmetic, rounded (no f16 oneDNN here)
        Tensor c = matmul(a.to(low), b.to(low));
        EXPECT_EQ(c.dtype(), low);
        EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{4, 5, 10, 11}));
    }
}

// Long contiguous rows are cut into pieces shared among threads: results must not depend on the cut.
TEST(Elementwise, LongRowsGiveTheSameResultAtEveryThreadCount) {
    for (const Shape& shape : {Shape{300001}, Shape{3, 100003}}) {
        Tensor a = Tensor::arange(shape, DataType::f32), b = Tensor::full(shape, 0.5, DataType::f32);
        Tensor one, two;
        DropoutResult d1, d2;
        {
            ScopedNumThreads t(1);
            one = plus(a, b);
            Generator g(7);
            d1 = dropout(a, 0.5, g);
        }
        {
            ScopedNumThreads t(2);
            two = plus(a, b);
            Generator g(7);
            d2 = dropout(a, 0.5, g);
        }
        EXPECT_EQ(one.to_vector<float>(), two.to_vector<float>()) << shape.to_string();
        EXPECT_EQ(d1.y.to_vector<float>(), d2.y.to_vector<float>()) << shape.to_string();
        EXPECT_EQ(two.to_vector<float>().back(), static_cast<float>(shape.numel() - 1) + 0.5f);
    }
}
