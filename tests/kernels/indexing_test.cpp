// Dropout and the indexing/layout ops: typed errors whose messages name the op and the offending shape or
// index, NumPy/CNTK semantics on small hand-checked examples, and results that do not depend on the
// thread count (dropout's mask, gather/scatter_add with duplicate indices, tiled permute).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "ctk/ctk.h"

using namespace ctk;
using Tensors = std::vector<Tensor>;

namespace {

// Runs fn, expecting an error of exactly type E whose message contains every part.
template <typename E, typename Fn>
void expect_error(Fn fn, std::initializer_list<const char*> parts) {
    try {
        fn();
        ADD_FAILURE() << "no error thrown";
    } catch (const E& e) {
        for (const char* p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "wrong error type: " << e.what();
    }
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
    Tensor ca = a.contiguous(), cb = b.contiguous();
    return a.shape() == b.shape() && a.dtype() == b.dtype() &&
           std::memcmp(ca.raw_data(), cb.raw_data(), static_cast<size_t>(a.numel()) * a.element_size()) == 0;
}

Tensor random(const Shape& shape, uint64_t seed = 3, DataType dtype = DataType::f32, double lo = -1,
              double hi = 1) {
    Tensor t = Tensor::empty(shape, dtype);
    Generator(seed).uniform(t, lo, hi);
    return t;
}

template <typename T>
Tensor vec(std::vector<T> v) {
    const int64_t n = static_cast<int64_t>(v.size());
    return Tensor::from_vector(v, Shape{n});
}

}  // namespace

// ---- dropout ----

TEST(Dropout, Errors) {
    Tensor x = Tensor::ones(Shape{2, 3});
    Generator g(1);
    expect_error<ValueError>([&] { dropout(x, 1.0, g); }, {"dropout", "rate", "[2, 3]"});
    expect_error<ValueError>([&] { dropout(x, -0.1, g); }, {"dropout", "-0.1", "[2, 3]"});
    expect_error<ValueError>([&] { dropout(x, std::numeric_limits<double>::quiet_NaN(), g); }, {"dropout"});
    expect_error<TypeError>([&] { dropout(Tensor::ones(Shape{4}, DataType::i32), 0.5, g); },
                            {"dropout", "int32", "[4]"});
    expect_error<ValueError>([&] { dropout(Tensor(), 0.5, g); }, {"dropout", "'x'"});
    EXPECT_EQ(g.offset(), 0u);  // failed calls consume nothing
}

TEST(Dropout, MatchesBernoulliAndAdvancesTheGenerator) {
    const double rate = 0.25;
    Tensor x = random({33, 17});
    Generator g(11, 5);
    DropoutResult r = dropout(x, rate, g);
    EXPECT_EQ(g.offset(), 5u + 33 * 17);
    Tensor keep = Tensor::empty(x.shape(), DataType::f32);
    Generator(11, 5).bernoulli(keep, 1 - rate);
    Tensor mask = element_times(keep, Tensor::scalar(1 / (1 - rate)));
    EXPECT_TRUE(bitwise_equal(r.mask, mask));
    EXPECT_TRUE(bitwise_equal(r.y, element_times(x, mask)));
    // The next call continues the stream instead of repeating it.
    DropoutResult next = dropout(x, rate, g);
    EXPECT_FALSE(bitwise_equal(next.mask, r.mask));
}

TEST(Dropout, RateZeroIsIdentity) {
    Tensor x = random({5, 7}, 4, DataType::f64);
    Generator g(3);
    DropoutResult r = dropout(x, 0.0, g);
    EXPECT_TRUE(bitwise_equal(r.y, x));
    EXPECT_TRUE(bitwise_equal(r.mask, Tensor::ones(x.shape(), DataType::f64)));
    EXPECT_EQ(g.offset(), 35u);
}

TEST(Dropout, IndependentOfThreadCountAndStrides) {
    ScopedNumThreads restore(num_threads());
    Tensor x = random({257, 1031});
    Tensors results;
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        Generator g(99, 1000);
        results.push_back(dropout(x, 0.4, g).y);
    }
    EXPECT_TRUE(bitwise_equal(results[0], results[1]));
    // Element i of the row-major order owns counter offset + i, whatever the input's strides.
    Tensor xt = x.transpose(0, 1);
    Generator g1(5), g2(5);
    EXPECT_TRUE(bitwise_equal(dropout(xt, 0.4, g1).y, dropout(xt.contiguous(), 0.4, g2).y));
}

