// Mixed precision (ctk's; CNTK 2.7 had only whole-model float16): the ops that tensor cores speed up
// compute in bf16 or f16 while parameters stay f32 master weights, and f16 training scales the loss so
// that small gradients survive. The Trainer applies both when given a MixedPrecision (see train.h).
#pragma once

#include <cstdint>
#include <string>

#include "ctk/core/dictionary.h"
#include "ctk/graph/function.h"

namespace ctk {

// A graph rewritten for mixed precision, and where each original variable went.
struct AutocastGraph {
    FunctionPtr function;  // outputs as the original's, with the original dtypes
    VariableMap map;       // original variable -> its counterpart (in `compute` where the rewrite lowered it)
};

// Rewrites the graph upstream of `f` (blocks included) so that
//  - matrix products and convolutions (times, transpose_times, convolution, convolution_transpose)
//    compute in `compute` (bf16 or f16): their f32 operands are cast down;
//  - ops that neither lose precision nor overflow in 16 bits (plus, minus, element_times, max/min,
//    relu/sigmoid/tanh and other bounded activations, dropout, pooling, reshapes, slices, splices,
//    delays and sequence plumbing) follow their operands: in `compute` when one operand already is,
//    the others (parameters, biases) cast down to meet it;
//  - batch normalization follows its data but keeps its scale, bias and running statistics in f32
//    (the kernels take 16-bit data with f32 statistics, as cuDNN and oneDNN do);
//  - everything else (softmax, losses, reductions, exp/log, assign, user functions) computes in the
//    original dtype: lowered operands cast back up.
// Parameters and constants are shared, not copied: they stay f32, each is cast down once per
// evaluation where it is used in 16 bits, and gradients come back through the casts in f32, so
// learners update the f32 master weights. Sparse operands keep their op in f32. Random ops keep their
// stream positions. Throws ValueError unless `compute` is bf16 or f16.
AutocastGraph autocast(const FunctionPtr& f, DataType compute);

// ---- dynamic loss scaling ----
// The loss's gradient is multiplied by scale() so that f16 gradients do not flush to zero; the
// trainer divides the f32 gradients by it before the learners see them. A step whose gradients are
// not all finite is skipped and the scale backs off; growth_interval finite steps in a row grow it
// (PyTorch's GradScaler rules). Powers of two keep the unscaling exact. The initial scale is 2^10, not
// PyTorch's 2^16: CNTK's losses are sums over the minibatch, so the loss's gradient per sample is
// already up to 1 (2^16 would overflow f16's 65504 at once) and weight gradients are minibatch sums.
struct LossScaling {
    double initial_scale = 1024.0;
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
};

class LossScaler {
public:
    explicit LossScaler(LossScaling options = {});
    double scale() const { return scale_; }
    // After a step: false (some gradient was inf or NaN) backs the scale off; the step must be skipped.
    void update(bool gradients_finite);
    int64_t skipped_steps() const { return skipped_; }
    // For checkpoints: the scale and the counters.
    Dictionary state() const;
    void restore(const Dictionary& state);

private:
    LossScaling o_;
    double scale_;
    int64_t good_steps_ = 0, skipped_ = 0;
};

// The Trainer's mixed-precision setting. Default: off (everything in the model's own dtype).
struct MixedPrecision {
    DataType compute = DataType::f32;  // f32: off; bf16 or f16
    bool scale_loss = false;
    LossScaling scaling{};

    bool enabled() const { return compute == DataType::bf16 || compute == DataType::f16; }
    // bf16 has f32's exponent range: no loss scaling needed.
    static MixedPrecision bf16() { return {DataType::bf16, false, {}}; }
    static MixedPrecision f16(LossScaling scaling = {}) { return {DataType::f16, true, scaling}; }
    // "bf16"/"bfloat16", "f16"/"float16", or "off"/"" (ValueError naming `what` otherwise).
    static MixedPrecision parse(const std::string& text, const std::string& what);
    // CTK_MIXED_PRECISION from the environment (unset: off).
    static MixedPrecision from_environment();
};

}  // namespace ctk
