// The op harness as a command: `op_harness [--perf] [--filter SUBSTRING] [--list] [--threads N]`.
// Without --perf it runs every check and prints one line per case; --perf times each case's forward
// (and backward) in f32.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/op_harness.h"

using namespace ctk;
using namespace ctk::test;

namespace {

double time_us(const std::function<void()>& fn) {
    fn();  // warm-up (primitive creation, caches)
    int reps = 0;
    auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    do {
        fn();
        ++reps;
        elapsed = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    } while (elapsed < 200000 && reps < 10000);
    return elapsed / reps;
}

}  // namespace

int main(int argc, char** argv) {
    bool perf = false, list = false;
    std::string filter;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--perf")) perf = true;
        else if (!std::strcmp(argv[i], "--list")) list = true;
        else if (!std::strcmp(argv[i], "--filter") && i + 1 < argc) filter = argv[++i];
        else if (!std::strcmp(argv[i], "--threads") && i + 1 < argc) set_num_threads(std::atoi(argv[++i]));
        else {
            std::fprintf(stderr, "usage: %s [--perf] [--list] [--filter SUBSTRING] [--threads N]\n", argv[0]);
            return 2;
        }
    }
    int failed = 0, passed = 0;
    for (const auto& c : all_op_cases()) {
        if (!filter.empty() && c.name.find(filter) == std::string::npos) continue;
        if (list) {
            std::printf("%s\n", c.name.c_str());
            continue;
        }
        if (perf) {
            Tensors in = make_inputs(c, DataType::f32);
            double fwd = time_us([&] { c.forward(in); });
            std::printf("%-48s forward %10.2f us", c.name.c_str(), fwd);
            if (c.backward) {
                Tensors out = c.forward(in);
                double bwd = time_us([&] { c.backward(in, out); });
                std::printf("   backward %10.2f us", bwd);
            }
            std::printf("\n");
            continue;
        }
        std::string errors;
        for (auto d : {DataType::f32, DataType::f64, DataType::bf16, DataType::f16}) {
            for (auto& m : {check_forward(c, d), check_non_contiguous(c, d)})
                if (!m.empty()) errors += "\n    " + m;
        }
        for (auto& m : {check_gradients(c), check_backends(c)})
            if (!m.empty()) errors += "\n    " + m;
        std::printf("%s %s%s\n", errors.empty() ? "PASS" : "FAIL", c.name.c_str(), errors.c_str());
        (errors.empty() ? passed : failed)++;
    }
    if (!perf && !list) std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
