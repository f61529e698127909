// The MNIST IDX (plain and gzipped) and CIFAR-10 binary deserializers, and their errors.
#include <gtest/gtest.h>

#include "ctk/io.h"
#include "io/io_test_util.h"

namespace ctk {
namespace {

using test::error_of;
using test::TempDir;

std::vector<uint8_t> pattern(size_t n, int mul) {
    std::vector<uint8_t> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>((i * size_t(mul) + 7) % 256);
    return v;
}

void check_mnist(const Deserializer& d, const std::vector<uint8_t>& pixels,
                 const std::vector<uint8_t>& labels, int64_t pixels_per_image) {
    ASSERT_EQ(d.streams().size(), 2u);
    EXPECT_EQ(d.streams()[0].name, "features");
    EXPECT_EQ(d.streams()[0].sample_shape, (Dims{pixels_per_image}));
    EXPECT_EQ(d.streams()[1].sample_shape, (Dims{10}));
    int64_t i = 0;
    for (int64_t c = 0; c < d.num_chunks(); ++c) {
        for (const auto& seq : d.read_chunk(c)) {
            const auto f = seq[0].data.to_vector<float>();
            ASSERT_EQ(f.size(), size_t(pixels_per_image));
            for (int64_t k = 0; k < pixels_per_image; ++k)
                ASSERT_EQ(f[size_t(k)], float(pixels[size_t(i * pixels_per_image + k)]));
            const auto l = seq[1].data.to_vector<float>();
            for (size_t k = 0; k < 10; ++k) ASSERT_EQ(l[k], k == labels[size_t(i)] ? 1.0f : 0.0f);
            ++i;
        }
    }
    EXPECT_EQ(i, static_cast<int64_t>(labels.size()));
}

TEST(MnistIdxDeserializer, ReadsPlainAndGzippedFiles) {
    TempDir dir;
    const std::vector<uint8_t> pixels = pattern(12 * 4 * 5, 13);
    const std::vector<uint8_t> labels = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 3, 3};
    test::write_file(dir.file("img"), test::idx_images(12, 4, 5, pixels));
    test::write_file(dir.file("lab"), test::idx_labels(labels));
    check_mnist(*mnist_idx_deserializer(dir.file("img"), dir.file("lab")), pixels, labels, 20);
    test::write_gz(dir.file("img2.gz"), test::idx_images(12, 4, 5, pixels));
    test::write_gz(dir.file("lab2.gz"), test::idx_labels(labels));
    check_mnist(*mnist_idx_deserializer(dir.file("img2.gz"), dir.file("lab2.gz")), pixels, labels, 20);
    // A missing plain name falls back to the .gz next to it.
    check_mnist(*mnist_idx_deserializer(dir.file("img2"), dir.file("lab2")), pixels, labels, 20);
}

TEST(MnistIdxDeserializer, ChunksOfTenThousand) {
    TempDir dir;
    const size_t n = 25000;
    test::write_file(dir.file("img"), test::idx_images(n, 1, 2, pattern(n * 2, 3)));
    std::vector<uint8_t> labels(n);
    for (size_t i = 0; i < n; ++i) labels[i] = static_cast<uint8_t>(i % 10);
    test::write_file(dir.file("lab"), test::idx_labels(labels));
    auto d = mnist_idx_deserializer(dir.file("img"), dir.file("lab"));
    ASSERT_EQ(d->num_chunks(), 3);
    EXPECT_EQ(d->chunk_num_sequences(0), 10000);
    EXPECT_EQ(d->chunk_num_sequences(2), 5000);
    check_mnist(*d, pattern(n * 2, 3), labels, 2);
}

TEST(MnistIdxDeserializer, Errors) {
    TempDir dir;
    const std::vector<uint8_t> pixels = pattern(3 * 4 * 4, 5);
    test::write_file(dir.file("lab"), test::idx_labels({1, 2, 3}));
    test::write_file(dir.file("img"), test::idx_images(3, 4, 4, pixels));

    // Missing file.
    std::string msg = error_of<IOError>([&] { mnist_idx_deserializer(dir.file("none"), dir.file("lab")); });
    EXPECT_NE(msg.find(dir.file("none")), std::string::npos) << msg;

    // Truncated raw file: the header announces more than the file holds.
    std::string full = test::idx_images(3, 4, 4, pixels);
    test::write_file(dir.file("short"), full.substr(0, full.size() - 5));
    msg = error_of<IOError>([&] { mnist_idx_deserializer(dir.file("short"), dir.file("lab")); });
    EXPECT_NE(msg.find(dir.file("short")), std::string::npos) << msg;
    EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;
    EXPECT_NE(msg.find("3 images of 4x4"), std::string::npos) << msg;

    // Truncated gzip stream.
    test::write_gz(dir.file("full.gz"), full);
    const std::string gz = test::read_bytes(dir.file("full.gz"));
    test::write_file(dir.file("cut.gz"), gz.substr(0, gz.size() / 2));
    msg = error_of<IOError>([&] { mnist_idx_deserializer(dir.file("cut.gz"), dir.file("lab")); });
    EXPECT_NE(msg.find(dir.file("cut.gz")), std::string::npos) << msg;

    // Wrong magic (labels given as images and the other way).
    msg = error_of<IOError>([&] { mnist_idx_deserializer(dir.file("lab"), dir.file("img")); });
    EXPECT_NE(msg.find("magic"), std::string::npos) << msg;

    // Counts differ; label out of range.
    test::write_file(dir.file("lab4"), test::idx_labels({1, 2, 3, 4}));
    msg = error_of<IOError>([&] { mnist_idx_deserializer(dir.file("img"), dir.file("lab4")); });
    EXPECT_NE(msg.find("3 images"), std::string::npos) << msg;
    test::write_file(dir.file("lab10"), test::idx_labels({1, 10, 3}));
    msg = error_of<IOError>([&] { mnist_idx_deserializer(dir.file("img"), dir.file("lab10")); });
    EXPECT_NE(msg.find("label 1 is 10"), std::string::npos) << msg;
}

// A header is read as a promise: the reader inflates what it announces and no more, and refuses a
// header that announces more than the file can hold before allocating for it.
TEST(MnistIdxDeserializer, ReadsOnlyWhatTheHeaderAnnounces) {
    TempDir dir;
    const std::vector<uint8_t> pixels = pattern(3 * 4 * 4, 5);
    test::write_file(dir.file("lab"), test::idx_labels({1, 2, 3}));
    const std::string full = test::idx_images(3, 4, 4, pixels);

    // A gzip bomb: the header announces 3 images, then 16 MiB of zeros follow (16 KiB compressed).
    test::write_gz(dir.file("bomb.gz"), full + std::string(16u << 20, '\0'));
    std::string msg =
        error_of<IOError>([&] { mnist_idx_deserializer(dir.file("bomb.gz"), dir.file("lab")); });
    EXPECT_NE(msg.find("bomb.gz"), std::string::npos) << msg;
    EXPECT_NE(msg.find("more data than its header announces (3 images of 4x4)"), std::string::npos) << msg;

    // One byte too many in a plain file, and in labels.
    test::write_file(dir.file("long"), full + "x");
    msg = error_of<IOError>([&] { mnist_idx_deserializer(dir.file("long"), dir.file("lab")); });
    EXPECT_NE(msg.find("more data than its header announces"), std::string::npos) << msg;
    test::write_file(dir.file("img"), full);
    test::write_file(dir.file("lab_long"), test::idx_labels({1, 2, 3}) + "\x01");
    msg = error_of<IOError>([&] { mnist_idx_deserializer(dir.file("img"), dir.file("lab_long")); });
    EXPECT_NE(msg.find("(3 labels)"), std::string::npos) << msg;

    // 4294967295 images of 65535x65535 (the product passes 64 bits) and 4294967295 images of 28x28:
    // both refused from the header alone, plain and gzipped.
    for (const auto& [rows, name] : {std::pair<uint32_t, const char*>{65535, "huge"}, {28, "many"}}) {
        std::string header = test::idx_images(0xffffffffu, rows, rows, {}).substr(0, 16);
        test::write_file(dir.file(name), header + std::string(100, '\1'));
        test::write_gz(dir.file(std::string(name) + ".gz"), header + std::string(100, '\1'));
        for (const std::string& file : {dir.file(name), dir.file(std::string(name) + ".gz")}) {
            msg = error_of<IOError>([&] { mnist_idx_deserializer(file, dir.file("lab")); });
            EXPECT_NE(msg.find("the header announces 4294967295 images"), std::string::npos) << msg;
        }
    }

    // The MNIST converter reads through the same code.
    TempDir in;
    test::write_gz(in.file("train-images-idx3-ubyte.gz"), full + std::string(1u << 20, '\0'));
    test::write_file(in.file("train-labels-idx1-ubyte"), test::idx_labels({1, 2, 3}));
    test::write_file(in.file("t10k-images-idx3-ubyte"), full);
    test::write_file(in.file("t10k-labels-idx1-ubyte"), test::idx_labels({1, 2, 3}));
    msg = error_of<IOError>([&] { convert_mnist_to_ctf(in.path(), dir.file("out")); });
    EXPECT_NE(msg.find("train-images-idx3-ubyte.gz"), std::string::npos) << msg;
}

TEST(Cifar10BinaryDeserializer, ReadsRecordsAsChwAndOneHot) {
    TempDir dir;
    std::string a, b;
    std::vector<uint8_t> expected_labels = {3, 9, 0};
    std::vector<std::vector<uint8_t>> pixels;
    for (size_t r = 0; r < 3; ++r) {
        pixels.push_back(pattern(3072, int(r) + 2));
        std::string& out = r < 2 ? a : b;
        out += static_cast<char>(expected_labels[r]);
        out.append(pixels[r].begin(), pixels[r].end());
    }
    test::write_file(dir.file("data_batch_1.bin"), a);
    test::write_file(dir.file("data_batch_2.bin"), b);
    auto d = cifar10_binary_deserializer({dir.file("data_batch_1.bin"), dir.file("data_batch_2.bin")});
    EXPECT_EQ(d->streams()[0].sample_shape, (Dims{3, 32, 32}));
    ASSERT_EQ(d->num_chunks(), 1);
    auto seqs = d->read_chunk(0);
    ASSERT_EQ(seqs.size(), 3u);
    for (size_t r = 0; r < 3; ++r) {
        EXPECT_EQ(seqs[r][0].data.shape(), (Shape{1, 3, 32, 32}));
        EXPECT_EQ(seqs[r][0].data.at({0, 1, 2, 3}),
                  pixels[r][1024 + 2 * 32 + 3]);  // green plane, row 2, col 3
        EXPECT_EQ(seqs[r][1].data.at({0, int64_t(expected_labels[r])}), 1.0);
        EXPECT_EQ(seqs[r][1].data.to_vector<float>().size(), 10u);
    }
    test::write_file(dir.file("bad.bin"), a.substr(0, 3000));
    std::string msg = error_of<IOError>([&] { cifar10_binary_deserializer({dir.file("bad.bin")}); });
    EXPECT_NE(msg.find("bad.bin"), std::string::npos) << msg;
    a[0] = 12;
    test::write_file(dir.file("label.bin"), a);
    msg = error_of<IOError>([&] { cifar10_binary_deserializer({dir.file("label.bin")}); });
    EXPECT_NE(msg.find("label 12"), std::string::npos) << msg;
}

}  // namespace
}  // namespace ctk
