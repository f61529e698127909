// convert_mnist_to_ctf on a tiny IDX set and convert_cifar10_to_ctf on tiny binary batches (plain and
// gzipped): CNTK's line format, and the text read back through ctf_deserializer gives the same pixels and
// labels; broken inputs name their file. The image layouts (convert_cifar10_to_images,
// convert_idx_to_images): PNG files padded as CNTK's installer padded them, map files, CNTK's mean file,
// and the ImageNet-style folders, read back through the image reader.
#include <gtest/gtest.h>

#include <opencv2/imgcodecs.hpp>

#include "ctk/io.h"
#include "ctk/io/image.h"
#include "io/io_test_util.h"

namespace ctk {
namespace {

using test::TempDir;

struct TinySet {
    std::vector<uint8_t> pixels, labels;
};

TinySet make_set(size_t n, int salt) {
    TinySet s;
    s.pixels.resize(n * 784);
    for (size_t i = 0; i < s.pixels.size(); ++i)
        s.pixels[i] = static_cast<uint8_t>((i * 31 + size_t(salt)) % 256);
    for (size_t i = 0; i < n; ++i) s.labels.push_back(static_cast<uint8_t>((i * 3 + size_t(salt)) % 10));
    return s;
}

void write_set(const TempDir& dir, const std::string& prefix, const TinySet& s, bool gz) {
    const std::string img = test::idx_images(static_cast<uint32_t>(s.labels.size()), 28, 28, s.pixels);
    const std::string lab = test::idx_labels(s.labels);
    if (gz) {
        test::write_gz(dir.file(prefix + "-images-idx3-ubyte.gz"), img);
        test::write_gz(dir.file(prefix + "-labels-idx1-ubyte.gz"), lab);
    } else {
        test::write_file(dir.file(prefix + "-images-idx3-ubyte"), img);
        test::write_file(dir.file(prefix + "-labels-idx1-ubyte"), lab);
    }
}

void check_round_trip(const std::string& path, const TinySet& s) {
    auto d = ctf_deserializer(path, {StreamDef{"features", "features", {784}, false, false},
                                     StreamDef{"labels", "labels", {10}, false, false}});
    size_t i = 0;
    for (int64_t c = 0; c < d->num_chunks(); ++c) {
        for (const auto& seq : d->read_chunk(c)) {
            const auto f = seq[0].data.to_vector<float>();
            for (size_t k = 0; k < 784; ++k) ASSERT_EQ(f[k], float(s.pixels[i * 784 + k])) << "sample " << i;
            const auto l = seq[1].data.to_vector<float>();
            for (size_t k = 0; k < 10; ++k) ASSERT_EQ(l[k], k == s.labels[i] ? 1.0f : 0.0f);
            ++i;
        }
    }
    EXPECT_EQ(i, s.labels.size());
}

TEST(ConvertMnistToCtf, WritesCntkLinesThatReadBack) {
    for (bool gz : {false, true}) {
        TempDir in, out;
        const TinySet train = make_set(7, 1), test_set = make_set(3, 2);
        write_set(in, "train", train, gz);
        write_set(in, "t10k", test_set, gz);
        const std::string out_dir = out.file("nested/dir");
        const auto [n_train, n_test] = convert_mnist_to_ctf(in.path(), out_dir);
        EXPECT_EQ(n_train, 7);
        EXPECT_EQ(n_test, 3);
        const std::string text = test::read_bytes(out_dir + "/Train-28x28_cntk_text.txt");
        // Line 1: label 1 one-hot first, then the 784 pixels as integers, as install_mnist.py wrote them.
        std::string expected = "|labels 0 1 0 0 0 0 0 0 0 0 |features";
        for (size_t k = 0; k < 784; ++k) expected += " " + std::to_string(int(train.pixels[k]));
        expected += "\n";
        EXPECT_EQ(text.substr(0, expected.size()), expected);
        EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 7);
        EXPECT_FALSE(std::filesystem::exists(out_dir + "/Train-28x28_cntk_text.txt.tmp"));
        check_round_trip(out_dir + "/Train-28x28_cntk_text.txt", train);
        check_round_trip(out_dir + "/Test-28x28_cntk_text.txt", test_set);
    }
}

TEST(ConvertMnistToCtf, MissingInputNamesTheFile) {
    TempDir in, out;
    write_set(in, "train", make_set(2, 0), false);
    try {
        convert_mnist_to_ctf(in.path(), out.path());
        FAIL() << "no error";
    } catch (const IOError& e) {
        EXPECT_NE(std::string(e.what()).find("t10k-images-idx3-ubyte"), std::string::npos) << e.what();
    }
}

// CIFAR-10 binary records: a label byte, then 3072 pixel bytes.
std::string cifar_records(size_t n, int salt, std::vector<uint8_t>* labels, std::vector<uint8_t>* pixels) {
    std::string bytes;
    for (size_t i = 0; i < n; ++i) {
        const auto label = static_cast<uint8_t>((i * 7 + size_t(salt)) % 10);
        labels->push_back(label);
        bytes += static_cast<char>(label);
        for (size_t k = 0; k < 3072; ++k) {
            const auto v = static_cast<uint8_t>((i * 13 + k * 5 + size_t(salt)) % 256);
            pixels->push_back(v);
            bytes += static_cast<char>(v);
        }
    }
    return bytes;
}

TEST(ConvertCifar10ToCtf, WritesCntkLinesThatReadBack) {
    for (bool gz : {false, true}) {
        TempDir in, out;
        std::vector<uint8_t> train_labels, train_pixels, test_labels, test_pixels;
        for (int b = 1; b <= 5; ++b) {
            const std::string bytes = cifar_records(size_t(b), b, &train_labels, &train_pixels);
            const std::string name = in.file("data_batch_" + std::to_string(b) + ".bin");
            gz ? test::write_gz(name + ".gz", bytes) : test::write_file(name, bytes);
        }
        const std::string t = cifar_records(2, 9, &test_labels, &test_pixels);
        gz ? test::write_gz(in.file("test_batch.bin.gz"), t) : test::write_file(in.file("test_batch.bin"), t);
        const auto [n_train, n_test] = convert_cifar10_to_ctf(in.path(), out.path());
        EXPECT_EQ(n_train, 15);
        EXPECT_EQ(n_test, 2);
        const std::string text = test::read_bytes(out.file("Train_cntk_text.txt"));
        std::string expected = "|labels";
        for (int k = 0; k < 10; ++k) expected += k == train_labels[0] ? " 1" : " 0";
        expected += " |features";
        for (size_t k = 0; k < 3072; ++k) expected += " " + std::to_string(int(train_pixels[k]));
        expected += "\n";
        EXPECT_EQ(text.substr(0, expected.size()), expected);
        auto d = ctf_deserializer(out.file("Test_cntk_text.txt"),
                                  {StreamDef{"features", "features", {3, 32, 32}, false, false},
                                   StreamDef{"labels", "labels", {10}, false, false}});
        size_t i = 0;
        for (int64_t c = 0; c < d->num_chunks(); ++c)
            for (const auto& seq : d->read_chunk(c)) {
                const auto f = seq[0].data.to_vector<float>();
                for (size_t k = 0; k < 3072; ++k) ASSERT_EQ(f[k], float(test_pixels[i * 3072 + k]));
                EXPECT_EQ(seq[1].data.to_vector<float>()[test_labels[i]], 1.0f);
                ++i;
            }
        EXPECT_EQ(i, 2u);
    }
}

TEST(ConvertCifar10ToCtf, BrokenBatchesNameTheirFile) {
    TempDir in, out;
    std::vector<uint8_t> l, p;
    for (int b = 1; b <= 5; ++b)
        test::write_file(in.file("data_batch_" + std::to_string(b) + ".bin"), cifar_records(1, b, &l, &p));
    test::write_file(in.file("test_batch.bin"), cifar_records(1, 0, &l, &p).substr(0, 100));  // truncated
    EXPECT_THROW(
        {
            try {
                convert_cifar10_to_ctf(in.path(), out.path());
            } catch (const IOError& e) {
                EXPECT_NE(std::string(e.what()).find("test_batch.bin"), std::string::npos) << e.what();
                throw;
            }
        },
        IOError);
    std::string bad = cifar_records(1, 0, &l, &p);
    bad[0] = 12;  // a label past 9
    test::write_file(in.file("test_batch.bin"), bad);
    EXPECT_THROW(convert_cifar10_to_ctf(in.path(), out.path()), IOError);
    std::filesystem::remove(in.file("data_batch_3.bin"));
    try {
        convert_cifar10_to_ctf(in.path(), out.path());
        FAIL() << "no error";
    } catch (const IOError& e) {
        EXPECT_NE(std::string(e.what()).find("data_batch_3.bin"), std::string::npos) << e.what();
    }
}

TEST(ConvertCifar10ToImages, WritesCntksLayout) {
    TempDir in, out;
    std::vector<uint8_t> train_labels, train_pixels, test_labels, test_pixels;
    for (int b = 1; b <= 5; ++b)
        test::write_file(in.file("data_batch_" + std::to_string(b) + ".bin"),
                         cifar_records(1, b, &train_labels, &train_pixels));
    test::write_file(in.file("test_batch.bin"), cifar_records(2, 9, &test_labels, &test_pixels));
    const auto [n_train, n_test] = convert_cifar10_to_images(in.path(), out.path());
    EXPECT_EQ(n_train, 5);
    EXPECT_EQ(n_test, 2);
    // A training image: 40x40, the 32x32 image at (4, 4) (RGB planes -> BGR pixels), 128 around it.
    const cv::Mat img = cv::imread(out.file("train/00003.png"), cv::IMREAD_COLOR);
    ASSERT_EQ(img.rows, 40);
    EXPECT_EQ(img.at<cv::Vec3b>(0, 0), cv::Vec3b(128, 128, 128));
    for (int y : {0, 17, 31})
        for (int x : {0, 5, 31})
            for (int c = 0; c < 3; ++c)
                EXPECT_EQ(img.at<cv::Vec3b>(y + 4, x + 4)[2 - c],
                          train_pixels[3 * 3072 + size_t(c * 1024 + y * 32 + x)]);
    EXPECT_EQ(cv::imread(out.file("test/00001.png")).rows, 32);
    const std::string map = test::read_bytes(out.file("test_map.txt"));
    EXPECT_NE(map.find("/test/00001.png\t" + std::to_string(test_labels[1]) + "\n"), std::string::npos)
        << map;
    EXPECT_EQ(map[0], '/');  // absolute paths, as CNTK's installer wrote
    // The mean of the unpadded training images, in CIFAR's CHW order (CNTK's file), and the text files.
    const std::string mean = test::read_bytes(out.file("CIFAR-10_mean.xml"));
    double first = 0;
    for (int i = 0; i < 5; ++i) first += train_pixels[size_t(i) * 3072];
    char expected[32];
    std::snprintf(expected, sizeof expected, "<data>%e ", first / 5);
    EXPECT_NE(mean.find(expected), std::string::npos) << mean.substr(0, 400);
    EXPECT_NE(mean.find("<Channel>3</Channel>"), std::string::npos);
    EXPECT_FALSE(test::read_bytes(out.file("Train_cntk_text.txt")).empty());
    EXPECT_FALSE(test::read_bytes(out.file("train_regrLabels.txt")).empty());
}

TEST(ConvertIdxToImages, CifarAndImagenetLayoutsReadBack) {
    TempDir in, cifar, imagenet;
    const TinySet train = make_set(6, 1), test_set = make_set(3, 2);
    test::write_file(in.file("train-images-idx3-ubyte"), test::idx_images(6, 28, 28, train.pixels));
    test::write_file(in.file("train-labels-idx1-ubyte"), test::idx_labels(train.labels));
    test::write_file(in.file("t10k-images-idx3-ubyte"), test::idx_images(3, 28, 28, test_set.pixels));
    test::write_file(in.file("t10k-labels-idx1-ubyte"), test::idx_labels(test_set.labels));
    // CIFAR layout: 28x28 padded by 2 to 32x32 (then by 4 of 128 for training), three equal channels.
    EXPECT_EQ(convert_idx_to_images(in.path(), cifar.path(), "cifar", 64, 4),
              std::make_pair(int64_t(4), int64_t(3)));
    ImageDeserializerConfig c;
    c.map_file = cifar.file("test_map.txt");
    c.num_classes = 10;
    MinibatchSourceConfig sc;
    sc.deserializers = {image_deserializer(c)};
    sc.randomize = false;
    MinibatchSource src(sc);
    auto mb = src.next_minibatch(1);
    const Tensor t = mb.at("features").as_batch().data().contiguous();
    ASSERT_EQ(t.shape().dims(), (Dims{1, 3, 32, 32}));
    for (int ch = 0; ch < 3; ++ch) {
        EXPECT_EQ(t.data<float>()[ch * 1024], 0.0f);  // the padding
        EXPECT_EQ(t.data<float>()[ch * 1024 + (2 + 5) * 32 + (2 + 9)], float(test_set.pixels[5 * 28 + 9]));
    }
    // ImageNet layout: class folders of JPEG files, the val map, the 224x224 mean.
    EXPECT_EQ(convert_idx_to_images(in.path(), imagenet.path(), "imagenet", 40),
              std::make_pair(int64_t(6), int64_t(3)));
    const std::string val = test::read_bytes(imagenet.file("val_map.txt"));
    const std::string first_line = val.substr(0, val.find('\t'));
    EXPECT_NE(first_line.find("/val/" + std::to_string(test_set.labels[0]) + "/0.jpg"), std::string::npos);
    EXPECT_EQ(cv::imread(first_line).cols, 40);
    EXPECT_NE(test::read_bytes(imagenet.file("ImageNet1K_mean.xml")).find("<Row>224</Row>"),
              std::string::npos);
    EXPECT_THROW(convert_idx_to_images(in.path(), imagenet.path(), "mnist"), ValueError);
}

}  // namespace
}  // namespace ctk
