// CNTK v2 model and Dictionary files: the real files CNTK wrote, round trips of ctk models through the
// format, and broken or hostile files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <random>

#include "ctk/core/error.h"
#include "ctk/formats/model.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/layers.h"
#include "formats/cntk_dictionary.h"
#include "formats/cntk_v2_test_util.h"
#include "formats/formats_test_util.h"

namespace ctk {
namespace {

using test::random_tensor;
using test::round_trip;

namespace fs = std::filesystem;
using formats::proto::Dictionary;

#define REQUIRE_TESTDATA(var, rel) const std::string var = test::cntk_testdata(rel)

// ---------------------------------------------------------------- Dictionaries

TEST(CntkDictionary, ReadsTheV2Beta1DictionaryCntkWrote) {
    REQUIRE_TESTDATA(path, "models-v2/v2.0.beta1.0.dictionary.proto.bin");
    Dictionary d = formats::read_cntk_dictionary_file(path);
    ctk::Dictionary c = load_cntk_dictionary(path);
    EXPECT_DOUBLE_EQ(c.at("Double").as_double(), 54669.6505046);
    EXPECT_EQ(c.at("Int").as_int(), -9843);
    EXPECT_EQ(c.at("SizeT").as_int(), 49308572);
    EXPECT_FALSE(c.at("Bool").as_bool());
    EXPECT_EQ(c.at("String").as_string(), "String");
    EXPECT_NEAR(c.at("Float").as_double(), -0.025451000779867172, 1e-9);
    // NDShape [54, 56516, 39467, 19] column-major reads as row-major dims.
    const auto& shape = c.at("NDShape").as_list();
    ASSERT_EQ(shape.size(), 4u);
    EXPECT_EQ(shape[0].as_int(), 19);
    EXPECT_EQ(shape[3].as_int(), 54);
    const auto& axis = c.at("Axis").as_dictionary();
    EXPECT_EQ(axis.at("name").as_string(), "axis");
    EXPECT_EQ(axis.at("static_axis_idx").as_int(), formats::kAxisIndexDynamic);
    EXPECT_TRUE(axis.at("is_ordered_dynamic_axis").as_bool());
    // NDArrayView<float> [13, 30] column-major: a ctk [30, 13] tensor with the same memory order.
    const Tensor& f = c.at("NDArrayView<float>").as_tensor();
    EXPECT_EQ(f.shape(), Shape({30, 13}));
    EXPECT_EQ(f.dtype(), DataType::f32);
    EXPECT_FLOAT_EQ(f.to_vector<float>()[0], 6.00705623626709f);
    const Tensor& g = c.at("NDArrayView<double>").as_tensor();
    EXPECT_EQ(g.shape(), Shape({65}));
    EXPECT_DOUBLE_EQ(g.to_vector<double>()[0], 11.6837625448873);
    const auto& vec = c.at("Vector").as_list();
    EXPECT_EQ(vec.size(), 10u);
    EXPECT_EQ(vec[0].as_list()[0].as_string(), "string_10003392056472839596");
    const auto& nested = c.at("Dictionary").as_dictionary();
    EXPECT_EQ(nested.at("key4").as_string(), "строка_9767708997756962562");
    EXPECT_EQ(nested.at("key5").as_tensor().shape(), Shape({3, 1, 2}));
    EXPECT_TRUE(c.at("None").is_none());
    EXPECT_EQ(d.data().size(), c.size());
}

TEST(CntkDictionary, ReadsPastAndFutureDictionaries) {
    REQUIRE_TESTDATA(past, "models-v2/past.dictionary.proto.bin");
    REQUIRE_TESTDATA(future, "models-v2/future.dictionary.proto.bin");
    // The past file's SizeT values use all 64 bits; the protobuf level keeps them.
    Dictionary p = formats::read_cntk_dictionary_file(past);
    EXPECT_EQ(p.data().at("Dictionary").dictionary_value().data().at("key2").size_t_value(),
              13980328397181907123ULL);
    EXPECT_EQ(p.data().at("Axis").axis_value().static_axis_idx(), formats::kAxisIndexDynamic);
    // At the ctk level a SizeT above 2^63 keeps its bits in a signed int.
    EXPECT_EQ(static_cast<uint64_t>(
                  load_cntk_dictionary(past).at("Dictionary").as_dictionary().at("key2").as_int()),
              13980328397181907123ULL);
    // The future file has a value type this format version does not know: it becomes None, as in CNTK.
    ctk::Dictionary f = load_cntk_dictionary(future);
    EXPECT_GT(f.size(), 0u);
    bool some_none = false;
    for (const auto& [k, v] : f.items()) some_none = some_none || v.is_none();
    EXPECT_TRUE(some_none);
}

TEST(CntkDictionary, ReadsTheLearnerCheckpointCntkWrote) {
    REQUIRE_TESTDATA(path, "models-v2/learner.checkpoint.backcompat.bin");
    ctk::Dictionary c = load_cntk_dictionary(path);
    EXPECT_EQ(c.at("type").as_string(), "Learner");
    EXPECT_EQ(c.at("sample_count").as_int(), 10);
    EXPECT_EQ(c.at("minibatchCount").as_int(), 10);
    EXPECT_EQ(c.at("Parameter1").as_tensor().shape(), Shape({3, 50}));
    EXPECT_EQ(c.at("Parameter130").as_tensor().shape(), Shape({}));
    const auto& schedule = c.at("learnig_rate_schedule").as_dictionary();
    EXPECT_DOUBLE_EQ(schedule.at("schedule").as_dictionary().at("0").as_double(), 0.005);
}

TEST(CntkDictionary, RoundTripsCtkDictionariesThroughCntkFiles) {
    ctk::Dictionary inner{{"count", int64_t(7)}, {"neg", int64_t(-3)}, {"rate", 0.25}};
    ctk::Dictionary d{{"name", "learner"},
                      {"flag", true},
                      {"weights", Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape({2, 3}))},
                      {"state", DictionaryValue(inner)},
                      {"list", DictionaryValue::List{DictionaryValue(int64_t(1)), DictionaryValue("two")}}};
    const std::string dir = test::temp_dir("cntk_dict");
    save_cntk_dictionary(d, dir + "/d.ckp");
    EXPECT_EQ(load_cntk_dictionary(dir + "/d.ckp"), d);
    EXPECT_FALSE(fs::exists(dir + "/d.ckp.tmp"));
}

TEST(CntkDictionary, LargeFileFramingRoundTrips) {
    Dictionary d;
    d.set_version(1);
    (*d.mutable_data())["a"] = formats::dv_tensor(random_tensor({64, 32}, 1));
    (*d.mutable_data())["b"] =
        formats::dv_vector({formats::dv_tensor(random_tensor({5}, 2)), formats::dv_int(3)});
    (*d.mutable_data())["c"] = formats::dv_tensor(Tensor::from_vector<double>({1.5, -2.5}, Shape({2})));
    // A threshold of 1 byte forces the framing CNTK uses above 2 GB.
    const std::string bytes = formats::serialize_cntk_dictionary(d, 1);
    ASSERT_GE(bytes.size(), 8u);
    EXPECT_EQ(bytes.substr(0, 4), "ktnc");  // 0x636e746b little-endian
    Dictionary back = formats::parse_cntk_dictionary(bytes, "large");
    EXPECT_EQ(formats::serialize_cntk_dictionary(back), formats::serialize_cntk_dictionary(d));
    // The payload cut short, or trailing bytes: clear errors.
    EXPECT_THROW(formats::parse_cntk_dictionary(bytes.substr(0, bytes.size() - 3), "cut"), IOError);
    EXPECT_THROW(formats::parse_cntk_dictionary(bytes + "xx", "long"), IOError);
    std::string huge_meta = bytes;
    huge_meta[7] = '\x7f';
    EXPECT_THROW(formats::parse_cntk_dictionary(huge_meta, "meta"), IOError);
}

TEST(CntkDictionary, RefusesTensorsLargerThanTheirData) {
    Dictionary d;
    d.set_version(1);
    auto v = formats::dv_tensor(Tensor::from_vector<float>({1, 2}, Shape({2})));
    v.mutable_nd_array_view_value()->mutable_shape()->set_shape_dim(0, uint64_t(1) << 39);
    (*d.mutable_data())["t"] = v;
    const std::string bytes = formats::serialize_cntk_dictionary(d);
    EXPECT_THROW(
        {
            Dictionary p = formats::parse_cntk_dictionary(bytes, "hostile");
            formats::from_cntk_proto(p, "hostile");
        },
        IOError);
    v.mutable_nd_array_view_value()->mutable_shape()->set_shape_dim(0, ~uint64_t(0) / 3);
    (*d.mutable_data())["t"] = v;
    EXPECT_THROW(formats::parse_cntk_dictionary(formats::serialize_cntk_dictionary(d), "hostile"), IOError);
}

TEST(CntkDictionary, HostileLengthsAreRejectedNamingTheFile) {
    Dictionary d;
    d.set_version(1);
    (*d.mutable_data())["t"] = formats::dv_tensor(random_tensor({6}, 3));
    (*d.mutable_data())["n"] = formats::dv_int(5);
    // Both framings: protobuf's own, and CNTK's large-file framing (a length header, values after).
    for (uint64_t threshold : {uint64_t(1) << 31, uint64_t(1)}) {
        const std::string bytes = formats::serialize_cntk_dictionary(d, threshold);
        // Every 4-byte window overwritten with a huge length: the file is either still a well-formed
        // Dictionary (the window held a value) or refused with an IOError naming it, never a crash or an
        // unbounded allocation (the ASan build runs this).
        int refused = 0;
        for (size_t at = 0; at + 4 <= bytes.size(); ++at) {
            std::string bad = bytes;
            const uint32_t huge = 0x7ffffff0u;
            std::memcpy(bad.data() + at, &huge, sizeof(huge));
            try {
                formats::from_cntk_proto(formats::parse_cntk_dictionary(bad, "hostile.ckp"), "hostile.ckp");
            } catch (const IOError& e) {
                ++refused;
                EXPECT_NE(std::string(e.what()).find("hostile.ckp"), std::string::npos) << e.what();
            }
        }
        EXPECT_GT(refused, static_cast<int>(bytes.size()) / 4) << "threshold " << threshold;
        if (threshold == 1) {  // the header's metadata length: refused with the sizes named
            std::string bad = bytes;
            const uint32_t huge = 0x7ffffff0u;
            std::memcpy(bad.data() + 4, &huge, sizeof(huge));
            std::string e;
            try {
                formats::parse_cntk_dictionary(bad, "hostile.ckp");
            } catch (const IOError& error) {
                e = error.what();
            }
            EXPECT_NE(e.find("declares 2147483632 bytes of metadata"), std::string::npos) << e;
        }
    }
}

// ---------------------------------------------------------------- the models CNTK wrote

TEST(CntkV2Model, LoadsTheBatchNormModelAndEvaluatesIt) {
    REQUIRE_TESTDATA(path, "models-v2/batch.norm.no.sample.count.v2.bin");
    EXPECT_EQ(detect_model_format(path), ModelFormat::cntk_v2);
    FunctionPtr model = load_model(path);
    // Structure: Convolution -> BatchNormalization -> ReLU over the input 'Images'.
    ASSERT_EQ(model->arguments().size(), 1u);
    const Variable images = model->arguments()[0];
    EXPECT_EQ(images.name(), "Images");
    EXPECT_EQ(images.shape(), (Dims{3, 5, 5}));
    ASSERT_EQ(images.dynamic_axes().size(), 2u);
    EXPECT_TRUE(images.dynamic_axes()[0].is_batch());
    EXPECT_TRUE(images.dynamic_axes()[1].is_sequence());
    const auto params = model->parameters();
    ASSERT_EQ(params.size(), 3u);
    Variable w;
    for (const auto& p : params)
        if (p.rank() == 4) w = p;
    ASSERT_TRUE(w.defined());
    EXPECT_EQ(w.shape(), (Dims{16, 3, 3, 3}));
    EXPECT_FLOAT_EQ(w.value().to_vector<float>()[0], -0.0356622189283371f);
    EXPECT_EQ(model->constants().size(), 3u);  // running mean, variance, and the sample count CNTK adds
    const Variable out = model->output();
    EXPECT_EQ(out.shape(), (Dims{16, 5, 5}));
    EXPECT_EQ(out.owner()->op_name(), "ReLU");
    const auto bn = out.owner()->inputs()[0].owner();
    EXPECT_EQ(bn->op_name(), "BatchNormalization");
    EXPECT_EQ(bn->inputs()[0].owner()->op_name(), "Convolution");
    EXPECT_DOUBLE_EQ(bn->attributes().get<double>("epsilon"), 1e-5);

    // Inference: the running mean and variance are 0 and the scale 1, so y = relu(conv(x) / sqrt(eps)),
    // with the convolution zero-padded ("same") and computed here in float64.
    Tensor x = random_tensor({1, 1, 3, 5, 5}, 7);
    ValueMap result = model->eval({{images, Value(x)}});
    const auto y = result.at(out).data().to_vector<float>();
    ASSERT_EQ(y.size(), 16u * 25u);
    const auto xv = x.to_vector<float>();
    const auto wv = w.value().to_vector<float>();
    double worst = 0;
    for (int o = 0; o < 16; ++o)
        for (int i = 0; i < 5; ++i)
            for (int j = 0; j < 5; ++j) {
                double acc = 0;
                for (int c = 0; c < 3; ++c)
                    for (int di = 0; di < 3; ++di)
                        for (int dj = 0; dj < 3; ++dj) {
                            const int ii = i + di - 1, jj = j + dj - 1;
                            if (ii < 0 || ii >= 5 || jj < 0 || jj >= 5) continue;
                            acc += double(wv[((o * 3 + c) * 3 + di) * 3 + dj]) * xv[(c * 5 + ii) * 5 + jj];
                        }
                const double want = std::max(0.0, acc / std::sqrt(1e-5));
                worst = std::max(worst, std::abs(want - y[(o * 5 + i) * 5 + j]) / (1.0 + std::abs(want)));
            }
    EXPECT_LT(worst, 1e-4);
}

TEST(CntkV2Model, LoadsThePolicyNetworkAndMatchesAHandComputedForward) {
    REQUIRE_TESTDATA(path, "models-v2/initial_policy_network.dnn");
    FunctionPtr model = load_model(path);
    ASSERT_EQ(model->arguments().size(), 1u);
    const Variable x = model->arguments()[0];
    EXPECT_EQ(x.shape(), (Dims{2}));
    EXPECT_EQ(model->parameters().size(), 4u);
    // Two Dense blocks; the outer one's root is a Combine inside the block.
    const Variable out = model->output();
    EXPECT_EQ(out.shape(), (Dims{3}));
    ASSERT_TRUE(out.owner()->is_block());
    EXPECT_EQ(out.owner()->op_name(), "Dense");
    EXPECT_EQ(out.owner()->inputs().back().owner()->op_name(), "Dense");
    EXPECT_EQ(model->find_all_with_name("W").size(), 0u);  // names are on parameters, not Functions

    // The parameter values as CNTK stored them (column-major [out, in] = row-major [in, out]).
    const double w1[2][2] = {{0.9886239767074585, 0.8578997850418091},
                             {0.6952153444290161, 1.0418099164962769}};
    const double w2[2][3] = {{-0.8021361231803894, -0.7965922951698303, -0.10688281059265137},
                             {-1.0493834018707275, -0.32666587829589844, 0.901240348815918}};
    const double b2[3] = {-0.23398998379707336, 0.9308199882507324, -0.6968429684638977};
    Tensor in = Tensor::from_vector<float>({0.5f, -1.25f, 2.0f, 0.75f}, Shape({2, 1, 2}));
    ValueMap result = model->eval({{x, Value(in)}});
    const auto y = result.at(out).data().to_vector<float>();
    ASSERT_EQ(y.size(), 6u);
    const auto xv = in.to_vector<float>();
    for (int n = 0; n < 2; ++n) {
        double h[2];
        for (int o = 0; o < 2; ++o) h[o] = std::max(0.0, xv[n * 2] * w1[0][o] + xv[n * 2 + 1] * w1[1][o]);
        for (int o = 0; o < 3; ++o)
            EXPECT_NEAR(y[n * 3 + o], h[0] * w2[0][o] + h[1] * w2[1][o] + b2[o], 1e-5);
    }
}

// ---------------------------------------------------------------- round trips

// Outputs equal bitwise (tolerance 0), or within `tolerance` relative to 1 + |value|.
void expect_same_outputs(const FunctionPtr& a, const FunctionPtr& b, const std::vector<Tensor>& inputs,
                         double tolerance = 0.0) {
    const auto args_a = a->arguments(), args_b = b->arguments();
    ASSERT_EQ(args_a.size(), args_b.size());
    ASSERT_EQ(args_a.size(), inputs.size());
    ValueMap ia, ib;
    for (size_t i = 0; i < inputs.size(); ++i) {
        EXPECT_EQ(args_a[i].shape(), args_b[i].shape());
        EXPECT_EQ(args_a[i].name(), args_b[i].name());
        ia.emplace(args_a[i], Value(inputs[i]));
        ib.emplace(args_b[i], Value(inputs[i]));
    }
    ValueMap ra = a->eval(ia), rb = b->eval(ib);
    const auto oa = a->outputs(), ob = b->outputs();
    ASSERT_EQ(oa.size(), ob.size());
    for (size_t i = 0; i < oa.size(); ++i) {
        EXPECT_EQ(oa[i].shape(), ob[i].shape());
        const auto va = ra.at(oa[i]).data().to_vector<float>(), vb = rb.at(ob[i]).data().to_vector<float>();
        if (tolerance == 0.0) {
            EXPECT_EQ(va, vb) << "output " << i;
            continue;
        }
        ASSERT_EQ(va.size(), vb.size());
        for (size_t j = 0; j < va.size(); ++j)
            EXPECT_NEAR(va[j], vb[j], tolerance * (1.0 + std::abs(va[j])))
                << "output " << i << " element " << j;
    }
}

TEST(CntkV2Model, MnistConvNetRoundTrips) {
    using namespace layers;
    Variable x = input_variable({1, 28, 28}, DataType::f32, false, false, default_batch_axes(), "features");
    FunctionPtr scaled = element_times(constant(0.00390625), x);
    FunctionPtr z;
    {
        default_options scope(
            LayerDefaults{.activation = ActivationFn([](const Variable& v) { return relu(v); })});
        ConvolutionOptions same;
        same.pad = true;
        FunctionPtr c1 = call(Convolution2D({5, 5}, 8, same), scaled);
        FunctionPtr p1 = call(MaxPooling({3, 3}, {2, 2}), c1);
        FunctionPtr c2 = call(Convolution2D({3, 3}, 12), p1);
        FunctionPtr p2 = call(AveragePooling({3, 3}, {2, 2}), c2);
        FunctionPtr d1 = call(Dense({32}), p2);
        FunctionPtr drop = call(Dropout(0.5), d1);
        z = call(Dense({10}, ActivationFn()), drop);
    }
    FunctionPtr back = round_trip(z, "convnet");
    EXPECT_EQ(back->parameters().size(), z->parameters().size());
    for (size_t i = 0; i < z->parameters().size(); ++i)
        EXPECT_EQ(back->parameters()[i].shape(), z->parameters()[i].shape());
    expect_same_outputs(z, back, {random_tensor({4, 1, 28, 28}, 3)});
    // A criterion pair (loss and metric) is a composite with two outputs.
    Variable labels = input_variable({10}, DataType::f32, false, false, default_batch_axes(), "labels");
    FunctionPtr criterion = combine({cross_entropy_with_softmax(z, labels), classification_error(z, labels)});
    FunctionPtr cback = round_trip(criterion, "criterion");
    EXPECT_EQ(cback->outputs().size(), 2u);
}

TEST(CntkV2Model, CifarStyleResNetWithBatchNormRoundTrips) {
    using namespace layers;
    Variable x = input_variable({3, 16, 16}, DataType::f32, false, false, default_batch_axes(), "image");
    ConvolutionOptions opt;
    opt.pad = true;
    opt.bias = false;
    FunctionPtr c = call(Convolution2D({3, 3}, 8, opt), x);
    FunctionPtr bn = call(BatchNormalization(1), c);
    FunctionPtr r = relu(bn);
    FunctionPtr c2 = call(Convolution2D({3, 3}, 8, opt), r);
    FunctionPtr bn2 = call(BatchNormalization(1), c2);
    FunctionPtr res = relu(plus(bn2, r));
    FunctionPtr pooled = call(GlobalAveragePooling(), res);
    FunctionPtr z = call(Dense({10}, ActivationFn()), pooled);
    // Give the batch-norm statistics values that are not their initial ones.
    for (const Variable& cst : z->constants())
        if (cst.rank() == 1 && cst.shape()[0] == 8) cst.set_value(Tensor::full(Shape({8}), 0.5));
    FunctionPtr back = round_trip(z, "resnet");
    expect_same_outputs(z, back, {random_tensor({2, 3, 16, 16}, 5)});
}

// One primitive op at a time, through a file and back.
struct OpCase {
    const char* name;
    std::function<FunctionPtr(const Variable&)> build;
    Dims input;
};

TEST(CntkV2Model, OpsRoundTrip) {
    const std::vector<OpCase> cases = {
        {"sigmoid", [](const Variable& v) { return sigmoid(v); }, {3, 4}},
        {"elu", [](const Variable& v) { return elu(v, 0.5); }, {3, 4}},
        {"square", [](const Variable& v) { return square(v); }, {3, 4}},
        {"ceil", [](const Variable& v) { return ceil(v); }, {3, 4}},
        {"round", [](const Variable& v) { return round(v); }, {3, 4}},
        {"selu", [](const Variable& v) { return selu(v); }, {3, 4}},
        {"softplus", [](const Variable& v) { return softplus(v); }, {3, 4}},
        {"softsign", [](const Variable& v) { return softsign(v); }, {3, 4}},
        {"leaky_relu", [](const Variable& v) { return leaky_relu(v, 0.2); }, {3, 4}},
        {"hard_sigmoid", [](const Variable& v) { return hard_sigmoid(v, 0.3, 0.4); }, {3, 4}},
        {"clip", [](const Variable& v) { return clip(v, -0.5, 0.5); }, {3, 4}},
        {"element_not", [](const Variable& v) { return element_not(floor(v)); }, {3, 4}},
        {"element_divide",
         [](const Variable& v) { return element_divide(v, plus(abs(v), constant(1.0))); },
         {3, 4}},
        {"element_max", [](const Variable& v) { return element_max(v, cos(v)); }, {3, 4}},
        {"element_min", [](const Variable& v) { return element_min(v, constant(0.25)); }, {3, 4}},
        {"element_and", [](const Variable& v) { return element_and(floor(v), ceil(v)); }, {3, 4}},
        {"element_or", [](const Variable& v) { return element_or(floor(v), constant(0.0)); }, {3, 4}},
        {"element_xor", [](const Variable& v) { return element_xor(floor(v), ceil(v)); }, {3, 4}},
        {"param_relu",
         [](const Variable& v) { return param_relu(constant(Tensor::full(Shape({4}), 0.1)), v); },
         {3, 4}},
        {"reduce_l1", [](const Variable& v) { return reduce_l1(v, {Axis(1)}); }, {3, 4}},
        {"reduce_l2", [](const Variable& v) { return reduce_l2(v); }, {3, 4}},
        {"reduce_sum_square",
         [](const Variable& v) { return reduce_sum_square(v, {Axis(0)}, false); },
         {3, 4}},
        {"uniform_random_like",
         [](const Variable& v) { return plus(v, uniform_random_like(v, -1.0, 1.0, 17)); },
         {3, 4}},
        {"normal_random",
         [](const Variable& v) {
             return plus(v, normal_random({3, 4}, DataType::f32, 0.0, 2.0, 5));
         },
         {3, 4}},
        {"pow", [](const Variable& v) { return pow(abs(v), constant(1.5)); }, {3, 4}},
        {"minus",
         [](const Variable& v) {
             return minus(v, constant(Tensor::from_vector<float>({1, 2, 3, 4}, Shape({4}))));
         },
         {3, 4}},
        {"times output_rank 2",
         [](const Variable& v) {
             return times(v, parameter({4, 2, 5}), 2);
         },
         {3, 4}},
        {"times_transpose",
         [](const Variable& v) {
             return times_transpose(v, parameter_from(Tensor::ones(Shape({6, 4}))));
         },
         {3, 4}},
        {"reduce_sum axis 0", [](const Variable& v) { return reduce_sum(v, {Axis(0)}); }, {3, 4}},
        {"reduce_mean axes",
         [](const Variable& v) {
             return reduce_mean(v, {Axis(0), Axis(-1)}, false);
         },
         {3, 4}},
        {"reduce_max all", [](const Variable& v) { return reduce_max(v); }, {3, 4}},
        {"argmax axis 1", [](const Variable& v) { return argmax(v, Axis(1)); }, {3, 4}},
        {"argmin all", [](const Variable& v) { return argmin(v); }, {3, 4}},
        {"softmax axis 0", [](const Variable& v) { return softmax(v, Axis(0)); }, {3, 4}},
        {"log_softmax", [](const Variable& v) { return log_softmax(v); }, {3, 4}},
        {"hardmax", [](const Variable& v) { return hardmax(v); }, {3, 4}},
        {"reshape",
         [](const Variable& v) {
             return reshape(v, {2, 6});
         },
         {3, 4}},
        {"reshape axes",
         [](const Variable& v) {
             return reshape(v, {2, 2}, 1, 2);
         },
         {3, 4, 5}},
        {"reshape begin",
         [](const Variable& v) {
             return reshape(v, {4, 5}, 1);
         },
         {3, 4, 5}},
        {"slice", [](const Variable& v) { return slice(v, {Axis(1)}, {1}, {3}); }, {3, 4}},
        {"slice 2 axes strided",
         [](const Variable& v) {
             return slice(v, {Axis(0), Axis(1)}, {0, 0}, {3, 4}, {2, 3});
         },
         {3, 4}},
        {"splice",
         [](const Variable& v) {
             return splice({v, v}, Axis(0));
         },
         {3, 4}},
        {"transpose",
         [](const Variable& v) {
             return transpose(v, {2, 0, 1});
         },
         {2, 3, 4}},
        {"swapaxes", [](const Variable& v) { return swapaxes(v, 0, 1); }, {3, 4}},
        {"pad",
         [](const Variable& v) {
             return pad(v, {{1, 0}, {0, 2}}, PadMode::constant, 0.5);
         },
         {3, 4}},
        {"one_hot", [](const Variable& v) { return one_hot(floor(abs(v)), 4); }, {3}},
        {"top_k", [](const Variable& v) { return top_k(v, 2); }, {3, 4}},
        {"cast", [](const Variable& v) { return cast(cast(v, DataType::f64), DataType::f32); }, {3, 4}},
        {"element_select",
         [](const Variable& v) { return element_select(greater(v, constant(0.0)), v, negate(v)); },
         {3, 4}},
        {"stop_gradient/alias", [](const Variable& v) { return alias(stop_gradient(v)); }, {3, 4}},
        {"pooling ceil",
         [](const Variable& v) {
             return pooling(v, PoolingType::average, {2, 2}, {2}, {false}, true, true);
         },
         {2, 5, 5}},
        {"global pooling", [](const Variable& v) { return pooling(v, PoolingType::max, {}); }, {2, 5, 5}},
        {"convolution strided",
         [](const Variable& v) {
             return convolution(parameter({4, 2, 3, 3}), v, {2, 1}, {false, true});
         },
         {2, 7, 6}},
        {"convolution groups dilation",
         [](const Variable& v) {
             return convolution(parameter({4, 1, 3, 3}), v, {1}, {true}, {2}, 2);
         },
         {2, 7, 7}},
        {"convolution_transpose",
         [](const Variable& v) {
             return convolution_transpose(parameter({2, 3, 3, 3}), v, {2}, {false});
         },
         {2, 4, 4}},
        {"cosine_distance", [](const Variable& v) { return cosine_distance(v, exp(v)); }, {5}},
        {"squared_error", [](const Variable& v) { return squared_error(v, sin(v)); }, {5}},
        {"classification_error top 2",
         [](const Variable& v) { return classification_error(v, hardmax(cos(v)), 2); },
         {5}},
        {"binary_cross_entropy",
         [](const Variable& v) { return binary_cross_entropy(sigmoid(v), sigmoid(cos(v))); },
         {5}},
    };
    int i = 0;
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        Variable x = input_variable(c.input, DataType::f32, false, false, default_batch_axes(), "x");
        FunctionPtr f = c.build(x);
        FunctionPtr back = round_trip(f, "op" + std::to_string(i));
        Dims batch{2};
        batch.insert(batch.end(), c.input.begin(), c.input.end());
        // Ops CNTK had only as composites come back as those composites: equal to rounding.
        expect_same_outputs(f, back, {random_tensor(batch, static_cast<uint32_t>(11 + i))}, 1e-6);
        // Every op here is written with CNTK's own op numbers: CNTK 2.7 can read the file.
        const Dictionary written = formats::cntk_v2_model_dictionary(f);
        for (const auto& fn : written.data().at("primitive_functions").vector_value().value())
            EXPECT_LT(fn.dictionary_value().data().at("op").size_t_value(), 100u);
        ++i;
    }
}

