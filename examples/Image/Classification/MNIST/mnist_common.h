// What both MNIST examples share: CNTK's create_reader and the command line (example_args.h). The data
// are the CTF files `ctk data mnist` writes from Debian's Fashion-MNIST.
#pragma once

#include <string>

#include "ctk/ctk.h"
#include "example_args.h"

namespace mnist {

using Args = examples::Args;

inline Args parse_args(int argc, char** argv, const char* usage) {
    Args a = examples::parse_args(argc, argv, usage, "data/fashion-mnist");
    if (a.epoch_size <= 0) a.epoch_size = 60000;
    return a;
}

inline std::string data_file(const Args& a, const char* name) {
    return examples::data_file(a, name, "ctk data mnist /usr/share/datasets/fashion-mnist");
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
