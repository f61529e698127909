// Philox4x32-10 and the Generator fills. Each element owns one counter; Box-Muller uses only its cosine
// branch so that an element never depends on a neighbour.
#include "ctk/core/rng.h"

#include <cmath>

#include "ctk/core/parallel.h"

namespace ctk {

std::array<uint32_t, 4> philox4x32(std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
    // Round multipliers and key schedule constants from the Philox paper (Salmon et al., 2011).
    constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
    constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
    for (int round = 0; round < 10; ++round) {
        uint64_t p0 = static_cast<uint64_t>(kMul0) * c[0];
        uint64_t p1 = static_cast<uint64_t>(kMul1) * c[2];
        c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
             static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
        k[0] += kWeyl0;
        k[1] += kWeyl1;
    }
    return c;
}

namespace {

constexpr double kTwoPi = 6.283185307179586476925286766559;

// A standard normal from one Philox block (Box-Muller, cosine branch), in double precision.
inline double normal_from_block(const std::array<uint32_t, 4>& w) {
    double u1 = uniform_double(w[0], w[1]);
    double u2 = uniform_double(w[2], w[3]);
    return std::sqrt(-2.0 * std::log1p(-u1)) * std::cos(kTwoPi * u2);  // 1 - u1 is in (0, 1]
}

// Fills `out` with value(i) for its i-th element in row-major order; writes into a contiguous
// temporary first when `out` is a strided view.
template <typename ValueOf>
void fill_elementwise(Tensor& out, const char* what, ValueOf value_of) {
    CTK_CHECK(out.defined() && is_floating(out.dtype()), TypeError, "Generator::", what,
              ": target must be a floating-point tensor, got ", out.to_string());
    CTK_CHECK(out.device().is_cpu(), NotImplementedError, "Generator::", what, ": target on ",
              out.device().to_string(), " is not supported in this build");
    Tensor dst = out.is_contiguous() ? out : Tensor::empty(out.shape(), out.dtype());
    visit_dtype(dst.dtype(), [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_floating_point_v<T> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
            T* p = static_cast<T*>(dst.raw_data());
            parallel_for(0, dst.numel(), 4096, [&](int64_t b, int64_t e) {
                for (int64_t i = b; i < e; ++i) {
                    if constexpr (std::is_same_v<T, double>) {
                        p[i] = value_of(i);
                    } else {
                        p[i] = T(static_cast<float>(value_of(i)));
                    }
                }
            });
        }
    });
    if (!out.is_contiguous()) out.copy_from(dst);
}

}  // namespace

void Generator::uniform(Tensor& out, double low, double high) {
    CTK_CHECK(low <= high, ValueError, "uniform: low ", low, " > high ", high);
    uint64_t seed = seed_, base = offset_;
    bool is_double = out.dtype() == DataType::f64;
    fill_elementwise(out, "uniform", [=](int64_t i) {
        auto w = philox_draw(seed, base + static_cast<uint64_t>(i));
        double u = is_double ? uniform_double(w[0], w[1]) : static_cast<double>(uniform_float(w[0]));
        return low + (high - low) * u;
    });
    offset_ += static_cast<uint64_t>(out.numel());
}

void Generator::normal(Tensor& out, double mean, double stddev) {
    CTK_CHECK(stddev >= 0, ValueError, "normal: stddev must be >= 0, got ", stddev);
    uint64_t seed = seed_, base = offset_;
    fill_elementwise(out, "normal", [=](int64_t i) {
        return mean + stddev * normal_from_block(philox_draw(seed, base + static_cast<uint64_t>(i)));
    });
    offset_ += static_cast<uint64_t>(out.numel());
}

void Generator::truncated_normal(Tensor& out, double mean, double stddev, double bound) {
    CTK_CHECK(stddev >= 0 && bound > 0, ValueError, "truncated_normal: need stddev >= 0 and bound > 0, got ",
              stddev, " and ", bound);
    uint64_t seed = seed_, base = offset_;
    fill_elementwise(out, "truncated_normal", [=](int64_t i) {
        // Redraw from the element's own sub-stream; 64 misses in a row has probability below 1e-80
        // for bound 2, and the clamp only guards smaller bounds.
        double z = 0;
        for (uint32_t attempt = 0; attempt < 64; ++attempt) {
            z = normal_from_block(philox_draw(seed, base + static_cast<uint64_t>(i), attempt));
            if (std::fabs(z) <= bound) break;
        }
        return mean + stddev * std::clamp(z, -bound, bound);
    });
    offset_ += static_cast<uint64_t>(out.numel());
}

void Generator::bernoulli(Tensor& out, double p) {
    CTK_CHECK(p >= 0 && p <= 1, ValueError, "bernoulli: probability must be in [0, 1], got ", p);
    uint64_t seed = seed_, base = offset_;
    fill_elementwise(out, "bernoulli", [=](int64_t i) {
        auto w = philox_draw(seed, base + static_cast<uint64_t>(i));
        return uniform_double(w[0], w[1]) < p ? 1.0 : 0.0;
    });
    offset_ += static_cast<uint64_t>(out.numel());
}

}  // namespace ctk
