// CNTK Text Format deserializer (cntk-anatomy.md §4; CNTK's CNTKTextFormatReader). Construction indexes
// the file in one pass (sequence boundaries and byte offsets, grouped into chunks of about
// chunk_size_bytes); read_chunk parses one chunk on demand and may run on any thread.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string_view>
#include <unordered_map>

#include "ctk/core/error.h"
#include "ctk/io.h"
#include "io/io_common.h"

namespace ctk {
namespace {

struct CtfSequence {
    uint64_t key = 0;        // the sequence id, or the sequence's ordinal in a file without ids
    int64_t offset = 0;      // from the start of its chunk
    int64_t size = 0;        // bytes, through the newline of its last line
    int64_t first_line = 0;  // 1-based
    int64_t num_lines = 0;   // lines holding data
};

struct CtfChunk {
    int64_t offset = 0;  // in the file
    int64_t size = 0;
    int64_t num_samples = 0;
    std::vector<CtfSequence> sequences;
};

bool is_blank(char c) {
    return c == ' ' || c == '\t';
}
bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// True when the line holds more than blanks, an optional sequence id and comments: some '|' that is not
// the start of a comment ("|#"), or a character outside any input.
bool line_has_data(const char* p, const char* e) {
    while (p < e && is_blank(*p)) ++p;
    while (p < e && is_digit(*p)) ++p;
    while (p < e && is_blank(*p)) ++p;
    if (p == e) return false;
    if (*p != '|' || p + 1 == e || p[1] != '#') return true;
    for (p += 2; p < e; ++p)
        if (*p == '|' && (p + 1 == e || p[1] != '#')) return true;
    return false;
}

class CtfDeserializer final : public Deserializer {
public:
    CtfDeserializer(std::string path, const std::vector<StreamDef>& defs, int64_t chunk_size_bytes)
        : path_(std::move(path)), chunk_size_(chunk_size_bytes) {
        CTK_CHECK(chunk_size_ > 0, ValueError, "ctf_deserializer('", path_, "'): chunk_size_bytes is ",
                  chunk_size_, "; it must be positive");
        defs_ = detail::normalize_stream_defs(defs, "ctf_deserializer");
        for (size_t i = 0; i < defs_.size(); ++i) {
            infos_.push_back(detail::make_stream_info(defs_[i], static_cast<int>(i)));
            int64_t dim = 1;
            for (int64_t d : defs_[i].shape) dim *= d;
            dims_.push_back(dim);
        }
        build_index();
    }

    const std::vector<StreamInformation>& streams() const override { return infos_; }
    int64_t num_chunks() const override { return static_cast<int64_t>(chunks_.size()); }
    int64_t chunk_num_sequences(int64_t chunk) const override {
        return static_cast<int64_t>(at(chunk).sequences.size());
    }
    int64_t chunk_num_samples(int64_t chunk) const override { return at(chunk).num_samples; }
    std::string description() const override { return "CTF file '" + path_ + "'"; }
    std::vector<std::string> sequence_keys(int64_t chunk) const override {
        std::vector<std::string> keys;
        for (const CtfSequence& s : at(chunk).sequences) keys.push_back(std::to_string(s.key));
        return keys;
    }

    std::vector<std::vector<SequenceData>> read_chunk(int64_t chunk) const override {
        const CtfChunk& c = at(chunk);
        std::string bytes(static_cast<size_t>(c.size), '\0');
        std::FILE* f = std::fopen(path_.c_str(), "rb");
        CTK_CHECK(f, IOError, "cannot open '", path_, "': ", std::strerror(errno));
        const bool ok = std::fseek(f, static_cast<long>(c.offset), SEEK_SET) == 0 &&
                        std::fread(bytes.data(), 1, bytes.size(), f) == bytes.size();
        std::fclose(f);
        CTK_CHECK(ok, IOError, "cannot read bytes ", c.offset, "..", c.offset + c.size, " of '", path_,
                  "' (was the file changed after it was indexed?)");
        std::vector<std::vector<SequenceData>> out;
        out.reserve(c.sequences.size());
        for (const CtfSequence& s : c.sequences)
            out.push_back(
                parse_sequence(bytes.data() + s.offset, bytes.data() + s.offset + s.size, s.first_line));
        return out;
    }

private:
    std::string path_;
    int64_t chunk_size_;
    std::vector<StreamDef> defs_;
    std::vector<StreamInformation> infos_;
    std::vector<int64_t> dims_;
    std::vector<CtfChunk> chunks_;

