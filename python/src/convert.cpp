// NumPy <-> Tensor/Value conversions and CNTK's input sanitising (sanitize_input, sanitize_batch).
// Arrays come in without a copy when they are C-contiguous in the variable's dtype; results go out as
// fresh arrays (the executor may reuse its buffers on the next call).
#include "convert.h"

#include <algorithm>
#include <climits>
#include <cstring>
#include <optional>

namespace ctk::python {

namespace {

// Leaked on purpose: a static py::object would be released after the interpreter is gone.
py::module_& numpy() {
    static auto* np = new py::module_(py::module_::import("numpy"));
    return *np;
}

// Deletes a Python object from any thread: takes the GIL first (and leaks it when the interpreter is
// already gone, at process exit).
void release_python_object(void* p) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    delete static_cast<py::object*>(p);
}

}  // namespace

namespace {
// A list, tuple or array of values (a str is one value).
bool is_sequence_arg(const py::handle& obj) {
    return PySequence_Check(obj.ptr()) && !py::isinstance<py::str>(obj) && !py::isinstance<py::bytes>(obj);
}
}  // namespace

int64_t int_arg(const py::handle& obj, const char* what, int64_t lo, int64_t hi) {
    // A static Axis object stands for its index (CNTK accepted both for axis arguments).
    if (py::isinstance<Axis>(obj)) {
        const Axis a = obj.cast<Axis>();
        CTK_CHECK(a.is_static(), TypeError, what, " must be a static axis, got ", a.to_string());
        CTK_CHECK(a.static_index() >= lo && a.static_index() <= hi, ValueError, what, " ", a.static_index(),
                  " is out of range [", lo, ", ", hi, "]");
        return a.static_index();
    }
    if (!PyIndex_Check(obj.ptr()) || is_sequence_arg(obj))
        CTK_THROW(TypeError, what, " must be an integer, got ",
                  py::str(py::type::of(obj)).cast<std::string>());
    py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(obj.ptr()));
    if (!index) throw py::error_already_set();
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
    if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
    CTK_CHECK(overflow == 0 && v >= lo && v <= hi, ValueError, what, " ", py::str(index).cast<std::string>(),
              " is out of range [", lo, ", ", hi, "]");
    return v;
}

int int32_arg(const py::handle& obj, const char* what) {
    return static_cast<int>(int_arg(obj, what, INT_MIN, INT_MAX));
}

Axis axis_arg(const py::handle& obj, const char* what) {
    if (py::isinstance<Axis>(obj)) return obj.cast<Axis>();
    return Axis(int32_arg(obj, what));
}

std::vector<Axis> axis_list_arg(const py::handle& obj, const char* what) {
    if (!is_sequence_arg(obj)) return {axis_arg(obj, what)};
    std::vector<Axis> out;
    for (const py::handle item : obj) out.push_back(axis_arg(item, what));
    return out;
}

std::vector<int> int_list_arg(const py::handle& obj, const char* what) {
    if (!is_sequence_arg(obj)) return {int32_arg(obj, what)};
    std::vector<int> out;
    for (const py::handle item : obj) out.push_back(int32_arg(item, what));
    return out;
}

Dims dims_arg(const py::handle& obj, const char* what) {
    if (obj.is_none()) return {};
    if (!is_sequence_arg(obj)) return {int_arg(obj, what)};
    Dims out;
    for (const py::handle item : obj) out.push_back(int_arg(item, what));
    return out;
}

py::object numpy_dtype(DataType dtype) {
    switch (dtype) {
        case DataType::f32:
            return numpy().attr("float32");
        case DataType::f64:
            return numpy().attr("float64");
        case DataType::f16:
            return numpy().attr("float16");
        case DataType::bf16:
            return numpy().attr("float32");  // NumPy has no bfloat16: results come out as float32
        case DataType::i32:
            return numpy().attr("int32");
        case DataType::i64:
            return numpy().attr("int64");
        case DataType::u8:
            return numpy().attr("uint8");
    }
    return numpy().attr("float32");
}

