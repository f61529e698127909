// Op-harness cases for dropout. The reference rebuilds the mask from the Philox draws of a fixed-seed
// generator (the same counter convention as Generator::bernoulli); backward is dy * mask.
#include "kernels/op_harness.h"

namespace ctk::test {

namespace {

constexpr uint64_t kSeed = 20240611, kOffset = 77;  // a non-zero offset checks that the kernel honours it

Tensors run_dropout(const Tensor& x, double rate) {
    Generator g(kSeed, kOffset);
    DropoutResult r = dropout(x, rate, g);
    return {r.y, r.mask};
}

}  // namespace

std::vector<OpCase> dropout_cases() {
    std::vector<OpCase> cases;
    struct Variant {
        Shape shape;
        const char* tag;
    };
    for (double rate : {0.0, 0.3, 0.9}) {
        for (const auto& v : {Variant{{7, 33}, "7x33"}, Variant{{2, 3, 4}, "2x3x4"}, Variant{{1}, "1"},
                              Variant{{}, "scalar"}, Variant{{0, 5}, "empty"}}) {
            OpCase c;
            c.name = detail::concat("dropout/rate", rate, "/", v.tag);
            c.ops = {OpKind::dropout};
            c.inputs = {InputSpec::uniform(v.shape, -2, 2)};
            c.forward = [rate](const Tensors& in) { return run_dropout(in[0], rate); };
            c.reference = [rate](const Tensors& in) {
                const int64_t n = in[0].numel();
                const double keep = 1.0 - rate;
                Tensor y = Tensor::empty(in[0].shape(), DataType::f64),
                       mask = Tensor::empty(in[0].shape(), DataType::f64);
                auto x = in[0].to_vector<double>();
                for (int64_t i = 0; i < n; ++i) {
                    auto w = philox_draw(kSeed, kOffset + static_cast<uint64_t>(i));
                    double m = uniform_double(w[0], w[1]) < keep ? 1.0 / keep : 0.0;
                    mask.data<double>()[i] = m;
                    y.data<double>()[i] = x[static_cast<size_t>(i)] * m;
                }
                return Tensors{y, mask};
            };
            c.backward = [rate](const Tensors& in, const Tensors& dy) {
                return Tensors{element_times(dy[0], run_dropout(in[0], rate)[1])};
            };
            c.outputs_without_grad = {1};  // the mask does not depend on x
            c.dtypes = {DataType::f32, DataType::f64, DataType::bf16, DataType::f16};
            cases.push_back(c);
        }
    }
    return cases;
}

}  // namespace ctk::test
