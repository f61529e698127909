// Helpers for the io tests: a temporary directory removed at the end of the test, file writers (plain
// and gzip), IDX encoders, and a substring matcher for error messages.
#pragma once

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ctk::test {

class TempDir {
public:
    TempDir() {
        std::string tmpl = (std::filesystem::temp_directory_path() / "ctk_io_test_XXXXXX").string();
        path_ = mkdtemp(tmpl.data());
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    std::string file(const std::string& name) const { return path_ + "/" + name; }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

inline void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline void write_gz(const std::string& path, const std::string& bytes) {
    gzFile f = gzopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
    gzclose(f);
}

inline std::string read_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

inline void put_be32(std::string& s, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) s += static_cast<char>((v >> shift) & 0xFF);
}

inline std::string idx_images(uint32_t count, uint32_t rows, uint32_t cols,
                              const std::vector<uint8_t>& pixels) {
    std::string s;
    put_be32(s, 0x00000803u);
    put_be32(s, count);
    put_be32(s, rows);
    put_be32(s, cols);
    s.append(pixels.begin(), pixels.end());
    return s;
}

inline std::string idx_labels(const std::vector<uint8_t>& labels) {
    std::string s;
    put_be32(s, 0x00000801u);
    put_be32(s, static_cast<uint32_t>(labels.size()));
    s.append(labels.begin(), labels.end());
    return s;
}

// Runs `f` and returns the message of the exception of type E it throws (fails the test otherwise).
template <typename E, typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "threw the wrong exception type: " << e.what();
        return "";
    }
    ADD_FAILURE() << "did not throw";
    return "";
}

// Every sequence of a deserializer, chunk by chunk (checking each chunk's count).
inline std::vector<std::vector<SequenceData>> read_all(const Deserializer& d) {
    std::vector<std::vector<SequenceData>> all;
    for (int64_t c = 0; c < d.num_chunks(); ++c) {
        auto part = d.read_chunk(c);
        EXPECT_EQ(static_cast<int64_t>(part.size()), d.chunk_num_sequences(c));
        all.insert(all.end(), part.begin(), part.end());
    }
    return all;
}

}  // namespace ctk::test
