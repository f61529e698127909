// Helpers shared by the readers in src/io: whole-file reads through zlib (plain or gzip), big-endian
// words, stream-definition checks, and the Philox-based integer draws the randomizer uses (portable,
// unlike std::uniform_int_distribution, so a seed gives the same order on every platform).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctk/core/rng.h"
#include "ctk/io.h"

namespace ctk::detail {

// Reads `path` whole; gzip-compressed files are inflated (zlib reads plain files unchanged).
// Throws IOError naming the file when it is missing, unreadable or a truncated/corrupt gzip stream.
std::vector<uint8_t> read_file_maybe_gz(const std::string& path);

// Creates `dir` and its parents (an existing one is fine); IOError naming it otherwise.
void make_dir(const std::string& dir);

// `path` if it exists, else `path + ".gz"` if that exists, else `path` (so the error names it).
std::string existing_or_gz(const std::string& path);

// CIFAR-10's binary batches: one label byte (0..9) and 3072 pixel bytes (3 planes of 32 x 32) a record.
inline constexpr int64_t kCifarPixels = 3 * 32 * 32;
inline constexpr int64_t kCifarRecord = 1 + kCifarPixels;
// The records of the files in turn, checked: whole records, labels below 10 (IOError naming the file).
std::vector<uint8_t> read_cifar10_records(const std::vector<std::string>& paths);

inline uint32_t load_be32(const uint8_t* p) {
    return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

// The IDX files of MNIST (yann.lecun.com/exdb/mnist): a big-endian magic 0x00000803 (images) or
// 0x00000801 (labels), the dims as big-endian uint32, then unsigned bytes.
struct IdxImages {
    int64_t count = 0, rows = 0, cols = 0;
    std::vector<uint8_t> pixels;  // count * rows * cols, header stripped
};
struct IdxLabels {
    int64_t count = 0;
    std::vector<uint8_t> labels;
};
IdxImages read_idx_images(const std::string& path);
IdxLabels read_idx_labels(const std::string& path, int64_t num_classes);

// Fills in defaults (name from field and back) and checks names are unique and shapes positive.
// Image data sets: one single-sample sequence per row of batched features and one-hot labels (views).
std::vector<std::vector<SequenceData>> one_sample_sequences(const Tensor& features, const Tensor& labels);

std::vector<StreamDef> normalize_stream_defs(const std::vector<StreamDef>& defs, const char* who);
StreamInformation make_stream_info(const StreamDef& def, int id);

// Integer draws from Philox: draw(i) is a pure function of (key, lane, i).
class PhiloxInts {
public:
    PhiloxInts(uint64_t key, uint32_t lane) : key_(key), lane_(lane) {}
    // Uniform in [0, n), n >= 1 (64 random bits reduced modulo n; the bias is below 2^-40 for the
    // sizes readers see).
    uint64_t below(uint64_t n) {
        const auto w = philox_draw(key_, counter_++, lane_);
        const uint64_t r = (uint64_t(w[0]) << 32) | w[1];
        return r % n;
    }

private:
    uint64_t key_;
    uint32_t lane_;
    uint64_t counter_ = 0;
};

}  // namespace ctk::detail
