// The fused recurrent kernel (ctk/kernels/cell_program.h) on its own: a one-unit RNN h_t = tanh(x_t + w
// h_{t-1}) over two sequences of different lengths, forward and backward against values computed by hand
// here, and malformed programs refused with what is wrong.
#include <gtest/gtest.h>

#include <cmath>

#include "ctk/kernels/cell_program.h"

using namespace ctk;

namespace {

// Nodes: 0 x (frame input), 1 w (fixed [1 x 1] matrix), 2 h0 (fixed scalar), 3 delay of node 6,
// 4 matmul(3, w), 5 plus(x, 4), 6 tanh(5).
cell::Program rnn() {
    // Every node one element wide; a and b read whole one-element values.
    auto node = [](cell::Kind kind, OpKind op = OpKind::plus, int a = -1, int b = -1) {
        cell::Node n;
        n.kind = kind;
        n.op = op;
        n.width = 1;
        if (a >= 0) n.a = {a, 0, 1};
        if (b >= 0) n.b = {b, 0, 1};
        return n;
    };
    cell::Program p;
    p.nodes = {node(cell::Kind::frame_input),
               node(cell::Kind::fixed_input),
               node(cell::Kind::fixed_input),
               node(cell::Kind::delay, OpKind::plus, 6, 2),
               node(cell::Kind::matmul, OpKind::plus, 3, 1),
               node(cell::Kind::binary, OpKind::plus, 0, 4),
               node(cell::Kind::unary, OpKind::tanh, 5)};
    p.nodes.back().output = true;
    return p;
}

}  // namespace

TEST(CellProgram, OneUnitRnnForwardAndBackwardByHand) {
    const cell::Program p = rnn();
    ASSERT_EQ(cell::check(p), "");
    // Two sequences: lengths 1 and 3 (the longer one second, so packing reorders them), 3 frames.
    const std::vector<double> x{0.5, 9.0, 9.0, /* padding */ -0.2, 0.1, 0.7};
    const double w = 0.8, h0 = 0.3;
    std::vector<Tensor> inputs(p.nodes.size());
    inputs[0] = Tensor::from_vector(x, Shape{2, 3, 1});
    inputs[1] = Tensor::from_vector(std::vector<double>{w}, Shape{1, 1});
    inputs[2] = Tensor::from_vector(std::vector<double>{h0}, Shape{1});
    const cell::Run run(p, inputs, {1, 3}, 3);
    EXPECT_EQ(run.rows(), 4);
    // By hand.
    const double a0 = std::tanh(0.5 + w * h0);
    const double b0 = std::tanh(-0.2 + w * h0), b1 = std::tanh(0.1 + w * b0), b2 = std::tanh(0.7 + w * b1);
    const auto y = run.output(6).to_vector<double>();
    const std::vector<double> want{a0, 0, 0, b0, b1, b2};  // padding frames zero
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(y[i], want[i], 1e-12) << i;
    // Backward of L = sum of all real outputs.
    std::vector<Tensor> og(p.nodes.size());
    og[6] = Tensor::from_vector(std::vector<double>{1, 7, 7, 1, 1, 1}, Shape{2, 3, 1});  // padding ignored
    const std::vector<bool> needs{true, true, true, false, false, false, false};
    const auto g = run.backward(og, needs);
    // Sequence b: reverse-mode by hand. d_t = dL/dh_t; dz_t = d_t (1 - h_t^2); d_{t-1} += w dz_t.
    const double dzb2 = 1 * (1 - b2 * b2);
    const double db1 = 1 + w * dzb2, dzb1 = db1 * (1 - b1 * b1);
    const double db0 = 1 + w * dzb1, dzb0 = db0 * (1 - b0 * b0);
    const double dza0 = 1 - a0 * a0;
    const auto gx = g[0].to_vector<double>();
    const std::vector<double> want_gx{dza0, 0, 0, dzb0, dzb1, dzb2};
    for (size_t i = 0; i < want_gx.size(); ++i) EXPECT_NEAR(gx[i], want_gx[i], 1e-12) << i;
    EXPECT_NEAR(g[1].to_vector<double>()[0], dza0 * h0 + dzb0 * h0 + dzb1 * b0 + dzb2 * b1, 1e-12);  // dw
    EXPECT_NEAR(g[2].to_vector<double>()[0], w * (dza0 + dzb0), 1e-12);                              // dh0
}

TEST(CellProgram, MalformedProgramsAreRefusedWithTheReason) {
    cell::Program p = rnn();
    p.nodes[4].b = {0, 0, 1};  // a matmul's matrix that is a frame input
    EXPECT_NE(cell::check(p).find("node 4: a matmul's matrix must be a fixed input"), std::string::npos);
    p = rnn();
    p.nodes[5].a = {6, 0, 1};  // reads a later node without a delay
    EXPECT_NE(cell::check(p).find("node 5"), std::string::npos);
    p = rnn();
    p.nodes[3].offset = 0;
    EXPECT_NE(cell::check(p).find("offset"), std::string::npos);
    p = rnn();
    p.nodes[6].op = OpKind::sin;  // no fused form
    EXPECT_NE(cell::check(p).find("node 6: unsupported unary op"), std::string::npos);
    // A run checks its inputs too.
    p = rnn();
    std::vector<Tensor> inputs(p.nodes.size());
    inputs[0] = Tensor::zeros(Shape{2, 3, 1}, DataType::f64);
    inputs[1] = Tensor::zeros(Shape{1, 1}, DataType::f64);
    inputs[2] = Tensor::zeros(Shape{1}, DataType::f32);  // another dtype
    EXPECT_THROW(cell::Run(p, inputs, {1, 3}, 3), ValueError);
    inputs[2] = Tensor::zeros(Shape{1}, DataType::f64);
    EXPECT_THROW(cell::Run(p, inputs, {1, 4}, 3), ValueError);  // a length past the frames
    inputs[0] = Tensor::zeros(Shape{2, 2, 1}, DataType::f64);
    EXPECT_THROW(cell::Run(p, inputs, {1, 3}, 3), ShapeError);  // a frame input of the wrong size
}
