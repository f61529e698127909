// The `ctk` command. Each job is a subcommand with its own options: info, data, convert and eval (train
// joins the table below when it lands).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "ctk/core/build_info.h"
#include "ctk/core/error.h"
#include "ctk/formats/model.h"
#include "ctk/io.h"
#include "ctk/io/cbf.h"
#include "ctk/io/image.h"
#include "ctk/kernels/cpu_info.h"
#include "ctk/kernels/device_info.h"
#include "ctk/train.h"

namespace {

struct Subcommand {
    const char* name;
    const char* summary;
    int (*run)(int argc, char** argv);  // argv holds the arguments after the name
};

int run_info(int argc, char** argv);
int run_data(int argc, char** argv);
int run_convert(int argc, char** argv);
int run_eval(int argc, char** argv);

constexpr Subcommand kSubcommands[] = {
    {"info", "the build banner, the GPUs, and whether this build runs on them (and the fix if not)",
     run_info},
    {"data",
     "prepare data sets in CNTK's layouts (`ctk data mnist|cifar10|images|ctf2cbf|cmudict|fortunes|atis IN "
     "OUT`)",
     run_data},
    {"convert", "convert a model between CNTK v2, CNTK v1 (read only) and ONNX", run_convert},
    {"eval", "evaluate a model on a CNTK text format file and print its outputs", run_eval},
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
            "each GPU with a compatibility verdict, and the fix when a GPU cannot run ctk; then the CPU's "
            "ISA,\n"
            "each math library's kernels, the f32 GEMM route and a verdict with the fix when a library\n"
            "runs below the CPU.\n"
            "Exits 0 whether or not a GPU is usable.");
        return 0;
    }
    if (argc > 0) {
        std::fprintf(stderr, "ctk info: unexpected argument '%s'\nusage: ctk info\n", argv[0]);
        return 2;
    }
    std::fputs(ctk::info_report().c_str(), stdout);
    std::fputs(ctk::cpu_report().c_str(), stdout);
    return 0;
}

constexpr const char* kDataUsage =
    "usage: ctk data mnist IN_DIR OUT_DIR\n"
    "       ctk data cifar10 IN_DIR OUT_DIR [--text-only]\n"
    "       ctk data images IN_DIR OUT_DIR [--layout cifar|imagenet] [--size N] [--limit N]\n"
    "       ctk data ctf2cbf IN.ctf OUT.bin [--header FILE] [--chunk-size BYTES] [--legacy-chunking]\n"
    "       ctk data cmudict [DICT] OUT_DIR\n"
    "       ctk data fortunes [IN_DIR] OUT.txt\n"
    "       ctk data atis OUT_DIR\n\n"
    "mnist: converts the MNIST (or Fashion-MNIST) IDX files in IN_DIR -- train-images-idx3-ubyte,\n"
    "train-labels-idx1-ubyte, t10k-images-idx3-ubyte, t10k-labels-idx1-ubyte, each plain or .gz --\n"
    "into CNTK's text format: OUT_DIR/Train-28x28_cntk_text.txt and OUT_DIR/Test-28x28_cntk_text.txt,\n"
    "lines \"|labels 0 0 0 1 0 0 0 0 0 0 |features 0 0 ... 255\" as CNTK's install_mnist.py writes them.\n"
    "cifar10: converts CIFAR-10's binary batches in IN_DIR -- data_batch_1.bin .. data_batch_5.bin and\n"
    "test_batch.bin, plain or .gz -- into CNTK's layout, as its install_cifar10.py left it:\n"
    "OUT_DIR/Train_cntk_text.txt and Test_cntk_text.txt (3072 pixel values per line, the red, green and\n"
    "blue planes), train/00000.png .. (40x40, padded by 4 pixels of 128) and test/00000.png .. (32x32),\n"
    "train_map.txt, test_map.txt, the regression labels and CIFAR-10_mean.xml; --text-only writes the\n"
    "text files alone.\n"
    "images: an IDX image set in IN_DIR (as for mnist) in CNTK's image layouts: --layout cifar (the\n"
    "default) as cifar10 above (28x28 images padded to 32x32, three equal channels); --layout imagenet:\n"
    "train/<class>/<i>.jpg and val/<class>/<i>.jpg of N x N pixels (--size, default 64), train_map.txt,\n"
    "val_map.txt and ImageNet1K_mean.xml. --limit N keeps the first N images of each split.\n"
    "ctf2cbf: a CNTK text format file as CNTK Binary Format (CBFDeserializer). The streams are found by\n"
    "reading the file, or given by --header, CNTK's ctf2bin.py header file (lines \"name alias\n"
    "dense|sparse dim\"). Chunks hold about --chunk-size bytes (default 32 MB); --legacy-chunking\n"
    "reproduces ctf2bin.py, after whose first chunk every chunk holds one sequence.\n"
    "cmudict: the CMU pronouncing dictionary in the layout of CNTK's CMUDict example\n"
    "(Examples/SequenceToSequence/CMUDict/Data), from Debian's festlex-cmu (DICT, default\n"
    "/usr/share/festival/dicts/cmu/cmudict-0.4.out): OUT_DIR/cmudict-0.7b.mapping,\n"
    "cmudict-0.7b.train-dev-20-21.ctf, cmudict-0.7b.test.ctf (every tenth word) and tiny.ctf.\n"
    "fortunes: the fortune databases (IN_DIR, default /usr/share/games/fortunes, Debian's fortunes) as one\n"
    "text file, a corpus for CNTK's character language model (Examples/Text/CharacterLM).\n"
    "atis: generated flight queries in the layout of CNTK's LanguageUnderstanding example\n"
    "(Examples/LanguageUnderstanding/ATIS; ATIS itself is not in Debian): OUT_DIR/Data/atis.train.ctf,\n"
    "atis.test.ctf and OUT_DIR/BrainScript/query.wl, slots.wl, intent.wl (943 words, 129 slots, 26 "
    "intents).\n";

