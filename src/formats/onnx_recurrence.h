// ONNX's recurrent ops (RNN, GRU, LSTM) imported as ctk recurrent loops over a sequence axis
// (sequence::past_value forward, sequence::future_value reverse), closed with replace_placeholders.
#pragma once

#include <string>
#include <vector>

#include "formats/onnx_common.h"

namespace ctk::detail::onnx_io {

// `inputs` are the node's operands in ONNX order (X, W, R, B, sequence_lens, initial_h[, initial_c, P]);
// an absent optional one is an undefined Variable. Returns Y, Y_h (and Y_c for LSTM). X may be static
// ([seq, batch, input], layout 1: [batch, seq, input]) or, with layout 1, carry ctk's batch axis (and
// then its sequence axis, or the time dim as its first static dim). Throws NotImplementedError for
// what ctk does not express (input_forget, activations outside ONNX's list, a run-time W).
std::vector<Variable> import_recurrent_node(const onnx::NodeProto& node, const std::vector<Variable>& inputs,
                                            const std::string& where, const std::string& name);

}  // namespace ctk::detail::onnx_io
