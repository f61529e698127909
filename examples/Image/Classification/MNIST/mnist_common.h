// What both MNIST examples share: CNTK's create_reader and the command line (--data DIR, --epochs N,
// --epoch-size N, --seed N, --log FILE). The data are the CTF files `ctk data mnist` writes from Debian's
// Fashion-MNIST.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "ctk/ctk.h"

namespace mnist {

struct Args {
    std::string data_dir = "data/fashion-mnist";
    int64_t epochs = 0;          // 0: the example's own default
    int64_t epoch_size = 60000;  // samples per epoch (smaller for smoke tests)
    int64_t seed = -1;           // >= 0: set_fixed_random_seed and the reader's randomization seed
    std::string log_file;
};

inline Args parse_args(int argc, char** argv, const char* usage) {
    Args a;
    if (const char* env = std::getenv("CTK_DATA_DIR")) a.data_dir = env;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "%s: %s needs a value\n%s", argv[0], arg.c_str(), usage);
                std::exit(2);
            }
            return argv[++i];
        };
        if (arg == "--data") {
            a.data_dir = value();
        } else if (arg == "--epochs") {
            a.epochs = std::atoll(value().c_str());
        } else if (arg == "--epoch-size") {
            a.epoch_size = std::atoll(value().c_str());
        } else if (arg == "--seed") {
            a.seed = std::atoll(value().c_str());
            ctk::set_fixed_random_seed(static_cast<uint64_t>(a.seed));
        } else if (arg == "--log") {
            a.log_file = value();
        } else {
            std::fprintf(stderr, "%s", usage);
            std::exit(arg == "--help" || arg == "-h" ? 0 : 2);
        }
    }
    return a;
}

inline std::string data_file(const Args& a, const char* name) {
    std::string path = (std::filesystem::path(a.data_dir) / name).string();
    if (!std::filesystem::exists(path)) {
        std::fprintf(stderr,
                     "Error: %s does not exist. Write the MNIST CTF files first:\n"
                     "  ctk data mnist /usr/share/datasets/fashion-mnist %s\n",
                     path.c_str(), a.data_dir.c_str());
        std::exit(1);
    }
    return path;
}

// CNTK's create_reader: a CTF source with `features` and `labels`; randomized and endless for training,
// one sweep in file order for testing.
inline std::shared_ptr<ctk::MinibatchSource> create_reader(const std::string& path, bool is_training,
                                                           int64_t input_dim, int64_t num_label_classes,
                                                           int64_t seed = -1) {
    ctk::MinibatchSourceConfig c;
    c.deserializers = {ctk::ctf_deserializer(
        path, {{"features", "features", {input_dim}}, {"labels", "labels", {num_label_classes}}})};
    c.randomize = is_training;
    c.max_sweeps = is_training ? ctk::kInfinitelyRepeat : 1;
    if (seed >= 0) c.randomization_seed = static_cast<uint64_t>(seed);
    return std::make_shared<ctk::MinibatchSource>(c);
}

}  // namespace mnist