    const CtfChunk& at(int64_t chunk) const {
        CTK_CHECK(chunk >= 0 && chunk < num_chunks(), IndexError, description(), ": chunk ", chunk,
                  " out of range (", num_chunks(), " chunks)");
        return chunks_[static_cast<size_t>(chunk)];
    }

    [[noreturn]] void fail(int64_t line, int64_t column, const std::string& message) const {
        CTK_THROW(IOError, path_, ":", line, ":", column, ": ", message);
    }

    void add_sequence(int64_t begin, int64_t end, int64_t first_line, int64_t num_lines, uint64_t key) {
        if (chunks_.empty() || (chunks_.back().size > 0 && end - chunks_.back().offset > chunk_size_)) {
            chunks_.emplace_back();
            chunks_.back().offset = begin;
        }
        CtfChunk& c = chunks_.back();
        c.sequences.push_back({key, begin - c.offset, end - begin, first_line, num_lines});
        c.size = end - c.offset;
        c.num_samples += num_lines;
    }

    // One pass over the file: finds each data line, its sequence id (if the file has ids) and offsets.
    void build_index() {
        std::FILE* f = std::fopen(path_.c_str(), "rb");
        CTK_CHECK(f, IOError, "cannot open CTF file '", path_, "': ", std::strerror(errno));
        // 4 MiB, or the file and its last byte when smaller: opening a small file zero-fills no megabytes.
        std::error_code size_error;
        const uintmax_t file_bytes = std::filesystem::file_size(path_, size_error);
        const size_t capacity = size_t(4) << 20;
        std::vector<char> buf(size_error ? capacity : std::min<size_t>(capacity, size_t(file_bytes) + 1));
        size_t begin = 0, have = 0;
        int64_t buf_offset = 0;  // file offset of buf[0]
        bool eof = false;
        int64_t line_no = 0;
        int mode = -1;  // -1 undecided, 0 one sequence per line, 1 sequence ids
        // The open sequence: [seq_begin, seq_end) in the file.
        bool open = false;
        uint64_t seq_id = 0, ordinal = 0;
        int64_t seq_begin = 0, seq_end = 0, seq_line = 0, seq_lines = 0;
        std::unordered_map<uint64_t, int64_t> id_first_line;
        auto close = [&] {
            if (open) add_sequence(seq_begin, seq_end, seq_line, seq_lines, seq_id);
            open = false;
        };
        try {
            for (;;) {
                char* nl = static_cast<char*>(std::memchr(buf.data() + begin, '\n', have - begin));
                if (!nl && !eof) {
                    std::memmove(buf.data(), buf.data() + begin, have - begin);
                    buf_offset += static_cast<int64_t>(begin);
                    have -= begin;
                    begin = 0;
                    if (have == buf.size()) buf.resize(buf.size() * 2);  // a line longer than the buffer
                    const size_t n = std::fread(buf.data() + have, 1, buf.size() - have, f);
                    CTK_CHECK(n > 0 || !std::ferror(f), IOError, "cannot read '", path_, "'");
                    if (n == 0) eof = true;
                    have += n;
                    continue;
                }
                if (!nl && begin == have) break;
                const char* p = buf.data() + begin;
                const char* e = nl ? nl : buf.data() + have;
                const int64_t line_start = buf_offset + static_cast<int64_t>(begin);
                const int64_t line_end = buf_offset + (e - buf.data()) + (nl ? 1 : 0);
                begin = static_cast<size_t>(e - buf.data()) + (nl ? 1 : 0);
                ++line_no;
                int64_t skip = 0;
                if (line_no == 1) {
                    const auto* u = reinterpret_cast<const unsigned char*>(p);
                    if (e - p >= 2 && ((u[0] == 0xFF && u[1] == 0xFE) || (u[0] == 0xFE && u[1] == 0xFF)))
                        fail(1, 1, "the file is UTF-16 encoded; CTF files must be ASCII or UTF-8");
                    if (e - p >= 3 && u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF) skip = 3;  // UTF-8 BOM
                }
                p += skip;
                const char* content_end = (e > p && e[-1] == '\r') ? e - 1 : e;
                if (!line_has_data(p, content_end)) continue;
                const char* q = p;
                while (q < content_end && is_blank(*q)) ++q;
                const bool has_id = q < content_end && is_digit(*q);
                if (mode < 0) mode = has_id ? 1 : 0;
                if (mode == 0) {
                    add_sequence(line_start + skip, line_end, line_no, 1, ordinal++);
                    continue;
                }
                if (has_id) {
                    const char* id_begin = q;
                    uint64_t id = 0;
                    for (; q < content_end && is_digit(*q); ++q) {
                        if (id > (UINT64_MAX - 9) / 10)
                            fail(line_no, id_begin - p + 1, "sequence id is too large");
                        id = id * 10 + uint64_t(*q - '0');
                    }
                    if (!open || id != seq_id) {
                        close();
                        auto [it, fresh] = id_first_line.emplace(id, line_no);
                        if (!fresh)
                            fail(line_no, id_begin - p + 1,
                                 detail::concat("sequence id ", id,
                                                " was already used by the sequence at line ", it->second,
                                                "; the lines of a sequence must be consecutive"));
                        open = true;
                        seq_id = id;
                        seq_begin = line_start + skip;
                        seq_line = line_no;
                        seq_lines = 0;
                    }
                }
                // A line without an id continues the open sequence (as CNTK's indexer does).
                ++seq_lines;
                seq_end = line_end;
            }
            close();
        } catch (...) {
            std::fclose(f);
            throw;
        }
        std::fclose(f);
        CTK_CHECK(!chunks_.empty(), IOError, "CTF file '", path_, "' holds no data lines");
    }

