// The byte reader of CNTK v1 model files (cntk_v1_file.cpp reads the network's framing with it,
// cntk_v1_payloads.cpp each node type's payload): UTF-16LE strings and markers, little-endian scalars,
// TensorShapes, every read checked against the end of the file.
#pragma once

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "ctk/core/error.h"
#include "formats/cntk_v1_file.h"

namespace ctk::detail::cntk_v1 {

// Sanity bounds that no real model comes near; they keep a corrupt count from driving a huge loop.
inline constexpr size_t kMaxStringUnits = 1 << 16;  // UTF-16 code units in a name or marker
inline constexpr uint32_t kMaxRank = 64;            // TensorShape rank
inline constexpr uint64_t kMaxBoolList = 64;        // sharing / autoPad lists

class ByteReader {
public:
    ByteReader(std::string data, std::string path) : data_(std::move(data)), path_(std::move(path)) {}

    size_t pos() const { return pos_; }
    size_t left() const { return data_.size() - pos_; }
    const std::string& path() const { return path_; }

    [[noreturn]] void fail(const std::string& what, size_t at) const {
        CTK_THROW(IOError, "CNTK v1 model '", path_, "': ", what, " at byte offset ", at);
    }
    [[noreturn]] void fail(const std::string& what) const { fail(what, pos_); }

    void need(uint64_t bytes, const char* what) const {
        if (bytes > left())
            fail(detail::concat("truncated file: ", what, " needs ", bytes, " bytes, ", left(), " left"));
    }
    template <typename T>
    T scalar(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, data_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    uint64_t u64(const char* what) { return scalar<uint64_t>(what); }
    uint32_t u32(const char* what) { return scalar<uint32_t>(what); }
    int32_t i32(const char* what) { return scalar<int32_t>(what); }
    double f64(const char* what) { return scalar<double>(what); }
    float f32(const char* what) { return scalar<float>(what); }
    bool boolean(const char* what) {
        const auto b = scalar<uint8_t>(what);
        if (b > 1) fail(detail::concat("bad bool ", int(b), " for ", what), pos_ - 1);
        return b != 0;
    }
    // Back to an earlier position (a field CNTK's Load() peeks at and puts back).
    void rewind(size_t at) { pos_ = at < pos_ ? at : pos_; }
    // A NUL-terminated 8-bit string (CNTK's File << std::string).
    std::string string(const char* what) {
        const size_t start = pos_;
        std::string out;
        for (;;) {
            if (left() < 1) fail(detail::concat("truncated file: unterminated string (", what, ")"), start);
            const char c = data_[pos_++];
            if (c == 0) break;
            if (out.size() >= kMaxStringUnits)
                fail(detail::concat("string longer than ", kMaxStringUnits, " bytes (", what, ")"), start);
            out.push_back(c);
        }
        return out;
    }
    const char* bytes(uint64_t n, const char* what) {
        need(n, what);
        const char* p = data_.data() + pos_;
        pos_ += n;
        return p;
    }

    // A NUL-terminated UTF-16LE string (CNTK's File << std::wstring), as UTF-8.
    std::string wstring(const char* what) {
        const size_t start = pos_;
        std::u16string units;
        for (;;) {
            if (left() < 2) fail(detail::concat("truncated file: unterminated string (", what, ")"), start);
            uint16_t c;
            std::memcpy(&c, data_.data() + pos_, 2);
            pos_ += 2;
            if (c == 0) break;
            if (units.size() >= kMaxStringUnits)
                fail(detail::concat("string longer than ", kMaxStringUnits, " characters (", what, ")"),
                     start);
            units.push_back(static_cast<char16_t>(c));
        }
        return to_utf8(units);
    }
    void marker(const char* expected) {
        const size_t at = pos_;
        const std::string got = wstring("marker");
        if (got != expected) fail(detail::concat("expected marker '", expected, "', found '", got, "'"), at);
    }
    // True (and consumed) when the next string is `expected`; otherwise the position is unchanged.
    bool try_marker(const char* expected) {
        const size_t at = pos_;
        try {
            if (wstring("marker") == expected) return true;
        } catch (const IOError&) {
        }
        pos_ = at;
        return false;
    }

    // TensorShape::Load: uint32 rank, then uint32 dims. With `accept_legacy`, a zero second word means
    // the old size_t W, H, C layout.
    ColDims tensor_shape(const char* what, bool accept_legacy = false) {
        const size_t at = pos_;
        const uint32_t rank = u32(what);
        if (rank > kMaxRank) fail(detail::concat("tensor rank ", rank, " too large (", what, ")"), at);
        if (rank == 0) return {};
        const uint32_t dim0 = u32(what);
        if (accept_legacy && dim0 == 0) {
            ColDims d(3);
            d[1] = rank;
            d[2] = checked_dim(u64(what), what);
            d[0] = checked_dim(u64(what), what);
            return d;
        }
        need(uint64_t(rank - 1) * 4, what);
        ColDims d{dim0};
        for (uint32_t i = 1; i < rank; ++i) d.push_back(u32(what));
        return d;
    }
    std::vector<bool> bool_list(const char* what) {
        const size_t at = pos_;
        const uint64_t n = u64(what);
        if (n > kMaxBoolList) fail(detail::concat("list of ", n, " flags too long (", what, ")"), at);
        need(n, what);
        std::vector<bool> v;
        for (uint64_t i = 0; i < n; ++i) v.push_back(boolean(what));
        return v;
    }

private:
    int64_t checked_dim(uint64_t d, const char* what) {
        if (d > std::numeric_limits<uint32_t>::max())
            fail(detail::concat("dimension ", d, " too large (", what, ")"));
        return static_cast<int64_t>(d);
    }
    static void append_utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    // Windows wrote wchar_t as UTF-16; a lone surrogate becomes U+FFFD, the replacement character (as
    // its own code point it would be bytes that are not UTF-8, which Python refuses as a name).
    static std::string to_utf8(const std::u16string& s) {
        std::string out;
        for (size_t i = 0; i < s.size(); ++i) {
            uint32_t c = s[i];
            if (c >= 0xD800 && c < 0xDC00 && i + 1 < s.size() && s[i + 1] >= 0xDC00 && s[i + 1] < 0xE000) {
                c = 0x10000 + ((c - 0xD800) << 10) + (s[i + 1] - 0xDC00);
                ++i;
            } else if (c >= 0xD800 && c < 0xE000) {
                c = 0xFFFD;
            }
            append_utf8(out, c);
        }
        return out;
    }

    std::string data_;
    std::string path_;
    size_t pos_ = 0;
};

// Reads node n's payload (the fields its Load() reads in a file of `version`) into n. NotImplementedError
// for a node type whose layout ctk does not know: the stream cannot be walked past it.
void read_payload(ByteReader& r, Node& n, uint64_t version);

}  // namespace ctk::detail::cntk_v1
