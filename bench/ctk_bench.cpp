// ctk_bench: times one benchmark case in ctk and prints one JSON object. bench/compare.py runs it as a
// subprocess, interleaved with the same workload in PyTorch; `--list` prints the case table that both
// sides build their workloads from, so the two can never disagree about what a case is.
#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include <sys/resource.h>

#include "bench_models.h"
#include "ctk/ctk.h"

namespace {

using namespace bench;

enum class CaseKind { gemm, conv, add, chain, model };

// One workload. add: out = a + b over n elements (memory bandwidth: 3 arrays move per iteration).
// GEMM: square f32 C = A * B of size n. Conv: y = conv(x, w) without bias, then dx and dw
// for a fixed dy (the training step of one bias-free ResNet convolution), x [batch, c_in, hw, hw].
struct BenchCase {
    const char* name;
    CaseKind kind;
    int64_t n = 0;                                                                    // gemm
    int64_t batch = 0, c_in = 0, c_out = 0, hw = 0, kernel = 0, stride = 1, pad = 0;  // conv
    int64_t ops = 0;           // chain: how many tiny ops
    bool graph = false;        // chain: through the graph (compiled once) rather than eager ops
    Model model = Model::mlp;  // model: which network
    bool train = false;        // model: a Trainer step (else inference)
    const char* note = "";
    bool gpu_only = false;  // too large for the CPU runs (the GPU GEMM sizes)
};

BenchCase gemm_case(const char* name, int64_t n, const char* note) {
    BenchCase c{.name = name, .kind = CaseKind::gemm, .note = note};
    c.n = n;
    return c;
}

BenchCase add_case(const char* name, int64_t n, const char* note) {
    BenchCase c{.name = name, .kind = CaseKind::add, .note = note};
    c.n = n;
    return c;
}

// chain: `ops` element-wise ops on n-element tensors, alternating y = tanh(y) and y = y + b: per-op
// framework overhead, since the arithmetic is negligible.
BenchCase chain_case(const char* name, int64_t n, int64_t ops, bool graph, const char* note) {
    BenchCase c{.name = name, .kind = CaseKind::chain, .note = note};
    c.n = n;
    c.ops = ops;
    c.graph = graph;
    return c;
}

BenchCase conv_case(const char* name, int64_t c_in, int64_t c_out, int64_t hw, int64_t kernel, int64_t stride,
                    int64_t pad, const char* note) {
    BenchCase c{.name = name, .kind = CaseKind::conv, .note = note};
    c.batch = 128;  // ResNet-20 on CIFAR-10 trains with minibatches of 128
    c.c_in = c_in;
    c.c_out = c_out;
    c.hw = hw;
    c.kernel = kernel;
    c.stride = stride;
    c.pad = pad;
    return c;
}

// A whole network at batch 64: one Trainer::train_minibatch step (forward, backward, momentum SGD) or
// one inference pass, on pre-generated random minibatches. Rate: samples/s.
BenchCase model_case(const char* name, Model model, bool train, const char* note) {
    BenchCase c{.name = name, .kind = CaseKind::model, .note = note};
    c.batch = 64;
    c.model = model;
    c.train = train;
    return c;
}

// ResNet-20 on CIFAR-10 shapes (3x32x32, 10 classes) and ResNet-50 on ImageNet shapes (3x224x224,
// 1000 classes), minibatches of 128: the GPU training benchmarks (--dtype bf16: mixed precision).
BenchCase resnet_case(const char* name, Model model, const char* note, bool train = true) {
    BenchCase c = model_case(name, model, train, note);
    c.batch = 128;
    c.gpu_only = model == Model::resnet50;
    return c;
}

BenchCase gpu_only(BenchCase c) {
    c.gpu_only = true;
    return c;
}

// The ResNet-20 CIFAR shapes: the 3x3 convs of the three stages, the stride-2 first convs of stages 2
// and 3, and the 1x1 stride-2 projection shortcuts beside them.
const std::vector<BenchCase>& cases() {
    static const std::vector<BenchCase> table = {
        gemm_case("gemm_512", 512, "f32 C = A B, 512^3"),
        gemm_case("gemm_1024", 1024, "f32 C = A B, 1024^3"),
        gemm_case("gemm_2048", 2048, "f32 C = A B, 2048^3"),
        gemm_case("gemm_4096", 4096, "f32 C = A B, 4096^3"),
        gpu_only(gemm_case("gemm_8192", 8192, "C = A B, 8192^3 (GPU only)")),
        add_case("add_4M", int64_t(1) << 22, "out = a + b, 4M elements (element-wise bandwidth)"),
        gpu_only(add_case("add_64M", int64_t(1) << 26, "out = a + b, 64M elements (GPU only)")),
        chain_case("tiny_ops_graph", 16, 64, true,
                   "64 tiny ops (tanh, +b on 16 floats), ctk graph eval vs torch eager"),
        chain_case("tiny_ops_eager", 16, 64, false,
                   "64 tiny ops (tanh, +b on 16 floats), ctk eager vs torch eager"),
        conv_case("conv3x3_c16_32x32", 16, 16, 32, 3, 1, 1, "stage 1 3x3 conv"),
        conv_case("conv3x3_c32_16x16", 32, 32, 16, 3, 1, 1, "stage 2 3x3 conv"),
        conv_case("conv3x3_c64_8x8", 64, 64, 8, 3, 1, 1, "stage 3 3x3 conv"),
        conv_case("conv3x3_s2_c16to32_32x32", 16, 32, 32, 3, 2, 1, "stage 2 entry, 32x32 -> 16x16"),
        conv_case("conv3x3_s2_c32to64_16x16", 32, 64, 16, 3, 2, 1, "stage 3 entry, 16x16 -> 8x8"),
        conv_case("conv1x1_s2_c16to32_32x32", 16, 32, 32, 1, 2, 0, "stage 2 projection shortcut"),
        conv_case("conv1x1_s2_c32to64_16x16", 32, 64, 16, 1, 2, 0, "stage 3 projection shortcut"),
        model_case("train_mlp", Model::mlp, true, "MLP 784-200-200-10 training step, momentum SGD"),
        model_case("train_convnet", Model::convnet, true, "CNTK's ConvNet_MNIST training step, momentum SGD"),
        model_case("eval_convnet", Model::convnet, false, "CNTK's ConvNet_MNIST inference (dropout off)"),
        resnet_case("train_resnet20", Model::resnet20,
                    "ResNet-20 (CNTK's TrainResNet_CIFAR10) training step, 3x32x32, momentum SGD"),
        resnet_case("eval_resnet20", Model::resnet20,
                    "ResNet-20 inference, 3x32x32 (batch normalization frozen)", false),
        resnet_case("train_resnet50", Model::resnet50,
                    "ResNet-50 training step, 3x224x224, 1000 classes, momentum SGD (GPU only)"),
    };
    return table;
}

int64_t conv_out_hw(const BenchCase& c) {
    return (c.hw + 2 * c.pad - c.kernel) / c.stride + 1;
}

// Floating-point operations in one iteration: 2 n^3 for GEMM; for a conv, three products of the same
// size (forward, backward data, backward weights), each 2 * N * O * C * kh * kw * Ho * Wo; for a model,
// its weight layers' products (training: forward, backward weights, and backward data except into the
// input), pooling and element-wise work not counted.
double flops_per_iter(const BenchCase& c) {
    if (c.kind == CaseKind::model) {
        std::vector<double> macs = model_layer_macs(c.model);
        double forward = 0;
        for (double m : macs) forward += m;
        return 2.0 * static_cast<double>(c.batch) * (c.train ? 3.0 * forward - macs.front() : forward);
    }
    if (c.kind == CaseKind::gemm) return 2.0 * static_cast<double>(c.n) * c.n * c.n;
    if (c.kind == CaseKind::add) return static_cast<double>(c.n);
    if (c.kind == CaseKind::chain) return static_cast<double>(c.n * c.ops);
    double out = static_cast<double>(conv_out_hw(c));
    return 3.0 * 2.0 * c.batch * c.c_out * c.c_in * c.kernel * c.kernel * out * out;
}

// JSON text for a string (case names and error messages; escapes what JSON requires).
std::string json_string(std::string_view s) {
    std::string out = "\"";
    for (char ch : s) {
        switch (ch) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(ch) < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", ch);
                    out += buf;
                } else {
                    out += ch;
                }
        }
    }
    return out + "\"";
}

