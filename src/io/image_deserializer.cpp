// CNTK's ImageDeserializer (a map file: one image and its class per line, each image its own chunk) and
// Base64ImageDeserializer (images inline as base64, chunked like CTF text). read_chunk decodes with
// OpenCV into 8-bit HWC; transform() runs CNTK's transforms per sequence once the minibatch is cut
// (src/io/image_transforms.h), so the same image gets the augmentation of its minibatch position.
#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>

#include <fcntl.h>
#include <unistd.h>

#include "ctk/core/error.h"
#include "ctk/io/image.h"
#include "io/image_transforms.h"
#include "io/zip_archive.h"

namespace ctk {
namespace {

constexpr int kMultiViewCopies = 10;

// The whole file into `out` (bytes or text); false when it cannot be opened.
template <typename Buffer>
bool read_whole_file(const std::string& path, Buffer& out) {
    FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) return false;
    char buffer[1 << 16];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, f)) > 0) out.insert(out.end(), buffer, buffer + n);
    std::fclose(f);
    return true;
}

// CNTK's label column: a base-10 class id below num_classes (strtoull, so leading blanks are allowed).
int64_t parse_label(const std::string& text, int64_t num_classes, const std::string& where) {
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    CTK_CHECK(end != text.c_str() && errno != ERANGE && text.find('-') == std::string::npos, IOError, where,
              ": cannot parse the label '", text, "'");
    CTK_CHECK(v < static_cast<unsigned long long>(num_classes), IOError, where, ": class id ", v,
              " is not below the label dimension ", num_classes);
    return static_cast<int64_t>(v);
}

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> fields;
    size_t start = 0;
    for (;;) {
        const size_t tab = line.find('\t', start);
        fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
        if (tab == std::string::npos) break;
        start = tab + 1;
    }
    return fields;
}

// What both image deserializers share: the streams, the decode and the transforms.
class ImageReaderBase : public Deserializer {
public:
    ImageReaderBase(const ImageDeserializerConfig& config, std::string who)
        : config_(config), who_(std::move(who)), pipeline_(config.transforms, who_) {
        CTK_CHECK(config.num_classes > 0 || config.label_stream.empty(), ValueError, who_,
                  ": the label stream '", config.label_stream, "' needs num_classes > 0");
        CTK_CHECK(!config.image_stream.empty(), ValueError, who_, ": the image stream needs a name");
        CTK_CHECK(config.image_stream != config.label_stream, ValueError, who_,
                  ": the image and label streams are both called '", config.image_stream, "'");
        CTK_CHECK(config.max_errors >= 0, ValueError, who_, ": max_errors is negative");
        // CNTK: without a label stream the labels are still read, against two classes.
        num_classes_ = config.label_stream.empty() ? 2 : config.num_classes;
    }

    const std::vector<StreamInformation>& streams() const override { return infos_; }
    std::string description() const override { return who_; }
    bool transforms_sequences() const override { return true; }
    std::vector<uint32_t> transform_engine_seeds() const override { return pipeline_.engine_seeds(); }

