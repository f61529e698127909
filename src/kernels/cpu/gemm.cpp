// The routed CPU GEMM (gemm.h).
#include "kernels/cpu/gemm.h"

#include <cblas.h>

#include <dnnl.hpp>

#include "ctk/core/error.h"

namespace ctk::cpu {

namespace {
CBLAS_TRANSPOSE blas_trans(bool t) {
    return t ? CblasTrans : CblasNoTrans;
}
}  // namespace

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
    if (m == 0 || n == 0) return;
    if (m * n * k >= onednn_gemm_threshold()) {
        const dnnl_status_t status = dnnl_sgemm(trans_a ? 'T' : 'N', trans_b ? 'T' : 'N', m, n, k, alpha, a,
                                                lda, b, ldb, beta, c, ldc);
        CTK_CHECK(status == dnnl_success, Error, "oneDNN sgemm failed (status ", static_cast<int>(status),
                  ") for m=", m, " n=", n, " k=", k, " lda=", lda, " ldb=", ldb, " ldc=", ldc);
        return;
    }
    cblas_sgemm(CblasRowMajor, blas_trans(trans_a), blas_trans(trans_b), static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
                static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

void gemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, double alpha, const double* a,
          int64_t lda, const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
    if (m == 0 || n == 0) return;
    cblas_dgemm(CblasRowMajor, blas_trans(trans_a), blas_trans(trans_b), static_cast<int>(m),
                static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
                static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
}

}  // namespace ctk::cpu
