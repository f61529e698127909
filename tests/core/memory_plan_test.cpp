// The static memory plan: a repeated run takes its blocks from one arena without calling the allocator,
// and a run that does not repeat its plan (new sizes, a block kept alive) is served safely and replanned.
#include <gtest/gtest.h>

#include <thread>

#include "ctk/core/error.h"
#include "ctk/core/memory_plan.h"
#include "ctk/core/tensor.h"
#include "ctk/kernels/tensor_ops.h"

using namespace ctk;

namespace {

int64_t cpu_allocations() {
    return cpu_allocator().stats().num_allocations;
}

// Three temporaries with overlapping lifetimes and one result that outlives the run.
Tensor work(int64_t n, double v) {
    Tensor a = Tensor::full(Shape{n}, v);
    Tensor b = Tensor::full(Shape{n}, 2 * v);
    Tensor c = plus(a, b);  // a, b die here
    return plus(c, c);      // 6 v
}

void expect_all(const Tensor& t, double v) {
    for (double x : t.to_vector<double>()) ASSERT_EQ(x, v);
}

}  // namespace

TEST(MemoryPlan, RepeatedRunsTakeNothingFromTheAllocator) {
    MemoryPlan plan;
    for (int run = 0; run < 4; ++run) {
        const int64_t before = cpu_allocations();
        Tensor out;
        {
            MemoryPlan::Scope scope(plan);
            out = work(1000, run + 1);
        }
        const int64_t made = cpu_allocations() - before;
        expect_all(out, 6.0 * (run + 1));
        const MemoryPlanStats s = plan.stats();
        EXPECT_EQ(s.runs, run + 1);
        EXPECT_EQ(s.escaped_blocks, 1);  // the result
        EXPECT_EQ(s.planned_blocks, s.last_run_blocks - 1);
        if (run == 0) {
            EXPECT_EQ(s.plans, 1);
            continue;
        }
        EXPECT_EQ(s.plans, 1) << "a run that repeats its plan is not planned again";
        EXPECT_EQ(s.last_run_misses, 0);
        EXPECT_EQ(s.last_run_from_arena, s.planned_blocks);
        EXPECT_EQ(made, 1) << "only the result that outlives the run is allocated";
    }
}

TEST(MemoryPlan, LifetimesThatDoNotOverlapShareBytes) {
    MemoryPlan plan;
    {
        MemoryPlan::Scope scope(plan);
        for (int i = 0; i < 10; ++i) Tensor t = Tensor::empty(Shape{4096});  // one at a time
    }
    const MemoryPlanStats s = plan.stats();
    EXPECT_EQ(s.planned_blocks, 10);
    EXPECT_EQ(s.arena_bytes, 4096 * 4);
    EXPECT_EQ(s.planned_peak_bytes, 4096 * 4);
    {
        MemoryPlan::Scope scope(plan);
        Tensor a = Tensor::empty(Shape{4096});
        Tensor b = Tensor::empty(Shape{4096});  // planned over a's bytes, but a still lives
        EXPECT_FALSE(a.shares_storage(b));
        a.fill(1.0);
        b.fill(2.0);
        expect_all(a, 1.0);
    }
    EXPECT_EQ(plan.stats().last_run_from_arena, 1) << "b was planned over a, which still lives";
    EXPECT_EQ(plan.stats().plans, 2);
}

TEST(MemoryPlan, NewSizesAreServedAndPlannedAgain) {
    MemoryPlan plan;
    Tensor out;
    {
        MemoryPlan::Scope scope(plan);
        out = work(100, 1);
    }
    {
        MemoryPlan::Scope scope(plan);
        out = work(5000, 2);
    }
    expect_all(out, 12);
    EXPECT_GT(plan.stats().last_run_misses, 0);
    EXPECT_EQ(plan.stats().plans, 2);
    const int64_t before = cpu_allocations();
    {
        MemoryPlan::Scope scope(plan);
        out = work(5000, 3);
    }
    EXPECT_EQ(cpu_allocations() - before, 1);
    expect_all(out, 18);
    EXPECT_EQ(plan.stats().last_run_misses, 0);
}

