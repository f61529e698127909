// A cache of parsed chunks with an optional prefetch worker. Chunk c of the source is chunk c of every
// deserializer, their streams side by side. get() always returns the same data whether a chunk came from
// the worker or was read on the caller's thread, so the minibatches never depend on threading.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ctk/io.h"

namespace ctk::detail {

using ChunkData = std::vector<std::vector<SequenceData>>;  // [sequence][stream]
using ChunkPtr = std::shared_ptr<const ChunkData>;

class ChunkLoader {
public:
    ChunkLoader(std::vector<DeserializerPtr> deserializers, bool threaded);
    ~ChunkLoader();
    ChunkLoader(const ChunkLoader&) = delete;
    ChunkLoader& operator=(const ChunkLoader&) = delete;

    // The chunk's data; reads it on this thread unless the worker already has it or is reading it.
    // Rethrows the exception of a failed read (the worker's included).
    ChunkPtr get(int64_t chunk);
    // Asks the worker to read `chunk` ahead (no-op without a worker or when it is cached).
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

    ChunkPtr load(int64_t chunk) const;
    // Loads `chunk` with the lock released, then records it as ready or failed and wakes the waiters.
    void load_into_entry(std::unique_lock<std::mutex>& lock, int64_t chunk);
    void run_worker();

    std::vector<DeserializerPtr> deserializers_;
    bool threaded_;
    std::mutex mutex_;
    std::condition_variable work_cv_, done_cv_;
    std::map<int64_t, Entry> entries_;
    std::deque<int64_t> queue_;
    bool stop_ = false;
    std::thread worker_;
};

}  // namespace ctk::detail