// The sampling, ROI pooling, ranking and metric ops are written with CNTK's own op numbers and
// attributes, and come back computing the same.
TEST(CntkV2Model, SamplingRankingAndRoiOpsRoundTrip) {
    auto same = [](const FunctionPtr& a, const FunctionPtr& b, const std::map<std::string, Value>& data) {
        auto args = [&](const FunctionPtr& f) {
            ValueMap m;
            for (const Variable& v : f->arguments()) m.emplace(v, data.at(v.name()));
            return m;
        };
        ValueMap ra = a->eval(args(a)), rb = b->eval(args(b));
        for (size_t i = 0; i < a->outputs().size(); ++i)
            EXPECT_EQ(ra.at(a->outputs()[i]).data().to_vector<float>(),
                      rb.at(b->outputs()[i]).data().to_vector<float>())
                << "output " << i;
        const Dictionary written = formats::cntk_v2_model_dictionary(a);  // CNTK's op numbers only
        for (const auto& f : written.data().at("primitive_functions").vector_value().value())
            EXPECT_LT(f.dictionary_value().data().at("op").size_t_value(), 100u);
    };
    auto column = [](std::vector<float> v) {
        return Value(Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size()), 1}));
    };
    Variable score = input_variable({1}, DataType::f32, false, false, default_batch_axes(), "score");
    Variable gain = input_variable({1}, DataType::f32, false, false, default_batch_axes(), "gain");
    Variable group = input_variable({1}, DataType::f32, false, false, default_batch_axes(), "group");
    FunctionPtr ranking = combine({lambda_rank(score, gain, group), ndcg_at_1(score, gain, group)});
    same(ranking, round_trip(ranking, "ranking"),
         {{"score", column({1, 2, 3, 4})}, {"gain", column({7, 1, 3, 1})}, {"group", column({1, 1, 2, 2})}});

    Variable a = sequence_input_variable({3}, DataType::f32, false, false, Axis::default_dynamic_axis(), "a");
    Variable b = sequence_input_variable({3}, DataType::f32, false, false, Axis::default_dynamic_axis(), "b");
    FunctionPtr edits = edit_distance_error(a, b, 2.5, 1, 1, true, {0});
    Value seqs = Value::from_sequences({random_tensor({4, 3}, 1), random_tensor({2, 3}, 2)});
    Value refs = Value::from_sequences({random_tensor({4, 3}, 3), random_tensor({2, 3}, 4)});
    FunctionPtr edits_back = round_trip(edits, "edits");
    same(edits, edits_back, {{"a", seqs}, {"b", refs}});
    EXPECT_EQ(edits_back->output().owner()->attributes().get<double>("subPen"), 2.5);
    EXPECT_EQ(edits_back->output().owner()->attributes().get<Dims>("tokensToIgnore"), Dims{0});

    Variable maps = input_variable({2, 5, 6}, DataType::f32, false, false, default_batch_axes(), "maps");
    Variable rois = input_variable({3, 4}, DataType::f32, false, false, default_batch_axes(), "rois");
    FunctionPtr pooled = roipooling(maps, rois, PoolingType::max, {2, 3}, 0.5);
    FunctionPtr pooled_back = round_trip(pooled, "roi");
    same(pooled, pooled_back,
         {{"maps", Value(random_tensor({2, 2, 5, 6}, 5))},
          {"rois", Value(Tensor::from_vector(std::vector<float>{0, 0, 8, 6, 2, 2, 11, 9,  4, 1, 4, 1,
                                                                1, 1, 3, 3, 0, 4, 12, 10, 6, 6, 2, 2},
                                             Shape{2, 3, 4}))}});
    EXPECT_EQ(pooled_back->output().owner()->attributes().get<Dims>("roiOutputShape"), (Dims{2, 3}));

    // A draw from a fresh load starts where a fresh Function does: the same classes for the same seed.
    Variable x = input_variable({2}, DataType::f32, false, false, default_batch_axes(), "x");
    Variable weights = constant(Tensor::from_vector(std::vector<float>{1, 2, 0, 4, 3}, Shape{5}), "w");
    FunctionPtr drawn = combine({plus(x, reduce_sum(times(random_sample(weights, 3, false, 7),
                                                          parameter_from(random_tensor({5, 2}, 6))),
                                                    {Axis(0)}, false)),
                                 random_sample_inclusion_frequency(weights, 2, true, 9)});
    same(drawn, round_trip(drawn, "sampling"), {{"x", Value(random_tensor({2, 2}, 8))}});
    // nce_loss is CNTK's NCE block over them.
    Variable features = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "features");
    Variable labels = input_variable({5}, DataType::f32, false, false, default_batch_axes(), "labels");
    FunctionPtr nce = nce_loss(
        parameter_from(random_tensor({5, 3}, 12)), parameter_from(random_tensor({5, 1}, 13)), features,
        labels, constant(Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5}, Shape{5})), 3, true, 17);
    same(nce, round_trip(nce, "nce"),
         {{"features", Value(random_tensor({2, 3}, 14))},
          {"labels",
           Value(Tensor::from_vector(std::vector<float>{0, 1, 0, 0, 0, 0, 0, 0, 0, 1}, Shape{2, 5}))}});
}

