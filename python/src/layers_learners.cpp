// Bindings of cntk.layers (Dense, Convolution*, pooling, Dropout, normalisation, Embedding, Sequential,
// default_options) and cntk.learners (schedules and every learner, with CNTK's Python argument names).
// Python callables become ActivationFns that take the GIL to call back into Python.
#include <memory>

#include "convert.h"

namespace ctk::python {

namespace {

using layers::ActivationFn;

// CNTK's default_override_or: an argument left at this sentinel takes default_options' value.
// (Leaked on purpose: a static py::object would be released after the interpreter is gone.)
py::object& unset() {
    static auto* sentinel = new py::object();
    return *sentinel;
}
bool is_unset(const py::handle& h) {
    return h.is(unset());
}

ActivationFn activation_fn(const py::object& f) {
    if (f.is_none()) return ActivationFn();  // CNTK: activation=None is the identity
    auto fn = hold(f);
    return [fn](const Variable& x) -> FunctionPtr {
        py::gil_scoped_acquire gil;
        py::object r = (*fn)(x);
        if (py::isinstance<Function>(r)) return r.cast<FunctionPtr>();
        return as_function(to_variable(r));
    };
}

std::optional<ActivationFn> opt_activation(const py::object& f) {
    if (is_unset(f)) return std::nullopt;
    return activation_fn(f);
}

std::optional<Initializer> opt_init(const py::object& init) {
    if (is_unset(init)) return std::nullopt;
    if (py::isinstance<Initializer>(init)) return init.cast<Initializer>();
    // CNTK: a number fills the parameter, an array (or nested list) is its initial value.
    if (py::isinstance<py::float_>(init) || py::isinstance<py::int_>(init))
        return constant_initializer(init.cast<double>());
    return initial_values(tensor_from_numpy(init, DataType::f64));
}

template <typename T>
std::optional<T> opt(const py::object& v) {
    if (is_unset(v) || v.is_none()) return std::nullopt;
    return v.cast<T>();
}

// CNTK's Sequential: Functions as they are, Python callables as activations, nested lists in order.
std::vector<FunctionPtr> layer_list(const py::handle& layers) {
    std::vector<FunctionPtr> out;
    if (py::isinstance<Function>(layers)) return {layers.cast<FunctionPtr>()};
    if (py::isinstance<py::list>(layers) || py::isinstance<py::tuple>(layers)) {
        for (const py::handle& h : layers) {
            auto inner = layer_list(h);
            out.insert(out.end(), inner.begin(), inner.end());
        }
        return out;
    }
    CTK_CHECK(PyCallable_Check(layers.ptr()), TypeError, "Sequential: expected Functions or callables");
    return {layers::Activation(activation_fn(py::reinterpret_borrow<py::object>(layers)))};
}

// The context manager behind cntk.layers.default_options(...).
struct DefaultOptions {
    layers::LayerDefaults defaults;
    std::unique_ptr<layers::default_options> scope;
};

// A learning rate or momentum as CNTK's learners take it: a schedule, a number or a list.
TrainingParameterSchedule schedule_arg(const py::object& v, std::optional<int64_t> minibatch_size,
                                       std::optional<int64_t> epoch_size) {
    if (py::isinstance<TrainingParameterSchedule>(v)) return v.cast<TrainingParameterSchedule>();
    if (py::isinstance<py::list>(v)) {
        return learning_parameter_schedule(v.cast<std::vector<double>>(), minibatch_size.value_or(0),
                                           epoch_size.value_or(0));
    }
    return learning_parameter_schedule(v.cast<double>(), minibatch_size.value_or(0), epoch_size.value_or(0));
}

// A schedule from CNTK's forms: a number, a list of numbers, or a list of (count, value) pairs, where
// a lone number in a pair list counts once (CNTK's _prepare_training_parameter_list). A schedule passes
// through; a number with an epoch size warns as CNTK did (the epoch size means nothing for it).
template <typename ScalarFn, typename ListFn, typename PairsFn>
TrainingParameterSchedule make_schedule(const py::object& s, const py::object& epoch, ScalarFn scalar,
                                        ListFn list, PairsFn pairs) {
    if (py::isinstance<TrainingParameterSchedule>(s)) return s.cast<TrainingParameterSchedule>();
    if (py::isinstance<py::list>(s) || py::isinstance<py::tuple>(s)) {
        py::sequence seq = s;
        bool any_pair = false;
        for (const py::handle item : seq) any_pair = any_pair || py::isinstance<py::sequence>(item);
        if (!any_pair) return list(s.cast<std::vector<double>>());
        std::vector<std::pair<int64_t, double>> counted;
        for (const py::handle item : seq) {
            if (py::isinstance<py::sequence>(item)) {
                counted.push_back(item.cast<std::pair<int64_t, double>>());
            } else {
                counted.emplace_back(1, item.cast<double>());
            }
        }
        return pairs(std::move(counted));
    }
    if (!py::isinstance<py::float_>(s) && !py::isinstance<py::int_>(s) && !py::hasattr(s, "__float__"))
        CTK_THROW(ValueError, "schedule must be either a float or a list, not ",
                  std::string(py::str(py::type::of(s).attr("__name__"))));
    if (!epoch.is_none())
        PyErr_WarnEx(PyExc_RuntimeWarning, "When providing the schedule as a number, epoch_size is ignored",
                     1);
    return scalar(s.cast<double>());
}

LearnerOptions learner_options(const py::kwargs& kw) {
    LearnerOptions o;
    for (auto item : kw) {
        const std::string key = py::str(item.first);
        const py::handle v = item.second;
        if (v.is_none()) continue;
        if (key == "l1_regularization_weight")
            o.l1_regularization_weight = v.cast<double>();
        else if (key == "l2_regularization_weight")
            o.l2_regularization_weight = v.cast<double>();
        else if (key == "gaussian_noise_injection_std_dev")
            o.gaussian_noise_injection_std_dev = py::isinstance<TrainingParameterSchedule>(v)
                                                     ? v.cast<TrainingParameterSchedule>()
                                                     : TrainingParameterSchedule(v.cast<double>());
        else if (key == "gradient_clipping_threshold_per_sample")
            o.gradient_clipping_threshold_per_sample = v.cast<double>();
        else if (key == "gradient_clipping_with_truncation")
            o.gradient_clipping_with_truncation = v.cast<bool>();
        else if (key == "use_mean_gradient")
            o.use_mean_gradient = v.cast<bool>();
        else if (key != "minibatch_size" && key != "epoch_size")
            CTK_THROW(TypeError, "learner got an unexpected keyword argument '", key, "'");
    }
    return o;
}

std::optional<int64_t> kw_int(const py::kwargs& kw, const char* key) {
    if (!kw.contains(key) || kw[key].is_none()) return std::nullopt;
    return kw[key].cast<int64_t>();
}

TrainingParameterSchedule lr_arg(const py::object& lr, const py::kwargs& kw) {
    return schedule_arg(lr, kw_int(kw, "minibatch_size"), kw_int(kw, "epoch_size"));
}

TrainingParameterSchedule momentum_arg(const py::object& m, const py::kwargs& kw) {
    if (py::isinstance<TrainingParameterSchedule>(m)) return m.cast<TrainingParameterSchedule>();
    const int64_t mb = kw_int(kw, "minibatch_size").value_or(0), epoch = kw_int(kw, "epoch_size").value_or(0);
    if (py::isinstance<py::list>(m)) return momentum_schedule(m.cast<std::vector<double>>(), mb, epoch);
    return momentum_schedule(m.cast<double>(), mb, epoch);
}

// CNTK's UserLearner: a learner whose update is a Python method. The Python subclass implements
// update(gradient_values, training_sample_count, sweep_end), writes its parameters itself and returns
// False to say learning has stopped. The Trainer calls it without the GIL, so it takes it here. The
// Python object is kept alive by the C++ one (a cycle, as CNTK's SWIG director had): a learner passed
// inline to a Trainer must not lose its Python half.
class UserLearner : public Learner {
public:
    UserLearner(std::vector<Variable> parameters, TrainingParameterSchedule lr, bool as_numpy)
        : Learner(std::move(parameters), std::move(lr), {}, "UserLearner"), as_numpy_(as_numpy) {}
    void keep_python_object(py::object self) { self_ = hold(self); }

protected:
    // The protocol's steps (ctk/learners/learner.h): a step for every minibatch with samples (the Python
    // method decides the rest; CNTK's UserLearner reported no schedules), nothing checked or prepared
    // here, and the Python method as the update.
    bool takes_step(int64_t training_sample_count) override {
        CTK_CHECK(training_sample_count >= 0, ValueError,
                  "UserLearner: update: training_sample_count must be ", ">= 0, got ", training_sample_count);
        return training_sample_count > 0;
    }
    void check_gradients(const GradientMap&) const override {}
    void prepare_step(int64_t) override {}
    bool apply_step(const GradientMap& gradients, int64_t training_sample_count) override {
        py::gil_scoped_acquire gil;
        py::function f = py::get_override(static_cast<const UserLearner*>(this), "update");
        CTK_CHECK(f, NotImplementedError, "UserLearner: the subclass must define update(gradient_values, ",
                  "training_sample_count, sweep_end)");
        py::dict grads;
        for (const auto& [p, g] : gradients)
            grads[py::cast(p)] = as_numpy_ ? py::object(numpy_from_tensor(g)) : py::cast(g);
        py::object r = f(grads, training_sample_count, step_ends_sweep());
        return r.is_none() ? true : r.cast<bool>();
    }
    void update_parameter(const Variable&, Tensor&, const Tensor&, std::vector<Tensor>&, int64_t) override {
    }  // not reached: apply_step is the Python method

private:
    bool as_numpy_;
    std::shared_ptr<py::object> self_;
};

}  // namespace

namespace {
// The options CNTK's Convolution and ConvolutionTranspose layers share, from their Python arguments.
layers::ConvolutionOptions conv_options(const py::object& activation, const py::object& init,
                                        const py::object& pad, const py::object& strides,
                                        const py::object& bias, const py::object& init_bias,
                                        const py::object& dilation, const std::string& name) {
    layers::ConvolutionOptions o;
    o.activation = opt_activation(activation);
    o.init = opt_init(init);
    o.pad = opt<bool>(pad);
    o.strides = dims_arg(strides);
    o.bias = opt<bool>(bias);
    // CNTK took one value or one per filter.
    if (!init_bias.is_none() && !is_unset(init_bias) &&
        (py::isinstance<py::list>(init_bias) || py::isinstance<py::tuple>(init_bias) ||
         py::hasattr(init_bias, "shape")))
        o.init_bias_values =
            tensor_from_numpy(py::module_::import("numpy").attr("asarray")(init_bias), DataType::f32);
    else
        o.init_bias = opt<double>(init_bias);
    o.dilation = dims_arg(dilation);
    o.name = name;
    return o;
}
}  // namespace

void bind_layers_learners(py::module_& m) {
    using py::arg;
    unset() = py::module_::import("builtins").attr("object")();

    // ---- layers ----
    py::module_ l = m.def_submodule("layers", "cntk.layers");
    l.attr("_UNSET") = unset();
    l.def("identity", &layers::identity, arg("keep"));
    py::class_<DefaultOptions>(l, "default_options")
        .def(py::init([](py::kwargs kw) {
            DefaultOptions d;
            for (auto item : kw) {
                const std::string key = py::str(item.first);
                py::object v = py::reinterpret_borrow<py::object>(item.second);
                if (key == "activation")
                    d.defaults.activation = activation_fn(v);
                else if (key == "init")
                    d.defaults.init = opt_init(v);
                else if (key == "pad")
                    d.defaults.pad = v.cast<bool>();
                else if (key == "bias")
                    d.defaults.bias = v.cast<bool>();
                else if (key == "init_bias")
                    d.defaults.init_bias = v.cast<double>();
                else if (key == "enable_self_stabilization")
                    d.defaults.enable_self_stabilization = v.cast<bool>();
                else if (key == "use_peepholes")
                    d.defaults.use_peepholes = v.cast<bool>();
                else if (key == "go_backwards")
                    d.defaults.go_backwards = v.cast<bool>();
                else if (key == "initial_state")
                    d.defaults.initial_state = py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)
                                                   ? constant(v.cast<double>())
                                                   : to_variable(v);
                else if (key == "map_rank")
                    d.defaults.map_rank = v.is_none() ? std::optional<int>() : v.cast<int>();
                else if (key == "normalization_time_constant")
                    d.defaults.normalization_time_constant = v.cast<double>();
                else if (key == "epsilon")
                    d.defaults.epsilon = v.cast<double>();
                else if (key == "use_cntk_engine")
                    v.cast<bool>();  // CNTK's choice between cuDNN's and its own batch norm: same math
                else if (key == "disable_regularization")
                    d.defaults.disable_regularization = v.cast<bool>();
                else if (key == "dtype")  // ctk's layers make float32 parameters, CNTK's default
                    CTK_CHECK(v.is_none() || dtype_from_python(v) == DataType::f32, NotImplementedError,
                              "default_options: layers of dtype ", std::string(py::str(v)),
                              " are not supported by ctk yet; for float16 compute keep float32 layers and "
                              "give the Trainer mixed_precision='f16' (or set CTK_MIXED_PRECISION=f16)");
                else
                    CTK_THROW(NotImplementedError, "default_options: '", key,
                              "' is not supported by ctk yet");
            }
            return d;
        }))
        .def(
            "__enter__",
            [](DefaultOptions& d) {
                d.scope = std::make_unique<layers::default_options>(d.defaults);
                return &d;
            },
            py::return_value_policy::reference)
        .def("__exit__", [](DefaultOptions& d, const py::args&) {
            d.scope.reset();
            return false;
        });
    const py::object U = unset();
    l.def(
        "Dense",
        [](const py::object& shape, const py::object& activation, const py::object& init,
           const py::object& input_rank, const py::object& map_rank, const py::object& bias,
           const py::object& init_bias, const std::string& name) {
            return layers::Dense(dims_arg(shape), opt_activation(activation), opt_init(init),
                                 opt<int>(input_rank), opt<bool>(bias), opt<double>(init_bias),
                                 opt<int>(map_rank), name);
        },
        arg("shape"), arg("activation") = U, arg("init") = U, arg("input_rank") = py::none(),
        arg("map_rank") = py::none(), arg("bias") = U, arg("init_bias") = U, arg("name") = "");
    // CNTK's num_filters: a count, or None / () for no filter axis in the output (0 here).
    auto filter_count = [](const py::object& n) -> int64_t {
        if (n.is_none() || (py::isinstance<py::tuple>(n) && py::len(n) == 0)) return 0;
        return n.cast<int64_t>();
    };
    auto conv = [U, &l, filter_count](
                    const char* pyname,
                    FunctionPtr (*make)(const Dims&, int64_t, const layers::ConvolutionOptions&)) {
        l.def(
            pyname,
            [make, filter_count](const py::object& filter_shape, const py::object& num_filters,
                                 const py::object& activation, const py::object& init, const py::object& pad,
                                 const py::object& strides, const py::object& bias,
                                 const py::object& init_bias, int reduction_rank, const py::object& dilation,
                                 int64_t groups, const std::string& name) {
                layers::ConvolutionOptions o =
                    conv_options(activation, init, pad, strides, bias, init_bias, dilation, name);
                o.groups = groups;
                o.reduction_rank = reduction_rank;
                return make(dims_arg(filter_shape), filter_count(num_filters), o);
            },
            arg("filter_shape"), arg("num_filters") = py::none(), arg("activation") = U, arg("init") = U,
            arg("pad") = U, arg("strides") = 1, arg("bias") = U, arg("init_bias") = U,
            arg("reduction_rank") = 1, arg("dilation") = 1, arg("groups") = 1, arg("name") = "");
    };
    conv("Convolution1D", &layers::Convolution1D);
    conv("Convolution2D", &layers::Convolution2D);
    conv("Convolution3D", &layers::Convolution3D);
    // Convolution and SequentialConvolution in CNTK 2.7's argument order (Convolution's third is
    // `sequential`: True makes it a SequentialConvolution).
    for (const bool sequential_layer : {false, true}) {
        l.def(
            sequential_layer ? "SequentialConvolution" : "Convolution",
            [sequential_layer, filter_count](
                const py::object& filter_shape, const py::object& num_filters, bool sequential,
                const py::object& activation, const py::object& init, const py::object& pad,
                const py::object& strides, const py::object& sharing, const py::object& bias,
                const py::object& init_bias, int reduction_rank, bool transpose_weight,
                const py::object& dilation, int64_t groups, int64_t /*max_temp_mem_size_in_samples*/,
                const std::string& /*op_name*/, const std::string& name) {
                CTK_CHECK(sharing.is_none() || is_unset(sharing) || sharing.cast<bool>(), NotImplementedError,
                          "Convolution: sharing=False is not supported");
                CTK_CHECK(!transpose_weight, NotImplementedError,
                          "Convolution: transpose_weight=True is not "
                          "supported");
                layers::ConvolutionOptions o =
                    conv_options(activation, init, pad, strides, bias, init_bias, dilation, name);
                o.groups = groups;
                o.reduction_rank = reduction_rank;
                const Dims filter = dims_arg(filter_shape);
                if (sequential_layer || sequential)
                    return layers::SequentialConvolution(filter, filter_count(num_filters), o);
                return layers::Convolution(filter, filter_count(num_filters), o);
            },
            arg("filter_shape"), arg("num_filters") = py::none(), arg("sequential") = false,
            arg("activation") = U, arg("init") = U, arg("pad") = U, arg("strides") = 1, arg("sharing") = U,
            arg("bias") = U, arg("init_bias") = U, arg("reduction_rank") = 1, arg("transpose_weight") = false,
            arg("dilation") = 1, arg("groups") = 1, arg("max_temp_mem_size_in_samples") = 0,
            arg("op_name") = sequential_layer ? "SequentialConvolution" : "Convolution", arg("name") = "");
    }
    for (int rank : {0, 1, 2, 3}) {
        static const char* const kNames[] = {"ConvolutionTranspose", "ConvolutionTranspose1D",
                                             "ConvolutionTranspose2D", "ConvolutionTranspose3D"};
        const char* pyname = kNames[rank];
        l.def(
            pyname,
            [rank, pyname](const py::object& filter_shape, int64_t num_filters, const py::object& activation,
                           const py::object& init, const py::object& pad, const py::object& strides,
                           const py::object& sharing, const py::object& bias, const py::object& init_bias,
                           const py::object& output_shape, int64_t /*max_temp_mem_size_in_samples*/,
                           int reduction_rank, const py::object& dilation, const std::string& name) {
                CTK_CHECK(sharing.is_none() || is_unset(sharing) || sharing.cast<bool>(), NotImplementedError,
                          pyname, ": sharing=False is not supported");
                const Dims filter = dims_arg(filter_shape);
                CTK_CHECK(rank == 0 || static_cast<int>(filter.size()) == rank, ValueError, pyname,
                          ": filter_shape must have ", rank, " dims, got ", dims_to_string(filter));
                layers::ConvolutionOptions o =
                    conv_options(activation, init, pad, strides, bias, init_bias, dilation, name);
                o.reduction_rank = reduction_rank;
                return layers::ConvolutionTranspose(filter, num_filters, o,
                                                    output_shape.is_none() ? Dims{} : dims_arg(output_shape));
            },
            arg("filter_shape"), arg("num_filters"), arg("activation") = U, arg("init") = U, arg("pad") = U,
            arg("strides") = 1, arg("sharing") = U, arg("bias") = U, arg("init_bias") = U,
            arg("output_shape") = py::none(), arg("max_temp_mem_size_in_samples") = 0,
            arg("reduction_rank") = 1, arg("dilation") = 1, arg("name") = "");
    }
    l.def(
        "MaxUnpooling",
        [](const py::object& filter_shape, const py::object& strides, const py::object& pad,
           const std::string& name) {
            return layers::MaxUnpooling(dims_arg(filter_shape), dims_arg(strides),
                                        is_unset(pad) ? false : pad.cast<bool>(), name);
        },
        arg("filter_shape"), arg("strides") = 1, arg("pad") = U, arg("name") = "");
    for (const char* pyname : {"MaxPooling", "AveragePooling"}) {
        const bool is_max = std::string(pyname) == "MaxPooling";
        l.def(
            pyname,
            [is_max](const py::object& filter_shape, const py::object& strides, const py::object& pad,
                     const std::string& name) {
                const std::optional<bool> p = opt<bool>(pad);  // unset: default_options' pad, else False
                return is_max ? layers::MaxPooling(dims_arg(filter_shape), dims_arg(strides), p, name)
                              : layers::AveragePooling(dims_arg(filter_shape), dims_arg(strides), p, name);
            },
            arg("filter_shape"), arg("strides") = 1, arg("pad") = U, arg("name") = "");
    }
    l.def("GlobalMaxPooling", &layers::GlobalMaxPooling, arg("name") = "");
    l.def("GlobalAveragePooling", &layers::GlobalAveragePooling, arg("name") = "");
    l.def("Dropout", &layers::Dropout, arg("dropout_rate") = py::none(), arg("keep_prob") = py::none(),
          arg("seed") = kSentinelSeed, arg("name") = "");
    l.def(
        "BatchNormalization",
        [](const py::object& map_rank, double init_scale, const py::object& ntc, double btc,
           const py::object& epsilon, const py::object& /*use_cntk_engine: cuDNN's or CNTK's, same math*/,
           const py::object& disable_regularization, const std::string& name) {
            return layers::BatchNormalization(opt<int>(map_rank), init_scale, opt<double>(ntc), btc,
                                              opt<double>(epsilon), name, opt<bool>(disable_regularization));
        },
        arg("map_rank") = U, arg("init_scale") = 1.0, arg("normalization_time_constant") = U,
        arg("blend_time_constant") = 0.0, arg("epsilon") = U, arg("use_cntk_engine") = U,
        arg("disable_regularization") = U, arg("name") = "");
    l.def(
        "LayerNormalization",
        [](double initial_scale, double initial_bias, const py::object& epsilon, const std::string& name) {
            return layers::LayerNormalization(initial_scale, initial_bias, opt<double>(epsilon), name);
        },
        arg("initial_scale") = 1.0, arg("initial_bias") = 0.0, arg("epsilon") = U, arg("name") = "");
    l.def(
        "Embedding",
        [](const py::object& shape, const py::object& init, const py::object& weights,
           const std::string& name) {
            Tensor w = weights.is_none() ? Tensor() : float_tensor_from_python(weights);
            return layers::Embedding(dims_arg(shape), opt_init(init), w, name);
        },
        arg("shape") = py::none(), arg("init") = U, arg("weights") = py::none(), arg("name") = "");
    l.def(
        "Activation",
        [](const py::object& activation, const std::string& name) {
            return layers::Activation(activation_fn(activation), name);
        },
        arg("activation") = py::none(), arg("name") = "");
    l.def(
        "Stabilizer",
        [](double steepness, const py::object& enable, const std::string& name) {
            return layers::Stabilizer(steepness, opt<bool>(enable), name);
        },
        arg("steepness") = 4.0, arg("enable_self_stabilization") = U, arg("name") = "");
    auto recurrent = [U, &l](const char* pyname,
                             FunctionPtr (*make)(const Dims&, const layers::RecurrentOptions&)) {
        l.def(
            pyname,
            [make](const py::object& shape, const py::object& cell_shape, const py::object& activation,
                   const py::object& use_peepholes, const py::object& init, const py::object& init_bias,
                   const py::object& enable_self_stabilization, const std::string& name) {
                layers::RecurrentOptions o;
                if (!cell_shape.is_none()) o.cell_shape = dims_arg(cell_shape);
                o.activation = opt_activation(activation);
                o.use_peepholes = opt<bool>(use_peepholes);
                o.init = opt_init(init);
                o.init_bias = opt<double>(init_bias);
                o.enable_self_stabilization = opt<bool>(enable_self_stabilization);
                o.name = name;
                return make(dims_arg(shape), o);
            },
            arg("shape"), arg("cell_shape") = py::none(), arg("activation") = U, arg("use_peepholes") = U,
            arg("init") = U, arg("init_bias") = U, arg("enable_self_stabilization") = U, arg("name") = "");
    };
    recurrent("LSTM", &layers::LSTM);
    recurrent("GRU", &layers::GRU);
    recurrent("RNNStep", &layers::RNNStep);
    // The C++ Recurrence and Fold; layers.py turns Python step functions into blocks first.
    auto initial = [](const py::object& v) {
        if (v.is_none()) return Variable();
        if (py::isinstance<py::int_>(v) || py::isinstance<py::float_>(v)) return constant(v.cast<double>());
        return to_variable(v);
    };
    l.def(
        "_recurrence",
        [initial](const FunctionPtr& step, const py::object& go_backwards, const py::object& initial_state,
                  bool full, bool fold, const std::string& name) {
            // None: unset (default_options decides, else false and 0).
            const auto back = opt<bool>(go_backwards);
            return fold ? layers::Fold(step, back, initial(initial_state), full, name)
                        : layers::Recurrence(step, back, initial(initial_state), full, name);
        },
        arg("step_function"), arg("go_backwards"), arg("initial_state"), arg("return_full_state"),
        arg("fold"), arg("name"));
    l.def(
        "_recurrence_from",
        [](const FunctionPtr& step, const py::object& go_backwards, bool full, const std::string& name) {
            return layers::RecurrenceFrom(step, opt<bool>(go_backwards), full, name);
        },
        arg("step_function"), arg("go_backwards"), arg("return_full_state"), arg("name"));
    l.def("Label", &layers::Label, arg("name"));
    l.def(
        "Sequential",
        [](const py::object& layers_, const std::string& name) {
            return layers::Sequential(layer_list(layers_), name);
        },
        arg("layers"), arg("name") = "");
    l.def(
        "ResNetBlock",
        [](const FunctionPtr& f, const std::string& name) { return layers::ResNetBlock(f, name); }, arg("f"),
        arg("name") = "");
    l.def(
        "SequentialClique",
        [](const py::object& fs, const std::string& name) {
            return layers::SequentialClique(layer_list(fs), name);
        },
        arg("functions"), arg("name") = "");

