// Graph harness cases: ones_like/zeros_like, eye_like, straight_through, crop_manual,
// cosine_distance_with_negative_samples, and CTC (labels_to_graph, forward_backward) against a
// float64 reference that sums the probabilities of every frame path (independent of the
// forward-backward recursion).
#include <cmath>
#include <functional>

#include "graph/graph_harness.h"

namespace ctk::test {

namespace {

Tensor eye(int64_t rows, int64_t cols) {
    Tensor e = Tensor::zeros(Shape{rows, cols}, DataType::f64);
    for (int64_t i = 0; i < std::min(rows, cols); ++i) e.set({i, i}, 1.0);
    return e;
}

// -log p(tokens | logits) by enumerating all classes^T frame paths: a path counts when removing its
// repeats and then its blanks leaves the tokens.
double ctc_brute_force(const std::vector<std::vector<double>>& logits, const std::vector<int64_t>& tokens,
                       int64_t blank) {
    const size_t t_len = logits.size(), classes = logits[0].size();
    std::vector<std::vector<double>> prob;
    for (const auto& f : logits) {
        double m = *std::max_element(f.begin(), f.end()), z = 0;
        for (double v : f) z += std::exp(v - m);
        std::vector<double> p;
        for (double v : f) p.push_back(std::exp(v - m) / z);
        prob.push_back(p);
    }
    double total = 0;
    std::vector<size_t> path(t_len, 0);
    std::function<void(size_t, double)> walk = [&](size_t t, double p) {
        if (t == t_len) {
            std::vector<int64_t> out;
            for (size_t i = 0; i < t_len; ++i)
                if ((i == 0 || path[i] != path[i - 1]) && static_cast<int64_t>(path[i]) != blank)
                    out.push_back(static_cast<int64_t>(path[i]));
            if (out == tokens) total += p;
            return;
        }
        for (size_t k = 0; k < classes; ++k) {
            path[t] = k;
            walk(t + 1, p * prob[t][k]);
        }
    };
    walk(0, 1.0);
    return -std::log(total);
}

}  // namespace

std::vector<GraphCase> misc_graph_cases() {
    using V = const std::vector<Variable>&;
    using T = const std::vector<Tensor>&;
    std::vector<GraphCase> cases;
    {
        GraphCase c = make_case(
            "constant_like/ones_and_zeros", {PrimitiveOp::constant_like, PrimitiveOp::plus},
            {Slot::sequence({3}, {2, 1})},
            [](V v) { return plus(plus(v[0], ones_like(v[0])), zeros_like(v[0])); },
            [](T in) { return plus(in[0], Tensor::scalar(1.0, DataType::f64)); });
        cases.push_back(c);
    }
    {
        GraphCase c = make_case(
            "eye_like/batch_rows", {PrimitiveOp::eye_like}, {Slot::input({4}).batch_of(3)},
            [](V v) { return eye_like(v[0]); }, [](T) { return eye(3, 4); });
        c.gradient = false;
        cases.push_back(c);
        c = make_case(
            "eye_like/static_dense", {PrimitiveOp::eye_like}, {Slot::constant({4, 2})},
            [](V v) { return eye_like(v[0], false); }, [](T) { return eye(4, 2); });
        c.gradient = false;
        cases.push_back(c);
    }
    {
        GraphCase c = make_case(
            "straight_through/sign", {PrimitiveOp::straight_through}, {Slot::input({5}, -2, 2)},
            [](V v) { return straight_through(v[0]); },
            [](T in) {
                const Tensor zero = Tensor::scalar(0.0, DataType::f64),
                             one = Tensor::scalar(1.0, DataType::f64);
                return element_select(greater(in[0], zero), one, negate(one))
                    .broadcast_to(in[0].shape())
                    .contiguous();
            });
        c.gradient = false;  // its gradient is a surrogate (ranking_test... see graph_test's StraightThrough)
        cases.push_back(c);
    }
    {
        // y = a * exp(b): a sequence times a broadcast parameter, computed on the host by the callbacks
        // (which get device values and return host tensors: the op moves them), with its own gradient.
        auto callbacks = std::make_shared<UserFunctionCallbacks>();
        callbacks->infer_outputs = [](const std::vector<Variable>& in) {
            return std::vector<UserFunctionOutput>{{in[0].shape(), in[0].dtype(), in[0].dynamic_axes()}};
        };
        callbacks->forward = [](const std::vector<Value>& in, std::vector<Value>& out, bool) {
            const Tensor a = in[0].data().to(Device::cpu()), eb = exp(in[1].data().to(Device::cpu()));
            out.push_back(Value(element_times(a, eb), in[0].layout()));
            return std::static_pointer_cast<void>(std::make_shared<Tensor>(eb));
        };
        callbacks->backward = [](const std::shared_ptr<void>& state, const std::vector<Value>& in,
                                 const std::vector<Tensor>& dy, const std::vector<bool>& needs,
                                 std::vector<Tensor>& dx) {
            const Tensor& eb = *static_cast<const Tensor*>(state.get());
            const Tensor g = dy[0].to(Device::cpu()), a = in[0].data().to(Device::cpu());
            if (needs[0]) dx[0] = element_times(g, eb);
            if (needs[1]) {  // summed over the frames the parameter was broadcast to
                const Tensor ga = element_times(element_times(g, a), eb);
                dx[1] = reduce_sum(ga.reshape({ga.numel() / eb.numel(), eb.numel()}), {0})
                            .reshape(eb.shape().dims());
            }
        };
        callbacks->serialize = [] { return Dictionary{{"name", "ScaledExp"}}; };
        cases.push_back(make_case(
            "user_function/host_callbacks", {PrimitiveOp::user_function},
            {Slot::sequence({3}, {2, 1}), Slot::param({3})},
            [callbacks](V v) {
                return user_function("ScaledExp", {v[0], v[1]}, callbacks, "scaled_exp");
            },
            [](T in) { return element_times(in[0], exp(in[1])); }));
    }
    cases.push_back(make_case(
        "crop/manual", {PrimitiveOp::crop}, {Slot::input({2, 5, 6}), Slot::input({2, 3, 4}).no_grad()},
        [](V v) { return crop_manual(v[0], v[1], 1, 2); },
        [](T in) { return in[0].slice(2, 2, 5).slice(3, 1, 5).contiguous(); }));
    {
        // 5 real frames in two sequences; padding takes no part.
        const std::vector<int64_t> lengths{2, 3};
        cases.push_back(make_case(
            "cosine_distance_with_negative_samples/sequences",
            {PrimitiveOp::cosine_distance_with_negative_samples},
            {Slot::sequence({3}, lengths), Slot::sequence({3}, lengths)},
            [](V v) { return cosine_distance_with_negative_samples(v[0], v[1], 1, 2); },
            [lengths](T in) {
                std::vector<Tensor> xs, ys;
                for (int64_t s = 0; s < 2; ++s)
                    for (int64_t t = 0; t < lengths[static_cast<size_t>(s)]; ++t) {
                        xs.push_back(in[0].select(0, s).select(0, t));
                        ys.push_back(in[1].select(0, s).select(0, t));
                    }
                const int64_t n = static_cast<int64_t>(xs.size());
                auto cosine = [](const Tensor& a, const Tensor& b) {
                    return reduce_sum(element_times(a, b)).item() /
                           std::sqrt(reduce_sum(square(a)).item() * reduce_sum(square(b)).item());
                };
                Tensor out = Tensor::zeros(Shape{2, 3, 3}, DataType::f64);
                int64_t j = 0;
                for (int64_t s = 0; s < 2; ++s)
                    for (int64_t t = 0; t < lengths[static_cast<size_t>(s)]; ++t, ++j)
                        for (int64_t m = 0; m < 3; ++m) {
                            const int64_t other = m == 0 ? j : (j + 1 + m - 1) % n;
                            out.set({s, t, m},
                                    cosine(xs[static_cast<size_t>(j)], ys[static_cast<size_t>(other)]));
                        }
                return out;
            }));
    }
    {
        // Two sequences over classes {0, 1, blank 2}: tokens (0, 1) in 4 frames and (1, 1) in 3 frames (a
        // repeat needs a blank between). Frames starting a token hold 2, continuing frames 1.
        const std::vector<int64_t> lengths{4, 3};
        Tensor labels = Tensor::from_vector(std::vector<double>{2, 0, 0, 1, 0, 0, 0, 2, 0, 0, 1, 0,  //
                                                                0, 2, 0, 0, 2, 0, 0, 1, 0, 0, 0, 0},
                                            Shape{2, 4, 3});
        GraphCase c = make_case(
            "forward_backward/ctc", {PrimitiveOp::forward_backward, PrimitiveOp::labels_to_graph},
            {Slot::sequence({3}, lengths).no_grad().with(labels), Slot::sequence({3}, lengths, -2, 2)},
            [](V v) { return forward_backward(labels_to_graph(v[0]), v[1], 2); },
            [lengths](T in) {
                const std::vector<std::vector<int64_t>> tokens{{0, 1}, {1, 1}};
                double loss = 0;
                for (int64_t s = 0; s < 2; ++s) {
                    std::vector<std::vector<double>> frames;
                    for (int64_t t = 0; t < lengths[static_cast<size_t>(s)]; ++t)
                        frames.push_back(in[1].select(0, s).select(0, t).to_vector<double>());
                    loss += ctc_brute_force(frames, tokens[static_cast<size_t>(s)], 2);
                }
                return Tensor::scalar(loss, DataType::f64);
            });
        c.rtol_f32 = 1e-5;
        cases.push_back(c);
    }
    return cases;
}

}  // namespace ctk::test
