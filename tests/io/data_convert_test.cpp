// convert_mnist_to_ctf on a tiny IDX set and convert_cifar10_to_ctf on tiny binary batches (plain and
// gzipped): CNTK's line format, and the text read back through ctf_deserializer gives the same pixels and
// labels; broken inputs name their file.
#include <gtest/gtest.h>

#include "ctk/io.h"
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

}  // namespace
}  // namespace ctk
