// Compiling a recurrent loop into a cell program, and running it in place of the frame-by-frame path.
#include "graph/fused_loop.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_map>

#include "ctk/graph/program.h"
#include "ctk/kernels/tensor_ops.h"

namespace ctk {

namespace {
bool fused_from_environment() {
    const char* v = std::getenv("CTK_FUSED_RECURRENCE");
    if (v == nullptr || *v == '\0') return true;
    const std::string s(v);
    if (s == "0" || s == "off" || s == "false") return false;
    CTK_CHECK(s == "1" || s == "on" || s == "true", ValueError, "CTK_FUSED_RECURRENCE=", s,
              ": expected 1/on/true or 0/off/false");
    return true;
}
std::atomic<bool>& fused_flag() {
    static std::atomic<bool> on{fused_from_environment()};
    return on;
}
}  // namespace

void set_fused_recurrence(bool on) {
    fused_flag() = on;
}
bool fused_recurrence() {
    return fused_flag();
}

namespace detail {

namespace {

int64_t numel_of(const Dims& d) {
    int64_t n = 1;
    for (int64_t x : d) n *= x;
    return n;
}

bool known(const Dims& d) {
    for (int64_t x : d)
        if (x < 0) return false;
    return true;
}

class Compiler {
public:
    Compiler(const Plan& plan, const Loop& loop) : plan_(plan), loop_(loop) {
        for (int k = 0; k < loop.count; ++k)
            for (int s : step(k).out) inside_.emplace(s, cell::Ref{});
    }

