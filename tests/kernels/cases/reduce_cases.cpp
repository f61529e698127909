// Op-harness cases for reductions (every op, axis patterns [K,R], [R,K], [K,R,K], split axes, all axes,
// keepdims, empty) and argmax/argmin. Backward rules of reductions are composed by the graph layer;
// here the f64 gradient check runs through sum_to_shape/broadcast compositions where they apply.
#include <cmath>
#include <limits>

#include "kernels/op_harness.h"

namespace ctk::test {

namespace {

struct Pattern {
    Shape shape;
    std::vector<int> axes;
    bool keepdims;
    const char* tag;
};

// Reference reduction over `axes` (empty = all) in double.
Tensor reduce_ref(OpKind op, const Tensor& x, std::vector<int> axes, bool keepdims) {
    if (axes.empty())
        for (int i = 0; i < x.rank(); ++i) axes.push_back(i);
    for (int& a : axes)
        if (a < 0) a += x.rank();
    Dims out_dims, keep_dims;
    for (int i = 0; i < x.rank(); ++i) {
        bool red = std::find(axes.begin(), axes.end(), i) != axes.end();
        if (!red) out_dims.push_back(x.shape()[i]);
        else if (keepdims) out_dims.push_back(1);
        keep_dims.push_back(red ? 1 : x.shape()[i]);
    }
    Shape keep(keep_dims);
    std::vector<std::vector<double>> groups(static_cast<size_t>(keep.numel()));
    for_each_index(x.shape(), [&](const Dims& i) {
        int64_t flat = 0;
        for (int d = 0; d < x.rank(); ++d) flat = flat * keep[d] + (keep[d] == 1 ? 0 : i[static_cast<size_t>(d)]);
        groups[static_cast<size_t>(flat)].push_back(x.at(i));
    });
    Tensor out = Tensor::empty(Shape(out_dims), DataType::f64);
    double* p = out.data<double>();
    for (size_t g = 0; g < groups.size(); ++g) {
        const auto& v = groups[g];
        double r = 0;
        switch (op) {
            case OpKind::reduce_sum: for (double e : v) r += e; break;
            case OpKind::reduce_mean: for (double e : v) r += e; r /= static_cast<double>(v.size()); break;
            case OpKind::reduce_max: r = -INFINITY; for (double e : v) r = std::max(r, e); break;
            case OpKind::reduce_min: r = INFINITY; for (double e : v) r = std::min(r, e); break;
            case OpKind::reduce_prod: r = 1; for (double e : v) r *= e; break;
            case OpKind::reduce_log_sum_exp: { double s = 0; for (double e : v) s += std::exp(e); r = std::log(s); break; }
            case OpKind::reduce_l1: for (double e : v) r += std::fabs(e); break;
            case OpKind::reduce_l2: for (double e : v) r += e * e; r = std::sqrt(r); break;
            case OpKind::reduce_sum_square: for (double e : v) r += e * e; break;
            default: break;
        }
        p[g] = r;
    }
    return out;
}

}  // namespace

std::vector<OpCase> reduce_cases() {
    std::vector<OpCase> cases;
    const std::vector<Pattern> patterns = {
        {{4, 37}, {1}, false, "rows"},
        {{37, 6}, {0}, false, "columns"},
        {{3, 9, 5}, {1}, true, "middle_keepdims"},
        {{3, 4, 5, 2}, {0, 2}, false, "split_axes"},
        {{2, 3, 4}, {}, false, "all"},
        {{2, 1, 3}, {-2}, false, "size1_axis"},
        {{2, 20000}, {-1}, false, "long_rows"},
        {{}, {}, false, "scalar"},
        {{3, 0}, {1}, false, "empty_reduced"},
        {{0, 3}, {1}, false, "empty_kept"},
    };
#define CTK_REDUCE_LIST(name, attrs) OpKind::name,
    const OpKind ops[] = {CTK_REDUCE_OPS(CTK_REDUCE_LIST)};
#undef CTK_REDUCE_LIST
    for (OpKind op : ops) {
        for (const auto& p : patterns) {
            bool empty_reduced = p.shape.numel() == 0 && std::string(p.tag) == "empty_reduced";
            if (empty_reduced && (op == OpKind::reduce_max || op == OpKind::reduce_min || op == OpKind::reduce_mean ||
                                  op == OpKind::reduce_log_sum_exp))
                continue;  // max/min of nothing is an error (tested in reduce_test); mean is NaN
            bool long_rows = std::string(p.tag) == "long_rows";
            if (long_rows && op == OpKind::reduce_prod) continue;  // underflows to 0 either way
            OpCase c;
            c.name = std::string(op_name(op)) + "/" + p.tag;
            c.ops = {op};
            double lo = op == OpKind::reduce_prod ? 0.5 : -1.0, hi = op == OpKind::reduce_prod ? 1.5 : 1.0;
            c.inputs = {InputSpec::uniform(p.shape, lo, hi)};
            c.forward = [op, p](const Tensors& in) { return Tensors{reduce(op, in[0], p.axes, p.keepdims)}; };
            c.reference = [op, p](const Tensors& in) { return Tensors{reduce_ref(op, in[0], p.axes, p.keepdims)}; };
            c.dtypes = {DataType::f32, DataType::f64, DataType::bf16};
            c.rtol_f32 = 1e-5;
            c.atol_f32 = 1e-5;
            if (op == OpKind::reduce_sum || op == OpKind::reduce_mean) {
                // The backward rule of sum/mean is broadcasting: checked through the composition.
                c.backward = [op, p](const Tensors& in, const Tensors& dy) {
                    Dims keep = in[0].shape().dims();
                    std::vector<int> axes = p.axes;
                    if (axes.empty())
                        for (int i = 0; i < in[0].rank(); ++i) axes.push_back(i);
                    double count = 1;
                    for (int a : axes) {
                        int n = a < 0 ? a + in[0].rank() : a;
                        count *= static_cast<double>(keep[static_cast<size_t>(n)]);
                        keep[static_cast<size_t>(n)] = 1;
                    }
                    Tensor g = Tensor::empty(in[0].shape(), DataType::f64);
                    g.copy_from(dy[0].reshape(keep));
                    if (op == OpKind::reduce_mean) g = element_times(g, Tensor::scalar(1.0 / count, DataType::f64));
                    return Tensors{g};
                };
            }
            cases.push_back(c);
        }
    }
    for (OpKind op : {OpKind::argmax, OpKind::argmin}) {
        for (int axis : {0, 1, -1}) {
            OpCase c;
            c.name = std::string(op_name(op)) + "/axis" + std::to_string(axis);
            c.ops = {op};
            c.inputs = {InputSpec::uniform({5, 7, 3})};
            c.forward = [op, axis](const Tensors& in) { return Tensors{op == OpKind::argmax ? argmax(in[0], axis) : argmin(in[0], axis)}; };
            c.reference = [op, axis](const Tensors& in) {
                const Tensor& x = in[0];
                int a = axis < 0 ? axis + 3 : axis;
                Dims od;
                for (int i = 0; i < 3; ++i)
                    if (i != a) od.push_back(x.shape()[i]);
                Tensor out = Tensor::empty(Shape(od), DataType::f64);
                for_each_index(Shape(od), [&](const Dims& o) {
                    int64_t best = 0;
                    double bv = 0;
                    for (int64_t k = 0; k < x.shape()[a]; ++k) {
                        Dims i = o;
                        i.insert(i.begin() + a, k);
                        double v = x.at(i);
                        if (k == 0 || (op == OpKind::argmax ? v > bv : v < bv)) {
                            bv = v;
                            best = k;
                        }
                    }
                    out.set(o, static_cast<double>(best));
                });
                return Tensors{out};
            };
            c.rtol_f32 = c.rtol_f64 = 0;
            c.atol_f32 = c.atol_f64 = 0;
            cases.push_back(c);
        }
    }
    return cases;
}

}  // namespace ctk::test
