// Shared helpers for the model-file tests.
#pragma once

#include <string>

namespace ctk::test {

// The path of a real CNTK file under tests/data/cntk (std::runtime_error when it is missing).
std::string cntk_testdata(const std::string& relative);
std::string read_file_bytes(const std::string& path);
void write_file_bytes(const std::string& path, const std::string& bytes);
// A fresh temporary directory for one test, removed when the test program exits.
std::string temp_dir(const std::string& tag);

}  // namespace ctk::test
