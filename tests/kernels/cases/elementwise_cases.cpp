// Op-harness cases for the element-wise family: every unary op (forward + backward kernel), every
// binary op with broadcasting, select and cast.
#include <cmath>
#include <limits>

#include "kernels/op_harness.h"

namespace ctk::test {

namespace {

struct UnarySpec {
    OpKind op;
    double lo, hi;  // input range where the op and its derivative are smooth and finite
    std::function<double(double)> ref;
    ScalarAttrs scalars;
};

double sigmoid_ref(double x) {
    return 1.0 / (1.0 + std::exp(-x));
}

std::vector<UnarySpec> unary_specs() {
    constexpr double scale = 1.0507009873554804934193349852946, a = 1.6732632423543772848170429916717;
    return {
        {OpKind::negate, -2, 2, [](double x) { return -x; }, {}},
        {OpKind::abs, -2, 2, [](double x) { return std::fabs(x); }, {}},
        {OpKind::sqrt, 0.1, 4, [](double x) { return std::sqrt(x); }, {}},
        {OpKind::square, -2, 2, [](double x) { return x * x; }, {}},
        {OpKind::exp, -3, 3, [](double x) { return std::exp(x); }, {}},
        {OpKind::log, 0.1, 5, [](double x) { return std::log(x); }, {}},
        {OpKind::floor, -3, 3, [](double x) { return std::floor(x); }, {}},
        {OpKind::ceil, -3, 3, [](double x) { return std::ceil(x); }, {}},
        {OpKind::round, -3, 3, [](double x) { return std::floor(x + 0.5); }, {}},
        {OpKind::sin, -3, 3, [](double x) { return std::sin(x); }, {}},
        {OpKind::cos, -3, 3, [](double x) { return std::cos(x); }, {}},
        {OpKind::tan, -1.2, 1.2, [](double x) { return std::tan(x); }, {}},
        {OpKind::asin, -0.9, 0.9, [](double x) { return std::asin(x); }, {}},
        {OpKind::acos, -0.9, 0.9, [](double x) { return std::acos(x); }, {}},
        {OpKind::atan, -3, 3, [](double x) { return std::atan(x); }, {}},
        {OpKind::sinh, -2, 2, [](double x) { return std::sinh(x); }, {}},
        {OpKind::cosh, -2, 2, [](double x) { return std::cosh(x); }, {}},
        {OpKind::tanh, -2, 2, [](double x) { return std::tanh(x); }, {}},
        {OpKind::asinh, -3, 3, [](double x) { return std::asinh(x); }, {}},
        {OpKind::atanh, -0.9, 0.9, [](double x) { return std::atanh(x); }, {}},
        {OpKind::erf, -2.5, 2.5, [](double x) { return std::erf(x); }, {}},
        {OpKind::reciprocal, 0.2, 3, [](double x) { return 1.0 / x; }, {}},
        {OpKind::sigmoid, -6, 6, sigmoid_ref, {}},
        {OpKind::relu, -2, 2, [](double x) { return x > 0 ? x : 0.0; }, {}},
        {OpKind::elu, -2, 2, [](double x) { return x > 0 ? x : 0.7 * (std::exp(x) - 1); }, {0.7, 0}},
        {OpKind::selu,
         -2,
         2,
         [=](double x) { return x > 0 ? scale * x : scale * a * (std::exp(x) - 1); },
         {scale, a}},
        {OpKind::leaky_relu, -2, 2, [](double x) { return x > 0 ? x : 0.1 * x; }, {0.1, 0}},
        {OpKind::softplus, -20, 20, [](double x) { return std::log1p(std::exp(x)); }, {}},
        {OpKind::softsign, -3, 3, [](double x) { return x / (1 + std::fabs(x)); }, {}},
        {OpKind::hard_sigmoid,
         -4,
         4,
         [](double x) { return std::min(1.0, std::max(0.0, 0.2 * x + 0.5)); },
         {0.2, 0.5}},
        {OpKind::element_not, -1, 1, [](double x) { return x == 0 ? 1.0 : 0.0; }, {}},
        {OpKind::clip, -2, 2, [](double x) { return std::min(0.5, std::max(-0.7, x)); }, {-0.7, 0.5}},
    };
}

struct BinarySpec {
    OpKind op;
    double lo_a, hi_a, lo_b, hi_b;
    std::function<double(double, double)> ref;
};

std::vector<BinarySpec> binary_specs() {
    auto b = [](bool v) { return v ? 1.0 : 0.0; };
    return {
        {OpKind::plus, -2, 2, -2, 2, [](double x, double y) { return x + y; }},
        {OpKind::minus, -2, 2, -2, 2, [](double x, double y) { return x - y; }},
        {OpKind::element_times, -2, 2, -2, 2, [](double x, double y) { return x * y; }},
        {OpKind::element_divide, -2, 2, 0.5, 2, [](double x, double y) { return x / y; }},
        {OpKind::pow, 0.1, 3, -2, 2, [](double x, double y) { return std::pow(x, y); }},
        {OpKind::element_max, -2, 2, -2, 2, [](double x, double y) { return std::max(x, y); }},
        {OpKind::element_min, -2, 2, -2, 2, [](double x, double y) { return std::min(x, y); }},
        {OpKind::log_add_exp, -5, 5, -5, 5,
         [](double x, double y) { return std::log(std::exp(x) + std::exp(y)); }},
        {OpKind::equal, -2, 2, -2, 2, [=](double x, double y) { return b(x == y); }},
        {OpKind::not_equal, -2, 2, -2, 2, [=](double x, double y) { return b(x != y); }},
        {OpKind::less, -2, 2, -2, 2, [=](double x, double y) { return b(x < y); }},
        {OpKind::less_equal, -2, 2, -2, 2, [=](double x, double y) { return b(x <= y); }},
        {OpKind::greater, -2, 2, -2, 2, [=](double x, double y) { return b(x > y); }},
        {OpKind::greater_equal, -2, 2, -2, 2, [=](double x, double y) { return b(x >= y); }},
        {OpKind::element_and, -1, 1, -1, 1,
         [=](double x, double y) { return b(std::round(x) != 0 && std::round(y) != 0); }},
        {OpKind::element_or, -1, 1, -1, 1,
         [=](double x, double y) { return b(std::round(x) != 0 || std::round(y) != 0); }},
        {OpKind::element_xor, -1, 1, -1, 1,
         [=](double x, double y) { return b((std::round(x) != 0) != (std::round(y) != 0)); }},
        {OpKind::param_relu, -2, 2, 0, 0.5, [](double x, double y) { return x > 0 ? x : y * x; }},
    };
}

Tensor map_unary(const Tensor& x, const std::function<double(double)>& f) {
    Tensor out = Tensor::empty(x.shape(), DataType::f64);
    for_each_index(x.shape(), [&](const Dims& i) { out.set(i, f(x.at(i))); });
    return out;
}

}  // namespace

std::vector<OpCase> elementwise_cases() {
    std::vector<OpCase> cases;
    for (const auto& s : unary_specs()) {
        for (const Shape& shape : {Shape{3, 17}, Shape{1}, Shape{0, 4}, Shape{}}) {
            OpCase c;
            c.name = std::string("unary/") + op_name(s.op) + "/" + std::to_string(shape.rank()) + "d" +
                     (shape.numel() == 0 ? "_empty" : "");
            c.ops = {s.op, OpKind::unary_backward};
            c.inputs = {InputSpec::uniform(shape, s.lo, s.hi)};
            c.forward = [s](const Tensors& in) { return Tensors{unary(s.op, in[0], s.scalars)}; };
            c.reference = [s](const Tensors& in) { return Tensors{map_unary(in[0], s.ref)}; };
            c.backward = [s](const Tensors& in, const Tensors& dy) {
                return Tensors{unary_backward(s.op, in[0], Tensor(), dy[0], s.scalars)};
            };
            c.dtypes = {DataType::f32, DataType::f64, DataType::bf16, DataType::f16};
            if (s.op == OpKind::sinh || s.op == OpKind::cosh || s.op == OpKind::exp) c.rtol_f32 = 1e-5;
            cases.push_back(c);
        }
    }
    // Logic ops see exact 0/1 inputs so that "true" is meaningful.
    for (const auto& s : binary_specs()) {
        bool logic = s.op == OpKind::element_and || s.op == OpKind::element_or || s.op == OpKind::element_xor;
        struct Shapes {
            Shape a, b;
            const char* tag;
        };
        for (const auto& sh :
             {Shapes{{4, 5}, {4, 5}, "same"}, Shapes{{4, 5}, {5}, "row"}, Shapes{{3, 1, 5}, {4, 1}, "both"},
              Shapes{{}, {2, 3}, "scalar_a"}, Shapes{{2, 3}, {}, "scalar_b"}, Shapes{{0, 3}, {3}, "empty"}}) {
            OpCase c;
            c.name = std::string("binary/") + op_name(s.op) + "/" + sh.tag;
            c.ops = {s.op};
            c.inputs = {InputSpec::uniform(sh.a, s.lo_a, s.hi_a), InputSpec::uniform(sh.b, s.lo_b, s.hi_b)};
            OpKind op = s.op;
            auto prep = [logic](const Tensors& in) {
                if (!logic) return in;
                return Tensors{round(in[0]), round(in[1])};  // -1, 0 or 1
            };
            c.forward = [op, prep](const Tensors& in) {
                Tensors x = prep(in);
                return Tensors{binary(op, x[0], x[1])};
            };
            auto ref = s.ref;
            c.reference = [ref, prep](const Tensors& in) {
                Tensors x = prep(in);
                Shape out = broadcast_shapes(x[0].shape(), x[1].shape(), "ref");
                Tensor r = Tensor::empty(out, DataType::f64);
                for_each_index(
                    out, [&](const Dims& i) { r.set(i, ref(at_broadcast(x[0], i), at_broadcast(x[1], i))); });
                return Tensors{r};
            };
            c.dtypes = {DataType::f32, DataType::f64, DataType::bf16};
            c.rtol_f32 = 1e-6;
            cases.push_back(c);
        }
    }
    {
        OpCase c;
        c.name = "element_select/broadcast";
        c.ops = {OpKind::element_select};
        c.inputs = {InputSpec::uniform({3, 1}, -1, 1), InputSpec::uniform({3, 4}), InputSpec::uniform({4})};
        c.forward = [](const Tensors& in) {
            return Tensors{element_select(
                greater(in[0], Tensor::zeros(Shape{}, in[0].dtype(), in[0].device())), in[1], in[2])};
        };
        c.reference = [](const Tensors& in) {
            Tensor r = Tensor::empty(Shape{3, 4}, DataType::f64);
            for_each_index(r.shape(), [&](const Dims& i) {
                r.set(i, at_broadcast(in[0], i) > 0 ? at_broadcast(in[1], i) : at_broadcast(in[2], i));
            });
            return Tensors{r};
        };
        cases.push_back(c);
    }
    for (DataType to :
         {DataType::f16, DataType::bf16, DataType::i32, DataType::i64, DataType::u8, DataType::f64}) {
        OpCase c;
        c.name = std::string("cast/to_") + dtype_name(to);
        c.ops = {OpKind::cast};
        c.inputs = {InputSpec::uniform({5, 7}, 0, 100)};
        c.forward = [to](const Tensors& in) { return Tensors{cast(in[0], to)}; };
        c.reference = [to](const Tensors& in) {
            return Tensors{map_unary(in[0], [to](double x) {
                switch (to) {
                    case DataType::f16:
                        return static_cast<double>(static_cast<float>(Half(static_cast<float>(x))));
                    case DataType::bf16:
                        return static_cast<double>(static_cast<float>(BFloat16(static_cast<float>(x))));
                    case DataType::f64:
                        return x;
                    default:
                        return std::trunc(x);
                }
            })};
        };
        // the reference rounds the f64 input; f32 inputs round first, so allow one 16-bit ulp
        c.rtol_f32 = 1e-2;
        c.rtol_f64 = 0;
        c.atol_f32 = 1.0;
        cases.push_back(c);
    }
    return cases;
}

}  // namespace ctk::test
