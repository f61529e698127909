// CIFAR-10 binary deserializer (www.cs.toronto.edu/~kriz/cifar.html, "binary version"): each record is
// one label byte and 3072 pixel bytes, the red, green and blue 32x32 planes in turn (CHW). Files are read
// whole at construction and kept as bytes; chunks of 10000 records convert to floats on demand.
#include <algorithm>

#include "ctk/core/error.h"
#include "ctk/io.h"
#include "io/io_common.h"

namespace ctk {
namespace {

constexpr int64_t kPixels = detail::kCifarPixels;
constexpr int64_t kRecord = detail::kCifarRecord;
constexpr int64_t kClasses = 10;
constexpr int64_t kRecordsPerChunk = 10000;

class Cifar10Deserializer final : public Deserializer {
public:
    explicit Cifar10Deserializer(const std::vector<std::string>& paths) : paths_(paths) {
        CTK_CHECK(!paths.empty(), ValueError, "cifar10_binary_deserializer: no files given");
        records_ = detail::read_cifar10_records(paths);
        count_ = static_cast<int64_t>(records_.size()) / kRecord;
        StreamDef features{"features", "features", {3, 32, 32}, false, false};
        StreamDef labels{"labels", "labels", {kClasses}, false, false};
        infos_ = {detail::make_stream_info(features, 0), detail::make_stream_info(labels, 1)};
    }

    const std::vector<StreamInformation>& streams() const override { return infos_; }
    int64_t num_chunks() const override { return (count_ + kRecordsPerChunk - 1) / kRecordsPerChunk; }
    int64_t chunk_num_sequences(int64_t chunk) const override {
        CTK_CHECK(chunk >= 0 && chunk < num_chunks(), IndexError, description(), ": chunk ", chunk,
                  " out of range (", num_chunks(), " chunks)");
        return std::min(kRecordsPerChunk, count_ - chunk * kRecordsPerChunk);
    }
    int64_t chunk_num_samples(int64_t chunk) const override { return chunk_num_sequences(chunk); }
    std::string description() const override {
        std::string s = "CIFAR-10 binary files";
        for (const std::string& p : paths_) s += " '" + p + "'";
        return s;
    }

    std::vector<std::vector<SequenceData>> read_chunk(int64_t chunk) const override {
        const int64_t n = chunk_num_sequences(chunk);
        const int64_t first = chunk * kRecordsPerChunk;
        Tensor features = Tensor::empty(Shape{n, 3, 32, 32});
        Tensor labels = Tensor::zeros(Shape{n, kClasses});
        float* f = features.data<float>();
        float* l = labels.data<float>();
        for (int64_t i = 0; i < n; ++i) {
            const uint8_t* rec = records_.data() + (first + i) * kRecord;
            l[i * kClasses + rec[0]] = 1.0f;
            for (int64_t k = 0; k < kPixels; ++k) f[i * kPixels + k] = static_cast<float>(rec[1 + k]);
        }
        return detail::one_sample_sequences(features, labels);
    }

private:
    std::vector<std::string> paths_;
    std::vector<uint8_t> records_;
    int64_t count_ = 0;
    std::vector<StreamInformation> infos_;
};

}  // namespace

DeserializerPtr cifar10_binary_deserializer(const std::vector<std::string>& paths) {
    return std::make_shared<Cifar10Deserializer>(paths);
}

}  // namespace ctk
