// Conversions shared by the binding files: NumPy arrays <-> Tensor and Value, Python data -> argument
// maps, and the registration functions each binding file defines. Every function here runs with the GIL.
#pragma once

#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "ctk/ctk.h"

namespace py = pybind11;

namespace ctk::python {

// An integer argument: a Python int (or anything with __index__, as numpy.int64) within [lo, hi].
// ValueError naming `what` and the value when it is out of range (pybind11's own cast would say only
// "Unable to cast Python instance"), TypeError when it is not an integer.
int64_t int_arg(const py::handle& obj, const char* what, int64_t lo = INT64_MIN, int64_t hi = INT64_MAX);
// int_arg within a C int (static axes, ranks).
int int32_arg(const py::handle& obj, const char* what);
// An axis argument: an Axis, or an integer static axis (within a C int).
Axis axis_arg(const py::handle& obj, const char* what = "axis");
// The name of the marker axis that Axis.new_leading_axis() returns (splice and reshape read it).
inline constexpr const char* kNewLeadingAxisName = "__ctkNewLeadingAxis";
// One axis or a list or tuple of them.
std::vector<Axis> axis_list_arg(const py::handle& obj, const char* what = "axis");
// A list or tuple of integer axes (transpose's perm, squeeze's axes), or one.
std::vector<int> int_list_arg(const py::handle& obj, const char* what);
// A shape (or strides, begin and end indices): None (none), an int, or a sequence of ints, each a
// dimension of at most 2^63 - 1.
Dims dims_arg(const py::handle& obj, const char* what = "shape");

// numpy.float32 / float64 / int32 / ... for a DataType, and back (np.float32, 'float32', a dtype object).
py::object numpy_dtype(DataType dtype);
DataType dtype_from_python(const py::handle& obj);

// A Tensor over the array's memory when it is C-contiguous with a ctk dtype (kept alive by the Tensor),
// else a contiguous copy; `dtype` given: converted to it (a copy when it differs).
Tensor tensor_from_numpy(const py::handle& obj, std::optional<DataType> dtype = std::nullopt);
// Learnable values given as data (parameter(init=...), Embedding(weights=...)): a NumPy float array keeps
// its dtype; integers, booleans and lists become float32 (CNTK had no integer parameters), or `dtype`.
Tensor float_tensor_from_python(const py::handle& obj, std::optional<DataType> dtype = std::nullopt);
// A NumPy array sharing the tensor's memory (made contiguous first; CPU only, copied from a GPU).
py::array numpy_from_tensor(const Tensor& t);

// Data for `var` (CNTK's sanitize_batch): a NumPy array (or anything np.asarray takes) with the batch
// axis first, or exactly the sample shape (one sample); for sequence inputs a list of arrays, one per
// sequence; a Value or MinibatchData as it is.
Value value_for(const Variable& var, const py::handle& data);
// A shape as a Python tuple.
py::tuple shape_tuple(const Dims& dims);
// SciPy-style CSR data (anything with indptr, indices, data and shape; no SciPy needed): one matrix of
// samples, or (sequences) a list of one matrix per sequence. Rows with a single 1 stay class indices
// (Value::one_hot), other rows become dense. `classes`: the columns the input wants, when known.
bool is_sparse_data(const py::handle& data);
Value value_from_csr(const py::handle& data, DataType dtype, bool sequences, std::optional<int64_t> classes,
                     const std::string& what);
// The Value as CNTK's Python returns it: an array [batch, sample...] without a sequence axis, a list of
// arrays (one per sequence, padding cut) with one.
py::object numpy_from_value(const Variable& var, const Value& value);

// {Variable: data} (or, for a Function `f` with one argument, the data alone) -> ValueMap.
ValueMap argument_map(const py::handle& arguments, const FunctionPtr& f);
// `value` with CNTK's seq_starts applied: continues[i] marks sequence i as going on from the previous
// minibatch (ValueError naming `what` when the counts differ or it has no sequences).
Value with_continuation(const Value& value, const std::vector<bool>& continues, const std::string& what);
// A Variable from a Python object: a Variable, a Function with one output, a number or an array (a
// constant, as CNTK's sanitize_input).
Variable to_variable(const py::handle& obj, DataType dtype_hint = DataType::f32);
std::vector<Variable> to_variables(const py::handle& obj);

// A Python object owned from C++: released with the GIL held, whatever thread drops the last copy (and not
// at all once the interpreter is gone).
std::shared_ptr<py::object> hold(const py::object& obj);

// The Device a `device=` argument names: a DeviceDescriptor, or None for the default device.
Device device_from(const py::handle& device);

void bind_device(py::module_& m);
void bind_user_function(py::module_& m);
void bind_graph(py::module_& m);
void bind_values(py::module_& m);  // NDArrayView and Value, called by bind_graph
void bind_ops(py::module_& m);
void bind_layers_learners(py::module_& m);
void bind_io(py::module_& m);
void bind_train(py::module_& m);
void bind_distributed(py::module_& m);

}  // namespace ctk::python

namespace pybind11::detail {

// Every binding that takes a Variable also takes what CNTK's sanitize_input took for an operand: a
// number, a NumPy array or a (nested) list or tuple, as a float32 constant (C.sqrt([0., 4.]).eval();
// CNTK's unary ops cast even float64 arrays so; its binary ops keep float64, see ops.cpp's operands()).
// Declared here, before any binding file converts a Variable, so that every file uses this caster.
template <>
class type_caster<ctk::Variable> : public type_caster_base<ctk::Variable> {
public:
    bool load(handle src, bool convert) {
        if (type_caster_base<ctk::Variable>::load(src, convert)) return true;
        if (!convert || src.is_none() || isinstance<str>(src) || isinstance<bytes>(src)) return false;
        const bool data = isinstance<array>(src) || isinstance<list>(src) || isinstance<tuple>(src) ||
                          isinstance<float_>(src) || isinstance<int_>(src) || hasattr(src, "__array__") ||
                          hasattr(src, "__ctk_function__");
        if (!data) return false;
        try {
            constant_ = ctk::python::to_variable(src);
        } catch (...) {  // not numeric data (a list of Functions, say): let another overload take it
            return false;
        }
        value = &constant_;
        return true;
    }

private:
    ctk::Variable constant_;
};

}  // namespace pybind11::detail