    void transform(int64_t chunk, int64_t index, std::span<SequenceData> sequence,
                   std::span<TransformEngine> rng) const override {
        SequenceData& image = sequence[0];
        if (image.skip) return;
        const Tensor& data = image.data;
        cv::Mat m;
        if (data.rank() == 2) {  // still encoded (see make_sequence): decoded here, for this worker only
            const uint8_t* p = data.data<uint8_t>();
            m = detail::decode_image(std::vector<uint8_t>(p, p + data.dim(1)), config_.grayscale);
            CTK_CHECK(
                !m.empty(), IOError, who_, ": cannot decode ", where(chunk, index),
                data.dim(1) == 0
                    ? " (missing or empty)"
                    : " (not a JPEG, PNG, BMP, TIFF, WebP, PNM, Sun raster, JPEG 2000, EXR or HDR image)");
        } else {
            m = cv::Mat(int(data.dim(1)), int(data.dim(2)), CV_MAKETYPE(CV_8U, int(data.dim(3))),
                        const_cast<uint8_t*>(data.data<uint8_t>()));
        }
        std::vector<float> planes;
        detail::ImageSize size;
        try {
            pipeline_.apply(m, copy_id(chunk), rng, planes, size);
        } catch (const cv::Exception& e) {
            CTK_THROW(ValueError, who_, ": transforming ", where(chunk, index),
                      " failed in OpenCV: ", e.what());
        }
        const Dims& shape = infos_[0].sample_shape;
        CTK_CHECK(shape[0] == size.channels && shape[1] == size.rows && shape[2] == size.cols, ShapeError,
                  who_, ": ", where(chunk, index), " comes out of the transforms as ", size.channels, "x",
                  size.rows, "x", size.cols, " (channels x height x width) but the stream '", infos_[0].name,
                  "' is ", dims_to_string(shape),
                  size.channels != shape[0] ? " (set grayscale, or scale's channels, to the images' channels)"
                                            : " (add a scale transform to give every image one size)");
        Tensor out = Tensor::empty(Shape{1, shape[0], shape[1], shape[2]});
        std::memcpy(out.data<float>(), planes.data(), planes.size() * sizeof(float));
        image.data = out;
    }

protected:
    // Which copy of its image a chunk is (multiview10's view); 0 without multi_view_crop.
    virtual int copy_id(int64_t chunk) const = 0;
    // "line 7 of map file 'm.txt' (image 'a.png')", for errors.
    virtual std::string where(int64_t chunk, int64_t index) const = 0;

    // The streams. A scale transform fixes the output shape; without one the first image's size does,
    // and only then is it decoded here (CNTK read no image before the first minibatch).
    void init_streams(const std::function<std::vector<uint8_t>()>& first_image,
                      const std::string& first_where) {
        std::optional<detail::ImageSize> out;
        if (pipeline_.has_scale()) {
            out = pipeline_.output_size({4096, 4096, 3});
        } else {
            const cv::Mat m = detail::decode_image(first_image(), config_.grayscale);
            CTK_CHECK(!m.empty(), IOError, who_, ": cannot decode ", first_where);
            out = pipeline_.output_size({m.rows, m.cols, m.channels()});
        }
        CTK_CHECK(out.has_value(), ValueError, who_,
                  ": random crops without a later scale transform give images of different sizes; add a "
                  "scale transform");
        StreamInformation image;
        image.name = config_.image_stream;
        image.id = 0;
        image.sample_shape = {out->channels, out->rows, out->cols};
        infos_.push_back(image);
        if (!config_.label_stream.empty()) {
            StreamInformation labels;
            labels.name = config_.label_stream;
            labels.id = 1;
            labels.sample_shape = {num_classes_};
            labels.is_sparse = true;
            infos_.push_back(labels);
        }
    }

