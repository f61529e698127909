// Whole-file reads through zlib, the MNIST IDX header checks, and stream-definition defaults.
#include "io/io_common.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <initializer_list>
#include <set>

#include "ctk/core/error.h"

namespace ctk::detail {

namespace {
// A file read through zlib (gzip or plain, zlib reads plain files unchanged), a piece at a time: the IDX
// readers take exactly what a header announces (a few megabytes of gzip can expand to gigabytes of
// zeros), read_file_maybe_gz takes everything.
class GzReader {
public:
    explicit GzReader(const std::string& path) : path_(path) {
        std::error_code ec;
        file_bytes_ = std::filesystem::file_size(path, ec);
        errno = 0;
        f_ = gzopen(path.c_str(), "rb");
        CTK_CHECK(f_ != nullptr, IOError, "cannot open '", path,
                  "': ", errno ? std::strerror(errno) : "zlib could not allocate its state");
        // zlib's buffer (1 MiB for speed on large files; a small file gets a small one).
        gzbuffer(f_, static_cast<unsigned>(std::clamp<uint64_t>(file_bytes_ + 1, 8u << 10, 1u << 20)));
    }
    ~GzReader() { gzclose(f_); }
    GzReader(const GzReader&) = delete;
    GzReader& operator=(const GzReader&) = delete;

    // Up to `n` bytes (fewer only at the end of the data).
    size_t read(uint8_t* out, size_t n) {
        size_t done = 0;
        while (done < n) {
            const auto want = static_cast<unsigned>(std::min<size_t>(n - done, size_t(1) << 30));
            const int got = gzread(f_, out + done, want);
            if (got > 0) {
                done += static_cast<size_t>(got);
                continue;
            }
            // A gzip stream cut short reads as a clean end of data; zlib reports it only through gzerror.
            int code = 0;
            const char* msg = gzerror(f_, &code);
            CTK_CHECK(got == 0 && (code == Z_OK || code == Z_STREAM_END), IOError, "cannot read '", path_,
                      "': ", got < 0 ? "" : "the gzip stream is truncated or corrupt: ", msg ? msg : "");
            break;
        }
        return done;
    }

    // The most bytes the file can inflate to: its size when plain, 1032 times it when compressed
    // (deflate's largest ratio: a 258-byte match coded in about two bits).
    uint64_t max_content_bytes() const { return gzdirect(f_) ? file_bytes_ : file_bytes_ * 1032 + 1024; }

