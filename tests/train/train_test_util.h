// Helpers of the training tests: a fresh scratch folder and a log file's lines.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace ctk::test {

namespace fs = std::filesystem;

inline std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
}

// An empty folder of this process for the test `name`.
inline fs::path temp_dir(const std::string& name) {
    fs::path d = fs::temp_directory_path() / ("ctk_train_test_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(d);
    fs::create_directories(d);
    return d;
}

}  // namespace ctk::test
