// The static memory plan (ctk/core/memory_plan.h): a run records its allocations (size, device, when made,
// when freed); when a run missed its plan, the blocks that died within it are placed in one arena per
// device by first fit in decreasing size (lifetimes that overlap never share bytes), and the next runs
// take the k-th allocation at the k-th block's offset. Every block a run hands out is a lease: its
// destructor records the free and gives the bytes back (to the arena's live set or to the allocator).
#include "ctk/core/memory_plan.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>

#include "core/memory_plan_hook.h"
#include "ctk/core/cuda.h"
#include "ctk/core/error.h"
#include "ctk/core/storage.h"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define CTK_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define CTK_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define CTK_POISON(p, n) ((void)(p), (void)(n))
#define CTK_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace ctk {

namespace {

// Offsets and sizes in the arena are multiples of this (what cuBLASLt, cuDNN and AVX-512 like best).
constexpr size_t kArenaAlignment = 256;
constexpr int64_t kStillLive = -1;
// How far ahead of its cursor a run looks for its next planned block of the same size.
constexpr size_t kResyncWindow = 256;
// Work that misses its plan this many runs in a row is left to the allocators for kFirstRest runs, then
// for twice as long at each new streak, up to kLongestRest: re-planning every run would cost each run a
// placement over all its blocks (a 4x slower step for an LSTM over sequences of varying lengths).
constexpr int kMissesBeforeRest = 2;
constexpr int64_t kFirstRest = 64, kLongestRest = 4096;

size_t arena_size_of(size_t bytes) {
    return std::max<size_t>((bytes + kArenaAlignment - 1) / kArenaAlignment, 1) * kArenaAlignment;
}

// One arena: a block of device memory from the device's allocator, and which of its kArenaAlignment-byte
// granules are handed out now (one byte each: marking and checking a block costs no allocation, and a
// granule of bookkeeping per 256 bytes of tensor is nothing beside the kernels that fill them). Freed
// with its last lease.
struct Arena {
    Device device;
    void* base = nullptr;
    size_t bytes = 0;
    std::vector<uint8_t> busy;  // per granule
    size_t live = 0;            // blocks handed out now
    Arena(Device d, size_t n) : device(d), bytes(n), busy(n / kArenaAlignment, 0) {
        base = allocator_for(d).allocate(n);
        CTK_POISON(base, n);
    }
    ~Arena() {
        CTK_UNPOISON(base, bytes);
        allocator_for(device).deallocate(base, bytes);
    }
    bool overlaps_live(size_t offset, size_t n) const {
        const uint8_t* b = busy.data() + offset / kArenaAlignment;
        return std::memchr(b, 1, n / kArenaAlignment) != nullptr;
    }
    void mark(size_t offset, size_t n, bool on) {
        std::memset(busy.data() + offset / kArenaAlignment, on ? 1 : 0, n / kArenaAlignment);
        live = on ? live + 1 : live - 1;
    }
};

struct Recorded {
    size_t bytes = 0;  // as asked
    Device device;
    int64_t made = 0, freed = kStillLive;  // event numbers within the run
};

struct Planned {
    size_t bytes = 0;
    Device device;
    int64_t offset = -1;  // -1: not in the arena (it outlived its run)
};

}  // namespace

struct MemoryPlan::State {
    mutable std::mutex mutex;
    int64_t run = 0;  // the current (or last) run's number
    bool running = false;
    int64_t event = 0;
    std::vector<Recorded> recorded;  // this run's allocations, in order
    bool missed = false;             // this run did something its plan did not foresee
    bool skipped = false;            // this run left out blocks of its plan (planned again, tighter)
    size_t cursor = 0;               // the planned block after the last one this run took
    bool sitting_out = false;        // this run is left to the allocators (see kMissesBeforeRest)
    int miss_streak = 0;
    int64_t rest_until = 0, rest_length = kFirstRest;
    std::vector<Planned> plan;                     // empty: nothing planned yet
    std::map<int, std::shared_ptr<Arena>> arenas;  // by device key
    MemoryPlanStats stats;
    int64_t from_arena = 0, misses = 0;  // this run's

    static int device_key(Device d) { return static_cast<int>(d.type) * 1024 + d.index; }

    // Drops the plan and gives the arenas back (each once its blocks are freed): the allocators serve
    // the next run, which plans again.
    void forget() {
        plan.clear();
        arenas.clear();
        stats.arena_bytes = stats.planned_peak_bytes = stats.planned_blocks = stats.escaped_blocks = 0;
    }

