// Readers written in Python (user_io.h): CNTK's UserMinibatchSource and UserDeserializer.
#include "user_io.h"

#include <numeric>

namespace ctk::python {

namespace {

std::string class_name(const py::handle& obj) {
    return py::str(py::type::handle_of(obj).attr("__name__"));
}

int64_t sample_size(const StreamInformation& s) {
    return std::accumulate(s.sample_shape.begin(), s.sample_shape.end(), int64_t{1}, std::multiplies<>());
}

// Rows [begin, end) of a CSR matrix as one sequence: index form when every row holds a single 1, dense
// rows [length, sample...] otherwise.
SequenceData csr_rows(const py::array_t<int64_t>& indptr, const py::array_t<int64_t>& indices,
                      const py::array_t<float>& values, int64_t begin, int64_t end,
                      const StreamInformation& s) {
    SequenceData out;
    const int64_t* ptr = indptr.data();
    const int64_t* idx = indices.data();
    const float* val = values.data();
    const int64_t length = end - begin, dim = sample_size(s);
    bool one_hot = s.sample_shape.size() == 1;
    for (int64_t r = begin; one_hot && r < end; ++r)
        one_hot = ptr[r + 1] - ptr[r] == 1 && val[ptr[r]] == 1.0f;
    if (one_hot) {
        out.one_hot_indices = Tensor::empty(Shape{length}, DataType::i64);
        int64_t* q = out.one_hot_indices.data<int64_t>();
        for (int64_t r = begin; r < end; ++r) q[r - begin] = idx[ptr[r]];
        return out;
    }
    Dims dims{length};
    dims.insert(dims.end(), s.sample_shape.begin(), s.sample_shape.end());
    out.data = Tensor::zeros(Shape(dims));
    float* dst = out.data.data<float>();
    for (int64_t r = begin; r < end; ++r)
        for (int64_t k = ptr[r]; k < ptr[r + 1]; ++k) dst[(r - begin) * dim + idx[k]] += val[k];
    return out;
}

// A CSR matrix's rows: as one sequence (`whole`) or as one sequence per row.
std::vector<SequenceData> from_csr(const py::handle& m, const StreamInformation& s, bool whole,
                                   const std::string& where) {
    const auto shape = m.attr("shape").cast<std::vector<int64_t>>();
    CTK_CHECK(shape.size() == 2 && shape[1] == sample_size(s) && (shape[0] > 0 || !whole), ValueError, where,
              ": a sparse matrix of shape ", dims_to_string(shape), " for stream '", s.name,
              "' of sample shape ", dims_to_string(s.sample_shape), "; its rows must hold ", sample_size(s),
              " columns", whole ? ", and a sequence at least one row" : "");
    auto indptr = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(m.attr("indptr"));
    auto indices = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(m.attr("indices"));
    auto values = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(m.attr("data"));
    CTK_CHECK(indptr && indices && values && indptr.size() == shape[0] + 1 && indices.size() == values.size(),
              ValueError, where, ": the sparse matrix for stream '", s.name, "' is not a valid CSR matrix");
    for (int64_t k = 0; k < indices.size(); ++k)
        CTK_CHECK(indices.data()[k] >= 0 && indices.data()[k] < shape[1], IndexError, where,
                  ": the sparse matrix for stream '", s.name, "' has the column index ", indices.data()[k],
                  " outside [0, ", shape[1], ")");
    std::vector<SequenceData> out;
    if (whole) {
        out.push_back(csr_rows(indptr, indices, values, 0, shape[0], s));
    } else {
        for (int64_t r = 0; r < shape[0]; ++r) out.push_back(csr_rows(indptr, indices, values, r, r + 1, s));
    }
    return out;
}

// A dense array as [count, sample...]: one sequence of `count` samples (`whole`) or `count` sequences of
// one sample.
std::vector<SequenceData> from_dense(const py::handle& a, const StreamInformation& s, bool whole,
                                     const std::string& where) {
    Tensor t = tensor_from_numpy(a, DataType::f32);
    const int64_t dim = sample_size(s);
    CTK_CHECK(
        t.rank() >= 1 && dim > 0 && t.numel() % dim == 0 && (t.numel() > 0 || !whole), ValueError, where,
        ": an array of shape ", t.shape().to_string(), " for stream '", s.name, "' of sample shape ",
        dims_to_string(s.sample_shape),
        whole ? "; a sequence must be [length, sample...]" : "; the samples must be [count, sample...]");
    const int64_t count = t.numel() / dim;
    Dims dims{count};
    dims.insert(dims.end(), s.sample_shape.begin(), s.sample_shape.end());
    t = t.contiguous().reshape(dims);
    std::vector<SequenceData> out;
    if (whole) {
        out.push_back({t, Tensor()});
    } else {
        for (int64_t i = 0; i < count; ++i) out.push_back({t.slice(0, i, i + 1).contiguous(), Tensor()});
    }
    return out;
}

// One stream of a chunk as CNTK took it: a list (one entry per sequence: an array [length, sample...]
// or a CSR matrix of `length` rows) or, one sample per sequence, an array [count, sample...] or a CSR
// matrix of `count` rows.
std::vector<SequenceData> stream_sequences(const py::handle& data, const StreamInformation& s,
                                           const std::string& where) {
    if (py::isinstance<py::list>(data) || py::isinstance<py::tuple>(data)) {
        std::vector<SequenceData> out;
        for (const py::handle& item : data) {
            auto one =
                is_sparse_data(item) ? from_csr(item, s, true, where) : from_dense(item, s, true, where);
            out.push_back(std::move(one[0]));
        }
        return out;
    }
    return is_sparse_data(data) ? from_csr(data, s, false, where) : from_dense(data, s, false, where);
}

class UserDeserializer final : public Deserializer {
public:
    explicit UserDeserializer(const py::object& user) : user_(hold(user)), name_(class_name(user)) {
        for (const py::handle& info : user.attr("stream_infos")()) {
            streams_.push_back(info.cast<StreamInformation>());
            streams_.back().id = static_cast<int>(streams_.size()) - 1;
        }
        CTK_CHECK(!streams_.empty(), ValueError, description(), ": stream_infos() returned no streams");
        const int64_t chunks = int_arg(user.attr("num_chunks")(), "num_chunks()", 0);
        CTK_CHECK(chunks > 0, ValueError, description(),
                  ": num_chunks() returned 0; it needs at least one chunk");
        // The randomizer plans a sweep from every chunk's size, which only the chunk's data tells: each
        // chunk is read once here, as the text reader reads its file once to index it.
        for (int64_t c = 0; c < chunks; ++c) {
            const auto seqs = convert(user, c);
            int64_t samples = 0;
            for (const auto& seq : seqs) {
                int64_t longest = 0;
                for (const SequenceData& d : seq)
                    longest = std::max(
                        longest, d.one_hot_indices.defined() ? d.one_hot_indices.dim(0) : d.data.dim(0));
                samples += longest;
            }
            sizes_.emplace_back(static_cast<int64_t>(seqs.size()), samples);
        }
    }