    // One sequence: the image and its label as a one-hot index. Without max_errors the image stays
    // encoded, [1, bytes] uint8, and transform() decodes it: the source transforms only the sequences of
    // its own partition, so a distributed worker decodes only its share of each minibatch (a file that
    // does not decode is then an error there). With max_errors the image is decoded here, as [1, H, W, C]
    // uint8, so that every worker skips the same images (with a warning) before the minibatch is cut.
    std::vector<SequenceData> make_sequence(const std::vector<uint8_t>& bytes, int64_t label,
                                            const std::string& place) const {
        std::vector<SequenceData> seq(infos_.size());
        if (seq.size() > 1) seq[1].one_hot_indices = Tensor::full(Shape{1}, double(label), DataType::i64);
        if (config_.max_errors == 0) {
            Tensor encoded = Tensor::empty(Shape{1, static_cast<int64_t>(bytes.size())}, DataType::u8);
            if (!bytes.empty()) std::memcpy(encoded.data<uint8_t>(), bytes.data(), bytes.size());
            seq[0].data = encoded;
            return seq;
        }
        const cv::Mat m = detail::decode_image(bytes, config_.grayscale);
        if (m.empty()) {
            const int64_t n = ++errors_;
            CTK_CHECK(
                n <= config_.max_errors, IOError, who_, ": cannot decode ", place,
                bytes.empty()
                    ? " (missing or empty)"
                    : " (not a JPEG, PNG, BMP, TIFF, WebP, PNM, Sun raster, JPEG 2000, EXR or HDR image)",
                config_.max_errors > 0 ? "; more images failed than max_errors allows" : "");
            std::fprintf(stderr,
                         "WARNING: %s: skipping %s, which cannot be decoded (%lld of max_errors %lld)\n",
                         who_.c_str(), place.c_str(), static_cast<long long>(n),
                         static_cast<long long>(config_.max_errors));
            for (SequenceData& s : seq) s.skip = true;
            return seq;
        }
        Tensor image = Tensor::empty(Shape{1, m.rows, m.cols, m.channels()}, DataType::u8);
        uint8_t* dst = image.data<uint8_t>();
        const size_t row = size_t(m.cols) * size_t(m.channels());
        for (int r = 0; r < m.rows; ++r) std::memcpy(dst + size_t(r) * row, m.ptr<uint8_t>(r), row);
        seq[0].data = image;
        return seq;
    }

    ImageDeserializerConfig config_;
    std::string who_;
    detail::ImagePipeline pipeline_;
    int64_t num_classes_ = 0;
    std::vector<StreamInformation> infos_;
    mutable std::atomic<int64_t> errors_{0};
};

// ---- ImageDeserializer ----

class MapFileImageDeserializer final : public ImageReaderBase {
public:
    explicit MapFileImageDeserializer(const ImageDeserializerConfig& config)
        : ImageReaderBase(config, "ImageDeserializer('" + config.map_file + "')") {
        copies_ = config.multi_view_crop ? kMultiViewCopies : 1;
        read_map();
        init_streams([this] { return image_bytes(entries_[0]); }, describe(0));
    }

    int64_t num_chunks() const override { return static_cast<int64_t>(entries_.size()) * copies_; }
    int64_t chunk_num_sequences(int64_t chunk) const override {
        check_chunk(chunk);
        return 1;
    }
    int64_t chunk_num_samples(int64_t chunk) const override { return chunk_num_sequences(chunk); }

    std::vector<std::string> sequence_keys(int64_t chunk) const override {
        check_chunk(chunk);
        return {entries_[size_t(chunk / copies_)].key};
    }

    std::vector<std::vector<SequenceData>> read_chunk(int64_t chunk) const override {
        check_chunk(chunk);
        const Entry& e = entries_[size_t(chunk / copies_)];
        return {make_sequence(image_bytes(e), e.label, describe(chunk / copies_))};
    }

protected:
    int copy_id(int64_t chunk) const override { return static_cast<int>(chunk % copies_); }
    std::string where(int64_t chunk, int64_t) const override { return describe(chunk / copies_); }

private:
    struct Entry {
        std::string path;    // as resolved ("..." expanded)
        std::string member;  // inside a zip file, or empty
        int64_t label = 0;
        int64_t line = 0;  // 1-based
        std::string key;   // the key column, else the 0-based line number (CNTK's)
    };

    void check_chunk(int64_t chunk) const {
        CTK_CHECK(chunk >= 0 && chunk < num_chunks(), IndexError, who_, ": chunk ", chunk, " out of range (",
                  num_chunks(), " chunks)");
    }

    std::string describe(int64_t entry) const {
        const Entry& e = entries_[size_t(entry)];
        return "image '" + e.path + (e.member.empty() ? "" : "@" + e.member) + "' on line " +
               std::to_string(e.line) + " of map file '" + config_.map_file + "'";
    }