    std::shared_ptr<const FusedLoop> compile(std::string& why) {
        auto fused = std::make_shared<FusedLoop>();
        fused_ = fused.get();
        fused_->program.backward_in_time = loop_.backward_in_time;
        struct PendingDelay {
            int node, source_slot;
        };
        std::vector<PendingDelay> delays;
        for (int k = 0; k < loop_.count; ++k) {
            const Step& s = step(k);
            const PrimitiveOp op = s.fn->op();
            const Variable& out = plan_.slot_vars[static_cast<size_t>(s.out[0])];
            if (s.out.size() != 1) return refuse(why, s, "has several outputs");
            if (out.dtype() != DataType::f32 && out.dtype() != DataType::f64)
                return refuse(why, s, "is not f32 or f64");
            if (out.dynamic_rank() != 2 || !out.has_sequence_axis() || !known(out.shape()))
                return refuse(why, s, "is not a sequence of a known sample shape");
            const int64_t width = numel_of(out.shape());
            cell::Ref result;
            if (is_delay(op)) {
                if ((s.def->delay_direction > 0) != loop_.backward_in_time)
                    return refuse(why, s, "looks the other way in time");
                if (!inside_.count(s.in[0])) return refuse(why, s, "delays a value from outside the loop");
                const Variable& init = s.in_vars[1];
                if (init.has_sequence_axis() || inside_.count(s.in[1]))
                    return refuse(why, s, "has an initial state that is a sequence");
                cell::Ref b = operand(s.in[1], width);
                if (b.value < 0) return refuse(why, s, "has an initial state of another shape");
                cell::Node d;
                d.kind = cell::Kind::delay;
                d.width = width;
                d.b = b;
                d.offset = s.fn->attributes().get<int64_t>("offset");
                if (d.offset < 1) return refuse(why, s, "has an offset below 1");
                result = push(d);
                delays.push_back({result.value, s.in[0]});
            } else if (is_elementwise_unary(op)) {
                const OpKind kind = elementwise_kernel_op(op);
                if (!cell::supports_unary(kind)) return refuse(why, s, "has no fused form");
                cell::Ref a = operand(s.in[0], width);
                if (a.value < 0 || a.width != width) return refuse(why, s, "broadcasts its operand");
                cell::Node d;
                d.kind = cell::Kind::unary;
                d.op = kind;
                d.width = width;
                d.a = a;
                result = push(d);
            } else if (is_elementwise_binary(op)) {
                const OpKind kind = elementwise_kernel_op(op);
                if (!cell::supports_binary(kind)) return refuse(why, s, "has no fused form");
                cell::Ref a = operand(s.in[0], width), b = operand(s.in[1], width);
                if (a.value < 0 || b.value < 0) return refuse(why, s, "broadcasts along an axis");
                cell::Node d;
                d.kind = cell::Kind::binary;
                d.op = kind;
                d.width = width;
                d.a = a;
                d.b = b;
                result = push(d);
            } else if (op == PrimitiveOp::times || op == PrimitiveOp::transpose_times) {
                const Variable &x = s.in_vars[0], &w = s.in_vars[1];
                if (!inside_.count(s.in[0]) || inside_.count(s.in[1]) || !w.dynamic_axes().empty() ||
                    !known(w.shape()) || !known(x.shape()))
                    return refuse(why, s, "is not a product of a loop value and a fixed matrix");
                const int64_t k = numel_of(x.shape());
                const bool transposed = op == PrimitiveOp::transpose_times;
                if (transposed ? x.rank() != 1 || w.rank() > 2
                               : s.fn->attributes().get<int64_t>("contracted") != x.rank())
                    return refuse(why, s, "contracts only some of its operand's axes");
                cell::Ref a = inside_.at(s.in[0]);
                if (numel_of(w.shape()) != k * width || a.width != k)
                    return refuse(why, s, "has operands whose sizes do not fit");
                cell::Node d;
                d.kind = cell::Kind::matmul;
                d.width = width;
                d.a = a;
                d.b = {input(s.in[1], cell::Kind::fixed_input, k * width), 0, k * width};
                d.transpose_b = transposed;
                result = push(d);
            } else if (op == PrimitiveOp::reshape || op == PrimitiveOp::pass) {
                if (!inside_.count(s.in[0])) return refuse(why, s, "aliases a value from outside the loop");
                result = inside_.at(s.in[0]);
                if (result.width != width) return refuse(why, s, "changes the size");
            } else if (op == PrimitiveOp::slice) {
                if (!inside_.count(s.in[0])) return refuse(why, s, "slices a value from outside the loop");
                const cell::Ref base = inside_.at(s.in[0]);
                const Variable& x = s.in_vars[0];
                if (!known(x.shape())) return refuse(why, s, "slices an unknown shape");
                const auto& axes = s.fn->attributes().get<std::vector<Axis>>("axes");
                const Dims &begin = s.fn->attributes().get<Dims>("beginIndex"),
                           &end = s.fn->attributes().get<Dims>("endIndex"),
                           &strides = s.fn->attributes().get<Dims>("sliceStrides");
                if (axes.size() != 1 || !axes[0].is_static() || (!strides.empty() && strides[0] != 1))
                    return refuse(why, s, "is not one contiguous range");
                const int rank = x.rank();
                const int ax =
                    axes[0].static_index() < 0 ? axes[0].static_index() + rank : axes[0].static_index();
                if (ax < 0 || ax >= rank) return refuse(why, s, "has an axis out of range");
                // The range is contiguous in the row when every axis before it has one element.
                if (numel_of(Dims(x.shape().begin(), x.shape().begin() + ax)) != 1)
                    return refuse(why, s, "slices an inner axis");
                const int64_t n = x.shape()[static_cast<size_t>(ax)];
                int64_t b = begin[0], e = end[0];
                if (b < 0) b += n;
                if (e <= 0) e += n;
                const int64_t inner = numel_of(Dims(x.shape().begin() + ax + 1, x.shape().end()));
                if (b < 0 || e > n || b >= e || (e - b) * inner != width)
                    return refuse(why, s, "has a range that does not fit");
                result = {base.value, base.offset + b * inner, width};
            } else {
                return refuse(why, s, "has no fused form");
            }
            inside_[s.out[0]] = result;
        }
        for (const PendingDelay& p : delays) {
            const cell::Ref src = inside_.at(p.source_slot);
            cell::Node& d = fused_->program.nodes[static_cast<size_t>(p.node)];
            if (src.width != d.width) return refuse(why, step(0), "delays a value of another size");
            d.a = src;
        }
        // Which outputs are read after the loop (or asked for).
        std::vector<bool> outside(plan_.slot_vars.size(), false);
        for (size_t i = 0; i < plan_.steps.size(); ++i)
            if (plan_.steps[i].loop != plan_.steps[static_cast<size_t>(loop_.first)].loop)
                for (int s : plan_.steps[i].in) outside[static_cast<size_t>(s)] = true;
        for (int s : plan_.requested) outside[static_cast<size_t>(s)] = true;
        for (int k = 0; k < loop_.count; ++k) {
            const int s = step(k).out[0];
            const cell::Ref ref = inside_.at(s);
            fused_->outputs.push_back({s, ref, static_cast<bool>(outside[static_cast<size_t>(s)])});
            if (outside[static_cast<size_t>(s)])
                fused_->program.nodes[static_cast<size_t>(ref.value)].output = true;
        }
        const std::string bad = cell::check(fused_->program);
        if (!bad.empty()) {
            why = "the cell program is invalid: " + bad;
            return nullptr;
        }
        return fused;
    }

private:
    const Step& step(int k) const { return plan_.steps[static_cast<size_t>(loop_.first + k)]; }