// CNTK's ctf2bin.py header file: one stream a line, "name alias dense|sparse dim".
std::vector<ctk::CbfStream> read_ctf2bin_header(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw ctk::IOError("cannot open the header file '" + path + "'");
    std::vector<ctk::CbfStream> streams;
    std::string line;
    for (int line_no = 1; std::getline(in, line); ++line_no) {
        std::istringstream words(line);
        ctk::CbfStream s;
        std::string storage;
        if (!(words >> s.name)) continue;  // a blank line
        if (!(words >> s.field >> storage >> s.dim) || (storage != "dense" && storage != "sparse") ||
            s.dim <= 0)
            throw ctk::IOError(path + ":" + std::to_string(line_no) +
                               ": expected \"name alias dense|sparse dim\", got '" + line + "'");
        s.is_sparse = storage == "sparse";
        streams.push_back(s);
    }
    return streams;
}

int run_data(int argc, char** argv) {
    if (argc >= 1 && is_help(argv[0])) {
        std::fputs(kDataUsage, stdout);
        return 0;
    }
    const std::string_view set = argc >= 1 ? std::string_view(argv[0]) : std::string_view();
    const bool known = set == "mnist" || set == "cifar10" || set == "images" || set == "ctf2cbf" ||
                       set == "cmudict" || set == "fortunes" || set == "atis";
    std::vector<std::string> paths;
    std::string layout = "cifar", header;
    int64_t size = 64, limit = 0, chunk_size = 32 << 20;
    bool text_only = false, legacy = false, bad = !known;
    for (int i = 1; i < argc && !bad; ++i) {
        const std::string_view a = argv[i];
        auto count = [&](int64_t& out) {
            char* end = nullptr;
            const long long v = i + 1 < argc ? std::strtoll(argv[++i], &end, 10) : -1;
            bad = bad || !end || *end || v < 0;
            out = v;
        };
        if (set == "images" && a == "--layout" && i + 1 < argc)
            layout = argv[++i];
        else if (set == "images" && a == "--size")
            count(size);
        else if (set == "images" && a == "--limit")
            count(limit);
        else if (set == "cifar10" && a == "--text-only")
            text_only = true;
        else if (set == "ctf2cbf" && a == "--header" && i + 1 < argc)
            header = argv[++i];
        else if (set == "ctf2cbf" && a == "--chunk-size")
            count(chunk_size);
        else if (set == "ctf2cbf" && a == "--legacy-chunking")
            legacy = true;
        else if (!a.empty() && a[0] == '-')
            bad = true;
        else
            paths.emplace_back(a);
    }
    // The text sets' sources default to where Debian installs them.
    if (!bad && paths.size() == 1 && set == "cmudict")
        paths.insert(paths.begin(), "/usr/share/festival/dicts/cmu/cmudict-0.4.out");
    if (!bad && paths.size() == 1 && set == "fortunes")
        paths.insert(paths.begin(), "/usr/share/games/fortunes");
    if (!bad && set == "atis" && paths.size() == 1) {
        const ctk::AtisCounts c = ctk::generate_atis_like(paths[0]);
        std::printf("Wrote %lld training and %lld test sentences to %s\n", static_cast<long long>(c.train),
                    static_cast<long long>(c.test), paths[0].c_str());
        return 0;
    }
    if (bad || paths.size() != 2) {
        std::fputs(!known && argc >= 1 ? "ctk data: unknown data set\n" : "ctk data: wrong arguments\n",
                   stderr);
        std::fputs(kDataUsage, stderr);
        return 2;
    }
    const auto start = std::chrono::steady_clock::now();
    if (set == "ctf2cbf") {
        const std::vector<ctk::CbfStream> streams =
            header.empty() ? ctk::infer_ctf_streams(paths[0]) : read_ctf2bin_header(header);
        const int64_t n = ctk::convert_ctf_to_cbf(paths[0], paths[1], streams, chunk_size, legacy);
        std::string names;
        for (const ctk::CbfStream& s : streams)
            names += (names.empty() ? "" : ", ") + s.name + (s.is_sparse ? " (sparse, " : " (dense, ") +
                     std::to_string(s.dim) + ")";
        std::printf("Wrote %lld sequences of %s to %s (%.1f s)\n", static_cast<long long>(n), names.c_str(),
                    paths[1].c_str(),
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
        return 0;
    }
    const auto seconds_since_start = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    if (set == "cmudict") {
        const ctk::CmudictCounts c = ctk::convert_cmudict_to_ctf(paths[0], paths[1]);
        std::printf("Wrote %lld training and %lld test words to %s (%.1f s)\n",
                    static_cast<long long>(c.train), static_cast<long long>(c.test), paths[1].c_str(),
                    seconds_since_start());
        return 0;
    }
    if (set == "fortunes") {
        const int64_t quotes = ctk::convert_fortunes_to_text(paths[0], paths[1]);
        std::printf("Wrote %lld quotes to %s (%.1f s)\n", static_cast<long long>(quotes), paths[1].c_str(),
                    seconds_since_start());
        return 0;
    }
    std::pair<int64_t, int64_t> counts;
    if (set == "mnist")
        counts = ctk::convert_mnist_to_ctf(paths[0], paths[1]);
    else if (set == "cifar10" && text_only)
        counts = ctk::convert_cifar10_to_ctf(paths[0], paths[1]);
    else if (set == "cifar10")
        counts = ctk::convert_cifar10_to_images(paths[0], paths[1]);
    else
        counts = ctk::convert_idx_to_images(paths[0], paths[1], layout, size, limit);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("Wrote %lld training and %lld test samples to %s (%.1f s)\n",
                static_cast<long long>(counts.first), static_cast<long long>(counts.second), paths[1].c_str(),
                seconds);
    return 0;
}

// ---- convert ----

constexpr const char* kConvertUsage =
    "usage: ctk convert IN OUT [--to CNTKv2|ONNX]\n\n"
    "Reads the model IN (CNTK v2, CNTK v1 or ONNX, recognised from its first bytes) and writes it to OUT\n"
    "as a CNTK v2 model, or as ONNX (opset 17) when OUT ends in .onnx or --to ONNX is given.\n";

std::optional<ctk::ModelFormat> format_from_name(std::string_view name) {
    if (name == "CNTKv2" || name == "cntkv2" || name == "v2") return ctk::ModelFormat::cntk_v2;
    if (name == "ONNX" || name == "onnx") return ctk::ModelFormat::onnx;
    return std::nullopt;
}

std::string model_summary(const ctk::FunctionPtr& model) {
    int64_t values = 0;
    for (const auto& p : model->parameters()) values += ctk::Shape(p.shape()).numel();
    std::string out = std::to_string(model->arguments().size()) + " inputs, " +
                      std::to_string(model->parameters().size()) + " parameter tensors (" +
                      std::to_string(values) + " values), " + std::to_string(model->outputs().size()) +
                      " outputs";
    return out;
}

int run_convert(int argc, char** argv) {
    if (argc >= 1 && is_help(argv[0])) {
        std::fputs(kConvertUsage, stdout);
        return 0;
    }
    std::vector<std::string> paths;
    std::optional<ctk::ModelFormat> to;
    for (int i = 0; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--to" && i + 1 < argc) {
            to = format_from_name(argv[++i]);
            if (!to) {
                std::fprintf(stderr, "ctk convert: unknown output format '%s' (CNTKv2 or ONNX)\n", argv[i]);
                return 2;
            }
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "ctk convert: unknown option '%s'\n%s", argv[i], kConvertUsage);
            return 2;
        } else {
            paths.emplace_back(a);
        }
    }
    if (paths.size() != 2) {
        std::fprintf(stderr, "ctk convert: wrong arguments\n%s", kConvertUsage);
        return 2;
    }
    const std::string &in = paths[0], &out = paths[1];
    if (!to) {
        const bool onnx = out.size() >= 5 && out.compare(out.size() - 5, 5, ".onnx") == 0;
        to = onnx ? ctk::ModelFormat::onnx : ctk::ModelFormat::cntk_v2;
    }
    const ctk::ModelFormat from = ctk::detect_model_format(in);
    ctk::FunctionPtr model = ctk::load_model(in, from);
    ctk::save_model(model, out, *to);
    std::printf("Converted %s (%s) to %s (%s): %s\n", in.c_str(), ctk::model_format_name(from), out.c_str(),
                ctk::model_format_name(*to), model_summary(model).c_str());
    return 0;
}