std::string json_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::string case_json(const BenchCase& c) {
    std::ostringstream o;
    o << "{\"case\":" << json_string(c.name);
    if (c.kind == CaseKind::gemm) {
        o << ",\"kind\":\"gemm\",\"n\":" << c.n << ",\"unit\":\"GFLOP/s\"";
    } else if (c.kind == CaseKind::add) {
        o << ",\"kind\":\"add\",\"n\":" << c.n << ",\"unit\":\"GB/s\"";
    } else if (c.kind == CaseKind::chain) {
        o << ",\"kind\":\"chain\",\"n\":" << c.n << ",\"ops\":" << c.ops
          << ",\"graph\":" << (c.graph ? "true" : "false") << ",\"unit\":\"Mop/s\"";
    } else if (c.kind == CaseKind::model) {
        o << ",\"kind\":\"model\",\"model\":" << json_string(model_name(c.model))
          << ",\"train\":" << (c.train ? "true" : "false") << ",\"batch\":" << c.batch
          << ",\"batches\":" << kModelBatches << ",\"lr_per_sample\":" << json_number(kLrPerSample)
          << ",\"momentum\":" << json_number(kMomentum) << ",\"unit\":\"samples/s\"";
    } else {
        o << ",\"kind\":\"conv\",\"batch\":" << c.batch << ",\"c_in\":" << c.c_in << ",\"c_out\":" << c.c_out
          << ",\"hw\":" << c.hw << ",\"kernel\":" << c.kernel << ",\"stride\":" << c.stride
          << ",\"pad\":" << c.pad << ",\"out_hw\":" << conv_out_hw(c) << ",\"unit\":\"images/s\"";
    }
    o << ",\"gflop_per_iter\":" << json_number(flops_per_iter(c) * 1e-9)
      << ",\"gpu_only\":" << (c.gpu_only ? "true" : "false") << ",\"note\":" << json_string(c.note) << "}";
    return o.str();
}

