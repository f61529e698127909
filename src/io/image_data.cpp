// Image data sets in CNTK's layouts on disk, from what a machine has: CIFAR-10's binary batches as
// CNTK's install_cifar10.py left them (PNG files, map files, regression labels, the mean file, the text
// files), and an IDX image set (Debian's Fashion-MNIST) in the same CIFAR-10 layout or in an
// ImageNet-style one (class folders of JPEG files, train_map.txt / val_map.txt, ImageNet1K_mean.xml).
// Files are encoded with OpenCV on the CPU threads; map and text files are written atomically.
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "ctk/core/dictionary.h"
#include "ctk/core/error.h"
#include "ctk/core/parallel.h"
#include "ctk/io/image.h"
#include "io/io_common.h"

namespace ctk {
namespace {

constexpr int kSide = 32;  // CIFAR-10's images
constexpr int64_t kPlane = kSide * kSide;

// Images as CIFAR-10 stores them: 3 planes (red, green, blue) of 32 x 32 bytes, and their labels.
struct ChwSet {
    std::vector<uint8_t> pixels;  // n * 3072
    std::vector<uint8_t> labels;
    int64_t size() const { return static_cast<int64_t>(labels.size()); }
    const uint8_t* image(int64_t i) const { return pixels.data() + i * 3 * kPlane; }
};

ChwSet cifar_set(const std::string& in_dir, const std::vector<std::string>& names) {
    std::vector<std::string> paths;
    for (const std::string& n : names) paths.push_back(detail::existing_or_gz(in_dir + "/" + n));
    const std::vector<uint8_t> records = detail::read_cifar10_records(paths);
    ChwSet s;
    const int64_t n = static_cast<int64_t>(records.size()) / detail::kCifarRecord;
    for (int64_t i = 0; i < n; ++i) {
        const uint8_t* r = records.data() + i * detail::kCifarRecord;
        s.labels.push_back(r[0]);
        s.pixels.insert(s.pixels.end(), r + 1, r + detail::kCifarRecord);
    }
    return s;
}

// 28 x 28 gray images (IDX) as CIFAR-10 images: padded with 2 pixels of 0 (their background) to 32 x 32,
// the same value in all three planes.
ChwSet idx_as_cifar(const detail::IdxImages& img, const detail::IdxLabels& lab, int64_t limit) {
    CTK_CHECK(img.rows <= kSide && img.cols <= kSide, ValueError, "the IDX images are ", img.rows, "x",
              img.cols, "; the CIFAR-10 layout holds images up to 32x32");
    const int64_t n = limit > 0 ? std::min(limit, img.count) : img.count;
    ChwSet s;
    s.pixels.assign(size_t(n * 3 * kPlane), 0);
    const int64_t top = (kSide - img.rows) / 2, left = (kSide - img.cols) / 2;
    for (int64_t i = 0; i < n; ++i) {
        s.labels.push_back(lab.labels[size_t(i)]);
        for (int64_t c = 0; c < 3; ++c)
            for (int64_t y = 0; y < img.rows; ++y)
                std::copy_n(img.pixels.data() + (i * img.rows + y) * img.cols, img.cols,
                            s.pixels.data() + i * 3 * kPlane + c * kPlane + (top + y) * kSide + left);
    }
    return s;
}

std::string absolute(const std::string& path) {
    return std::filesystem::absolute(path).lexically_normal().string();
}

void write_image(const std::string& path, const cv::Mat& bgr, const std::vector<int>& params = {}) {
    bool ok = false;
    try {
        ok = cv::imwrite(path, bgr, params);
    } catch (const cv::Exception& e) {
        CTK_THROW(IOError, "cannot write image '", path, "': ", e.what());
    }
    CTK_CHECK(ok, IOError, "cannot write image '", path, "'");
}

// CNTK's mean file: OpenCV XML with Channel, Row, Col and the values as one row, %e formatted, in the
// order given (CNTK's CIFAR-10 file holds the planes in CHW order; its reader takes them as HWC).
void write_mean_file(const std::string& path, int channels, int rows, int cols,
                     const std::vector<double>& values) {
    std::string out = "<?xml version=\"1.0\" ?>\n<opencv_storage>\n  <Channel>" + std::to_string(channels) +
                      "</Channel>\n  <Row>" + std::to_string(rows) + "</Row>\n  <Col>" +
                      std::to_string(cols) +
                      "</Col>\n  <MeanImg type_id=\"opencv-matrix\">\n    <rows>1</rows>\n    <cols>" +
                      std::to_string(values.size()) + "</cols>\n    <dt>f</dt>\n    <data>";
    char buffer[32];
    for (size_t i = 0; i < values.size(); ++i) {
        std::snprintf(buffer, sizeof buffer, i ? " %e" : "%e", values[i]);
        out += buffer;
    }
    out += "</data>\n  </MeanImg>\n</opencv_storage>\n";
    write_file_atomically(path, out);
}

// One split in CNTK's CIFAR-10 layout: <folder>/%05d.png (padded by `pad` pixels of 128, as CNTK's
// training images), the map file and the regression labels (per-channel means / 255 of the saved image).
void write_cifar_split(const ChwSet& set, const std::string& out_dir, const std::string& split, int pad) {
    const std::string folder = absolute(out_dir + "/" + split);
    detail::make_dir(folder);
    const int side = kSide + 2 * pad;
    std::vector<std::string> map_lines(static_cast<size_t>(set.size())),
        regr_lines(static_cast<size_t>(set.size()));
    parallel_for(0, set.size(), 64, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            cv::Mat bgr(side, side, CV_8UC3, cv::Scalar(128, 128, 128));
            const uint8_t* px = set.image(i);
            std::array<double, 3> sums{};
            for (int y = 0; y < kSide; ++y)
                for (int x = 0; x < kSide; ++x) {
                    const uint8_t r = px[y * kSide + x], g = px[kPlane + y * kSide + x],
                                  b = px[2 * kPlane + y * kSide + x];
                    bgr.at<cv::Vec3b>(y + pad, x + pad) = cv::Vec3b(b, g, r);
                }
            for (int y = 0; y < side; ++y)
                for (int x = 0; x < side; ++x)
                    for (int c = 0; c < 3; ++c) sums[size_t(c)] += bgr.at<cv::Vec3b>(y, x)[2 - c];
            char name[32];
            std::snprintf(name, sizeof name, "%05lld.png", static_cast<long long>(i));
            const std::string path = folder + "/" + name;
            write_image(path, bgr);
            map_lines[size_t(i)] = path + "\t" + std::to_string(set.labels[size_t(i)]) + "\n";
            char regr[96];
            const double n = double(side) * side * 255.0;
            std::snprintf(regr, sizeof regr, "|regrLabels\t%f\t%f\t%f\n", sums[0] / n, sums[1] / n,
                          sums[2] / n);
            regr_lines[size_t(i)] = regr;
        }
    });
    std::string map, regr;
    for (size_t i = 0; i < map_lines.size(); ++i) map += map_lines[i], regr += regr_lines[i];
    write_file_atomically(out_dir + "/" + split + "_map.txt", map);
    write_file_atomically(out_dir + "/" + split + "_regrLabels.txt", regr);
}

