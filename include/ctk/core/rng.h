// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11). Element i of a fill drawn at
// generator offset o is a pure function of (seed, o + i), so results never depend on the thread count
// or on how the work is split, and a run can be resumed by restoring (seed, offset).
#pragma once

#include <array>
#include <cstdint>

#include "ctk/core/tensor.h"

namespace ctk {

// One Philox4x32-10 block: four 32-bit outputs for a 128-bit counter and a 64-bit key.
std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> counter, std::array<uint32_t, 2> key);

class Generator {
public:
    explicit Generator(uint64_t seed = 0, uint64_t offset = 0) : seed_(seed), offset_(offset) {}

    uint64_t seed() const { return seed_; }
    uint64_t offset() const { return offset_; }  // counters consumed so far
    void set_offset(uint64_t offset) { offset_ = offset; }

    // Each fill consumes numel() counters. Targets must be floating-point CPU tensors (any strides).
    void uniform(Tensor& out, double low = 0.0, double high = 1.0);  // [low, high)
    void normal(Tensor& out, double mean = 0.0, double stddev = 1.0);
    // Normal values redrawn until inside mean +- bound*stddev (CNTK's truncated_normal uses 2).
    void truncated_normal(Tensor& out, double mean = 0.0, double stddev = 1.0, double bound = 2.0);
    void bernoulli(Tensor& out, double p);  // 1 with probability p, else 0

private:
    uint64_t seed_;
    uint64_t offset_;
};

// Draw number `attempt` for element counter `index`: four uniform 32-bit words.
inline std::array<uint32_t, 4> philox_draw(uint64_t seed, uint64_t index, uint32_t attempt = 0) {
    return philox4x32({static_cast<uint32_t>(index), static_cast<uint32_t>(index >> 32), attempt, 0},
                      {static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32)});
}

// Uniform in [0, 1) with 24 (float) or 53 (double) random bits.
inline float uniform_float(uint32_t w) {
    return static_cast<float>(w >> 8) * 0x1.0p-24f;
}
inline double uniform_double(uint32_t w0, uint32_t w1) {
    return static_cast<double>((static_cast<uint64_t>(w0) << 21) ^ (w1 >> 11)) * 0x1.0p-53;
}

}  // namespace ctk