DataType dtype_from_python(const py::handle& obj) {
    if (obj.is_none()) return DataType::f32;
    // CNTK's names: 'float' is float32 (NumPy reads it as float64), 'double' float64.
    if (py::isinstance<py::str>(obj)) {
        const std::string s = py::str(obj);
        if (s == "float" || s == "float32") return DataType::f32;
        if (s == "double" || s == "float64") return DataType::f64;
        if (s == "float16") return DataType::f16;
    }
    py::dtype dt = py::dtype::from_args(py::reinterpret_borrow<py::object>(obj));
    // By kind and size first (no string building: this runs for every array fed to a step).
    const char kind = dt.kind();
    const auto size = dt.itemsize();
    if (kind == 'f' && size == 4) return DataType::f32;
    if (kind == 'f' && size == 8) return DataType::f64;
    if (kind == 'f' && size == 2) return DataType::f16;
    if (kind == 'i' && size == 4) return DataType::i32;
    if (kind == 'i' && size == 8) return DataType::i64;
    if (kind == 'u' && size == 1) return DataType::u8;
    const std::string name = py::str(dt.attr("name"));
    if (name == "float32") return DataType::f32;
    if (name == "float64") return DataType::f64;
    if (name == "float16") return DataType::f16;
    if (name == "int32") return DataType::i32;
    if (name == "int64") return DataType::i64;
    if (name == "uint8") return DataType::u8;
    CTK_THROW(TypeError, "ctk has no data type for NumPy's ", name,
              " (use float32, float64, float16, int32, int64 or uint8)");
}

namespace {

std::optional<DataType> ctk_dtype_of(const py::array& a) {
    try {
        return dtype_from_python(a.dtype());
    } catch (const TypeError&) {
        return std::nullopt;
    }
}

}  // namespace

Tensor float_tensor_from_python(const py::handle& obj, std::optional<DataType> dtype) {
    if (dtype) return tensor_from_numpy(obj, dtype);
    Tensor t = tensor_from_numpy(obj);
    const bool numpy_float = py::isinstance<py::array>(obj) && is_floating(t.dtype());
    return numpy_float ? t : t.to(DataType::f32);
}

Tensor tensor_from_numpy(const py::handle& obj, std::optional<DataType> dtype) {
    if (py::isinstance<Tensor>(obj)) {  // an NDArrayView: CNTK took one wherever it took data (copied)
        const Tensor t = obj.cast<Tensor>();
        return dtype && t.dtype() != *dtype ? t.to(*dtype) : t.clone();
    }
    py::array arr = py::isinstance<py::array>(obj)
                        ? py::reinterpret_borrow<py::array>(obj)
                        : py::reinterpret_borrow<py::object>(numpy().attr("asarray")(obj));
    const std::optional<DataType> have = ctk_dtype_of(arr);
    const DataType want = dtype ? *dtype : have.value_or(DataType::f32);
    if (have != want || !(arr.flags() & py::array::c_style)) {
        arr = numpy().attr("ascontiguousarray")(arr, numpy_dtype(want));
    }
    Dims dims(static_cast<size_t>(arr.ndim()));
    for (size_t i = 0; i < dims.size(); ++i)
        dims[i] = static_cast<int64_t>(arr.shape(static_cast<py::ssize_t>(i)));
    Shape shape(dims);
    std::shared_ptr<void> keep(new py::object(arr), release_python_object);
    return Tensor::wrap(const_cast<void*>(arr.data()), static_cast<size_t>(arr.nbytes()), shape,
                        shape.contiguous_strides(), want, Device::cpu(), std::move(keep));
}

py::array numpy_from_tensor(const Tensor& t) {
    Tensor c = t.to(Device::cpu());
    if (c.dtype() == DataType::bf16) c = c.to(DataType::f32);
    c = c.contiguous();
    std::vector<py::ssize_t> shape(c.shape().dims().begin(), c.shape().dims().end());
    py::array out(py::dtype::from_args(numpy_dtype(c.dtype())), shape);
    if (c.numel() > 0)
        std::memcpy(out.mutable_data(), c.raw_data(), static_cast<size_t>(c.numel()) * c.element_size());
    return out;
}

