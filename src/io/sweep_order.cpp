// Block randomization of one sweep; see sweep_order.h.
#include "io/sweep_order.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "io/io_common.h"

namespace ctk::detail {

SweepOrder make_sweep_order(const std::vector<int64_t>& sequences_per_chunk, bool randomize,
                            int64_t window_chunks, uint64_t seed, int64_t sweep) {
    const int64_t num_chunks = static_cast<int64_t>(sequences_per_chunk.size());
    std::vector<int64_t> perm(static_cast<size_t>(num_chunks));
    std::iota(perm.begin(), perm.end(), int64_t{0});
    const uint64_t key = seed + static_cast<uint64_t>(sweep);
    if (randomize) {
        PhiloxInts rng(key, 0);
        for (int64_t i = num_chunks - 1; i > 0; --i)
            std::swap(perm[size_t(i)], perm[size_t(rng.below(uint64_t(i) + 1))]);
    }
    // begin[k]: the first position of shuffled chunk k; slot[p]: the shuffled chunk position p lies in.
    std::vector<int64_t> begin(size_t(num_chunks) + 1, 0);
    for (int64_t k = 0; k < num_chunks; ++k)
        begin[size_t(k) + 1] = begin[size_t(k)] + sequences_per_chunk[size_t(perm[size_t(k)])];
    const int64_t n = begin.back();
    std::vector<int32_t> slot(static_cast<size_t>(n));
    for (int64_t k = 0; k < num_chunks; ++k)
        std::fill(slot.begin() + begin[size_t(k)], slot.begin() + begin[size_t(k) + 1],
                  static_cast<int32_t>(k));
    // item[p]: the position (in the unshuffled-within-chunks layout) of the sequence placed at p.
    std::vector<int64_t> item(static_cast<size_t>(n));
    std::iota(item.begin(), item.end(), int64_t{0});
    if (randomize) {
        const int64_t w = std::max<int64_t>(1, window_chunks);
        const int64_t lo = (w - 1) / 2, hi = w / 2;
        PhiloxInts rng(key, 1);
        for (int64_t p = 0; p < n; ++p) {
            const int64_t k = slot[size_t(p)];
            const int64_t origin_p = slot[size_t(item[size_t(p)])];
            // Positions j >= p whose slot keeps the sequence now at p inside its window, and the other way.
            const int64_t last_slot = std::min({num_chunks - 1, k + hi, origin_p + lo});
            const int64_t span = begin[size_t(last_slot) + 1] - p;
            if (span <= 1) continue;
            // With an odd window every candidate fits; with an even one a few draws may be rejected.
            for (int attempt = 0; attempt < 16; ++attempt) {
                const int64_t j = p + static_cast<int64_t>(rng.below(uint64_t(span)));
                const int64_t origin_j = slot[size_t(item[size_t(j)])];
                if (origin_j >= k - lo && origin_j <= k + hi) {
                    std::swap(item[size_t(p)], item[size_t(j)]);
                    break;
                }
            }
        }
    }
    SweepOrder order;
    order.chunk.resize(size_t(n));
    order.index.resize(size_t(n));
    order.last_use.assign(size_t(num_chunks), -1);
    for (int64_t p = 0; p < n; ++p) {
        const int64_t x = item[size_t(p)];
        const int64_t k = slot[size_t(x)];
        const int64_t c = perm[size_t(k)];
        order.chunk[size_t(p)] = c;
        order.index[size_t(p)] = x - begin[size_t(k)];
        order.last_use[size_t(c)] = p;
    }
    return order;
}

}  // namespace ctk::detail
