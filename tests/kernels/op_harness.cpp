// The op harness runner: input generation, comparisons, forward/non-contiguous/gradient/backend checks.
#include "kernels/op_harness.h"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace ctk::test {

std::vector<OpCase> all_op_cases() {
    std::vector<OpCase> all;
    for (auto family : {elementwise_cases, reduce_cases, softmax_cases, matmul_cases, convolution_cases,
                        pooling_cases, batch_norm_cases, dropout_cases, indexing_cases, roi_pooling_cases}) {
        auto cases = family();
        all.insert(all.end(), cases.begin(), cases.end());
    }
    return all;
}

void for_each_index(const Shape& shape, const std::function<void(const Dims&)>& fn) {
    if (shape.numel() == 0) return;
    Dims idx(static_cast<size_t>(shape.rank()), 0);
    while (true) {
        fn(idx);
        int d = shape.rank() - 1;
        for (; d >= 0; --d) {
            if (++idx[static_cast<size_t>(d)] < shape[d]) break;
            idx[static_cast<size_t>(d)] = 0;
        }
        if (d < 0) return;
    }
}

double at_broadcast(const Tensor& t, const Dims& out_index) {
    Dims idx(static_cast<size_t>(t.rank()));
    size_t shift = out_index.size() - idx.size();
    for (size_t i = 0; i < idx.size(); ++i)
        idx[i] = t.shape()[static_cast<int>(i)] == 1 ? 0 : out_index[i + shift];
    return t.at(idx);
}

Tensors make_inputs(const OpCase& c, DataType case_dtype, uint64_t seed) {
    Tensors out;
    Generator gen(seed);
    const bool sixteen_bit = case_dtype == DataType::bf16 || case_dtype == DataType::f16;
    for (size_t i = 0; i < c.inputs.size(); ++i) {
        const InputSpec& spec = c.inputs[i];
        const bool keep_f32 =
            sixteen_bit && std::find(c.f32_inputs.begin(), c.f32_inputs.end(), int(i)) != c.f32_inputs.end();
        const DataType dtype = keep_f32 ? DataType::f32 : case_dtype;
        switch (spec.kind) {
            case InputSpec::Kind::uniform: {
                Tensor t = Tensor::empty(spec.shape, DataType::f64);
                gen.uniform(t, spec.lo, spec.hi);
                out.push_back(t.to(dtype));
                break;
            }
            case InputSpec::Kind::indices: {
                Tensor t = Tensor::empty(spec.shape, DataType::f64);
                gen.uniform(t, spec.lo, spec.hi);
                Tensor i = Tensor::empty(spec.shape, DataType::i64);
                auto v = t.to_vector<double>();
                int64_t* p = i.data<int64_t>();
                for (size_t k = 0; k < v.size(); ++k) p[k] = static_cast<int64_t>(std::floor(v[k]));
                out.push_back(i);
                break;
            }
            case InputSpec::Kind::fixed:
                out.push_back(is_floating(spec.fixed.dtype()) ? spec.fixed.to(dtype).clone() : spec.fixed);
                break;
        }
    }
    return out;
}

Tensors non_contiguous_copies(const Tensors& inputs) {
    Tensors out;
    for (const auto& t : inputs) {
        if (!t.defined() || t.rank() == 0 || t.numel() == 0) {
            out.push_back(t);
            continue;
        }
        // Every axis strided: the values sit at odd positions of a buffer more than twice as large in
        // each dimension, so outer strides grow large and no axis is unit-stride.
        Dims big = t.shape().dims();
        for (auto& d : big) d = 2 * d + 1;
        Tensor view = Tensor::full(Shape(big), 12345.0, t.dtype());
        for (int a = 0; a < t.rank(); ++a) view = view.slice(a, 1, big[static_cast<size_t>(a)], 2);
        view.copy_from(t);
        out.push_back(view);
    }
    return out;
}

