// Parameter initializers with CNTK's scaling rules. Fan-in and fan-out are read from the parameter's
// shape (row-major, as Python shows it): the first `output_rank` axes... see fan_in_out() in
// src/graph/initializer.cpp for the exact rule. Every draw comes from the Philox generator, so a
// parameter's initial value depends only on (seed, shape).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "ctk/core/launcher.h"
#include "ctk/core/tensor.h"

namespace ctk {

// Marks "use the default" for output_rank / filter_rank, and "draw a fresh seed" for seed.
inline constexpr int kSentinelRank = 1 << 30;
inline constexpr uint64_t kSentinelSeed = ~uint64_t(0);

struct Initializer {
    enum class Kind : uint8_t {
        constant,
        uniform,
        normal,
        truncated_normal,
        xavier,
        glorot_uniform,
        glorot_normal,
        he_uniform,
        he_normal,
        bilinear,
        values  // given values (CNTK's init=array): the parameter's shape must hold them all
    };
    Kind kind = Kind::constant;
    double value = 0.0;  // constant: the value; others: the scale
    int output_rank = kSentinelRank;
    int filter_rank = kSentinelRank;
    uint64_t seed = kSentinelSeed;
    Tensor given;  // Kind::values

    // Fills `out` (CPU, floating) with this initializer's draw for the shape of `out`. Throws ValueError
    // naming the initializer when the shape does not suit it (bilinear on a non-square kernel).
    void fill(Tensor& out) const;
    std::string to_string() const;
};

Initializer constant_initializer(double value);
Initializer uniform(double scale, uint64_t seed = kSentinelSeed);  // U(-scale, scale)
Initializer normal(double scale, int output_rank = kSentinelRank, int filter_rank = kSentinelRank,
                   uint64_t seed = kSentinelSeed);
Initializer truncated_normal(double scale, uint64_t seed = kSentinelSeed);
Initializer xavier(double scale = 1.0, int output_rank = kSentinelRank, int filter_rank = kSentinelRank,
                   uint64_t seed = kSentinelSeed);
Initializer glorot_uniform(double scale = 1.0, int output_rank = kSentinelRank,
                           int filter_rank = kSentinelRank, uint64_t seed = kSentinelSeed);
Initializer glorot_normal(double scale = 1.0, int output_rank = kSentinelRank,
                          int filter_rank = kSentinelRank, uint64_t seed = kSentinelSeed);
Initializer he_uniform(double scale = 1.0, int output_rank = kSentinelRank, int filter_rank = kSentinelRank,
                       uint64_t seed = kSentinelSeed);
Initializer he_normal(double scale = 1.0, int output_rank = kSentinelRank, int filter_rank = kSentinelRank,
                      uint64_t seed = kSentinelSeed);
// CNTK's initializer_with_rank: `init` with its output_rank and filter_rank replaced (kSentinelRank
// keeps them). Uniform, constant and bilinear initializers have no ranks and come back unchanged; a rank
// the initializer already fixed to another value is a ValueError, as CNTK.
Initializer initializer_with_rank(const Initializer& init, int output_rank = kSentinelRank,
                                  int filter_rank = kSentinelRank);
Initializer bilinear(int64_t kernel_width, int64_t kernel_height);
// The initial value given as data (CNTK's init=NumPy array): copied in row-major order into a parameter
// with as many elements (its inferred dims resolved first); ShapeError naming both shapes otherwise.
Initializer initial_values(const Tensor& values);

// The process-wide seed source for initializers and random ops created without an explicit seed, with
// CNTK's rules: set_fixed_random_seed(s) makes every later draw s (two glorot_uniform parameters of one
// shape come out equal, every dropout gets seed s); reset_random_seed(s) makes the draws s, s + 1, ...
// in creation order. The process starts as reset_random_seed(0).
void set_fixed_random_seed(uint64_t seed);
void reset_random_seed(uint64_t seed);
bool random_seed_is_fixed();
uint64_t next_random_seed();

// The seed of a random op (dropout, random sampling) created without one: CNTK's worker-specific rule
// count * next_random_seed() + rank, so that workers draw different masks while parameter initialisers
// (next_random_seed() alone) start every worker from the same values. Equal to next_random_seed() in
// one process.
uint64_t next_worker_random_seed();

}  // namespace ctk
