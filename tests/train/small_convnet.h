// The small ConvNet that the device, mixed-precision and CUDA Graph training tests train (convolution
// with relu, batch normalization, max pooling, dropout unless left out, dense), and its minibatches: 8x8
// images (16 unless told) whose class (one of 3) shows as a bright row band, a different mix per step,
// the same on every device.
#pragma once

#include "ctk/core/rng.h"
#include "ctk/layers.h"
#include "ctk/train.h"

namespace ctk::testing {

struct SmallConvNet {
    Variable x, y;
    FunctionPtr z, loss, metric;
};

inline SmallConvNet small_convnet(bool dropout = true) {
    SmallConvNet n;
    n.x = input_variable({1, 8, 8}, DataType::f32, false, false, default_batch_axes(), "features");
    n.y = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "labels");
    using namespace layers;
    ConvolutionOptions conv;
    conv.activation = ActivationFn([](const Variable& v) { return relu(v); });
    conv.pad = true;
    FunctionPtr h = call(Convolution2D({3, 3}, 4, conv), n.x);
    h = call(BatchNormalization(), h);
    h = call(MaxPooling({2, 2}, {2, 2}), h);
    if (dropout) h = call(Dropout(0.25), h);
    n.z = call(Dense({3}), h);
    n.loss = cross_entropy_with_softmax(n.z, n.y);
    n.metric = classification_error(n.z, n.y);
    return n;
}

inline MinibatchArguments row_band_minibatch(const SmallConvNet& n, int step, int64_t size = 16) {
    Tensor xs = Tensor::empty(Shape{size, 1, 8, 8}, DataType::f32);
    Generator(100 + static_cast<uint64_t>(step)).uniform(xs, 0.0, 0.5);
    Tensor ys = Tensor::zeros(Shape{size, 3}, DataType::f32);
    for (int64_t i = 0; i < size; ++i) {
        const int64_t c = (i + step) % 3;
        ys.set({i, c}, 1.0);
        for (int64_t col = 0; col < 8; ++col) xs.set({i, 0, 2 * c, col}, 1.0);
    }
    return {{n.x, Value(xs)}, {n.y, Value(ys)}};
}

}  // namespace ctk::testing
