// Every fuzz target run over its seeds (tests/fuzz/seeds/TARGET) and a fixed number of mutations of them
// (byte changes, tokens of its dictionary tests/fuzz/dict/TARGET.dict, cuts, trailing data), the same for
// every run. A bounded, repeatable cousin of the libFuzzer runs (scripts/fuzz.sh): in CI it runs under
// AddressSanitizer too. An input that escapes as anything but ctk::Error is written out and named.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "ctk/core/error.h"
#include "fuzz/fuzz_targets.h"

namespace ctk::fuzz {
namespace {

namespace fs = std::filesystem;

std::string read_bytes(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

// libFuzzer's dictionary format: one "token" a line (optionally name="token"), \\, \" and \xNN escapes,
// # comments.
std::vector<std::string> read_dictionary(const fs::path& p) {
    std::vector<std::string> tokens;
    std::ifstream in(p);
    std::string line;
    while (std::getline(in, line)) {
        const size_t open = line.find('"');
        if (line.empty() || line[0] == '#' || open == std::string::npos) continue;
        const size_t close = line.rfind('"');
        EXPECT_GT(close, open) << p << ": " << line;
        std::string token;
        for (size_t i = open + 1; i < close; ++i) {
            if (line[i] != '\\') {
                token += line[i];
            } else if (line[i + 1] == 'x') {
                token += static_cast<char>(std::stoi(line.substr(i + 2, 2), nullptr, 16));
                i += 3;
            } else {
                token += line[++i];
            }
        }
        tokens.push_back(token);
    }
    return tokens;
}

std::string mutate(std::string s, const std::vector<std::string>& tokens, std::mt19937& gen) {
    auto at = [&](size_t n) { return n ? gen() % n : 0; };
    const int edits = 1 + static_cast<int>(gen() % 3);
    for (int e = 0; e < edits; ++e) {
        const std::string token = tokens.empty() ? std::string(1, '\xff') : tokens[at(tokens.size())];
        switch (gen() % 7) {
            case 0:  // one byte changed
                if (!s.empty()) s[at(s.size())] = static_cast<char>(gen());
                break;
            case 1:  // inflates varint lengths, counts and UTF-8
                if (!s.empty()) s[at(s.size())] = '\xff';
                break;
            case 2:
                s.insert(at(s.size() + 1), token);
                break;
            case 3: {  // a token written over the bytes there (an int64 shape value, a header field)
                const size_t p = at(s.size() + 1);
                s.replace(p, std::min(token.size(), s.size() - p), token);
                break;
            }
            case 4:
                s.resize(at(s.size() + 1));
                break;
            case 5:  // data past the end (a gzip member or records more than a header announces)
                s += s.substr(at(s.size() + 1));
                break;
            default: {  // a piece repeated in place
                const size_t p = at(s.size() + 1), n = std::min<size_t>(at(64) + 1, s.size() - p);
                s.insert(p, s.substr(p, n));
                break;
            }
        }
    }
    return s;
}

class FuzzTarget : public ::testing::TestWithParam<std::string> {};

TEST_P(FuzzTarget, SeedsAndMutationsLoadOrAreRefused) {
    const Target& t = target(GetParam());
    const fs::path root = CTK_FUZZ_DIR;
    std::vector<std::string> seeds;
    for (const auto& entry : fs::directory_iterator(root / "seeds" / t.name))
        seeds.push_back(read_bytes(entry));
    ASSERT_FALSE(seeds.empty()) << "no seeds for " << t.name;
    std::vector<std::string> tokens;
    if (fs::exists(root / "dict" / (t.name + ".dict")))
        tokens = read_dictionary(root / "dict" / (t.name + ".dict"));

    auto run = [&](const std::string& input, const std::string& what) {
        try {
            t.run(reinterpret_cast<const uint8_t*>(input.data()), input.size());
        } catch (const std::exception& e) {
            const fs::path kept = fs::temp_directory_path() / ("ctk_fuzz_finding_" + t.name);
            std::ofstream(kept, std::ios::binary)
                .write(input.data(), static_cast<std::streamsize>(input.size()));
            ADD_FAILURE() << t.name << ", " << what << ": escaped as " << typeid(e).name() << ": " << e.what()
                          << " (input kept in " << kept << ")";
        }
    };
    for (size_t i = 0; i < seeds.size(); ++i) run(seeds[i], "seed " + std::to_string(i));
    // A fixed count, so every run tries the same inputs; a time cap keeps slow builds (sanitizers) bounded.
    std::mt19937 gen(20261126);
    const auto start = std::chrono::steady_clock::now();
    int executions = 0;
    for (; executions < 1500; ++executions) {
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(20)) break;
        const std::string& seed = seeds[gen() % seeds.size()];
        run(mutate(seed, tokens, gen), "mutation " + std::to_string(executions));
    }
    RecordProperty("executions", executions);
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzTarget,
                         ::testing::Values("ctf", "idx_images", "idx_labels", "cifar", "image",
                                           "base64_image", "cbf", "cntk_dictionary", "cntk_v2", "cntk_v1",
                                           "onnx"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace ctk::fuzz
