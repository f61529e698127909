// Bindings of cntk.io: StreamDef, StreamInformation, MinibatchData, the deserializers (CTF, CBF, the
// image readers' configuration) and MinibatchSource. Reading runs with the GIL released, so the
// reader's threads can call deserializers written in Python (user_io.h).
#include "convert.h"
#include "ctk/io/cbf.h"
#include "ctk/io/image.h"
#include "user_io.h"

namespace ctk::python {

void bind_io(py::module_& m) {
    using py::arg;

    py::module_ io = m.def_submodule("io", "cntk.io");
    io.attr("INFINITELY_REPEAT") = kInfinitelyRepeat;
    io.attr("FULL_DATA_SWEEP") = kFullDataSweep;
    io.attr("DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS") = kDefaultRandomizationWindowInChunks;
    // py::dynamic_attr: cntk.io.StreamDef (Python) keeps an image stream's transforms on it.
    py::class_<StreamDef>(io, "StreamDef", py::dynamic_attr())
        .def(py::init([](const py::object& field, const py::object& shape, bool is_sparse,
                         const py::object& transforms, const py::object& context, const py::object& scp,
                         const py::object& mlf, const py::object& broadcast, bool defines_mb_size,
                         int64_t max_sequence_length) {
                 CTK_CHECK(transforms.is_none(), ValueError,
                           "StreamDef: transforms are taken by cntk.io.StreamDef, not the bound class");
                 for (const py::object* o : {&context, &scp, &mlf, &broadcast}) {
                     CTK_CHECK(
                         o->is_none(), NotImplementedError,
                         "StreamDef: context, scp, mlf and broadcast (the HTK readers) are not supported "
                         "by ctk yet");
                 }
                 StreamDef d;
                 d.field = field.is_none() ? "" : field.cast<std::string>();
                 d.shape = dims_arg(shape);
                 d.is_sparse = is_sparse;
                 d.defines_mb_size = defines_mb_size;
                 CTK_CHECK(max_sequence_length > 0, ValueError,
                           "StreamDef: max_sequence_length must be positive, got ", max_sequence_length);
                 d.max_sequence_length = max_sequence_length;
                 return d;
             }),
             arg("field") = py::none(), arg("shape") = py::none(), arg("is_sparse") = false,
             arg("transforms") = py::none(), arg("context") = py::none(), arg("scp") = py::none(),
             arg("mlf") = py::none(), arg("broadcast") = py::none(), arg("defines_mb_size") = false,
             arg("max_sequence_length") = 65535)
        .def_readwrite("field", &StreamDef::field)
        .def_readwrite("shape", &StreamDef::shape)
        .def_readwrite("is_sparse", &StreamDef::is_sparse)
        .def_readwrite("defines_mb_size", &StreamDef::defines_mb_size)
        .def_readwrite("max_sequence_length", &StreamDef::max_sequence_length);
    py::class_<StreamInformation>(io, "StreamInformation")
        // CNTK's StreamInformation(name, stream_id, storage_format, dtype, shape): how a source written in
        // Python (UserMinibatchSource, UserDeserializer) describes its streams.
        .def(py::init([](const std::string& name, int stream_id, const std::string& storage_format,
                         const py::object& dtype, const py::object& shape, bool defines_mb_size) {
                 CTK_CHECK(storage_format == "dense" || storage_format == "sparse", ValueError,
                           "StreamInformation '", name, "': storage_format is '", storage_format,
                           "'; it must be 'dense' or 'sparse'");
                 StreamInformation s;
                 s.name = name;
                 s.id = stream_id;
                 s.is_sparse = storage_format == "sparse";
                 s.dtype = dtype_from_python(dtype);
                 s.sample_shape = dims_arg(shape, "StreamInformation shape");
                 s.defines_mb_size = defines_mb_size;
                 return s;
             }),
             arg("name"), arg("stream_id"), arg("storage_format"), arg("dtype"), arg("shape"),
             arg("defines_mb_size") = false)
        .def_property_readonly("storage_format",
                               [](const StreamInformation& s) { return s.is_sparse ? "sparse" : "dense"; })
        .def_readonly("defines_mb_size", &StreamInformation::defines_mb_size)
        .def_readonly("m_defines_mb_size", &StreamInformation::defines_mb_size)
        .def_readonly("name", &StreamInformation::name)
        .def_readonly("m_name", &StreamInformation::name)
        .def_readonly("stream_id", &StreamInformation::id)
        .def_property_readonly("shape",
                               [](const StreamInformation& s) { return py::tuple(py::cast(s.sample_shape)); })
        .def_property_readonly("sample_shape",
                               [](const StreamInformation& s) { return py::tuple(py::cast(s.sample_shape)); })
        .def_property_readonly("dtype", [](const StreamInformation& s) { return numpy_dtype(s.dtype); })
        .def_readonly("is_sparse", &StreamInformation::is_sparse)
        .def("__hash__", [](const StreamInformation& s) { return py::hash(py::str(s.name)); })
        .def("__eq__",
             [](const StreamInformation& a, const py::object& b) {
                 return py::isinstance<StreamInformation>(b) && a.name == b.cast<StreamInformation>().name &&
                        a.id == b.cast<StreamInformation>().id;
             })
        .def("__repr__", [](const StreamInformation& s) { return "StreamInformation('" + s.name + "')"; });
    py::class_<MinibatchData>(io, "MinibatchData")
        // CNTK's MinibatchData(value, num_sequences, num_samples, sweep_end): what a source written in
        // Python (MinibatchSourceFromData, UserMinibatchSource) delivers.
        .def(py::init([](const Value& value, int64_t num_sequences, int64_t num_samples, bool sweep_end) {
                 return MinibatchData{value, num_sequences, num_samples, sweep_end};
             }),
             arg("value"), arg("num_sequences"), arg("num_samples"), arg("sweep_end") = false)
        .def_readonly("data", &MinibatchData::data)
        .def_readonly("num_samples", &MinibatchData::num_samples)
        .def_readonly("num_sequences", &MinibatchData::num_sequences)
        .def_readonly("end_of_sweep", &MinibatchData::sweep_end)
        .def_readonly("sweep_end", &MinibatchData::sweep_end)
        // CNTK's: the data is sparse (ctk's sparse minibatches are one-hot; other sparse rows come dense).
        .def_property_readonly("is_sparse", [](const MinibatchData& d) { return d.data.is_one_hot(); })
        .def_property_readonly(
            "shape", [](const MinibatchData& d) { return py::tuple(py::cast(d.data.data().shape().dims())); })
        .def("asarray", [](const MinibatchData& d) { return numpy_from_tensor(d.data.data()); })
        // CNTK's: one array per sequence, padding cut; for sparse data (one-hot, or `variable` sparse) one
        // SciPy CSR matrix per sequence (dense arrays when SciPy is not installed).
        .def(
            "as_sequences",
            [](const MinibatchData& d, const py::object& variable) {
                py::list out;
                py::object csr;
                const bool sparse =
                    d.data.is_one_hot() || (!variable.is_none() && py::hasattr(variable, "is_sparse") &&
                                            variable.attr("is_sparse").cast<bool>());
                if (sparse) {
                    try {
                        csr = py::module_::import("scipy.sparse").attr("csr_matrix");
                    } catch (const py::error_already_set&) {
                    }
                }
                for (int64_t i = 0; i < d.num_sequences; ++i) {
                    if (!csr) {
                        out.append(numpy_from_tensor(d.data.sequence(i)));
                        continue;
                    }
                    if (!d.data.is_one_hot()) {  // sparse rows delivered dense
                        const Tensor t = d.data.sequence(i);
                        out.append(csr(numpy_from_tensor(
                            t.reshape({t.dim(0), t.numel() / std::max<int64_t>(1, t.dim(0))}))));
                        continue;
                    }
                    const Tensor idx = d.data.one_hot_indices().to(Device::cpu()).contiguous();
                    const int64_t length = d.data.has_layout() ? d.data.layout()->lengths()[size_t(i)]
                                                               : idx.numel() / d.num_sequences;
                    const int64_t* row = idx.data<int64_t>() + i * (idx.numel() / d.num_sequences);
                    std::vector<int64_t> indptr{0}, indices;
                    for (int64_t t = 0; t < length; ++t) {
                        if (row[t] >= 0) indices.push_back(row[t]);
                        indptr.push_back(static_cast<int64_t>(indices.size()));
                    }
                    py::array_t<float> values(static_cast<py::ssize_t>(indices.size()));
                    std::fill(values.mutable_data(), values.mutable_data() + values.size(), 1.0f);
                    out.append(
                        csr(py::make_tuple(values, py::array(py::cast(indices)), py::array(py::cast(indptr))),
                            py::arg("shape") = py::make_tuple(length, d.data.num_classes())));
                }
                return out;
            },
            arg("variable") = py::none())
        .def("__len__", [](const MinibatchData& d) { return d.num_sequences; });
    // dynamic_attr: cntk.io keeps the CNTK configuration dictionary of a deserializer it made on it.
    py::class_<Deserializer, DeserializerPtr>(io, "Deserializer", py::dynamic_attr())
        .def("__repr__", &Deserializer::description);
    io.def(
        "CTFDeserializer",
        [](const std::string& filename, const py::dict& streams) {
            std::vector<StreamDef> defs;
            for (auto item : streams) {
                StreamDef d = item.second.cast<StreamDef>();
                d.name = py::str(item.first);
                if (d.field.empty()) d.field = d.name;
                defs.push_back(d);
            }
            return ctf_deserializer(filename, defs);
        },
        arg("filename"), arg("streams"));
    // CNTK's CBFDeserializer(filename, streams={}): every stream of the file, renamed by the StreamDefs
    // ({name: StreamDef(field=name in the file)}).
    io.def(
        "CBFDeserializer",
        [](const std::string& filename, const py::object& streams) {
            std::vector<StreamDef> renames;
            if (!streams.is_none())
                for (auto item : streams.cast<py::dict>()) {
                    StreamDef d;
                    d.name = py::str(item.first);
                    d.field = item.second.cast<StreamDef>().field;
                    renames.push_back(d);
                }
            return cbf_deserializer(filename, renames);
        },
        arg("filename"), arg("streams") = py::none());
    // ctk's ctf2bin: a CTF file as CBF; streams {name: StreamDef(field, shape, is_sparse)} or None (found
    // by reading the file).
    io.def(
        "ctf_to_cbf",
        [](const std::string& ctf, const std::string& cbf, const py::object& streams, int64_t chunk_size,
           bool legacy) {
            std::vector<CbfStream> s;
            if (streams.is_none()) {
                s = infer_ctf_streams(ctf);
            } else {
                for (auto item : streams.cast<py::dict>()) {
                    const StreamDef d = item.second.cast<StreamDef>();
                    int64_t dim = 1;
                    for (int64_t v : d.shape) dim *= v;
                    s.push_back({py::str(item.first),
                                 d.field.empty() ? std::string(py::str(item.first)) : d.field, d.is_sparse,
                                 dim});
                }
            }
            py::gil_scoped_release nogil;
            return convert_ctf_to_cbf(ctf, cbf, s, chunk_size, legacy);
        },
        arg("ctf_path"), arg("cbf_path"), arg("streams") = py::none(), arg("chunk_size_bytes") = 32 << 20,
        arg("legacy_chunking") = false);
    // The image reader's configuration: cntk.io.ImageDeserializer (Python) builds these from CNTK's
    // transform dictionaries.
    py::class_<ImageCrop>(io, "_ImageCrop")
        .def(py::init<>())
        .def_readwrite("crop_type", &ImageCrop::crop_type)
        .def_readwrite("crop_width", &ImageCrop::crop_width)
        .def_readwrite("crop_height", &ImageCrop::crop_height)
        .def_readwrite("side_ratio_min", &ImageCrop::side_ratio_min)
        .def_readwrite("side_ratio_max", &ImageCrop::side_ratio_max)
        .def_readwrite("area_ratio_min", &ImageCrop::area_ratio_min)
        .def_readwrite("area_ratio_max", &ImageCrop::area_ratio_max)
        .def_readwrite("aspect_ratio_min", &ImageCrop::aspect_ratio_min)
        .def_readwrite("aspect_ratio_max", &ImageCrop::aspect_ratio_max)
        .def_readwrite("jitter_type", &ImageCrop::jitter_type)
        .def_readwrite("hflip", &ImageCrop::hflip)
        .def_readwrite("seed", &ImageCrop::seed);
    py::class_<ImageScale>(io, "_ImageScale")
        .def(py::init<>())
        .def_readwrite("width", &ImageScale::width)
        .def_readwrite("height", &ImageScale::height)
        .def_readwrite("channels", &ImageScale::channels)
        .def_readwrite("interpolations", &ImageScale::interpolations)
        .def_readwrite("scale_mode", &ImageScale::scale_mode)
        .def_readwrite("pad_value", &ImageScale::pad_value);
    py::class_<ImageMean>(io, "_ImageMean")
        .def(py::init<>())
        .def_readwrite("mean_file", &ImageMean::mean_file);
    py::class_<ImageColor>(io, "_ImageColor")
        .def(py::init<>())
        .def_readwrite("brightness_radius", &ImageColor::brightness_radius)
        .def_readwrite("contrast_radius", &ImageColor::contrast_radius)
        .def_readwrite("saturation_radius", &ImageColor::saturation_radius)
        .def_readwrite("seed", &ImageColor::seed);
    py::class_<ImageDeserializerConfig>(io, "_ImageDeserializerConfig")
        .def(py::init<>())
        .def_readwrite("map_file", &ImageDeserializerConfig::map_file)
        .def_readwrite("image_stream", &ImageDeserializerConfig::image_stream)
        .def_readwrite("transforms", &ImageDeserializerConfig::transforms)
        .def_readwrite("label_stream", &ImageDeserializerConfig::label_stream)
        .def_readwrite("num_classes", &ImageDeserializerConfig::num_classes)
        .def_readwrite("grayscale", &ImageDeserializerConfig::grayscale)
        .def_readwrite("multi_view_crop", &ImageDeserializerConfig::multi_view_crop)
        .def_readwrite("max_errors", &ImageDeserializerConfig::max_errors);
    io.def("_image_deserializer", &image_deserializer, arg("config"));
    io.def("_base64_image_deserializer", &base64_image_deserializer, arg("config"));

    // PyMinibatchSource: a Python subclass (cntk.io.UserMinibatchSource) delivers minibatches itself.
    py::class_<MinibatchSource, PyMinibatchSource, std::shared_ptr<MinibatchSource>>(io, "MinibatchSource",
                                                                                     py::dynamic_attr())
        .def(py::init_alias<>())
        .def(py::init([](const py::object& deserializers, int64_t max_samples, int64_t max_sweeps,
                         int64_t window_chunks, int64_t window_samples, uint64_t seed,
                         const py::object& /*trace*/, const py::object& multithreaded, bool frame_mode,
                         int64_t truncation_length, bool randomize, int64_t /*max_errors*/) {
                 CTK_CHECK(!frame_mode && truncation_length == 0, NotImplementedError,
                           "MinibatchSource: frame_mode and truncation_length are not supported by ctk yet");
                 MinibatchSourceConfig c;
                 // Deserializers, or CNTK's deserializer dictionaries (ImageDeserializer returns one),
                 // which cntk.io turns into deserializers.
                 const py::object from_config =
                     py::module_::import("ctk.io").attr("_deserializer_from_config");
                 auto one = [&](const py::handle& d) {
                     return py::isinstance<Deserializer>(d) ? d.cast<DeserializerPtr>()
                                                            : from_config(d).cast<DeserializerPtr>();
                 };
                 if (!py::isinstance<py::list>(deserializers) && !py::isinstance<py::tuple>(deserializers)) {
                     c.deserializers = {one(deserializers)};
                 } else {
                     for (const py::handle& d : deserializers) c.deserializers.push_back(one(d));
                 }
                 c.max_samples = max_samples;
                 c.max_sweeps = max_sweeps;
                 c.randomization_window_in_chunks = window_chunks;
                 c.randomization_window_in_samples = window_samples;
                 c.randomization_seed = seed;
                 c.randomize = randomize;
                 if (!multithreaded.is_none()) c.multithreaded_deserializer = multithreaded.cast<bool>();
                 // Freed without the GIL: its reader threads may be waiting for it to call a Python
                 // deserializer, and the destructor waits for them.
                 return std::shared_ptr<MinibatchSource>(new MinibatchSource(std::move(c)),
                                                         [](MinibatchSource* p) {
                                                             if (Py_IsInitialized() && PyGILState_Check()) {
                                                                 py::gil_scoped_release nogil;
                                                                 delete p;
                                                             } else {
                                                                 delete p;
                                                             }
                                                         });
             }),
             arg("deserializers"), arg("max_samples") = kInfinitelyRepeat,
             arg("max_sweeps") = kInfinitelyRepeat,
             arg("randomization_window_in_chunks") = kDefaultRandomizationWindowInChunks,
             arg("randomization_window_in_samples") = 0, arg("randomization_seed") = 0,
             arg("trace_level") = py::none(), arg("multithreaded_deserializer") = py::none(),
             arg("frame_mode") = false, arg("truncation_length") = 0, arg("randomize") = true,
             arg("max_errors") = 0)
        .def_property_readonly("streams",
                               [](const MinibatchSource& s) {
                                   py::dict d;
                                   for (const auto& info : s.stream_infos()) d[py::str(info.name)] = info;
                                   // CNTK's Record: source.streams.features and source.streams['features'].
                                   return py::module_::import("ctk.variables").attr("Record")(**d);
                               })
        .def("stream_infos", &MinibatchSource::stream_infos)
        .def("stream_info", &MinibatchSource::stream_info, arg("name"))
        .def("__getitem__", &MinibatchSource::stream_info, arg("name"))
        .def(
            "next_minibatch",
            [](MinibatchSource& s, int64_t size, const py::object& input_map, const py::object& device,
               const py::object& partitions, const py::object& index) {
                const int64_t n = partitions.is_none() ? 1 : partitions.cast<int64_t>();
                const int64_t i = index.is_none() ? 0 : index.cast<int64_t>();
                const Device dev = device_from(device);
                std::unordered_map<std::string, MinibatchData> mb;
                {
                    py::gil_scoped_release nogil;
                    mb = s.next_minibatch(size, n, i, dev);
                }
                py::dict out;
                if (mb.empty()) return out;
                if (input_map.is_none()) {
                    for (const auto& info : s.stream_infos()) {
                        auto it = mb.find(info.name);
                        if (it != mb.end()) out[py::cast(info)] = it->second;
                    }
                } else {
                    for (auto item : input_map.cast<py::dict>()) {
                        const std::string name = py::isinstance<StreamInformation>(item.second)
                                                     ? item.second.cast<StreamInformation>().name
                                                     : item.second.cast<std::string>();
                        out[item.first] = mb.at(name);
                    }
                }
                return out;
            },
            arg("minibatch_size_in_samples"), arg("input_map") = py::none(), arg("device") = py::none(),
            arg("num_data_partitions") = py::none(), arg("partition_index") = py::none())
        .def_property_readonly("total_samples_delivered", &MinibatchSource::total_samples_delivered)
        // CNTK's position as a dict (the sweep, the position in it, the samples delivered, the transform
        // engines' draws); restore_from_checkpoint takes it back.
        .def("get_checkpoint_state",
             [](const MinibatchSource& s) { return dictionary_to_python(s.checkpoint_state()); })
        .def(
            "restore_from_checkpoint",
            [](MinibatchSource& s, const py::object& checkpoint) {
                const Dictionary d =
                    dictionary_from_python(checkpoint, "restore_from_checkpoint: checkpoint");
                py::gil_scoped_release nogil;
                s.restore_from_checkpoint(d);
            },
            arg("checkpoint"))
        .def_property(
            "current_position",
            [](const MinibatchSource& s) { return dictionary_to_python(s.checkpoint_state()); },
            [](MinibatchSource& s, const py::object& position) {
                const Dictionary d = dictionary_from_python(position, "current_position");
                py::gil_scoped_release nogil;
                s.restore_from_checkpoint(d);
            });
    bind_user_io(io);
}

}  // namespace ctk::python
