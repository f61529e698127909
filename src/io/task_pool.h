// The readers' worker threads: decoding chunks ahead and transforming a minibatch's images in parallel.
// Separate from the kernels' OpenMP pool on purpose: the reader works while a training step runs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ctk::detail {

class TaskPool {
public:
    explicit TaskPool(int threads);  // threads >= 1
    ~TaskPool();                     // finishes the queued tasks first
    TaskPool(const TaskPool&) = delete;
    TaskPool& operator=(const TaskPool&) = delete;

    int size() const { return static_cast<int>(threads_.size()); }
    // Queues `task` (first in, first out). Tasks must not throw.
    void submit(std::function<void()> task);
    // fn(i) for every i in [0, n), on the pool's threads and the caller's; returns when all are done and
    // rethrows the first exception. The caller takes part, so this progresses behind a full queue.
    void parallel_for(int64_t n, const std::function<void(int64_t)>& fn);

private:
    void run();

    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> queue_;
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

// The number of reader threads: CTK_READER_THREADS when set, else the machine's cores (at most 16).
int default_reader_threads();

}  // namespace ctk::detail