    std::vector<uint8_t> image_bytes(const Entry& e) const {
        if (e.member.empty()) {
            std::vector<uint8_t> bytes;  // missing: empty, which the decode reports
            read_whole_file(e.path, bytes);
            return bytes;
        }
        try {
            return zips_.read(e.path, e.member);
        } catch (const IOError& err) {
            if (config_.max_errors == 0)
                CTK_THROW(IOError, who_, ": ", describe(&e - entries_.data()), ": ", err.what());
            return {};
        }
    }

    void read_map() {
        std::string text;
        CTK_CHECK(read_whole_file(config_.map_file, text), IOError,
                  "ImageDeserializer: cannot open map file '", config_.map_file, "'");
        std::string dir = std::filesystem::path(config_.map_file).parent_path().string();
        if (dir.empty()) dir = ".";
        size_t start = 0;
        int64_t line_no = 0;
        while (start < text.size()) {
            size_t end = text.find('\n', start);
            if (end == std::string::npos) end = text.size();
            std::string line = text.substr(start, end - start);
            start = end + 1;
            ++line_no;
            if (!line.empty() && line.back() == '\r') line.pop_back();
            const std::string where =
                "line " + std::to_string(line_no) + " of map file '" + config_.map_file + "'";
            std::vector<std::string> fields = split_tabs(line);
            std::string key = std::to_string(line_no - 1);
            if (fields.size() >= 3) key = fields[0], fields.erase(fields.begin());
            CTK_CHECK(fields.size() == 2 && !fields[0].empty() && !fields[1].empty(), IOError, who_, ": ",
                      where, " is '", line,
                      "'; a line must hold 2 or 3 tab-separated columns (path and label, or key, "
                      "path and label)");
            Entry e;
            e.line = line_no;
            e.key = key;
            e.label = parse_label(fields[1], num_classes_, where);
            std::string path = fields[0];
            if (path.rfind("...", 0) == 0) path = dir + path.substr(3);
            // "archive.zip@/member": CNTK skipped the character after '@' and used '/' separators.
            const size_t at = path.find(".zip@");
            if (at != std::string::npos) {
                std::string member = path.substr(at + 6);
                std::replace(member.begin(), member.end(), '\\', '/');
                e.member = member;
                path = path.substr(0, at + 4);
            }
            e.path = path;
            entries_.push_back(std::move(e));
        }
        CTK_CHECK(!entries_.empty(), IOError, who_, ": map file '", config_.map_file, "' lists no images");
    }

    std::vector<Entry> entries_;
    int64_t copies_ = 1;
    mutable detail::ZipArchives zips_;
};

// ---- Base64ImageDeserializer ----

// Base64 (RFC 4648, with or without padding; blanks at the end ignored). No library ctk links decodes
// it, and it is a dozen lines. Returns false on a character outside the alphabet.
bool decode_base64(const char* p, const char* e, std::vector<uint8_t>& out) {
    static const auto table = [] {
        std::array<int8_t, 256> t{};
        t.fill(-1);
        const char* alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        for (int i = 0; i < 64; ++i) t[static_cast<uint8_t>(alphabet[i])] = static_cast<int8_t>(i);
        return t;
    }();
    while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '=')) --e;
    out.clear();
    out.reserve(size_t(e - p) * 3 / 4);
    uint32_t acc = 0;
    int bits = 0;
    for (; p < e; ++p) {
        const int v = table[static_cast<uint8_t>(*p)];
        if (v < 0) return false;
        acc = (acc << 6) | uint32_t(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<uint8_t>((acc >> bits) & 0xFF));
        }
    }
    return true;
}

