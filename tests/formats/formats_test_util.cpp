#include "formats/formats_test_util.h"

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <unistd.h>

namespace ctk::test {

// The repository carries the files (tests/data/cntk): one missing is a broken checkout, not a skip.
std::string cntk_testdata(const std::string& relative) {
    const std::string path = std::string(CTK_CNTK_TESTDATA) + "/" + relative;
    if (!std::filesystem::exists(path)) throw std::runtime_error("test data " + path + " is missing");
    return path;
}

std::string read_file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read " + path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_file_bytes(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!out) throw std::runtime_error("cannot write " + path);
}

namespace {
// The folders temp_dir made, removed when the test program exits (each test runs as its own process).
struct TempDirs {
    std::mutex mutex;
    std::vector<std::filesystem::path> made;
    ~TempDirs() {
        for (const auto& d : made) {
            std::error_code ec;
            std::filesystem::remove_all(d, ec);
        }
    }
};
TempDirs& temp_dirs() {
    static TempDirs dirs;
    return dirs;
}
}  // namespace

std::string temp_dir(const std::string& tag) {
    TempDirs& dirs = temp_dirs();
    std::lock_guard<std::mutex> lock(dirs.mutex);
    auto dir = std::filesystem::temp_directory_path() /
               ("ctk_" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(dirs.made.size()));
    std::filesystem::create_directories(dir);
    dirs.made.push_back(dir);
    return dir.string();
}

}  // namespace ctk::test
