// The order in which one sweep visits the sequences (CNTK's block randomizer, ReaderLib/BlockRandomizer):
// the chunks are shuffled, then each sequence may move anywhere inside a window of chunks around its own,
// so only about `window` chunks are needed in memory at any point of the sweep.
#pragma once

#include <cstdint>
#include <vector>

namespace ctk::detail {

struct SweepOrder {
    std::vector<int64_t> chunk;     // per position in the sweep: the chunk of the sequence
    std::vector<int64_t> index;     // and its index inside that chunk
    std::vector<int64_t> last_use;  // per chunk: the last position that reads it
    int64_t size() const { return static_cast<int64_t>(chunk.size()); }
};

// `sequences_per_chunk[c]` sequences in chunk c. randomize=false gives file order. Otherwise the chunk
// order is a Fisher-Yates shuffle keyed by seed + sweep (the seed goes up by one per sweep, as in CNTK),
// and the sequence at position p (inside shuffled chunk k) is drawn from the sequences of shuffled chunks
// [k - (window-1)/2, k + window/2] not yet placed. A pure function of its arguments.
SweepOrder make_sweep_order(const std::vector<int64_t>& sequences_per_chunk, bool randomize,
                            int64_t window_chunks, uint64_t seed, int64_t sweep);

}  // namespace ctk::detail
