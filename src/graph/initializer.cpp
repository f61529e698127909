// Parameter initializers with CNTK's rules (Variable.cpp CreateValueFromParameterInitializer and
// LearnableParameter::InitRandom). Fan-in and fan-out are computed on CNTK's column-major shape, the
// Python shape reversed: its first filter_rank dims are the receptive field; the input dims follow the
// output_rank output dims (or, when output_rank is negative, precede the last -output_rank dims).
// fan_in = receptive field x input dims; fan_out = numel x receptive field / fan_in.
#include <atomic>
#include <cmath>
#include <cstdlib>

#include "ctk/core/rng.h"
#include "ctk/graph/initializer.h"

namespace ctk {

namespace {

const char* kind_name(Initializer::Kind k) {
    switch (k) {
        case Initializer::Kind::constant:
            return "constant";
        case Initializer::Kind::uniform:
            return "uniform";
        case Initializer::Kind::normal:
            return "normal";
        case Initializer::Kind::truncated_normal:
            return "truncated_normal";
        case Initializer::Kind::xavier:
            return "xavier";
        case Initializer::Kind::glorot_uniform:
            return "glorot_uniform";
        case Initializer::Kind::glorot_normal:
            return "glorot_normal";
        case Initializer::Kind::he_uniform:
            return "he_uniform";
        case Initializer::Kind::he_normal:
            return "he_normal";
        case Initializer::Kind::bilinear:
            return "bilinear";
        case Initializer::Kind::values:
            return "values";
    }
    return "?";
}

struct Fans {
    double in = 1, out = 1;
};

Fans fan_in_out(const Shape& py_shape, int output_rank, int filter_rank, const char* who) {
    const int rank = py_shape.rank();
    if (output_rank == kSentinelRank) output_rank = 1;
    if (filter_rank == kSentinelRank) filter_rank = 0;
    CTK_CHECK(filter_rank >= 0 && filter_rank + std::abs(output_rank) <= rank, ValueError, who,
              ": output_rank ", output_rank, " and filter_rank ", filter_rank,
              " do not fit a parameter of shape ", py_shape.to_string());
    auto cdim = [&](int i) { return static_cast<double>(py_shape[rank - 1 - i]); };  // column-major dim i
    double filter = 1;
    for (int i = 0; i < filter_rank; ++i) filter *= cdim(i);
    const int begin = filter_rank + std::max(output_rank, 0);
    const int end = output_rank >= 0 ? rank : rank + output_rank;
    double input = 1;
    for (int i = begin; i < end; ++i) input *= cdim(i);
    Fans f;
    f.in = filter * input;
    f.out = f.in > 0 ? static_cast<double>(py_shape.numel()) * filter / f.in : 0;
    return f;
}

// CNTK's seed source: the next seed, and whether it is fixed (every draw returns it) or counts up.
std::atomic<uint64_t> g_next_seed{0};
std::atomic<bool> g_seed_fixed{false};

// Each initializer draws from its own Philox stream: seed mixed so that neighbouring seeds differ.
uint64_t stream_key(uint64_t seed) {
    return seed * 0x9E3779B97F4A7C15ull + 0x5851F42D4C957F2Dull;
}

}  // namespace

void set_fixed_random_seed(uint64_t seed) {
    g_next_seed = seed;
    g_seed_fixed = true;
}

void reset_random_seed(uint64_t seed) {
    g_next_seed = seed;
    g_seed_fixed = false;
}

bool random_seed_is_fixed() {
    return g_seed_fixed.load();
}

uint64_t next_random_seed() {
    return g_seed_fixed.load() ? g_next_seed.load() : g_next_seed++;
}

uint64_t next_worker_random_seed() {
    static const LaunchedWorker worker = launched_worker();
    return static_cast<uint64_t>(worker.count) * next_random_seed() + static_cast<uint64_t>(worker.rank);
}

void Initializer::fill(Tensor& out) const {
    CTK_CHECK(out.device().is_cpu() && is_floating(out.dtype()), TypeError, "initializer ", kind_name(kind),
              ": target must be a floating-point CPU tensor");
    const Shape& shape = out.shape();
    Generator gen(stream_key(seed == kSentinelSeed ? 0 : seed));
    auto uniform_range = [&](double r) { gen.uniform(out, -r, r); };
    const char* who = kind_name(kind);
    switch (kind) {
        case Kind::constant:
            out.fill(value);
            return;
        case Kind::uniform:
            uniform_range(value);
            return;
        case Kind::normal: {
            (void)fan_in_out(shape, output_rank, filter_rank, who);  // validates the ranks as CNTK does
            gen.normal(out, 0.0, value);
            return;
        }
        case Kind::truncated_normal:
            gen.truncated_normal(out, 0.0, value, 2.0);
            return;
        case Kind::xavier:
            uniform_range(value * std::sqrt(3.0 / fan_in_out(shape, output_rank, filter_rank, who).in));
            return;
        case Kind::glorot_uniform: {
            Fans f = fan_in_out(shape, output_rank, filter_rank, who);
            uniform_range(value * std::sqrt(6.0 / (f.in + f.out)));
            return;
        }
        case Kind::glorot_normal: {
            Fans f = fan_in_out(shape, output_rank, filter_rank, who);
            gen.normal(out, 0.0, value * std::sqrt(2.0 / (f.in + f.out)));
            return;
        }
        case Kind::he_uniform:
            uniform_range(value * std::sqrt(6.0 / fan_in_out(shape, output_rank, filter_rank, who).in));
            return;
        case Kind::he_normal:
            gen.normal(out, 0.0,
                       value * std::sqrt(2.0 / fan_in_out(shape, output_rank, filter_rank, who).in));
            return;
        case Kind::values: {
            CTK_CHECK(given.numel() == out.numel(), ShapeError,
                      "initializer values: ", given.shape().to_string(), " values for a parameter of shape ",
                      shape.to_string());
            out.copy_from(given.to(out.dtype()).reshape(shape.dims()));
            return;
        }
        case Kind::bilinear: {
            // Python shape [K, C, H, W] with K == C and H == W: an upsampling kernel on the diagonal.
            CTK_CHECK(shape.rank() == 4 && shape[0] == shape[1] && shape[2] == shape[3], ValueError,
                      "bilinear initializer: needs a [K, K, W, W] parameter, got ", shape.to_string());
            const int64_t w = shape[3];
            const double f = static_cast<double>(w + 1) / 2, c = static_cast<double>(w - 1) / 2;
            out.fill(0.0);
            for (int64_t k = 0; k < shape[0]; ++k)
                for (int64_t h = 0; h < w; ++h)
                    for (int64_t x = 0; x < w; ++x)
                        out.set({k, k, h, x}, (1 - std::abs(static_cast<double>(x) - c) / f) *
                                                  (1 - std::abs(static_cast<double>(h) - c) / f));
            return;
        }
    }
}

std::string Initializer::to_string() const {
    return std::string(kind_name(kind)) + "(" + std::to_string(value) + ")";
}

namespace {
Initializer make(Initializer::Kind kind, double scale, int output_rank, int filter_rank, uint64_t seed) {
    Initializer i;
    i.kind = kind;
    i.value = scale;
    i.output_rank = output_rank;
    i.filter_rank = filter_rank;
    i.seed = seed;
    return i;
}
}  // namespace

Initializer constant_initializer(double value) {
    return make(Initializer::Kind::constant, value, kSentinelRank, kSentinelRank, 0);
}
Initializer uniform(double scale, uint64_t seed) {
    return make(Initializer::Kind::uniform, scale, kSentinelRank, kSentinelRank, seed);
}
Initializer normal(double scale, int output_rank, int filter_rank, uint64_t seed) {
    return make(Initializer::Kind::normal, scale, output_rank, filter_rank, seed);
}
Initializer truncated_normal(double scale, uint64_t seed) {
    return make(Initializer::Kind::truncated_normal, scale, kSentinelRank, kSentinelRank, seed);
}
Initializer xavier(double scale, int output_rank, int filter_rank, uint64_t seed) {
    return make(Initializer::Kind::xavier, scale, output_rank, filter_rank, seed);
}
Initializer glorot_uniform(double scale, int output_rank, int filter_rank, uint64_t seed) {
    return make(Initializer::Kind::glorot_uniform, scale, output_rank, filter_rank, seed);
}
Initializer glorot_normal(double scale, int output_rank, int filter_rank, uint64_t seed) {
    return make(Initializer::Kind::glorot_normal, scale, output_rank, filter_rank, seed);
}
Initializer he_uniform(double scale, int output_rank, int filter_rank, uint64_t seed) {
    return make(Initializer::Kind::he_uniform, scale, output_rank, filter_rank, seed);
}
Initializer he_normal(double scale, int output_rank, int filter_rank, uint64_t seed) {
    return make(Initializer::Kind::he_normal, scale, output_rank, filter_rank, seed);
}
Initializer initializer_with_rank(const Initializer& init, int output_rank, int filter_rank) {
    using Kind = Initializer::Kind;
    if (init.kind == Kind::uniform || init.kind == Kind::constant || init.kind == Kind::bilinear ||
        init.kind == Kind::values)
        return init;
    Initializer out = init;
    auto set = [&](int& rank, int value, const char* what) {
        if (value == kSentinelRank) return;
        CTK_CHECK(rank == kSentinelRank || rank == value, ValueError, "initializer_with_rank: the ", what,
                  " of ", init.to_string(), " is already ", rank, " and cannot become ", value);
        rank = value;
    };
    set(out.output_rank, output_rank, "output rank");
    set(out.filter_rank, filter_rank, "filter rank");
    return out;
}

Initializer initial_values(const Tensor& values) {
    CTK_CHECK(values.defined() && is_floating(values.dtype()), TypeError,
              "initial_values: the values must be a floating-point tensor");
    Initializer i;
    i.kind = Initializer::Kind::values;
    i.given = values.to(Device::cpu()).contiguous().clone();
    return i;
}

Initializer bilinear(int64_t kernel_width, int64_t kernel_height) {
    CTK_CHECK(kernel_width == kernel_height, ValueError, "bilinear: kernel must be square, got ",
              kernel_width, "x", kernel_height);
    return make(Initializer::Kind::bilinear, 0, kSentinelRank, kSentinelRank, 0);
}

}  // namespace ctk