// CNTK's text files of a split: "|labels <one-hot 10> |features <3072 integers>" (the CHW planes).
void write_cifar_ctf(const ChwSet& set, const std::string& path) {
    std::array<std::string, 256> number;  // " 0" .. " 255"
    for (int v = 0; v < 256; ++v) number[size_t(v)] = " " + std::to_string(v);
    std::string out;
    out.reserve(size_t(set.size()) * 12000);
    for (int64_t i = 0; i < set.size(); ++i) {
        out += "|labels";
        for (int c = 0; c < 10; ++c) out += c == set.labels[size_t(i)] ? " 1" : " 0";
        out += " |features";
        const uint8_t* px = set.image(i);
        for (int64_t k = 0; k < 3 * kPlane; ++k) out += number[px[k]];
        out += '\n';
    }
    write_file_atomically(path, out);
}

std::pair<int64_t, int64_t> write_cifar_layout(const ChwSet& train, const ChwSet& test,
                                               const std::string& out_dir) {
    detail::make_dir(out_dir);
    write_cifar_split(train, out_dir, "train", 4);
    write_cifar_split(test, out_dir, "test", 0);
    // The mean of the unpadded training images, planes in CIFAR's order (red, green, blue; CHW), as
    // CNTK's cifar_utils.saveMean wrote it.
    std::vector<double> mean(size_t(3 * kPlane), 0.0);
    for (int64_t i = 0; i < train.size(); ++i)
        for (int64_t k = 0; k < 3 * kPlane; ++k) mean[size_t(k)] += train.image(i)[k];
    for (double& m : mean) m /= double(std::max<int64_t>(train.size(), 1));
    write_mean_file(out_dir + "/CIFAR-10_mean.xml", 3, kSide, kSide, mean);
    write_cifar_ctf(train, out_dir + "/Train_cntk_text.txt");
    write_cifar_ctf(test, out_dir + "/Test_cntk_text.txt");
    return {train.size(), test.size()};
}