    // Parses a number of CNTK's grammar ([+-]digits[.digits][(e|E)[+-]digits]; a leading '.' is also
    // accepted) ending at a blank, '|' or the end of the line.
    bool parse_float(const char*& q, const char* e, float& out, const char* line_start, int64_t line) const {
        const char* s = q;
        const char* r = q;
        if (r < e && (*r == '+' || *r == '-')) ++r;
        const char* int_begin = r;
        while (r < e && is_digit(*r)) ++r;
        const int64_t int_digits = r - int_begin;
        bool simple = true;
        int64_t frac_digits = 0;
        if (r < e && *r == '.') {
            simple = false;
            const char* f = ++r;
            while (r < e && is_digit(*r)) ++r;
            frac_digits = r - f;
        }
        if (int_digits + frac_digits == 0) return false;
        if (r < e && (*r == 'e' || *r == 'E')) {
            simple = false;
            ++r;
            if (r < e && (*r == '+' || *r == '-')) ++r;
            const char* x = r;
            while (r < e && is_digit(*r)) ++r;
            if (r == x) return false;
        }
        if (r < e && !is_blank(*r) && *r != '|') return false;
        if (simple && int_digits <= 9) {
            int64_t v = 0;
            for (const char* d = int_begin; d < r; ++d) v = v * 10 + (*d - '0');
            out = static_cast<float>(*s == '-' ? -v : v);
        } else {
            const char* from = *s == '+' ? s + 1 : s;
            auto res = std::from_chars(from, r, out, std::chars_format::general);
            if (res.ec == std::errc::result_out_of_range) {
                // Underflow rounds to zero or a subnormal; overflow is an error.
                const double v = std::strtod(std::string(from, r).c_str(), nullptr);
                if (std::isinf(v) || std::fabs(v) > 3.5e38)
                    fail(line, s - line_start + 1,
                         "number '" + std::string(s, r) + "' is outside the float32 range");
                out = static_cast<float>(v);
            } else if (res.ec != std::errc() || res.ptr != r) {
                return false;
            }
        }
        q = r;
        return true;
    }

    struct StreamBuffer {
        std::vector<float> values;  // dense streams: the samples' values
        // Sparse streams: every index:value entry in order, and each sample's end in that list.
        std::vector<int64_t> sparse_index;
        std::vector<float> sparse_value;
        std::vector<size_t> sample_end;
        int64_t count = 0;
        int64_t last_line = -1;
    };