std::string compare(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
    std::ostringstream msg;
    if (actual.defined() != expected.defined()) return "one of actual/expected is undefined";
    if (!actual.defined()) return "";
    if (actual.shape() != expected.shape()) {
        msg << "shape " << actual.shape().to_string() << " != expected " << expected.shape().to_string();
        return msg.str();
    }
    auto a = actual.to_vector<double>();
    auto e = expected.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
        bool ok = (std::isnan(a[i]) && std::isnan(e[i])) || a[i] == e[i] ||
                  std::fabs(a[i] - e[i]) <= atol + rtol * std::fabs(e[i]);
        if (!ok) {
            msg.precision(10);
            msg << "element " << i << " of " << actual.shape().to_string() << ": got " << a[i]
                << ", expected " << e[i] << " (rtol " << rtol << ", atol " << atol << ")";
            return msg.str();
        }
    }
    return "";
}

namespace {

std::vector<int> compared(const OpCase& c, size_t n) {
    if (!c.compared_outputs.empty()) return c.compared_outputs;
    std::vector<int> all(n);
    for (size_t i = 0; i < n; ++i) all[i] = static_cast<int>(i);
    return all;
}

std::string compare_outputs(const OpCase& c, const Tensors& got, const Tensors& want, double rtol,
                            double atol, const char* what) {
    if (got.size() != want.size()) {
        return detail::concat(what, ": ", got.size(), " outputs, expected ", want.size());
    }
    for (int i : compared(c, got.size())) {
        std::string m = compare(got[static_cast<size_t>(i)], want[static_cast<size_t>(i)], rtol, atol);
        if (!m.empty()) return detail::concat(what, ", output ", i, ": ", m);
    }
    return "";
}

Tensors to_f64(const Tensors& xs) {
    Tensors out;
    for (const auto& x : xs) out.push_back(x.defined() && is_floating(x.dtype()) ? x.to(DataType::f64) : x);
    return out;
}

// One upstream gradient per output, uniform in [-1, 1], in the output's dtype.
Tensors upstream_gradients(const Tensors& outputs, uint64_t seed) {
    Tensors dys;
    Generator gen(seed);
    for (const Tensor& o : outputs) {
        Tensor d = Tensor::empty(o.shape(), DataType::f64);
        gen.uniform(d, -1.0, 1.0);
        dys.push_back(d.to(o.dtype()));
    }
    return dys;
}

bool has_dtype(const OpCase& c, DataType d) {
    for (auto x : c.dtypes)
        if (x == d) return true;
    return false;
}

}  // namespace

std::pair<double, double> tolerance(const OpCase& c, DataType dtype) {
    switch (dtype) {
        case DataType::f64:
            return {c.rtol_f64, c.atol_f64};
        case DataType::bf16:
            return {std::max(c.rtol_f32, 1.6e-2), std::max(c.atol_f32, 1.6e-2)};  // 8-bit mantissa
        case DataType::f16:
            return {std::max(c.rtol_f32, 2e-3), std::max(c.atol_f32, 2e-3)};  // 11-bit mantissa
        default:
            return {c.rtol_f32, c.atol_f32};
    }
}

std::string check_forward(const OpCase& c, DataType dtype) {
    if (!has_dtype(c, dtype)) return "";
    Tensors inputs = make_inputs(c, dtype);
    Tensors got = c.forward(inputs);
    Tensors want = c.reference(to_f64(inputs));
    auto [rtol, atol] = tolerance(c, dtype);
    return compare_outputs(c, to_f64(got), want, rtol, atol, dtype_name(dtype));
}

std::string check_mixed_backward(const OpCase& c, DataType dtype) {
    if (c.f32_inputs.empty() || !c.backward || !has_dtype(c, dtype)) return "";
    const Tensors inputs = make_inputs(c, dtype);
    const Tensors dys = upstream_gradients(c.forward(inputs), 7);
    // The f64 backward of the very same (rounded) values: only the mixed kernel's own rounding differs.
    const Tensors got = c.backward(inputs, dys), want = c.backward(to_f64(inputs), to_f64(dys));
    auto [rtol, atol] = tolerance(c, dtype);
    for (size_t k = 0; k < got.size(); ++k) {
        if (!got[k].defined()) continue;
        const DataType expected = inputs[k].dtype();
        if (got[k].dtype() != expected)
            return detail::concat(dtype_name(dtype), " gradient of input ", k, " is ",
                                  dtype_name(got[k].dtype()), ", not its input's ", dtype_name(expected));
        std::string m = compare(got[k].to(DataType::f64), want[k], rtol, atol);
        if (!m.empty()) return detail::concat(dtype_name(dtype), " gradient of input ", k, ": ", m);
    }
    return "";
}