// The file is indexed once (line offsets, read in blocks) and each chunk's lines are read from disk
// when the chunk is read, as CNTK did: a Base64 file of a whole data set need not fit in memory.
class Base64ImageDeserializer final : public ImageReaderBase {
public:
    explicit Base64ImageDeserializer(const ImageDeserializerConfig& config, int64_t chunk_bytes = 32 << 20)
        : ImageReaderBase(config, "Base64ImageDeserializer('" + config.map_file + "')") {
        fd_.fd = ::open(config.map_file.c_str(), O_RDONLY | O_CLOEXEC);
        CTK_CHECK(fd_.fd >= 0, IOError, "Base64ImageDeserializer: cannot open '", config.map_file,
                  "': ", std::strerror(errno));
        index_lines(chunk_bytes);
        CTK_CHECK(!lines_.empty(), IOError, who_, ": the file holds no images");
        // CNTK decided from the first line alone whether lines start with a sequence key.
        const std::string first = read_range(lines_[0].begin, lines_[0].end);
        keyed_ = split_tabs(trim_cr(first)).size() >= 3;
        std::vector<uint8_t> bytes;
        int64_t label = 0;
        parse(0, trim_cr(first), bytes, label);
        init_streams([&bytes] { return bytes; }, describe(0));
    }
    Base64ImageDeserializer(const Base64ImageDeserializer&) = delete;
    Base64ImageDeserializer& operator=(const Base64ImageDeserializer&) = delete;

    int64_t num_chunks() const override { return static_cast<int64_t>(chunk_first_.size()) - 1; }
    int64_t chunk_num_sequences(int64_t chunk) const override {
        CTK_CHECK(chunk >= 0 && chunk < num_chunks(), IndexError, who_, ": chunk ", chunk, " out of range (",
                  num_chunks(), " chunks)");
        return chunk_first_[size_t(chunk) + 1] - chunk_first_[size_t(chunk)];
    }
    int64_t chunk_num_samples(int64_t chunk) const override { return chunk_num_sequences(chunk); }

    std::vector<std::string> sequence_keys(int64_t chunk) const override {
        std::vector<std::string> keys;
        const int64_t first = chunk_first_[size_t(chunk)];
        const std::vector<std::string> lines = chunk_lines(chunk);
        for (size_t i = 0; i < lines.size(); ++i) {
            // Only the key: the base64 text is not split.
            const size_t tab = lines[i].find('\t');
            const bool has_key =
                keyed_ && tab != std::string::npos && lines[i].find('\t', tab + 1) != std::string::npos;
            keys.push_back(has_key ? lines[i].substr(0, tab) : std::to_string(first + int64_t(i)));
        }
        return keys;
    }

    std::vector<std::vector<SequenceData>> read_chunk(int64_t chunk) const override {
        const int64_t first = chunk_first_[size_t(chunk)];
        const std::vector<std::string> lines = chunk_lines(chunk);
        std::vector<std::vector<SequenceData>> out;
        std::vector<uint8_t> bytes;
        for (size_t i = 0; i < lines.size(); ++i) {
            const int64_t l = first + int64_t(i);
            int64_t label = 0;
            if (!parse(l, lines[i], bytes, label)) bytes.clear();
            out.push_back(make_sequence(bytes, label, describe(l)));
        }
        return out;
    }

protected:
    int copy_id(int64_t) const override { return 0; }
    std::string where(int64_t chunk, int64_t index) const override {
        return describe(chunk_first_[size_t(chunk)] + index);
    }

private:
    struct Line {
        uint64_t begin, end;  // byte offsets in the file, the newline excluded
    };

    static std::string trim_cr(std::string s) {
        if (!s.empty() && s.back() == '\r') s.pop_back();
        return s;
    }

