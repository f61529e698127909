// The fuzz targets (fuzz_targets.h). Readers that take a path get the input through a file of this
// process's own in the temporary folder.
#include "fuzz/fuzz_targets.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "ctk/core/error.h"
#include "ctk/formats/model.h"
#include "ctk/io.h"
#include "ctk/io/cbf.h"
#include "ctk/io/image.h"
#include "formats/cntk_dictionary.h"
#include "io/io_common.h"

namespace ctk::fuzz {
namespace {

// A folder of this process's own, in memory where the system has one (an input is written once per
// execution), removed at exit.
struct ScratchDir {
    std::filesystem::path path;
    ScratchDir() {
        std::error_code ec;
        const auto base = std::filesystem::is_directory("/dev/shm", ec)
                              ? std::filesystem::path("/dev/shm")
                              : std::filesystem::temp_directory_path();
        path = base / ("ctk_fuzz_" + std::to_string(::getpid()));
        std::filesystem::create_directories(path);
    }
    ~ScratchDir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
};

// The input as a file, rewritten for each run.
std::string as_file(const uint8_t* data, size_t size, const char* suffix) {
    static const ScratchDir dir;
    const std::string path = (dir.path / ("input" + std::string(suffix))).string();
    std::ofstream(path, std::ios::binary | std::ios::trunc)
        .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    return path;
}

void read_all(const Deserializer& d) {
    for (int64_t c = 0; c < d.num_chunks(); ++c) (void)d.read_chunk(c);
}

// Each reader as a user calls it; a ctk::Error is the reader refusing the input.
template <typename F>
void refused_is_fine(F&& f) {
    try {
        f();
    } catch (const Error&) {
    }
}

void ctf(const uint8_t* data, size_t size) {
    const std::string path = as_file(data, size, ".ctf");
    refused_is_fine([&] {
        // A dense, a sparse and a shaped stream, with a small chunk size so that chunking is exercised.
        auto d = ctf_deserializer(
            path,
            {StreamDef{"features", "x", {3}, false, false}, StreamDef{"labels", "y", {5}, true, false},
             StreamDef{"image", "img", {2, 2}, false, false}},
            256);
        read_all(*d);
    });
}

void idx_images(const uint8_t* data, size_t size) {
    const std::string path = as_file(data, size, ".idx3");
    refused_is_fine([&] { (void)detail::read_idx_images(path); });
}

void idx_labels(const uint8_t* data, size_t size) {
    const std::string path = as_file(data, size, ".idx1");
    refused_is_fine([&] { (void)detail::read_idx_labels(path, 10); });
}

void cifar(const uint8_t* data, size_t size) {
    const std::string path = as_file(data, size, ".bin");
    refused_is_fine([&] { read_all(*cifar10_binary_deserializer({path})); });
}

// An image file (the bytes) listed in a map file and read through every transform: a corrupt image is
// an error naming it. The crop, colour and scale run on whatever size the decoder returns.
void image(const uint8_t* data, size_t size) {
    const std::string path = as_file(data, size, ".png");
    const std::string map =
        as_file(reinterpret_cast<const uint8_t*>((path + "\t1\n").data()), path.size() + 3, ".map");
    refused_is_fine([&] {
        ImageDeserializerConfig c;
        c.map_file = map;
        c.num_classes = 2;
        ImageCrop crop;
        crop.crop_type = "randomarea";
        crop.area_ratio_min = 0.1;
        crop.area_ratio_max = 1.0;
        crop.aspect_ratio_min = 0.5;
        crop.aspect_ratio_max = 2.0;
        crop.jitter_type = "uniratio";
        ImageColor color;
        color.brightness_radius = color.contrast_radius = color.saturation_radius = 0.5;
        ImageScale scale;
        scale.width = scale.height = 8;
        c.transforms = {crop, color, scale};
        MinibatchSourceConfig sc;
        sc.deserializers = {image_deserializer(c)};
        sc.multithreaded_deserializer = false;
        MinibatchSource(sc).next_minibatch(1);
    });
}

// A Base64ImageDeserializer file: "[key<TAB>]label<TAB>base64" lines.
void base64_image(const uint8_t* data, size_t size) {
    const std::string path = as_file(data, size, ".b64");
    refused_is_fine([&] {
        ImageDeserializerConfig c;
        c.map_file = path;
        c.num_classes = 4;
        ImageScale scale;
        scale.width = scale.height = 4;
        c.transforms = {scale};
        c.max_errors = 2;
        MinibatchSourceConfig sc;
        sc.deserializers = {base64_image_deserializer(c)};
        sc.multithreaded_deserializer = false;
        sc.max_sweeps = 1;
        MinibatchSource source(sc);
        while (!source.next_minibatch(3).empty()) {
        }
    });
}

// A CBF file: every chunk read.
void cbf(const uint8_t* data, size_t size) {
    const std::string path = as_file(data, size, ".cbf");
    refused_is_fine([&] { read_all(*cbf_deserializer(path)); });
}

void cntk_dictionary(const uint8_t* data, size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    refused_is_fine([&] { (void)formats::parse_cntk_dictionary(bytes, "fuzz"); });
}

void cntk_v2(const uint8_t* data, size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    refused_is_fine([&] { (void)deserialize_cntk_v2_model(bytes, "fuzz"); });
}

void cntk_v1(const uint8_t* data, size_t size) {
    const std::string path = as_file(data, size, ".dnn");
    refused_is_fine([&] { (void)load_cntk_v1_model(path); });
}

void onnx(const uint8_t* data, size_t size) {
    const std::string path = as_file(data, size, ".onnx");
    refused_is_fine([&] { (void)load_onnx_model(path); });
}

}  // namespace

const std::vector<Target>& targets() {
    static const std::vector<Target> all = {
        {"ctf", ctf},
        {"idx_images", idx_images},
        {"idx_labels", idx_labels},
        {"cifar", cifar},
        {"image", image},
        {"base64_image", base64_image},
        {"cbf", cbf},
        {"cntk_dictionary", cntk_dictionary},
        {"cntk_v2", cntk_v2},
        {"cntk_v1", cntk_v1},
        {"onnx", onnx},
    };
    return all;
}

const Target& target(const std::string& name) {
    for (const Target& t : targets())
        if (t.name == name) return t;
    throw std::invalid_argument("no fuzz target named '" + name + "'");
}

}  // namespace ctk::fuzz
