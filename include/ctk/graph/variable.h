// Variable: a symbolic tensor in a CNTK graph — an input fed each minibatch, a learnable parameter, a
// constant, a placeholder to be bound later, or the output of a Function. A Variable is a handle: copies
// alias one another. Shapes are the static sample shape, row-major as in CNTK's Python API; dims may be
// kInferredDim (resolved when the graph is built, e.g. a Dense weight's input dim) or kFreeDim (taken
// from each minibatch's data). Dynamic axes come first in data: [batch, (sequence,) sample...].
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ctk/core/tensor.h"
#include "ctk/graph/axis.h"
#include "ctk/graph/initializer.h"

namespace ctk {

class Function;
using FunctionPtr = std::shared_ptr<Function>;

// CNTK's VariableKind numbers (stored in model files).
enum class VariableKind : uint8_t { input = 0, output = 1, parameter = 2, constant = 3, placeholder = 4 };
const char* variable_kind_name(VariableKind kind);

inline constexpr int64_t kInferredDim = -1;
inline constexpr int64_t kFreeDim = -3;

namespace detail {
struct VariableData;
}

class Variable {
public:
    Variable() = default;
    // A Function's single output (as CNTK's implicit FunctionPtr -> Variable); throws ValueError when
    // the Function has several outputs.
    Variable(const FunctionPtr& function);  // NOLINT(google-explicit-constructor): CNTK's conversion

    bool defined() const { return data_ != nullptr; }
    VariableKind kind() const;
    bool is_input() const { return kind() == VariableKind::input; }
    bool is_output() const { return kind() == VariableKind::output; }
    bool is_parameter() const { return kind() == VariableKind::parameter; }
    bool is_constant() const { return kind() == VariableKind::constant; }
    bool is_placeholder() const { return kind() == VariableKind::placeholder; }

    // The static (sample) shape. A placeholder made without a shape has an unknown one: shape_known()
    // is false until a graph binds it.
    const Dims& shape() const;
    bool shape_known() const;
    int rank() const { return static_cast<int>(shape().size()); }
    // True when some dim is still kInferredDim.
    bool has_inferred_dims() const;
    DataType dtype() const;
    // Outermost first: {} (a plain tensor), {batch}, or {batch, a sequence axis}.
    const std::vector<Axis>& dynamic_axes() const;
    bool has_batch_axis() const;
    bool has_sequence_axis() const;
    int dynamic_rank() const { return static_cast<int>(dynamic_axes().size()); }

    const std::string& name() const;
    const std::string& uid() const;
    bool needs_gradient() const;
    bool is_sparse() const;
    // Whether learners apply their L1/L2 regularization to this parameter (true unless turned off, as
    // CNTK's BatchNormalization(disable_regularization=True) does for its scale and bias). Shared by
    // every copy of the Variable.
    bool regularization_enabled() const;
    void set_regularization_enabled(bool enabled) const;

    // The Function that computes an output variable (null for the other kinds).
    FunctionPtr owner() const;
    int output_index() const;

    // Parameters and constants: the current value (materialised from the initializer on first access;
    // throws ShapeError while a dim is still inferred).
    Tensor value() const;
    // Parameters and constants: copies `v` in (shape must match; dtype converted).
    void set_value(const Tensor& v) const;

    // CNTK's notation: "Input('x', [#, *], [3])", "Parameter('W', [], [784 x 200])".
    std::string to_string() const;

    bool operator==(const Variable& o) const { return data_ == o.data_; }
    bool operator!=(const Variable& o) const { return data_ != o.data_; }

    // ---- internals (graph construction and the executor) ----
    Variable(std::shared_ptr<detail::VariableData> data, FunctionPtr owner)
        : data_(std::move(data)), owner_(std::move(owner)) {}
    detail::VariableData* impl() const { return data_.get(); }
    // The same variable without the strong reference to its owner (see owner_).
    Variable weak() const { return Variable(data_, nullptr); }
    const std::shared_ptr<detail::VariableData>& impl_ptr() const { return data_; }

private:
    std::shared_ptr<detail::VariableData> data_;
    // Keeps the producing graph alive for output variables. Null on the back edge of a recurrent loop
    // (which would otherwise be a reference cycle) and in compiled plans; owner() then asks the data.
    FunctionPtr owner_;
};

struct VariableHash {
    size_t operator()(const Variable& v) const { return std::hash<const void*>()(v.impl()); }
};

// ---- factories (CNTK's Python names and defaults) ----
std::vector<Axis> default_batch_axes();     // {#}
std::vector<Axis> default_sequence_axes();  // {#, *}

Variable input_variable(const Dims& shape, DataType dtype = DataType::f32, bool needs_gradient = false,
                        bool is_sparse = false, std::vector<Axis> dynamic_axes = default_batch_axes(),
                        const std::string& name = "");
// An input with the batch axis and `sequence_axis` (default `*`).
Variable sequence_input_variable(const Dims& shape, DataType dtype = DataType::f32,
                                 bool needs_gradient = false, bool is_sparse = false,
                                 const Axis& sequence_axis = Axis::default_dynamic_axis(),
                                 const std::string& name = "");
Variable parameter(const Dims& shape, const Initializer& init = glorot_uniform(),
                   DataType dtype = DataType::f32, const std::string& name = "");
Variable parameter_from(const Tensor& value, const std::string& name = "");
Variable constant(const Tensor& value, const std::string& name = "");
Variable constant(double value, DataType dtype = DataType::f32, const std::string& name = "");
Variable constant(const Dims& shape, double value, DataType dtype = DataType::f32,
                  const std::string& name = "");
// A placeholder with an unknown shape (bound later by replace_placeholders or by calling a Function).
Variable placeholder(const std::string& name = "");
Variable placeholder(const Dims& shape, std::vector<Axis> dynamic_axes = default_batch_axes(),
                     const std::string& name = "");

}  // namespace ctk