namespace {

// A SciPy CSR matrix (or anything with its indptr, indices, data and shape), without importing SciPy.
bool is_csr(const py::handle& obj) {
    // NumPy arrays, the common case, are never CSR (and a failed hasattr costs an exception).
    if (py::isinstance<py::array>(obj)) return false;
    return py::hasattr(obj, "indptr") && py::hasattr(obj, "indices") && py::hasattr(obj, "data") &&
           py::hasattr(obj, "shape");
}

// A CSR matrix's rows: as the hot class of each row when every row holds a single 1 (CNTK's one-hot
// sparse input, kept as indices), else as dense rows.
struct CsrRows {
    int64_t rows = 0, cols = 0;
    std::vector<int64_t> hot;  // one per row, when one-hot
    Tensor dense;              // [rows, cols] otherwise
};
CsrRows csr_rows(const py::handle& m, DataType dtype) {
    CsrRows r;
    const auto shape = m.attr("shape").cast<std::vector<int64_t>>();
    CTK_CHECK(shape.size() == 2, ValueError, "a sparse matrix must be 2-dimensional, got ", shape.size(),
              " dims");
    r.rows = shape[0], r.cols = shape[1];
    const auto indptr = py::array_t<int64_t, py::array::c_style | py::array::forcecast>(m.attr("indptr"));
    const auto indices = py::array_t<int64_t, py::array::c_style | py::array::forcecast>(m.attr("indices"));
    const auto values = py::array_t<double, py::array::c_style | py::array::forcecast>(m.attr("data"));
    CTK_CHECK(indptr.size() == r.rows + 1 && indices.size() == values.size(), ValueError,
              "a sparse matrix of shape (", r.rows, ", ", r.cols, ") has ", indptr.size(),
              " row pointers and ", indices.size(), " column indices for ", values.size(), " values");
    const int64_t* p = indptr.data();
    const int64_t* col = indices.data();
    const double* val = values.data();
    CTK_CHECK(p[0] == 0 && p[r.rows] == static_cast<int64_t>(indices.size()), ValueError,
              "a sparse matrix's row pointers must run from 0 to its ", indices.size(), " entries, got ",
              p[0], " to ", p[r.rows]);
    for (int64_t i = 0; i < r.rows; ++i)
        CTK_CHECK(p[i] <= p[i + 1], ValueError, "a sparse matrix's row pointers decrease at row ", i);
    bool one_hot = true;
    for (int64_t i = 0; i < r.rows && one_hot; ++i) one_hot = p[i + 1] - p[i] == 1 && val[p[i]] == 1.0;
    for (int64_t k = 0; k < p[r.rows]; ++k)
        CTK_CHECK(col[k] >= 0 && col[k] < r.cols, IndexError, "a sparse matrix of shape (", r.rows, ", ",
                  r.cols, ") has column index ", col[k]);
    if (one_hot) {
        for (int64_t i = 0; i < r.rows; ++i) r.hot.push_back(col[p[i]]);
        return r;
    }
    std::vector<double> dense(static_cast<size_t>(r.rows * r.cols), 0.0);
    for (int64_t i = 0; i < r.rows; ++i)
        for (int64_t k = p[i]; k < p[i + 1]; ++k) dense[static_cast<size_t>(i * r.cols + col[k])] += val[k];
    r.dense = Tensor::from_vector(dense, Shape{r.rows, r.cols}).to(dtype);
    return r;
}

}  // namespace

