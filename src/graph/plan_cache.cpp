// The plan cache (plan_cache.h): one map for the process, keyed by the root Function's address. Its
// entries go with the Function (~Function calls forget_plans), and each remembers which Function made
// it (a weak reference), so an address reused by a later Function never finds another graph's plans.
#include "graph/plan_cache.h"

#include <map>
#include <mutex>
#include <unordered_map>

namespace ctk::detail {

namespace {

struct Entry {
    std::weak_ptr<const Function> root;
    std::map<std::vector<const void*>, std::shared_ptr<const Plan>> plans;  // by requested outputs
};
struct PlanCache {
    std::mutex mutex;
    std::unordered_map<const Function*, Entry> entries;
};

bool same_function(const std::weak_ptr<const Function>& a, const std::weak_ptr<const Function>& b) {
    return !a.owner_before(b) && !b.owner_before(a);
}

// Never destroyed: Functions held by static objects (a Python module's globals) may be destroyed after
// any static cache would be.
PlanCache& cache() {
    static PlanCache* c = new PlanCache;
    return *c;
}

}  // namespace

std::shared_ptr<const Plan> cached_plan(const Function& root, const std::vector<Variable>& wanted) {
    std::vector<const void*> key;
    key.reserve(wanted.size());
    for (const Variable& v : wanted) key.push_back(v.impl());
    const std::weak_ptr<const Function> me = root.weak_from_this();
    PlanCache& c = cache();
    {
        std::lock_guard<std::mutex> lock(c.mutex);
        auto e = c.entries.find(&root);
        if (e != c.entries.end() && same_function(e->second.root, me)) {
            auto it = e->second.plans.find(key);
            if (it != e->second.plans.end() && it->second->generation == graph_generation())
                return it->second;
        }
    }
    // Built outside the lock (a large graph takes a while); two threads racing keep the later plan.
    std::shared_ptr<const Plan> plan = build_plan(wanted);
    // Plans replaced here are destroyed after the lock is released (see forget_plans).
    Entry stale;
    std::shared_ptr<const Plan> replaced;
    std::lock_guard<std::mutex> lock(c.mutex);
    Entry& e = c.entries[&root];
    if (!same_function(e.root, me)) {
        stale = std::move(e);
        e = Entry{me, {}};
    }
    std::shared_ptr<const Plan>& slot = e.plans[key];
    replaced = std::move(slot);
    slot = plan;
    return plan;
}

void forget_plans(const Function& root) noexcept {
    // The plans are destroyed after the lock is released: whatever their destruction releases may end in
    // another ~Function, which takes the lock again.
    Entry gone;
    try {
        PlanCache& c = cache();
        std::lock_guard<std::mutex> lock(c.mutex);
        auto it = c.entries.find(&root);
        if (it == c.entries.end()) return;
        gone = std::move(it->second);
        c.entries.erase(it);
    } catch (...) {  // (a lock that fails leaves the entry: a later Function here replaces it)
    }
}

}  // namespace ctk::detail