// CTC, crop, the *_like ops, straight_through and the negative-sample cosine, with CNTK's numbers.
TEST(CntkV2Model, CtcCropAndLikeOpsRoundTrip) {
    auto check = [](const FunctionPtr& f, const std::string& tag, const std::vector<Value>& data) {
        SCOPED_TRACE(tag);
        FunctionPtr back = round_trip(f, tag);
        const Dictionary written = formats::cntk_v2_model_dictionary(f);
        for (const auto& fn : written.data().at("primitive_functions").vector_value().value())
            EXPECT_LT(fn.dictionary_value().data().at("op").size_t_value(), 100u);
        auto run = [&](const FunctionPtr& g) {
            ValueMap args;
            auto a = g->arguments();
            for (size_t i = 0; i < a.size(); ++i) args.emplace(a[i], data.at(i));
            return g->eval(args).at(g->output()).data().to_vector<float>();
        };
        EXPECT_EQ(run(f), run(back));
    };
    Variable labels =
        sequence_input_variable({3}, DataType::f32, false, false, Axis::default_dynamic_axis(), "labels");
    Variable z = sequence_input_variable({3}, DataType::f32, false, false, Axis::default_dynamic_axis(), "z");
    Value y(Tensor::from_vector(std::vector<float>{2, 0, 0, 1, 0, 0, 0, 2, 0}, Shape{1, 3, 3}),
            std::make_shared<SequenceLayout>(std::vector<int64_t>{3}));
    Value logits(random_tensor({1, 3, 3}, 21), std::make_shared<SequenceLayout>(std::vector<int64_t>{3}));
    FunctionPtr ctc = forward_backward(labels_to_graph(labels), z, 2, 1);
    const auto args = ctc->arguments();
    check(ctc, "ctc",
          args[0].name() == "labels" ? std::vector<Value>{y, logits} : std::vector<Value>{logits, y});

    Variable x = input_variable({2, 5, 6}, DataType::f32, false, false, default_batch_axes(), "x");
    Variable ref = input_variable({2, 3, 4}, DataType::f32, false, false, default_batch_axes(), "ref");
    FunctionPtr cropped = plus(straight_through(crop_manual(x, ref, 1, 2)), ones_like(ref));
    const auto cargs = cropped->arguments();
    Value xv(random_tensor({2, 2, 5, 6}, 22)), rv(random_tensor({2, 2, 3, 4}, 23));
    check(cropped, "crop", cargs[0].name() == "x" ? std::vector<Value>{xv, rv} : std::vector<Value>{rv, xv});

    Variable v = input_variable({4}, DataType::f32, false, false, default_batch_axes(), "v");
    check(plus(eye_like(v, false), zeros_like(v)), "eye", {Value(random_tensor({3, 4}, 24))});
    Variable w = input_variable({4}, DataType::f32, false, false, default_batch_axes(), "w");
    FunctionPtr negatives = cosine_distance_with_negative_samples(v, w, 1, 2);
    check(negatives, "negatives", {Value(random_tensor({5, 4}, 25)), Value(random_tensor({5, 4}, 26))});
}