    // ---- learners ----
    py::module_ ln = m.def_submodule("learners", "cntk.learners");
    py::class_<TrainingParameterSchedule>(ln, "TrainingParameterSchedule")
        // CNTK's schedule[n] looks n up in the schedule's own unit: samples, or sweeps for a schedule
        // without an epoch size (momentum_schedule([(999, 0.99), (0, 0.88)])[999] is 0.88).
        .def(
            "__call__", [](const TrainingParameterSchedule& s, int64_t n) { return s.at(n, n); },
            arg("count"))
        .def("__getitem__", [](const TrainingParameterSchedule& s, int64_t n) { return s.at(n, n); })
        .def("at", &TrainingParameterSchedule::at, arg("samples_seen"), arg("sweeps_seen") = 0)
        .def_property_readonly("minibatch_size", &TrainingParameterSchedule::minibatch_size)
        .def_property_readonly("epoch_size", &TrainingParameterSchedule::epoch_size)
        .def("__repr__", &TrainingParameterSchedule::to_string);
    ln.attr("IGNORE") = TrainingParameterSchedule::kIgnoreMinibatchSize;
    ln.def(
        "learning_parameter_schedule",
        [](const py::object& s, const py::object& mb, const py::object& epoch) {
            const int64_t m_ = mb.is_none() ? 0 : mb.cast<int64_t>(),
                          e = epoch.is_none() ? 0 : epoch.cast<int64_t>();
            return make_schedule(
                s, epoch, [&](double v) { return learning_parameter_schedule(v, m_, e); },
                [&](const std::vector<double>& v) { return learning_parameter_schedule(v, m_, e); },
                [&](std::vector<std::pair<int64_t, double>> v) {
                    return learning_parameter_schedule(std::move(v), m_, e);
                });
        },
        arg("schedule"), arg("minibatch_size") = py::none(), arg("epoch_size") = py::none());
    ln.def(
        "learning_parameter_schedule_per_sample",
        [](const py::object& s, const py::object& epoch) {
            const int64_t e = epoch.is_none() ? 0 : epoch.cast<int64_t>();
            return make_schedule(
                s, epoch, [&](double v) { return learning_parameter_schedule_per_sample(v, e); },
                [&](const std::vector<double>& v) { return learning_parameter_schedule_per_sample(v, e); },
                [&](std::vector<std::pair<int64_t, double>> v) {
                    return learning_parameter_schedule(std::move(v), 1, e);
                });
        },
        arg("schedule"), arg("epoch_size") = py::none());
    ln.def(
        "momentum_schedule",
        [](const py::object& s, const py::object& epoch, const py::object& mb) {
            const int64_t m_ = mb.is_none() ? 0 : mb.cast<int64_t>(),
                          e = epoch.is_none() ? 0 : epoch.cast<int64_t>();
            return make_schedule(
                s, epoch, [&](double v) { return momentum_schedule(v, m_, e); },
                [&](const std::vector<double>& v) { return momentum_schedule(v, m_, e); },
                [&](std::vector<std::pair<int64_t, double>> v) {
                    return TrainingParameterSchedule(std::move(v), e, m_);
                });
        },
        // CNTK's order: momentum_schedule([0.99, 0.9], 1000) changes the value every 1000 samples.
        arg("momentum"), arg("epoch_size") = py::none(), arg("minibatch_size") = py::none());
    ln.def(
        "momentum_schedule_per_sample",
        [](const py::object& s, const py::object& epoch) {
            const int64_t e = epoch.is_none() ? 0 : epoch.cast<int64_t>();
            return make_schedule(
                s, epoch, [&](double v) { return momentum_schedule_per_sample(v, e); },
                [&](const std::vector<double>& v) { return momentum_schedule(v, 1, e); },
                [&](std::vector<std::pair<int64_t, double>> v) {
                    return TrainingParameterSchedule(std::move(v), e, 1);
                });
        },
        arg("momentum"), arg("epoch_size") = py::none());
    ln.def(
        "momentum_as_time_constant_schedule",
        [](const py::object& s, const py::object& epoch) {
            const int64_t e = epoch.is_none() ? 0 : epoch.cast<int64_t>();
            // A list of time constants: each becomes its per-sample momentum, as one number does.
            auto per_sample = [](double t) { return momentum_as_time_constant_schedule(t).at(0); };
            return make_schedule(
                s, epoch, [&](double t) { return momentum_as_time_constant_schedule(t, e); },
                [&](std::vector<double> v) {
                    for (double& t : v) t = per_sample(t);
                    return momentum_schedule(v, 1, e);
                },
                [&](std::vector<std::pair<int64_t, double>> v) {
                    for (auto& entry : v) entry.second = per_sample(entry.second);
                    return TrainingParameterSchedule(std::move(v), e, 1);
                });
        },
        arg("momentum"), arg("epoch_size") = py::none());
    ln.def("set_default_unit_gain_value", &set_default_unit_gain_value, arg("value"));
    ln.def("default_unit_gain_value", &default_unit_gain_value);