// The file name of the BLAS library mapped into this process ("" if none), so a run shows which BLAS
// ctk actually used.
std::string mapped_blas() {
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        auto slash = line.rfind('/');
        if (slash == std::string::npos) continue;
        std::string file = line.substr(slash + 1);
        if (file.find("blas") != std::string::npos) return file;
    }
    return "";
}

// Deterministic inputs: N(0, stddev), far from denormals, so speed does not depend on the values.
ctk::Tensor random_tensor(const ctk::Shape& shape, double stddev, ctk::Generator& gen) {
    ctk::Tensor t = ctk::Tensor::empty(shape, ctk::DataType::f32);
    gen.normal(t, 0.0, stddev);
    return t;
}

// Builds the inputs of a case (outside the timing), runs one untimed step that checks the output shapes
// (and, given dump_dir, writes inputs and outputs there), and returns one timed iteration. Every
// iteration allocates its outputs: the ctk op API has no out-parameter variants, and PyTorch allocates too.
// On a GPU the iteration ends by waiting for the device, so that it times the kernels, not their launch.
std::function<void()> make_iteration(const BenchCase& c, const std::string& dump_dir, ctk::Device device,
                                     ctk::DataType dtype, std::shared_ptr<ctk::Trainer>* trainer) {
    if (c.kind == CaseKind::model)
        return make_model_iteration({c.model, c.train, c.batch}, dump_dir, device, dtype, trainer);
    ctk::Generator gen(1234);
    auto input = [&](const ctk::Shape& shape, double stddev) {
        return random_tensor(shape, stddev, gen).to(dtype).to(device);
    };
    auto sync = [device] {
        if (device.is_cuda()) ctk::cuda::synchronize(device);
    };
    if (c.kind == CaseKind::add) {
        ctk::Tensor a = input({c.n}, 1.0);
        ctk::Tensor b = input({c.n}, 1.0);
        ctk::Tensor out = ctk::plus(a, b);
        expect_shape(out, {c.n}, "plus output");
        if (!dump_dir.empty()) {
            dump_tensor(dump_dir, "a", a);
            dump_tensor(dump_dir, "b", b);
            dump_tensor(dump_dir, "c", out);
        }
        return [a, b, sync] {
            (void)ctk::plus(a, b);
            sync();
        };
    }
    if (c.kind == CaseKind::chain) {
        ctk::Tensor x = input({c.n}, 1.0);
        ctk::Tensor b = input({c.n}, 0.1);
        if (c.graph) {
            // The graph: built and compiled once; each iteration binds the argument and evaluates.
            ctk::Variable xv = ctk::input_variable({c.n}, dtype, false, false, {});
            ctk::Variable bv = ctk::constant(b);
            ctk::Variable y = xv;
            for (int64_t i = 0; i < c.ops; ++i)
                y = i % 2 == 0 ? ctk::Variable(ctk::tanh(y)) : ctk::Variable(ctk::plus(y, bv));
            ctk::FunctionPtr f = ctk::as_function(y);
            ctk::ValueMap args{{xv, ctk::Value(x)}};
            ctk::Tensor out = f->eval(args).begin()->second.data();
            expect_shape(out, {c.n}, "chain output");
            if (!dump_dir.empty()) {
                dump_tensor(dump_dir, "x", x);
                dump_tensor(dump_dir, "b", b);
                dump_tensor(dump_dir, "y", out);
            }
            return [f, args] { (void)f->eval(args); };
        }
        auto run = [x, b, ops = c.ops] {
            ctk::Tensor y = x;
            for (int64_t i = 0; i < ops; ++i) y = i % 2 == 0 ? ctk::tanh(y) : ctk::plus(y, b);
            return y;
        };
        ctk::Tensor out = run();
        expect_shape(out, {c.n}, "chain output");
        if (!dump_dir.empty()) {
            dump_tensor(dump_dir, "x", x);
            dump_tensor(dump_dir, "b", b);
            dump_tensor(dump_dir, "y", out);
        }
        return [run, sync] {
            (void)run();
            sync();
        };
    }
    if (c.kind == CaseKind::gemm) {
        ctk::Tensor a = input({c.n, c.n}, 1.0);
        ctk::Tensor b = input({c.n, c.n}, 1.0);
        ctk::Tensor out = ctk::matmul(a, b);
        expect_shape(out, {c.n, c.n}, "matmul output");
        if (!dump_dir.empty()) {
            dump_tensor(dump_dir, "a", a);
            dump_tensor(dump_dir, "b", b);
            dump_tensor(dump_dir, "c", out);
        }
        return [a, b, sync] {
            (void)ctk::matmul(a, b);
            sync();
        };
    }
    ctk::ConvAttrs attrs;
    attrs.strides = {c.stride, c.stride};
    attrs.dilation = {1, 1};
    attrs.pad_lo = {c.pad, c.pad};
    attrs.pad_hi = {c.pad, c.pad};
    attrs.groups = 1;
    int64_t ho = conv_out_hw(c);
    ctk::Shape x_shape{c.batch, c.c_in, c.hw, c.hw};
    ctk::Shape w_shape{c.c_out, c.c_in, c.kernel, c.kernel};
    ctk::Shape y_shape{c.batch, c.c_out, ho, ho};
    ctk::Tensor x = input(x_shape, 1.0);
    // He-style scale keeps y, dx and dw of order one.
    ctk::Tensor w = input(w_shape, 1.0 / std::sqrt(static_cast<double>(c.c_in * c.kernel * c.kernel)));
    ctk::Tensor dy = input(y_shape, 1.0);
    ctk::Tensor no_bias;
    ctk::Tensor y = ctk::convolution(x, w, no_bias, attrs);
    ctk::Tensor dx = ctk::convolution_backward_data(dy, w, x_shape, attrs);
    ctk::Tensor dw = ctk::convolution_backward_weights(x, dy, w_shape, attrs, false).dw;
    expect_shape(y, y_shape, "convolution output");
    expect_shape(dx, x_shape, "dx");
    expect_shape(dw, w_shape, "dw");
    if (!dump_dir.empty()) {
        const std::pair<const char*, const ctk::Tensor*> tensors[] = {{"x", &x}, {"w", &w},   {"dy", &dy},
                                                                      {"y", &y}, {"dx", &dx}, {"dw", &dw}};
        for (const auto& [name, t] : tensors) dump_tensor(dump_dir, name, *t);
    }
    return [x, w, dy, no_bias, attrs, x_shape, w_shape, sync] {
        ctk::Tensor y = ctk::convolution(x, w, no_bias, attrs);
        ctk::Tensor dx = ctk::convolution_backward_data(dy, w, x_shape, attrs);
        ctk::ConvWeightGrads g = ctk::convolution_backward_weights(x, dy, w_shape, attrs, false);
        sync();
        (void)y;
        (void)dx;
        (void)g;
    };
}