    const std::vector<StreamInformation>& streams() const override { return streams_; }
    int64_t num_chunks() const override { return static_cast<int64_t>(sizes_.size()); }
    int64_t chunk_num_sequences(int64_t chunk) const override { return sizes_.at(size_t(chunk)).first; }
    int64_t chunk_num_samples(int64_t chunk) const override { return sizes_.at(size_t(chunk)).second; }
    std::vector<std::vector<SequenceData>> read_chunk(int64_t chunk) const override {
        py::gil_scoped_acquire gil;
        auto seqs = convert(*user_, chunk);
        CTK_CHECK(static_cast<int64_t>(seqs.size()) == chunk_num_sequences(chunk), ValueError, description(),
                  ": get_chunk(", chunk, ") returned ", seqs.size(), " sequences, and ",
                  chunk_num_sequences(chunk),
                  " the first time; a deserializer must return the same data for a chunk every time");
        return seqs;
    }
    std::string description() const override { return "UserDeserializer " + name_; }

private:
    // get_chunk(chunk) as result[sequence][stream]; runs with the GIL.
    std::vector<std::vector<SequenceData>> convert(const py::handle& user, int64_t chunk) const {
        const std::string where = description() + ".get_chunk(" + std::to_string(chunk) + ")";
        py::object data = user.attr("get_chunk")(chunk);
        CTK_CHECK(py::isinstance<py::dict>(data), TypeError, where, " returned a ", class_name(data),
                  "; it must return a dict {stream name: data}");
        std::vector<std::vector<SequenceData>> out;
        for (size_t s = 0; s < streams_.size(); ++s) {
            const StreamInformation& info = streams_[s];
            CTK_CHECK(data.contains(py::str(info.name)), ValueError, where, " returned no data for stream '",
                      info.name, "'");
            auto seqs = stream_sequences(data[py::str(info.name)], info, where);
            if (s == 0) out.resize(seqs.size());
            CTK_CHECK(seqs.size() == out.size(), ValueError, where, " returned ", seqs.size(),
                      " sequences for stream '", info.name, "' and ", out.size(), " for stream '",
                      streams_[0].name, "'");
            for (size_t i = 0; i < seqs.size(); ++i) out[i].push_back(std::move(seqs[i]));
        }
        return out;
    }