// CNTK's OptimizedRNNStack primitive (op 49, operands [operand, weights]) loads as ctk's graph form.
TEST(CntkV2Model, OptimizedRnnStackPrimitiveLoadsAsTheGraphForm) {
    // A file with op 49: written from a Plus over the same two leaves, then given CNTK's op and attributes.
    Variable x = sequence_input_variable({2}, DataType::f32, false, false, Axis::default_dynamic_axis(), "x");
    const Tensor packed = random_tensor({24, 2}, 9);  // LSTM, 2 inputs, H = 2: 4*2*(2+2) + 2*4*2 = 48 weights
    Variable w = parameter_from(packed, "W");
    Dictionary d = formats::cntk_v2_model_dictionary(plus(x, w));
    auto* functions = (*d.mutable_data())["primitive_functions"].mutable_vector_value();
    ASSERT_EQ(functions->value_size(), 1);
    auto* f = functions->mutable_value(0)->mutable_dictionary_value();
    (*f->mutable_data())["op"] = formats::dv_size_t(49);
    auto* attrs = (*f->mutable_data())["attributes"].mutable_dictionary_value();
    (*attrs->mutable_data())["hiddenSize"] = formats::dv_size_t(2);
    (*attrs->mutable_data())["numLayers"] = formats::dv_size_t(1);
    (*attrs->mutable_data())["bidirectional"] = formats::dv_bool(false);
    (*attrs->mutable_data())["recurrentOp"] = formats::dv_string("lstm");
    FunctionPtr loaded = formats::cntk_v2_model_from_dictionary(d, "rnnstack");
    Variable x2 =
        sequence_input_variable({2}, DataType::f32, false, false, Axis::default_dynamic_axis(), "x");
    FunctionPtr direct = optimized_rnnstack(x2, parameter_from(packed), 2, 1, false, "lstm");
    Value in = Value::from_sequences({random_tensor({3, 2}, 10), random_tensor({1, 2}, 11)});
    EXPECT_EQ(loaded->eval({{loaded->arguments()[0], in}}).at(loaded->output()).data().to_vector<float>(),
              direct->eval({{x2, in}}).at(direct->output()).data().to_vector<float>());
}

