// A cache of parsed chunks, read ahead on the reader's threads. Chunk c of the source is chunk c of the
// first deserializer; the others' streams join it side by side, chunk by chunk when they are chunked
// alike, else by sequence key (CNTK's composition: the same key is the same sample). get() always
// returns the same data whether a chunk came from a reader thread or was read on the caller's, so the
// minibatches never depend on threading.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctk/io.h"
#include "io/task_pool.h"

namespace ctk::detail {

using ChunkData = std::vector<std::vector<SequenceData>>;  // [sequence][stream]
using ChunkPtr = std::shared_ptr<const ChunkData>;

// Where each sequence key of a deserializer is: (chunk, index in the chunk).
using KeyIndex = std::unordered_map<std::string, std::pair<int64_t, int64_t>>;
// The key index of `d`, built from sequence_keys(); ValueError naming `d` when it has no keys or a key
// twice.
std::shared_ptr<const KeyIndex> build_key_index(const Deserializer& d);

class ChunkLoader {
public:
    // pool: the threads that read ahead (nullptr: chunks are read on get() only). by_key: the
    // deserializers after the first are joined by sequence key (their key indexes), else chunk by chunk.
    ChunkLoader(std::vector<DeserializerPtr> deserializers, TaskPool* pool,
                std::vector<std::shared_ptr<const KeyIndex>> by_key = {});
    ~ChunkLoader();  // drops the queue; reads in flight finish on their own
    ChunkLoader(const ChunkLoader&) = delete;
    ChunkLoader& operator=(const ChunkLoader&) = delete;

    // The chunk's data; reads it on this thread unless a reader thread already has it or is reading it.
    // Rethrows the exception of a failed read (a reader thread's included).
    ChunkPtr get(int64_t chunk);
    // Queues `chunk` for a reader thread (no-op without a pool or when it is cached or queued).
    void prefetch(int64_t chunk);
    // Drops the cached or queued chunks for which `drop` is true (chunks being read stay).
    void evict(const std::function<bool(int64_t)>& drop);

private:
    enum class State { queued, loading, ready, failed };
    struct Entry {
        State state = State::queued;
        ChunkPtr data;
        std::exception_ptr error;
    };
    // Everything a queued task touches, shared with the tasks so that they outlive the loader safely.
    struct Shared {
        std::vector<DeserializerPtr> deserializers;
        std::vector<std::shared_ptr<const KeyIndex>> keys;  // [deserializer]; empty: chunk by chunk
        // The joined deserializers' chunks last read (a few: a key join reads them in any order).
        std::mutex joined_mutex;
        std::deque<std::pair<std::pair<size_t, int64_t>, ChunkPtr>> joined;
        std::atomic<bool> warned_missing{false};
        std::mutex mutex;
        std::condition_variable done_cv;
        std::map<int64_t, Entry> entries;
        std::deque<int64_t> queue;
        bool stopped = false;

        ChunkPtr load(int64_t chunk);
        ChunkPtr joined_chunk(size_t d, int64_t chunk);
        // Loads `chunk` with the lock released, then records it as ready or failed and wakes the waiters.
        void load_into_entry(std::unique_lock<std::mutex>& lock, int64_t chunk);
        void run_one();  // a reader thread's task: the oldest queued chunk, if any
    };

    std::shared_ptr<Shared> shared_;
    TaskPool* pool_;
};

}  // namespace ctk::detail