struct Timing {
    int64_t iterations = 0;
    double median_s = 0.0;
    double min_s = 0.0;
    double faults_per_iter = 0.0;  // minor page faults: memory the allocator handed back to the kernel
    // From ctk's allocator (host or device) over the timed iterations: the most tensor memory in use at
    // once, and the requests per iteration that its cache could not serve (0 in a steady state).
    double tensor_peak_mb = 0.0;
    double uncached_allocs_per_iter = 0.0;
    // Every call to the allocator per iteration, cached or not: 0 for a training step that follows its
    // memory plan (memory_plan.h).
    double allocator_calls_per_iter = 0.0;
};

// Resident memory in MiB from /proc/self/status: now (VmRSS) and this program's peak (VmHWM). Not
// getrusage's ru_maxrss: across fork + exec it keeps the forking parent's peak (compare.py's, with torch
// loaded), so a child of a large process reports the parent's size.
double status_mb(const char* key) {
    std::ifstream status("/proc/self/status");
    std::string line;
    const size_t n = std::strlen(key);
    while (std::getline(status, line))
        if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':')
            return std::strtod(line.c_str() + n + 1, nullptr) / 1024.0;
    return 0.0;
}

long minor_faults() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_minflt;
}

// Warm-up (at least 2 iterations and warmup_s seconds: first-touch pages, oneDNN primitive creation,
// OpenMP team start-up), then iterations timed one by one until min_time_s has passed and at least
// 5 were taken; the median resists the odd slow iteration on a shared machine.
Timing time_iterations(const std::function<void()>& iteration, double warmup_s, double min_time_s,
                       ctk::Allocator& allocator) {
    using clock = std::chrono::steady_clock;
    auto seconds_since = [](clock::time_point t0) {
        return std::chrono::duration<double>(clock::now() - t0).count();
    };
    auto warm_start = clock::now();
    for (int i = 0; i < 2 || seconds_since(warm_start) < warmup_s; ++i) iteration();

    std::vector<double> samples;
    ctk::reset_op_profile();  // CTK_PROFILE_OPS=1: the timed iterations alone
    allocator.reset_peak();
    const ctk::AllocatorStats alloc_before = allocator.stats();
    long faults_before = minor_faults();
    auto start = clock::now();
    while (samples.size() < 5 || seconds_since(start) < min_time_s) {
        auto t0 = clock::now();
        iteration();
        samples.push_back(seconds_since(t0));
    }
    Timing t;
    t.iterations = static_cast<int64_t>(samples.size());
    t.faults_per_iter =
        static_cast<double>(minor_faults() - faults_before) / static_cast<double>(samples.size());
    const ctk::AllocatorStats alloc_after = allocator.stats();
    t.tensor_peak_mb = static_cast<double>(alloc_after.peak_bytes_in_use) / (1 << 20);
    t.allocator_calls_per_iter =
        static_cast<double>(alloc_after.num_allocations - alloc_before.num_allocations) /
        static_cast<double>(samples.size());
    t.uncached_allocs_per_iter =
        static_cast<double>((alloc_after.num_allocations - alloc_before.num_allocations) -
                            (alloc_after.num_cache_hits - alloc_before.num_cache_hits)) /
        static_cast<double>(samples.size());
    t.min_s = *std::min_element(samples.begin(), samples.end());
    std::sort(samples.begin(), samples.end());
    size_t mid = samples.size() / 2;
    t.median_s = samples.size() % 2 ? samples[mid] : 0.5 * (samples[mid - 1] + samples[mid]);
    return t;
}