    std::shared_ptr<const FusedLoop> refuse(std::string& why, const Step& s, const char* what) {
        why = s.where + " " + what;
        return nullptr;
    }

    cell::Ref push(const cell::Node& d) {
        fused_->program.nodes.push_back(d);
        fused_->input_slot.push_back(-1);
        return {static_cast<int>(fused_->program.nodes.size()) - 1, 0, d.width};
    }

    int input(int slot, cell::Kind kind, int64_t width) {
        const auto key = std::make_pair(slot, width);
        auto it = inputs_.find(key);
        if (it != inputs_.end()) return it->second;
        cell::Node d;
        d.kind = kind;
        d.width = width;
        const int node = push(d).value;
        fused_->input_slot.back() = slot;
        inputs_.emplace(key, node);
        return node;
    }

    // An element-wise operand for an output of `width`: a loop value of that width (or 1), or an outside
    // value whose sample has that many elements (or one, broadcast). {-1}: neither.
    cell::Ref operand(int slot, int64_t width) {
        auto it = inside_.find(slot);
        if (it != inside_.end()) {
            if (it->second.value < 0) return {};  // produced later in the frame: not an operand here
            return it->second.width == width || it->second.width == 1 ? it->second : cell::Ref{};
        }
        const Variable& v = plan_.slot_vars[static_cast<size_t>(slot)];
        if (!known(v.shape())) return {};
        const int64_t n = numel_of(v.shape());
        if (n != width && n != 1) return {};
        const cell::Kind kind = v.has_sequence_axis() ? cell::Kind::frame_input
                                : v.has_batch_axis()  ? cell::Kind::sequence_input
                                                      : cell::Kind::fixed_input;
        if (kind == cell::Kind::frame_input && v.dynamic_rank() != 2) return {};
        if (kind == cell::Kind::sequence_input && v.dynamic_rank() != 1) return {};
        return {input(slot, kind, n), 0, n};
    }

