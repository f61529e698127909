// CNTK v2 files, attribute by attribute: what CNTK wrote under which keys, and attributes ctk does not
// read travelling with the Function and written back.
#include <gtest/gtest.h>

#include "ctk/formats/model.h"
#include "ctk/graph/graph_ops.h"
#include "formats/cntk_dictionary.h"
#include "formats/cntk_v2_test_util.h"
#include "formats/formats_test_util.h"

namespace ctk {
namespace {

using formats::proto::Dictionary;

#define REQUIRE_TESTDATA(var, rel) const std::string var = test::cntk_testdata(rel)

// Attributes of a newer CNTK that ctk does not read survive a load and a save with their types.
TEST(CntkV2Model, UnknownAttributesAreKept) {
    REQUIRE_TESTDATA(path, "models-v2/batch.norm.no.sample.count.v2.bin");
    Dictionary d = formats::read_cntk_dictionary_file(path);
    auto* functions = (*d.mutable_data())["primitive_functions"].mutable_vector_value();
    auto* conv = functions->mutable_value(0)->mutable_dictionary_value();
    ASSERT_EQ(conv->data().at("op").size_t_value(), 33u);
    auto* attrs = (*conv->mutable_data())["attributes"].mutable_dictionary_value();
    (*attrs->mutable_data())["futureCount"] = formats::dv_int(-7);
    (*attrs->mutable_data())["futureShape"] = formats::dv_shape({2, 3});
    FunctionPtr model = formats::cntk_v2_model_from_dictionary(d, "future");
    Dictionary saved = formats::cntk_v2_model_dictionary(model);
    bool found = false;
    for (const auto& f : saved.data().at("primitive_functions").vector_value().value()) {
        const auto& fd = f.dictionary_value().data();
        if (fd.at("op").size_t_value() != 33u) continue;
        const auto& a = fd.at("attributes").dictionary_value().data();
        ASSERT_TRUE(a.count("futureCount") && a.count("futureShape"));
        EXPECT_EQ(a.at("futureCount").value_type(), formats::proto::DictionaryValue::Int);
        EXPECT_EQ(a.at("futureCount").int_value(), -7);
        EXPECT_EQ(a.at("futureShape").nd_shape_value().shape_dim_size(), 2);
        EXPECT_EQ(a.at("futureShape").nd_shape_value().shape_dim(0), 3u);  // column-major, as written
        // The attributes ctk does write are not duplicated or overridden by the kept ones.
        EXPECT_EQ(a.at("strides").nd_shape_value().shape_dim(2), 3u);
        found = true;
    }
    EXPECT_TRUE(found);
}

// OneHot under CNTK's own keys (numClass, oneHotOutputSparse, onehotAxis: what CNTK's OneHotOp wrote and
// reads); ctk's earlier files, with outputSparse and axis, still read.
TEST(CntkV2Model, OneHotUsesCntksAttributeNames) {
    const Variable x = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "x");
    const FunctionPtr model = one_hot(x, 5, false, 0);
    Dictionary d = formats::cntk_v2_model_dictionary(model);
    auto* functions = (*d.mutable_data())["primitive_functions"].mutable_vector_value();
    auto* op = functions->mutable_value(0)->mutable_dictionary_value();
    ASSERT_EQ(op->data().at("op").size_t_value(), 68u);
    auto* attrs = (*op->mutable_data())["attributes"].mutable_dictionary_value();
    for (const char* key : {"numClass", "oneHotOutputSparse", "onehotAxis"})
        EXPECT_TRUE(attrs->data().count(key)) << key;
    EXPECT_FALSE(attrs->data().count("outputSparse") || attrs->data().count("axis"));
    const Tensor data = Tensor::from_vector(std::vector<float>{0, 4, 2, 1, 1, 3}, Shape{2, 3});
    auto eval = [&](const FunctionPtr& f) {
        ValueMap out{{f->output(), Value()}};
        f->forward({{f->arguments()[0], Value(data)}}, out);
        return out.at(f->output()).data().to_vector<double>();
    };
    const std::vector<double> expected = eval(model);
    EXPECT_EQ(eval(formats::cntk_v2_model_from_dictionary(d, "one_hot")), expected);
    // The keys ctk wrote before: read as well.
    auto* data_map = attrs->mutable_data();
    (*data_map)["outputSparse"] = (*data_map)["oneHotOutputSparse"];
    (*data_map)["axis"] = (*data_map)["onehotAxis"];
    data_map->erase("oneHotOutputSparse");
    data_map->erase("onehotAxis");
    EXPECT_EQ(eval(formats::cntk_v2_model_from_dictionary(d, "one_hot_v0")), expected);
}

}  // namespace
}  // namespace ctk