void usage(std::ostream& os) {
    os << "usage: ctk_bench --list\n"
          "       ctk_bench --case NAME [--threads N] [--min-time SECONDS] [--warmup SECONDS]\n"
          "                 [--device cpu|cuda] [--dtype f32|bf16]\n"
          "       ctk_bench --case NAME --dump DIR\n"
          "       mpiexec -n N ctk_bench --case TRAINING_CASE --data-parallel BITS [--steps K] [--threads "
          "N]\n"
          "Times one case and prints one JSON line: case, threads, iterations, median_s, rate, unit.\n"
          "--dump writes the case's inputs and the outputs of one step to DIR/<name>.f32 (raw float32)\n"
          "instead of timing; bench/compare.py checks them against PyTorch.\n"
          "--data-parallel trains with CNTK's data-parallel learner on every worker (BITS 32: exact, 1-16:\n"
          "quantized) for K timed steps; worker 0 prints the job's samples/s and the bytes sent per step.\n"
          "On failure prints a JSON line with \"error\" and exits with status 2.\n";
}

bool parse_double(std::string_view s, double& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

bool parse_int(std::string_view s, int& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

// --data-parallel BITS under mpiexec: every worker trains the model case with CNTK's data-parallel
// learner (32: exact, 1-16: quantized) for a fixed number of steps (a step holds collectives, so every
// worker must run as many); worker 0 prints the job's samples/s (workers x batch / median step) and the
// gradient bytes each worker sent per step.
int run_data_parallel(const BenchCase& c, int bits, int steps, ctk::Device device, const std::string& head) {
    namespace dist = ctk::distributed;
    dist::DistributedLearnerPtr learner;
    auto wrap = [&](ctk::LearnerPtr local) {
        learner = dist::data_parallel_distributed_learner(local, 0, bits);
        return ctk::LearnerPtr(learner);
    };
    std::function<void()> step =
        make_model_iteration({c.model, c.train, c.batch}, "", device, ctk::DataType::f32, nullptr, wrap);
    const dist::CommunicatorPtr comm = learner->communicator();
    for (int i = 0; i < 3; ++i) step();  // warm-up: plans, buckets, caches
    comm->barrier();
    std::vector<double> seconds;
    for (int i = 0; i < steps; ++i) {
        const auto start = std::chrono::steady_clock::now();
        step();
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(seconds.begin(), seconds.end());
    std::vector<double> median{seconds[seconds.size() / 2]};
    comm->all_reduce(median, dist::ReduceOp::max);  // the slowest worker's median sets the pace
    if (comm->is_main()) {
        const double rate = static_cast<double>(c.batch * comm->num_workers()) / median[0];
        std::cout << head << ",\"workers\":" << comm->num_workers() << ",\"bits\":" << bits
                  << ",\"steps\":" << steps << ",\"median_s\":" << json_number(median[0])
                  << ",\"rate\":" << json_number(rate) << ",\"unit\":\"samples/s\""
                  << ",\"bytes_sent_per_step\":" << learner->bytes_sent_last_step()
                  << ",\"num_threads\":" << ctk::num_threads() << ",\"blas\":" << json_string(mapped_blas())
                  << "}" << std::endl;
    }
    dist::Communicator::finalize();
    return 0;
}

int main(int argc, char** argv) {
    std::string case_name, dump_dir;
    ctk::Device device = ctk::Device::cpu();
    ctk::DataType dtype = ctk::DataType::f32;
    int threads = 1, data_parallel_bits = 0, steps = 20;
    double min_time = 1.0, warmup = 0.3;
    bool list = false;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        auto value = [&]() -> std::string_view {
            if (i + 1 >= argc) {
                std::cerr << "ctk_bench: " << arg << " needs a value\n";
                std::exit(64);
            }
            return argv[++i];
        };
        bool ok = true;
        if (arg == "--list") {
            list = true;
        } else if (arg == "--case") {
            case_name = value();
        } else if (arg == "--dump") {
            dump_dir = value();
        } else if (arg == "--device") {
            std::string_view v = value();
            ok = v == "cpu" || v == "cuda";
            if (v == "cuda") device = ctk::Device::cuda(0);
        } else if (arg == "--dtype") {
            std::string_view v = value();
            ok = v == "f32" || v == "bf16";
            if (v == "bf16") dtype = ctk::DataType::bf16;
        } else if (arg == "--data-parallel") {
            ok = parse_int(value(), data_parallel_bits) && data_parallel_bits >= 1;
        } else if (arg == "--steps") {
            ok = parse_int(value(), steps) && steps >= 1;
        } else if (arg == "--threads") {
            ok = parse_int(value(), threads) && threads >= 1;
        } else if (arg == "--min-time") {
            ok = parse_double(value(), min_time) && min_time >= 0;
        } else if (arg == "--warmup") {
            ok = parse_double(value(), warmup) && warmup >= 0;
        } else if (arg == "-h" || arg == "--help") {
            usage(std::cout);
            return 0;
        } else {
            ok = false;
        }
        if (!ok) {
            std::cerr << "ctk_bench: bad argument near '" << arg << "'\n";
            usage(std::cerr);
            return 64;
        }
    }
    if (list) {
        for (const BenchCase& c : cases()) std::cout << case_json(c) << "\n";
        return 0;
    }
    auto it =
        std::find_if(cases().begin(), cases().end(), [&](const BenchCase& c) { return case_name == c.name; });
    if (it == cases().end()) {
        std::cerr << "ctk_bench: unknown case '" << case_name << "' (see --list)\n";
        return 64;
    }
    const BenchCase& c = *it;

    std::string head = "{\"case\":" + json_string(c.name) + ",\"threads\":" + std::to_string(threads);
    try {
        ctk::set_num_threads(threads);
        if (data_parallel_bits > 0) {
            if (c.kind != CaseKind::model || !c.train) {
                std::cerr << "ctk_bench: --data-parallel needs a training case\n";
                return 64;
            }
            return run_data_parallel(c, data_parallel_bits, steps, device, head);
        }
        const double base_rss_mb = status_mb("VmRSS");
        std::shared_ptr<ctk::Trainer> trainer;  // training cases: for the CUDA Graph status
        std::function<void()> iteration = make_iteration(c, dump_dir, device, dtype, &trainer);
        if (!dump_dir.empty()) {
            std::cout << head << ",\"dumped\":" << json_string(dump_dir) << "}" << std::endl;
            return 0;
        }
        Timing t = time_iterations(iteration, warmup, min_time, ctk::allocator_for(device));
        if (ctk::op_profile_enabled())
            std::cerr << "ctk_bench " << c.name << ": op profile over " << t.iterations << " iterations\n"
                      << ctk::op_profile_table(t.iterations);
        // add: bytes moved (two reads, one write) per second.
        const double rate = c.kind == CaseKind::gemm ? flops_per_iter(c) * 1e-9 / t.median_s
                            : c.kind == CaseKind::add
                                ? 3.0 * static_cast<double>(c.n) * static_cast<double>(ctk::size_of(dtype)) *
                                      1e-9 / t.median_s
                            : c.kind == CaseKind::chain ? static_cast<double>(c.ops) * 1e-6 / t.median_s
                                                        : static_cast<double>(c.batch) / t.median_s;
        ctk::BuildInfo info = ctk::build_info();
        std::cout << head << ",\"iterations\":" << t.iterations << ",\"median_s\":" << json_number(t.median_s)
                  << ",\"min_s\":" << json_number(t.min_s) << ",\"rate\":" << json_number(rate)
                  << ",\"unit\":"
                  << json_string(c.kind == CaseKind::gemm    ? "GFLOP/s"
                                 : c.kind == CaseKind::add   ? "GB/s"
                                 : c.kind == CaseKind::chain ? "Mop/s"
                                 : c.kind == CaseKind::model ? "samples/s"
                                                             : "images/s")
                  << ",\"gflops\":" << json_number(flops_per_iter(c) * 1e-9 / t.median_s)
                  << ",\"faults_per_iter\":" << json_number(t.faults_per_iter)
                  << ",\"tensor_peak_mb\":" << json_number(t.tensor_peak_mb)
                  << ",\"uncached_allocs_per_iter\":" << json_number(t.uncached_allocs_per_iter)
                  << ",\"allocator_calls_per_iter\":" << json_number(t.allocator_calls_per_iter)
                  << ",\"base_rss_mb\":" << json_number(base_rss_mb)
                  << ",\"peak_rss_mb\":" << json_number(status_mb("VmHWM"))
                  << ",\"device\":" << json_string(device.to_string())
                  << ",\"dtype\":" << json_string(ctk::dtype_name(dtype))
                  << ",\"num_threads\":" << ctk::num_threads() << ",\"blas\":" << json_string(mapped_blas())
                  << ",\"build\":" << json_string(info.build_type + " " + info.git_sha);
        if (trainer) {
            const ctk::MemoryPlanStats m = trainer->step_memory();
            std::cout << ",\"step_arena_mb\":" << json_number(static_cast<double>(m.arena_bytes) / (1 << 20))
                      << ",\"step_planned_peak_mb\":"
                      << json_number(static_cast<double>(m.planned_peak_bytes) / (1 << 20))
                      << ",\"step_plan_misses\":" << m.last_run_misses;
        }
        if (trainer && trainer->cuda_graph())
            std::cout << ",\"cuda_graph_replays\":" << trainer->cuda_graph_replays()
                      << ",\"cuda_graph_status\":" << json_string(trainer->cuda_graph_status());
        std::cout << "}" << std::endl;
        return 0;
    } catch (const std::exception& e) {
        std::cout << head << ",\"error\":" << json_string(e.what()) << "}" << std::endl;
        return 2;
    }
}