    const Plan& plan_;
    const Loop& loop_;
    FusedLoop* fused_ = nullptr;
    std::unordered_map<int, cell::Ref> inside_;  // loop slots (value -1 until their step is compiled)
    std::map<std::pair<int, int64_t>, int> inputs_;
};

}  // namespace

std::shared_ptr<const FusedLoop> compile_fused_loop(const Plan& plan, const Loop& loop, std::string& why) {
    return Compiler(plan, loop).compile(why);
}

std::shared_ptr<const cell::Run> run_fused_forward(const Plan& plan, const FusedLoop& fused,
                                                   std::vector<Value>& values, bool for_backward) {
    if (!fused_recurrence()) return nullptr;
    const cell::Program& p = fused.program;
    // The sequences, from a frame input (every loop has one: the delays' first frames need the layout).
    std::shared_ptr<const SequenceLayout> layout;
    int64_t n = -1, frames = -1;
    // The loop computes in its values' dtype; an operand of another float dtype (a default f32 initial
    // state in an f64 loop) is converted, as the general path's copies convert it.
    const DataType dtype = plan.slot_vars[static_cast<size_t>(fused.outputs.at(0).slot)].dtype();
    std::optional<Device> device;
    std::vector<Tensor> inputs(p.nodes.size());
    for (size_t i = 0; i < p.nodes.size(); ++i) {
        const int slot = fused.input_slot[i];
        if (slot < 0) continue;
        const Value& v = values[static_cast<size_t>(slot)];
        if (!v.defined() || !v.data().device().is_cpu()) return nullptr;
        Tensor d = v.data();
        if (d.dtype() != DataType::f32 && d.dtype() != DataType::f64) return nullptr;
        if (device && *device != d.device()) return nullptr;
        device = d.device();
        if (d.dtype() != dtype) d = d.to(dtype);
        if (p.nodes[i].kind == cell::Kind::frame_input) {
            if (n < 0) n = d.dim(0), frames = d.dim(1), layout = v.layout();
            if (d.rank() < 2 || d.dim(0) != n || d.dim(1) != frames) return nullptr;
        }
        inputs[i] = d;
    }
    if (n < 0) return nullptr;
    if (layout && layout->has_start_flags()) return nullptr;  // CNTK's carried state: the general path
    std::vector<int64_t> lengths(static_cast<size_t>(n), frames);
    if (layout) {
        if (layout->num_sequences() != n) return nullptr;
        for (int64_t s = 0; s < n; ++s)
            lengths[static_cast<size_t>(s)] = layout->lengths()[static_cast<size_t>(s)];
    }
    // A per-sequence input must have a row per sequence.
    for (size_t i = 0; i < p.nodes.size(); ++i)
        if (p.nodes[i].kind == cell::Kind::sequence_input && (inputs[i].rank() < 1 || inputs[i].dim(0) != n))
            return nullptr;
    auto run =
        std::make_shared<const cell::Run>(p, std::move(inputs), std::move(lengths), frames, for_backward);
    for (const FusedLoop::Output& o : fused.outputs) {
        if (!o.read_outside) continue;
        const Variable& var = plan.slot_vars[static_cast<size_t>(o.slot)];
        Tensor t = run->output(o.ref.value);
        if (o.ref.offset != 0 || o.ref.width != p.nodes[static_cast<size_t>(o.ref.value)].width)
            t = t.slice(2, o.ref.offset, o.ref.offset + o.ref.width).contiguous();
        Dims dims{n, frames};
        dims.insert(dims.end(), var.shape().begin(), var.shape().end());
        values[static_cast<size_t>(o.slot)] = Value(t.reshape(dims), layout);
    }
    return run;
}

void run_fused_backward(const FusedLoop& fused, const cell::Run& run, const std::vector<Value>& values,
                        std::vector<Tensor>& grads, const std::vector<bool>& leads) {
    const cell::Program& p = fused.program;
    std::vector<Tensor> output_grads(p.nodes.size());
    std::vector<bool> borrowed(p.nodes.size(), false);
    bool any = false;
    for (const FusedLoop::Output& o : fused.outputs) {
        const Tensor& g = grads[static_cast<size_t>(o.slot)];
        if (!o.read_outside || !g.defined()) continue;
        const int64_t width = p.nodes[static_cast<size_t>(o.ref.value)].width;
        Tensor flat = g.reshape({g.dim(0), g.dim(1), -1});
        const size_t node = static_cast<size_t>(o.ref.value);
        Tensor& acc = output_grads[node];
        if (o.ref.offset == 0 && o.ref.width == width && !acc.defined()) {
            acc = flat;  // borrowed: copied before anything is added to it
            borrowed[node] = true;
            any = true;
            continue;
        }
        if (!acc.defined()) acc = Tensor::zeros(Shape{g.dim(0), g.dim(1), width}, g.dtype(), g.device());
        if (borrowed[node]) acc = acc.clone(), borrowed[node] = false;
        Tensor view = acc.slice(2, o.ref.offset, o.ref.offset + o.ref.width);
        view.copy_from(plus(view, flat));
        any = true;
    }
    if (!any) return;
    std::vector<bool> needs(p.nodes.size(), false);
    bool need_any = false;
    for (size_t i = 0; i < p.nodes.size(); ++i)
        if (fused.input_slot[i] >= 0) need_any |= needs[i] = leads[static_cast<size_t>(fused.input_slot[i])];
    if (!need_any) return;
    const std::vector<Tensor> in_grads = run.backward(output_grads, needs);
    for (size_t i = 0; i < p.nodes.size(); ++i) {
        if (!needs[i] || !in_grads[i].defined()) continue;
        const size_t slot = static_cast<size_t>(fused.input_slot[i]);
        const Tensor& like = values[slot].data();
        Tensor g = in_grads[i].reshape(like.shape().dims()).to(like.dtype());
        grads[slot] = grads[slot].defined() ? plus(grads[slot], g) : g;
    }
}

}  // namespace detail
}  // namespace ctk
