// Thread-count control shared by ctk, oneDNN and OpenBLAS.
#include "ctk/core/parallel.h"

#include <cblas.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#if defined(__SSE__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

#include "ctk/core/error.h"

namespace ctk {

namespace {
std::atomic<int> g_threads{0};

bool flush_from_environment() {
    const char* v = std::getenv("CTK_FLUSH_DENORMALS");
    return !(v && (std::strcmp(v, "0") == 0 || std::strcmp(v, "false") == 0));
}
std::atomic<bool> g_flush{flush_from_environment()};
// Bumped whenever the mode or the pool changes, so every thread re-applies the mode once.
std::atomic<int> g_float_mode_epoch{1};

void apply_float_mode_here(bool flush) {
#if defined(__SSE__)
    _MM_SET_FLUSH_ZERO_MODE(flush ? _MM_FLUSH_ZERO_ON : _MM_FLUSH_ZERO_OFF);
    _MM_SET_DENORMALS_ZERO_MODE(flush ? _MM_DENORMALS_ZERO_ON : _MM_DENORMALS_ZERO_OFF);
#else
    (void)flush;
#endif
}
}  // namespace

int num_threads() {
    int n = g_threads.load(std::memory_order_relaxed);
    return n > 0 ? n : omp_get_max_threads();
}

void set_num_threads(int n) {
    CTK_CHECK(n >= 1, ValueError, "set_num_threads: thread count must be >= 1, got ", n);
    g_threads.store(n, std::memory_order_relaxed);
    omp_set_num_threads(n);                                      // oneDNN's OpenMP runtime reads this
    openblas_set_num_threads(n);                                 // OpenBLAS keeps its own count
    g_float_mode_epoch.fetch_add(1, std::memory_order_relaxed);  // new pool threads need the mode too
}

void set_flush_denormals(bool flush) {
    g_flush.store(flush, std::memory_order_relaxed);
    g_float_mode_epoch.fetch_add(1, std::memory_order_relaxed);
}

bool flush_denormals() {
    return g_flush.load(std::memory_order_relaxed);
}

void detail::ensure_float_mode() {
    thread_local int applied_epoch = 0;
    const int epoch = g_float_mode_epoch.load(std::memory_order_relaxed);
    if (applied_epoch == epoch) return;
    applied_epoch = epoch;
    const bool flush = flush_denormals();
    apply_float_mode_here(flush);
    // The floating-point mode is per thread: set it on every thread of the OpenMP pool too (they
    // persist, so once per change is enough).
    if (!omp_in_parallel()) {
#pragma omp parallel num_threads(num_threads())
        apply_float_mode_here(flush);
    }
}

}  // namespace ctk
