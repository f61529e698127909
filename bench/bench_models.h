// The whole-network cases of ctk_bench (the MLP, CNTK's ConvNet_MNIST, ResNet-20, ResNet-50): their
// graphs (named so that compare.py can load ctk's weights into the torch twins), learner, minibatches
// and one timed training or inference step; and the two helpers every case uses.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ctk/ctk.h"

namespace bench {

enum class Model { mlp, convnet, resnet20, resnet50 };
const char* model_name(Model m);  // as compare.py names it

// The model cases' learner: CNTK's momentum_sgd with a per-sample learning rate (applied to the summed
// gradient, as torch's SGD on a reduction='sum' loss) and unit-gain momentum per minibatch.
constexpr double kLrPerSample = 0.001;
constexpr double kMomentum = 0.9;
constexpr int kModelBatches = 8;  // distinct random minibatches, cycled, so the model cannot memorise one

// Multiply-adds per sample of each weight layer's forward pass, first layer first.
std::vector<double> model_layer_macs(Model m);

struct ModelCase {
    Model model;
    bool train;     // a Trainer step, else inference
    int64_t batch;  // samples per minibatch
};
// A model case: the graph, a Trainer (no progress writers) with CNTK's momentum_sgd, and pre-generated
// minibatches, cycled, on `device`; dtype bf16 trains with mixed precision (bf16 products and
// convolutions, f32 master weights; torch's side runs under torch.autocast). With dump_dir, writes what
// compare.py's check reads (see bench_models.cpp) and returns. A training case's Trainer goes to *trainer
// when given (its CUDA Graph status, under CTK_CUDA_GRAPH=1, joins the result line).
// `wrap_learner`, when given, replaces the case's learner by what it returns (a distributed learner
// around it: ctk_bench --data-parallel).
using LearnerWrap = std::function<ctk::LearnerPtr(ctk::LearnerPtr)>;
std::function<void()> make_model_iteration(const ModelCase& c, const std::string& dump_dir,
                                           ctk::Device device, ctk::DataType dtype,
                                           std::shared_ptr<ctk::Trainer>* trainer = nullptr,
                                           const LearnerWrap& wrap_learner = {});

// Throws ShapeError naming `what` unless t has shape `want`.
void expect_shape(const ctk::Tensor& t, const ctk::Shape& want, const char* what);
// Writes a tensor as raw little-endian float32 (row-major) to dir/name.f32, for compare.py's check.
void dump_tensor(const std::string& dir, const char* name, const ctk::Tensor& t);

}  // namespace bench
