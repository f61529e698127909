#include "io/task_pool.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>

#include "ctk/core/error.h"

namespace ctk::detail {

TaskPool::TaskPool(int threads) {
    CTK_CHECK(threads >= 1, ValueError, "TaskPool: ", threads, " threads; at least one is needed");
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { run(); });
}

TaskPool::~TaskPool() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
}

void TaskPool::submit(std::function<void()> task) {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        queue_.push_back(std::move(task));
    }
    cv_.notify_one();
}

void TaskPool::run() {
    std::unique_lock<std::mutex> lock(mutex_);
    for (;;) {
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and nothing left
        std::function<void()> task = std::move(queue_.front());
        queue_.pop_front();
        lock.unlock();
        task();
        lock.lock();
    }
}

void TaskPool::parallel_for(int64_t n, const std::function<void(int64_t)>& fn) {
    if (n <= 0) return;
    struct Shared {
        std::atomic<int64_t> next{0};
        int64_t n = 0;
        std::mutex mutex;
        std::condition_variable cv;
        int64_t done = 0;
        std::exception_ptr error;
        const std::function<void(int64_t)>* fn = nullptr;
        // Takes indices until none is left; counts the ones this thread finished.
        void work() {
            int64_t finished = 0;
            std::exception_ptr err;
            for (int64_t i; (i = next.fetch_add(1)) < n; ++finished) {
                try {
                    if (!err) (*fn)(i);
                } catch (...) {
                    err = std::current_exception();
                }
            }
            std::lock_guard<std::mutex> lock(mutex);
            if (err && !error) error = err;
            done += finished;
            if (done == n) cv.notify_all();
        }
    };
    auto shared = std::make_shared<Shared>();
    shared->n = n;
    shared->fn = &fn;
    const int64_t helpers = std::min<int64_t>(n - 1, size());
    for (int64_t h = 0; h < helpers; ++h) submit([shared] { shared->work(); });
    shared->work();
    std::unique_lock<std::mutex> lock(shared->mutex);
    shared->cv.wait(lock, [&] { return shared->done == n; });
    if (shared->error) std::rethrow_exception(shared->error);
}

int default_reader_threads() {
    if (const char* env = std::getenv("CTK_READER_THREADS")) {
        const int n = std::atoi(env);
        CTK_CHECK(n >= 1 && n <= 256, ValueError, "CTK_READER_THREADS is '", env, "'; it must be 1..256");
        return n;
    }
    const unsigned cores = std::thread::hardware_concurrency();
    return static_cast<int>(std::clamp<unsigned>(cores, 1, 16));
}

}  // namespace ctk::detail