    std::shared_ptr<py::object> user_;
    std::string name_;
    std::vector<StreamInformation> streams_;
    std::vector<std::pair<int64_t, int64_t>> sizes_;  // (sequences, samples) per chunk
};

DictionaryValue value_from_python(const py::handle& v, const std::string& key) {
    if (v.is_none()) return DictionaryValue();
    if (py::isinstance<py::bool_>(v)) return v.cast<bool>();
    if (py::isinstance<py::int_>(v)) return v.cast<int64_t>();
    if (py::isinstance<py::float_>(v)) return v.cast<double>();
    if (py::isinstance<py::str>(v)) return v.cast<std::string>();
    if (py::isinstance<py::dict>(v)) return dictionary_from_python(v, key);
    if (py::isinstance<py::list>(v) || py::isinstance<py::tuple>(v)) {
        DictionaryValue::List items;
        for (const py::handle& item : v) items.push_back(value_from_python(item, key));
        return items;
    }
    if (py::isinstance<py::array>(v)) return tensor_from_numpy(v).contiguous().clone();
    if (hasattr(v, "__index__")) return v.attr("__index__")().cast<int64_t>();  // NumPy integers
    if (hasattr(v, "__float__")) return v.attr("__float__")().cast<double>();   // NumPy floats
    CTK_THROW(TypeError, "checkpoint state: the value of '", key, "' is a ", class_name(v),
              "; a state holds None, bool, int, float, str, NumPy arrays, and lists and dicts of them");
}

py::object value_to_python(const DictionaryValue& v) {
    if (v.is<bool>()) return py::bool_(v.as_bool());
    if (v.is<int64_t>()) return py::int_(v.as_int());
    if (v.is<double>()) return py::float_(v.as_double());
    if (v.is<std::string>()) return py::str(v.as_string());
    if (v.is<Tensor>()) return numpy_from_tensor(v.as_tensor());
    if (v.is<DictionaryValue::List>()) {
        py::list out;
        for (const DictionaryValue& item : v.as_list()) out.append(value_to_python(item));
        return out;
    }
    if (v.is_none()) return py::none();
    return dictionary_to_python(v.as_dictionary());
}

}  // namespace

Dictionary dictionary_from_python(const py::handle& obj, const std::string& what) {
    CTK_CHECK(py::isinstance<py::dict>(obj), TypeError, what, " is a ", class_name(obj),
              "; it must be a dict");
    Dictionary d;
    for (auto item : obj.cast<py::dict>()) {
        CTK_CHECK(py::isinstance<py::str>(item.first), ValueError, what, ": the key ",
                  std::string(py::repr(item.first)), " is not a string; a state's keys must be strings");
        const std::string key = item.first.cast<std::string>();
        d.set(key, value_from_python(item.second, key));
    }
    return d;
}

py::dict dictionary_to_python(const Dictionary& d) {
    py::dict out;
    for (const auto& [key, value] : d.items()) out[py::str(key)] = value_to_python(value);
    return out;
}

DeserializerPtr user_deserializer(const py::object& user) {
    return std::make_shared<UserDeserializer>(user);
}

py::function PyMinibatchSource::method(const char* name) const {
    py::function f = py::get_override(static_cast<const MinibatchSource*>(this), name);
    CTK_CHECK(f, NotImplementedError, "UserMinibatchSource: ", name, "() is not implemented");
    return f;
}

const std::vector<StreamInformation>& PyMinibatchSource::stream_infos() const {
    py::gil_scoped_acquire gil;
    std::vector<StreamInformation> infos;
    for (const py::handle& info : method("stream_infos")()) infos.push_back(info.cast<StreamInformation>());
    infos_ = std::move(infos);
    return infos_;
}

std::unordered_map<std::string, MinibatchData> PyMinibatchSource::next_minibatch(int64_t size,
                                                                                 int64_t partitions,
                                                                                 int64_t index,
                                                                                 Device device) {
    py::gil_scoped_acquire gil;
    py::object mb = method("_next_minibatch")(size, partitions, index, py::cast(device));
    std::unordered_map<std::string, MinibatchData> out;
    if (mb.is_none()) return out;
    const std::string who =
        "UserMinibatchSource " + class_name(py::cast(static_cast<MinibatchSource*>(this)));
    CTK_CHECK(py::isinstance<py::dict>(mb), TypeError, who, ".next_minibatch returned a ", class_name(mb),
              "; it must return {StreamInformation: MinibatchData}");
    bool sweep_end = false;
    int64_t samples = 0;
    for (auto item : mb.cast<py::dict>()) {
        CTK_CHECK(py::isinstance<MinibatchData>(item.second), TypeError, who, ".next_minibatch returned a ",
                  class_name(item.second), " for stream ", std::string(py::str(item.first)),
                  "; it must be a MinibatchData");
        const std::string name = py::isinstance<StreamInformation>(item.first)
                                     ? item.first.cast<StreamInformation>().name
                                     : item.first.cast<std::string>();
        MinibatchData d = item.second.cast<MinibatchData>();
        sweep_end = sweep_end || d.sweep_end;
        samples = std::max(samples, d.num_samples);
        out.emplace(name, std::move(d));
    }
    samples_ += samples;
    if (sweep_end) ++sweeps_;
    return out;
}

bool PyMinibatchSource::repeats_forever() const {
    py::gil_scoped_acquire gil;
    py::function f = py::get_override(static_cast<const MinibatchSource*>(this), "is_infinite");
    return f && f().cast<bool>();
}

Dictionary PyMinibatchSource::checkpoint_state() const {
    py::gil_scoped_acquire gil;
    return dictionary_from_python(method("get_checkpoint_state")(),
                                  "UserMinibatchSource.get_checkpoint_state()");
}

void PyMinibatchSource::restore_from_checkpoint(const Dictionary& state) {
    py::gil_scoped_acquire gil;
    method("restore_from_checkpoint")(dictionary_to_python(state));
}

void bind_user_io(py::module_& io) {
    io.def("_user_deserializer", &user_deserializer, py::arg("user"));
}

}  // namespace ctk::python