std::string check_non_contiguous(const OpCase& c, DataType dtype) {
    if (!c.test_non_contiguous || !has_dtype(c, dtype)) return "";
    Tensors inputs = make_inputs(c, dtype);
    Tensors dense = c.forward(inputs);
    Tensors strided = c.forward(non_contiguous_copies(inputs));
    // Same kernel, same values: only summation order may differ.
    bool f64 = dtype == DataType::f64;
    return compare_outputs(c, to_f64(strided), to_f64(dense), f64 ? 1e-12 : 1e-6, f64 ? 1e-14 : 1e-7,
                           "non-contiguous inputs vs contiguous");
}

std::string check_gradients(const OpCase& c) {
    if (!c.backward || !has_dtype(c, DataType::f64)) return "";
    Tensors inputs = make_inputs(c, DataType::f64, 7);
    Tensors outputs = c.forward(inputs);
    // Loss = sum_k <outputs[k], w_k> with fixed random weights w_k; its gradient w.r.t. outputs is w.
    Generator gen(99);
    Tensors weights;
    for (size_t k = 0; k < outputs.size(); ++k) {
        Tensor w = Tensor::empty(outputs[k].shape(), DataType::f64);
        bool skip = std::find(c.outputs_without_grad.begin(), c.outputs_without_grad.end(),
                              static_cast<int>(k)) != c.outputs_without_grad.end();
        if (skip || !is_floating(outputs[k].dtype()))
            w.fill(0.0);
        else
            gen.uniform(w, -1.0, 1.0);
        weights.push_back(w);
    }
    auto loss = [&](const Tensors& xs) {
        Tensors ys = c.forward(xs);
        double s = 0;
        for (size_t k = 0; k < ys.size(); ++k) {
            if (!is_floating(ys[k].dtype())) continue;
            auto y = ys[k].to_vector<double>();
            auto w = weights[k].to_vector<double>();
            for (size_t i = 0; i < y.size(); ++i) s += y[i] * w[i];
        }
        return s;
    };
    Tensors analytic = c.backward(inputs, weights);
    // Two forward passes per input element: thousands of tiny parallel regions, which under ctest -j2
    // (two processes, two threads each, two cores) make OpenMP's spinning barriers wait for a
    // descheduled partner, 50x slower. Results do not depend on the thread count, so use one.
    ScopedNumThreads one_thread(1);
    for (size_t k = 0; k < c.inputs.size(); ++k) {
        if (!c.inputs[k].differentiable) continue;
        if (k >= analytic.size() || !analytic[k].defined())
            return detail::concat("backward returned no gradient for input ", k);
        Tensor numeric = Tensor::empty(inputs[k].shape(), DataType::f64);
        Tensor x = inputs[k];
        int64_t n = x.numel();
        for (int64_t i = 0; i < n; ++i) {
            Dims idx(static_cast<size_t>(x.rank()));
            int64_t rem = i;
            for (int d = x.rank() - 1; d >= 0; --d) {
                idx[static_cast<size_t>(d)] = rem % x.shape()[d];
                rem /= x.shape()[d];
            }
            double orig = x.at(idx);
            x.set(idx, orig + c.grad_eps);
            double lp = loss(inputs);
            x.set(idx, orig - c.grad_eps);
            double lm = loss(inputs);
            x.set(idx, orig);
            numeric.set(idx, (lp - lm) / (2 * c.grad_eps));
        }
        std::string m = compare(analytic[k].to(DataType::f64), numeric, c.grad_rtol, c.grad_atol);
        if (!m.empty()) return detail::concat("gradient of input ", k, ": ", m);
    }
    return "";
}

