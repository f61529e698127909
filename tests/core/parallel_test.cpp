// parallel_for covers every index exactly once; set_num_threads validates and applies.
#include <gtest/gtest.h>

#include <atomic>
#include <vector>

#include "ctk/error.h"
#include "ctk/parallel.h"

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
