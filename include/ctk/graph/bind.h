// Binding: how data given for an input variable becomes the value a graph computes with. One function
// for every way data arrives (a reader's stream through a Trainer or the CLI, a Value from C++, Python
// or C), so that each rule holds everywhere and an input is bound once per step: a value already bound
// passes again at the cost of a few checks.
#pragma once

#include <optional>
#include <string_view>

#include "ctk/graph/value.h"
#include "ctk/graph/variable.h"

namespace ctk {

struct BindOptions {
    // Where the graph computes: the value moves there. None: it stays where it is.
    std::optional<Device> device;
    // Samples of another shape with as many elements take the input's sample shape (CNTK reads a
    // 784-dim MNIST stream into a (1, 28, 28) input). For reader streams, whose sample shape is the
    // file's; data given directly must come in the input's shape.
    bool reshape_samples = false;
    // The reader stream the data comes from, named in errors ("stream 'features'"); empty: the data is
    // named by its shape alone. A view: formatted only when an error is raised (binding runs every step).
    std::string_view stream;
};

// `value` as `input` takes it, or an error naming the input, the data and what was expected:
// - sequences of one frame each (a reader's stream, Value.one_hot of single indices), or dense data
//   [batch, 1, sample...], feed an input without a sequence axis as a batch (more frames: an error);
// - a single sample (the input's sample shape without the batch axis) is a batch of one;
// - the dynamic axes and the sample shape are checked (free dims take the data's), and the sequence
//   layout against the data;
// - one-hot data stays in index form; dense data must be floating-point and is converted to the input's
//   dtype, moved to the device and has its padded frames zeroed.
Value bind_input(const Variable& input, const Value& value, const BindOptions& options = {});

}  // namespace ctk
