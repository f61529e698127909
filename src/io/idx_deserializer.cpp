// MNIST IDX deserializer: images and labels are read whole at construction (plain or gzipped) and kept as
// bytes (60000 x 784 is 47 MB as uint8, 188 MB as float); each chunk converts its share to floats.
#include <algorithm>

#include "ctk/core/error.h"
#include "ctk/io.h"
#include "io/io_common.h"

namespace ctk {
namespace {

constexpr int64_t kSamplesPerChunk = 10000;

class MnistIdxDeserializer final : public Deserializer {
public:
    MnistIdxDeserializer(const std::string& images_path, const std::string& labels_path, int64_t num_classes)
        : num_classes_(num_classes) {
        CTK_CHECK(num_classes > 0 && num_classes <= 256, ValueError,
                  "mnist_idx_deserializer: num_classes is ", num_classes, "; it must be in 1..256");
        images_path_ = detail::existing_or_gz(images_path);
        labels_path_ = detail::existing_or_gz(labels_path);
        images_ = detail::read_idx_images(images_path_);
        labels_ = detail::read_idx_labels(labels_path_, num_classes);
        CTK_CHECK(images_.count == labels_.count, IOError, "'", images_path_, "' holds ", images_.count,
                  " images but '", labels_path_, "' holds ", labels_.count, " labels");
        CTK_CHECK(images_.count > 0, IOError, "'", images_path_, "' holds no images");
        StreamDef features{"features", "features", {images_.rows * images_.cols}, false, false};
        StreamDef labels{"labels", "labels", {num_classes}, false, false};
        infos_ = {detail::make_stream_info(features, 0), detail::make_stream_info(labels, 1)};
    }

    const std::vector<StreamInformation>& streams() const override { return infos_; }
    int64_t num_chunks() const override { return (images_.count + kSamplesPerChunk - 1) / kSamplesPerChunk; }
    int64_t chunk_num_sequences(int64_t chunk) const override {
        check(chunk);
        return std::min(kSamplesPerChunk, images_.count - chunk * kSamplesPerChunk);
    }
    int64_t chunk_num_samples(int64_t chunk) const override { return chunk_num_sequences(chunk); }
    std::string description() const override {
        return "MNIST IDX files '" + images_path_ + "' and '" + labels_path_ + "'";
    }

    std::vector<std::vector<SequenceData>> read_chunk(int64_t chunk) const override {
        const int64_t n = chunk_num_sequences(chunk);
        const int64_t first = chunk * kSamplesPerChunk;
        const int64_t pixels = images_.rows * images_.cols;
        // One tensor per stream for the whole chunk; each sequence is a one-row view of it.
        Tensor features = Tensor::empty(Shape{n, pixels});
        Tensor labels = Tensor::zeros(Shape{n, num_classes_});
        float* f = features.data<float>();
        float* l = labels.data<float>();
        const uint8_t* src = images_.pixels.data() + first * pixels;
        for (int64_t i = 0; i < n * pixels; ++i) f[i] = static_cast<float>(src[i]);
        for (int64_t i = 0; i < n; ++i) l[i * num_classes_ + labels_.labels[size_t(first + i)]] = 1.0f;
        return detail::one_sample_sequences(features, labels);
    }

private:
    int64_t num_classes_;
    std::string images_path_, labels_path_;
    detail::IdxImages images_;
    detail::IdxLabels labels_;
    std::vector<StreamInformation> infos_;

    void check(int64_t chunk) const {
        CTK_CHECK(chunk >= 0 && chunk < num_chunks(), IndexError, description(), ": chunk ", chunk,
                  " out of range (", num_chunks(), " chunks)");
    }
};

}  // namespace

DeserializerPtr mnist_idx_deserializer(const std::string& images_path, const std::string& labels_path,
                                       int64_t num_classes) {
    return std::make_shared<MnistIdxDeserializer>(images_path, labels_path, num_classes);
}

}  // namespace ctk
