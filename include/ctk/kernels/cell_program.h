// A recurrent loop as one fused CPU kernel. The graph's executor meets a recurrence (a cycle through
// past_value/future_value) built from matrix products and element-wise ops, as CNTK's LSTM, GRU and
// RNNStep cells and optimized_rnnstack are, and hands it here as a CellProgram instead of running its
// ops frame by frame (src/graph/fused_loop.cpp compiles it). Per frame a CellRun does one GEMM per
// matrix product over the rows still inside their sequences and one pass per row over the element-wise
// ops in between; backward likewise in reverse, with every weight gradient one GEMM over all frames at
// the end. Sequences are packed as cuDNN and PyTorch pack them: sorted by length, time-major, so the
// rows of a frame are one contiguous block and padding costs nothing.
#pragma once

#include <cstdint>
#include <vector>

#include "ctk/core/tensor.h"
#include "ctk/kernels/kernel_op_list.h"

namespace ctk {

namespace cell {

enum class Kind : uint8_t {
    frame_input,     // from outside the loop, a row per sequence and frame: [N, T, width]
    sequence_input,  // from outside the loop, a row per sequence, the same in every frame: [N, width]
    fixed_input,     // the same row everywhere (a parameter or constant): [width]; a matmul's matrix
    delay,           // `a` as it was `offset` frames earlier (later, in a backward_in_time program), else `b`
    unary,           // op(a)
    binary,          // op(a, b); an operand of width 1 is broadcast
    matmul,          // a's row times the matrix b, [k, width], or [width, k] when transpose_b
};

// `width` elements of a value's row from `offset` (a slice of a gate block aliases it, without a copy).
struct Ref {
    int value = -1;
    int64_t offset = 0;
    int64_t width = 0;
};

struct Node {
    Kind kind = Kind::fixed_input;
    OpKind op = OpKind::plus;  // unary and binary nodes
    int64_t width = 0;         // elements per row
    Ref a, b;
    int64_t offset = 1;        // delay
    bool transpose_b = false;  // matmul
    bool output = false;       // a computed node whose value Run::output is asked for
};

struct Program {
    std::vector<Node> nodes;        // run in this order in every row and frame; only delays read later nodes
    bool backward_in_time = false;  // every delay looks ahead (future_value): frames run last to first
};

// The element-wise ops a program may use.
bool supports_unary(OpKind op);
bool supports_binary(OpKind op);
// Why `p` cannot run (empty: it can): a reference out of range or forward, widths that do not fit.
std::string check(const Program& p);

// One forward over a minibatch, kept for its backward. `inputs` has one tensor per node (undefined for
// computed nodes), on the CPU, f32 or f64 (all the same); `lengths` are the sequences' frame counts
// (each 0..frames). A node's rows are kept for every frame only when something needs them later (an
// output, a delay's source, a matmul's operand, a value backward reads); the others live for one frame.
class Run {
public:
    Run(const Program& program, std::vector<Tensor> inputs, std::vector<int64_t> lengths, int64_t frames,
        bool for_backward = true);
    // An output node's value, [N, T, width] with padding frames zero.
    Tensor output(int node) const;
    // `output_grads`: per node, the gradient of its output ([N, T, width]; undefined: none). Returns the
    // gradients of the input nodes marked in `needs` (the shape of their tensors; undefined elsewhere).
    std::vector<Tensor> backward(const std::vector<Tensor>& output_grads,
                                 const std::vector<bool>& needs) const;

    int64_t rows() const { return rows_; }  // frames summed over the sequences
    // Bytes held for backward (every computed node's packed rows).
    int64_t kept_bytes() const;

private:
    // The frame a delay at frame t reads, and whether packed row r exists there (else: the initial state).
    int64_t delay_source(const Node& d, int64_t t) const {
        return program_.backward_in_time ? t + d.offset : t - d.offset;
    }
    bool source_exists(int64_t s, int64_t r) const {
        return program_.backward_in_time ? s < frames_ && r < active_[static_cast<size_t>(s)] : s >= 0;
    }
    template <typename T>
    void forward();
    template <typename T>
    std::vector<Tensor> backward_impl(const std::vector<Tensor>& output_grads,
                                      const std::vector<bool>& needs) const;

    Program program_;
    std::vector<Tensor> inputs_;
    std::vector<int64_t> lengths_;
    int64_t frames_ = 0, rows_ = 0;
    std::vector<int64_t> order_;   // packed row r of any frame is sequence order_[r] (longest first)
    std::vector<int64_t> active_;  // per frame, the sequences that reach it (a prefix of order_)
    std::vector<int64_t> first_;   // per frame, its first packed row
    std::vector<Tensor>
        values_;              // per computed node: [rows, width] when kept, else [one frame's rows, width]
    std::vector<bool> kept_;  // per node: values_ holds every frame
    bool for_backward_ = true;
    DataType dtype_ = DataType::f32;
    Device device_;
};

}  // namespace cell
}  // namespace ctk
