// A C shim so dev/conv_timing_torch.py can run ctk's convolution inside the Python process and
// alternate it with PyTorch rep by rep (fair under bursty load on a shared machine). Not part of CI:
//   g++ -O2 -std=c++20 -fopenmp -shared -fPIC -Iinclude dev/conv_timing_shim.cpp -Lbuild-conv/src \
//       -lctk_cpu -lctk_core -ldnnl -lopenblas -o /tmp/ctk_conv_shim.so
#include "ctk/ctk.h"

namespace {

struct Problem {
    ctk::Tensor x, w, dy;
    ctk::ConvAttrs attrs;
};

}  // namespace

extern "C" {

void ctk_conv_set_threads(int n) {
    ctk::set_num_threads(n);
}

// A 3x3, pad-1 convolution of x [n, c, hw, hw] to o channels with the given stride.
void* ctk_conv_make(int64_t n, int64_t c, int64_t o, int64_t hw, int64_t stride) {
    auto* p = new Problem;
    ctk::Generator g(1);
    p->x = ctk::Tensor::empty(ctk::Shape{n, c, hw, hw});
    p->w = ctk::Tensor::empty(ctk::Shape{o, c, 3, 3});
    g.uniform(p->x, -1, 1);
    g.uniform(p->w, -1, 1);
    p->attrs.strides = {stride, stride};
    p->attrs.pad_lo = {1, 1};
    p->attrs.pad_hi = {1, 1};
    p->dy = ctk::Tensor::empty(ctk::convolution(p->x, p->w, ctk::Tensor(), p->attrs).shape());
    g.uniform(p->dy, -1, 1);
    return p;
}

// Forward, backward-data and backward-weights, as one training step needs them.
void ctk_conv_step(void* problem) {
    auto* p = static_cast<Problem*>(problem);
    ctk::Tensor y = ctk::convolution(p->x, p->w, ctk::Tensor(), p->attrs);
    ctk::Tensor dx = ctk::convolution_backward_data(p->dy, p->w, p->x.shape(), p->attrs);
    ctk::ConvWeightGrads g = ctk::convolution_backward_weights(p->x, p->dy, p->w.shape(), p->attrs, false);
}

void ctk_conv_free(void* problem) {
    delete static_cast<Problem*>(problem);
}

}  // extern "C"
