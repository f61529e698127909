// Graph harness cases: products, reductions, softmax, shape ops, losses, plumbing, dropout.
#include <cmath>

#include "graph/graph_harness.h"

namespace ctk::test {

namespace {
Tensor s(double v) {
    return Tensor::scalar(v, DataType::f64);
}
// CNTK's cross_entropy_with_softmax block: log-sum-exp(z) - sum(t * z), which is -sum(t * log_softmax(z))
// only for targets that sum to 1 (the random ones of these cases do not).
Tensor ce_reference(const std::vector<Tensor>& in, int axis) {
    return minus(reduce_log_sum_exp(in[0], {axis}, true),
                 reduce_sum(element_times(in[1], in[0]), {axis}, true));
}
}  // namespace

std::vector<GraphCase> structure_graph_cases() {
    using V = const std::vector<Variable>&;
    using T = const std::vector<Tensor>&;
    std::vector<GraphCase> cases;

    // ---- products ----
    cases.push_back(make_case(
        "times/matrix", {PrimitiveOp::times}, {Slot::input({2, 3}), Slot::param({3, 4})},
        [](V v) { return times(v[0], v[1]); }, [](T in) { return matmul(in[0], in[1]); }));
    cases.push_back(make_case(
        "times/per_sample_matrices", {PrimitiveOp::times},
        {Slot::sequence({2, 3}, {2, 1}), Slot::sequence({3, 4}, {2, 1})},
        [](V v) { return times(v[0], v[1]); }, [](T in) { return matmul(in[0], in[1]); }));
    cases.push_back(make_case(
        "times_transpose/static_rows_per_sample_vector", {PrimitiveOp::transpose_times},
        {Slot::param({3, 4}), Slot::input({4})}, [](V v) { return times_transpose(v[0], v[1]); },
        [](T in) { return matmul(in[0].expand_dims(0), in[1].expand_dims(-1)); }));
    cases.push_back(make_case(
        "times/two_axes_contracted", {PrimitiveOp::times}, {Slot::input({2, 3}), Slot::param({2, 3, 4})},
        [](V v) { return times(v[0], v[1], 1); },
        [](T in) {
            return matmul(in[0].reshape({-1, 6}), in[1].reshape({6, 4}));
        }));
    cases.push_back(make_case(
        "times/sequence_masked", {PrimitiveOp::times}, {Slot::sequence({3}, {2, 3, 1}), Slot::param({3, 2})},
        [](V v) { return times(v[0], v[1]); }, [](T in) { return matmul(in[0], in[1]); }));
    cases.push_back(make_case(
        "times_transpose/matrix", {PrimitiveOp::transpose_times}, {Slot::input({3}), Slot::param({4, 3})},
        [](V v) { return times_transpose(v[0], v[1]); },
        [](T in) { return matmul(in[0], in[1], false, true); }));

    // ---- reductions ----
    struct R {
        const char* name;
        FunctionPtr (*graph)(const Variable&, const std::vector<Axis>&, bool, const std::string&);
        Tensor (*eager)(const Tensor&, const std::vector<int>&, bool);
        double lo;
    };
    const R reductions[] = {{"sum", reduce_sum, reduce_sum, -1},
                            {"mean", reduce_mean, reduce_mean, -1},
                            {"max", reduce_max, reduce_max, -1},
                            {"min", reduce_min, reduce_min, -1},
                            {"prod", reduce_prod, reduce_prod, 0.5},
                            {"log_sum_exp", reduce_log_sum_exp, reduce_log_sum_exp, -1},
                            {"l1", reduce_l1, reduce_l1, 0.2},
                            {"l2", reduce_l2, reduce_l2, -1},
                            {"sum_square", reduce_sum_square, reduce_sum_square, -1}};
    for (const R& r : reductions) {
        auto g = r.graph;
        auto e = r.eager;
        cases.push_back(make_case(
            std::string("reduce/") + r.name + "_axis1", {PrimitiveOp::reduce},
            {Slot::input({3, 4}, r.lo, 1.0)}, [g](V v) { return g(v[0], {Axis(1)}, true, ""); },
            [e](T in) { return e(in[0], {2}, true); }));
        cases.push_back(make_case(
            std::string("reduce/") + r.name + "_all_static", {PrimitiveOp::reduce},
            {Slot::input({3, 4}, r.lo, 1.0)},
            [g](V v) { return g(v[0], {Axis::all_static_axes()}, true, ""); },
            [e](T in) {
                return e(in[0], {1, 2}, false);
            }));
    }
    cases.push_back(make_case(
        "reduce/sum_batch_axis", {PrimitiveOp::reduce}, {Slot::input({2, 3}).batch_of(3)},
        [](V v) { return reduce_sum(v[0], {Axis::default_batch_axis()}); },
        [](T in) { return reduce_sum(in[0], {0}, false); }));
    cases.push_back(make_case(
        "reduce/mean_all_axes_masked", {PrimitiveOp::reduce}, {Slot::sequence({2}, {3, 1})},
        [](V v) { return reduce_mean(v[0], {Axis::all_axes()}); },
        [](T in) {
            // real frames: sequence 0 has 3, sequence 1 has 1
            Tensor a = in[0].select(0, 0), b = in[0].select(0, 1).slice(0, 0, 1);
            return element_divide(plus(reduce_sum(a), reduce_sum(b)), s(8));
        }));
    cases.push_back(make_case(
        "reduce/max_keepdims_false", {PrimitiveOp::reduce}, {Slot::input({3, 4})},
        [](V v) { return reduce_max(v[0], {Axis(0)}, false); },
        [](T in) { return reduce_max(in[0], {1}, false); }));
    {
        GraphCase c = make_case(
            "argmax/axis", {PrimitiveOp::argmax}, {Slot::input({3, 4})},
            [](V v) { return argmax(v[0], Axis(1)); },
            [](T in) { return argmax(in[0], 2, true).to(DataType::f64); });
        c.gradient = false;
        cases.push_back(c);
        c = make_case(
            "argmin/all", {PrimitiveOp::argmin}, {Slot::input({3, 4})}, [](V v) { return argmin(v[0]); },
            [](T in) {
                return argmin(in[0].reshape({2, 12}), 1, false).to(DataType::f64);
            });
        c.gradient = false;
        cases.push_back(c);
    }

    // ---- softmax family ----
    cases.push_back(make_case(
        "softmax/all_static", {PrimitiveOp::softmax}, {Slot::input({2, 3})},
        [](V v) { return softmax(v[0]); },
        [](T in) {
            return softmax(in[0].reshape({2, 6}), 1).reshape({2, 2, 3});
        }));
    cases.push_back(make_case(
        "softmax/axis0", {PrimitiveOp::softmax}, {Slot::input({3, 2})},
        [](V v) { return softmax(v[0], Axis(0)); }, [](T in) { return softmax(in[0], 1); }));
    cases.push_back(make_case(
        "log_softmax/last", {PrimitiveOp::log_softmax}, {Slot::sequence({4}, {2, 1})},
        [](V v) { return log_softmax(v[0], Axis(-1)); }, [](T in) { return log_softmax(in[0], -1); }));
    {
        GraphCase c = make_case(
            "hardmax/last", {PrimitiveOp::hardmax}, {Slot::input({5})}, [](V v) { return hardmax(v[0]); },
            [](T in) { return hardmax(in[0], -1); });
        c.gradient = false;
        cases.push_back(c);
    }

    // ---- shape ops ----
    cases.push_back(make_case(
        "reshape/inferred", {PrimitiveOp::reshape}, {Slot::input({2, 6})},
        [](V v) {
            return reshape(v[0], {3, -1});
        },
        [](T in) {
            return in[0].reshape({2, 3, 4});
        }));
    cases.push_back(make_case(
        "reshape/sub_range", {PrimitiveOp::reshape}, {Slot::input({2, 6})},
        [](V v) {
            return reshape(v[0], {2, 3}, 1, 2);
        },
        [](T in) {
            return in[0].reshape({2, 2, 2, 3});
        }));
    cases.push_back(make_case(
        "slice/two_axes_stride", {PrimitiveOp::slice}, {Slot::input({4, 5})},
        [](V v) {
            return slice(v[0], {Axis(0), Axis(1)}, {1, 0}, {0, 5}, {1, 2});
        },
        [](T in) { return in[0].slice(1, 1, 4).slice(2, 0, 5, 2).contiguous(); }));
    cases.push_back(make_case(
        "splice/last_axis_with_param", {PrimitiveOp::splice}, {Slot::input({2, 3}), Slot::param({2, 2})},
        [](V v) {
            return splice({v[0], v[1]}, Axis(-1));
        },
        [](T in) {
            return concat({in[0], in[1].expand_dims(0).broadcast_to(Shape{2, 2, 2}).contiguous()}, 2);
        }));
    cases.push_back(make_case(
        "splice/new_axis", {PrimitiveOp::splice}, {Slot::input({3}), Slot::input({3})},
        [](V v) {
            return splice({v[0], v[1]}, Axis(0));
        },
        [](T in) {
            return concat({in[0], in[1]}, 1);
        }));
    cases.push_back(make_case(
        "transpose/perm", {PrimitiveOp::transpose}, {Slot::input({2, 3, 4})},
        [](V v) {
            return transpose(v[0], {2, 0, 1});
        },
        [](T in) {
            return permute(in[0], {0, 3, 1, 2});
        }));
    cases.push_back(make_case(
        "transpose/swapaxes", {PrimitiveOp::transpose}, {Slot::input({2, 3})},
        [](V v) { return swapaxes(v[0]); },
        [](T in) {
            return permute(in[0], {0, 2, 1});
        }));
    cases.push_back(make_case(
        "pad/constant", {PrimitiveOp::pad}, {Slot::input({2, 3})},
        [](V v) {
            return pad(v[0], {{1, 0}, {0, 2}}, PadMode::constant, 0.5);
        },
        [](T in) {
            return pad(in[0], {0, 1, 0}, {0, 0, 2}, PadMode::constant, 0.5);
        }));
    // Mirrored pads: their gradient adds each mirrored cell back onto the cell it copied (corners too).
    cases.push_back(make_case(
        "pad/reflect", {PrimitiveOp::pad}, {Slot::input({3, 4})},
        [](V v) {
            return pad(v[0], {{1, 2}, {3, 1}}, PadMode::reflect);
        },
        [](T in) {
            return pad(in[0], {0, 1, 3}, {0, 2, 1}, PadMode::reflect);
        }));
    cases.push_back(make_case(
        "pad/symmetric", {PrimitiveOp::pad}, {Slot::input({2, 3})},
        [](V v) {
            return pad(v[0], {{2, 1}, {0, 3}}, PadMode::symmetric);
        },
        [](T in) {
            return pad(in[0], {0, 2, 0}, {0, 1, 3}, PadMode::symmetric);
        }));
    cases.push_back(make_case(
        "gather/embedding", {PrimitiveOp::gather}, {Slot::param({5, 3}), Slot::input({2}, 0, 5).ints()},
        [](V v) { return gather(v[0], v[1]); }, [](T in) { return gather(in[0], in[1], 0); }));
    cases.push_back(make_case(
        "gather/per_sample", {PrimitiveOp::gather}, {Slot::input({4, 2}), Slot::input({3}, 0, 4).ints()},
        [](V v) { return gather(v[0], v[1]); },
        [](T in) {
            return concat({gather(in[0].select(0, 0), in[1].select(0, 0), 0).expand_dims(0),
                           gather(in[0].select(0, 1), in[1].select(0, 1), 0).expand_dims(0)},
                          0);
        }));
    {
        GraphCase c = make_case(
            "one_hot/last", {PrimitiveOp::one_hot}, {Slot::input({3}, 0, 4).ints()},
            [](V v) { return one_hot(v[0], 4); }, [](T in) { return one_hot(in[0], 4, -1, DataType::f64); });
        c.gradient = false;
        cases.push_back(c);
    }
    cases.push_back(make_case(
        "top_k/values", {PrimitiveOp::top_k}, {Slot::input({6})}, [](V v) { return top_k(v[0], 3); },
        [](T in) { return top_k(in[0], 3, -1).values; }));
    {
        GraphCase c = make_case(
            "top_k/indices", {PrimitiveOp::top_k}, {Slot::input({6})}, [](V v) { return top_k(v[0], 2); },
            [](T in) { return top_k(in[0], 2, -1).indices.to(DataType::f64); });
        c.output = 1;
        c.gradient = false;
        cases.push_back(c);
    }
    cases.push_back(make_case(
        "cast/f64", {PrimitiveOp::cast}, {Slot::input({3})}, [](V v) { return cast(v[0], DataType::f64); },
        [](T in) { return in[0]; }));

    // ---- plumbing ----
    cases.push_back(make_case(
        "stop_gradient/blocks", {PrimitiveOp::stop_gradient}, {Slot::input({3}), Slot::param({3})},
        [](V v) { return element_times(stop_gradient(v[1]), v[0]); },
        [](T in) { return element_times(in[1], in[0]); }));
    // The gradient check above must see no gradient through stop_gradient: the parameter's numeric
    // gradient is not zero, so that case instead checks only the input (parameter marked no_grad).
    cases.back().slots[1].differentiable = false;
    cases.push_back(make_case(
        "alias/pass", {PrimitiveOp::pass}, {Slot::input({3})}, [](V v) { return alias(v[0], "a"); },
        [](T in) { return in[0]; }));
    // assign's inputs have no dynamic axes: ref is a parameter (its gradient must be zero, and its numeric
    // one is, as the output does not read it), input a function of another parameter.
    cases.push_back(make_case(
        "assign/parameter", {PrimitiveOp::assign, PrimitiveOp::tanh},
        {Slot::param({2, 3}), Slot::param({2, 3})}, [](V v) { return assign(v[0], tanh(v[1])); },
        [](T in) { return tanh(in[1]); }));
    {
        GraphCase c = make_case(
            "random/normal_like_plus_x", {PrimitiveOp::random_distribution}, {Slot::input({4})},
            [](V v) { return plus(v[0], normal_random_like(v[0], 1.0, 2.0, 77)); },
            [](T in) {
                Tensor noise = Tensor::empty(in[0].shape(), DataType::f64);
                Generator(77).normal(noise, 1.0, 2.0);
                return plus(in[0], noise);
            });
        c.ops.push_back(PrimitiveOp::plus);
        c.gradient = false;  // each evaluation draws new noise
        c.rtol_f32 = 1e-4;   // f32 draws use 24 random bits, f64 draws 53
        cases.push_back(c);
    }
    cases.push_back(make_case(
        "dropout/inference_is_identity", {PrimitiveOp::dropout}, {Slot::input({4})},
        [](V v) { return dropout(v[0], 0.5, 3); }, [](T in) { return in[0]; }));

    // ---- losses ----
    cases.push_back(make_case(
        "cross_entropy_with_softmax/one_hot", {PrimitiveOp::cross_entropy_with_softmax},
        {Slot::input({5}), Slot::input({5}, 0, 1).no_grad()},
        [](V v) { return cross_entropy_with_softmax(v[0], v[1]); },
        [](T in) { return ce_reference(in, 1); }));
    cases.push_back(make_case(
        "cross_entropy_with_softmax/soft_target_grad", {PrimitiveOp::cross_entropy_with_softmax},
        {Slot::sequence({4}, {2, 3}), Slot::sequence({4}, {2, 3}, 0, 1)},
        [](V v) { return cross_entropy_with_softmax(v[0], v[1]); },
        [](T in) { return ce_reference(in, 2); }));
    {
        GraphCase c = make_case(
            "classification_error/top1", {PrimitiveOp::classification_error},
            {Slot::input({4}).batch_of(6), Slot::input({4}, 0, 1).batch_of(6)},
            [](V v) { return classification_error(v[0], hardmax(v[1])); },
            [](T in) {
                return not_equal(argmax(in[0], 1, true).to(DataType::f64),
                                 argmax(in[1], 1, true).to(DataType::f64));
            });
        c.ops.push_back(PrimitiveOp::hardmax);
        c.gradient = false;
        cases.push_back(c);
        c = make_case(
            "classification_error/top2", {PrimitiveOp::classification_error},
            {Slot::input({4}).batch_of(6), Slot::input({4}, 0, 1).batch_of(6)},
            [](V v) { return classification_error(v[0], hardmax(v[1]), 2); },
            [](T in) {
                Tensor idx = top_k(in[0], 2, 1).indices.to(DataType::f64),
                       cls = argmax(in[1], 1, true).to(DataType::f64);
                Tensor hit =
                    reduce_max(equal(idx, cls.broadcast_to(idx.shape())).to(DataType::f64), {1}, false);
                return minus(s(1), hit);
            });
        c.gradient = false;
        cases.push_back(c);
    }
    cases.push_back(make_case(
        "squared_error/batch", {PrimitiveOp::squared_error}, {Slot::input({2, 3}), Slot::input({2, 3})},
        [](V v) { return squared_error(v[0], v[1]); },
        [](T in) {
            return reduce_sum_square(minus(in[0], in[1]), {1, 2});
        }));
    auto bce_ref = [](T in) {
        Tensor one = s(1);
        Tensor t = plus(element_times(in[1], ctk::log(in[0])),
                        element_times(minus(one, in[1]), ctk::log(minus(one, in[0]))));
        if (in.size() > 2) t = element_times(in[2], t);
        return negate(reduce_sum(t, {1}));
    };
    cases.push_back(make_case(
        "binary_cross_entropy/batch", {PrimitiveOp::binary_cross_entropy},
        {Slot::input({3}, 0.1, 0.9), Slot::input({3}, 0, 1)},
        [](V v) { return binary_cross_entropy(v[0], v[1]); }, bce_ref));
    cases.push_back(make_case(
        "binary_cross_entropy/weighted", {PrimitiveOp::binary_cross_entropy},
        {Slot::input({3}, 0.1, 0.9), Slot::input({3}, 0, 1), Slot::param({3}, 0.5, 2)},
        [](V v) { return weighted_binary_cross_entropy(v[0], v[1], v[2]); }, bce_ref));
    cases.push_back(make_case(
        "cosine_distance/batch", {PrimitiveOp::cosine_distance}, {Slot::input({4}), Slot::input({4})},
        [](V v) { return cosine_distance(v[0], v[1]); },
        [](T in) {
            Tensor dot = reduce_sum(element_times(in[0], in[1]), {1});
            return element_divide(dot, element_times(reduce_l2(in[0], {1}), reduce_l2(in[1], {1})));
        }));
    return cases;
}

}  // namespace ctk::test