TEST(Dropout, PreservesTheMeanOnLargeTensors) {
    for (double rate : {0.1, 0.5, 0.8}) {
        Tensor x = Tensor::ones(Shape{1 << 20});
        Generator g(123);
        DropoutResult r = dropout(x, rate, g);
        const double keep = 1 - rate;
        // The mask has mean 1 and standard deviation sqrt(rate / keep); allow 5 standard errors.
        const double tolerance = 5 * std::sqrt(rate / keep / static_cast<double>(x.numel()));
        EXPECT_NEAR(reduce_mean(r.y).item(), 1.0, tolerance) << "rate " << rate;
        double dropped = 0;
        for (float m : r.mask.to_vector<float>()) dropped += m == 0.0f;
        EXPECT_NEAR(dropped / static_cast<double>(x.numel()), rate, 0.005) << "rate " << rate;
    }
}

TEST(Dropout, SixteenBitTypes) {
    for (DataType d : {DataType::f16, DataType::bf16}) {
        Tensor x = random({64}, 8).to(d);
        Generator g1(4), g2(4);
        DropoutResult a = dropout(x, 0.5, g1), b = dropout(x.to(DataType::f32), 0.5, g2);
        EXPECT_EQ(a.y.dtype(), d);
        // Same draws, so the same elements survive; the values differ only by the 16-bit rounding.
        auto ma = a.mask.to_vector<float>(), mb = b.mask.to_vector<float>();
        EXPECT_EQ(ma, mb);
    }
}

// ---- gather ----

TEST(Gather, Errors) {
    Tensor data = random({3, 5});
    expect_error<IndexError>(
        [&] {
            gather(data, vec<int64_t>({0, 7}), 1);
        },
        {"gather", "7", "5", "[3, 5]", "axis 1"});
    expect_error<IndexError>([&] { gather(data, vec<int32_t>({-1}), 0); }, {"gather", "-1", "3", "[3, 5]"});
    expect_error<IndexError>([&] { gather(data, vec<float>({3.0f}), 0); }, {"gather", "3", "[3, 5]"});
    expect_error<ValueError>([&] { gather(data, vec<float>({1.5f}), 0); },
                             {"gather", "1.5", "not an integer"});
    expect_error<ValueError>([&] { gather(data, vec<double>({std::nan("")}), 0); },
                             {"gather", "not an integer"});
    expect_error<ValueError>([&] { gather(data, vec<int64_t>({0}), 2); }, {"gather", "axis 2", "[3, 5]"});
    expect_error<ValueError>([&] { gather(Tensor::scalar(1), vec<int64_t>({0}), 0); }, {"gather", "scalar"});
    expect_error<ValueError>([&] { gather(data, Tensor(), 0); }, {"gather", "'indices'"});
}

TEST(Gather, NumPyTakeSemantics) {
    Tensor data = Tensor::arange({2, 3, 4});
    Tensor idx = Tensor::from_vector<int64_t>({2, 0, 2, 1}, {2, 2});
    Tensor out = gather(data, idx, 1);
    ASSERT_EQ(out.shape(), (Shape{2, 2, 2, 4}));
    EXPECT_EQ(out.at({1, 0, 1, 3}), data.at({1, 0, 3}));
    EXPECT_EQ(out.at({0, 1, 0, 2}), data.at({0, 2, 2}));
    // A scalar index drops the axis; float indices work when integral.
    EXPECT_EQ(gather(data, Tensor::scalar(2, DataType::f64), -1).shape(), (Shape{2, 3}));
    EXPECT_EQ(gather(data, vec<float>({1, 1}), 0).at({1, 2, 3}), data.at({1, 2, 3}));
}

TEST(Gather, IntegerAndSixteenBitData) {
    for (DataType d : {DataType::i32, DataType::i64, DataType::u8, DataType::f16, DataType::bf16}) {
        Tensor data = Tensor::arange({4, 3}, d);
        Tensor out = gather(data, vec<int32_t>({3, 1, 3}), 0);
        EXPECT_EQ(out.dtype(), d);
        EXPECT_EQ(out.to_vector<double>(), (std::vector<double>{9, 10, 11, 3, 4, 5, 9, 10, 11}))
            << dtype_name(d);
    }
}

TEST(Gather, DeterministicWithDuplicateIndices) {
    ScopedNumThreads restore(num_threads());
    Tensor data = random({50, 300});
    Tensor idx = Tensor::empty(Shape{4000}, DataType::i64);
    for (int64_t i = 0; i < idx.numel(); ++i) idx.data<int64_t>()[i] = (i * 7) % 50;
    Tensors results;
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        results.push_back(gather(data, idx, 0));
    }
    EXPECT_TRUE(bitwise_equal(results[0], results[1]));
    EXPECT_TRUE(bitwise_equal(results[0].select(0, 57), data.select(0, (57 * 7) % 50)));
}