    // Places the blocks that died within the run; sizes the arenas.
    void replan() {
        std::vector<Planned> next(recorded.size());
        std::map<int, std::vector<size_t>> by_device;
        int64_t escaped = 0;
        for (size_t i = 0; i < recorded.size(); ++i) {
            next[i].bytes = recorded[i].bytes;
            next[i].device = recorded[i].device;
            if (recorded[i].freed == kStillLive)
                ++escaped;
            else
                by_device[device_key(recorded[i].device)].push_back(i);
        }
        int64_t peak_total = 0;
        std::map<int, size_t> needed;
        for (auto& [key, blocks] : by_device) {
            std::stable_sort(blocks.begin(), blocks.end(), [&](size_t a, size_t b) {
                return arena_size_of(recorded[a].bytes) > arena_size_of(recorded[b].bytes);
            });
            std::vector<size_t> placed;
            size_t extent = 0;
            for (size_t i : blocks) {
                const Recorded& r = recorded[i];
                const size_t n = arena_size_of(r.bytes);
                // The placed blocks alive at the same time, by offset; the first gap that fits.
                std::vector<std::pair<size_t, size_t>> busy;
                for (size_t j : placed) {
                    const Recorded& o = recorded[j];
                    if (o.made < r.freed && r.made < o.freed) {
                        const size_t off = static_cast<size_t>(next[j].offset);
                        busy.emplace_back(off, off + arena_size_of(o.bytes));
                    }
                }
                std::sort(busy.begin(), busy.end());
                size_t at = 0;
                for (const auto& [begin, end] : busy) {
                    if (begin >= at + n) break;
                    at = std::max(at, end);
                }
                next[i].offset = static_cast<int64_t>(at);
                extent = std::max(extent, at + n);
                placed.push_back(i);
            }
            needed[key] = extent;
            // The planned peak: the most bytes alive at once (a sweep over the events).
            std::vector<std::pair<int64_t, int64_t>> events;
            for (size_t i : blocks) {
                const auto n = static_cast<int64_t>(arena_size_of(recorded[i].bytes));
                events.emplace_back(recorded[i].made, n);
                events.emplace_back(recorded[i].freed, -n);
            }
            std::sort(events.begin(), events.end());
            int64_t now = 0, peak = 0;
            for (const auto& e : events) peak = std::max(peak, now += e.second);
            peak_total += peak;
        }
        // The blocks the recorded run freed sit in the allocators' caches; the arenas serve such runs
        // from now on, so the caches go back first (else a process holds activations twice).
        for (const auto& [key, n] : needed)
            if (n > 0) allocator_for(recorded[by_device[key].front()].device).empty_cache();
        // An arena too small, or one whose blocks are not all back, is replaced; the old one goes with
        // its last lease.
        std::map<int, std::shared_ptr<Arena>> kept;
        for (const auto& [key, n] : needed) {
            if (n == 0) continue;
            auto it = arenas.find(key);
            if (it != arenas.end() && it->second->bytes >= n && it->second->live == 0) {
                kept[key] = it->second;
                continue;
            }
            arenas.erase(key);  // the old arena's memory goes back before the new one is asked for
            const Device d = recorded[by_device[key].front()].device;
            kept[key] = std::make_shared<Arena>(d, n);
        }
        arenas = std::move(kept);
        plan = std::move(next);
        ++stats.plans;
        stats.arena_bytes = 0;
        for (const auto& [key, a] : arenas) stats.arena_bytes += static_cast<int64_t>(a->bytes);
        stats.planned_peak_bytes = peak_total;
        stats.planned_blocks = static_cast<int64_t>(plan.size()) - escaped;
        stats.escaped_blocks = escaped;
    }
};

namespace {

// The plan whose Scope serves this thread (null: none).
thread_local const std::shared_ptr<MemoryPlan::State>* t_active = nullptr;

// Owns one block a run handed out: records its free, and gives its bytes back.
struct Lease {
    std::shared_ptr<MemoryPlan::State> state;
    int64_t run = 0;
    size_t index = 0;
    std::shared_ptr<Arena> arena;  // null: from the allocator
    void* data = nullptr;
    size_t bytes = 0;
    size_t offset = 0;
    Device device;

    ~Lease() {
        {
            std::lock_guard<std::mutex> lock(state->mutex);
            if (state->running && state->run == run) state->recorded[index].freed = ++state->event;
            if (arena) {
                arena->mark(offset, arena_size_of(bytes), false);
                CTK_POISON(data, arena_size_of(bytes));
            }
        }
        if (!arena && data) allocator_for(device).deallocate(data, bytes);
    }
};

}  // namespace

