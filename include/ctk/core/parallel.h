// The one CPU thread pool. ctk's kernels, oneDNN (built on OpenMP in Debian) and OpenBLAS (the OpenMP
// variant) all run on libgomp's threads, so set_num_threads() governs all three and nothing
// oversubscribes. Work splitting never depends on timing, so results are reproducible.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace ctk {

// Number of threads used by parallel regions (ctk kernels, oneDNN, OpenBLAS).
int num_threads();
// Sets the thread count for ctk, oneDNN and OpenBLAS together; n >= 1, else ValueError.
void set_num_threads(int n);

// Denormal floats make x86 arithmetic 10-100x slower: the MNIST ConvNet's first-layer backward-weights
// took 374 ms instead of 4 ms per call once its gradients underflowed. Like TensorFlow, ctk flushes
// them to zero (FTZ and DAZ) on the threads that run its kernels, by default; set_flush_denormals(false)
// or CTK_FLUSH_DENORMALS=0 keeps IEEE gradual underflow (bit-identical to a machine without flushing).
void set_flush_denormals(bool flush);
bool flush_denormals();
namespace detail {
// Applies the denormal mode on the calling thread and the pool if it changed since this thread last
// did; called by the kernel dispatcher (cheap: one thread-local compare).
void ensure_float_mode();
}  // namespace detail

// Sets the thread count for a scope and restores the previous count when the scope ends.
class ScopedNumThreads {
public:
    explicit ScopedNumThreads(int n) : saved_(num_threads()) { set_num_threads(n); }
    ~ScopedNumThreads() { set_num_threads(saved_); }
    ScopedNumThreads(const ScopedNumThreads&) = delete;
    ScopedNumThreads& operator=(const ScopedNumThreads&) = delete;

private:
    int saved_;
};

// Splits [begin, end) into at most num_threads() contiguous chunks of at least `grain` items and
// calls fn(chunk_begin, chunk_end) on each, in parallel. Runs inline when the range is small or when
// already inside a parallel region.
template <typename Fn>
void parallel_for(int64_t begin, int64_t end, int64_t grain, Fn&& fn) {
    int64_t n = end - begin;
    if (n <= 0) return;
    grain = std::max<int64_t>(grain, 1);
    int threads = omp_in_parallel() ? 1 : num_threads();
    int64_t chunks = std::min<int64_t>(threads, (n + grain - 1) / grain);
    if (chunks <= 1) {
        fn(begin, end);
        return;
    }
    const int team = static_cast<int>(chunks);
#pragma omp parallel for num_threads(team) schedule(static, 1)
    for (int64_t c = 0; c < chunks; ++c) {
        int64_t b = begin + n * c / chunks, e = begin + n * (c + 1) / chunks;
        fn(b, e);
    }
}

}  // namespace ctk
