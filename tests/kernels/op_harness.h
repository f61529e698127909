// The op test harness (one for all ops). Each op family contributes OpCases: input specs, the op as
// ctk runs it, a naive float64 reference, and, where a backward kernel exists, the backward call. The
// runner checks (a) every available backend against the CPU result, (b) the CPU result in f32 and f64
// against the reference, also with non-contiguous input views, and (c) the backward kernel against
// central differences in float64. `op_harness --perf` times the cases.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ctk/ctk.h"

namespace ctk::test {

// How an input is made.
struct InputSpec {
    enum class Kind { uniform, indices, fixed };
    Shape shape;
    Kind kind = Kind::uniform;
    double lo = -1.0, hi = 1.0;  // uniform range; for indices: integers in [lo, hi)
    Tensor fixed;                // Kind::fixed: used as given (converted to the case dtype if floating)
    bool differentiable = true;  // included in the gradient check

    static InputSpec uniform(Shape s, double lo = -1.0, double hi = 1.0) {
        InputSpec i;
        i.shape = std::move(s);
        i.lo = lo;
        i.hi = hi;
        return i;
    }
    static InputSpec indices(Shape s, int64_t count) {
        InputSpec i;
        i.shape = std::move(s);
        i.kind = Kind::indices;
        i.lo = 0;
        i.hi = static_cast<double>(count);
        i.differentiable = false;
        return i;
    }
    static InputSpec constant(Tensor t) {
        InputSpec i;
        i.shape = t.shape();
        i.kind = Kind::fixed;
        i.fixed = std::move(t);
        i.differentiable = false;
        return i;
    }
    InputSpec& no_grad() {
        differentiable = false;
        return *this;
    }
};

using Tensors = std::vector<Tensor>;

struct OpCase {
    std::string name;         // "family/variant"
    std::vector<OpKind> ops;  // the primitive ops this case exercises (for the coverage check)
    std::vector<InputSpec> inputs;
    std::function<Tensors(const Tensors&)> forward;    // runs ctk
    std::function<Tensors(const Tensors&)> reference;  // naive float64 on f64 inputs
    // Optional: input gradients (one per input; undefined where not differentiable) given the
    // inputs and one upstream gradient per forward output.
    std::function<Tensors(const Tensors& inputs, const Tensors& dys)> backward;
    std::vector<DataType> dtypes = {DataType::f32, DataType::f64};
    double rtol_f32 = 1e-5, atol_f32 = 1e-6;
    double rtol_f64 = 1e-10, atol_f64 = 1e-12;
    double grad_rtol = 1e-6, grad_atol = 1e-8;  // central differences in f64
    double grad_eps = 1e-6;
    bool test_non_contiguous = true;
    // Outputs compared by the checks (default all). Useful when an output is backend-specific.
    std::vector<int> compared_outputs;
    // Outputs whose upstream gradient is zero in the gradient check (e.g. saved statistics).
    std::vector<int> outputs_without_grad;
    // Inputs that stay f32 when the case runs in bf16 or f16: the parameters and statistics of an op that
    // mixed precision runs on 16-bit data with f32 statistics. Such cases also compare their backward in
    // 16 bits across backends, as training runs it.
    std::vector<int> f32_inputs;
};

// All cases, gathered explicitly from the family files in tests/kernels/cases/.
std::vector<OpCase> all_op_cases();

std::vector<OpCase> elementwise_cases();
std::vector<OpCase> reduce_cases();
std::vector<OpCase> softmax_cases();
std::vector<OpCase> matmul_cases();
std::vector<OpCase> convolution_cases();
std::vector<OpCase> pooling_cases();
std::vector<OpCase> batch_norm_cases();
std::vector<OpCase> dropout_cases();
std::vector<OpCase> indexing_cases();
std::vector<OpCase> roi_pooling_cases();

// ---- runner pieces (used by the gtest driver and the --perf CLI) ----
// Makes the inputs of a case in `dtype` (floating specs only; index and fixed inputs keep theirs; the
// case's f32_inputs stay f32 for a 16-bit dtype).
Tensors make_inputs(const OpCase& c, DataType dtype, uint64_t seed = 1);
// The same values as strided views of larger buffers (every floating input non-contiguous).
Tensors non_contiguous_copies(const Tensors& inputs);
// Empty string when close, else a message naming the first mismatch.
std::string compare(const Tensor& actual, const Tensor& expected, double rtol, double atol);
// Tolerances for comparing a `dtype` result with the f64 reference.
std::pair<double, double> tolerance(const OpCase& c, DataType dtype);
std::string check_forward(const OpCase& c, DataType dtype);
std::string check_non_contiguous(const OpCase& c, DataType dtype);
// For cases with f32_inputs: the backward in `dtype` (16-bit data, f32 statistics) against the f64
// backward of the same values; each gradient must come back in its input's dtype.
std::string check_mixed_backward(const OpCase& c, DataType dtype);
std::string check_gradients(const OpCase& c);
std::string check_backends(const OpCase& c);

// ---- helpers for writing references ----
// Calls fn(index) for every multi-index of `shape` in row-major order.
void for_each_index(const Shape& shape, const std::function<void(const Dims&)>& fn);
// Reads a broadcast operand at an output index (NumPy alignment from the right).
double at_broadcast(const Tensor& t, const Dims& out_index);

}  // namespace ctk::test