namespace detail {

bool serve_from_memory_plan(size_t bytes, Device device, void** data, std::shared_ptr<void>* keep_alive) {
    // A CUDA Graph being recorded keeps its addresses in its own pool (cuda.h): the plan stands aside.
    if (t_active == nullptr || (device.is_cuda() && cuda::recording_on_this_thread())) return false;
    MemoryPlan::State& s = **t_active;
    auto lease = std::make_shared<Lease>();
    lease->state = *t_active;  // the lease needs the state even if the plan goes first
    lease->bytes = bytes;
    lease->device = device;
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        const size_t index = s.recorded.size();
        s.recorded.push_back({bytes, device, ++s.event, kStillLive});
        lease->run = s.run;
        lease->index = index;
        // The planned block this allocation is: the next one of its size and device at or after the
        // cursor (a run may skip what the planned run did once, such as making state that outlived it).
        size_t match = s.plan.size();
        for (size_t j = s.cursor; j < s.plan.size() && j < s.cursor + kResyncWindow; ++j)
            if (s.plan[j].bytes == bytes && s.plan[j].device == device) {
                match = j;
                break;
            }
        if (match < s.plan.size()) {
            if (match != s.cursor) s.skipped = true;
            s.cursor = match + 1;
            const int64_t offset = s.plan[match].offset;
            auto it = s.arenas.find(MemoryPlan::State::device_key(device));
            const size_t n = arena_size_of(bytes);
            if (offset >= 0) {
                const auto off = static_cast<size_t>(offset);
                if (it != s.arenas.end() && off + n <= it->second->bytes &&
                    !it->second->overlaps_live(off, n)) {
                    Arena& a = *it->second;
                    a.mark(off, n, true);
                    lease->arena = it->second;
                    lease->offset = off;
                    lease->data = static_cast<char*>(a.base) + off;
                    CTK_UNPOISON(lease->data, n);
                    ++s.from_arena;
                } else {
                    s.missed = true;  // a block planned to be dead is still alive
                    ++s.misses;
                }
            }
        } else {
            s.missed = true;
            if (!s.plan.empty()) ++s.misses;  // (a first run has nothing to miss)
        }
    }
    if (!lease->arena) lease->data = allocator_for(device).allocate(bytes);
    *data = lease->data;
    *keep_alive = std::move(lease);
    return true;
}

}  // namespace detail

MemoryPlan::MemoryPlan() : state_(std::make_shared<State>()) {}

MemoryPlan::~MemoryPlan() = default;

MemoryPlan::Scope::Scope(MemoryPlan& plan) : plan_(plan), previous_(t_active) {
    State& s = *plan.state_;
    {
        std::lock_guard<std::mutex> lock(s.mutex);
        CTK_CHECK(!s.running, ValueError, "MemoryPlan: a plan runs one Scope at a time");
        s.running = true;
        ++s.run;
        s.event = 0;
        s.recorded.clear();
        s.from_arena = s.misses = 0;
        s.cursor = 0;
        s.skipped = false;
        s.missed = s.plan.empty();
        s.sitting_out = s.run <= s.rest_until;
        // A block of the last run that outlived it sits in its arena: this run takes a fresh one (the old
        // one goes with its last block) and is planned again.
        for (auto& [key, arena] : s.arenas)
            if (!s.sitting_out && arena->live != 0) {
                const Device d = arena->device;
                const size_t n = arena->bytes;
                arena.reset();
                arena = std::make_shared<Arena>(d, n);
                s.missed = true;
            }
    }
    t_active = s.sitting_out ? nullptr : &plan.state_;
}

MemoryPlan::Scope::~Scope() {
    t_active = static_cast<const std::shared_ptr<State>*>(previous_);
    State& s = *plan_.state_;
    std::lock_guard<std::mutex> lock(s.mutex);
    s.running = false;
    ++s.stats.runs;
    s.stats.last_run_blocks = static_cast<int64_t>(s.recorded.size());
    s.stats.last_run_from_arena = s.from_arena;
    s.stats.last_run_misses = s.misses;
    if (s.sitting_out) {
        ++s.stats.unplanned_runs;
        return;
    }
    if (s.misses > 0 && ++s.miss_streak >= kMissesBeforeRest) {
        // This work does not repeat: the allocators serve it for a while, and the arenas go back.
        s.rest_until = s.run + s.rest_length;
        s.rest_length = std::min(s.rest_length * 2, kLongestRest);
        s.miss_streak = 0;
        s.forget();
        return;
    }
    if (s.misses == 0 && !s.plan.empty()) {
        s.miss_streak = 0;
        s.rest_length = kFirstRest;
    }
    if (s.cursor < s.plan.size()) s.skipped = true;  // it ended before its plan did
    if (!s.missed && !s.skipped) return;
    try {
        s.replan();
    } catch (const std::exception&) {  // no memory for the arena: the next runs use the allocator
        s.forget();
    }
}

MemoryPlanStats MemoryPlan::stats() const {
    std::lock_guard<std::mutex> lock(state_->mutex);
    return state_->stats;
}

}  // namespace ctk
