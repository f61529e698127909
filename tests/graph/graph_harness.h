// The graph op harness: each graph op contributes cases that build a small graph over inputs with
// dynamic axes (batches, and variable-length sequences with padding) and parameters. The runner checks
// (a) the output against a float64 reference, in f32 and f64, on the real frames only, and (b) the
// gradients that backward() gives for every input and parameter against central differences in
// float64 of sum(output * R), including that padded frames get exactly zero gradient.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ctk/ctk.h"

namespace ctk::test {

struct Slot {
    enum class Kind { input, sequence, parameter, constant };
    Kind kind = Kind::input;
    Dims shape;                    // the sample shape
    int64_t batch = 2;             // inputs: sequences (or samples) in the batch
    std::vector<int64_t> lengths;  // sequence inputs: one per sequence
    double lo = -1.0, hi = 1.0;    // uniform range; integer values in [lo, hi) when `integer`
    bool integer = false;
    bool differentiable = true;
    Tensor fixed;  // when defined: the data itself (float64, [N, (T,) sample...] or the sample shape)

    static Slot input(Dims s, double lo = -1, double hi = 1) {
        Slot x;
        x.shape = std::move(s);
        x.lo = lo;
        x.hi = hi;
        return x;
    }
    static Slot sequence(Dims s, std::vector<int64_t> lengths, double lo = -1, double hi = 1) {
        Slot x = input(std::move(s), lo, hi);
        x.kind = Kind::sequence;
        x.batch = static_cast<int64_t>(lengths.size());
        x.lengths = std::move(lengths);
        return x;
    }
    static Slot param(Dims s, double lo = -1, double hi = 1) {
        Slot x = input(std::move(s), lo, hi);
        x.kind = Kind::parameter;
        return x;
    }
    static Slot constant(Dims s, double lo = -1, double hi = 1) {
        Slot x = input(std::move(s), lo, hi);
        x.kind = Kind::constant;
        x.differentiable = false;
        return x;
    }
    Slot& ints() {
        integer = true;
        differentiable = false;
        return *this;
    }
    Slot& no_grad() {
        differentiable = false;
        return *this;
    }
    Slot& with(Tensor data) {
        fixed = std::move(data);
        return *this;
    }
    Slot& batch_of(int64_t n) {
        batch = n;
        return *this;
    }
};

struct GraphCase {
    std::string name;
    std::vector<PrimitiveOp> ops;  // covered ops (for the coverage check)
    std::vector<Slot> slots;
    std::function<FunctionPtr(const std::vector<Variable>&)> build;
    // The expected output data in float64 from the slots' data (inputs [N, (T,) sample...], parameters
    // and constants as their sample shape). Padded frames of the result are ignored.
    std::function<Tensor(const std::vector<Tensor>&)> reference;
    int output = 0;         // which output of the built Function is checked
    bool gradient = true;   // run the gradient check
    bool training = false;  // forward's is_training for both checks
    // Random ops replay the same draws at every evaluation of the gradient check (their streams are
    // rewound), so that a loss over sampled classes (nce_loss) can be differentiated numerically.
    bool replay_random = false;
    double rtol_f32 = 1e-5, atol_f32 = 1e-5;
    double grad_eps = 1e-6, grad_tol = 1e-6;
};

// A case from its parts (tolerances and flags at their defaults).
GraphCase make_case(std::string name, std::vector<PrimitiveOp> ops, std::vector<Slot> slots,
                    std::function<FunctionPtr(const std::vector<Variable>&)> build,
                    std::function<Tensor(const std::vector<Tensor>&)> reference);

std::vector<GraphCase> all_graph_cases();
// all_graph_cases() built once, for the parameterised test suites; and a case's name as a gtest name.
const std::vector<GraphCase>& cached_graph_cases();
std::string graph_case_test_name(size_t index);
std::vector<GraphCase> elementwise_graph_cases();
std::vector<GraphCase> structure_graph_cases();  // times, reductions, shape ops, softmax, losses, ...
std::vector<GraphCase> conv_graph_cases();
std::vector<GraphCase> sequence_graph_cases();    // delays, recurrent loops, sequence.*
std::vector<GraphCase> sampling_graph_cases();    // random_sample, inclusion frequency, nce_loss
std::vector<GraphCase> ranking_graph_cases();     // lambda_rank, ndcg_at_1, edit_distance_error
std::vector<GraphCase> roipooling_graph_cases();  // roipooling, optimized_rnnstack
std::vector<GraphCase> image_graph_cases();       // depth_to_space, LRN, MVN, ... (blocks)
std::vector<GraphCase> misc_graph_cases();        // like ops, crop, negative cosines, CTC

// Empty when the check passes, else what failed.
std::string check_graph_forward(const GraphCase& c, DataType dtype);
std::string check_graph_gradient(const GraphCase& c);
// Runs the case on `device` and on the CPU with the same data: forward, and (when the case has a
// gradient) backward with the same root gradient. Empty when every result lives on `device` and agrees
// with the CPU's within `tol_scale` times the case's tolerances for `dtype`.
std::string check_graph_on_device(const GraphCase& c, DataType dtype, Device device, double tol_scale = 1.0);

// The case's graph in `dtype`, its parameters and constants holding the case's data (for model files).
FunctionPtr build_case_graph(const GraphCase& c, DataType dtype);
// Runs the case's graph and `convert(graph)` (e.g. written to a model file and read back) on the same
// data in f32 and compares the checked output (the converted graph's inputs matched by name). Empty when
// they agree, else what differs or what threw.
std::string check_graph_round_trip(const GraphCase& c,
                                   const std::function<FunctionPtr(const FunctionPtr&)>& convert);

// ---- reference helpers ----
// Applies fn to every frame of an input's data (all dims before the sample), returning the stacked results.
Tensor per_sample(const Tensor& data, int dyn, const std::function<Tensor(const Tensor&)>& fn);

}  // namespace ctk::test