// ---- scatter_add ----

TEST(ScatterAdd, Errors) {
    Tensor target = Tensor::zeros(Shape{4, 3});
    Tensor idx = vec<int64_t>({0, 2});
    expect_error<ShapeError>(
        [&] {
            scatter_add(target, idx, Tensor::zeros(Shape{3, 3}), 0);
        },
        {"scatter_add", "[3, 3]", "[2, 3]", "[4, 3]"});
    expect_error<TypeError>(
        [&] {
            scatter_add(target, idx, Tensor::zeros(Shape{2, 3}, DataType::f64), 0);
        },
        {"scatter_add", "float64", "float32"});
    expect_error<IndexError>(
        [&] {
            scatter_add(target, vec<int64_t>({4}), Tensor::zeros(Shape{1, 3}), 0);
        },
        {"scatter_add", "4", "[4, 3]"});
    expect_error<ValueError>(
        [&] {
            scatter_add(target, idx, Tensor::zeros(Shape{2, 3}), -3);
        },
        {"scatter_add", "axis -3", "[4, 3]"});
}

TEST(ScatterAdd, AccumulatesDuplicatesDeterministically) {
    ScopedNumThreads restore(num_threads());
    // Few target rows and many indices: every row is hit hundreds of times.
    const int64_t rows = 4, width = 300, n = 5000;
    Tensor target = random({rows, width}, 1);
    Tensor idx = Tensor::empty(Shape{n}, DataType::i64);
    for (int64_t i = 0; i < n; ++i) idx.data<int64_t>()[i] = (i * i + 3) % rows;
    Tensor updates = random({n, width}, 2);
    Tensors results;
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        results.push_back(scatter_add(target, idx, updates, 0));
    }
    EXPECT_TRUE(bitwise_equal(results[0], results[1]));
    // The sum runs in index order in float, exactly as a serial loop would.
    std::vector<float> expect = target.to_vector<float>();
    auto u = updates.to_vector<float>();
    for (int64_t j = 0; j < n; ++j)
        for (int64_t i = 0; i < width; ++i)
            expect[static_cast<size_t>(idx.data<int64_t>()[j] * width + i)] +=
                u[static_cast<size_t>(j * width + i)];
    EXPECT_EQ(results[0].to_vector<float>(), expect);
    // Along the last axis too (threads then split the rows).
    Tensor t2 = Tensor::zeros(Shape{3, 2});
    Tensor r2 = scatter_add(t2, vec<int64_t>({1, 1, 0, 1}), Tensor::ones(Shape{3, 4}), -1);
    EXPECT_EQ(r2.to_vector<float>(), (std::vector<float>{1, 3, 1, 3, 1, 3}));
}

TEST(ScatterAdd, IntegerTypes) {
    Tensor target = Tensor::arange({3}, DataType::i32);
    Tensor out =
        scatter_add(target, vec<int64_t>({2, 2, 0}), Tensor::from_vector<int32_t>({10, 20, 5}, {3}), 0);
    EXPECT_EQ(out.to_vector<int32_t>(), (std::vector<int32_t>{5, 1, 32}));
}

// ---- permute ----

TEST(Permute, Errors) {
    Tensor x = Tensor::zeros(Shape{2, 3, 4});
    expect_error<ValueError>([&] { permute(x, {1, 0}); }, {"permute", "[2, 3, 4]", "rank 3"});
    expect_error<ValueError>([&] { permute(x, {0, 1, 1}); }, {"permute", "appears twice", "[2, 3, 4]"});
    expect_error<ValueError>([&] { permute(x, {0, 1, 3}); }, {"permute", "axis 3", "[2, 3, 4]"});
}

TEST(Permute, TiledTransposeMatchesAStridedCopy) {
    ScopedNumThreads restore(num_threads());
    for (DataType d : {DataType::f32, DataType::f64, DataType::bf16, DataType::u8}) {
        Tensor x = random({513, 1027}, 6, DataType::f32, 0, 200).to(d);  // u8 needs non-negative values
        Tensor expect = x.transpose(0, 1).contiguous();
        for (int threads : {1, 2}) {
            set_num_threads(threads);
            Tensor y = permute(x, {1, 0});
            EXPECT_TRUE(y.is_contiguous());
            EXPECT_TRUE(bitwise_equal(y, expect)) << dtype_name(d) << " threads " << threads;
        }
    }
    // Batched, and from a non-contiguous source (every other column).
    Tensor big = random({3, 100, 130}, 7);
    Tensor view = big.slice(2, 0, 130, 2);
    EXPECT_TRUE(bitwise_equal(permute(view, {0, 2, 1}), view.permute({0, 2, 1}).contiguous()));
    EXPECT_TRUE(bitwise_equal(permute(big, {2, 0, 1}), big.permute({2, 0, 1}).contiguous()));
}