// One split of the ImageNet-style layout: <split>/<class>/<index>.jpg of size x size (the gray image
// resized with cubic interpolation, three equal channels), and its map file. Returns the sum of the
// images (HWC, BGR) for the mean.
std::vector<double> write_imagenet_split(const detail::IdxImages& img, const detail::IdxLabels& lab,
                                         int64_t n, const std::string& out_dir, const std::string& split,
                                         int size) {
    const std::string folder = absolute(out_dir + "/" + split);
    for (int c = 0; c < 10; ++c) detail::make_dir(folder + "/" + std::to_string(c));
    std::vector<std::string> lines(static_cast<size_t>(n));
    std::vector<std::vector<double>> sums(static_cast<size_t>(num_threads()));
    std::atomic<int> slot{0};
    parallel_for(0, n, 64, [&](int64_t begin, int64_t end) {
        std::vector<double>& sum = sums[size_t(slot++)];
        sum.assign(size_t(size) * size * 3, 0.0);
        for (int64_t i = begin; i < end; ++i) {
            const cv::Mat gray(int(img.rows), int(img.cols), CV_8UC1,
                               const_cast<uint8_t*>(img.pixels.data() + i * img.rows * img.cols));
            cv::Mat big, bgr;
            cv::resize(gray, big, cv::Size(size, size), 0, 0, cv::INTER_CUBIC);
            cv::cvtColor(big, bgr, cv::COLOR_GRAY2BGR);
            const int label = lab.labels[size_t(i)];
            const std::string path = folder + "/" + std::to_string(label) + "/" + std::to_string(i) + ".jpg";
            write_image(path, bgr, {cv::IMWRITE_JPEG_QUALITY, 95});
            lines[size_t(i)] = path + "\t" + std::to_string(label) + "\n";
            for (size_t k = 0; k < sum.size(); ++k) sum[k] += bgr.data[k];
        }
    });
    std::string map;
    for (const std::string& l : lines) map += l;
    write_file_atomically(out_dir + "/" + split + "_map.txt", map);
    std::vector<double> total(size_t(size) * size * 3, 0.0);
    for (const auto& s : sums)
        for (size_t k = 0; k < s.size(); ++k) total[k] += s[k];
    return total;
}

}  // namespace

std::pair<int64_t, int64_t> convert_cifar10_to_images(const std::string& in_dir, const std::string& out_dir) {
    std::vector<std::string> train_files;
    for (int i = 1; i <= 5; ++i) train_files.push_back("data_batch_" + std::to_string(i) + ".bin");
    return write_cifar_layout(cifar_set(in_dir, train_files), cifar_set(in_dir, {"test_batch.bin"}), out_dir);
}

std::pair<int64_t, int64_t> convert_idx_to_images(const std::string& in_dir, const std::string& out_dir,
                                                  const std::string& layout, int64_t size, int64_t limit) {
    CTK_CHECK(layout == "cifar" || layout == "imagenet", ValueError, "convert_idx_to_images: layout '",
              layout, "' is neither cifar nor imagenet");
    CTK_CHECK(size >= 8 && size <= 1024, ValueError, "convert_idx_to_images: size ", size,
              " is not in 8..1024");
    CTK_CHECK(limit >= 0, ValueError, "convert_idx_to_images: limit is negative");
    auto load = [&](const char* images, const char* labels) {
        const std::string ip = detail::existing_or_gz(in_dir + "/" + images);
        const std::string lp = detail::existing_or_gz(in_dir + "/" + labels);
        auto img = detail::read_idx_images(ip);
        auto lab = detail::read_idx_labels(lp, 10);
        CTK_CHECK(img.count == lab.count, IOError, "'", ip, "' holds ", img.count, " images but '", lp,
                  "' holds ", lab.count, " labels");
        return std::pair{std::move(img), std::move(lab)};
    };
    const auto [train_img, train_lab] = load("train-images-idx3-ubyte", "train-labels-idx1-ubyte");
    const auto [test_img, test_lab] = load("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte");
    if (layout == "cifar")
        return write_cifar_layout(idx_as_cifar(train_img, train_lab, limit),
                                  idx_as_cifar(test_img, test_lab, limit), out_dir);
    detail::make_dir(out_dir);
    const int64_t n_train = limit > 0 ? std::min(limit, train_img.count) : train_img.count;
    const int64_t n_test = limit > 0 ? std::min(limit, test_img.count) : test_img.count;
    std::vector<double> sum =
        write_imagenet_split(train_img, train_lab, n_train, out_dir, "train", int(size));
    write_imagenet_split(test_img, test_lab, n_test, out_dir, "val", int(size));
    // ImageNet1K_mean.xml as CNTK's ImageNet scripts read it: 224 x 224, interleaved B, G, R (HWC). The
    // mean of the training images at their size, resized to 224 x 224.
    const int side = static_cast<int>(size);
    cv::Mat mean(side, side, CV_32FC3);
    for (size_t k = 0; k < sum.size(); ++k)
        mean.ptr<float>()[k] = float(sum[k] / double(std::max<int64_t>(n_train, 1)));
    cv::Mat mean224;
    cv::resize(mean, mean224, cv::Size(224, 224), 0, 0, cv::INTER_LINEAR);
    std::vector<double> values(mean224.ptr<float>(), mean224.ptr<float>() + 224 * 224 * 3);
    write_mean_file(out_dir + "/ImageNet1K_mean.xml", 3, 224, 224, values);
    return {n_train, n_test};
}

}  // namespace ctk
