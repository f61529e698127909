// Whole-file reads through zlib, the MNIST IDX header checks, and stream-definition defaults.
#include "io/io_common.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

#include "ctk/error.h"

namespace ctk::detail {

std::vector<uint8_t> read_file_maybe_gz(const std::string& path) {
    errno = 0;
    gzFile f = gzopen(path.c_str(), "rb");
    CTK_CHECK(f != nullptr, IOError, "cannot open '", path,
              "': ", errno ? std::strerror(errno) : "zlib could not allocate its state");
    gzbuffer(f, 1 << 20);
    std::vector<uint8_t> bytes;
    constexpr size_t kBlock = 4 << 20;
    for (;;) {
        const size_t old = bytes.size();
        bytes.resize(old + kBlock);
        const int n = gzread(f, bytes.data() + old, static_cast<unsigned>(kBlock));
        if (n < 0) {
            int code = 0;
            const std::string msg = gzerror(f, &code);
            gzclose(f);
            CTK_THROW(IOError, "cannot read '", path, "': ", msg);
        }
        bytes.resize(old + static_cast<size_t>(n));
        if (n == 0) break;
    }
    // A gzip stream cut short reads as a clean end of data; zlib reports it only through gzerror.
    int code = 0;
    const char* msg = gzerror(f, &code);
    const std::string message = msg ? msg : "";
    gzclose(f);
    CTK_CHECK(code == Z_OK || code == Z_STREAM_END, IOError, "cannot read '", path,
              "': the gzip stream is truncated or corrupt (", message, ")");
    return bytes;
}

std::string existing_or_gz(const std::string& path) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) return path;
    if (std::filesystem::exists(path + ".gz", ec)) return path + ".gz";
    return path;
}

IdxImages read_idx_images(const std::string& path) {
    const std::vector<uint8_t> bytes = read_file_maybe_gz(path);
    const uint32_t magic = bytes.size() >= 4 ? load_be32(bytes.data()) : 0;
    CTK_CHECK(magic == 0x00000803u, IOError, "'", path, "' is not an IDX image file: magic 0x", std::hex,
              magic, ", expected 0x00000803 (unsigned bytes, 3 dims)");
    CTK_CHECK(bytes.size() >= 16, IOError, "'", path,
              "' is truncated: an IDX image file needs a 16-byte header, found ", bytes.size(), " bytes");
    IdxImages out;
    out.count = load_be32(bytes.data() + 4);
    out.rows = load_be32(bytes.data() + 8);
    out.cols = load_be32(bytes.data() + 12);
    CTK_CHECK(out.rows > 0 && out.cols > 0, IOError, "'", path, "': image size ", out.rows, "x", out.cols,
              " is empty");
    const uint64_t expected = uint64_t(out.count) * uint64_t(out.rows) * uint64_t(out.cols);
    CTK_CHECK(bytes.size() - 16 >= expected, IOError, "'", path, "' is truncated: the header announces ",
              out.count, " images of ", out.rows, "x", out.cols, " (", expected, " bytes of pixels), found ",
              bytes.size() - 16, " bytes");
    out.pixels.assign(bytes.begin() + 16, bytes.begin() + 16 + static_cast<std::ptrdiff_t>(expected));
    return out;
}

IdxLabels read_idx_labels(const std::string& path, int64_t num_classes) {
    const std::vector<uint8_t> bytes = read_file_maybe_gz(path);
    const uint32_t magic = bytes.size() >= 4 ? load_be32(bytes.data()) : 0;
    CTK_CHECK(magic == 0x00000801u, IOError, "'", path, "' is not an IDX label file: magic 0x", std::hex,
              magic, ", expected 0x00000801 (unsigned bytes, 1 dim)");
    CTK_CHECK(bytes.size() >= 8, IOError, "'", path,
              "' is truncated: an IDX label file needs an 8-byte header, found ", bytes.size(), " bytes");
    IdxLabels out;
    out.count = load_be32(bytes.data() + 4);
    CTK_CHECK(bytes.size() - 8 >= uint64_t(out.count), IOError, "'", path,
              "' is truncated: the header announces ", out.count, " labels, found ", bytes.size() - 8,
              " bytes");
    out.labels.assign(bytes.begin() + 8, bytes.begin() + 8 + out.count);
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

}  // namespace ctk::detail
