// The command line the C++ examples share: --data DIR, --epochs N, --epoch-size N, --seed N, --log FILE,
// and options of an example's own (--name VALUE), kept by name. $CTK_DATA_DIR overrides the default data
// folder; --seed N also fixes ctk's random seed (initialisation, dropout) at once.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include "ctk/ctk.h"

namespace examples {

struct Args {
    std::string data_dir;
    int64_t epochs = 0;      // 0: the example's own default
    int64_t epoch_size = 0;  // samples per epoch; 0: the example's own default
    int64_t seed = -1;       // >= 0: set_fixed_random_seed and the readers' randomization seed
    std::string log_file;
    std::map<std::string, std::string> options;  // the example's own, by name without "--"
};

inline Args parse_args(int argc, char** argv, const char* usage, const std::string& default_data_dir,
                       const std::set<std::string>& own_options = {}) {
    Args a;
    a.data_dir = default_data_dir;
    if (const char* env = std::getenv("CTK_DATA_DIR")) a.data_dir = env;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
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
        } else if (arg.rfind("--", 0) == 0 && own_options.count(arg.substr(2))) {
            a.options[arg.substr(2)] = value();
        } else {
            std::fprintf(stderr, "%s", usage);
            std::exit(arg == "--help" || arg == "-h" ? 0 : 2);
        }
    }
    return a;
}

// `name` in the data folder; when it is missing, says how to make the data and exits.
inline std::string data_file(const Args& a, const char* name, const char* how_to_make) {
    std::string path = (std::filesystem::path(a.data_dir) / name).string();
    if (!std::filesystem::exists(path)) {
        std::fprintf(stderr, "Error: %s does not exist. Write the data first:\n  %s %s\n", path.c_str(),
                     how_to_make, a.data_dir.c_str());
        std::exit(1);
    }
    return path;
}

}  // namespace examples