// ---- concat ----

TEST(Concat, Errors) {
    Tensor a = Tensor::zeros(Shape{2, 3}), b = Tensor::zeros(Shape{2, 4});
    expect_error<ValueError>([&] { concat({}, 0); }, {"concat", "no operands"});
    expect_error<ShapeError>([&] { concat({a, b}, 0); }, {"concat", "operand 1", "[2, 4]", "[2, 3]"});
    expect_error<ShapeError>(
        [&] {
            concat({a, Tensor::zeros(Shape{2, 3, 1})}, 0);
        },
        {"concat", "operand 1", "[2, 3, 1]"});
    expect_error<TypeError>(
        [&] {
            concat({a, Tensor::zeros(Shape{2, 3}, DataType::f64)}, 0);
        },
        {"concat", "operand 1", "float64"});
    expect_error<ValueError>([&] { concat({a, a}, 2); }, {"concat", "axis 2", "[2, 3]"});
    expect_error<ValueError>(
        [&] {
            concat({Tensor::scalar(1), Tensor::scalar(2)}, 0);
        },
        {"concat", "scalar"});
}

TEST(Concat, JoinsAlongAnyAxis) {
    Tensor a = Tensor::arange({2, 2}), b = Tensor::full({2, 1}, 9);
    EXPECT_EQ(concat({a, b}, -1).to_vector<float>(), (std::vector<float>{0, 1, 9, 2, 3, 9}));
    EXPECT_EQ(concat({a, Tensor::zeros(Shape{0, 2}), a}, 0).shape(), (Shape{4, 2}));
    Tensor i = concat({Tensor::arange({2}, DataType::i64), Tensor::arange({1}, DataType::i64)}, 0);
    EXPECT_EQ(i.to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 0}));
}

// ---- pad ----

TEST(Pad, Errors) {
    Tensor x = Tensor::zeros(Shape{3, 4});
    expect_error<ValueError>([&] { pad(x, {1}, {1, 1}); }, {"pad", "[1]", "[3, 4]"});
    expect_error<ValueError>([&] { pad(x, {0, -1}, {0, 0}); }, {"pad", "negative", "[3, 4]"});
    expect_error<ValueError>(
        [&] {
            pad(x, {3, 0}, {0, 0}, PadMode::reflect);
        },
        {"pad", "reflect", "3", "[3, 4]"});
    expect_error<ValueError>(
        [&] {
            pad(x, {0, 0}, {0, 5}, PadMode::symmetric);
        },
        {"pad", "symmetric", "5", "[3, 4]"});
    EXPECT_NO_THROW(pad(x, {0, 0}, {0, 4}, PadMode::symmetric));
    EXPECT_NO_THROW(pad(x, {2, 3}, {2, 3}, PadMode::reflect));
}

TEST(Pad, NumPyModes) {
    Tensor x = vec<float>({1, 2, 3, 4, 5});
    EXPECT_EQ(pad(x, {2}, {3}, PadMode::reflect).to_vector<float>(),
              (std::vector<float>{3, 2, 1, 2, 3, 4, 5, 4, 3, 2}));
    EXPECT_EQ(pad(x, {2}, {3}, PadMode::symmetric).to_vector<float>(),
              (std::vector<float>{2, 1, 1, 2, 3, 4, 5, 5, 4, 3}));
    EXPECT_EQ(pad(x.to(DataType::i32), {1}, {2}, PadMode::constant, 7).to_vector<int32_t>(),
              (std::vector<int32_t>{7, 1, 2, 3, 4, 5, 7, 7}));
    // 2-D reflect touches the corners through both axes.
    Tensor m = Tensor::arange({2, 2});
    EXPECT_EQ(pad(m, {1, 1}, {0, 0}, PadMode::reflect).to_vector<float>(),
              (std::vector<float>{3, 2, 3, 1, 0, 1, 3, 2, 3}));
}

