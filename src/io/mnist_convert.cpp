// MNIST IDX -> CNTK text files, line for line what CNTK's Examples/Image/DataSets/MNIST/install_mnist.py
// writes: "|labels <10 one-hot integers> |features <784 integers>\n". Numbers are formatted from a table
// into one buffer (no iostreams), and each file is written atomically (temporary file, then rename).
#include <array>
#include <filesystem>
#include <string>

#include "ctk/dictionary.h"
#include "ctk/error.h"
#include "ctk/io.h"
#include "io/io_common.h"

namespace ctk {
namespace {

constexpr int64_t kMnistClasses = 10;

int64_t convert_one(const std::string& in_dir, const std::string& images, const std::string& labels,
                    const std::string& out_path) {
    const std::string images_path = detail::existing_or_gz(in_dir + "/" + images);
    const std::string labels_path = detail::existing_or_gz(in_dir + "/" + labels);
    const detail::IdxImages img = detail::read_idx_images(images_path);
    const detail::IdxLabels lab = detail::read_idx_labels(labels_path, kMnistClasses);
    CTK_CHECK(img.count == lab.count, IOError, "'", images_path, "' holds ", img.count, " images but '",
              labels_path, "' holds ", lab.count, " labels");

    // " 0".." 255" for the pixels; the one-hot label strings precomputed per class.
    std::array<std::string, 256> number;
    for (int v = 0; v < 256; ++v) number[size_t(v)] = " " + std::to_string(v);
    std::array<std::string, kMnistClasses> label_text;
    for (int64_t c = 0; c < kMnistClasses; ++c) {
        std::string s = "|labels";
        for (int64_t k = 0; k < kMnistClasses; ++k) s += k == c ? " 1" : " 0";
        label_text[size_t(c)] = s + " |features";
    }
    const int64_t pixels = img.rows * img.cols;
    std::string out;
    out.reserve(static_cast<size_t>(img.count * (40 + pixels * 3)));
    for (int64_t i = 0; i < img.count; ++i) {
        out += label_text[lab.labels[size_t(i)]];
        const uint8_t* px = img.pixels.data() + i * pixels;
        for (int64_t k = 0; k < pixels; ++k) out += number[px[k]];
        out += '\n';
    }
    write_file_atomically(out_path, out);
    return img.count;
}

}  // namespace

std::pair<int64_t, int64_t> convert_mnist_to_ctf(const std::string& in_dir, const std::string& out_dir) {
    std::error_code ec;
    std::filesystem::create_directories(out_dir, ec);
    CTK_CHECK(!ec, IOError, "cannot create directory '", out_dir, "': ", ec.message());
    const int64_t train = convert_one(in_dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte",
                                      out_dir + "/Train-28x28_cntk_text.txt");
    const int64_t test = convert_one(in_dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                     out_dir + "/Test-28x28_cntk_text.txt");
    return {train, test};
}

}  // namespace ctk