    // The header announced `expected` bytes after itself; anything more is rejected.
    void expect_end(const char* announced) {
        uint8_t extra = 0;
        CTK_CHECK(read(&extra, 1) == 0, IOError, "'", path_, "' holds more data than its header announces (",
                  announced, ")");
    }

private:
    std::string path_;
    uint64_t file_bytes_ = 0;
    gzFile f_ = nullptr;
};
}  // namespace

std::vector<uint8_t> read_file_maybe_gz(const std::string& path) {
    GzReader r(path);
    std::vector<uint8_t> bytes;
    // Blocks from 64 KiB doubling to 4 MiB: a small file is not read through megabytes of zeroed buffer.
    for (size_t block = size_t(64) << 10;; block = std::min(block * 2, size_t(4) << 20)) {
        const size_t old = bytes.size();
        bytes.resize(old + block);
        const size_t n = r.read(bytes.data() + old, block);
        bytes.resize(old + n);
        if (n < block) return bytes;
    }
}

void make_dir(const std::string& dir) {
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    CTK_CHECK(!ec, IOError, "cannot create directory '", dir, "': ", ec.message());
}

std::string existing_or_gz(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return path;
    if (std::filesystem::exists(path + ".gz", ec)) return path + ".gz";
    return path;
}

namespace {

// The announced payload: the product of `dims` bytes, checked against what the file can hold.
size_t announced_bytes(const GzReader& r, const std::string& path, std::initializer_list<uint64_t> dims,
                       const std::string& what) {
    uint64_t n = 1;
    bool overflow = false;
    for (uint64_t d : dims) overflow = overflow || __builtin_mul_overflow(n, d, &n);
    CTK_CHECK(!overflow && n <= r.max_content_bytes(), IOError, "'", path,
              "' is truncated or corrupt: the header announces ", what, ", more than the file's ",
              r.max_content_bytes(), " bytes can hold");
    return static_cast<size_t>(n);
}

}  // namespace

IdxImages read_idx_images(const std::string& path) {
    GzReader r(path);
    uint8_t header[16];
    const size_t got = r.read(header, sizeof header);
    const uint32_t magic = got >= 4 ? load_be32(header) : 0;
    CTK_CHECK(magic == 0x00000803u, IOError, "'", path, "' is not an IDX image file: magic 0x", std::hex,
              magic, ", expected 0x00000803 (unsigned bytes, 3 dims)");
    CTK_CHECK(got == 16, IOError, "'", path,
              "' is truncated: an IDX image file needs a 16-byte header, found ", got, " bytes");
    IdxImages out;
    out.count = load_be32(header + 4);
    out.rows = load_be32(header + 8);
    out.cols = load_be32(header + 12);
    CTK_CHECK(out.rows > 0 && out.cols > 0, IOError, "'", path, "': image size ", out.rows, "x", out.cols,
              " is empty");
    const std::string what =
        std::to_string(out.count) + " images of " + std::to_string(out.rows) + "x" + std::to_string(out.cols);
    const size_t expected =
        announced_bytes(r, path, {uint64_t(out.count), uint64_t(out.rows), uint64_t(out.cols)}, what);
    out.pixels.resize(expected);
    const size_t read = r.read(out.pixels.data(), expected);
    CTK_CHECK(read == expected, IOError, "'", path, "' is truncated: the header announces ", what, " (",
              expected, " bytes of pixels), found ", read, " bytes");
    r.expect_end(what.c_str());
    return out;
}

IdxLabels read_idx_labels(const std::string& path, int64_t num_classes) {
    GzReader r(path);
    uint8_t header[8];
    const size_t got = r.read(header, sizeof header);
    const uint32_t magic = got >= 4 ? load_be32(header) : 0;
    CTK_CHECK(magic == 0x00000801u, IOError, "'", path, "' is not an IDX label file: magic 0x", std::hex,
              magic, ", expected 0x00000801 (unsigned bytes, 1 dim)");
    CTK_CHECK(got == 8, IOError, "'", path,
              "' is truncated: an IDX label file needs an 8-byte header, found ", got, " bytes");
    IdxLabels out;
    out.count = load_be32(header + 4);
    const std::string what = std::to_string(out.count) + " labels";
    const size_t expected = announced_bytes(r, path, {uint64_t(out.count)}, what);
    out.labels.resize(expected);
    const size_t read = r.read(out.labels.data(), expected);
    CTK_CHECK(read == expected, IOError, "'", path, "' is truncated: the header announces ", what, ", found ",
              read, " bytes");
    r.expect_end(what.c_str());
    for (int64_t i = 0; i < out.count; ++i)
        CTK_CHECK(out.labels[size_t(i)] < num_classes, IOError, "'", path, "': label ", i, " is ",
                  int(out.labels[size_t(i)]), ", outside the ", num_classes, " classes");
    return out;
}

std::vector<StreamDef> normalize_stream_defs(const std::vector<StreamDef>& defs, const char* who) {
    CTK_CHECK(!defs.empty(), ValueError, who, ": no streams given");
    std::vector<StreamDef> out = defs;
    std::set<std::string> names, fields;
    for (StreamDef& d : out) {
        if (d.name.empty()) d.name = d.field;
        if (d.field.empty()) d.field = d.name;
        CTK_CHECK(!d.name.empty(), ValueError, who, ": a stream has neither a name nor a field");
        CTK_CHECK(!d.shape.empty(), ValueError, who, ": stream '", d.name, "' has no shape (give its dim)");
        for (int64_t v : d.shape)
            CTK_CHECK(v > 0, ValueError, who, ": stream '", d.name, "' has shape ", dims_to_string(d.shape),
                      "; every dim must be positive");
        CTK_CHECK(names.insert(d.name).second, ValueError, who, ": stream name '", d.name, "' is used twice");
        CTK_CHECK(fields.insert(d.field).second, ValueError, who, ": field '", d.field,
                  "' is used by two streams");
    }
    return out;
}

StreamInformation make_stream_info(const StreamDef& def, int id) {
    StreamInformation s;
    s.name = def.name;
    s.id = id;
    s.sample_shape = def.shape;
    s.is_sparse = def.is_sparse;
    s.defines_mb_size = def.defines_mb_size;
    return s;
}

std::vector<std::vector<SequenceData>> one_sample_sequences(const Tensor& features, const Tensor& labels) {
    const int64_t n = features.dim(0);
    std::vector<std::vector<SequenceData>> out(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        out[size_t(i)] = {SequenceData{features.slice(0, i, i + 1), {}},
                          SequenceData{labels.slice(0, i, i + 1), {}}};
    return out;
}

std::vector<uint8_t> read_cifar10_records(const std::vector<std::string>& paths) {
    std::vector<uint8_t> records;
    for (const std::string& path : paths) {
        std::vector<uint8_t> bytes = read_file_maybe_gz(path);
        CTK_CHECK(!bytes.empty() && bytes.size() % kCifarRecord == 0, IOError, "'", path, "' holds ",
                  bytes.size(), " bytes, not a whole number of ", kCifarRecord,
                  "-byte CIFAR-10 records (truncated?)");
        for (size_t r = 0; r < bytes.size(); r += kCifarRecord)
            CTK_CHECK(bytes[r] < 10, IOError, "'", path, "': record ", r / kCifarRecord, " has label ",
                      int(bytes[r]), "; CIFAR-10 labels are 0..9");
        records.insert(records.end(), bytes.begin(), bytes.end());
    }
    return records;
}

}  // namespace ctk::detail
