// The `ctk` command. Each job is a subcommand with its own options; `info` is the first, and `train`,
// `eval`, `convert` and `data` join the table below as they land.
#include <chrono>
#include <cstdio>
#include <exception>
#include <string_view>

#include "ctk/build_info.h"
#include "ctk/device_info.h"
#include "ctk/io.h"

namespace {

struct Subcommand {
    const char* name;
    const char* summary;
    int (*run)(int argc, char** argv);  // argv holds the arguments after the name
};

int run_info(int argc, char** argv);
int run_data(int argc, char** argv);

constexpr Subcommand kSubcommands[] = {
    {"info", "the build banner, the GPUs, and whether this build runs on them (and the fix if not)",
     run_info},
    {"data", "prepare data sets (`ctk data mnist IN_DIR OUT_DIR`: IDX files to CNTK text format)", run_data},
};

void print_usage(std::FILE* out) {
    std::fputs("usage: ctk <command> [arguments]\n       ctk --help | --version\n\ncommands:\n", out);
    for (const Subcommand& c : kSubcommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
    std::fputs("\n`ctk <command> --help` describes a command.\n", out);
}

bool is_help(std::string_view arg) {
    return arg == "-h" || arg == "--help";
}

int run_info(int argc, char** argv) {
    if (argc == 1 && is_help(argv[0])) {
        std::puts(
            "usage: ctk info\n\nPrints CNTK's build banner, the CUDA versions and architectures in this "
            "build,\n"
            "each GPU with a compatibility verdict, and the fix when a GPU cannot run ctk.\n"
            "Exits 0 whether or not a GPU is usable.");
        return 0;
    }
    if (argc > 0) {
        std::fprintf(stderr, "ctk info: unexpected argument '%s'\nusage: ctk info\n", argv[0]);
        return 2;
    }
    std::fputs(ctk::info_report().c_str(), stdout);
    return 0;
}

constexpr const char* kDataUsage =
    "usage: ctk data mnist IN_DIR OUT_DIR\n\n"
    "Converts the MNIST (or Fashion-MNIST) IDX files in IN_DIR -- train-images-idx3-ubyte,\n"
    "train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each plain or .gz --\n"
    "into CNTK's text format: OUT_DIR/Train-28x28_cntk_text.txt and OUT_DIR/Test-28x28_cntk_text.txt,\n"
    "lines \"|labels 0 0 0 1 0 0 0 0 0 0 |features 0 0 ... 255\" as CNTK's install_mnist.py writes them.\n";

int run_data(int argc, char** argv) {
    if (argc >= 1 && is_help(argv[0])) {
        std::fputs(kDataUsage, stdout);
        return 0;
    }
    if (argc != 3 || std::string_view(argv[0]) != "mnist") {
        std::fputs(argc >= 1 && std::string_view(argv[0]) != "mnist" ? "ctk data: unknown data set\n"
                                                                     : "ctk data: wrong arguments\n",
                   stderr);
        std::fputs(kDataUsage, stderr);
        return 2;
    }
    const auto start = std::chrono::steady_clock::now();
    const auto [train, test] = ctk::convert_mnist_to_ctf(argv[1], argv[2]);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("Wrote %lld training and %lld test samples to %s (%.1f s)\n", static_cast<long long>(train),
                static_cast<long long>(test), argv[2], seconds);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    const std::string_view command = argv[1];
    if (is_help(command)) {
        print_usage(stdout);
        return 0;
    }
    if (command == "--version") {
        const ctk::BuildInfo info = ctk::build_info();
        std::printf("ctk %s (%s, %s, %s)\n", info.version.c_str(), info.git_sha.c_str(),
                    info.build_type.c_str(), info.build_target.c_str());
        return 0;
    }
    for (const Subcommand& c : kSubcommands) {
        if (command != c.name) continue;
        try {
            return c.run(argc - 2, argv + 2);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "ctk %s: error: %s\n", c.name, e.what());
            return 1;
        }
    }
    std::fprintf(stderr, "ctk: unknown command '%s'\n\n", argv[1]);
    print_usage(stderr);
    return 2;
}
