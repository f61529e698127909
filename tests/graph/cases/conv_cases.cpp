// Graph harness cases: convolution (CNTK's auto padding, strides, inferred input channels), pooling,
// unpooling and batch normalization over samples with the batch axis.
#include "graph/graph_harness.h"

namespace ctk::test {

namespace {
// Max unpooling by direct loops over u [N, C, h, w] and x [N, C, H, W] (square window k, stride s,
// low pad lo): each u value is added at the first maximum of its window of x.
Tensor unpool_reference(const Tensor& u, const Tensor& x, int64_t k, int64_t s, int64_t lo) {
    Tensor y = Tensor::zeros(x.shape(), DataType::f64);
    for (int64_t n = 0; n < u.dim(0); ++n)
        for (int64_t c = 0; c < u.dim(1); ++c)
            for (int64_t i = 0; i < u.dim(2); ++i)
                for (int64_t j = 0; j < u.dim(3); ++j) {
                    int64_t br = -1, bq = -1;
                    for (int64_t a = 0; a < k; ++a)
                        for (int64_t b = 0; b < k; ++b) {
                            const int64_t r = i * s + a - lo, q = j * s + b - lo;
                            if (r < 0 || r >= x.dim(2) || q < 0 || q >= x.dim(3)) continue;
                            if (br < 0 || x.at({n, c, r, q}) > x.at({n, c, br, bq})) br = r, bq = q;
                        }
                    y.set({n, c, br, bq}, y.at({n, c, br, bq}) + u.at({n, c, i, j}));
                }
    return y;
}
}  // namespace

std::vector<GraphCase> conv_graph_cases() {
    using V = const std::vector<Variable>&;
    using T = const std::vector<Tensor>&;
    std::vector<GraphCase> cases;
    {
        GraphCase c;
        c.name = "convolution/same_pad";
        c.ops = {PrimitiveOp::convolution};
        c.slots = {Slot::param({3, 2, 3, 3}), Slot::input({2, 5, 5})};
        c.build = [](V v) { return convolution(v[0], v[1]); };
        c.reference = [](T in) {
            ConvAttrs a;
            a.strides = {1, 1};
            a.dilation = {1, 1};
            a.pad_lo = {1, 1};
            a.pad_hi = {1, 1};
            return convolution(in[1], in[0], Tensor(), a);
        };
        cases.push_back(c);
    }
    {
        GraphCase c;
        c.name = "convolution/valid_stride2";
        c.ops = {PrimitiveOp::convolution};
        c.slots = {Slot::param({2, 2, 3, 3}), Slot::input({2, 7, 6})};
        c.build = [](V v) { return convolution(v[0], v[1], {2}, {false}); };
        c.reference = [](T in) {
            ConvAttrs a;
            a.strides = {2, 2};
            a.dilation = {1, 1};
            a.pad_lo = {0, 0};
            a.pad_hi = {0, 0};
            return convolution(in[1], in[0], Tensor(), a);
        };
        cases.push_back(c);
    }
    {
        // CNTK's pre-2.7 grouped kernel with every input channel [O, C, k...]: output group g reads input
        // group g through the kernel's diagonal block (the gradient off the diagonal is zero).
        GraphCase c;
        c.name = "convolution/groups_full_kernel";
        c.ops = {PrimitiveOp::convolution};
        c.slots = {Slot::param({4, 4, 3, 3}), Slot::input({4, 5, 5})};
        c.build = [](V v) { return convolution(v[0], v[1], {1}, {false, true, true}, {1}, 2); };
        c.reference = [](T in) {
            ConvAttrs a;
            a.strides = {1, 1};
            a.dilation = {1, 1};
            a.pad_lo = {1, 1};
            a.pad_hi = {1, 1};
            std::vector<Tensor> outs;
            for (int64_t g = 0; g < 2; ++g) {
                Tensor w = in[0].slice(0, 2 * g, 2 * g + 2).slice(1, 2 * g, 2 * g + 2).contiguous();
                outs.push_back(convolution(in[1].slice(1, 2 * g, 2 * g + 2).contiguous(), w, Tensor(), a));
            }
            return concat(outs, 1);
        };
        cases.push_back(c);
    }
    for (bool same : {true, false}) {
        // Naive scatter: y[co, i*s + a - lo, j*s + b - lo] += x[ci, i, j] * W[ci, co, a, b].
        GraphCase c;
        c.name = same ? "convolution_transpose/same_stride2" : "convolution_transpose/valid_stride2";
        c.ops = {PrimitiveOp::convolution_transpose};
        c.slots = {Slot::param({2, 3, 3, 3}), Slot::input({2, 3, 3})};
        c.build = [same](V v) { return convolution_transpose(v[0], v[1], {2}, {same}); };
        c.reference = [same](T in) {
            const Tensor &w = in[0], &x = in[1];
            const int64_t out = same ? 6 : 7, n = x.dim(0);
            int64_t lo = 0, hi = 0;
            if (same) cntk_auto_pad(out, 3, 2, 1, lo, hi);
            Tensor y = Tensor::zeros(Shape{n, 3, out, out}, DataType::f64);
            for (int64_t b = 0; b < n; ++b)
                for (int64_t ci = 0; ci < 2; ++ci)
                    for (int64_t co = 0; co < 3; ++co)
                        for (int64_t i = 0; i < 3; ++i)
                            for (int64_t j = 0; j < 3; ++j)
                                for (int64_t ka = 0; ka < 3; ++ka)
                                    for (int64_t kb = 0; kb < 3; ++kb) {
                                        const int64_t r = i * 2 + ka - lo, q = j * 2 + kb - lo;
                                        if (r < 0 || r >= out || q < 0 || q >= out) continue;
                                        y.set({b, co, r, q},
                                              y.at({b, co, r, q}) +
                                                  x.at({b, ci, i, j}) * w.at({ci, co, ka, kb}));
                                    }
            return y;
        };
        cases.push_back(c);
    }
    for (bool is_max : {true, false}) {
        GraphCase c;
        c.name = is_max ? "pooling/max_3x3_s2_pad" : "pooling/avg_2x2";
        c.ops = {PrimitiveOp::pooling};
        c.slots = {Slot::input({2, 6, 6})};
        c.build = [is_max](V v) {
            return is_max ? pooling(v[0], PoolingType::max, {3, 3}, {2, 2}, {true})
                          : pooling(v[0], PoolingType::average, {2, 2}, {2, 2});
        };
        c.reference = [is_max](T in) {
            PoolAttrs p;
            p.kind = is_max ? PoolKind::max : PoolKind::average;
            p.kernel = is_max ? Dims{3, 3} : Dims{2, 2};
            p.strides = {2, 2};
            int64_t lo = 0, hi = 0;
            if (is_max) cntk_auto_pad(6, 3, 2, 1, lo, hi);
            p.pad_lo = {lo, lo};
            p.pad_hi = {hi, hi};
            return pooling(in[0], p, false).y;
        };
        cases.push_back(c);
    }
    // Unpooling: uniform random data has no ties, so every window's maximum is unique and stays put
    // under the gradient check's perturbations; the gradient reaching pooling_input is zero.
    for (bool overlap : {true, false}) {
        GraphCase c;
        c.name = overlap ? "unpooling/max_3x3_s2_pad" : "unpooling/max_2x2_s2";
        c.ops = {PrimitiveOp::unpooling};
        c.slots = overlap ? std::vector<Slot>{Slot::input({2, 3, 3}), Slot::input({2, 6, 6})}
                          : std::vector<Slot>{Slot::input({3, 2, 3}), Slot::input({3, 4, 6})};
        c.build = [overlap](V v) {
            return overlap ? unpooling(v[0], v[1], PoolingType::max, {3, 3}, {2, 2}, {true})
                           : unpooling(v[0], v[1], PoolingType::max, {2, 2}, {2});
        };
        c.reference = [overlap](T in) {
            int64_t lo = 0, hi = 0;
            if (overlap) cntk_auto_pad(6, 3, 2, 1, lo, hi);
            return unpool_reference(in[0], in[1], overlap ? 3 : 2, 2, lo);
        };
        cases.push_back(c);
    }
    {
        // Sequences; stride 1, so windows overlap and a cell that is the maximum of several adds them up.
        GraphCase c;
        c.name = "unpooling/sequence_2x2_s1";
        c.ops = {PrimitiveOp::unpooling};
        c.slots = {Slot::sequence({2, 3, 3}, {2, 3}), Slot::sequence({2, 4, 4}, {2, 3})};
        c.build = [](V v) { return unpooling(v[0], v[1], PoolingType::max, {2, 2}); };
        c.reference = [](T in) {
            const Dims u = in[0].shape().dims(), x = in[1].shape().dims();
            return unpool_reference(in[0].reshape({u[0] * u[1], u[2], u[3], u[4]}),
                                    in[1].reshape({x[0] * x[1], x[2], x[3], x[4]}), 2, 1, 0)
                .reshape(x);
        };
        cases.push_back(c);
    }
    {
        GraphCase c;
        c.name = "batch_normalization/spatial_training";
        c.ops = {PrimitiveOp::batch_normalization};
        c.slots = {Slot::input({2, 3, 3}).batch_of(3),
                   Slot::param({2}, 0.5, 1.5),
                   Slot::param({2}),
                   Slot::constant({2}),
                   Slot::constant({2}, 0.5, 1.0),
                   Slot::constant({})};
        c.training = true;
        c.grad_eps = 1e-5;
        c.grad_tol = 1e-5;
        c.build = [](V v) { return batch_normalization(v[0], v[1], v[2], v[3], v[4], v[5], true); };
        c.reference = [](T in) {
            const std::vector<int> axes{0, 2, 3};
            Tensor mean = reduce_mean(in[0], axes, true);
            Tensor var = reduce_mean(square(minus(in[0], mean)), axes, true);
            Tensor xhat =
                element_divide(minus(in[0], mean), ctk::sqrt(plus(var, Tensor::scalar(1e-5, DataType::f64))));
            return plus(element_times(xhat, in[1].reshape({1, 2, 1, 1})), in[2].reshape({1, 2, 1, 1}));
        };
        cases.push_back(c);
    }
    {
        GraphCase c;
        c.name = "batch_normalization/per_activation_inference";
        c.ops = {PrimitiveOp::batch_normalization};
        c.slots = {Slot::input({4}).batch_of(3), Slot::param({4}, 0.5, 1.5),    Slot::param({4}),
                   Slot::constant({4}),          Slot::constant({4}, 0.5, 1.0), Slot::constant({})};
        c.build = [](V v) { return batch_normalization(v[0], v[1], v[2], v[3], v[4], v[5], false); };
        c.reference = [](T in) {
            Tensor xhat = element_divide(minus(in[0], in[3]),
                                         ctk::sqrt(plus(in[4], Tensor::scalar(1e-5, DataType::f64))));
            return plus(element_times(xhat, in[1]), in[2]);
        };
        cases.push_back(c);
    }
    return cases;
}

}  // namespace ctk::test
