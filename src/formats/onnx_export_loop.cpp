// ONNX export of ctk's recurrent loops: each strongly connected part of the graph that holds a
// past_value / future_value (offset 1) becomes one Scan (opset 17) over axis 1 of [batch, sequence, ...]
// values; the body computes one frame ([batch, sample...]), the delayed values are its state.
#include <functional>
#include <tuple>

#include "formats/onnx_export_internal.h"

namespace ctk::detail::onnx_io::exporter {
namespace {

bool is_delay(const Variable& v) {
    if (!v.is_output() || !v.owner()) return false;
    const PrimitiveOp op = v.owner()->op();
    return !v.owner()->is_block() && (op == PrimitiveOp::past_value || op == PrimitiveOp::future_value);
}

std::string name_of(const Function& f) {
    return f.name().empty() ? f.uid() : f.name();
}

// Swaps the exporter's output graph and name table for the duration of a scope.
template <typename T>
class Swap {
public:
    Swap(T& slot, T value) : slot_(slot), saved_(slot) { slot_ = value; }
    ~Swap() { slot_ = saved_; }
    Swap(const Swap&) = delete;
    Swap& operator=(const Swap&) = delete;

private:
    T& slot_;
    T saved_;
};

onnx::AttributeProto* find_attribute(onnx::NodeProto* n, const char* key) {
    for (auto& a : *n->mutable_attribute())
        if (a.name() == key) return &a;
    return nullptr;
}

}  // namespace

std::pair<Variable, int> Exporter::resolve(Variable v, int scope) {
    for (;;) {
        if (v.is_placeholder()) {
            auto& map = scopes_[static_cast<size_t>(scope)];
            auto it = map.find(v.impl());
            if (it == map.end()) return {v, -1};  // unbound: value() says so when it meets it
            v = it->second.first;
            scope = it->second.second;
            continue;
        }
        if (!v.is_output()) return {v, -1};
        FunctionPtr f = v.owner();
        if (!f || !f->is_block()) return {v, scope};
        const int inner = block_scope(f, scope);
        v = f->block_root()->outputs().at(static_cast<size_t>(v.output_index()));
        scope = inner;
    }
}

// Tarjan's strongly connected components over the values upstream of the outputs (blocks inlined).
void Exporter::find_loops(const std::vector<Variable>& outputs) {
    std::map<Key, int> index, low;
    std::set<Key> on_stack;
    std::vector<std::pair<Key, std::pair<Variable, int>>> stack;
    int next = 0;
    std::function<void(const Variable&, int)> visit = [&](const Variable& v, int scope) {
        const Key k{v.impl(), scope};
        index[k] = low[k] = next++;
        stack.push_back({k, {v, scope}});
        on_stack.insert(k);
        if (scope >= 0 && v.owner()) {
            for (const Variable& u : v.owner()->inputs()) {
                auto [w, ws] = resolve(u, scope);
                const Key wk{w.impl(), ws};
                if (!index.count(wk)) {
                    visit(w, ws);
                    low[k] = std::min(low[k], low[wk]);
                } else if (on_stack.count(wk)) {
                    low[k] = std::min(low[k], index[wk]);
                }
            }
        }
        if (low[k] != index[k]) return;
        auto loop = std::make_unique<Loop>();
        for (;;) {
            auto [wk, wv] = stack.back();
            stack.pop_back();
            on_stack.erase(wk);
            loop->members.insert(wk);
            if (is_delay(wv.first)) loop->delays.push_back(wv);
            if (wk == k) break;
        }
        if (loop->delays.empty()) return;
        for (const Key& m : loop->members) loop_of_[m] = loops_.size();
        loops_.push_back(std::move(loop));
    };
    for (const Variable& out : outputs) {
        auto [v, s] = resolve(out, 0);
        if (!index.count({v.impl(), s})) visit(v, s);
    }
}

std::string Exporter::from_outside(const Variable& v, int scope) {
    Loop* loop = loop_;
    std::string outer;
    {
        Swap<onnx::GraphProto*> g(g_, top_g_);
        Swap<std::map<Key, std::string>*> names(names_, &top_names_);
        Swap<Loop*> l(loop_, nullptr);
        outer = value(v, scope);
    }
    if (!v.has_sequence_axis()) return outer;  // parameters, constants, per-sample values: outer scope
    CTK_CHECK(v.dynamic_rank() == 2 && v.has_batch_axis(), NotImplementedError,
              "save_onnx_model: ", v.to_string(),
              " enters a recurrent loop with dynamic axes other than [#, *]");
    if (auto it = loop->scan_input_names.find(outer); it != loop->scan_input_names.end()) return it->second;
    const std::string frame = fresh(outer + "_frame");
    add_value_info(*g_->add_input(), frame, v, true);
    loop->scan_inputs.push_back(outer);
    loop->scan_input_names[outer] = frame;
    return frame;
}

void Exporter::export_loop(Loop& loop) {
    CTK_CHECK(!loop.exporting, NotImplementedError, "save_onnx_model: a recurrent loop depends on itself");
    loop.exporting = true;
    const Function& first = *loop.delays.front().first.owner();
    loop.backward = first.op() == PrimitiveOp::future_value;
    for (const auto& [d, scope] : loop.delays) {
        const Function& f = *d.owner();
        CTK_CHECK(f.op() == first.op(), NotImplementedError, "save_onnx_model: the recurrent loop through '",
                  name_of(first), "' and '", name_of(f),
                  "' mixes past_value and future_value (ONNX Scan runs one direction)");
        const int64_t offset = f.attributes().get<int64_t>("offset");
        if (offset != 1)
            unsupported(
                f, "an offset of " + std::to_string(offset) + " (ONNX Scan carries its state one frame)");
        if (d.dynamic_rank() != 2 || !d.has_batch_axis()) unsupported(f, "dynamic axes other than [#, *]");
        for (int64_t n : d.shape())
            if (n < 0) unsupported(f, "free dims in the state");
    }
    for (const auto& [d, scope] : loop.delays) {
        auto [w, ws] = resolve(d.owner()->inputs()[0], scope);
        loop.next.push_back({w.impl(), ws});
    }
    onnx::GraphProto& body = loop.body_draft;
    body.set_name(fresh("loop_body"));
    for (const auto& [d, scope] : loop.delays) {
        const std::string s = fresh(name_of(*d.owner()) + "_state");
        add_value_info(*body.add_input(), s, d, true);
        loop.names[{d.impl(), scope}] = s;
    }
    {
        Swap<onnx::GraphProto*> g(g_, &body);
        Swap<std::map<Key, std::string>*> names(names_, &loop.names);
        Swap<Loop*> l(loop_, &loop);
        std::vector<std::string> next;
        for (const auto& [d, scope] : loop.delays) next.push_back(value(d.owner()->inputs()[0], scope));
        for (size_t i = 0; i < next.size(); ++i) {
            const Variable& d = loop.delays[i].first;
            const std::string o = emit("Identity", {next[i]}, name_of(*d.owner()) + "_next");
            add_value_info(*body.add_output(), o, d, true);
        }
    }
    CTK_CHECK(!loop.scan_inputs.empty(), NotImplementedError, "save_onnx_model: the recurrent loop through '",
              name_of(first), "' reads no sequence from outside (ONNX Scan needs one to scan)");
    // Initial states: [batch, sample...], the batch dim read from the first scanned sequence.
    const std::string base = name_of(first);
    onnx::NodeProto* n = nullptr;
    const std::string batch = shape_range(loop.scan_inputs.front(), 0, 1, base);
    std::vector<std::string> ins, outs;
    for (const auto& [d, scope] : loop.delays) {
        const Variable init = d.owner()->inputs()[1];
        CTK_CHECK(!init.has_sequence_axis(), NotImplementedError, "save_onnx_model: '", name_of(*d.owner()),
                  "' has an initial state with a sequence axis");
        std::string i = aligned(init, value(init, scope), d.rank(), base);
        if (init.dtype() != d.dtype()) i = cast(i, d.dtype(), base);
        const std::string shape = emit("Concat", {batch, const_i64(d.shape())}, base, &n);
        attr_i(n, "axis", 0);
        ins.push_back(emit("Expand", {i, shape}, base));
        outs.push_back(fresh(name_of(*d.owner()) + "_final"));
    }
    ins.insert(ins.end(), loop.scan_inputs.begin(), loop.scan_inputs.end());
    loop.scan = node("Scan", ins, outs);
    auto* g = loop.scan->add_attribute();
    g->set_name("body");
    g->set_type(onnx::AttributeProto::GRAPH);
    g->mutable_g()->Swap(&body);
    loop.body = g->mutable_g();
    const auto m = static_cast<int64_t>(loop.scan_inputs.size());
    attr_i(loop.scan, "num_scan_inputs", m);
    attr_ints(loop.scan, "scan_input_axes", Dims(static_cast<size_t>(m), 1));
    attr_ints(loop.scan, "scan_input_directions", Dims(static_cast<size_t>(m), loop.backward ? 1 : 0));
    attr_ints(loop.scan, "scan_output_axes", {});
    attr_ints(loop.scan, "scan_output_directions", {});
}

// A value of the loop used outside it: a scan output [batch, sequence, sample...] (prepended for a
// future_value loop, so that frame t is the body's result for frame t).
std::string Exporter::loop_output(Loop& loop, const Key& key, const Variable& v) {
    if (!loop.body) export_loop(loop);
    auto it = loop.names.find(key);
    CTK_CHECK(it != loop.names.end(), NotImplementedError, "save_onnx_model: ", v.to_string(),
              " of a recurrent loop was not computed in its body");
    const std::string inner = fresh(it->second + "_out");
    {
        Swap<onnx::GraphProto*> g(g_, loop.body);
        node("Identity", {it->second}, {inner});
    }
    add_value_info(*loop.body->add_output(), inner, v, true);
    const std::string outer = fresh(it->second + "_seq");
    loop.scan->add_output(outer);
    find_attribute(loop.scan, "scan_output_axes")->add_ints(1);
    find_attribute(loop.scan, "scan_output_directions")->add_ints(loop.backward ? 1 : 0);
    return outer;
}

void Exporter::finish_loops() {
    for (const auto& loop : loops_) {
        if (!loop->scan) continue;
        auto* attrs = loop->scan->mutable_attribute();
        for (int i = attrs->size() - 1; i >= 0; --i) {
            const auto& a = attrs->Get(i);
            if (a.type() == onnx::AttributeProto::INTS && a.ints_size() == 0) attrs->DeleteSubrange(i, 1);
        }
    }
}

// Correct for sequences that fill the padded length: ONNX's Scan steps every sequence over all frames.
std::string Exporter::final_state(const Function& f, int scope) {
    if (f.is_block() || (f.op() != PrimitiveOp::sequence_last && f.op() != PrimitiveOp::sequence_first))
        return "";
    auto [w, ws] = resolve(f.inputs()[0], scope);
    // through aliases (Recurrence's output is alias(h))
    while (w.is_output() && w.owner() && !w.owner()->is_block() && w.owner()->op() == PrimitiveOp::pass)
        std::tie(w, ws) = resolve(w.owner()->inputs()[0], ws);
    const Key k{w.impl(), ws};
    auto it = loop_of_.find(k);
    if (it == loop_of_.end()) return "";
    Loop& loop = *loops_[it->second];
    if (!loop.body) export_loop(loop);
    if (loop.backward != (f.op() == PrimitiveOp::sequence_first)) return "";
    for (size_t j = 0; j < loop.next.size(); ++j)
        if (loop.next[j] == k) return loop.scan->output(static_cast<int>(j));
    return "";
}

}  // namespace ctk::detail::onnx_io::exporter
