// Builds Plans: collects the primitive steps upstream of the requested outputs (blocks inlined,
// placeholders resolved through their bindings), then orders them by strongly connected components.
// A component with a cycle is a recurrent loop: it must contain a past_value or future_value (all of
// one direction), and within a frame its steps run in dependency order with the delays' edges cut.
#include <atomic>
#include <functional>
#include <unordered_set>

#include "graph/executor.h"
#include "graph/fused_loop.h"

namespace ctk::detail {

namespace {
std::atomic<uint64_t> g_generation{1};

std::string function_label(const Function& f) {
    return f.op_name() + " '" + (f.name().empty() ? f.uid() : f.name()) + "'";
}

class PlanBuilder {
public:
    explicit PlanBuilder(Plan& plan) : plan_(plan) {}

    // Binds the placeholders of every block upstream of `outputs` first, so that an output inside a
    // block (CNTK's combine([model, model.attention_model.attention_weights])) is found bound whatever
    // order the outputs are visited in.
    void bind_blocks(const std::vector<Variable>& outputs) {
        std::unordered_set<const void*> seen;
        std::vector<Variable> stack(outputs.begin(), outputs.end());
        while (!stack.empty()) {
            const Variable v = stack.back();
            stack.pop_back();
            if (!seen.insert(v.impl()).second) continue;
            if (v.is_placeholder()) {
                auto b = bound_.find(v.impl());
                if (b != bound_.end()) stack.push_back(b->second);
                continue;
            }
            const FunctionPtr f = v.owner();
            if (!f) continue;
            if (f->is_block()) {
                bind_block(*f);
                for (const Variable& o : f->block_root()->outputs()) stack.push_back(o);
            }
            for (const Variable& in : f->inputs()) stack.push_back(in);
        }
    }

    int visit(const Variable& v) {
        const int s = reserve(v);
        build(v);
        return s;
    }

private:
    // The slot of `v`, allocating it (and its Function's other outputs) without building the step, so
    // that a cycle coming back to `v` finds its slot.
    int reserve(const Variable& v) {
        auto it = plan_.slot_of.find(v.impl());
        if (it != plan_.slot_of.end()) return it->second;
        if (v.is_placeholder()) return alias(v, reserve(bound(v)));
        FunctionPtr f = v.owner();
        if (!f) {
            const int s = new_slot(v);
            plan_.leaves.push_back(s);
            return s;
        }
        if (f->is_block()) {
            bind_block(*f);
            return alias(v, reserve(f->block_root()->outputs()[static_cast<size_t>(v.output_index())]));
        }
        for (const Variable& o : f->outputs()) new_slot(o);
        return plan_.slot_of.at(v.impl());
    }

    void build(const Variable& v) {
        if (v.is_placeholder()) return build(bound(v));
        FunctionPtr f = v.owner();
        if (!f) return;
        if (f->is_block()) {
            bind_block(*f);
            return build(f->block_root()->outputs()[static_cast<size_t>(v.output_index())]);
        }
        if (!started_.insert(f.get()).second) return;
        Step step;
        step.fn = f.get();
        step.def = &op_def(f->op());
        step.where = function_label(*f);
        for (const Variable& in : f->inputs()) {
            step.in.push_back(visit(in));
            step.in_vars.push_back(in.weak());
        }
        for (const Variable& out : f->outputs()) step.out.push_back(reserve(out));
        plan_.steps.push_back(std::move(step));
    }

