// Op-harness cases for softmax, log_softmax (forward and backward kernels) and hardmax.
#include <cmath>

#include "kernels/op_harness.h"

namespace ctk::test {

namespace {

// Applies fn to every line along `axis` of x (f64), writing the line's results into out.
Tensor along_axis(const Tensor& x, int axis, const std::function<std::vector<double>(const std::vector<double>&)>& fn) {
    int a = axis < 0 ? axis + x.rank() : axis;
    Tensor out = Tensor::empty(x.shape(), DataType::f64);
    Dims outer = x.shape().dims();
    outer[static_cast<size_t>(a)] = 1;
    for_each_index(Shape(outer), [&](const Dims& base) {
        std::vector<double> line;
        Dims i = base;
        for (int64_t k = 0; k < x.shape()[a]; ++k) {
            i[static_cast<size_t>(a)] = k;
            line.push_back(x.at(i));
        }
        auto r = fn(line);
        for (int64_t k = 0; k < x.shape()[a]; ++k) {
            i[static_cast<size_t>(a)] = k;
            out.set(i, r[static_cast<size_t>(k)]);
        }
    });
    return out;
}

std::vector<double> softmax_line(const std::vector<double>& v) {
    double m = *std::max_element(v.begin(), v.end()), s = 0;
    for (double e : v) s += std::exp(e - m);
    std::vector<double> r;
    for (double e : v) r.push_back(std::exp(e - m) / s);
    return r;
}

}  // namespace

std::vector<OpCase> softmax_cases() {
    std::vector<OpCase> cases;
    struct Geometry {
        Shape shape;
        int axis;
        const char* tag;
    };
    for (const auto& g : {Geometry{{4, 10}, -1, "last"}, Geometry{{6, 5, 3}, 1, "middle"}, Geometry{{7, 4}, 0, "first"},
                          Geometry{{1}, 0, "single"}, Geometry{{3, 1000}, 1, "wide"}}) {
        for (bool log_form : {false, true}) {
            OpCase c;
            c.name = std::string(log_form ? "log_softmax/" : "softmax/") + g.tag;
            c.ops = {log_form ? OpKind::log_softmax : OpKind::softmax,
                     log_form ? OpKind::log_softmax_backward : OpKind::softmax_backward};
            c.inputs = {InputSpec::uniform(g.shape, -5, 5)};
            int axis = g.axis;
            c.forward = [=](const Tensors& in) { return Tensors{log_form ? log_softmax(in[0], axis) : softmax(in[0], axis)}; };
            c.reference = [=](const Tensors& in) {
                return Tensors{along_axis(in[0], axis, [=](const std::vector<double>& v) {
                    auto r = softmax_line(v);
                    if (log_form)
                        for (double& e : r) e = std::log(e);
                    return r;
                })};
            };
            c.backward = [=](const Tensors& in, const Tensors& dy) {
                Tensor y = log_form ? log_softmax(in[0], axis) : softmax(in[0], axis);
                return Tensors{log_form ? log_softmax_backward(y, dy[0], axis) : softmax_backward(y, dy[0], axis)};
            };
            c.dtypes = {DataType::f32, DataType::f64, DataType::bf16};
            c.atol_f32 = 1e-6;
            c.grad_eps = 1e-4;  // the loss sums many terms: a larger step keeps rounding below the tolerance
            cases.push_back(c);
        }
        OpCase h;
        h.name = std::string("hardmax/") + g.tag;
        h.ops = {OpKind::hardmax};
        h.inputs = {InputSpec::uniform(g.shape, -5, 5)};
        int axis = g.axis;
        h.forward = [=](const Tensors& in) { return Tensors{hardmax(in[0], axis)}; };
        h.reference = [=](const Tensors& in) {
            return Tensors{along_axis(in[0], axis, [](const std::vector<double>& v) {
                std::vector<double> r(v.size(), 0.0);
                r[static_cast<size_t>(std::max_element(v.begin(), v.end()) - v.begin())] = 1.0;
                return r;
            })};
        };
        cases.push_back(h);
    }
    return cases;
}

}  // namespace ctk::test
