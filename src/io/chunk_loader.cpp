// The chunk cache and its prefetch worker; see chunk_loader.h.
#include "io/chunk_loader.h"

#include <algorithm>

#include "ctk/error.h"

namespace ctk::detail {

ChunkLoader::ChunkLoader(std::vector<DeserializerPtr> deserializers, bool threaded)
    : deserializers_(std::move(deserializers)), threaded_(threaded) {
    if (threaded_) worker_ = std::thread([this] { run_worker(); });
}

ChunkLoader::~ChunkLoader() {
    if (!threaded_) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    work_cv_.notify_all();
    worker_.join();
}

ChunkPtr ChunkLoader::load(int64_t chunk) const {
    auto out = std::make_shared<ChunkData>();
    for (size_t d = 0; d < deserializers_.size(); ++d) {
        const Deserializer& des = *deserializers_[d];
        std::vector<std::vector<SequenceData>> part = des.read_chunk(chunk);
        CTK_CHECK(static_cast<int64_t>(part.size()) == des.chunk_num_sequences(chunk), IOError,
                  des.description(), ": chunk ", chunk, " read ", part.size(), " sequences, its index says ",
                  des.chunk_num_sequences(chunk));
        if (d == 0) {
            *out = std::move(part);
            continue;
        }
        for (size_t i = 0; i < part.size(); ++i)
            (*out)[i].insert((*out)[i].end(), std::make_move_iterator(part[i].begin()),
                             std::make_move_iterator(part[i].end()));
    }
    return out;
}

ChunkPtr ChunkLoader::get(int64_t chunk) {
    std::unique_lock<std::mutex> lock(mutex_);
    auto it = entries_.find(chunk);
    if (it == entries_.end() || it->second.state == State::queued) {
        // Not started: read it here rather than wait behind the worker's queue.
        if (it != entries_.end()) queue_.erase(std::find(queue_.begin(), queue_.end(), chunk));
        load_into_entry(lock, chunk);
        Entry& e = entries_[chunk];
        if (e.state == State::failed) {
            std::exception_ptr error = e.error;
            entries_.erase(chunk);
            std::rethrow_exception(error);
        }
        return e.data;
    }
    done_cv_.wait(lock, [&] {
        auto e = entries_.find(chunk);
        return e == entries_.end() || e->second.state == State::ready || e->second.state == State::failed;
    });
    it = entries_.find(chunk);
    if (it == entries_.end()) {  // a concurrent get() failed on it; try again here
        lock.unlock();
        return get(chunk);
    }
    if (it->second.state == State::failed) {
        std::exception_ptr error = it->second.error;
        entries_.erase(it);
        std::rethrow_exception(error);
    }
    return it->second.data;
}

void ChunkLoader::prefetch(int64_t chunk) {
    if (!threaded_) return;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        if (entries_.count(chunk)) return;
        entries_[chunk].state = State::queued;
        queue_.push_back(chunk);
    }
    work_cv_.notify_one();
}

void ChunkLoader::evict(const std::function<bool(int64_t)>& drop) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto it = entries_.begin(); it != entries_.end();) {
        if (it->second.state != State::loading && drop(it->first)) {
            if (it->second.state == State::queued)
                queue_.erase(std::find(queue_.begin(), queue_.end(), it->first));
            it = entries_.erase(it);
        } else {
            ++it;
        }
    }
}

void ChunkLoader::run_worker() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        const int64_t chunk = queue_.front();
        queue_.pop_front();
        load_into_entry(lock, chunk);
    }
}

void ChunkLoader::load_into_entry(std::unique_lock<std::mutex>& lock, int64_t chunk) {
    entries_[chunk].state = State::loading;
    lock.unlock();
    ChunkPtr data;
    std::exception_ptr error;
    try {
        data = load(chunk);
    } catch (...) {
        error = std::current_exception();
    }
    lock.lock();
    Entry& e = entries_[chunk];
    e.state = error ? State::failed : State::ready;
    e.data = std::move(data);
    e.error = error;
    done_cv_.notify_all();
}

}  // namespace ctk::detail
