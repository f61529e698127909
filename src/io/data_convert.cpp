// Data sets -> CNTK text files, line for line what CNTK's installers write: MNIST from IDX files
// (Examples/Image/DataSets/MNIST/install_mnist.py) and CIFAR-10 from its binary batches
// (Examples/Image/DataSets/CIFAR-10/install_cifar10.py's text files). Each line is
// "|labels <one-hot integers> |features <pixel integers>\n", the image in the order the source stores it
// (MNIST row-major, CIFAR-10 the red, green and blue planes). Numbers are formatted from a table into one
// buffer (no iostreams), and each file is written atomically (temporary file, then rename).
#include <array>
#include <filesystem>
#include <string>

#include "ctk/core/dictionary.h"
#include "ctk/core/error.h"
#include "ctk/io.h"
#include "io/io_common.h"

namespace ctk {
namespace {

constexpr int64_t kClasses = 10;  // both data sets

// Writes `count` images of `pixels` bytes (image i at pixels_of(i)) with their labels (label_of(i)).
template <typename LabelOf, typename PixelsOf>
void write_ctf_images(const std::string& out_path, int64_t count, int64_t pixels, LabelOf label_of,
                      PixelsOf pixels_of) {
    std::array<std::string, 256> number;  // " 0".." 255"
    for (int v = 0; v < 256; ++v) number[size_t(v)] = " " + std::to_string(v);
    std::array<std::string, kClasses> label_text;  // the one-hot label strings, per class
    for (int64_t c = 0; c < kClasses; ++c) {
        std::string s = "|labels";
        for (int64_t k = 0; k < kClasses; ++k) s += k == c ? " 1" : " 0";
        label_text[size_t(c)] = s + " |features";
    }
    std::string out;
    out.reserve(static_cast<size_t>(count * (40 + pixels * 4)));
    for (int64_t i = 0; i < count; ++i) {
        out += label_text[size_t(label_of(i))];
        const uint8_t* px = pixels_of(i);
        for (int64_t k = 0; k < pixels; ++k) out += number[px[k]];
        out += '\n';
    }
    write_file_atomically(out_path, out);
}

int64_t convert_mnist_one(const std::string& in_dir, const std::string& images, const std::string& labels,
                          const std::string& out_path) {
    const std::string images_path = detail::existing_or_gz(in_dir + "/" + images);
    const std::string labels_path = detail::existing_or_gz(in_dir + "/" + labels);
    const detail::IdxImages img = detail::read_idx_images(images_path);
    const detail::IdxLabels lab = detail::read_idx_labels(labels_path, kClasses);
    CTK_CHECK(img.count == lab.count, IOError, "'", images_path, "' holds ", img.count, " images but '",
              labels_path, "' holds ", lab.count, " labels");
    const int64_t pixels = img.rows * img.cols;
    write_ctf_images(
        out_path, img.count, pixels, [&](int64_t i) { return lab.labels[size_t(i)]; },
        [&](int64_t i) { return img.pixels.data() + i * pixels; });
    return img.count;
}

int64_t convert_cifar_files(const std::string& in_dir, const std::vector<std::string>& names,
                            const std::string& out_path) {
    std::vector<std::string> paths;
    for (const std::string& name : names) paths.push_back(detail::existing_or_gz(in_dir + "/" + name));
    const std::vector<uint8_t> records = detail::read_cifar10_records(paths);
    const int64_t count = static_cast<int64_t>(records.size()) / detail::kCifarRecord;
    write_ctf_images(
        out_path, count, detail::kCifarPixels,
        [&](int64_t i) { return records[size_t(i * detail::kCifarRecord)]; },
        [&](int64_t i) { return records.data() + i * detail::kCifarRecord + 1; });
    return count;
}

}  // namespace

std::pair<int64_t, int64_t> convert_mnist_to_ctf(const std::string& in_dir, const std::string& out_dir) {
    detail::make_dir(out_dir);
    const int64_t train = convert_mnist_one(in_dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                            out_dir + "/Train-28x28_cntk_text.txt");
    const int64_t test = convert_mnist_one(in_dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                           out_dir + "/Test-28x28_cntk_text.txt");
    return {train, test};
}

std::pair<int64_t, int64_t> convert_cifar10_to_ctf(const std::string& in_dir, const std::string& out_dir) {
    detail::make_dir(out_dir);
    std::vector<std::string> train_files;
    for (int i = 1; i <= 5; ++i) train_files.push_back("data_batch_" + std::to_string(i) + ".bin");
    const int64_t train = convert_cifar_files(in_dir, train_files, out_dir + "/Train_cntk_text.txt");
    const int64_t test = convert_cifar_files(in_dir, {"test_batch.bin"}, out_dir + "/Test_cntk_text.txt");
    return {train, test};
}

}  // namespace ctk
