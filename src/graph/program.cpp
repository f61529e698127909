// Program (ctk/graph/program.h): the schedule is built once when the Program is made (errors surface then,
// not mid-step) and kept by the Program; a run is the executor's forward and backward over it inside a
// Scope of the Program's memory plan.
#include "ctk/graph/program.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <optional>
#include <unordered_set>

#include "graph/executor.h"

namespace ctk {

bool memory_plan_by_default() {
    static const bool on = [] {
        const char* v = std::getenv("CTK_MEMORY_PLAN");
        if (v == nullptr) return true;
        const std::string s(v);
        CTK_CHECK(s.empty() || s == "0" || s == "1" || s == "on" || s == "off" || s == "true" || s == "false",
                  ValueError, "CTK_MEMORY_PLAN must be 1/on/true or 0/off/false, not '", s, "'");
        return !(s == "0" || s == "off" || s == "false");
    }();
    return on;
}

Program::Program(std::vector<Variable> outputs, std::vector<Variable> wrt, ProgramOptions options)
    : outputs_(std::move(outputs)), wrt_(std::move(wrt)), options_(options) {
    CTK_CHECK(!outputs_.empty(), ValueError, "Program: no outputs to compute");
    CTK_CHECK(device_available(options_.device), DeviceError, "Program: device ", options_.device.to_string(),
              " is not available here");
    plan_ = detail::build_plan(outputs_);
    const detail::Plan* plan = plan_.get();
    num_steps_ = static_cast<int64_t>(plan->steps.size());
    static std::atomic<uint64_t> next_id{1};
    id_ = next_id++;
    for (int slot : plan->leaves) {
        const Variable& v = plan->slot_vars[static_cast<size_t>(slot)];
        if (v.is_parameter() || v.is_constant()) stored_.push_back(v);
    }
    for (const detail::Step& s : plan->steps)
        if (s.def->capture_refusal) {
            capture_refusal_ = s.where + " " + s.def->capture_refusal;
            break;
        }
    std::unordered_set<const void*> seen;
    for (const Variable& v : wrt_) {
        CTK_CHECK(plan->slot(v) >= 0, ValueError, "Program: ", v.to_string(),
                  " is not upstream of the outputs, so it has no gradient here");
        CTK_CHECK(seen.insert(v.impl()).second, ValueError, "Program: ", v.to_string(),
                  " is listed twice for gradients");
    }
    // Backward's order (detail::run_backward): by first reader in the schedule, latest first.
    gradient_order_ = wrt_;
    std::stable_sort(gradient_order_.begin(), gradient_order_.end(),
                     [&](const Variable& a, const Variable& b) {
                         return plan->first_use[static_cast<size_t>(plan->slot(a))] >
                                plan->first_use[static_cast<size_t>(plan->slot(b))];
                     });
}

Program::~Program() = default;

int64_t Program::num_steps() const {
    return num_steps_;
}

bool Program::current() const {
    return plan_->generation == detail::graph_generation();
}

Program::Result Program::run(const ValueMap& arguments, const RunOptions& options) {
    std::optional<MemoryPlan::Scope> scope;
    if (options_.plan_memory && options.open_memory_scope) scope.emplace(memory_);
    Result r;
    for (const Variable& v : outputs_) r.outputs.emplace(v, Value());
    const bool backward = !wrt_.empty();
    if (!current()) plan_ = detail::build_plan(outputs_);
    std::shared_ptr<BackPropState> state =
        detail::run_forward(plan_, arguments, r.outputs, backward, options.is_training, options_.device);
    if (options.after_forward && !options.after_forward(r.outputs)) return r;
    if (!backward) return r;
    const Value& y = r.outputs.at(outputs_[0]);
    const Tensor seed =
        Tensor::full(y.data().shape(), options.root_gradient, y.data().dtype(), y.data().device());
    r.gradients = detail::run_backward(*state, {{outputs_[0], Value(seed, y.layout())}}, wrt_,
                                       options.on_gradient_ready);
    return r;
}

}  // namespace ctk