// Gradients of ones through CNTK's own pad tests' patterns (each cell counts the output cells that copy it).
TEST(Pad, GradientCountsTheCopies) {
    Tensor ones = Tensor::ones(Shape{4, 7});  // symmetric [(1, 0), (2, 1)] of a [2, 3]
    EXPECT_EQ(pad_grad(ones.slice(0, 0, 3).slice(1, 0, 6), Shape{2, 3}, {1, 2}, PadMode::symmetric)
                  .to_vector<float>(),
              (std::vector<float>{4, 4, 4, 2, 2, 2}));
    EXPECT_EQ(pad_grad(ones, Shape{2, 3}, {1, 2}, PadMode::reflect).to_vector<float>(),
              (std::vector<float>{4, 6, 4, 4, 6, 4}));
    // Constant padding passes the interior through; a weighted gradient lands on the mirrored cells.
    EXPECT_EQ(pad_grad(ones, Shape{2, 3}, {1, 2}, PadMode::constant).to_vector<float>(),
              (std::vector<float>(6, 1.0f)));
    EXPECT_EQ(
        pad_grad(vec<double>({10, 20, 1, 2, 3, 30}), Shape{3}, {2}, PadMode::reflect).to_vector<double>(),
        (std::vector<double>{1, 2 + 20 + 30, 3 + 10}));
    expect_error<ValueError>(
        [&] {
            pad_grad(ones, Shape{2, 8}, {1, 2}, PadMode::reflect);
        },
        {"pad_grad", "[4, 7]", "[2, 8]"});
}

// ---- one_hot ----

TEST(OneHot, Errors) {
    Tensor idx = vec<int64_t>({0, 5});
    expect_error<IndexError>([&] { one_hot(idx, 5); }, {"one_hot", "5", "[2]"});
    expect_error<IndexError>([&] { one_hot(vec<int32_t>({-2}), 5); }, {"one_hot", "-2"});
    expect_error<ValueError>([&] { one_hot(vec<float>({0.5f}), 5); }, {"one_hot", "0.5", "not an integer"});
    expect_error<ValueError>([&] { one_hot(idx, 0); }, {"one_hot", "num_classes", "[2]"});
    expect_error<TypeError>([&] { one_hot(idx, 6, -1, DataType::i32); }, {"one_hot", "int32"});
    expect_error<ValueError>([&] { one_hot(idx, 6, 2); }, {"one_hot", "axis 2", "[2]"});
}

TEST(OneHot, ClassAxisPlacement) {
    Tensor idx = vec<float>({2, 0});  // CNTK feeds class labels as floats
    EXPECT_EQ(one_hot(idx, 3).to_vector<float>(), (std::vector<float>{0, 0, 1, 1, 0, 0}));
    Tensor first = one_hot(idx, 3, 0, DataType::f64);
    EXPECT_EQ(first.shape(), (Shape{3, 2}));
    EXPECT_EQ(first.to_vector<double>(), (std::vector<double>{0, 1, 0, 0, 1, 0}));
}

// ---- top_k ----

TEST(TopK, Errors) {
    Tensor x = Tensor::zeros(Shape{2, 5});
    expect_error<ValueError>([&] { top_k(x, 0); }, {"top_k", "k = 0", "[2, 5]"});
    expect_error<ValueError>([&] { top_k(x, 3, 0); }, {"top_k", "k = 3", "[1, 2]", "[2, 5]"});
    expect_error<ValueError>([&] { top_k(x, 1, 2); }, {"top_k", "axis 2", "[2, 5]"});
    expect_error<ValueError>([&] { top_k(Tensor::scalar(1), 1); }, {"top_k", "scalar"});
}

TEST(TopK, NanFirstThenLargestTiesByLowerIndex) {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    Tensor x = vec<float>({2, nan, 5, 2, 5, nan, -1});
    TopKResult r = top_k(x, 5);
    EXPECT_EQ(r.indices.dtype(), DataType::i64);
    EXPECT_EQ(r.indices.to_vector<int64_t>(), (std::vector<int64_t>{1, 5, 2, 4, 0}));
    auto v = r.values.to_vector<float>();
    EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]));
    EXPECT_EQ(std::vector<float>(v.begin() + 2, v.end()), (std::vector<float>{5, 5, 2}));
    TopKResult ints = top_k(Tensor::from_vector<int32_t>({3, 9, 9, 1, 4, 0}, {2, 3}), 2, 0);
    EXPECT_EQ(ints.values.to_vector<int32_t>(), (std::vector<int32_t>{3, 9, 9, 1, 4, 0}));
    EXPECT_EQ(ints.indices.to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
}
