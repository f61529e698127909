// Op-harness cases for the indexing and layout family: gather, scatter_add, permute, concat, pad, one_hot,
// top_k. References index element by element in float64; backward rules are written with the ops
// themselves (gather <-> scatter_add, inverse permute, slices, and per-axis scatter_add for mirrored pads).
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/op_harness.h"

namespace ctk::test {

namespace {

const std::vector<DataType> kFloatTypes = {DataType::f32, DataType::f64, DataType::bf16, DataType::f16};

// ---- references ----

Tensor gather_ref(const Tensor& data, const Tensor& idx, int axis) {
    const int a = axis < 0 ? axis + data.rank() : axis, ir = idx.rank();
    Dims dims(data.shape().dims().begin(), data.shape().dims().begin() + a);
    dims.insert(dims.end(), idx.shape().dims().begin(), idx.shape().dims().end());
    dims.insert(dims.end(), data.shape().dims().begin() + a + 1, data.shape().dims().end());
    Tensor out = Tensor::empty(Shape(dims), DataType::f64);
    for_each_index(out.shape(), [&](const Dims& o) {
        Dims i(o.begin() + a, o.begin() + a + ir), d(o.begin(), o.begin() + a);
        d.push_back(static_cast<int64_t>(idx.at(i)));
        d.insert(d.end(), o.begin() + a + ir, o.end());
        out.set(o, data.at(d));
    });
    return out;
}

Tensor scatter_add_ref(const Tensor& target, const Tensor& idx, const Tensor& updates, int axis) {
    const int a = axis < 0 ? axis + target.rank() : axis, ir = idx.rank();
    Tensor out = target.to(DataType::f64).clone();
    for_each_index(updates.shape(), [&](const Dims& u) {
        Dims i(u.begin() + a, u.begin() + a + ir), t(u.begin(), u.begin() + a);
        t.push_back(static_cast<int64_t>(idx.at(i)));
        t.insert(t.end(), u.begin() + a + ir, u.end());
        out.set(t, out.at(t) + updates.at(u));
    });
    return out;
}

Tensor permute_ref(const Tensor& x, const std::vector<int>& order) {
    Dims dims;
    std::vector<int> axes;
    for (int o : order) {
        axes.push_back(o < 0 ? o + x.rank() : o);
        dims.push_back(x.dim(axes.back()));
    }
    Tensor out = Tensor::empty(Shape(dims), DataType::f64);
    for_each_index(out.shape(), [&](const Dims& o) {
        Dims src(o.size());
        for (size_t i = 0; i < o.size(); ++i) src[static_cast<size_t>(axes[i])] = o[i];
        out.set(o, x.at(src));
    });
    return out;
}

std::vector<int> inverse_order(const std::vector<int>& order) {
    std::vector<int> inv(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        int a = order[i] < 0 ? order[i] + static_cast<int>(order.size()) : order[i];
        inv[static_cast<size_t>(a)] = static_cast<int>(i);
    }
    return inv;
}

Tensor concat_ref(const Tensors& xs, int axis) {
    const int a = axis < 0 ? axis + xs[0].rank() : axis;
    Dims dims = xs[0].shape().dims();
    dims[static_cast<size_t>(a)] = 0;
    for (const auto& x : xs) dims[static_cast<size_t>(a)] += x.dim(a);
    Tensor out = Tensor::empty(Shape(dims), DataType::f64);
    int64_t at = 0;
    for (const auto& x : xs) {
        for_each_index(x.shape(), [&](const Dims& i) {
            Dims o = i;
            o[static_cast<size_t>(a)] += at;
            out.set(o, x.at(i));
        });
        at += x.dim(a);
    }
    return out;
}

// NumPy's pad modes for one axis: where position p (relative to the first element of x) reads; -1 = fill.
int64_t mirror(int64_t p, int64_t n, PadMode mode) {
    if (p >= 0 && p < n) return p;
    if (mode == PadMode::reflect) return p < 0 ? -p : 2 * (n - 1) - p;
    if (mode == PadMode::symmetric) return p < 0 ? -p - 1 : 2 * n - 1 - p;
    return -1;
}

Tensor pad_ref(const Tensor& x, const Dims& lo, const Dims& hi, PadMode mode, double value) {
    Dims dims = x.shape().dims();
    for (size_t d = 0; d < dims.size(); ++d) dims[d] += lo[d] + hi[d];
    Tensor out = Tensor::empty(Shape(dims), DataType::f64);
    for_each_index(out.shape(), [&](const Dims& o) {
        Dims src(o.size());
        bool inside = true;
        for (size_t d = 0; d < o.size(); ++d) {
            src[d] = mirror(o[d] - lo[d], x.dim(static_cast<int>(d)), mode);
            inside = inside && src[d] >= 0;
        }
        out.set(o, inside ? x.at(src) : value);
    });
    return out;
}

// The adjoint of pad, one axis at a time: a constant pad slices the interior back out; a mirrored pad
// is a gather along the axis with the mirror map, so its adjoint is scatter_add with the same map.
Tensor pad_backward(const Tensor& dy, const Shape& x_shape, const Dims& lo, PadMode mode) {
    Tensor g = dy;
    for (int a = 0; a < x_shape.rank(); ++a) {
        const int64_t n = x_shape[a], l = lo[static_cast<size_t>(a)];
        if (mode == PadMode::constant) {
            g = g.slice(a, l, l + n);
            continue;
        }
        Tensor map = Tensor::empty(Shape{g.dim(a)}, DataType::i64);
        for (int64_t p = 0; p < g.dim(a); ++p) map.data<int64_t>()[p] = mirror(p - l, n, mode);
        Dims zeros = g.shape().dims();
        zeros[static_cast<size_t>(a)] = n;
        g = scatter_add(Tensor::zeros(Shape(zeros), g.dtype(), g.device()), map.to(g.device()), g, a);
    }
    return g;
}

Tensor one_hot_ref(const Tensor& idx, int64_t classes, int axis) {
    const int a = axis < 0 ? axis + idx.rank() + 1 : axis;
    Dims dims = idx.shape().dims();
    dims.insert(dims.begin() + a, classes);
    Tensor out = Tensor::empty(Shape(dims), DataType::f64);
    for_each_index(out.shape(), [&](const Dims& o) {
        Dims i = o;
        i.erase(i.begin() + a);
        out.set(o, static_cast<int64_t>(idx.at(i)) == o[static_cast<size_t>(a)] ? 1.0 : 0.0);
    });
    return out;
}

// Full stable sort of each line: NaN first, then larger values, ties by lower index.
Tensors top_k_ref(const Tensor& x, int64_t k, int axis) {
    const int a = axis < 0 ? axis + x.rank() : axis;
    Dims dims = x.shape().dims();
    dims[static_cast<size_t>(a)] = k;
    Tensor values = Tensor::empty(Shape(dims), DataType::f64),
           indices = Tensor::empty(Shape(dims), DataType::i64);
    Dims line_shape = dims;
    line_shape[static_cast<size_t>(a)] = 1;
    for_each_index(Shape(line_shape), [&](const Dims& base) {
        std::vector<std::pair<double, int64_t>> line;
        for (int64_t j = 0; j < x.dim(a); ++j) {
            Dims i = base;
            i[static_cast<size_t>(a)] = j;
            line.push_back({x.at(i), j});
        }
        std::stable_sort(line.begin(), line.end(), [](const auto& p, const auto& q) {
            if (std::isnan(p.first) || std::isnan(q.first))
                return std::isnan(p.first) && !std::isnan(q.first);
            return p.first > q.first;
        });
        for (int64_t j = 0; j < k; ++j) {
            Dims o = base;
            o[static_cast<size_t>(a)] = j;
            values.set(o, line[static_cast<size_t>(j)].first);
            indices.set(o, static_cast<double>(line[static_cast<size_t>(j)].second));
        }
    });
    return {values, indices};
}

// ---- case builders ----

void add_gather(std::vector<OpCase>& cases, const char* tag, Shape data, Shape idx, int axis,
                bool float_indices = false) {
    OpCase c;
    c.name = detail::concat("gather/", tag);
    c.ops = {OpKind::gather, OpKind::scatter_add};
    const int a = axis < 0 ? axis + data.rank() : axis;
    c.inputs = {InputSpec::uniform(data), InputSpec::indices(idx, data[a])};
    // CNTK feeds indices as floats; these cases pass them in the data dtype (exact below 256 in bf16).
    auto indices = [float_indices](const Tensors& in) {
        return float_indices ? in[1].to(in[0].dtype()) : in[1];
    };
    c.forward = [=](const Tensors& in) { return Tensors{gather(in[0], indices(in), axis)}; };
    c.reference = [=](const Tensors& in) { return Tensors{gather_ref(in[0], in[1], axis)}; };
    c.backward = [=](const Tensors& in, const Tensors& dy) {
        return Tensors{scatter_add(Tensor::zeros(in[0].shape(), dy[0].dtype(), dy[0].device()), in[1], dy[0], axis),
                       Tensor()};
    };
    c.dtypes = kFloatTypes;
    cases.push_back(c);
}

void add_scatter_add(std::vector<OpCase>& cases, const char* tag, Shape target, Shape idx, int axis) {
    OpCase c;
    c.name = detail::concat("scatter_add/", tag);
    c.ops = {OpKind::scatter_add, OpKind::gather};
    const int a = axis < 0 ? axis + target.rank() : axis;
    Dims upd(target.dims().begin(), target.dims().begin() + a);
    upd.insert(upd.end(), idx.dims().begin(), idx.dims().end());
    upd.insert(upd.end(), target.dims().begin() + a + 1, target.dims().end());
    c.inputs = {InputSpec::uniform(target), InputSpec::indices(idx, target[a]),
                InputSpec::uniform(Shape(upd))};
    c.forward = [=](const Tensors& in) { return Tensors{scatter_add(in[0], in[1], in[2], axis)}; };
    c.reference = [=](const Tensors& in) { return Tensors{scatter_add_ref(in[0], in[1], in[2], axis)}; };
    c.backward = [=](const Tensors& in, const Tensors& dy) {
        return Tensors{dy[0], Tensor(), gather(dy[0], in[1], axis)};
    };
    c.dtypes = kFloatTypes;
    c.rtol_f32 = 1e-5;
    c.atol_f32 = 1e-5;  // sums of several updates in f32
    cases.push_back(c);
}

void add_permute(std::vector<OpCase>& cases, const char* tag, Shape x, std::vector<int> order,
                 bool grad = true) {
    OpCase c;
    c.name = detail::concat("permute/", tag);
    c.ops = {OpKind::permute};
    c.inputs = {InputSpec::uniform(x)};
    c.forward = [=](const Tensors& in) { return Tensors{permute(in[0], order)}; };
    c.reference = [=](const Tensors& in) { return Tensors{permute_ref(in[0], order)}; };
    if (grad) {
        c.backward = [=](const Tensors&, const Tensors& dy) {
            return Tensors{permute(dy[0], inverse_order(order))};
        };
    }
    c.dtypes = kFloatTypes;
    cases.push_back(c);
}

void add_concat(std::vector<OpCase>& cases, const char* tag, std::vector<Shape> shapes, int axis) {
    OpCase c;
    c.name = detail::concat("concat/", tag);
    c.ops = {OpKind::concat};
    for (const auto& s : shapes) c.inputs.push_back(InputSpec::uniform(s));
    c.forward = [=](const Tensors& in) { return Tensors{concat(in, axis)}; };
    c.reference = [=](const Tensors& in) { return Tensors{concat_ref(in, axis)}; };
    c.backward = [=](const Tensors& in, const Tensors& dy) {
        Tensors dx;
        int64_t at = 0;
        for (const auto& x : in) {
            dx.push_back(dy[0].slice(axis, at, at + x.dim(axis)));
            at += x.dim(axis);
        }
        return dx;
    };
    c.dtypes = kFloatTypes;
    cases.push_back(c);
}

void add_pad(std::vector<OpCase>& cases, const char* tag, Shape x, Dims lo, Dims hi, PadMode mode,
             double value = 0, bool grad = true) {
    OpCase c;
    c.name = detail::concat("pad/", tag);
    c.ops = {OpKind::pad};
    c.inputs = {InputSpec::uniform(x)};
    c.forward = [=](const Tensors& in) { return Tensors{pad(in[0], lo, hi, mode, value)}; };
    c.reference = [=](const Tensors& in) { return Tensors{pad_ref(in[0], lo, hi, mode, value)}; };
    if (grad) {
        c.backward = [=](const Tensors& in, const Tensors& dy) {
            return Tensors{pad_backward(dy[0], in[0].shape(), lo, mode)};
        };
    }
    c.dtypes = kFloatTypes;
    cases.push_back(c);
}

void add_one_hot(std::vector<OpCase>& cases, const char* tag, Shape idx, int64_t classes, int axis,
                 bool float_indices = false) {
    OpCase c;
    c.name = detail::concat("one_hot/", tag);
    c.ops = {OpKind::one_hot};
    // The second input only carries the case dtype into forward (one_hot has no floating operand).
    c.inputs = {InputSpec::indices(idx, classes), InputSpec::uniform({1}).no_grad()};
    c.forward = [=](const Tensors& in) {
        Tensor i = float_indices ? in[0].to(in[1].dtype()) : in[0];
        return Tensors{one_hot(i, classes, axis, in[1].dtype())};
    };
    c.reference = [=](const Tensors& in) { return Tensors{one_hot_ref(in[0], classes, axis)}; };
    c.dtypes = kFloatTypes;
    cases.push_back(c);
}

void add_top_k(std::vector<OpCase>& cases, const char* tag, InputSpec x, int64_t k, int axis) {
    OpCase c;
    c.name = detail::concat("top_k/", tag);
    c.ops = {OpKind::top_k};
    c.inputs = {std::move(x)};
    c.forward = [=](const Tensors& in) {
        TopKResult r = top_k(in[0], k, axis);
        return Tensors{r.values, r.indices};
    };
    c.reference = [=](const Tensors& in) { return top_k_ref(in[0], k, axis); };
    c.dtypes = kFloatTypes;
    cases.push_back(c);
}

}  // namespace

std::vector<OpCase> indexing_cases() {
    std::vector<OpCase> cases;

    add_gather(cases, "axis0_embedding", {10, 6}, {4, 3}, 0);
    add_gather(cases, "axis1_3d", {3, 7, 4}, {5}, 1);
    add_gather(cases, "last_axis_negative", {4, 9}, {2, 3}, -1);
    add_gather(cases, "scalar_index", {5, 3}, {}, 0);
    add_gather(cases, "empty_indices", {5, 3}, {0}, 1);
    add_gather(cases, "size1_axis_duplicates", {1, 4}, {3}, 0);
    add_gather(cases, "float_indices", {6, 5}, {4}, 0, true);

    add_scatter_add(cases, "axis0_duplicates", {6, 4}, {8}, 0);
    add_scatter_add(cases, "axis1_2d_indices", {3, 5, 2}, {2, 3}, 1);
    add_scatter_add(cases, "last_axis_negative", {4, 7}, {5}, -1);
    add_scatter_add(cases, "scalar_index", {3, 4}, {}, 0);
    add_scatter_add(cases, "empty_updates", {3, 4}, {0}, 0);

    add_permute(cases, "transpose_2d", {37, 45}, {1, 0},
                false);  // partial 32x32 tiles; too big for the gradient check
    add_permute(cases, "transpose_2d_small", {5, 7}, {1, 0});
    add_permute(cases, "3d_201", {5, 6, 7}, {2, 0, 1});
    add_permute(cases, "4d_0213", {2, 3, 4, 5}, {0, 2, 1, 3});
    add_permute(cases, "4d_3120", {3, 2, 4, 5}, {3, 1, 2, 0});
    add_permute(cases, "negative_axes", {3, 4, 2}, {-1, 0, 1});
    add_permute(cases, "size1_axes", {1, 5, 1}, {2, 1, 0});
    add_permute(cases, "empty", {0, 3}, {1, 0});
    add_permute(cases, "identity", {3, 4}, {0, 1});
    add_permute(cases, "batched_transpose_large", {3, 70, 66}, {0, 2, 1}, false);

    add_concat(cases, "axis0", {{2, 3}, {4, 3}, {1, 3}}, 0);
    add_concat(cases, "axis1_with_empty_piece", {{3, 2}, {3, 0}, {3, 5}}, 1);
    add_concat(cases, "negative_axis_3d", {{2, 3, 4}, {2, 3, 1}}, -1);
    add_concat(cases, "middle_axis", {{2, 1, 3}, {2, 4, 3}}, 1);
    add_concat(cases, "single", {{4, 5}}, 0);

    add_pad(cases, "constant_2d", {3, 4}, {1, 2}, {2, 0}, PadMode::constant, 0.5);
    add_pad(cases, "constant_empty_axis", {2, 0, 3}, {0, 1, 1}, {1, 2, 0}, PadMode::constant, -2);
    add_pad(cases, "constant_no_pad", {3, 2}, {0, 0}, {0, 0}, PadMode::constant, 9);
    add_pad(cases, "constant_scalar", {}, {}, {}, PadMode::constant, 1);
    add_pad(cases, "reflect_2d", {4, 5}, {3, 1}, {2, 4}, PadMode::reflect);
    add_pad(cases, "reflect_3d", {2, 3, 4}, {1, 2, 0}, {0, 1, 3}, PadMode::reflect);
    add_pad(cases, "reflect_1d_max", {6}, {5}, {5}, PadMode::reflect);
    add_pad(cases, "symmetric_2d", {4, 5}, {4, 2}, {1, 5}, PadMode::symmetric);
    add_pad(cases, "symmetric_size1_axis", {1, 3}, {1, 0}, {1, 3}, PadMode::symmetric);
    add_pad(cases, "constant_4d_large", {4, 3, 30, 30}, {0, 0, 2, 2}, {0, 0, 2, 2}, PadMode::constant, 0,
            false);
    add_pad(cases, "reflect_4d_large", {4, 3, 30, 30}, {0, 1, 3, 3}, {0, 1, 3, 3}, PadMode::reflect, 0,
            false);

    add_one_hot(cases, "last_axis", {3, 4}, 5, -1);
    add_one_hot(cases, "axis0", {6}, 4, 0);
    add_one_hot(cases, "middle_axis_float_indices", {2, 3}, 3, 1, true);
    add_one_hot(cases, "scalar_index", {}, 7, -1);
    add_one_hot(cases, "one_class", {5}, 1, -1);
    add_one_hot(cases, "empty", {0, 2}, 3, -1);

    add_top_k(cases, "last_axis", InputSpec::uniform({4, 10}), 3, -1);
    add_top_k(cases, "axis0_full_sort", InputSpec::uniform({9, 5}), 9, 0);
    add_top_k(cases, "middle_axis_negative", InputSpec::uniform({2, 6, 3}), 2, -2);
    add_top_k(cases, "k1_1d", InputSpec::uniform({17}), 1, 0);
    add_top_k(cases, "long_rows", InputSpec::uniform({3, 2000}), 5, 1);
    add_top_k(cases, "large_k_partition", InputSpec::uniform({2, 100}), 40, -1);  // k above the small-k path
    {
        // Many equal values: the order among them is by index, in both the small-k and the partition path.
        std::vector<double> v(3 * 90);
        for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>((i * 7) % 5) - 2;
        Tensor x = Tensor::from_vector(v, {3, 90});
        add_top_k(cases, "ties_small_k", InputSpec::constant(x), 7, 1);
        add_top_k(cases, "ties_large_k", InputSpec::constant(x), 50, 1);
    }
    {
        const double nan = std::numeric_limits<double>::quiet_NaN();
        Tensor x = Tensor::from_vector<double>({1, nan, 3, 3, nan, -1, 0, -0.0, 2, 2, 2, 5}, {2, 6});
        add_top_k(cases, "nan_and_ties", InputSpec::constant(x), 4, 1);
    }
    return cases;
}

}  // namespace ctk::test
