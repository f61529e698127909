// Bindings of the data: NDArrayView (a dense tensor) and Value (a minibatch's data with its sequence
// layout: CNTK's Value.create, one_hot, as_sequences, ...). Part of bind_graph.
#include "convert.h"

namespace ctk::python {

namespace {

// CNTK's seq_starts: one flag per sequence, False where a sequence goes on from the previous minibatch
// (the value's layout keeps it: past_value reads the previous minibatch's frames there).
Value with_seq_starts(const Value& v, const py::object& seq_starts) {
    if (seq_starts.is_none()) return v;
    std::vector<bool> continues;
    for (const py::handle& b : seq_starts) continues.push_back(!b.cast<bool>());
    return with_continuation(v, continues, "the data");
}

// CNTK's Value.ONE_HOT_SKIP: an index that makes an all-zero sample.
const int64_t kOneHotSkip = -1;

// CNTK's Value.one_hot: `batch` is a list of sequences, each a list of class indices (a bare index is a
// sequence of one). The Value keeps the indices (CNTK's sparse form): times() gathers rows from them.
Value one_hot_value(const py::object& batch, const py::object& num_classes, const py::object& dtype,
                    const py::object& device) {
    const Device dev = device_from(device);
    // A shape (d..., C) makes samples of d... one-hot rows: each sequence's indices, taken in groups of
    // prod(d...), are its samples (CNTK's one_hot over multi-dimensional samples).
    Dims classes = dims_arg(num_classes);
    CTK_CHECK(
        !classes.empty() && std::all_of(classes.begin(), classes.end(), [](int64_t d) { return d > 0; }),
        ValueError, "Value.one_hot: num_classes must be a positive number or a shape of them, got ",
        std::string(py::str(num_classes)));
    const int64_t c = classes.back();
    const Dims row_dims(classes.begin(), classes.end() - 1);
    int64_t group = 1;
    for (int64_t d : row_dims) group *= d;
    const DataType dt = dtype.is_none() ? DataType::f32 : dtype_from_python(dtype);
    std::vector<std::vector<int64_t>> seqs;
    std::vector<int64_t> lengths;
    const py::object numpy_integer = py::module_::import("numpy").attr("integer");
    for (const py::handle& seq : batch) {
        std::vector<int64_t> idx;
        // A class index is an integer (Python's or NumPy's); Value.ONE_HOT_SKIP (-1) is an all-zero sample.
        auto is_integer = [&numpy_integer](const py::handle& k) {
            return py::isinstance<py::int_>(k) || py::isinstance(k, numpy_integer);
        };
        auto index = [&](const py::handle& k) {
            CTK_CHECK(is_integer(k), ValueError, "Value.one_hot: sequence ", seqs.size(), " holds ",
                      std::string(py::repr(k)), ", which is not an integer class index");
            return py::int_(py::reinterpret_borrow<py::object>(k)).cast<int64_t>();
        };
        if (is_integer(seq)) {
            idx.push_back(index(seq));
        } else {
            for (const py::handle& k : seq) idx.push_back(index(k));
        }
        for (size_t j = 0; j < idx.size(); ++j)
            CTK_CHECK(idx[j] >= -1 && idx[j] < c, ValueError, "Value.one_hot: index ", idx[j],
                      " at position ", j, " of sequence ", seqs.size(), " is outside [0, ", c,
                      ") (-1: Value.ONE_HOT_SKIP)");
        CTK_CHECK(idx.size() % static_cast<size_t>(group) == 0, ValueError, "Value.one_hot: sequence ",
                  seqs.size(), " has ", idx.size(), " indices, not a multiple of the ", group,
                  " rows of a sample of shape ", dims_to_string(classes));
        lengths.push_back(static_cast<int64_t>(idx.size()) / group);
        seqs.push_back(std::move(idx));
    }
    CTK_CHECK(!seqs.empty(), ValueError, "Value.one_hot: the batch is empty");
    auto layout = std::make_shared<SequenceLayout>(lengths);  // ValueError for an empty sequence
    Dims index_dims{layout->num_sequences(), layout->max_length()};
    index_dims.insert(index_dims.end(), row_dims.begin(), row_dims.end());
    Tensor indices = Tensor::full(Shape(index_dims), -1.0, DataType::i64);
    int64_t* p = indices.data<int64_t>();
    for (size_t i = 0; i < seqs.size(); ++i)
        std::copy(seqs[i].begin(), seqs[i].end(), p + static_cast<int64_t>(i) * layout->max_length() * group);
    return Value::one_hot(indices, c, dt, layout).to(dev);
}

}  // namespace

void bind_values(py::module_& m) {
    // ---- NDArrayView: a dense tensor (CNTK's NDArrayView; ctk keeps no sparse storage) ----
    py::class_<Tensor>(m, "NDArrayView")
        .def(py::init([](const py::object& shape, const py::object& data_type, const py::object& device) {
                 return Tensor::zeros(Shape(dims_arg(shape)),
                                      data_type.is_none() ? DataType::f32 : dtype_from_python(data_type),
                                      device_from(device));
             }),
             py::arg("shape"), py::arg("data_type") = py::none(), py::arg("device") = py::none())
        .def_static(
            "from_dense",
            [](const py::handle& np_array, const py::object& device, bool, bool borrow) {
                const Device dev = device_from(device);
                Tensor t = tensor_from_numpy(np_array);
                if (t.device() != dev) return t.to(dev);  // a copy on the device
                return borrow ? t : t.clone();            // CNTK copies unless asked to borrow
            },
            py::arg("np_array"), py::arg("device") = py::none(), py::arg("read_only") = false,
            py::arg("borrow") = false)
        .def_static(
            "from_csr",
            [](const py::handle& csr, const py::object& device, bool, bool, const py::object& shape) {
                // ctk keeps no sparse storage: the matrix's dense rows (CNTK's view was sparse).
                const Device dev = device_from(device);
                Tensor t =
                    value_from_csr(csr, DataType::f32, false, std::nullopt, "NDArrayView.from_csr").data();
                return (shape.is_none() ? t.contiguous() : t.contiguous().reshape(dims_arg(shape))).to(dev);
            },
            py::arg("csr_array"), py::arg("device") = py::none(), py::arg("read_only") = false,
            py::arg("borrow") = false, py::arg("shape") = py::none())
        .def_static(
            "from_data",
            [](const py::handle& data, const py::object& device, bool, bool borrow) {
                const Device dev = device_from(device);
                if (py::isinstance<Tensor>(data)) return data.cast<Tensor>().to(dev);
                if (is_sparse_data(data))
                    return value_from_csr(data, DataType::f32, false, std::nullopt, "NDArrayView.from_data")
                        .data()
                        .contiguous()
                        .to(dev);
                Tensor t = tensor_from_numpy(data);
                if (t.device() != dev) return t.to(dev);
                return borrow ? t : t.clone();
            },
            py::arg("data"), py::arg("device") = py::none(), py::arg("read_only") = false,
            py::arg("borrow") = false)
        .def_property_readonly("shape", [](const Tensor& t) { return shape_tuple(t.shape().dims()); })
        .def_property_readonly("dtype", [](const Tensor& t) { return numpy_dtype(t.dtype()); })
        .def_property_readonly("is_sparse", [](const Tensor&) { return false; })
        // ctk's views are never read-only: read_only=True is accepted and not enforced.
        .def_property_readonly("is_read_only", [](const Tensor&) { return false; })
        .def_property_readonly("device", &Tensor::device)
        // CNTK's AsShape: the same data under another shape of as many elements.
        .def(
            "as_shape",
            [](const Tensor& t, const py::object& shape) {
                const Dims dims = dims_arg(shape);
                CTK_CHECK(Shape(dims).numel() == t.numel(), ValueError,
                          "NDArrayView.as_shape: ", t.shape().to_string(), " has ", t.numel(), " elements, ",
                          Shape(dims).to_string(), " holds ", Shape(dims).numel());
                return t.reshape(dims);
            },
            py::arg("shape"))
        // CNTK's SliceView: `extent` from `start_offset` along the trailing axes; the leading axes that
        // `extent` leaves out are indexed at their offset and dropped (CNTK's higher column-major axes).
        .def(
            "slice_view",
            [](const Tensor& t, const py::object& start_offset, const py::object& extent, bool) {
                const Dims start = dims_arg(start_offset), size = dims_arg(extent);
                const int rank = t.rank();
                CTK_CHECK(static_cast<int>(start.size()) == rank && static_cast<int>(size.size()) <= rank,
                          ValueError, "NDArrayView.slice_view: ", start.size(), " offsets and ", size.size(),
                          " extents for a view of rank ", rank);
                const int dropped = rank - static_cast<int>(size.size());
                Tensor out = t;
                for (int a = 0; a < rank; ++a) {
                    const int64_t n = a < dropped ? 1 : size[static_cast<size_t>(a - dropped)];
                    CTK_CHECK(start[static_cast<size_t>(a)] >= 0 && n >= 0 &&
                                  start[static_cast<size_t>(a)] + n <= t.shape()[a],
                              ValueError, "NDArrayView.slice_view: [", start[static_cast<size_t>(a)], ", ",
                              start[static_cast<size_t>(a)] + n, ") is outside axis ", a, " of ",
                              t.shape().to_string());
                    out = out.slice(a, start[static_cast<size_t>(a)], start[static_cast<size_t>(a)] + n);
                }
                return out.reshape(size);
            },
            py::arg("start_offset"), py::arg("extent"), py::arg("read_only") = true)
        .def("asarray", [](const Tensor& t) { return numpy_from_tensor(t); })
        .def("to_ndarray", [](const Tensor& t) { return numpy_from_tensor(t); })
        .def("__repr__", [](const Tensor& t) { return "NDArrayView(" + t.to_string() + ")"; });

    // ---- Value: a minibatch's data, and its sequence layout ----
    py::class_<Value>(m, "Value")
        .def(
            py::init([](py::object shape, const py::object& dtype, const py::object& batch,
                        const py::object& seq_starts, const py::object& device, py::object data) {
                // CNTK's SWIG Value(NDArrayView): the data given first.
                if (py::isinstance<Tensor>(shape) && data.is_none() && batch.is_none())
                    std::swap(shape, data);
                const Device dev = device_from(device);
                std::optional<DataType> dt;
                if (!dtype.is_none()) dt = dtype_from_python(dtype);
                Value v;
                if (!data.is_none()) {
                    v = Value(py::isinstance<Tensor>(data) ? data.cast<Tensor>()
                                                           : tensor_from_numpy(data, dt));
                } else if (!batch.is_none()) {
                    if (is_sparse_data(batch)) {  // CSR: a batch of samples, or a list of sequences
                        v = value_from_csr(
                            batch, dt.value_or(DataType::f32),
                            py::isinstance<py::list>(batch) || py::isinstance<py::tuple>(batch), std::nullopt,
                            "Value");
                    } else if (py::isinstance<py::list>(batch) || py::isinstance<py::tuple>(batch)) {
                        std::vector<Tensor> sequences;  // CNTK: a list of sequences, each [length, sample...]
                        for (const py::handle& s : batch) sequences.push_back(tensor_from_numpy(s, dt));
                        v = Value::from_sequences(sequences);
                    } else {
                        v = Value(tensor_from_numpy(batch, dt));
                    }
                } else {
                    throw ValueError("Value: give `batch` (an array or a list of sequences) or `data`");
                }
                if (!shape.is_none()) {
                    const Dims want = dims_arg(shape), got = v.data().shape().dims();
                    CTK_CHECK(
                        got.size() >= want.size() &&
                            std::equal(want.begin(), want.end(), got.end() - static_cast<long>(want.size())),
                        ShapeError, "Value: data of shape ", v.data().shape().to_string(),
                        " does not end in the sample shape ", Shape(want).to_string());
                }
                return with_seq_starts(v, seq_starts).to(dev);
            }),
            py::arg("shape") = py::none(), py::arg("dtype") = py::none(), py::arg("batch") = py::none(),
            py::arg("seq_starts") = py::none(), py::arg("device") = py::none(), py::arg("data") = py::none())
        .def_static(
            "create",
            [](const Variable& var, const py::object& data, const py::object& seq_starts,
               const py::object& device, bool) {
                const Device dev = device_from(device);
                return with_seq_starts(value_for(var, data), seq_starts).to(dev);
            },
            py::arg("var"), py::arg("data"), py::arg("seq_starts") = py::none(),
            py::arg("device") = py::none(), py::arg("read_only") = false)
        .def_readonly_static("ONE_HOT_SKIP", &kOneHotSkip)
        .def_static("one_hot", &one_hot_value, py::arg("batch"), py::arg("num_classes"),
                    py::arg("dtype") = py::none(), py::arg("device") = py::none())
        .def_property_readonly("shape", [](const Value& v) { return shape_tuple(v.shape().dims()); })
        .def("__len__", [](const Value& v) { return v.shape()[0]; })  // CNTK: the number of sequences
        .def_property_readonly("dtype", [](const Value& v) { return numpy_dtype(v.dtype()); })
        .def_property_readonly("data", [](const Value& v) { return v.data(); })
        .def_property_readonly("is_sparse", &Value::is_one_hot)
        .def_property_readonly("is_read_only", [](const Value&) { return false; })  // as NDArrayView's
        .def_property_readonly("device", &Value::device)
        // CNTK's MaskKind per frame: 2 where a sequence starts, 1 at its other frames (and at the first
        // frame of a sequence that goes on from the previous minibatch), 0 at padding.
        .def_property_readonly(
            "mask",
            [](const Value& v) {
                const int64_t n = v.shape()[0];
                const int64_t t = v.has_layout() ? v.layout()->max_length() : 1;
                py::array_t<int8_t> out({n, t});
                auto m = out.mutable_unchecked<2>();
                for (int64_t i = 0; i < n; ++i)
                    for (int64_t j = 0; j < t; ++j) {
                        const int64_t len =
                            v.has_layout() ? v.layout()->lengths()[static_cast<size_t>(i)] : 1;
                        const bool starts = !v.has_layout() || !v.layout()->continues(i);
                        m(i, j) = static_cast<int8_t>(j == 0 ? (starts ? 2 : 1) : j < len ? 1 : 0);
                    }
                return out;
            })
        .def("asarray", [](const Value& v) { return numpy_from_tensor(v.data()); })
        .def(
            "as_sequences",
            [](const Value& v, const py::object&) {
                py::list out;
                if (!v.has_layout()) {
                    for (int64_t i = 0; i < v.data().dim(0); ++i)
                        out.append(numpy_from_tensor(v.data().select(0, i)));
                } else {
                    for (int64_t i = 0; i < v.layout()->num_sequences(); ++i)
                        out.append(numpy_from_tensor(v.sequence(i)));
                }
                return out;
            },
            py::arg("variable") = py::none())
        .def("__repr__", [](const Value& v) { return "Value(" + v.data().to_string() + ")"; });
}

}  // namespace ctk::python