// CSR data: one matrix (samples as rows), or a list with one per sequence (frames as rows). `classes`,
// when given, is the number of columns the input wants.
Value value_from_csr(const py::handle& data, DataType dtype, bool sequences, std::optional<int64_t> classes,
                     const std::string& what) {
    std::vector<CsrRows> parts;
    if (!is_csr(data)) {
        for (const py::handle& s : data) parts.push_back(csr_rows(s, dtype));
    } else {
        parts.push_back(csr_rows(data, dtype));
    }
    for (const CsrRows& r : parts)
        CTK_CHECK(!classes || r.cols == *classes, ValueError, "a sparse matrix with ", r.cols,
                  " columns for ", what);
    const int64_t cols = parts[0].cols;
    for (const CsrRows& r : parts)
        CTK_CHECK(r.cols == cols, ValueError, "sparse sequences with ", cols, " and ", r.cols,
                  " columns for ", what);
    bool one_hot = true;
    for (const CsrRows& r : parts) one_hot = one_hot && !r.dense.defined();
    if (!sequences && parts.size() > 1) {
        // A list of one-row matrices without a sequence axis: one sample each (CNTK read each as a
        // sequence of one).
        const auto n = static_cast<int64_t>(parts.size());
        for (int64_t i = 0; i < n; ++i)
            CTK_CHECK(parts[static_cast<size_t>(i)].rows == 1, ValueError, "sparse data for ", what,
                      ": matrix ", i, " of the list has ", parts[static_cast<size_t>(i)].rows,
                      " rows; without a sequence axis each matrix is one sample");
        std::vector<double> dense(static_cast<size_t>(n * cols), 0.0);
        std::vector<int64_t> hot;
        for (int64_t i = 0; i < n; ++i) {
            const CsrRows& r = parts[static_cast<size_t>(i)];
            if (one_hot) {
                hot.push_back(r.hot[0]);
            } else if (r.dense.defined()) {
                const std::vector<double> row = r.dense.to_vector<double>();
                std::copy(row.begin(), row.end(), dense.begin() + i * cols);
            } else {
                dense[static_cast<size_t>(i * cols + r.hot[0])] = 1.0;
            }
        }
        if (one_hot) return Value::one_hot(Tensor::from_vector(hot, Shape{n}), cols, dtype);
        return Value(Tensor::from_vector(dense, Shape{n, cols}).to(dtype));
    }
    if (!sequences) {
        const CsrRows& r = parts[0];
        if (one_hot) return Value::one_hot(Tensor::from_vector(r.hot, Shape{r.rows}), r.cols, dtype);
        return Value(r.dense);
    }
    std::vector<int64_t> lengths;
    int64_t longest = 0;
    for (const CsrRows& r : parts) lengths.push_back(r.rows), longest = std::max(longest, r.rows);
    auto layout = std::make_shared<SequenceLayout>(lengths);
    if (one_hot) {
        const int64_t n = static_cast<int64_t>(parts.size());
        std::vector<int64_t> hot(static_cast<size_t>(n * longest), -1);
        for (int64_t s = 0; s < n; ++s)
            std::copy(parts[static_cast<size_t>(s)].hot.begin(), parts[static_cast<size_t>(s)].hot.end(),
                      hot.begin() + s * longest);
        return Value::one_hot(Tensor::from_vector(hot, Shape{n, longest}), cols, dtype, layout);
    }
    std::vector<Tensor> seqs;
    for (const CsrRows& r : parts)
        seqs.push_back(r.dense.defined()
                           ? r.dense
                           : Value::one_hot(Tensor::from_vector(r.hot, Shape{r.rows}), r.cols, dtype).data());
    return Value::from_sequences(seqs);
}

bool is_sparse_data(const py::handle& data) {
    if (is_csr(data)) return true;
    if (!(py::isinstance<py::list>(data) || py::isinstance<py::tuple>(data)) || py::len(data) == 0)
        return false;
    return is_csr(data[py::int_(0)]);
}

namespace {
// Data in one of the forms CNTK's Python API took, as a Value (not yet bound: see value_for).
Value value_from_data(const Variable& var, const py::handle& data) {
    // A list of NDArrayViews (CNTK took them as it took arrays): read as the arrays they hold.
    if ((py::isinstance<py::list>(data) || py::isinstance<py::tuple>(data)) && py::len(data) > 0 &&
        py::isinstance<Tensor>(data.cast<py::sequence>()[0])) {
        py::list arrays;
        for (const py::handle& item : data)
            arrays.append(py::isinstance<Tensor>(item) ? py::object(numpy_from_tensor(item.cast<Tensor>()))
                                                       : py::reinterpret_borrow<py::object>(item));
        return value_for(var, arrays);
    }
    if (is_sparse_data(data)) {
        CTK_CHECK(var.rank() == 1, ValueError, "sparse data for ", var.to_string(),
                  ": sparse matrices feed vector inputs (one row per sample)");
        return value_from_csr(data, var.dtype(), var.has_sequence_axis(), var.shape()[0], var.to_string());
    }
    if (py::isinstance<MinibatchData>(data)) {
        // A reader's stream: its samples take the input's sample shape, as a Trainer binds them.
        const std::string stream = var.name().empty() ? var.uid() : var.name();
        return bind_minibatch({{stream, data.cast<const MinibatchData&>()}}, {{var, stream}}).at(var);
    }
    if (py::isinstance<Value>(data)) return data.cast<Value>();
    const DataType dtype = var.dtype();
    const int sample_rank = var.rank();
    if (var.has_sequence_axis()) {
        // A list of sequences [length, sample...], or one array [batch, length, sample...]. Samples of
        // shape (1,) may come without their axis of 1: a sequence as a 1-D array of its values.
        const bool scalar_samples = var.shape() == Dims{1};
        std::vector<Tensor> sequences;
        if (py::isinstance<py::list>(data) || py::isinstance<py::tuple>(data)) {
            for (const py::handle& s : data) {
                Tensor t = tensor_from_numpy(s, dtype);
                if (scalar_samples && t.rank() >= 1 && t.dim(-1) != 1) t = t.expand_dims(-1);
                if (t.rank() == sample_rank) t = t.expand_dims(0);  // a sequence of one sample
                sequences.push_back(t);
            }
        } else {
            Tensor t = tensor_from_numpy(data, dtype);
            if (scalar_samples && t.rank() >= 1 && t.dim(-1) != 1) t = t.expand_dims(-1);
            // CNTK also takes one array [length, sample...] as one sequence, and one sample as a sequence of
            // one.
            if (t.rank() == sample_rank + 1) return Value::from_sequences({t});
            if (t.rank() == sample_rank) return Value::from_sequences({t.expand_dims(0)});
            CTK_CHECK(t.rank() == sample_rank + 2, ValueError, "data of shape ", t.shape().to_string(),
                      " for sequence input ", var.to_string(),
                      ": pass a list of sequences, an array [batch, length, sample...], one sequence "
                      "[length, sample...] or one sample");
            for (int64_t i = 0; i < t.dim(0); ++i) sequences.push_back(t.select(0, i));
        }
        return Value::from_sequences(sequences);
    }
    Tensor t = tensor_from_numpy(data, dtype);
    // One sample: a batch of one (bind_input does this too, but only for an input whose dims are known).
    if (var.has_batch_axis() && t.rank() == sample_rank) t = t.expand_dims(0);
    return Value(t);
}
}  // namespace

