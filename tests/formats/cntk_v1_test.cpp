// CNTK v1 model files (cntk.exe / BrainScript): the two real files CNTK 2.5.1's tests ship load into ctk
// graphs with the right parameters and evaluate; corrupt files throw ctk errors. Expected values are read
// here independently of the reader (a small scan for the LearnableParameter headers and raw floats).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>
#include <random>

#include "ctk/core/error.h"
#include "ctk/core/storage.h"
#include "ctk/formats/model.h"
#include "ctk/graph/function.h"
#include "formats/formats_test_util.h"

namespace ctk {
namespace {

// ---- an independent look at the bytes ----

std::string utf16(const std::string& ascii) {
    std::string out;
    for (char c : ascii) {
        out += c;
        out += '\0';
    }
    return out + std::string(2, '\0');
}

template <typename T>
T at(const std::string& bytes, size_t offset) {
    T v;
    std::memcpy(&v, bytes.data() + offset, sizeof(T));
    return v;
}

// One LearnableParameter as the file lays it out after its op name: name, float learning-rate
// multiplier, uint32 rank and dims (column-major), then 'd' "BMAT" elsize "unnamed" format rows cols.
struct RawParam {
    std::string name;
    float lr = 0;
    std::vector<int64_t> col_dims;
    size_t data = 0;  // offset of the first float
    int64_t rows = 0, cols = 0;
};

std::vector<RawParam> scan_parameters(const std::string& bytes) {
    std::vector<RawParam> out;
    const std::string tag_body = utf16("float") + utf16("LearnableParameter");
    for (size_t p = bytes.find(tag_body); p != std::string::npos; p = bytes.find(tag_body, p + 1)) {
        RawParam r;
        size_t q = p + tag_body.size();
        while (bytes[q] != 0 || bytes[q + 1] != 0) {
            r.name += bytes[q];
            q += 2;
        }
        q += 2;
        r.lr = at<float>(bytes, q);
        const auto rank = at<uint32_t>(bytes, q + 4);
        q += 8;
        for (uint32_t i = 0; i < rank; ++i, q += 4) r.col_dims.push_back(at<uint32_t>(bytes, q));
        q += 1 + utf16("BMAT").size() + 8 + utf16("unnamed").size() + 4;
        r.rows = static_cast<int64_t>(at<uint64_t>(bytes, q));
        r.cols = static_cast<int64_t>(at<uint64_t>(bytes, q + 8));
        r.data = q + 16;
        out.push_back(r);
    }
    return out;
}

std::vector<float> raw_floats(const std::string& bytes, const RawParam& p) {
    std::vector<float> v(static_cast<size_t>(p.rows * p.cols));
    std::memcpy(v.data(), bytes.data() + p.data, v.size() * sizeof(float));
    return v;
}

// The row-major shape ctk gives a stored parameter: the dims reversed, and leading (column-major trailing)
// singleton dims dropped unless the parameter is a Times/Convolution weight.
Dims expected_shape(const RawParam& p, bool weight) {
    Dims d(p.col_dims.rbegin(), p.col_dims.rend());
    if (!weight)
        while (!d.empty() && d.front() == 1) d.erase(d.begin());
    return d;
}

std::map<std::string, Variable> by_name(const std::vector<Variable>& vars) {
    std::map<std::string, Variable> m;
    for (const auto& v : vars) m[v.name()] = v;
    return m;
}

std::vector<std::string> output_names(const FunctionPtr& f) {
    std::vector<std::string> names;
    for (const auto& o : f->outputs()) names.push_back(o.owner() ? o.owner()->name() : o.name());
    return names;
}

Tensor random_tensor(const Dims& shape, uint32_t seed, double lo, double hi) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> dist(lo, hi);
    Tensor t = Tensor::empty(Shape(shape), DataType::f32);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(dist(gen));
    return t;
}

bool all_finite(const Tensor& t) {
    for (double v : t.to_vector<double>())
        if (!std::isfinite(v)) return false;
    return true;
}

// ---- 01_OneHidden.dnn: features * featScale -> Times -> Plus -> BatchNormalization -> Times -> Plus ----

TEST(CntkV1, OneHiddenStructureAndValues) {
    const std::string path = test::cntk_testdata("models-v1/01_OneHidden.dnn");
    const std::string bytes = test::read_file_bytes(path);
    EXPECT_EQ(detect_model_format(path), ModelFormat::cntk_v1);

    FunctionPtr f = load_model(path);
    ASSERT_TRUE(f);
    EXPECT_EQ(output_names(f), (std::vector<std::string>{"ce", "top5Errs", "errs", "ol.z"}));

    const std::vector<RawParam> raw = scan_parameters(bytes);
    ASSERT_EQ(raw.size(), 10u);  // the file's 10 LearnableParameters
    auto params = by_name(f->parameters());
    auto consts = by_name(f->constants());
    EXPECT_EQ(params.size(), 6u);
    // featScale, m, v, and the running sample count CNTK adds to a pre-version-19 BatchNormalization;
    // the top-N constant (unnamed32) becomes classification_error's attribute.
    EXPECT_EQ(consts.size(), 4u);
    for (const RawParam& p : raw) {
        if (p.name == "unnamed32") {
            EXPECT_EQ(raw_floats(bytes, p)[0], 5.0f);
            continue;
        }
        const bool is_param = p.lr != 0;
        auto& pool = is_param ? params : consts;
        ASSERT_TRUE(pool.count(p.name)) << p.name;
        const Variable v = pool.at(p.name);
        EXPECT_EQ(v.shape(), expected_shape(p, p.name == "h1.W" || p.name == "ol.W")) << p.name;
        EXPECT_EQ(v.value().to_vector<float>(), raw_floats(bytes, p)) << p.name;
    }
    EXPECT_EQ(params.at("h1.W").shape(), (Dims{784, 200}));
    EXPECT_EQ(params.at("h1.b").shape(), (Dims{200}));
    EXPECT_EQ(consts.at("featScale").shape(), Dims{});
    EXPECT_FLOAT_EQ(static_cast<float>(consts.at("featScale").value().item()), 1.0f / 256);
    ASSERT_TRUE(consts.count("y.run_sample_count"));
    EXPECT_EQ(consts.at("y.run_sample_count").value().item(), 60000.0);

    auto args = by_name(f->arguments());
    ASSERT_EQ(args.size(), 2u);
    EXPECT_EQ(args.at("features").shape(), (Dims{784}));
    EXPECT_EQ(args.at("labels").shape(), (Dims{10}));
    EXPECT_TRUE(args.at("features").has_sequence_axis());
    EXPECT_TRUE(args.at("features").has_batch_axis());

    ASSERT_TRUE(f->find_by_name("y"));
    EXPECT_EQ(f->find_by_name("y")->op_name(), "BatchNormalization");
    EXPECT_EQ(f->find_by_name("h1.t")->op_name(), "Times");
}

TEST(CntkV1, OneHiddenEvaluatesLikeAFloat64Reference) {
    const std::string path = test::cntk_testdata("models-v1/01_OneHidden.dnn");
    const std::string bytes = test::read_file_bytes(path);
    std::map<std::string, std::vector<double>> w;
    for (const RawParam& p : scan_parameters(bytes)) {
        const auto v = raw_floats(bytes, p);
        w[p.name] = std::vector<double>(v.begin(), v.end());
    }
    // BatchNormalization 'y': spatial flag, two time constants, layout, sample count, then epsilon.
    const size_t y_payload = bytes.find(utf16("BatchNormalization") + utf16("y")) +
                             utf16("BatchNormalization").size() + utf16("y").size();
    const double eps = at<double>(bytes, y_payload + 1 + 8 + 8 + 4 + 8);
    ASSERT_EQ(eps, 1e-5);

    FunctionPtr f = load_cntk_v1_model(path);
    auto args = by_name(f->arguments());
    const int64_t n = 2, t = 3;
    const Tensor x = random_tensor({n, t, 784}, 7, 0.0, 255.0);
    Tensor labels = Tensor::zeros(Shape{n, t, 10});
    for (int64_t s = 0; s < n * t; ++s) labels.set({s / t, s % t, (s * 3) % 10}, 1.0);
    auto layout = std::make_shared<const SequenceLayout>(std::vector<int64_t>{t, t});
    const ValueMap out =
        f->eval({{args.at("features"), Value(x, layout)}, {args.at("labels"), Value(labels, layout)}});

    const std::vector<Variable> outs = f->outputs();
    ASSERT_EQ(outs.size(), 4u);
    const Tensor z = out.at(outs[3]).data();
    ASSERT_EQ(z.shape(), (Shape{n, t, 10}));
    for (size_t k = 0; k < 3; ++k) {
        // One value per frame: [n, t, 1] ([n, t] for classification_error with top_n > 1, ctk's shape).
        const Tensor c = out.at(outs[k]).data();
        EXPECT_EQ(c.numel(), n * t) << c.shape().to_string();
        EXPECT_EQ(c.dim(0), n);
        EXPECT_EQ(c.dim(1), t);
        EXPECT_TRUE(all_finite(c)) << k;
    }

    // ol.z = ol.W * BN(h1.W * (featScale .* x) + h1.b) + ol.b, matrices column-major as stored.
    const auto xs = x.to_vector<double>();
    const auto zs = z.to_vector<double>();
    const auto ces = out.at(outs[0]).data().to_vector<double>();
    double max_err = 0;
    for (int64_t s = 0; s < n * t; ++s) {
        std::vector<double> y(200);
        for (int i = 0; i < 200; ++i) {
            double h = w["h1.b"][i];
            for (int j = 0; j < 784; ++j) h += w["h1.W"][i + 200 * j] * w["featScale"][0] * xs[s * 784 + j];
            y[i] = (h - w["m"][i]) / std::sqrt(w["v"][i] + eps) * w["sc"][i] + w["b"][i];
        }
        double zmax = -1e300, sum = 0;
        std::vector<double> zr(10);
        for (int k = 0; k < 10; ++k) {
            zr[k] = w["ol.b"][k];
            for (int i = 0; i < 200; ++i) zr[k] += w["ol.W"][k + 10 * i] * y[i];
            max_err = std::max(max_err, std::abs(zr[k] - zs[s * 10 + k]) / (1 + std::abs(zr[k])));
            zmax = std::max(zmax, zr[k]);
        }
        for (int k = 0; k < 10; ++k) sum += std::exp(zr[k] - zmax);
        const double ce = zmax + std::log(sum) - zr[(s * 3) % 10];
        EXPECT_NEAR(ces[s], ce, 1e-3 * (1 + std::abs(ce))) << s;
    }
    EXPECT_LT(max_err, 1e-4);
}

// ---- ResNet20_CIFAR10_DataAug.dnn: 21 convolutions with BatchNormalization, average pooling, dense ----

TEST(CntkV1, ResNet20StructureAndValues) {
    const std::string path = test::cntk_testdata("models-v1/ResNet20_CIFAR10_DataAug.dnn");
    const std::string bytes = test::read_file_bytes(path);
    FunctionPtr f = load_cntk_v1_model(path);
    // The criterion, evaluation and output nodes, then top5Errs, which no group names and nothing consumes.
    EXPECT_EQ(output_names(f), (std::vector<std::string>{"ce", "errs", "z", "top5Errs"}));

    const std::vector<RawParam> raw = scan_parameters(bytes);
    ASSERT_EQ(raw.size(), 109u);
    auto params = by_name(f->parameters());
    auto consts = by_name(f->constants());
    EXPECT_EQ(params.size(), 65u);
    EXPECT_EQ(consts.size(), 43u + 21u);  // 44 stored constants less the top-N, plus 21 running counts
    int convolution_weights = 0;
    for (const RawParam& p : raw) {
        if (p.name == "inputs.inputs[2]") continue;  // top-N of top5Errs
        auto& pool = p.lr != 0 ? params : consts;
        ASSERT_TRUE(pool.count(p.name)) << p.name;
        const Variable v = pool.at(p.name);
        const bool weight = p.col_dims.size() == 4;  // convolution kernels and the dense weight
        convolution_weights += weight && p.col_dims[0] == 3;
        EXPECT_EQ(v.shape(), expected_shape(p, weight)) << p.name;
        EXPECT_EQ(v.value().to_vector<float>(), raw_floats(bytes, p)) << p.name;
    }
    EXPECT_EQ(convolution_weights, 19);
    // Column-major [kW x kH x C x O] kernels are ctk's [O, C, kH, kW]; the dense weight [10 x 1 x 1 x 64]
    // takes the pooled [64, 1, 1].
    EXPECT_EQ(params.at("model.arrayOfFunctions[1].arrayOfFunctions[0].arrayOfFunctions[0].W").shape(),
              (Dims{16, 3, 3, 3}));
    EXPECT_EQ(params.at("model.arrayOfFunctions[8].W").shape(), (Dims{64, 1, 1, 10}));
    EXPECT_EQ(params.at("model.arrayOfFunctions[8].b").shape(), (Dims{10}));

    auto args = by_name(f->arguments());
    ASSERT_EQ(args.size(), 2u);
    EXPECT_EQ(args.at("features").shape(), (Dims{3, 32, 32}));
    EXPECT_EQ(args.at("labels").shape(), (Dims{10}));
    EXPECT_EQ(f->find_by_name("z.x")->op_name(), "Pooling");
}

TEST(CntkV1, ResNet20Evaluates) {
    const std::string path = test::cntk_testdata("models-v1/ResNet20_CIFAR10_DataAug.dnn");
    FunctionPtr f = load_cntk_v1_model(path);
    auto args = by_name(f->arguments());
    const Tensor x = random_tensor({2, 1, 3, 32, 32}, 11, 0.0, 255.0);
    Tensor labels = Tensor::zeros(Shape{2, 1, 10});
    labels.set({0, 0, 3}, 1.0);
    labels.set({1, 0, 7}, 1.0);
    auto layout = std::make_shared<const SequenceLayout>(std::vector<int64_t>{1, 1});
    const ValueMap out =
        f->eval({{args.at("features"), Value(x, layout)}, {args.at("labels"), Value(labels, layout)}});
    const std::vector<Variable> outs = f->outputs();
    const Tensor z = out.at(outs[2]).data();
    EXPECT_EQ(z.shape(), (Shape{2, 1, 10}));
    EXPECT_TRUE(all_finite(z));
    for (size_t k : {0u, 1u, 3u}) {
        EXPECT_EQ(out.at(outs[k]).data().numel(), 2) << out.at(outs[k]).data().shape().to_string();
        EXPECT_TRUE(all_finite(out.at(outs[k]).data())) << k;
    }
    // The two samples differ, so the logits do too (the graph is not constant).
    const auto zs = z.to_vector<double>();
    double diff = 0;
    for (int k = 0; k < 10; ++k) diff += std::abs(zs[k] - zs[10 + k]);
    EXPECT_GT(diff, 0.0);
}

// ---- errors ----

std::string write_variant(const std::string& dir, const std::string& bytes, const std::string& name) {
    const std::string p = dir + "/" + name;
    test::write_file_bytes(p, bytes);
    return p;
}

// Found by libFuzzer: a 1.6 KB file whose RowStack broadcast an operand to zeros of 19 GB (shapes the
// file declares). Such zeros are bounded now; kept as a seed (tests/fuzz/seeds/cntk_v1/).
TEST(CntkV1, ABroadcastBeyondTheCapIsRefusedBeforeItAllocates) {
    const std::string path = std::string(CTK_FUZZ_SEEDS) + "/cntk_v1/finding_rowstack_broadcast.dnn";
    cpu_allocator().reset_peak();
    EXPECT_THROW(load_cntk_v1_model(path), IOError);
    EXPECT_LT(cpu_allocator().stats().peak_bytes_in_use, int64_t(64) << 20);
}

TEST(CntkV1, ErrorsNameTheFileTheOffsetAndTheNode) {
    const std::string path = test::cntk_testdata("models-v1/01_OneHidden.dnn");
    const std::string bytes = test::read_file_bytes(path);
    const std::string dir = test::temp_dir("cntk_v1_errors");

    // An unknown node type: "Times" -> "Timez" for node h1.t.
    std::string unknown = bytes;
    const size_t times_at = unknown.find(utf16("Times") + utf16("h1.t"));
    ASSERT_NE(times_at, std::string::npos);
    unknown[times_at + 8] = 'z';
    try {
        load_cntk_v1_model(write_variant(dir, unknown, "unknown.dnn"));
        FAIL() << "expected NotImplementedError";
    } catch (const NotImplementedError& e) {
        EXPECT_NE(std::string(e.what()).find("Timez"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("h1.t"), std::string::npos) << e.what();
    }

    // Truncated inside h1.W's values.
    const std::string cut = write_variant(dir, bytes.substr(0, 100000), "cut.dnn");
    try {
        load_cntk_v1_model(cut);
        FAIL() << "expected IOError";
    } catch (const IOError& e) {
        EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("byte offset"), std::string::npos) << e.what();
    }

    // h1.W declares 2^62 rows: refused before anything is allocated.
    std::string huge = bytes;
    const RawParam h1w = [&] {
        for (const RawParam& p : scan_parameters(bytes))
            if (p.name == "h1.W") return p;
        return RawParam{};
    }();
    ASSERT_GT(h1w.data, 16u);
    const uint64_t rows = uint64_t(1) << 62;
    std::memcpy(huge.data() + h1w.data - 16, &rows, 8);
    EXPECT_THROW(load_cntk_v1_model(write_variant(dir, huge, "huge.dnn")), IOError);

    // A node count far beyond the file.
    std::string many = bytes;
    const uint64_t count = uint64_t(1) << 40;
    std::memcpy(many.data() + utf16("BCN").size() + utf16("BVersion").size() + 8 + utf16("EVersion").size(),
                &count, 8);
    EXPECT_THROW(load_cntk_v1_model(write_variant(dir, many, "many.dnn")), IOError);

    // Wrong first bytes.
    EXPECT_THROW(load_cntk_v1_model(write_variant(dir, "not a model", "junk.dnn")), IOError);
    EXPECT_THROW(load_cntk_v1_model(dir + "/missing.dnn"), IOError);
}

// Mutation fuzz: truncations and byte flips/inflations of a real file must load or throw a ctk::Error,
// never crash, hang or exhaust memory. Fixed seed; the structural bytes (everything but the big h1.W
// and ol.W value blocks) get most of the mutations.
TEST(CntkV1, MutatedFilesLoadOrThrow) {
    const std::string path = test::cntk_testdata("models-v1/01_OneHidden.dnn");
    const std::string bytes = test::read_file_bytes(path);
    const std::string dir = test::temp_dir("cntk_v1_fuzz");
    const std::string file = dir + "/mutant.dnn";
    std::mt19937_64 gen(20240531);

    // Offsets outside the two large weight blocks, where every byte is structure or a small tensor.
    std::vector<size_t> structural;
    for (size_t i = 0; i < bytes.size(); ++i)
        if (i < 2600 || (i > 629700 && i < 631200) || i > 639100) structural.push_back(i);
    auto pick = [&]() {
        if (gen() % 8 == 0) return static_cast<size_t>(gen() % bytes.size());
        return structural[gen() % structural.size()];
    };

    int loaded = 0, threw = 0;
    auto run = [&](const std::string& mutant) {
        test::write_file_bytes(file, mutant);
        try {
            FunctionPtr f = load_cntk_v1_model(file);
            ASSERT_TRUE(f);
            ++loaded;
        } catch (const Error&) {
            ++threw;
        } catch (const std::exception& e) {
            FAIL() << "non-ctk exception: " << e.what();
        }
    };

    for (int i = 0; i < 150; ++i) run(bytes.substr(0, i < 50 ? static_cast<size_t>(i * 3) : pick()));
    for (int i = 0; i < 200; ++i) {  // flip one to four bytes
        std::string m = bytes;
        const int k = 1 + static_cast<int>(gen() % 4);
        for (int j = 0; j < k; ++j) m[pick()] ^= static_cast<char>(1 + gen() % 255);
        run(m);
    }
    for (int i = 0; i < 150; ++i) {  // inflate a 4- or 8-byte field: huge counts, sizes, ranks
        std::string m = bytes;
        const size_t p = pick();
        const size_t width = gen() % 2 ? 8 : 4;
        for (size_t j = 0; j < width && p + j < m.size(); ++j)
            m[p + j] = static_cast<char>(j + 1 == width ? 0x7f : 0xff);
        run(m);
    }
    EXPECT_EQ(loaded + threw, 500);
    EXPECT_GT(threw, 100);  // most structural mutations are caught
}

}  // namespace
}  // namespace ctk