std::string check_backends(const OpCase& c) {
    // Every GPU of the build runs the case (forward, and backward where the case has one) on the same
    // inputs as the CPU, and must agree within the case's tolerance for the dtype, doubled: both
    // sides carry rounding error against the exact result.
    for (int g = 0; g < cuda::device_count(); ++g) {
        const Device gpu = Device::cuda(g);
        for (DataType dtype : {DataType::f32, DataType::f64, DataType::bf16, DataType::f16}) {
            if (dtype == DataType::f64 || dtype == DataType::f32) {
                if (std::find(c.dtypes.begin(), c.dtypes.end(), dtype) == c.dtypes.end()) continue;
            } else if (!supports(c.ops.front(), Device::cpu(), dtype)) {
                continue;
            }
            auto [rtol, atol] = tolerance(c, dtype);
            const Tensors in = make_inputs(c, dtype, 3);
            Tensors in_gpu;
            for (const Tensor& t : in) in_gpu.push_back(t.defined() ? t.to(gpu) : t);
            const std::string where = detail::concat(gpu.to_string(), " ", dtype_name(dtype), " ");
            Tensors cpu_out, gpu_out;
            try {
                cpu_out = c.forward(in);
                gpu_out = c.forward(in_gpu);
            } catch (const std::exception& e) {
                return where + "forward threw: " + e.what();
            }
            std::vector<int> which = c.compared_outputs;
            if (which.empty())
                for (size_t k = 0; k < cpu_out.size(); ++k) which.push_back(static_cast<int>(k));
            for (int k : which) {
                if (!cpu_out[static_cast<size_t>(k)].defined()) continue;
                const Tensor& go = gpu_out[static_cast<size_t>(k)];
                if (!go.device().is_cuda())
                    return where + detail::concat("output ", k, " is on ", go.device().to_string());
                std::string m =
                    compare(go.to(Device::cpu()).to(DataType::f64),
                            cpu_out[static_cast<size_t>(k)].to(DataType::f64), 2 * rtol, 2 * atol);
                if (!m.empty()) return where + detail::concat("output ", k, ": ", m);
            }
            // The same inputs as strided views on the GPU (every other element of a buffer twice as long in
            // the last axis): kernels must honour strides there too.
            if (c.test_non_contiguous && dtype == DataType::f32) {
                Tensors strided;
                for (const Tensor& t : in_gpu) {
                    if (!t.defined() || t.rank() == 0 || !is_floating(t.dtype())) {
                        strided.push_back(t);
                        continue;
                    }
                    Dims wide = t.shape().dims();
                    wide.back() *= 2;
                    Tensor v =
                        Tensor::zeros(Shape(wide), t.dtype(), gpu).slice(t.rank() - 1, 0, wide.back(), 2);
                    v.copy_from(t);
                    strided.push_back(v);
                }
                Tensors out;
                try {
                    out = c.forward(strided);
                } catch (const std::exception& e) {
                    return where + "forward on strided inputs threw: " + e.what();
                }
                for (int k : which) {
                    if (!cpu_out[static_cast<size_t>(k)].defined()) continue;
                    std::string m =
                        compare(out[static_cast<size_t>(k)].to(Device::cpu()).to(DataType::f64),
                                cpu_out[static_cast<size_t>(k)].to(DataType::f64), 2 * rtol, 2 * atol);
                    if (!m.empty()) return where + detail::concat("strided inputs, output ", k, ": ", m);
                }
            }
            if (!c.backward || (dtype != DataType::f32 && c.f32_inputs.empty())) continue;
            const Tensors dys = upstream_gradients(cpu_out, 11);
            Tensors dys_gpu;
            for (const Tensor& d : dys) dys_gpu.push_back(d.to(gpu));
            Tensors cpu_grads, gpu_grads;
            try {
                cpu_grads = c.backward(in, dys);
                gpu_grads = c.backward(in_gpu, dys_gpu);
            } catch (const std::exception& e) {
                return where + "backward threw: " + e.what();
            }
            for (size_t k = 0; k < cpu_grads.size(); ++k) {
                if (!cpu_grads[k].defined()) continue;
                std::string m = compare(gpu_grads[k].to(Device::cpu()).to(DataType::f64),
                                        cpu_grads[k].to(DataType::f64), 2 * rtol, 2 * atol);
                if (!m.empty()) return where + detail::concat("gradient of input ", k, ": ", m);
            }
        }
    }
    return "";
}

}  // namespace ctk::test