Value value_for(const Variable& var, const py::handle& data) {
    Value value = value_from_data(var, data);
    // Bound as the graph will bind it (ctk/graph/bind.h): a Value made here is what the graph sees, and
    // binding it again when it is given costs a few checks. A variable whose shape is still being
    // inferred takes its data as it is.
    return var.shape_known() ? bind_input(var, value) : value;
}

py::object numpy_from_value(const Variable& var, const Value& value) {
    if (value.has_layout() && var.has_sequence_axis()) {
        py::list out;
        for (int64_t i = 0; i < value.layout()->num_sequences(); ++i)
            out.append(numpy_from_tensor(value.sequence(i)));
        return out;
    }
    return numpy_from_tensor(value.data());
}

Variable to_variable(const py::handle& obj, DataType dtype_hint) {
    if (py::isinstance<Variable>(obj)) return obj.cast<Variable>();
    if (py::isinstance<Function>(obj)) return Variable(obj.cast<FunctionPtr>());
    // An object that stands for a graph node (a Python UserFunction instance, as CNTK's was a Function).
    if (py::hasattr(obj, "__ctk_function__")) return to_variable(obj.attr("__ctk_function__")(), dtype_hint);
    if (py::isinstance<py::bool_>(obj) || py::isinstance<py::int_>(obj) || py::isinstance<py::float_>(obj)) {
        return constant(obj.cast<double>(), dtype_hint);
    }
    if (py::isinstance<py::array>(obj) || py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj)) {
        return constant(tensor_from_numpy(obj, dtype_hint));
    }
    // A NumPy scalar (np.float32(2) * x) is a number, of the operand's type as Python's numbers are.
    if (py::isinstance(obj, py::module_::import("numpy").attr("generic")) && py::hasattr(obj, "__float__"))
        return constant(obj.attr("__float__")().cast<double>(), dtype_hint);
    CTK_THROW(TypeError, "expected a Variable, a Function, a number or an array, got ",
              std::string(py::str(py::type::of(obj).attr("__name__"))));
}

std::vector<Variable> to_variables(const py::handle& obj) {
    std::vector<Variable> out;
    if (py::isinstance<py::list>(obj) || py::isinstance<py::tuple>(obj) || py::isinstance<py::set>(obj)) {
        for (const py::handle& h : obj) {
            if (py::isinstance<Function>(h)) {
                for (const Variable& v : h.cast<FunctionPtr>()->outputs()) out.push_back(v);
            } else {
                out.push_back(to_variable(h));
            }
        }
    } else if (py::isinstance<Function>(obj)) {
        out = obj.cast<FunctionPtr>()->outputs();
    } else {
        out.push_back(to_variable(obj));
    }
    return out;
}

