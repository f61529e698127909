// The chunk cache and its read-ahead; see chunk_loader.h.
#include "io/chunk_loader.h"

#include <algorithm>
#include <cstdio>

#include "ctk/core/error.h"

namespace ctk::detail {

ChunkLoader::ChunkLoader(std::vector<DeserializerPtr> deserializers, TaskPool* pool,
                         std::vector<std::shared_ptr<const KeyIndex>> by_key)
    : shared_(std::make_shared<Shared>()), pool_(pool) {
    shared_->deserializers = std::move(deserializers);
    shared_->keys = std::move(by_key);
}

std::shared_ptr<const KeyIndex> build_key_index(const Deserializer& d) {
    auto index = std::make_shared<KeyIndex>();
    for (int64_t c = 0; c < d.num_chunks(); ++c) {
        const std::vector<std::string> keys = d.sequence_keys(c);
        CTK_CHECK(static_cast<int64_t>(keys.size()) == d.chunk_num_sequences(c), ValueError,
                  "MinibatchSource: ", d.description(),
                  " is chunked unlike the first deserializer and has no sequence keys to be "
                  "joined by");
        for (size_t i = 0; i < keys.size(); ++i)
            CTK_CHECK(index->emplace(keys[i], std::pair{c, int64_t(i)}).second, ValueError,
                      "MinibatchSource: ", d.description(), " has the sequence key '", keys[i],
                      "' twice; keys join deserializers");
    }
    return index;
}

ChunkPtr ChunkLoader::Shared::joined_chunk(size_t d, int64_t chunk) {
    {
        std::lock_guard<std::mutex> lock(joined_mutex);
        for (const auto& [key, data] : joined)
            if (key == std::pair{d, chunk}) return data;
    }
    auto data = std::make_shared<ChunkData>(deserializers[d]->read_chunk(chunk));
    for (size_t i = 0; i < data->size(); ++i)
        for (SequenceData& s : (*data)[i]) s.chunk = chunk, s.index = int64_t(i);
    std::lock_guard<std::mutex> lock(joined_mutex);
    joined.emplace_back(std::pair{d, chunk}, data);
    if (joined.size() > 8) joined.pop_front();
    return data;
}

ChunkLoader::~ChunkLoader() {
    std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stopped = true;
    shared_->queue.clear();
}

ChunkPtr ChunkLoader::Shared::load(int64_t chunk) {
    auto out = std::make_shared<ChunkData>();
    std::vector<std::string> keys;
    for (size_t d = 0; d < deserializers.size(); ++d) {
        const Deserializer& des = *deserializers[d];
        if (d > 0 && !keys.empty()) {
            // Joined by key: each sequence's streams from the chunk that holds its key; a key the
            // deserializer lacks drops the sequence (with one warning).
            const KeyIndex& index = *this->keys[d];
            for (size_t i = 0; i < out->size(); ++i) {
                auto& row = (*out)[i];
                auto at = index.find(keys[i]);
                if (at == index.end()) {
                    for (size_t s = 0; s < des.streams().size(); ++s)
                        row.push_back(SequenceData{{}, {}, true, -1, -1});
                    for (SequenceData& s : row) s.skip = true;
                    if (!warned_missing.exchange(true))
                        std::fprintf(stderr,
                                     "WARNING: %s has no sequence with the key '%s'; such sequences are "
                                     "skipped (warned once)\n",
                                     des.description().c_str(), keys[i].c_str());
                    continue;
                }
                const ChunkPtr part = joined_chunk(d, at->second.first);
                const auto& src = (*part)[size_t(at->second.second)];
                row.insert(row.end(), src.begin(), src.end());
            }
            continue;
        }
        std::vector<std::vector<SequenceData>> part = des.read_chunk(chunk);
        CTK_CHECK(static_cast<int64_t>(part.size()) == des.chunk_num_sequences(chunk), IOError,
                  des.description(), ": chunk ", chunk, " read ", part.size(), " sequences, its index says ",
                  des.chunk_num_sequences(chunk));
        for (size_t i = 0; i < part.size(); ++i)
            for (SequenceData& s : part[i]) s.chunk = chunk, s.index = int64_t(i);
        if (d == 0) {
            *out = std::move(part);
            if (this->keys.size() > 1) keys = des.sequence_keys(chunk);
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
