// MemoryPlan: a static memory plan for work that repeats (a training step, an evaluation): every block
// the work allocates and frees within one run gets an offset in one arena per device, chosen once from
// the blocks' lifetimes, and later runs take their blocks at those offsets without calling an allocator.
// The plan is learned from a run, not from a schedule: the allocations are those of the kernels as they
// run (their temporaries included), numbered in order, so it needs nothing from the ops.
//
// How it stays safe when a run does not repeat its plan (new shapes, another path): a block is served
// from the arena only when its size is the planned one and no live block of the arena overlaps it; else
// it comes from the device's allocator, and the run is planned again when it ends. A block that outlives
// its run (an output handed out, state kept for the next run) is never in the arena; if one planned to
// die does outlive its run, the next run takes a fresh arena and the old one is freed with its last block.
// Work that does not repeat at all is left to the allocators for a while (MemoryPlanStats::unplanned_runs),
// so that planning again at every run costs nothing.
//
// Like the CUDA Graph capture pools (cuda.h), a plan serves only the thread that entered its Scope: the
// allocation API stays as it is for every kernel, and other threads (a reader's prefetch) are unaffected.
#pragma once

#include <cstdint>
#include <memory>

namespace ctk {

struct MemoryPlanStats {
    int64_t runs = 0;   // Scopes that have ended
    int64_t plans = 0;  // times the offsets were chosen (the first run, and each run that missed its plan)
    int64_t arena_bytes = 0;         // the arenas' sizes, all devices together
    int64_t planned_peak_bytes = 0;  // the most bytes the planned blocks hold at once (arena_bytes >= it)
    int64_t planned_blocks = 0;      // blocks a run that follows the plan takes from the arena
    int64_t escaped_blocks = 0;      // blocks that outlived the planned run (taken from the allocator)
    int64_t last_run_blocks = 0;     // allocations the last run made
    int64_t last_run_from_arena = 0;
    int64_t last_run_misses = 0;  // allocations of the last run that the plan did not foresee
    // Runs the plan sat out, served by the allocators: after two runs in a row that missed it (work that
    // does not repeat, such as minibatches of sequences of varying lengths), the plan rests for 64 runs,
    // then for twice as many each time it misses again (at most 4096), and plans again after.
    int64_t unplanned_runs = 0;
};

class MemoryPlan {
public:
    MemoryPlan();
    ~MemoryPlan();
    MemoryPlan(const MemoryPlan&) = delete;
    MemoryPlan& operator=(const MemoryPlan&) = delete;

    // One run: while it lives, the allocations this thread makes (on any device) are served by the plan.
    // Scopes of different plans nest (the innermost serves); one plan runs one Scope at a time.
    class Scope {
    public:
        explicit Scope(MemoryPlan& plan);
        ~Scope();
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        MemoryPlan& plan_;
        const void* previous_;  // the enclosing Scope's plan on this thread
    };

    MemoryPlanStats stats() const;

    struct State;

private:
    std::shared_ptr<State> state_;
};

}  // namespace ctk
