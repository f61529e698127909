// A cache of parsed chunks, read ahead on the reader's threads. Chunk c of the source is chunk c of every
// deserializer, their streams side by side. get() always returns the same data whether a chunk came from
// a reader thread or was read on the caller's, so the minibatches never depend on threading.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "ctk/io.h"
#include "io/task_pool.h"

namespace ctk::detail {

using ChunkData = std::vector<std::vector<SequenceData>>;  // [sequence][stream]
using ChunkPtr = std::shared_ptr<const ChunkData>;

class ChunkLoader {
public:
    // pool: the threads that read ahead (nullptr: chunks are read on get() only).
    ChunkLoader(std::vector<DeserializerPtr> deserializers, TaskPool* pool);
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
        std::mutex mutex;
        std::condition_variable done_cv;
        std::map<int64_t, Entry> entries;
        std::deque<int64_t> queue;
        bool stopped = false;

        ChunkPtr load(int64_t chunk) const;
        // Loads `chunk` with the lock released, then records it as ready or failed and wakes the waiters.
        void load_into_entry(std::unique_lock<std::mutex>& lock, int64_t chunk);
        void run_one();  // a reader thread's task: the oldest queued chunk, if any
    };

    std::shared_ptr<Shared> shared_;
    TaskPool* pool_;
};

}  // namespace ctk::detail