    // A learner's checkpoint (counters, schedules, per-parameter state): opaque to Python, as CNTK's
    // Dictionary mostly was; restore_from_checkpoint takes it back.
    py::class_<Dictionary>(ln, "LearnerCheckpoint");
    py::class_<Learner, LearnerPtr>(ln, "Learner")
        .def("create_checkpoint", &Learner::checkpoint_state)
        .def("restore_from_checkpoint", &Learner::restore_from_checkpoint, arg("checkpoint"))
        .def_property_readonly("parameters", &Learner::parameters)
        .def("learning_rate", &Learner::learning_rate)
        .def("reset_learning_rate", &Learner::reset_learning_rate, arg("learning_rate"))
        .def_property_readonly("total_number_of_samples_seen", &Learner::total_number_of_samples_seen)
        .def(
            "update",
            [](Learner& l, const py::dict& gradient_values, int64_t training_sample_count,
               bool is_sweep_end) {
                GradientMap g;
                for (auto item : gradient_values) {
                    Variable p = to_variable(item.first);
                    Tensor t = tensor_from_numpy(item.second, p.dtype());
                    // CNTK took a gradient that differs only in axes of 1 (a [[2.]] for a (1,) parameter).
                    auto without_ones = [](const Dims& d) {
                        Dims s;
                        for (int64_t v : d)
                            if (v != 1) s.push_back(v);
                        return s;
                    };
                    if (t.shape().dims() != p.shape() &&
                        without_ones(t.shape().dims()) == without_ones(p.shape()))
                        t = t.reshape(p.shape());
                    g[p] = t;
                }
                py::gil_scoped_release nogil;
                return l.update(g, training_sample_count, is_sweep_end);
            },
            arg("gradient_values"), arg("training_sample_count"), arg("is_sweep_end") = false);
    py::class_<UserLearner, Learner, std::shared_ptr<UserLearner>>(ln, "UserLearner", py::dynamic_attr())
        .def(py::init(
                 [](const std::vector<Variable>& parameters, const py::object& lr_schedule, bool as_numpy) {
                     return std::make_shared<UserLearner>(parameters, lr_arg(lr_schedule, py::kwargs()),
                                                          as_numpy);
                 }),
             arg("parameters"), arg("lr_schedule"), arg("as_numpy") = true)
        .def("_keep_python_object", &UserLearner::keep_python_object);

