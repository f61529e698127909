// The chunk cache and its read-ahead; see chunk_loader.h.
#include "io/chunk_loader.h"

#include <algorithm>

#include "ctk/error.h"

namespace ctk::detail {

ChunkLoader::ChunkLoader(std::vector<DeserializerPtr> deserializers, TaskPool* pool)
    : shared_(std::make_shared<Shared>()), pool_(pool) {
    shared_->deserializers = std::move(deserializers);
}

ChunkLoader::~ChunkLoader() {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stopped = true;
    shared_->queue.clear();
}

ChunkPtr ChunkLoader::Shared::load(int64_t chunk) const {
    auto out = std::make_shared<ChunkData>();
    for (size_t d = 0; d < deserializers.size(); ++d) {
        const Deserializer& des = *deserializers[d];
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
    Shared& s = *shared_;
    std::unique_lock<std::mutex> lock(s.mutex);
    auto it = s.entries.find(chunk);
    if (it == s.entries.end() || it->second.state == State::queued) {
        // Not started: read it here rather than wait behind the queue.
        if (it != s.entries.end()) s.queue.erase(std::find(s.queue.begin(), s.queue.end(), chunk));
        s.load_into_entry(lock, chunk);
        Entry& e = s.entries[chunk];
        if (e.state == State::failed) {
            std::exception_ptr error = e.error;
            s.entries.erase(chunk);
            std::rethrow_exception(error);
        }
        return e.data;
    }
    s.done_cv.wait(lock, [&] {
        auto e = s.entries.find(chunk);
        return e == s.entries.end() || e->second.state == State::ready || e->second.state == State::failed;
    });
    it = s.entries.find(chunk);
    if (it == s.entries.end()) {  // a concurrent get() failed on it; try again here
        lock.unlock();
        return get(chunk);
    }
    if (it->second.state == State::failed) {
        std::exception_ptr error = it->second.error;
        s.entries.erase(it);
        std::rethrow_exception(error);
    }
    return it->second.data;
}

void ChunkLoader::prefetch(int64_t chunk) {
    if (!pool_) return;
    {
        std::lock_guard<std::mutex> lock(shared_->mutex);
        if (shared_->entries.count(chunk)) return;
        shared_->entries[chunk].state = State::queued;
        shared_->queue.push_back(chunk);
    }
    pool_->submit([shared = shared_] { shared->run_one(); });
}

void ChunkLoader::evict(const std::function<bool(int64_t)>& drop) {
    Shared& s = *shared_;
    std::lock_guard<std::mutex> lock(s.mutex);
    for (auto it = s.entries.begin(); it != s.entries.end();) {
        if (it->second.state != State::loading && drop(it->first)) {
            if (it->second.state == State::queued)
                s.queue.erase(std::find(s.queue.begin(), s.queue.end(), it->first));
            it = s.entries.erase(it);
        } else {
            ++it;
        }
    }
}

void ChunkLoader::Shared::run_one() {
    std::unique_lock<std::mutex> lock(mutex);
    if (stopped || queue.empty()) return;
    const int64_t chunk = queue.front();
    queue.pop_front();
    load_into_entry(lock, chunk);
}

void ChunkLoader::Shared::load_into_entry(std::unique_lock<std::mutex>& lock, int64_t chunk) {
    entries[chunk].state = State::loading;
    lock.unlock();
    ChunkPtr data;
    std::exception_ptr error;
    try {
        data = load(chunk);
    } catch (...) {
        error = std::current_exception();
    }
    lock.lock();
    Entry& e = entries[chunk];
    e.state = error ? State::failed : State::ready;
    e.data = std::move(data);
    e.error = error;
    done_cv.notify_all();
}

}  // namespace ctk::detail
