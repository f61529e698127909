// parallel_for covers every index exactly once; set_num_threads validates and applies.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "ctk/core/error.h"
#include "ctk/core/parallel.h"
#include "ctk/kernels/tensor_ops.h"

using namespace ctk;

TEST(Parallel, CoversRangeOnce) {
    for (int threads : {1, 2, 3}) {
        set_num_threads(threads);
        EXPECT_EQ(num_threads(), threads);
        std::vector<std::atomic<int>> hits(10007);
        parallel_for(0, 10007, 100, [&](int64_t b, int64_t e) {
            for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
        });
        for (auto& h : hits) ASSERT_EQ(h.load(), 1);
    }
    parallel_for(5, 5, 1, [](int64_t, int64_t) { FAIL(); });
    EXPECT_THROW(set_num_threads(0), ValueError);
}

TEST(Parallel, DenormalsFlushByDefaultAndCanBeKept) {
    // 1e-30f * 1e-10f = 1e-40f is below FLT_MIN (1.2e-38): a denormal, flushed to 0 unless asked not to.
    Tensor a = Tensor::full(Shape{4096}, 1e-30), b = Tensor::full(Shape{4096}, 1e-10);
    EXPECT_TRUE(flush_denormals());
    for (int threads : {1, 2}) {
        set_num_threads(threads);
        EXPECT_EQ(element_times(a, b).to_vector<float>(), std::vector<float>(4096, 0.0f));
    }
    set_flush_denormals(false);
    for (float v : element_times(a, b).to_vector<float>()) EXPECT_NEAR(v, 1e-40f, 1e-44f);
    set_flush_denormals(true);
    EXPECT_EQ(element_times(a, b).to_vector<float>(), std::vector<float>(4096, 0.0f));
}