// ---------------------------------------------------------------- broken and hostile files

TEST(CntkV2Model, BrokenFilesGiveClearErrors) {
    const std::string dir = test::temp_dir("cntk_v2_broken");
    EXPECT_THROW(load_model(dir + "/missing.dnn"), IOError);
    test::write_file_bytes(dir + "/empty.dnn", "");
    EXPECT_THROW(load_cntk_v2_model(dir + "/empty.dnn"), IOError);
    test::write_file_bytes(dir + "/text.dnn", "this is not a model\n");
    EXPECT_THROW(load_model(dir + "/text.dnn"), IOError);
    // A Dictionary that is not a model.
    save_cntk_dictionary(ctk::Dictionary{{"type", "Learner"}}, dir + "/learner.ckp");
    try {
        load_cntk_v2_model(dir + "/learner.ckp");
        FAIL() << "a learner state loaded as a model";
    } catch (const IOError& e) {
        EXPECT_NE(std::string(e.what()).find("Learner"), std::string::npos) << e.what();
    }
}

TEST(CntkV2Model, UnknownOpsAndMissingUidsAreNamed) {
    Variable x = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "x");
    FunctionPtr f = sigmoid(x, "sig");
    Dictionary d = formats::cntk_v2_model_dictionary(f);
    auto* fn = (*d.mutable_data())["primitive_functions"]
                   .mutable_vector_value()
                   ->mutable_value(0)
                   ->mutable_dictionary_value();
    (*fn->mutable_data())["op"] = formats::dv_size_t(9999);
    try {
        formats::cntk_v2_model_from_dictionary(d, "unknown-op");
        FAIL();
    } catch (const NotImplementedError& e) {
        EXPECT_NE(std::string(e.what()).find("9999"), std::string::npos) << e.what();
    }
    (*fn->mutable_data())["op"] = formats::dv_size_t(1);
    (*fn->mutable_data())["inputs"] = formats::dv_vector({formats::dv_string("Nowhere7")});
    try {
        formats::cntk_v2_model_from_dictionary(d, "bad-uid");
        FAIL();
    } catch (const IOError& e) {
        EXPECT_NE(std::string(e.what()).find("Nowhere7"), std::string::npos) << e.what();
    }
}