    const Variable& bound(const Variable& p) {
        auto b = bound_.find(p.impl());
        CTK_CHECK(
            b != bound_.end(), ValueError, p.to_string(),
            " is not bound: replace it (replace_placeholders, or call the Function on arguments) first");
        return b->second;
    }
    void bind_block(const Function& f) {
        for (const auto& [inner, outer] : f.block_arguments_mapping()) bound_[inner.impl()] = outer;
    }
    int new_slot(const Variable& v) {
        const int s = static_cast<int>(plan_.slot_vars.size());
        plan_.slot_vars.push_back(v.weak());  // a cached plan must not keep its own Function alive
        plan_.slot_of[v.impl()] = s;
        return s;
    }
    int alias(const Variable& v, int s) {
        plan_.slot_of[v.impl()] = s;
        return s;
    }
    Plan& plan_;
    std::unordered_map<const void*, Variable> bound_;
    std::unordered_set<const void*> started_;
};

// Tarjan's strongly connected components over "step i reads an output of step j" edges. Components
// come out dependencies first, which is an execution order.
std::vector<std::vector<int>> components(const std::vector<std::vector<int>>& deps) {
    const int n = static_cast<int>(deps.size());
    std::vector<int> index(static_cast<size_t>(n), -1), low(static_cast<size_t>(n), 0), stack;
    std::vector<bool> on_stack(static_cast<size_t>(n), false);
    std::vector<std::vector<int>> out;
    int counter = 0;
    // Iterative, so that deep graphs do not exhaust the call stack.
    for (int root = 0; root < n; ++root) {
        if (index[static_cast<size_t>(root)] >= 0) continue;
        std::vector<std::pair<int, size_t>> work{{root, 0}};
        while (!work.empty()) {
            auto& [v, next] = work.back();
            const size_t vi = static_cast<size_t>(v);
            if (next == 0 && index[vi] < 0) {
                index[vi] = low[vi] = counter++;
                stack.push_back(v);
                on_stack[vi] = true;
            }
            if (next < deps[vi].size()) {
                const int w = deps[vi][next++];
                const size_t wi = static_cast<size_t>(w);
                if (index[wi] < 0) {
                    work.push_back({w, 0});
                } else if (on_stack[wi]) {
                    low[vi] = std::min(low[vi], index[wi]);
                }
                continue;
            }
            if (low[vi] == index[vi]) {
                std::vector<int> comp;
                int w;
                do {
                    w = stack.back();
                    stack.pop_back();
                    on_stack[static_cast<size_t>(w)] = false;
                    comp.push_back(w);
                } while (w != v);
                out.push_back(std::move(comp));
            }
            const int done = v;
            work.pop_back();
            if (!work.empty()) {
                const size_t parent = static_cast<size_t>(work.back().first);
                low[parent] = std::min(low[parent], low[static_cast<size_t>(done)]);
            }
        }
    }
    return out;
}

// Whether a step computes each frame from that frame alone (so that a loop may run it frame by frame).
// (Delays run frame by frame by the executor itself; the rest say so on their definitions.)
bool frame_local(const Step& s) {
    if (s.def->delay_direction != 0) return true;
    return s.def->frame_local_for ? s.def->frame_local_for(*s.fn) : s.def->frame_local;
}

}  // namespace

bool is_delay(PrimitiveOp op) {
    return op_def(op).delay_direction != 0;
}

uint64_t graph_generation() {
    return g_generation.load();
}
void bump_graph_generation() {
    ++g_generation;
}

int Plan::slot(const Variable& v) const {
    auto it = slot_of.find(v.impl());
    return it == slot_of.end() ? -1 : it->second;
}

std::shared_ptr<Plan> build_plan(const std::vector<Variable>& outputs) {
    Plan collected;
    PlanBuilder builder(collected);
    builder.bind_blocks(outputs);
    for (const Variable& v : outputs) collected.requested.push_back(builder.visit(v));
    const size_t n = collected.steps.size();
    std::vector<int> producer(collected.slot_vars.size(), -1);
    for (size_t i = 0; i < n; ++i)
        for (int s : collected.steps[i].out) producer[static_cast<size_t>(s)] = static_cast<int>(i);
    std::vector<std::vector<int>> deps(n);
    for (size_t i = 0; i < n; ++i)
        for (int s : collected.steps[i].in)
            if (producer[static_cast<size_t>(s)] >= 0) deps[i].push_back(producer[static_cast<size_t>(s)]);

    auto plan = std::make_shared<Plan>();
    plan->generation = graph_generation();
    plan->slot_vars = std::move(collected.slot_vars);
    plan->slot_of = std::move(collected.slot_of);
    plan->leaves = std::move(collected.leaves);
    plan->requested = std::move(collected.requested);
    for (const std::vector<int>& comp : components(deps)) {
        const bool cyclic = comp.size() > 1 || std::find(deps[static_cast<size_t>(comp[0])].begin(),
                                                         deps[static_cast<size_t>(comp[0])].end(),
                                                         comp[0]) != deps[static_cast<size_t>(comp[0])].end();
        if (!cyclic) {
            plan->steps.push_back(collected.steps[static_cast<size_t>(comp[0])]);
            continue;
        }
        // A recurrent loop. Order its steps within a frame: dependencies first, the delays' reads of
        // their input ignored (they read an earlier or later frame).
        std::unordered_set<int> members(comp.begin(), comp.end());
        int past = 0, future = 0;
        std::string names;
        for (int i : comp) {
            const Step& s = collected.steps[static_cast<size_t>(i)];
            names += (names.empty() ? "" : ", ") + s.where;
            past += s.def->delay_direction < 0;
            future += s.def->delay_direction > 0;
        }
        CTK_CHECK(past + future > 0, ValueError,
                  "the graph has a loop with no past_value/future_value delay in it: ", names);
        CTK_CHECK(past == 0 || future == 0, ValueError,
                  "a recurrent loop mixes past_value and future_value delays: ", names);
        std::vector<int> order;
        std::unordered_map<int, int> state;  // 1: visiting, 2: done
        std::function<void(int)> place = [&](int i) {
            int& st = state[i];
            if (st == 2) return;
            CTK_CHECK(st != 1, ValueError,
                      "the graph has a loop with no past_value/future_value delay in it: ", names);
            st = 1;
            const Step& s = collected.steps[static_cast<size_t>(i)];
            if (s.def->delay_direction == 0)
                for (int d : deps[static_cast<size_t>(i)])
                    if (members.count(d)) place(d);
            state[i] = 2;
            order.push_back(i);
        };
        for (int i : comp) place(i);
        Loop loop;
        loop.first = static_cast<int>(plan->steps.size());
        loop.count = static_cast<int>(order.size());
        loop.backward_in_time = future > 0;
        for (int i : order) {
            Step s = collected.steps[static_cast<size_t>(i)];
            CTK_CHECK(frame_local(s), ValueError, s.where,
                      " looks across frames or samples and cannot be inside a recurrent loop (", names, ")");
            s.loop = static_cast<int>(plan->loops.size());
            plan->steps.push_back(std::move(s));
        }
        plan->loops.push_back(loop);
    }
    for (const Loop& loop : plan->loops) {
        std::string why;
        plan->fused.push_back(compile_fused_loop(*plan, loop, why));
        plan->fused_refusal.push_back(why);
    }
    plan->last_use.assign(plan->slot_vars.size(), -1);
    plan->first_use.assign(plan->slot_vars.size(), -1);
    plan->read_by_backward.assign(plan->slot_vars.size(), false);
    for (size_t i = 0; i < plan->steps.size(); ++i) {
        const Step& s = plan->steps[i];
        // A loop reads its operands until its last step has run.
        const int last = s.loop >= 0 ? plan->loops[static_cast<size_t>(s.loop)].first +
                                           plan->loops[static_cast<size_t>(s.loop)].count - 1
                                     : static_cast<int>(i);
        // ... and backward runs a loop as one unit, from its last step back to its first.
        const int first = s.loop >= 0 ? plan->loops[static_cast<size_t>(s.loop)].first : static_cast<int>(i);
        for (int in : s.in) {
            plan->last_use[static_cast<size_t>(in)] = std::max(plan->last_use[static_cast<size_t>(in)], last);
            int& f = plan->first_use[static_cast<size_t>(in)];
            if (f < 0 || first < f) f = first;
        }
        plan->has_side_effects = plan->has_side_effects || s.def->commit != nullptr;
        // A loop's backward reads every value of its steps frame by frame.
        const uint32_t reads = s.loop >= 0                                      ? kReadsInputs | kReadsOutputs
                               : s.def->backward || s.def->delay_direction != 0 ? s.def->backward_reads
                                                                                : kReadsNothing;
        for (size_t j = 0; j < s.in.size(); ++j)
            if (reads & reads_input(static_cast<int>(j)))
                plan->read_by_backward[static_cast<size_t>(s.in[j])] = true;
        if (reads & kReadsOutputs)
            for (int out : s.out) plan->read_by_backward[static_cast<size_t>(out)] = true;
    }
    return plan;
}

}  // namespace ctk::detail
