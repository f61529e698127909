// Each CPU GEMM route against a float64 reference: odd shapes on both sides of the oneDNN size
// threshold, every transpose, leading dimensions wider than the matrix, alpha and beta; the routes agree
// to f32 rounding, and a route repeats its own result to the bit.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ctk/core/tensor.h"
#include "ctk/kernels/cpu_info.h"
#include "ctk/kernels/tensor_ops.h"
#include "kernels/cpu/gemm.h"

using namespace ctk;

namespace {

struct Problem {
    int64_t m, n, k;
    bool ta, tb;
    int64_t pad;  // extra columns in every leading dimension
    float alpha, beta;
};

// Runs `p` on the current route; returns C and checks it against float64.
std::vector<float> run_and_check(const Problem& p, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    const int64_t a_rows = p.ta ? p.k : p.m, a_cols = p.ta ? p.m : p.k;
    const int64_t b_rows = p.tb ? p.n : p.k, b_cols = p.tb ? p.k : p.n;
    const int64_t lda = a_cols + p.pad, ldb = b_cols + p.pad, ldc = p.n + p.pad;
    std::vector<float> a(static_cast<size_t>(a_rows * lda)), b(static_cast<size_t>(b_rows * ldb)),
        c(static_cast<size_t>(p.m * ldc));
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    for (float& v : c) v = dist(rng);
    const std::vector<float> c0 = c;
    cpu::gemm(p.ta, p.tb, p.m, p.n, p.k, p.alpha, a.data(), lda, b.data(), ldb, p.beta, c.data(), ldc);
    auto at = [&](int64_t i, int64_t l) {
        return double(p.ta ? a[size_t(l * lda + i)] : a[size_t(i * lda + l)]);
    };
    auto bt = [&](int64_t l, int64_t j) {
        return double(p.tb ? b[size_t(j * ldb + l)] : b[size_t(l * ldb + j)]);
    };
    for (int64_t i = 0; i < p.m; ++i)
        for (int64_t j = 0; j < ldc; ++j) {
            const size_t idx = size_t(i * ldc + j);
            if (j >= p.n) {  // padding is never written
                EXPECT_EQ(c[idx], c0[idx]);
                continue;
            }
            double sum = 0, mag = 0;
            for (int64_t l = 0; l < p.k; ++l) {
                sum += at(i, l) * bt(l, j);
                mag += std::abs(at(i, l) * bt(l, j));
            }
            const double want = p.alpha * sum + p.beta * double(c0[idx]);
            const double tol = 1e-6 * (std::abs(p.alpha) * mag + std::abs(p.beta * c0[idx])) * 4 + 1e-7;
            EXPECT_NEAR(c[idx], want, tol)
                << "m=" << p.m << " n=" << p.n << " k=" << p.k << " at " << i << "," << j;
        }
    return c;
}

const Problem kProblems[] = {
    {1, 1, 1, false, false, 0, 1.f, 0.f},     {3, 5, 7, false, true, 2, 1.f, 0.f},
    {17, 9, 33, true, false, 1, 0.5f, 1.f},   {33, 65, 31, true, true, 3, 1.f, 0.f},
    {64, 200, 78, false, false, 0, 1.f, 0.f}, {65, 97, 129, false, true, 5, -2.f, 0.25f},
    {129, 31, 257, true, false, 0, 1.f, 1.f}, {40, 70, 0, false, false, 1, 1.f, 0.5f},
    {100, 1, 300, true, true, 0, 1.f, 0.f},   {1, 300, 100, false, false, 4, 1.f, 1.f},
};

class RouteGuard {
public:
    explicit RouteGuard(CpuGemm g) { set_cpu_gemm(g); }
    ~RouteGuard() { set_cpu_gemm(CpuGemm::automatic); }
};

}  // namespace

TEST(CpuGemm, EveryRouteMatchesFloat64) {
    for (CpuGemm route : {CpuGemm::openblas, CpuGemm::onednn, CpuGemm::automatic}) {
        RouteGuard guard(route);
        EXPECT_EQ(cpu::gemm_route(), route == CpuGemm::automatic ? cpu_gemm_choice().library : route);
        uint32_t seed = 1;
        for (const Problem& p : kProblems) {
            SCOPED_TRACE(to_string(route));
            run_and_check(p, seed++);
        }
    }
}

TEST(CpuGemm, RoutesAgreeToRoundingAndRepeatToTheBit) {
    for (const Problem& p : kProblems) {
        std::vector<float> blas, dnn, again;
        {
            RouteGuard guard(CpuGemm::openblas);
            blas = run_and_check(p, 7);
        }
        {
            RouteGuard guard(CpuGemm::onednn);
            dnn = run_and_check(p, 7);
            again = run_and_check(p, 7);
        }
        EXPECT_EQ(dnn, again) << "m=" << p.m;
        ASSERT_EQ(blas.size(), dnn.size());
        for (size_t i = 0; i < blas.size(); ++i)
            EXPECT_NEAR(blas[i], dnn[i], 1e-5 * (1 + std::abs(blas[i]) + double(p.k) * 0.01)) << i;
    }
}

TEST(CpuGemm, MatmulOnStridedViewsOnEachRoute) {
    // A transposed, sliced view and a transposed operand reach the matmul kernel as leading dimensions or
    // flipped transposes; both routes give the float64 product.
    std::mt19937 rng(3);
    std::uniform_real_distribution<double> dist(-1, 1);
    Tensor a = Tensor::empty(Shape{70, 90}), b = Tensor::empty(Shape{80, 70});
    for (Tensor* t : {&a, &b})
        for (int64_t i = 0; i < t->numel(); ++i) t->data<float>()[i] = static_cast<float>(dist(rng));
    const Tensor at = a.transpose(0, 1).slice(0, 5, 85);  // [80, 70], strided
    const Tensor want = matmul(at.to(DataType::f64), b.to(DataType::f64), false, true);
    for (CpuGemm route : {CpuGemm::openblas, CpuGemm::onednn}) {
        RouteGuard guard(route);
        const Tensor got = matmul(at, b, false, true);  // [80, 80]
        ASSERT_EQ(got.shape(), want.shape());
        const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
        for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], 1e-4) << to_string(route) << " " << i;
    }
}
