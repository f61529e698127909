// bind_input: the one binding of data to an input variable (ctk/graph/bind.h), used by the executor, the
// Trainer's reader streams, Python and the C API. Each rule on its own, the errors naming what is wrong,
// and binding twice costing nothing.
#include <gtest/gtest.h>

#include "ctk/graph/bind.h"

using namespace ctk;

namespace {

Tensor iota(const Dims& dims, DataType dtype = DataType::f32) {
    std::vector<double> v(static_cast<size_t>(Shape(dims).numel()));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i) + 1.0;
    return Tensor::from_vector(v, Shape(dims)).to(dtype);
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "";
}

BindOptions stream(std::string_view name) {
    BindOptions o;
    o.reshape_samples = true;
    o.stream = name;
    return o;
}

}  // namespace

TEST(Bind, AReaderStreamTakesTheInputsSampleShapeAndGivenDataMustMatchIt) {
    Variable x = input_variable({1, 2, 3}, DataType::f32, false, false, default_batch_axes(), "x");
    const Value v = bind_input(x, Value(iota({4, 6})), stream("features"));
    EXPECT_EQ(v.data().shape(), Shape({4, 1, 2, 3}));
    EXPECT_EQ(v.data().to_vector<double>(), iota({4, 6}).to_vector<double>());
    // Not a reader's stream: data of another shape is an error, never a silent reshape.
    const std::string e = error_of([&] { bind_input(x, Value(iota({4, 6}))); });
    EXPECT_NE(e.find("data of shape [4, 6] for Input('x'"), std::string::npos) << e;
    // A stream whose samples hold another number of elements names the stream.
    const std::string s = error_of([&] { bind_input(x, Value(iota({4, 5})), stream("features")); });
    EXPECT_NE(s.find("stream 'features'"), std::string::npos) << s;
    EXPECT_NE(s.find("do not fit"), std::string::npos) << s;
}

TEST(Bind, SequencesOfOneFrameFeedAnInputWithoutASequenceAxisAsABatch) {
    Variable x = input_variable({3});
    const Value seqs = Value::from_sequences({iota({1, 3}), iota({1, 3}, DataType::f32)});
    const Value v = bind_input(x, seqs);
    EXPECT_FALSE(v.has_layout());
    EXPECT_EQ(v.data().shape(), Shape({2, 3}));
    // One-hot indices stay indices.
    auto layout = std::make_shared<SequenceLayout>(std::vector<int64_t>{1, 1, 1});
    const Value hot = Value::one_hot(Tensor::from_vector(std::vector<int64_t>{2, 0, 1}, Shape{3, 1}), 3,
                                     DataType::f32, layout);
    const Value h = bind_input(x, hot);
    ASSERT_TRUE(h.is_one_hot());
    EXPECT_EQ(h.one_hot_indices().to_vector<int64_t>(), (std::vector<int64_t>{2, 0, 1}));
    // Longer sequences are an error that says why.
    const Value longer = Value::from_sequences({iota({2, 3}), iota({1, 3})});
    const std::string e = error_of([&] { bind_input(x, longer, stream("words")); });
    EXPECT_NE(e.find("stream 'words'"), std::string::npos) << e;
    EXPECT_NE(e.find("one sample per sequence"), std::string::npos) << e;
}

TEST(Bind, OneSampleIsABatchOfOneAndBatchOfOneFrameIsABatch) {
    Variable x = input_variable({2, 3});
    EXPECT_EQ(bind_input(x, Value(iota({2, 3}))).data().shape(), Shape({1, 2, 3}));
    EXPECT_EQ(bind_input(x, Value(iota({5, 1, 2, 3}))).data().shape(), Shape({5, 2, 3}));
    // A sample of other dims is not taken for one sample.
    EXPECT_THROW(bind_input(x, Value(iota({3, 2}))), ShapeError);
    // A sequence input takes neither: its data says where its frames are.
    Variable s = input_variable({3}, DataType::f32, false, false, default_sequence_axes(), "s");
    EXPECT_THROW(bind_input(s, Value(iota({3}))), ShapeError);
}

TEST(Bind, DataIsConvertedToTheInputsDtypeAndIntegersAreRefused) {
    Variable x = input_variable({2}, DataType::f64);
    const Value v = bind_input(x, Value(iota({3, 2}, DataType::f32)));
    EXPECT_EQ(v.data().dtype(), DataType::f64);
    const std::string e = error_of([&] { bind_input(x, Value(iota({3, 2}, DataType::i32))); });
    EXPECT_NE(e.find("is not floating-point"), std::string::npos) << e;
    EXPECT_THROW(bind_input(x, Value()), ValueError);
}

TEST(Bind, PaddingIsZeroedOnceAndABoundValueBindsAgainForFree) {
    Variable s = input_variable({2}, DataType::f32, false, false, default_sequence_axes(), "s");
    Tensor data = Tensor::full(Shape{2, 3, 2}, std::numeric_limits<float>::quiet_NaN());
    data.select(0, 0).copy_from(iota({3, 2}));
    data.select(0, 1).slice(0, 0, 1).copy_from(iota({1, 2}));
    auto layout = std::make_shared<SequenceLayout>(std::vector<int64_t>{3, 1});
    const Value bound = bind_input(s, Value(data, layout));
    const std::vector<double> got = bound.data().to_vector<double>();
    for (size_t i = 8; i < 12; ++i) EXPECT_EQ(got[i], 0.0) << "padded element " << i;
    // Again: the same storage, no copy.
    EXPECT_TRUE(bind_input(s, bound).data().shares_storage(bound.data()));
    // Values made from sequences are zero-padded already.
    const Value seqs = Value::from_sequences({iota({3, 2}), iota({1, 2})});
    EXPECT_TRUE(bind_input(s, seqs).data().shares_storage(seqs.data()));
    // A layout that does not fit the data names both.
    auto wrong = std::make_shared<SequenceLayout>(std::vector<int64_t>{3, 1, 2});
    const std::string e = error_of([&] { bind_input(s, Value(data, wrong)); });
    EXPECT_NE(e.find("3 sequences"), std::string::npos) << e;
}