// ---- eval ----

constexpr const char* kEvalUsage =
    "usage: ctk eval MODEL --ctf FILE [--stream INPUT=FIELD]... [--output NAME] [--minibatch N]\n"
    "                [--max-samples N] [--device cpu|gpu|gpu:N|auto]\n\n"
    "Evaluates MODEL (any format `ctk convert` reads) on the samples of a CNTK text format file and\n"
    "prints one line per sample and output: \"<sample> <output>: v1 v2 ...\" (a sequence's steps as\n"
    "<sample>.<step>). Each model input reads\n"
    "the CTF field of its name unless --stream maps it (by input name) to another field. --output\n"
    "keeps one output (by name or uid); --minibatch sets the samples per evaluation (default 256);\n"
    "--device where it computes (default: CTK_DEFAULT_DEVICE, else the CPU).\n";

int run_eval(int argc, char** argv) {
    if (argc >= 1 && is_help(argv[0])) {
        std::fputs(kEvalUsage, stdout);
        return 0;
    }
    std::string model_path, ctf, output_name;
    std::map<std::string, std::string> fields;
    int64_t minibatch = 256, max_samples = ctk::kInfinitelyRepeat;
    auto number = [&](int& i, const char* opt) {
        if (i + 1 >= argc) throw ctk::ValueError(std::string(opt) + " needs a value");
        char* end = nullptr;
        const long long v = std::strtoll(argv[++i], &end, 10);
        if (!end || *end || v <= 0)
            throw ctk::ValueError(std::string(opt) + ": '" + argv[i] + "' is not a count");
        return static_cast<int64_t>(v);
    };
    for (int i = 0; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--ctf" && i + 1 < argc) {
            ctf = argv[++i];
        } else if (a == "--stream" && i + 1 < argc) {
            const std::string m = argv[++i];
            const auto eq = m.find('=');
            if (eq == std::string::npos || eq == 0 || eq + 1 == m.size()) {
                std::fprintf(stderr, "ctk eval: --stream takes INPUT=FIELD, not '%s'\n", m.c_str());
                return 2;
            }
            fields[m.substr(0, eq)] = m.substr(eq + 1);
        } else if (a == "--output" && i + 1 < argc) {
            output_name = argv[++i];
        } else if (a == "--minibatch") {
            minibatch = number(i, "--minibatch");
        } else if (a == "--max-samples") {
            max_samples = number(i, "--max-samples");
        } else if (a == "--device" && i + 1 < argc) {
            ctk::try_set_default_device(ctk::parse_device(argv[++i], "--device"));
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "ctk eval: unknown option '%s'\n%s", argv[i], kEvalUsage);
            return 2;
        } else if (model_path.empty()) {
            model_path = a;
        } else {
            std::fprintf(stderr, "ctk eval: unexpected argument '%s'\n%s", argv[i], kEvalUsage);
            return 2;
        }
    }
    if (model_path.empty() || ctf.empty()) {
        std::fprintf(stderr, "ctk eval: a MODEL and --ctf FILE are needed\n%s", kEvalUsage);
        return 2;
    }
    ctk::FunctionPtr model = ctk::load_model(model_path);
    std::vector<ctk::Variable> outputs;
    for (const auto& o : model->outputs())
        if (output_name.empty() || o.name() == output_name || o.uid() == output_name ||
            (o.owner() && o.owner()->name() == output_name))
            outputs.push_back(o);
    if (outputs.empty()) throw ctk::ValueError("the model has no output named '" + output_name + "'");
    // One CTF stream per model input.
    std::vector<ctk::StreamDef> streams;
    ctk::StreamMap input_map;
    for (const auto& in : model->arguments()) {
        if (in.is_placeholder())
            throw ctk::ValueError("the model has an unbound placeholder " + in.to_string());
        const std::string key = in.name().empty() ? in.uid() : in.name();
        for (int64_t d : in.shape())
            if (d < 0)
                throw ctk::ValueError(
                    "input " + in.to_string() +
                    " has a free or inferred dimension; a CTF stream needs a fixed sample size");
        auto it = fields.find(key);
        const std::string field = it != fields.end() ? it->second : key;
        streams.push_back({key, field, {ctk::Shape(in.shape()).numel()}, in.is_sparse(), false});
        input_map[in] = key;
    }
    ctk::MinibatchSourceConfig config;
    config.deserializers = {ctk::ctf_deserializer(ctf, streams)};
    config.randomize = false;
    if (max_samples != ctk::kInfinitelyRepeat)
        config.max_samples = max_samples;
    else
        config.max_sweeps = 1;
    ctk::MinibatchSource source(std::move(config));
    int64_t sample = 0;
    for (;;) {
        auto mb = source.next_minibatch(minibatch);
        if (mb.empty()) break;
        ctk::ValueMap args;
        for (auto& [var, value] : ctk::bind_minibatch(mb, input_map)) args.emplace(var, value);
        ctk::ValueMap result = model->eval(args, outputs);
        // One line per sample (a sequence's steps as "<sample>.<step>"), outputs in turn.
        int64_t rows = 0;
        for (const auto& o : outputs) {
            const ctk::Value& v = result.at(o);
            const std::string name = o.name().empty() ? o.uid() : o.name();
            const int64_t per = ctk::Shape(o.shape()).numel();
            auto print_row = [&](const float* p, const std::string& label) {
                std::printf("%s %s:", label.c_str(), name.c_str());
                for (int64_t k = 0; k < per; ++k) std::printf(" %.9g", static_cast<double>(p[k]));
                std::putchar('\n');
            };
            if (v.has_layout() && o.has_sequence_axis()) {
                rows = v.layout()->num_sequences();
                for (int64_t i = 0; i < rows; ++i) {
                    const ctk::Tensor seq = v.sequence(i).to(ctk::DataType::f32).contiguous();
                    for (int64_t t = 0; t < seq.dim(0); ++t)
                        print_row(seq.data<float>() + t * per,
                                  std::to_string(sample + i) + "." + std::to_string(t));
                }
            } else {
                const ctk::Tensor data = v.data().to(ctk::DataType::f32).contiguous();
                rows = per ? data.numel() / per : 0;
                for (int64_t r = 0; r < rows; ++r)
                    print_row(data.data<float>() + r * per, std::to_string(sample + r));
            }
        }
        sample += rows;
    }
    std::fprintf(stderr, "Evaluated %lld samples of %s with %s\n", static_cast<long long>(sample),
                 ctf.c_str(), model_path.c_str());
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