// Every truncation of a real file and a few thousand byte flips either load or throw ctk::Error.
TEST(CntkV2Model, MutationFuzzNeverCrashes) {
    REQUIRE_TESTDATA(path, "models-v2/batch.norm.no.sample.count.v2.bin");
    REQUIRE_TESTDATA(policy, "models-v2/initial_policy_network.dnn");
    const std::string dir = test::temp_dir("cntk_v2_fuzz");
    const std::string file = dir + "/m.dnn";
    int loaded = 0, refused = 0;
    auto attempt = [&](const std::string& bytes) {
        try {
            formats::cntk_v2_model_from_dictionary(formats::parse_cntk_dictionary(bytes, "fuzz"), "fuzz");
            ++loaded;
        } catch (const Error&) {
            ++refused;
        }
    };
    std::mt19937 gen(1234);
    for (const std::string& p : {path, policy}) {
        const std::string original = test::read_file_bytes(p);
        for (size_t cut = 0; cut < original.size(); cut += 7) attempt(original.substr(0, cut));
        for (int i = 0; i < 1500; ++i) {
            std::string m = original;
            const int flips = 1 + static_cast<int>(gen() % 4);
            for (int k = 0; k < flips; ++k) {
                const size_t at = gen() % m.size();
                switch (gen() % 3) {
                    case 0:
                        m[at] = static_cast<char>(gen());
                        break;
                    case 1:
                        m[at] = '\xff';  // inflates varint lengths and counts
                        break;
                    default:
                        m.insert(at, 1, static_cast<char>(gen()));
                        break;
                }
            }
            attempt(m);
        }
    }
    EXPECT_GT(refused, 0);
    EXPECT_GT(loaded, 0);
}

}  // namespace
}  // namespace ctk
