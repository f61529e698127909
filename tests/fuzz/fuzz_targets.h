// The fuzz targets: every reader a user can point at a file, each a function of the file's bytes. A
// target returns normally when the reader loads the input or refuses it with a ctk::Error (a clear error
// is the right answer to a broken file); anything else (another exception, a crash, a hang, an
// allocation without bound) is a finding. The same targets run under libFuzzer (fuzz_main.cpp, CMake
// CTK_FUZZ with clang) and as bounded mutation runs in the unit tests (fuzz_test.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ctk::fuzz {

struct Target {
    std::string name;  // also the folder of its seeds (tests/fuzz/seeds/NAME) and its dictionary
    void (*run)(const uint8_t* data, size_t size);
};

// ctf, idx_images, idx_labels, cifar, image, base64_image, cbf, cntk_dictionary (checkpoints), cntk_v2,
// cntk_v1, onnx.
const std::vector<Target>& targets();
const Target& target(const std::string& name);  // throws std::invalid_argument for an unknown name

}  // namespace ctk::fuzz
