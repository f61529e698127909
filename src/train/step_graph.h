// Internal to the Trainer: a training step's forward, backward and (where the learners allow it)
// parameter updates recorded once as a CUDA Graph and replayed while its minibatches keep their shapes
// (Trainer::set_cuda_graph). What changes from step to step on the host (learning rates, momenta, bias
// corrections) reaches the recorded update kernels through the learners' step scalars, written before
// each replay (Learner::begin_update).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ctk/core/cuda.h"
#include "ctk/graph/function.h"
#include "ctk/graph/program.h"

namespace ctk::detail {

// What the forward and backward of one step leave for the rest of the step.
struct StepValues {
    ValueMap outputs;    // the requested outputs (aggregate loss and metric among them)
    ValueMap gradients;  // of the trained parameters
    int64_t samples = 0;
    bool replayed =
        false;  // outputs and gradients live in the graph's memory: the next replay overwrites them
};

class StepGraph {
public:
    // `recorded`: true when the step runs inside a capture (nothing may be read back to the host then).
    using Step = std::function<StepValues(const ValueMap& arguments, bool recorded)>;
    // Host work for a step of `samples` samples that must happen outside the recording: called before a
    // replay or a recording (a direct step does it itself, once it knows its sample count).
    using Prepare = std::function<void(int64_t samples)>;
    // Appends what else the recorded work reads or writes (learner state, by address) to a step's key.
    using ExtraKey = std::function<void(std::vector<int64_t>& words)>;

    // For the steps of `program`: what rules a recording out is its capture_refusal() (random ops, user
    // functions: the ops' definitions say so). `replays`: the count to continue from (a trainer's earlier
    // StepGraph for another Program).
    explicit StepGraph(const Program& program, int64_t replays = 0);
    ~StepGraph();

    // Runs `step` on `arguments` on `device`: by replaying the graph recorded for steps like this one (the
    // same argument shapes, dtypes and devices, requested outputs, loss scale, and parameter and constant
    // tensors), by recording it when the previous step was like this one (so that lazily built state,
    // such as cuDNN's algorithm choice, exists before the recording), or else directly.
    StepValues run(const ValueMap& arguments, const ValueMap& requested, Device device, double loss_scale,
                   const ExtraKey& extra_key, const Step& step, const Prepare& prepare);

    // Whether this was made for `program` and its graph has not been edited since (what it found in the
    // graph, its parameters and constants and what rules a recording out, would be out of date).
    bool made_for(const Program& program) const;

    // Why the last step was not replayed; empty when it was.
    const std::string& status() const { return status_; }
    int64_t replays() const { return replays_; }

private:
    struct Key {
        std::vector<int64_t> words;  // devices, shapes, dtypes, tensor addresses, the loss scale's bits
        bool operator==(const Key& o) const { return words == o.words; }
    };
    // Empty `why` and the key, or why steps with these arguments are never recorded.
    Key key_of(const ValueMap& arguments, const ValueMap& requested, Device device, double loss_scale,
               const ExtraKey& extra_key, std::string* why) const;
    bool record(const ValueMap& arguments, Device device, const Step& step, const Prepare& prepare,
                const Key& key, StepValues* out);

    uint64_t program_id_;           // the Program this was made for
    std::string refusal_;           // why this graph is never recorded (empty: it may be)
    std::vector<Variable> leaves_;  // parameters and constants: the tensors the recorded kernels read
    std::unique_ptr<cuda::Graph> graph_;
    Key graph_key_, warm_key_;
    int64_t warm_samples_ = 0;  // the sample count of the step that made warm_key_
    std::vector<Key> failed_;   // keys whose recording failed; after a few, refusal_ says why
    ValueMap inputs_;           // the graph's argument tensors, refilled before each replay
    StepValues recorded_;       // the graph's outputs and gradients
    std::string status_ = "CUDA Graphs are off";
    int64_t replays_ = 0;
};

}  // namespace ctk::detail
