// Bindings of cntk.train / cntk.logging (Trainer, Evaluator, training_session and its configs,
// ProgressPrinter, log_number_of_parameters). Training runs with the GIL released; Python's and C's
// stdout are flushed around everything that prints, so the log lines keep their order.
#include <cstdio>

#include "convert.h"

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
    void keep(py::object self) { self_ = hold(self); }

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

void bind_train(py::module_& m) {
    using py::arg;

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
                     auto fn = hold(callback);
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