namespace {
// CNTK's (data, seq_starts): per sequence, True where it starts in this minibatch, False where it goes
// on from the sequence in the same place of the previous minibatch given to this Function (its
// past_values read that minibatch's last frames; see SequenceLayout). The continuation flags, or none.
std::optional<std::vector<bool>> continuation_flags(const py::handle& arguments) {
    if (!py::isinstance<py::tuple>(arguments) || py::len(arguments) != 2) return std::nullopt;
    const auto pair = py::reinterpret_borrow<py::tuple>(arguments);
    if (!(py::isinstance<py::list>(pair[1]) || py::isinstance<py::tuple>(pair[1]))) return std::nullopt;
    std::vector<bool> continues;
    for (const py::handle b : pair[1]) {  // Python or NumPy booleans
        if (!py::isinstance<py::bool_>(b) &&
            std::string(py::str(py::type::of(b).attr("__name__"))) != "bool_")
            return std::nullopt;
        continues.push_back(!py::cast<bool>(b));
    }
    return continues;
}

// CNTK: seq_starts go with NumPy data; a Value already holds its sequences' layout.
void refuse_flags_on_values(const py::handle& data) {
    CTK_CHECK(!py::isinstance<Value>(data), ValueError,
              "seq_starts cannot be given with a Value: it holds its own sequence layout (Value.create's "
              "seq_starts sets it)");
}

void apply_continuation(const Variable& var, Value& value, const std::vector<bool>& continues) {
    if (value.has_layout()) value = with_continuation(value, continues, var.to_string());
}
}  // namespace

Value with_continuation(const Value& value, const std::vector<bool>& continues, const std::string& what) {
    CTK_CHECK(value.has_layout(), ValueError, "seq_starts: ", what, " has no sequences");
    CTK_CHECK(value.layout()->num_sequences() == static_cast<int64_t>(continues.size()), ValueError,
              "seq_starts: ", continues.size(), " flags for ", value.layout()->num_sequences(),
              " sequences of ", what);
    return value.with_layout(std::make_shared<SequenceLayout>(value.layout()->lengths(), continues));
}

ValueMap argument_map(const py::handle& arguments, const FunctionPtr& f) {
    ValueMap map;
    if (arguments.is_none()) return map;
    if (const auto continues = continuation_flags(arguments)) {
        const py::object data = py::reinterpret_borrow<py::tuple>(arguments)[0];
        if (py::isinstance<py::dict>(data))
            for (auto item : py::reinterpret_borrow<py::dict>(data)) refuse_flags_on_values(item.second);
        ValueMap inner = argument_map(data, f);
        for (auto& [var, value] : inner) apply_continuation(var, value, *continues);
        return inner;
    }
    if (py::isinstance<py::dict>(arguments)) {
        std::vector<Variable> by_name;  // CNTK also keys arguments by their names
        for (auto item : py::reinterpret_borrow<py::dict>(arguments)) {
            Variable var;
            if (py::isinstance<py::str>(item.first)) {
                const std::string key = item.first.cast<std::string>();
                if (by_name.empty()) by_name = f->arguments();
                for (const Variable& a : by_name) {
                    if (a.name() != key) continue;
                    CTK_CHECK(!var.defined(), ValueError, "the function has several arguments named '", key,
                              "': key the data by the argument variables");
                    var = a;
                }
                CTK_CHECK(var.defined(), ValueError, "the function has no argument named '", key, "'");
            } else {
                var = to_variable(item.first);
            }
            // Per argument too: {x: (data, seq_starts)}.
            if (const auto continues = continuation_flags(item.second)) {
                refuse_flags_on_values(py::reinterpret_borrow<py::tuple>(item.second)[0]);
                Value value = value_for(var, py::reinterpret_borrow<py::tuple>(item.second)[0]);
                apply_continuation(var, value, *continues);
                map[var] = std::move(value);
                continue;
            }
            map[var] = value_for(var, item.second);
        }
        return map;
    }
    // Only bare data needs the Function's arguments (a graph walk: not done per step for dicts).
    const std::vector<Variable> function_arguments = f->arguments();
    CTK_CHECK(function_arguments.size() == 1, ValueError, "the function has ", function_arguments.size(),
              " arguments: pass a dict mapping each argument variable to its data");
    map[function_arguments[0]] = value_for(function_arguments[0], arguments);
    return map;
}

std::shared_ptr<py::object> hold(const py::object& obj) {
    return std::shared_ptr<py::object>(new py::object(obj), [](py::object* p) {
        if (!Py_IsInitialized()) return;
        py::gil_scoped_acquire gil;
        delete p;
    });
}

py::tuple shape_tuple(const Dims& dims) {
    py::tuple t(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) t[i] = dims[i];
    return t;
}

}  // namespace ctk::python
