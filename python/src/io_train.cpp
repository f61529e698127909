// Bindings of cntk.io (MinibatchSource, CTFDeserializer, StreamDef, stream infos, MinibatchData) and
// cntk.train / cntk.logging (Trainer, Evaluator, training_session and its configs, ProgressPrinter,
// log_number_of_parameters). Reading and training run with the GIL released; Python's and C's stdout
// are flushed around everything that prints, so the log lines keep their order.
#include <cstdio>

#include "convert.h"
#include "ctk/io/cbf.h"
#include "ctk/io/image.h"

namespace ctk::python {

namespace {

// Flushes Python's sys.stdout before C++ prints, and C's stdout after.
struct StdoutSync {
    StdoutSync() {
        // PySys_GetObject: the current sys.stdout (scripts may replace it) without an import per step.
        PyObject* out = PySys_GetObject("stdout");
        if (out && out != Py_None) py::reinterpret_borrow<py::object>(out).attr("flush")();
    }
    ~StdoutSync() { std::fflush(stdout); }
};

// {Variable: StreamInformation or stream name} -> StreamMap.
StreamMap stream_map(const py::handle& map) {
    StreamMap out;
    if (map.is_none()) return out;
    for (auto item : py::reinterpret_borrow<py::dict>(map)) {
        Variable v = to_variable(item.first);
        out[v] = py::isinstance<StreamInformation>(item.second) ? item.second.cast<StreamInformation>().name
                                                                : item.second.cast<std::string>();
    }
    return out;
}

// Trainer arguments: {Variable: MinibatchData or data}; the sweep ends when some MinibatchData says so.
MinibatchArguments minibatch_arguments(const py::handle& arguments, const FunctionPtr& f, bool* sweep_end) {
    if (sweep_end && py::isinstance<py::dict>(arguments)) {
        for (auto item : py::reinterpret_borrow<py::dict>(arguments)) {
            if (py::isinstance<MinibatchData>(item.second))
                *sweep_end |= item.second.cast<const MinibatchData&>().sweep_end;
        }
    }
    ValueMap m = argument_map(arguments, f);
    return MinibatchArguments(m.begin(), m.end());
}

Frequency frequency_arg(const py::handle& f) {
    if (f.is_none()) return {};
    if (py::isinstance<py::tuple>(f)) {
        auto t = f.cast<py::tuple>();
        return {t[0].cast<int64_t>(), t[1].cast<DataUnit>()};
    }
    return {f.cast<int64_t>(), DataUnit::sample};
}

std::shared_ptr<MinibatchSource> source_arg(const py::object& a, const py::object& b) {
    const py::object& s = a.is_none() ? b : a;
    return s.is_none() ? nullptr : s.cast<std::shared_ptr<MinibatchSource>>();
}

// A progress writer written in Python (subclassing cntk.logging.ProgressWriter): its on_write_* methods
// and write() are called with CNTK's arguments, (start, end) pairs as tuples; a method it does not
// define does nothing. Called from training without the GIL, so each call takes it. The Python half is
// kept alive by the C++ one (a writer passed inline to a Trainer must keep its methods).
class PyProgressWriter : public ProgressWriter {
public:
    using ProgressWriter::ProgressWriter;
    void on_write_training_update(Range samples, Range updates, Sums loss,
                                  std::optional<Sums> metric) override {
        call("on_write_training_update", samples, updates, loss, metric);  // (None without a metric)
    }
    void on_write_test_update(Range samples, Range updates, Sums metric) override {
        call("on_write_test_update", samples, updates, metric);
    }
    void on_write_training_summary(int64_t samples, int64_t updates, int64_t summaries, double loss,
                                   std::optional<double> metric, int64_t elapsed_ms) override {
        call("on_write_training_summary", samples, updates, summaries, loss, metric, elapsed_ms);
    }
    void on_write_test_summary(int64_t samples, int64_t updates, int64_t summaries, double metric,
                               int64_t elapsed_ms) override {
        call("on_write_test_summary", samples, updates, summaries, metric, elapsed_ms);
    }
    void write(const std::string& key, double value) override { call("write", key, value); }
    void keep(py::object self) {
        self_ = std::shared_ptr<py::object>(new py::object(std::move(self)), [](py::object* p) {
            if (!Py_IsInitialized()) return;
            py::gil_scoped_acquire gil;
            delete p;
        });
    }

private:
    // Converts the arguments only once the GIL is held.
    template <typename... Args>
    void call(const char* name, Args&&... args) {
        py::gil_scoped_acquire gil;
        if (py::function f = py::get_override(static_cast<const ProgressWriter*>(this), name))
            f(std::forward<Args>(args)...);
    }
    std::shared_ptr<py::object> self_;
};

std::vector<ProgressWriterPtr> writers_arg(const py::object& w) {
    if (w.is_none()) return {};
    if (py::isinstance<ProgressWriter>(w)) return {w.cast<ProgressWriterPtr>()};
    return w.cast<std::vector<ProgressWriterPtr>>();
}

}  // namespace

void bind_io_train(py::module_& m) {
    using py::arg;

    // ---- io ----
    py::module_ io = m.def_submodule("io", "cntk.io");
    io.attr("INFINITELY_REPEAT") = kInfinitelyRepeat;
    io.attr("FULL_DATA_SWEEP") = kFullDataSweep;
    io.attr("DEFAULT_RANDOMIZATION_WINDOW_IN_CHUNKS") = kDefaultRandomizationWindowInChunks;
    // py::dynamic_attr: cntk.io.StreamDef (Python) keeps an image stream's transforms on it.
    py::class_<StreamDef>(io, "StreamDef", py::dynamic_attr())
        .def(py::init([](const py::object& field, const py::object& shape, bool is_sparse,
                         const py::object& transforms, const py::object& context, const py::object& scp,
                         const py::object& mlf, const py::object& broadcast, bool defines_mb_size,
                         int64_t /*max_sequence_length*/) {
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
                 return d;
             }),
             arg("field") = py::none(), arg("shape") = py::none(), arg("is_sparse") = false,
             arg("transforms") = py::none(), arg("context") = py::none(), arg("scp") = py::none(),
             arg("mlf") = py::none(), arg("broadcast") = py::none(), arg("defines_mb_size") = false,
             arg("max_sequence_length") = 65535)
        .def_readwrite("field", &StreamDef::field)
        .def_readwrite("shape", &StreamDef::shape)
        .def_readwrite("is_sparse", &StreamDef::is_sparse)
        .def_readwrite("defines_mb_size", &StreamDef::defines_mb_size);
    py::class_<StreamInformation>(io, "StreamInformation")
        .def_readonly("name", &StreamInformation::name)
        .def_readonly("m_name", &StreamInformation::name)
        .def_readonly("stream_id", &StreamInformation::id)
        .def_property_readonly("shape",
                               [](const StreamInformation& s) { return py::tuple(py::cast(s.sample_shape)); })
        .def_readonly("sample_shape", &StreamInformation::sample_shape)
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
        .def_property_readonly(
            "shape", [](const MinibatchData& d) { return py::tuple(py::cast(d.data.data().shape().dims())); })
        .def("asarray", [](const MinibatchData& d) { return numpy_from_tensor(d.data.data()); })
        .def("as_sequences",
             [](const MinibatchData& d) {
                 py::list out;
                 for (int64_t i = 0; i < d.num_sequences; ++i)
                     out.append(numpy_from_tensor(d.data.sequence(i)));
                 return out;
             })
        .def("__len__", [](const MinibatchData& d) { return d.num_sequences; });
    py::class_<Deserializer, DeserializerPtr>(io, "Deserializer").def("__repr__", &Deserializer::description);
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

    py::class_<MinibatchSource, std::shared_ptr<MinibatchSource>>(io, "MinibatchSource")
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
                 if (py::isinstance<Deserializer>(deserializers) || py::isinstance<py::dict>(deserializers)) {
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
                 return std::make_shared<MinibatchSource>(std::move(c));
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
        .def_property_readonly("total_samples_delivered", &MinibatchSource::total_samples_delivered);

    // ---- logging ----
    py::module_ lg = m.def_submodule("logging", "cntk.logging");
    py::class_<ProgressWriter, PyProgressWriter, ProgressWriterPtr>(lg, "ProgressWriter", py::dynamic_attr())
        .def(py::init(
                 [](const py::object& freq, int64_t first, const py::object& test_freq, int64_t test_first) {
                     auto frequency = [](const py::object& f) {
                         return f.is_none() ? ProgressWriter::kNever : f.cast<int64_t>();
                     };
                     return std::make_shared<PyProgressWriter>(frequency(freq), first, frequency(test_freq),
                                                               test_first);
                 }),
             arg("freq") = py::none(), arg("first") = 0, arg("test_freq") = py::none(), arg("test_first") = 0)
        .def("_keep_python_object",
             [](ProgressWriter& w, py::object self) {
                 if (auto* p = dynamic_cast<PyProgressWriter*>(&w)) p->keep(std::move(self));
             })
        // The writer's own schedule, fed running sums (cntk.logging's update / epoch_summary use these).
        .def("_update_training",
             [](ProgressWriter& w, int64_t samples, double loss, std::optional<double> metric) {
                 StdoutSync sync;
                 w.update_training(samples, loss, metric);
             })
        .def("_write_training_summary",
             [](ProgressWriter& w, double loss, std::optional<double> metric) {
                 StdoutSync sync;
                 w.write_training_summary(loss, metric);
             })
        .def("_update_test",
             [](ProgressWriter& w, int64_t samples, double metric) {
                 StdoutSync sync;
                 w.update_test(samples, metric);
             })
        .def("_write_test_summary",
             [](ProgressWriter& w, double metric) {
                 StdoutSync sync;
                 w.write_test_summary(metric);
             })
        .def_property_readonly("total_training_updates", &ProgressWriter::total_training_updates)
        .def_property_readonly("total_test_updates", &ProgressWriter::total_test_updates);
    py::class_<ProgressPrinter, ProgressWriter, std::shared_ptr<ProgressPrinter>>(lg, "ProgressPrinter")
        .def(py::init([](const py::object& freq, int64_t first, const std::string& tag,
                         const py::object& log_to_file, const py::object& rank, bool gen_heartbeat,
                         const py::object& num_epochs, const py::object& test_freq, int64_t test_first,
                         bool metric_is_pct, const py::object& distributed_freq, int64_t distributed_first) {
                 StdoutSync sync;
                 ProgressPrinterOptions o;
                 if (!freq.is_none()) o.freq = freq.cast<int64_t>();
                 o.first = first;
                 o.tag = tag;
                 if (!log_to_file.is_none()) o.log_to_file = log_to_file.cast<std::string>();
                 if (!rank.is_none()) o.rank = rank.cast<int>();
                 o.gen_heartbeat = gen_heartbeat;
                 if (!num_epochs.is_none()) o.num_epochs = num_epochs.cast<int64_t>();
                 if (!test_freq.is_none()) o.test_freq = test_freq.cast<int64_t>();
                 o.test_first = test_first;
                 o.metric_is_pct = metric_is_pct;
                 if (!distributed_freq.is_none()) o.distributed_freq = distributed_freq.cast<int64_t>();
                 o.distributed_first = distributed_first;
                 return std::make_shared<ProgressPrinter>(o);
             }),
             arg("freq") = py::none(), arg("first") = 0, arg("tag") = "", arg("log_to_file") = py::none(),
             arg("rank") = py::none(), arg("gen_heartbeat") = false, arg("num_epochs") = py::none(),
             arg("test_freq") = py::none(), arg("test_first") = 0, arg("metric_is_pct") = true,
             arg("distributed_freq") = py::none(), arg("distributed_first") = 0)
        .def(
            "log",
            [](ProgressPrinter& p, const std::string& msg) {
                StdoutSync s;
                p.log(msg);
            },
            arg("message"))
        .def(
            "end_progress_print",
            [](ProgressPrinter& p, const std::string& msg) {
                StdoutSync s;
                p.end_progress_print(msg);
            },
            arg("msg") = "");
    py::class_<TensorBoardProgressWriter, ProgressWriter, std::shared_ptr<TensorBoardProgressWriter>>(
        lg, "TensorBoardProgressWriter")
        .def(py::init([](const py::object& freq, const std::string& log_dir, const py::object& rank,
                         const py::object& model) {
                 return std::make_shared<TensorBoardProgressWriter>(
                     freq.is_none() ? std::nullopt : std::optional<int64_t>(freq.cast<int64_t>()), log_dir,
                     rank.is_none() ? std::nullopt : std::optional<int>(rank.cast<int>()),
                     model.is_none() ? nullptr : model.cast<FunctionPtr>());
             }),
             arg("freq") = py::none(), arg("log_dir") = ".", arg("rank") = py::none(),
             arg("model") = py::none())
        .def("write_value", &TensorBoardProgressWriter::write_value, arg("name"), arg("value"), arg("step"))
        .def("flush", &TensorBoardProgressWriter::flush)
        .def("close", &TensorBoardProgressWriter::close)
        .def_property_readonly("file_path", &TensorBoardProgressWriter::file_path);
    lg.def(
        "log_number_of_parameters",
        [](const FunctionPtr& model, int /*trace_level*/) {
            StdoutSync s;
            log_number_of_parameters(model, true);
        },
        arg("model"), arg("trace_level") = 0);

    // ---- train ----
    py::module_ tr = m.def_submodule("train", "cntk.train");
    py::class_<Trainer, std::shared_ptr<Trainer>>(tr, "Trainer")
        .def(py::init([](const py::object& model_arg, const py::object& criterion, const py::object& learners,
                         const py::object& writers, const py::object& mixed_precision,
                         const py::object& cuda_graph) {
                 // A Function, or (as a Function's output) a Variable.
                 const FunctionPtr model =
                     model_arg.is_none() ? FunctionPtr() : as_function(to_variable(model_arg));
                 FunctionPtr loss, metric;
                 if (py::isinstance<py::tuple>(criterion) || py::isinstance<py::list>(criterion)) {
                     auto t = criterion.cast<py::sequence>();
                     loss = as_function(to_variable(t[0]));
                     if (t.size() > 1 && !t[1].is_none()) metric = as_function(to_variable(t[1]));
                 } else if (py::isinstance<Function>(criterion) &&
                            criterion.cast<FunctionPtr>()->outputs().size() > 1) {
                     // CNTK: a Function whose outputs are (loss, metric), e.g. combine([loss, metric]).
                     const std::vector<Variable> outs = criterion.cast<FunctionPtr>()->outputs();
                     CTK_CHECK(outs.size() == 2, ValueError, "Trainer: the criterion Function has ",
                               outs.size(), " outputs; it must have 1 (loss) or 2 (loss, metric)");
                     loss = as_function(outs[0]);
                     metric = as_function(outs[1]);
                 } else {
                     loss = as_function(to_variable(criterion));
                 }
                 std::vector<LearnerPtr> ls = py::isinstance<Learner>(learners)
                                                  ? std::vector<LearnerPtr>{learners.cast<LearnerPtr>()}
                                                  : learners.cast<std::vector<LearnerPtr>>();
                 // ctk's addition: 'bf16' or 'f16' (with dynamic loss scaling) compute, f32 master weights.
                 std::optional<MixedPrecision> mp;  // None: CTK_MIXED_PRECISION
                 if (!mixed_precision.is_none())
                     mp = MixedPrecision::parse(py::str(mixed_precision), "Trainer: mixed_precision");
                 StdoutSync s;
                 auto trainer = std::make_shared<Trainer>(model, loss, metric, ls, writers_arg(writers), mp);
                 // ctk's addition: CUDA Graph replay of the step on a GPU (None: CTK_CUDA_GRAPH).
                 if (!cuda_graph.is_none()) trainer->set_cuda_graph(cuda_graph.cast<bool>());
                 return trainer;
             }),
             arg("model"), arg("criterion"), arg("parameter_learners"), arg("progress_writers") = py::none(),
             arg("mixed_precision") = py::none(), arg("cuda_graph") = py::none())
        .def_property("cuda_graph", &Trainer::cuda_graph, &Trainer::set_cuda_graph)
        .def_property_readonly("cuda_graph_status", &Trainer::cuda_graph_status)
        .def_property_readonly("cuda_graph_replays", &Trainer::cuda_graph_replays)
        .def_property_readonly("loss_scale", &Trainer::loss_scale)
        .def_property_readonly("skipped_steps", &Trainer::skipped_steps)
        .def(
            "train_minibatch",
            [](Trainer& t, const py::object& arguments, const py::object& outputs, const py::object& device,
               const py::object& is_sweep_end) -> py::object {
                bool sweep_end = false;
                MinibatchArguments args = minibatch_arguments(arguments, t.loss_function(), &sweep_end);
                if (!is_sweep_end.is_none()) sweep_end = is_sweep_end.cast<bool>();
                // CNTK: with outputs, (updated, {variable: value}) with the values before the update.
                const std::vector<Variable> wanted =
                    outputs.is_none() ? std::vector<Variable>{} : to_variables(outputs);
                ValueMap fetched;
                for (const Variable& v : wanted) fetched.emplace(v, Value());
                const Device dev = device_from(device);
                StdoutSync s;
                bool updated = false;
                {
                    py::gil_scoped_release nogil;
                    updated = t.train_minibatch(args, fetched, sweep_end, dev);
                }
                if (outputs.is_none()) return py::bool_(updated);
                py::dict out;
                for (const Variable& v : wanted)
                    if (fetched.at(v).defined()) out[py::cast(v)] = numpy_from_value(v, fetched.at(v));
                return py::make_tuple(updated, out);
            },
            arg("arguments"), arg("outputs") = py::none(), arg("device") = py::none(),
            arg("is_sweep_end") = py::none())
        .def(
            "test_minibatch",
            [](Trainer& t, const py::object& arguments, const py::object& device) {
                FunctionPtr f = t.evaluation_function() ? t.evaluation_function() : t.loss_function();
                MinibatchArguments args = minibatch_arguments(arguments, f, nullptr);
                const Device dev = device_from(device);
                StdoutSync s;
                py::gil_scoped_release nogil;
                return t.test_minibatch(args, dev);
            },
            arg("arguments"), arg("device") = py::none())
        .def("summarize_training_progress",
             [](Trainer& t) {
                 StdoutSync s;
                 t.summarize_training_progress();
             })
        .def("summarize_test_progress",
             [](Trainer& t) {
                 StdoutSync s;
                 t.summarize_test_progress();
             })
        .def_property_readonly("previous_minibatch_loss_average", &Trainer::previous_minibatch_loss_average)
        .def_property_readonly("previous_minibatch_evaluation_average",
                               &Trainer::previous_minibatch_evaluation_average)
        .def_property_readonly("previous_minibatch_sample_count", &Trainer::previous_minibatch_sample_count)
        .def_property_readonly("total_number_of_samples_seen", &Trainer::total_number_of_samples_seen)
        .def_property_readonly("model", &Trainer::model)
        .def_property_readonly("loss_function", &Trainer::loss_function)
        .def_property_readonly("evaluation_function", &Trainer::evaluation_function)
        .def_property_readonly("parameter_learners", &Trainer::parameter_learners)
        .def(
            "save_checkpoint",
            [](const Trainer& t, const std::string& filename) { t.save_checkpoint(filename); },
            arg("filename"))
        .def(
            "restore_from_checkpoint",
            [](Trainer& t, const std::string& filename) { t.restore_from_checkpoint(filename); },
            arg("filename"));
    py::class_<Evaluator, std::shared_ptr<Evaluator>>(tr, "Evaluator")
        .def(py::init([](const py::object& eval_function, const py::object& writers) {
                 return std::make_shared<Evaluator>(as_function(to_variable(eval_function)),
                                                    writers_arg(writers));
             }),
             arg("eval_function"), arg("progress_writers") = py::none())
        .def(
            "test_minibatch",
            [](Evaluator& e, const py::object& arguments, const py::object& device) {
                MinibatchArguments args = minibatch_arguments(arguments, e.evaluation_function(), nullptr);
                const Device dev = device_from(device);
                StdoutSync s;
                py::gil_scoped_release nogil;
                return e.test_minibatch(args, dev);
            },
            arg("arguments"), arg("device") = py::none())
        .def("summarize_test_progress", [](Evaluator& e) {
            StdoutSync s;
            e.summarize_test_progress();
        });

    py::enum_<DataUnit>(tr, "DataUnit")
        .value("sample", DataUnit::sample)
        .value("minibatch", DataUnit::minibatch)
        .value("sweep", DataUnit::sweep);
    py::class_<CheckpointConfig>(tr, "CheckpointConfig")
        .def(py::init([](const std::string& filename, const py::object& frequency, bool restore,
                         bool preserve_all) {
                 return CheckpointConfig{filename, frequency_arg(frequency), restore, preserve_all};
             }),
             arg("filename"), arg("frequency") = py::none(), arg("restore") = true,
             arg("preserve_all") = false);
    py::class_<CrossValidationConfig>(tr, "CrossValidationConfig")
        .def(py::init([](const py::object& minibatch_source, const py::object& frequency,
                         int64_t minibatch_size, const py::object& callback, const py::object& max_samples,
                         const py::object& model_inputs_to_streams, const py::object& source,
                         const py::object& mb_size) {
                 CrossValidationConfig c;
                 c.source = source_arg(minibatch_source, source);
                 c.frequency = frequency_arg(frequency);
                 c.minibatch_size = mb_size.is_none() ? minibatch_size : mb_size.cast<int64_t>();
                 if (!max_samples.is_none()) c.max_samples = max_samples.cast<int64_t>();
                 c.model_inputs_to_streams = stream_map(model_inputs_to_streams);
                 if (!callback.is_none()) {
                     auto fn = std::shared_ptr<py::object>(new py::object(callback), [](py::object* p) {
                         if (!Py_IsInitialized()) return;
                         py::gil_scoped_acquire gil;
                         delete p;
                     });
                     // CNTK's on_cross_validation_end arguments.
                     c.callback = [fn](int64_t index, double average, int64_t samples, int64_t minibatches) {
                         py::gil_scoped_acquire gil;
                         py::object r = (*fn)(index, average, samples, minibatches);
                         return r.is_none() || r.cast<bool>();
                     };
                 }
                 return c;
             }),
             arg("minibatch_source") = py::none(), arg("frequency") = py::none(), arg("minibatch_size") = 32,
             arg("callback") = py::none(), arg("max_samples") = py::none(),
             arg("model_inputs_to_streams") = py::none(), arg("source") = py::none(),
             arg("mb_size") = py::none());
    py::class_<TestConfig>(tr, "TestConfig")
        .def(py::init([](const py::object& minibatch_source, int64_t minibatch_size,
                         const py::object& model_inputs_to_streams, const py::object& source,
                         const py::object& mb_size) {
                 TestConfig c;
                 c.source = source_arg(minibatch_source, source);
                 c.minibatch_size = mb_size.is_none() ? minibatch_size : mb_size.cast<int64_t>();
                 c.model_inputs_to_streams = stream_map(model_inputs_to_streams);
                 return c;
             }),
             arg("minibatch_source") = py::none(), arg("minibatch_size") = 32,
             arg("model_inputs_to_streams") = py::none(), arg("source") = py::none(),
             arg("mb_size") = py::none());
    py::class_<TrainingSession, std::shared_ptr<TrainingSession>>(tr, "TrainingSession")
        .def(
            "train",
            [](TrainingSession& s, const py::object& device) {
                const Device dev = device_from(device);
                StdoutSync sync;
                py::gil_scoped_release nogil;
                s.train(dev);
            },
            arg("device") = py::none());
    tr.def(
        "training_session",
        [](const std::shared_ptr<Trainer>& trainer, const std::shared_ptr<MinibatchSource>& mb_source,
           const py::object& mb_size, const py::object& model_inputs_to_streams,
           const py::object& progress_frequency, const py::object& max_samples,
           const py::object& checkpoint_config, const py::object& cv_config, const py::object& test_config) {
            std::optional<CheckpointConfig> ck;
            std::optional<CrossValidationConfig> cv;
            std::optional<TestConfig> test;
            if (!checkpoint_config.is_none()) ck = checkpoint_config.cast<CheckpointConfig>();
            if (!cv_config.is_none()) cv = cv_config.cast<CrossValidationConfig>();
            if (!test_config.is_none()) test = test_config.cast<TestConfig>();
            // mb_size: a number or a minibatch_size_schedule.
            TrainingParameterSchedule sizes = py::isinstance<TrainingParameterSchedule>(mb_size)
                                                  ? mb_size.cast<TrainingParameterSchedule>()
                                                  : TrainingParameterSchedule(mb_size.cast<double>());
            return std::make_shared<TrainingSession>(
                trainer, mb_source, sizes, stream_map(model_inputs_to_streams),
                frequency_arg(progress_frequency),
                max_samples.is_none() ? kInfinitelyRepeat : max_samples.cast<int64_t>(), ck, cv, test);
        },
        arg("trainer"), arg("mb_source"), arg("mb_size"), arg("model_inputs_to_streams"),
        arg("progress_frequency") = py::none(), arg("max_samples") = py::none(),
        arg("checkpoint_config") = py::none(), arg("cv_config") = py::none(),
        arg("test_config") = py::none());
}

}  // namespace ctk::python
