// Records a training step as a CUDA Graph and replays it (step_graph.h). What a recording keeps is
// exactly what its kernels were queued with: the argument tensors (refilled in place before each replay),
// the parameter and constant tensors and the learners' state (their addresses are part of the key, so a
// replaced value is recorded again), the loss scale (in the key) and the shapes (in the key). Ops whose
// definitions say they cannot be recorded (random ops, user functions) are refused up front; anything
// else that cannot be recorded (a read of a GPU value on the host, a host-to-device copy) fails the
// recording, and the step runs directly.
#include "train/step_graph.h"

#include <algorithm>
#include <cstring>

namespace ctk::detail {

namespace {
// Recordings that may fail (each costs the host one step's queuing work) before steps stop trying.
constexpr size_t kMaxFailures = 3;

int64_t address_word(const void* p) {
    return static_cast<int64_t>(reinterpret_cast<uintptr_t>(p));
}
void add_device(std::vector<int64_t>& w, Device d) {
    w.push_back(static_cast<int64_t>(d.type) * 1024 + d.index);
}
}  // namespace

StepGraph::StepGraph(const Program& program, int64_t replays)
    : program_id_(program.id()), leaves_(program.parameters_and_constants()), replays_(replays) {
    if (!program.capture_refusal().empty())
        refusal_ = "not recorded as a CUDA Graph: " + program.capture_refusal();
}

StepGraph::~StepGraph() = default;

bool StepGraph::made_for(const Program& program) const {
    return program.id() == program_id_ && program.current();
}

StepGraph::Key StepGraph::key_of(const ValueMap& arguments, const ValueMap& requested, Device device,
                                 double loss_scale, const ExtraKey& extra_key, std::string* why) const {
    Key key;
    std::vector<int64_t>& w = key.words;
    add_device(w, device);
    // Baked into what gets recorded: cuDNN's algorithm choice, cuBLASLt's math mode.
    w.push_back((cuda::deterministic() ? 1 : 0) + (cuda::allow_tf32() ? 2 : 0));
    int64_t scale_bits = 0;
    std::memcpy(&scale_bits, &loss_scale, sizeof(scale_bits));
    w.push_back(scale_bits);

    std::vector<const void*> outs;
    for (const auto& [var, value] : requested) outs.push_back(var.impl());
    std::sort(outs.begin(), outs.end());
    w.push_back(static_cast<int64_t>(outs.size()));
    for (const void* p : outs) w.push_back(address_word(p));

    std::vector<std::pair<const void*, const Value*>> args;
    for (const auto& [var, value] : arguments) args.emplace_back(var.impl(), &value);
    std::sort(args.begin(), args.end());
    w.push_back(static_cast<int64_t>(args.size()));
    for (const auto& [var, value] : args) {
        if (value->has_layout()) {
            *why =
                "not recorded as a CUDA Graph: minibatches of sequences are not recorded yet (their masks "
                "are built on the host)";
            return key;
        }
        const Tensor& t = value->is_one_hot() ? value->one_hot_indices() : value->data();
        w.push_back(address_word(var));
        w.push_back(value->is_one_hot() ? value->num_classes() : -1);
        w.push_back(static_cast<int64_t>(value->dtype()));
        w.push_back(static_cast<int64_t>(t.dtype()));
        add_device(w, t.device());
        w.push_back(t.rank());
        for (int64_t d : t.shape().dims()) w.push_back(d);
    }
    for (const Variable& leaf : leaves_) {
        const Tensor v = leaf.value();
        w.push_back(address_word(v.raw_data()));
        w.push_back(v.numel());
        add_device(w, v.device());
    }
    if (extra_key) extra_key(w);
    return key;
}

bool StepGraph::record(const ValueMap& arguments, Device device, const Step& step, const Prepare& prepare,
                       const Key& key, StepValues* out) {
    graph_.reset();  // the previous recording's memory goes back first: this one may need it
    recorded_ = {};
    inputs_.clear();
    // The graph's own argument tensors, made before the recording so that they outlive it.
    for (const auto& [var, value] : arguments) {
        const Tensor& src = value.is_one_hot() ? value.one_hot_indices() : value.data();
        Tensor in = Tensor::empty(src.shape(), src.dtype(), device);
        in.copy_from(src);
        inputs_.emplace(
            var, value.is_one_hot() ? Value::one_hot(in, value.num_classes(), value.dtype()) : Value(in));
    }
    // The same shapes as the warm step, so the same sample count.
    if (prepare && warm_samples_ > 0) prepare(warm_samples_);
    std::string why;
    StepValues values;
    graph_ = cuda::Graph::capture(
        device, [&] { values = step(inputs_, true); }, &why);
    if (!graph_) {
        inputs_.clear();
        failed_.push_back(key);
        status_ = "not recorded as a CUDA Graph: " + why;
        if (failed_.size() >= kMaxFailures)
            refusal_ = status_ + " (" + std::to_string(failed_.size()) + " recordings failed; no more tries)";
        return false;
    }
    recorded_ = std::move(values);
    graph_key_ = key;
    graph_->replay();  // a recording runs nothing: this step's work runs now
    ++replays_;
    status_.clear();
    *out = recorded_;
    out->replayed = true;
    return true;
}

StepValues StepGraph::run(const ValueMap& arguments, const ValueMap& requested, Device device,
                          double loss_scale, const ExtraKey& extra_key, const Step& step,
                          const Prepare& prepare) {
    if (!refusal_.empty()) {
        status_ = refusal_;
        return step(arguments, false);
    }
    std::string why;
    const Key key = key_of(arguments, requested, device, loss_scale, extra_key, &why);
    if (!why.empty()) {
        status_ = why;
        warm_key_ = {};
        return step(arguments, false);
    }
    if (graph_ && key == graph_key_) {
        for (const auto& [var, value] : arguments) {
            const Value& in = inputs_.at(var);
            if (value.is_one_hot())
                Tensor(in.one_hot_indices()).copy_from(value.one_hot_indices());
            else
                Tensor(in.data()).copy_from(value.data());
        }
        if (prepare && recorded_.samples > 0) prepare(recorded_.samples);
        graph_->replay();
        ++replays_;
        status_.clear();
        StepValues out = recorded_;
        out.replayed = true;
        return out;
    }
    const bool failed_before = std::find(failed_.begin(), failed_.end(), key) != failed_.end();
    if (key == warm_key_ && !failed_before) {
        StepValues out;
        if (record(arguments, device, step, prepare, key, &out)) return out;
    } else if (!failed_before) {
        status_ = "warming up: the first step with these shapes runs directly, the next one is recorded";
    }
    StepValues out = step(arguments, false);
    // The key as the step left things: its first run moves parameters to the device, so the key taken
    // before it names tensors the next step will not read.
    warm_key_ = key_of(arguments, requested, device, loss_scale, extra_key, &why);
    warm_samples_ = out.samples;
    return out;
}

}  // namespace ctk::detail
