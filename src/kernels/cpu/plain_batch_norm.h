// Per-channel f32 batch normalization on the plain [N, C, spatial...] layout (plain_batch_norm.cpp), used
// by the oneDNN batch norm kernel wherever it fits. Pointers are dense row-major; statistics are [C].
#pragma once

#include "ctk/core/shape.h"

namespace ctk::cpu {

// True for per-channel statistics of data with at least 8 values per plane (N, C, spatial...).
bool plain_batch_norm_fits(const Shape& x, bool spatial);

void plain_batch_norm_training(const float* x, const float* scale, const float* bias, float epsilon,
                               const Shape& shape, float* y, float* mean, float* var);
void plain_batch_norm_inference(const float* x, const float* scale, const float* bias, const float* mean,
                                const float* var, float epsilon, const Shape& shape, float* y);
void plain_batch_norm_backward(const float* x, const float* dy, const float* scale, const float* mean,
                               const float* var, float epsilon, const Shape& shape, float* dx, float* dscale,
                               float* dbias);

}  // namespace ctk::cpu