    void parse_line(const char* p, const char* e, int64_t line, std::vector<StreamBuffer>& bufs,
                    std::vector<std::string>& unknown) const {
        const char* q = p;
        auto col = [&](const char* at) { return static_cast<int64_t>(at - p) + 1; };
        while (q < e && is_blank(*q)) ++q;
        if (q < e && is_digit(*q)) {
            while (q < e && is_digit(*q)) ++q;
            if (q < e && !is_blank(*q) && *q != '|')
                fail(line, col(q), detail::concat("unexpected character '", *q, "' after the sequence id"));
        }
        for (;;) {
            while (q < e && is_blank(*q)) ++q;
            if (q == e) return;
            if (*q != '|')
                fail(line, col(q),
                     detail::concat("unexpected character '", *q, "'; expected '|' and an input name"));
            const char* bar = q++;
            if (q < e && *q == '#') {  // comment, to the next '|' that is not an escaped "|#"
                for (++q;;) {
                    const char* r = static_cast<const char*>(std::memchr(q, '|', static_cast<size_t>(e - q)));
                    if (!r) {
                        q = e;
                        break;
                    }
                    if (r + 1 < e && r[1] == '#') {
                        q = r + 2;
                        continue;
                    }
                    q = r;
                    break;
                }
                continue;
            }
            const char* name_begin = q;
            while (q < e && !is_blank(*q) && *q != '|') ++q;
            if (q == name_begin) fail(line, col(bar), "'|' must be followed by an input name");
            const std::string_view name(name_begin, static_cast<size_t>(q - name_begin));
            size_t s = 0;
            while (s < defs_.size() && defs_[s].field != name) ++s;
            if (s == defs_.size()) {
                // CNTK skips inputs the reader was not configured with; remember them for the error
                // raised if a configured input turns out to be missing (usually a misspelt name).
                if (std::find(unknown.begin(), unknown.end(), name) == unknown.end() && unknown.size() < 8)
                    unknown.emplace_back(name);
                const char* r = static_cast<const char*>(std::memchr(q, '|', static_cast<size_t>(e - q)));
                q = r ? r : e;
                continue;
            }
            StreamBuffer& b = bufs[s];
            if (b.last_line == line)
                fail(line, col(bar), detail::concat("input '", name, "' appears twice on one line"));
            b.last_line = line;
            const int64_t dim = dims_[s];
            if (!defs_[s].is_sparse) {
                int64_t n = 0;
                for (;;) {
                    while (q < e && is_blank(*q)) ++q;
                    if (q == e || *q == '|') break;
                    float v = 0;
                    const char* at = q;
                    if (!parse_float(q, e, v, p, line)) {
                        const char* r = at;
                        while (r < e && !is_blank(*r) && *r != '|') ++r;
                        fail(line, col(at),
                             detail::concat("malformed number '", std::string_view(at, size_t(r - at)),
                                            "' in input '", name, "'"));
                    }
                    if (++n > dim)
                        fail(line, col(at),
                             detail::concat("input '", name, "' has more than ", dim, " values (its dim is ",
                                            dim, ")"));
                    b.values.push_back(v);
                }
                if (n != dim)
                    fail(line, col(bar),
                         detail::concat("input '", name, "' has ", n, " values; its dim is ", dim));
            } else {
                for (;;) {
                    while (q < e && is_blank(*q)) ++q;
                    if (q == e || *q == '|') break;
                    const char* at = q;
                    uint64_t index = 0;
                    bool overflow = false;
                    while (q < e && is_digit(*q)) {
                        overflow |= index > (UINT64_MAX - 9) / 10;
                        index = index * 10 + uint64_t(*q++ - '0');
                    }
                    if (q == at || q == e || *q != ':')
                        fail(line, col(at),
                             detail::concat("malformed sparse entry in input '", name,
                                            "'; expected index:value"));
                    if (overflow || index >= uint64_t(dim))
                        fail(line, col(at),
                             detail::concat("sparse index ", std::string_view(at, size_t(q - at)),
                                            " of input '", name, "' is out of range; its dim is ", dim));
                    ++q;
                    const char* vat = q;
                    float v = 0;
                    if (!parse_float(q, e, v, p, line)) {
                        const char* r = vat;
                        while (r < e && !is_blank(*r) && *r != '|') ++r;
                        fail(line, col(vat),
                             detail::concat("malformed number '", std::string_view(vat, size_t(r - vat)),
                                            "' in input '", name, "'"));
                    }
                    b.sparse_index.push_back(static_cast<int64_t>(index));
                    b.sparse_value.push_back(v);
                }
                b.sample_end.push_back(b.sparse_index.size());
            }
            ++b.count;
        }
    }