TEST(MemoryPlan, ABlockKeptPastItsRunIsNeverOverwritten) {
    MemoryPlan plan;
    auto run = [&](double v, Tensor* keep) {
        MemoryPlan::Scope scope(plan);
        Tensor a = Tensor::full(Shape{2048}, v);
        if (keep) *keep = a;  // planned to die within the run
        Tensor b = Tensor::full(Shape{2048}, v + 1);
        expect_all(a, v);
        expect_all(b, v + 1);
    };
    run(1, nullptr);
    Tensor kept;
    run(2, &kept);
    expect_all(kept, 2);
    run(3, nullptr);  // the kept block sits in the old arena: this run takes a fresh one
    run(4, nullptr);
    expect_all(kept, 2);
    EXPECT_EQ(plan.stats().last_run_misses, 0);
}

TEST(MemoryPlan, ServesOnlyTheThreadInItsScope) {
    MemoryPlan plan;
    MemoryPlan::Scope scope(plan);
    const int64_t before = cpu_allocations();
    std::thread([] { Tensor t = Tensor::empty(Shape{64}); }).join();
    EXPECT_EQ(cpu_allocations() - before, 1);
}

TEST(MemoryPlan, OneScopeAtATimeAndNesting) {
    MemoryPlan outer, inner;
    MemoryPlan::Scope a(outer);
    EXPECT_THROW(MemoryPlan::Scope again(outer), ValueError);
    {
        MemoryPlan::Scope b(inner);
        Tensor t = Tensor::empty(Shape{8});
    }
    Tensor u = Tensor::empty(Shape{8});
    EXPECT_EQ(inner.stats().runs, 1);
    EXPECT_EQ(inner.stats().planned_blocks, 1);
}

TEST(MemoryPlan, BlocksMayOutliveThePlan) {
    Tensor kept;
    {
        MemoryPlan plan;
        for (int i = 0; i < 2; ++i) {
            MemoryPlan::Scope scope(plan);
            kept = work(64, 1);
        }
    }
    expect_all(kept, 6);
}

TEST(MemoryPlan, ARunThatSkipsOneTimeWorkStillFollowsThePlan) {
    MemoryPlan plan;
    Tensor state, out;
    {
        MemoryPlan::Scope scope(plan);
        state = Tensor::empty(Shape{100});  // made once (as a learner makes its state), outlives the run
        out = work(1000, 1);
    }
    for (int run = 2; run <= 3; ++run) {
        const int64_t before = cpu_allocations();
        {
            MemoryPlan::Scope scope(plan);
            out = work(1000, run);
        }
        EXPECT_EQ(cpu_allocations() - before, 1) << "run " << run << ": only the result";
        EXPECT_EQ(plan.stats().last_run_misses, 0) << "run " << run;
        expect_all(out, 6.0 * run);
    }
}

TEST(MemoryPlan, WorkThatNeverRepeatsIsLeftToTheAllocator) {
    MemoryPlan plan;
    for (int run = 1; run <= 10; ++run) {
        MemoryPlan::Scope scope(plan);
        Tensor t = work(100 * run, run);  // new sizes every run
    }
    // Runs 2 and 3 missed: planning rests for 64 runs from run 4 on.
    EXPECT_EQ(plan.stats().unplanned_runs, 7);
    EXPECT_EQ(plan.stats().arena_bytes, 0);
    const int64_t before = cpu_allocations();
    {
        MemoryPlan::Scope scope(plan);
        Tensor t = work(4000, 1);
    }
    EXPECT_GT(cpu_allocations() - before, 3) << "a run the plan sits out is the allocator's";
    // Once the rest is over, repeated work is planned again.
    for (int run = 12; run <= 70; ++run) {
        MemoryPlan::Scope scope(plan);
        Tensor t = work(4000, 1);
    }
    EXPECT_EQ(plan.stats().unplanned_runs, 64);
    EXPECT_EQ(plan.stats().last_run_misses, 0);
    EXPECT_GT(plan.stats().last_run_from_arena, 0);
}
