// The CPU's one entry for dense matrix products: C = alpha op(A) op(B) + beta C, row-major, with leading
// dimensions. f32 goes to the library cpu_info's route picks (OpenBLAS or oneDNN's sgemm, whose code is
// generated for this CPU's ISA); f64 always to OpenBLAS. Inside an OpenMP region both run single-threaded.
#pragma once

#include <cstdint>

#include "ctk/kernels/cpu_info.h"

namespace ctk::cpu {

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc);

// f32 products of this many multiply-adds or more go to oneDNN, smaller ones to OpenBLAS (the maximum of
// long long on the OpenBLAS route); cached, set_cpu_gemm clears the cache.
long long onednn_gemm_threshold();
// The library of large f32 products now: onednn when onednn_gemm_threshold() is finite.
CpuGemm gemm_route();

}  // namespace ctk::cpu