    // The line offsets, grouped into chunks of about chunk_bytes.
    void index_lines(int64_t chunk_bytes) {
        // Not zero-filled: pread fills what is read, and a small file touches few pages.
        const size_t block_bytes = size_t(1) << 20;
        const auto block = std::make_unique_for_overwrite<char[]>(block_bytes);
        uint64_t offset = 0, line_begin = 0;
        auto add = [&](uint64_t end) {
            if (lines_.empty() ||
                line_begin - lines_[size_t(chunk_first_.back())].begin >= uint64_t(chunk_bytes))
                chunk_first_.push_back(static_cast<int64_t>(lines_.size()));
            lines_.push_back({line_begin, end});
        };
        for (;;) {
            const ssize_t n = ::pread(fd_.fd, block.get(), block_bytes, static_cast<off_t>(offset));
            CTK_CHECK(n >= 0, IOError, who_, ": cannot read '", config_.map_file,
                      "': ", std::strerror(errno));
            if (n == 0) break;
            for (ssize_t k = 0; k < n; ++k) {
                if (block[size_t(k)] != '\n') continue;
                add(offset + uint64_t(k));
                line_begin = offset + uint64_t(k) + 1;
            }
            offset += uint64_t(n);
        }
        if (line_begin < offset) add(offset);  // a last line without a newline
        chunk_first_.push_back(static_cast<int64_t>(lines_.size()));
    }

    std::string read_range(uint64_t begin, uint64_t end) const {
        std::string out(size_t(end - begin), '\0');
        size_t done = 0;
        while (done < out.size()) {
            const ssize_t n =
                ::pread(fd_.fd, out.data() + done, out.size() - done, static_cast<off_t>(begin + done));
            CTK_CHECK(
                n > 0, IOError, who_, ": cannot read '", config_.map_file, "'",
                n < 0 ? std::string(": ") + std::strerror(errno) : std::string(": the file got shorter"));
            done += size_t(n);
        }
        return out;
    }

    // The lines of a chunk, read from the file in one piece.
    std::vector<std::string> chunk_lines(int64_t chunk) const {
        const int64_t first = chunk_first_[size_t(chunk)], last = chunk_first_[size_t(chunk) + 1];
        const uint64_t base = lines_[size_t(first)].begin;
        const std::string text = read_range(base, lines_[size_t(last - 1)].end);
        std::vector<std::string> out;
        for (int64_t l = first; l < last; ++l)
            out.push_back(trim_cr(text.substr(size_t(lines_[size_t(l)].begin - base),
                                              size_t(lines_[size_t(l)].end - lines_[size_t(l)].begin))));
        return out;
    }

    std::string describe(int64_t l) const {
        return "the image on line " + std::to_string(l + 1) + " of '" + config_.map_file + "'";
    }
    // The line's label and image bytes; false when the base64 is invalid (a format error is thrown).
    bool parse(int64_t l, const std::string& s, std::vector<uint8_t>& bytes, int64_t& label) const {
        std::vector<std::string> fields = split_tabs(s);
        if (keyed_ && fields.size() >= 3) fields.erase(fields.begin());
        CTK_CHECK(fields.size() == 2, IOError, who_, ": line ", l + 1, " of '", config_.map_file,
                  "' must hold ", keyed_ ? "a key, " : "", "a label and the base64 image, tab-separated");
        label = parse_label(fields[0], num_classes_, describe(l));
        return decode_base64(fields[1].data(), fields[1].data() + fields[1].size(), bytes);
    }

    // Closed by its own destructor, so that a file refused by the constructor (no lines, a bad first
    // line) does not leave its descriptor open: a fuzz run of bad files ran out of descriptors.
    struct FileDescriptor {
        int fd = -1;
        FileDescriptor() = default;
        FileDescriptor(const FileDescriptor&) = delete;
        FileDescriptor& operator=(const FileDescriptor&) = delete;
        ~FileDescriptor() {
            if (fd >= 0) ::close(fd);
        }
    } fd_;
    std::vector<Line> lines_;
    std::vector<int64_t> chunk_first_;
    bool keyed_ = false;
};

}  // namespace

DeserializerPtr image_deserializer(const ImageDeserializerConfig& config) {
    return std::make_shared<MapFileImageDeserializer>(config);
}

DeserializerPtr base64_image_deserializer(const ImageDeserializerConfig& config) {
    return std::make_shared<Base64ImageDeserializer>(config);
}

}  // namespace ctk