    std::vector<SequenceData> parse_sequence(const char* begin, const char* end, int64_t first_line) const {
        std::vector<StreamBuffer> bufs(defs_.size());
        std::vector<std::string> unknown;
        int64_t line = first_line;
        for (const char* p = begin; p < end; ++line) {
            const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<size_t>(end - p)));
            const char* e = nl ? nl : end;
            const char* content_end = (e > p && e[-1] == '\r') ? e - 1 : e;
            parse_line(p, content_end, line, bufs, unknown);
            p = nl ? nl + 1 : end;
        }
        std::vector<SequenceData> out(defs_.size());
        for (size_t s = 0; s < defs_.size(); ++s) {
            if (bufs[s].count == 0) {
                std::string hint;
                for (const std::string& u : unknown) hint += (hint.empty() ? "" : ", ") + ("'" + u + "'");
                std::string declared;
                for (const StreamDef& d : defs_) declared += (declared.empty() ? "'" : ", '") + d.field + "'";
                fail(first_line, 1,
                     detail::concat(
                         "the sequence starting here has no input '", defs_[s].field,
                         "' (declared inputs: ", declared, ")",
                         hint.empty() ? "" : "; the file has inputs the reader was not given: ", hint));
            }
            if (defs_[s].max_sequence_length > 0 && bufs[s].count > defs_[s].max_sequence_length)
                fail(first_line, 1,
                     detail::concat("the sequence starting here has ", bufs[s].count, " samples of input '",
                                    defs_[s].field, "', more than its max_sequence_length of ",
                                    defs_[s].max_sequence_length));
            Dims dims{bufs[s].count};
            dims.insert(dims.end(), defs_[s].shape.begin(), defs_[s].shape.end());
            if (defs_[s].is_sparse)
                out[s] = sparse_sequence(bufs[s], Shape(dims));
            else
                out[s].data = Tensor::from_vector(bufs[s].values, Shape(dims));
        }
        return out;
    }

    // A sparse stream's sequence: one-hot indices when every sample has at most one entry, of value 1
    // (or 0: an all-zero sample, index -1), else dense rows (a repeated index keeps its last value).
    static SequenceData sparse_sequence(const StreamBuffer& b, const Shape& shape) {
        bool one_hot = shape.rank() == 2;
        for (size_t i = 0, begin = 0; one_hot && i < b.sample_end.size(); begin = b.sample_end[i++])
            one_hot =
                b.sample_end[i] - begin <= 1 &&
                (b.sample_end[i] == begin || b.sparse_value[begin] == 1.0f || b.sparse_value[begin] == 0.0f);
        SequenceData out;
        if (one_hot) {
            out.one_hot_indices = Tensor::empty(Shape{shape[0]}, DataType::i64);
            int64_t* p = out.one_hot_indices.data<int64_t>();
            for (size_t i = 0, begin = 0; i < b.sample_end.size(); begin = b.sample_end[i++])
                p[i] = b.sample_end[i] > begin && b.sparse_value[begin] == 1.0f ? b.sparse_index[begin] : -1;
            return out;
        }
        const int64_t dim = shape.numel() / std::max<int64_t>(shape[0], 1);
        std::vector<float> values(static_cast<size_t>(shape.numel()), 0.0f);
        for (size_t i = 0, begin = 0; i < b.sample_end.size(); begin = b.sample_end[i++])
            for (size_t k = begin; k < b.sample_end[i]; ++k)
                values[i * static_cast<size_t>(dim) + static_cast<size_t>(b.sparse_index[k])] =
                    b.sparse_value[k];
        out.data = Tensor::from_vector(values, shape);
        return out;
    }
};

}  // namespace

DeserializerPtr ctf_deserializer(const std::string& path, const std::vector<StreamDef>& streams,
                                 int64_t chunk_size_bytes) {
    return std::make_shared<CtfDeserializer>(path, streams, chunk_size_bytes);
}

}  // namespace ctk