    ln.def(
        "sgd",
        [](const std::vector<Variable>& params, const py::object& lr, const py::kwargs& kw) {
            return sgd(params, lr_arg(lr, kw), learner_options(kw));
        },
        arg("parameters"), arg("lr"));
    for (const char* name : {"momentum_sgd", "nesterov"}) {
        const bool nest = std::string(name) == "nesterov";
        ln.def(
            name,
            [nest](const std::vector<Variable>& params, const py::object& lr, const py::object& momentum,
                   bool unit_gain, const py::kwargs& kw) {
                auto l = lr_arg(lr, kw);
                auto mm = momentum_arg(momentum, kw);
                return nest ? nesterov(params, l, mm, unit_gain, learner_options(kw))
                            : momentum_sgd(params, l, mm, unit_gain, learner_options(kw));
            },
            arg("parameters"), arg("lr"), arg("momentum"), arg("unit_gain") = default_unit_gain_value());
    }
    ln.def(
        "adagrad",
        [](const std::vector<Variable>& params, const py::object& lr, bool need_ave_multiplier,
           const py::kwargs& kw) {
            return adagrad(params, lr_arg(lr, kw), need_ave_multiplier, learner_options(kw));
        },
        arg("parameters"), arg("lr"), arg("need_ave_multiplier") = true);
    ln.def(
        "fsadagrad",
        [](const std::vector<Variable>& params, const py::object& lr, const py::object& momentum,
           bool unit_gain, const py::object& variance_momentum, const py::kwargs& kw) {
            auto vm = variance_momentum.is_none() ? momentum_schedule_per_sample(0.9999986111120757)
                                                  : momentum_arg(variance_momentum, kw);
            return fsadagrad(params, lr_arg(lr, kw), momentum_arg(momentum, kw), unit_gain, vm,
                             learner_options(kw));
        },
        arg("parameters"), arg("lr"), arg("momentum"), arg("unit_gain") = default_unit_gain_value(),
        arg("variance_momentum") = py::none());
    ln.def(
        "adam",
        [](const std::vector<Variable>& params, const py::object& lr, const py::object& momentum,
           bool unit_gain, const py::object& variance_momentum, double epsilon, bool adamax,
           const py::kwargs& kw) {
            auto vm = variance_momentum.is_none() ? momentum_schedule_per_sample(0.9999986111120757)
                                                  : momentum_arg(variance_momentum, kw);
            return adam(params, lr_arg(lr, kw), momentum_arg(momentum, kw), unit_gain, vm, epsilon, adamax,
                        learner_options(kw));
        },
        arg("parameters"), arg("lr"), arg("momentum"), arg("unit_gain") = default_unit_gain_value(),
        arg("variance_momentum") = py::none(), arg("epsilon") = 1e-8, arg("adamax") = false);
    ln.def(
        "rmsprop",
        [](const std::vector<Variable>& params, const py::object& lr, double gamma, double inc, double dec,
           double max, double min, bool need_ave_multiplier, const py::kwargs& kw) {
            return rmsprop(params, lr_arg(lr, kw), gamma, inc, dec, max, min, need_ave_multiplier,
                           learner_options(kw));
        },
        arg("parameters"), arg("lr"), arg("gamma"), arg("inc"), arg("dec"), arg("max"), arg("min"),
        arg("need_ave_multiplier") = true);
    ln.def(
        "adadelta",
        [](const std::vector<Variable>& params, const py::object& lr, double rho, double epsilon,
           const py::kwargs& kw) {
            auto l = lr.is_none() ? learning_parameter_schedule_per_sample(1.0) : lr_arg(lr, kw);
            return adadelta(params, l, rho, epsilon, learner_options(kw));
        },
        arg("parameters"), arg("lr") = py::none(), arg("rho") = 0.95, arg("epsilon") = 1e-8);
    // CNTK's universal learner: update_func(parameters, gradients) builds the update graph (assigns) once.
    ln.def(
        "universal",
        [](const py::function& update_func, const std::vector<Variable>& params) {
            auto fn = hold(update_func);
            return universal(
                [fn](const std::vector<Variable>& ps, const std::vector<Variable>& gs) -> FunctionPtr {
                    py::gil_scoped_acquire gil;
                    py::object r = (*fn)(py::cast(ps), py::cast(gs));
                    if (py::isinstance<Function>(r)) return r.cast<FunctionPtr>();
                    return as_function(to_variable(r));
                },
                params);
        },
        arg("update_func"), arg("parameters"));
    // CNTK's low-level form (cntk_py.universal_learner): the update already built over `gradients`.
    ln.def(
        "universal_learner",
        [](const std::vector<Variable>& params, const std::vector<Variable>& gradients,
           const py::object& update) {
            return universal(params, gradients,
                             py::isinstance<Function>(update) ? update.cast<FunctionPtr>()
                                                              : as_function(to_variable(update)));
        },
        arg("parameters"), arg("gradients"), arg("update"));
}

}  // namespace ctk::python
