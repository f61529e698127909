// Thread-count control shared by ctk, oneDNN and OpenBLAS.
#include "ctk/parallel.h"

#include <cblas.h>

#include <atomic>

#include "ctk/error.h"

namespace ctk {

namespace {
std::atomic<int> g_threads{0};
}

int num_threads() {
    int n = g_threads.load(std::memory_order_relaxed);
    return n > 0 ? n : omp_get_max_threads();
}

void set_num_threads(int n) {
    CTK_CHECK(n >= 1, ValueError, "set_num_threads: thread count must be >= 1, got ", n);
    g_threads.store(n, std::memory_order_relaxed);
    omp_set_num_threads(n);       // oneDNN's OpenMP runtime reads this
    openblas_set_num_threads(n);  // OpenBLAS keeps its own count
}

}  // namespace ctk
