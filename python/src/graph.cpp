// Bindings of the graph: DataType, Axis, Variable (with CNTK's operator overloads), Function
// (queries, eval/forward/backward/grad with the GIL released, clone, __call__), initializers and the
// variable factories (input_variable, parameter, constant, placeholder, combine, as_block). NDArrayView and
// Value are in value.cpp.
#include <algorithm>
#include <optional>
#include <set>

#include "convert.h"
#include "ctk/formats/model.h"
#include "user_io.h"

namespace ctk::python {

namespace {
// Saved user functions are rebuilt by ctk.ops.functions._deserialize_user_function (CNTK's
// _UDFDeserializeCallbackWrapper: a factory from `udf_factory_callback_map` by op name, else the saved
// class's static deserialize), called with the GIL taken back.
UserFunctionDeserializer python_user_functions(const py::object& factory_map) {
    auto map = std::shared_ptr<py::object>(new py::object(factory_map), [](py::object* p) {
        py::gil_scoped_acquire gil;
        delete p;
    });
    return [map](const SavedUserFunction& saved) {
        py::gil_scoped_acquire gil;
        py::object f = py::module_::import("ctk.ops.functions")
                           .attr("_deserialize_user_function")(py::cast(saved.inputs), saved.name,
                                                               dictionary_to_python(saved.state), *map);
        return f.cast<FunctionPtr>();
    };
}

// CNTK's load_model / Function.load: `model` is a file path or the bytes of a CNTK v2 model. A legacy v1
// file is recognised whatever `format` says, as CNTK's loader did.
FunctionPtr load_model_from_python(const py::object& model, std::optional<ModelFormat> format,
                                   const py::object& udf_factory_callback_map = py::none()) {
    const UserFunctionDeserializer user_functions = python_user_functions(udf_factory_callback_map);
    if (py::isinstance<py::bytes>(model) || py::isinstance<py::bytearray>(model)) {
        const std::string bytes =
            py::isinstance<py::bytes>(model) ? model.cast<std::string>() : std::string(py::bytes(model));
        if (format && *format != ModelFormat::cntk_v2)
            throw ValueError("load_model: a byte buffer must hold a CNTK v2 model");
        py::gil_scoped_release release;
        return deserialize_cntk_v2_model(bytes, "<bytes>", user_functions);
    }
    const std::string path = py::str(model);
    py::gil_scoped_release release;
    if (format == ModelFormat::cntk_v2 && detect_model_format(path) == ModelFormat::cntk_v1)
        format = ModelFormat::cntk_v1;
    return load_model(path, format, user_functions);
}

// A new value for a parameter or constant: an NDArrayView (Tensor) as it is, else an array of its dtype.
Tensor parameter_value(const Variable& v, const py::handle& data) {
    if (py::isinstance<Tensor>(data)) return data.cast<Tensor>().to(v.dtype());
    return tensor_from_numpy(data, v.dtype());
}

// The dtype of whichever operand is a graph node (CNTK's sanitize_multi_var_inputs).
DataType common_dtype(const py::handle& a, const py::handle& b) {
    for (const py::handle& h : {a, b}) {
        if (py::isinstance<Variable>(h)) return h.cast<Variable>().dtype();
        if (py::isinstance<Function>(h)) return Variable(h.cast<FunctionPtr>()).dtype();
    }
    return DataType::f32;
}

using BinaryOp = FunctionPtr (*)(const Variable&, const Variable&, const std::string&);

// Defines CNTK's operator overloads (Variable and Function both have them).
template <typename Class>
void def_operators(Class& c) {
    auto binary = [&c](const char* name, BinaryOp op, bool reflected) {
        c.def(name, [op, reflected](const py::object& self, const py::object& other) {
            const DataType dt = common_dtype(self, other);
            Variable a = to_variable(self, dt), b = to_variable(other, dt);
            return reflected ? op(b, a, "") : op(a, b, "");
        });
    };
    binary("__add__", plus, false);
    binary("__radd__", plus, true);
    binary("__sub__", minus, false);
    binary("__rsub__", minus, true);
    binary("__mul__", element_times, false);
    binary("__rmul__", element_times, true);
    binary("__truediv__", element_divide, false);
    binary("__rtruediv__", element_divide, true);
    binary("__pow__", pow, false);
    binary("__rpow__", pow, true);
    binary("__lt__", less, false);
    binary("__le__", less_equal, false);
    binary("__gt__", greater, false);
    binary("__ge__", greater_equal, false);
    c.def("__matmul__", [](const py::object& self, const py::object& other) {
        const DataType dt = common_dtype(self, other);
        return times(to_variable(self, dt), to_variable(other, dt));
    });
    c.def("__rmatmul__", [](const py::object& self, const py::object& other) {
        const DataType dt = common_dtype(self, other);
        return times(to_variable(other, dt), to_variable(self, dt));
    });
    c.def("__neg__", [](const py::object& self) { return negate(to_variable(self)); });
    c.def("__abs__", [](const py::object& self) { return abs(to_variable(self)); });
}

py::object values_out(const ValueMap& values, const std::vector<Variable>& order, bool as_numpy) {
    py::dict out;
    for (const Variable& v : order) {
        auto it = values.find(v);
        if (it == values.end()) continue;
        out[py::cast(v)] = as_numpy ? numpy_from_value(v, it->second) : py::cast(it->second);
    }
    return out;
}

// The outputs asked of f: its own by default; any others must be computed in its graph (CNTK's
// ValueError for a variable of another graph, which ctk would otherwise compute from the arguments).
std::vector<Variable> outputs_arg(const py::object& outputs, const FunctionPtr& f) {
    if (outputs.is_none()) return f->outputs();
    std::vector<Variable> asked = to_variables(outputs);
    const std::vector<Variable> own = f->outputs();
    std::vector<Variable> others;
    for (const Variable& v : asked)
        if (std::find(own.begin(), own.end(), v) == own.end()) others.push_back(v);
    if (others.empty()) return asked;
    std::set<const Function*> seen;
    std::vector<FunctionPtr> stack;
    for (const Variable& v : own)
        if (FunctionPtr o = v.owner()) stack.push_back(o);
    const std::vector<Variable> leaves = f->inputs();
    while (!stack.empty()) {
        FunctionPtr g = stack.back();
        stack.pop_back();
        if (!seen.insert(g.get()).second) continue;
        for (const Variable& in : g->inputs())
            if (FunctionPtr o = in.owner()) stack.push_back(o);
    }
    for (const Variable& v : others) {
        const FunctionPtr o = v.owner();
        const bool in_graph =
            o ? seen.count(o.get()) != 0 : std::find(leaves.begin(), leaves.end(), v) != leaves.end();
        CTK_CHECK(in_graph, ValueError, "the output ", v.to_string(),
                  " is not computed by this Function's graph");
    }
    return asked;
}

py::object eval(const FunctionPtr& f, const py::object& arguments, const py::object& outputs, bool as_numpy,
                const py::object& device = py::none()) {
    const std::vector<Variable> outs = outputs_arg(outputs, f);
    ValueMap args = argument_map(arguments, f);
    const Device dev = device_from(device);
    ValueMap result;
    {
        py::gil_scoped_release nogil;
        result = f->eval(args, outs, dev);
    }
    if (outs.size() == 1) {
        const Value& v = result.at(outs[0]);
        return as_numpy ? numpy_from_value(outs[0], v) : py::cast(v);
    }
    return values_out(result, outs, as_numpy);
}

// CNTK's Function.grad: wrt defaults to the arguments that need a gradient; one gradient (or one
// fetched output) comes back as an array, several as a dict (CNTK's sanitize_variable_value_dict).
py::object grad(const FunctionPtr& f, const py::object& at, const py::object& wrt, const py::object& outputs,
                bool as_numpy, const py::object& device, const py::object& grad_root) {
    std::vector<Variable> wrt_vars;
    if (wrt.is_none()) {
        for (const Variable& a : f->arguments())
            if (a.needs_gradient()) wrt_vars.push_back(a);
        CTK_CHECK(!wrt_vars.empty(), ValueError, "None of the Function '", f->to_string(),
                  "' arguments have 'needs_gradient == True'");
    } else if (py::isinstance<py::list>(wrt) || py::isinstance<py::tuple>(wrt)) {
        wrt_vars = to_variables(wrt);
    } else {
        wrt_vars = {to_variable(wrt)};
    }
    std::vector<Variable> outs = outputs_arg(outputs, f);
    ValueMap args = argument_map(at, f);
    const Device dev = device_from(device);
    // The root: grad_root, else the Function's single output. One forward in training mode (as CNTK's
    // Gradients) computes it and the requested outputs, so they agree with the gradients.
    const Variable root = grad_root.is_none() ? f->output() : to_variable(grad_root);
    ValueMap grads, values;
    for (const Variable& v : outs) values[v] = Value();
    {
        py::gil_scoped_release nogil;
        values[root] = Value();
        auto state = f->forward(args, values, {root}, true, dev);
        const Value& y = values.at(root);
        Tensor ones = Tensor::ones(y.data().shape(), y.data().dtype(), y.data().device());
        grads = f->backward(*state, {{root, Value(ones, y.layout())}}, wrt_vars);
    }
    auto single_or_dict = [as_numpy](const ValueMap& m, const std::vector<Variable>& order) -> py::object {
        if (order.size() != 1) return values_out(m, order, as_numpy);
        const Value& v = m.at(order[0]);
        return as_numpy ? numpy_from_value(order[0], v) : py::cast(v);
    };
    py::object g = single_or_dict(grads, wrt_vars);
    if (outputs.is_none()) return g;
    return py::make_tuple(g, single_or_dict(values, outs));
}

FunctionPtr compose(const FunctionPtr& f, const py::args& args) {
    std::vector<Variable> vars;
    for (const py::handle& a : args) vars.push_back(to_variable(a));
    return (*f)(vars);
}

Initializer init_from(const py::handle& init) {
    if (py::isinstance<Initializer>(init)) return init.cast<Initializer>();
    return constant_initializer(init.cast<double>());
}

}  // namespace

void bind_graph(py::module_& m) {
    // Every graph primitive's name (ctk's, as primitive_op_name gives it), for the coverage test that
    // checks each is reachable from the cntk package.
    m.def("primitive_op_names", [] {
        std::vector<std::string> names;
        for (int i = 0; i < kNumPrimitiveOps; ++i)
            names.emplace_back(primitive_op_name(static_cast<PrimitiveOp>(i)));
        return names;
    });
    // ---- Axis ----
    py::class_<Axis>(m, "Axis")
        .def(py::init<int>(), py::arg("static_axis_index"))
        .def(py::init([](const std::string& name) { return Axis::dynamic(name); }), py::arg("name"))
        .def_static("default_batch_axis", &Axis::default_batch_axis)
        .def_static("default_dynamic_axis", &Axis::default_dynamic_axis)
        .def_static("all_static_axes", &Axis::all_static_axes)
        .def_static("all_axes", &Axis::all_axes)
        .def_static("default_input_variable_dynamic_axes",
                    [] { return py::make_tuple(Axis::default_batch_axis(), Axis::default_dynamic_axis()); })
        .def_static("new_leading_axis", [] { return Axis::dynamic(kNewLeadingAxisName); })
        // CNTK: the axes of a placeholder not bound yet.
        .def_static("unknown_dynamic_axes", [] { return py::make_tuple(Axis::dynamic("UnknownAxes")); })
        .def_static("new_unique_dynamic_axis", &Axis::new_unique_dynamic_axis, py::arg("name"),
                    py::arg("ordered") = true)
        .def_property_readonly("name", &Axis::name)
        .def_property_readonly("is_static_axis", &Axis::is_static)
        .def_property_readonly("is_ordered", &Axis::is_ordered)
        .def(
            "static_axis_index", [](const Axis& a, bool /*checked*/) { return a.static_index(); },
            py::arg("checked") = true)
        .def("__eq__", [](const Axis& a, const Axis& b) { return a == b; })
        .def("__hash__", [](const Axis& a) { return py::hash(py::str(a.to_string())); })
        // CNTK's spelling: Axis('staticAxisIdx=1') for a static axis, Axis('name') for the others.
        .def("__repr__", [](const Axis& a) {
            if (a.is_static() && a != Axis::all_static_axes() && a != Axis::all_axes())
                return "Axis('staticAxisIdx=" + std::to_string(a.static_index()) + "')";
            return a.to_string();
        });
    py::implicitly_convertible<py::int_, Axis>();

    bind_values(m);

    // ---- Initializers ----
    py::class_<Initializer>(m, "Initializer").def("__repr__", &Initializer::to_string);
    constexpr int kRank = kSentinelRank;
    constexpr uint64_t kSeed = kSentinelSeed;
    m.attr("SentinelValueForInferParamInitRank") = kRank;
    m.attr("InferredDimension") = kInferredDim;  // CNTK's C.InferredDimension and C.FreeDimension
    m.attr("FreeDimension") = kFreeDim;
    m.attr("SentinelValueForAutoSelectRandomSeed") = kSeed;
    // CNTK's native constant_initializer (imported from _cntk_py by CNTK's own examples).
    m.def("constant_initializer", &constant_initializer, py::arg("value") = 0.0);
    // CNTK's initializers take seed=None (the default) for a seed drawn from the process's seed source.
    using Seed = std::optional<uint64_t>;
    m.def(
        "uniform", [](double scale, Seed seed) { return uniform(scale, seed.value_or(kSentinelSeed)); },
        py::arg("scale"), py::arg("seed") = py::none());
    m.def(
        "truncated_normal",
        [](double stdev, Seed seed) { return truncated_normal(stdev, seed.value_or(kSentinelSeed)); },
        py::arg("stdev"), py::arg("seed") = py::none());
    using Ranked = Initializer (*)(double, int, int, uint64_t);
    auto ranked = [](Ranked make) {
        return [make](double scale, int output_rank, int filter_rank, Seed seed) {
            return make(scale, output_rank, filter_rank, seed.value_or(kSentinelSeed));
        };
    };
    m.def("normal", ranked(&normal), py::arg("scale"), py::arg("output_rank") = kRank,
          py::arg("filter_rank") = kRank, py::arg("seed") = py::none());
    for (auto [name, make] : {std::pair<const char*, Ranked>{"xavier", &xavier},
                              {"glorot_uniform", &glorot_uniform},
                              {"glorot_normal", &glorot_normal},
                              {"he_uniform", &he_uniform},
                              {"he_normal", &he_normal}})
        m.def(name, ranked(make), py::arg("scale") = 1.0, py::arg("output_rank") = kRank,
              py::arg("filter_rank") = kRank, py::arg("seed") = py::none());
    m.def("bilinear", &bilinear, py::arg("kernel_width"), py::arg("kernel_height"));
    m.def(
        "initializer_with_rank",
        [](const Initializer& init, const py::object& output_rank, const py::object& filter_rank) {
            return initializer_with_rank(init, output_rank.is_none() ? kRank : output_rank.cast<int>(),
                                         filter_rank.is_none() ? kRank : filter_rank.cast<int>());
        },
        py::arg("initializer"), py::arg("output_rank") = py::none(), py::arg("filter_rank") = py::none());
    m.def("set_fixed_random_seed", &set_fixed_random_seed, py::arg("value"));
    m.def("reset_random_seed", &reset_random_seed, py::arg("value"));
    m.def("is_random_seed_fixed", &random_seed_is_fixed);

    // ---- Variable ----
    // dynamic_attr: CNTK's layers library adds methods to variables (ForwardDeclaration's resolve_to).
    py::class_<Variable> var(m, "Variable", py::dynamic_attr());
    var.def(py::init<const FunctionPtr&>())
        .def_property_readonly("shape", [](const Variable& v) { return shape_tuple(v.shape()); })
        .def_property_readonly("dtype", [](const Variable& v) { return numpy_dtype(v.dtype()); })
        .def_property_readonly("name", &Variable::name)
        .def_property_readonly("uid", &Variable::uid)
        // A tuple, as CNTK's.
        .def_property_readonly("dynamic_axes",
                               [](const Variable& v) { return py::tuple(py::cast(v.dynamic_axes())); })
        .def_property_readonly("is_input", &Variable::is_input)
        .def_property_readonly("_shape_known", &Variable::shape_known)
        .def_property_readonly("is_output", &Variable::is_output)
        .def_property_readonly("is_parameter", &Variable::is_parameter)
        .def_property_readonly("is_constant", &Variable::is_constant)
        .def_property_readonly("is_placeholder", &Variable::is_placeholder)
        .def_property_readonly("is_sparse", &Variable::is_sparse)
        .def_property_readonly("needs_gradient", &Variable::needs_gradient)
        .def_property_readonly("owner",
                               [](const Variable& v) -> py::object {
                                   FunctionPtr f = v.owner();
                                   return f ? py::cast(f) : py::none();
                               })
        .def_property(
            "value", [](const Variable& v) { return numpy_from_tensor(v.value()); },
            [](const Variable& v, const py::handle& data) { v.set_value(parameter_value(v, data)); })
        // CNTK's Parameter/Constant.set_value (what a UserLearner's update calls): an NDArrayView or array.
        .def("set_value",
             [](const Variable& v, const py::handle& data) { v.set_value(parameter_value(v, data)); })
        .def("asarray", [](const Variable& v) { return numpy_from_tensor(v.value()); })
        .def("__hash__", [](const Variable& v) { return reinterpret_cast<intptr_t>(v.impl()); })
        .def("__eq__",
             [](const Variable& a, const py::object& b) {
                 return py::isinstance<Variable>(b) && a == b.cast<Variable>();
             })
        .def("__ne__",
             [](const Variable& a, const py::object& b) {
                 return !(py::isinstance<Variable>(b) && a == b.cast<Variable>());
             })
        .def("__repr__", &Variable::to_string);
    def_operators(var);

    // ---- Function ----
    py::enum_<ModelFormat>(m, "ModelFormat")
        .value("CNTKv2", ModelFormat::cntk_v2)
        .value("ONNX", ModelFormat::onnx)
        .value("CNTKv1", ModelFormat::cntk_v1);
    py::enum_<CloneMethod>(m, "CloneMethod")
        .value("clone", CloneMethod::clone)
        .value("share", CloneMethod::share)
        .value("freeze", CloneMethod::freeze);
    // cntk_py.allow_renaming_functions(): CNTK's switch that lets a named Function be renamed.
    static bool renaming_allowed = false;
    m.def(
        "_allow_renaming_functions", [](bool allow) { renaming_allowed = allow; }, py::arg("allow") = true);
    py::class_<Function, FunctionPtr> fn(m, "Function",
                                         "A node of the computation graph: a primitive op, a block or a "
                                         "composite of others (CNTK's Function). With one output it acts "
                                         "as that output Variable.");
    fn.def_property("name", &Function::name,
                    [](Function& f, const std::string& name) {
                        // CNTK allowed naming a Function once (a Function built without a name).
                        CTK_CHECK(renaming_allowed || f.name().empty(), ValueError,
                                  "the Function already has the name '", f.name(),
                                  "'; CNTK allows a name to be set only once");
                        f.set_name(name);
                    })
        .def_property_readonly("uid", &Function::uid)
        .def_property_readonly("op_name", &Function::op_name)
        .def_property_readonly("is_block", &Function::is_block)
        // CNTK: every Function that is not a composite is primitive, blocks included.
        .def_property_readonly("is_primitive", [](const Function& f) { return !f.is_composite(); })
        .def_property_readonly("is_composite", &Function::is_composite)
        .def_property_readonly("block_root", &Function::block_root)
        // (placeholder inside, operand outside) pairs, as CNTK's BlockArgumentsMapping.
        .def_property_readonly("block_arguments_mapping", &Function::block_arguments_mapping)
        .def_property_readonly("inputs", &Function::inputs)
        // A tuple, as CNTK's (its Sequence2Sequence writes `encoded.outputs + (r,)`).
        .def_property_readonly("outputs", [](const Function& f) { return py::tuple(py::cast(f.outputs())); })
        .def_property_readonly("output", &Function::output)
        .def_property_readonly("arguments", &Function::arguments)
        .def_property_readonly("parameters", &Function::parameters)
        .def_property_readonly("constants", &Function::constants)
        .def_property_readonly("placeholders", &Function::placeholders)
        .def_property_readonly("shape", [](const Function& f) { return shape_tuple(f.output().shape()); })
        .def_property_readonly("dtype", [](const Function& f) { return numpy_dtype(f.output().dtype()); })
        .def_property_readonly(
            "dynamic_axes", [](const Function& f) { return py::tuple(py::cast(f.output().dynamic_axes())); })
        // The attributes as CNTK's v2 format has them (Function.attributes converts them as CNTK's did).
        .def("_cntk_v2_attributes",
             [](const Function& f) { return dictionary_to_python(cntk_v2_attributes(f)); })
        // CNTK: the primitive at the root of a composite (its first output's owner); itself otherwise.
        .def_property_readonly("root_function",
                               [](const FunctionPtr& f) {
                                   if (!f->is_composite()) return f;
                                   FunctionPtr owner = f->outputs().front().owner();
                                   return owner ? owner : f;
                               })
        .def(
            "set_attribute",
            [](Function& f, const std::string& name, const py::object& value) {
                if (py::isinstance<py::bool_>(value) ||
                    !(py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value) ||
                      py::hasattr(value, "__float__")))
                    throw py::type_error("set_attribute: the value of '" + name + "' must be a number");
                if (py::isinstance<py::int_>(value) || py::hasattr(value, "__index__"))
                    f.set_attribute(name, value.cast<int64_t>());
                else
                    f.set_attribute(name, value.cast<double>());
            },
            py::arg("name"), py::arg("value"))
        .def(
            "find_by_name",
            [](const Function& f, const std::string& name, int depth) {
                return f.find_by_name(name, depth != 0);
            },
            py::arg("name"), py::arg("depth") = 0)
        .def(
            "find_all_with_name",
            [](const Function& f, const std::string& name, int depth) {
                return f.find_all_with_name(name, depth != 0);
            },
            py::arg("name"), py::arg("depth") = 0)
        .def(
            "clone",
            [](const Function& f, const py::object& method_arg, const py::object& substitutions) {
                // CNTK took a CloneMethod or its name ('clone', 'share', 'freeze').
                CloneMethod method = CloneMethod::clone;
                if (py::isinstance<py::str>(method_arg)) {
                    const std::string m = py::str(method_arg);
                    CTK_CHECK(m == "clone" || m == "share" || m == "freeze", ValueError, "clone: method '", m,
                              "' is not one of 'clone', 'share', 'freeze'");
                    method = m == "clone"   ? CloneMethod::clone
                             : m == "share" ? CloneMethod::share
                                            : CloneMethod::freeze;
                } else {
                    CTK_CHECK(py::isinstance<CloneMethod>(method_arg), ValueError, "clone: method ",
                              std::string(py::repr(method_arg)), " is not a CloneMethod or its name");
                    method = method_arg.cast<CloneMethod>();
                }
                VariableMap subs;
                if (!substitutions.is_none()) {
                    for (auto item : substitutions.cast<py::dict>()) {
                        subs[to_variable(item.first)] = to_variable(item.second);
                    }
                }
                return f.clone(method, subs);
            },
            py::arg("method"), py::arg("substitutions") = py::none())
        .def(
            "replace_placeholders",
            [](Function& f, const py::dict& map) {
                VariableMap vm;
                for (auto item : map) vm[to_variable(item.first)] = to_variable(item.second);
                return f.replace_placeholders(vm);
            },
            py::arg("substitutions"))
        .def(
            "replace_placeholder",
            [](Function& f, const py::object& substitution) {
                auto ph = f.placeholders();
                CTK_CHECK(ph.size() == 1, ValueError, "replace_placeholder: the function has ", ph.size(),
                          " placeholders (use replace_placeholders)");
                return f.replace_placeholders({{ph[0], to_variable(substitution)}});
            },
            py::arg("substitution"))
        .def(
            "eval",
            [](const FunctionPtr& f, const py::object& arguments, const py::object& outputs,
               const py::object& device,
               bool as_numpy) { return eval(f, arguments, outputs, as_numpy, device); },
            py::arg("arguments") = py::none(), py::arg("outputs") = py::none(),
            py::arg("device") = py::none(), py::arg("as_numpy") = true)
        .def(
            "forward",
            [](const FunctionPtr& f, const py::object& arguments, const py::object& outputs,
               const py::object& keep_for_backward, const py::object& device, bool as_numpy) {
                std::vector<Variable> outs = outputs_arg(outputs, f);
                std::vector<Variable> keep;
                if (!keep_for_backward.is_none()) keep = to_variables(keep_for_backward);
                ValueMap args = argument_map(arguments, f);
                const Device dev = device_from(device);
                ValueMap result;
                for (const Variable& v : outs) result[v] = Value();
                std::shared_ptr<BackPropState> state;
                {
                    py::gil_scoped_release nogil;
                    // CNTK runs in training mode when backward state is kept.
                    state = f->forward(args, result, keep, !keep.empty(), dev);
                }
                return py::make_tuple(state, values_out(result, outs, as_numpy));
            },
            py::arg("arguments"), py::arg("outputs") = py::none(), py::arg("keep_for_backward") = py::none(),
            py::arg("device") = py::none(), py::arg("as_numpy") = true)
        .def(
            "backward",
            [](const FunctionPtr& f, const std::shared_ptr<BackPropState>& state,
               const py::object& root_gradients, const py::object& variables, bool as_numpy) {
                ValueMap roots;
                if (py::isinstance<py::dict>(root_gradients)) {
                    for (auto item : py::dict(root_gradients)) {
                        Variable v = to_variable(item.first);
                        roots[v] = value_for(v, item.second);
                    }
                } else {  // CNTK: the gradient of the one output, given as data
                    const Variable out = f->output();
                    roots[out] = value_for(out, root_gradients);
                }
                std::vector<Variable> wrt = to_variables(py::list(variables));
                ValueMap grads;
                {
                    py::gil_scoped_release nogil;
                    grads = f->backward(*state, roots, wrt);
                }
                return values_out(grads, wrt, as_numpy);
            },
            py::arg("state"), py::arg("root_gradients"), py::arg("variables"), py::arg("as_numpy") = true)
        .def(
            "grad",
            [](const FunctionPtr& f, const py::object& at, const py::object& wrt, const py::object& outputs,
               const py::object& device, bool as_numpy, const py::object& grad_root) {
                return grad(f, at, wrt, outputs, as_numpy, device, grad_root);
            },
            py::arg("at"), py::arg("wrt") = py::none(), py::arg("outputs") = py::none(),
            py::arg("device") = py::none(), py::arg("as_numpy") = true, py::arg("grad_root") = py::none())
        .def("__call__",
             [](const FunctionPtr& f, const py::args& args) -> py::object {
                 // Variables compose (CNTK's __call__); data evaluates, mapped to the arguments in order.
                 bool symbolic = true;
                 for (const py::handle& a : args) {
                     symbolic = symbolic && (py::isinstance<Variable>(a) || py::isinstance<Function>(a));
                 }
                 if (symbolic) return py::cast(compose(f, args));
                 std::vector<Variable> fargs = f->arguments();
                 CTK_CHECK(fargs.size() == args.size(), ValueError, "the function has ", fargs.size(),
                           " arguments, called with ", args.size(), " values");
                 py::dict map;
                 for (size_t i = 0; i < fargs.size(); ++i) map[py::cast(fargs[i])] = args[i];
                 py::object result = eval(f, map, py::none(), true);
                 // Several outputs: a tuple in the outputs' order (CNTK's `words, p = q(input)`).
                 const std::vector<Variable> outs = f->outputs();
                 if (outs.size() <= 1) return result;
                 const py::dict by_var = result;
                 py::tuple ordered(outs.size());
                 for (size_t i = 0; i < outs.size(); ++i) ordered[i] = by_var[py::cast(outs[i])];
                 return ordered;
             })
        .def("__getattr__",
             [](const FunctionPtr& f, const std::string& name) -> py::object {
                 // CNTK: members by name (a layer's W and b), then the single output's attributes.
                 const FunctionPtr root = f->is_block() ? f->block_root() : f;
                 for (const auto& list : {root->parameters(), root->constants()}) {
                     for (const Variable& v : list) {
                         if (v.name() == name) return py::cast(v);
                     }
                 }
                 if (FunctionPtr found = f->find_by_name(name)) return py::cast(found);
                 // A block (a named layer, ctk's Sequential) is searched inside, as CNTK's lookup did.
                 if (root != f) {
                     if (FunctionPtr found = root->find_by_name(name)) return py::cast(found);
                 }
                 for (const auto& list : {f->arguments(), root->arguments()}) {
                     for (const Variable& v : list) {
                         if (v.name() == name) return py::cast(v);
                     }
                 }
                 // Then deeper, through the blocks (CNTK's Sequence2Sequence reads
                 // model_greedy.attention_model.attention_weights, two layers down).
                 if (FunctionPtr found = f->find_by_name(name, true)) return py::cast(found);
                 // Then the single output's members (shape, dtype, ...).
                 const auto outs = f->outputs();
                 if (outs.size() == 1 && name.rfind("_", 0) != 0 && name != "this")
                     return py::getattr(py::cast(outs[0]), name.c_str());
                 throw py::attribute_error("'Function' object has no attribute '" + name + "'");
             })
        .def("__hash__", [](const Function& f) { return reinterpret_cast<intptr_t>(&f); })
        .def("__eq__",
             [](const Function& a, const py::object& b) {
                 return py::isinstance<Function>(b) && &a == b.cast<FunctionPtr>().get();
             })
        .def("__repr__", &Function::to_string);
    // CNTK's Function.save / Function.load; a legacy v1 file is recognised whatever `format` says, as
    // CNTK's loader did.
    // CNTK's Function.serialize: a user function's own dictionary (class, module, op_name, state), else
    // the Function as a CNTK v2 model dictionary.
    fn.def("serialize", [](const FunctionPtr& f) -> py::object {
        FunctionPtr node = f;
        if (f->is_composite() && f->outputs().size() == 1 && f->outputs()[0].is_output())
            node = f->outputs()[0].owner();
        if (auto cb = user_function_callbacks(*node); cb && cb->serialize)
            return dictionary_to_python(cb->serialize());
        Dictionary d;
        {
            py::gil_scoped_release release;
            d = cntk_dictionary_from_bytes(serialize_cntk_v2_model(f), "serialize");
        }
        return dictionary_to_python(d);
    });
    fn.def(
          "save",
          [](const FunctionPtr& f, const std::string& filename, ModelFormat format,
             bool /*use_external_files_to_store_parameters*/) {
              py::gil_scoped_release release;
              save_model(f, filename, format);
          },
          py::arg("filename"), py::arg("format") = ModelFormat::cntk_v2,
          py::arg("use_external_files_to_store_parameters") = false)
        .def_static(
            "load",
            [](const py::object& model, const py::object& /*device*/, ModelFormat format,
               const py::object& udf_factory_callback_map) {
                return load_model_from_python(model, format, udf_factory_callback_map);
            },
            py::arg("model"), py::arg("device") = py::none(), py::arg("format") = ModelFormat::cntk_v2,
            py::arg("udf_factory_callback_map") = py::none());
    // CNTK's @Function / Function(python_function): built in Python (ctk.function_api).
    fn.def(py::init(
               [](const py::function& f, bool make_block, const py::object& op_name, const py::object& name) {
                   return py::module_::import("ctk.function_api")
                       .attr("function_from_python")(f, make_block, op_name, name)
                       .cast<FunctionPtr>();
               }),
           py::arg("f"), py::arg("make_block") = false, py::arg("op_name") = py::none(),
           py::arg("name") = py::none());
    def_operators(fn);
    py::implicitly_convertible<Function, Variable>();
    m.def(
        "_with_argument_order",
        [](const FunctionPtr& f, const py::object& arguments, const std::string& name) {
            return with_argument_order(f, to_variables(arguments), name);
        },
        py::arg("function"), py::arg("arguments"), py::arg("name") = "");
    py::class_<BackPropState, std::shared_ptr<BackPropState>>(m, "BackPropState")
        .def_property_readonly("is_training", &BackPropState::is_training);

    // ---- factories ----
    m.def(
        "input_variable",
        [](const py::object& shape, const py::object& dtype, bool needs_gradient, bool is_sparse,
           const py::object& dynamic_axes, const std::string& name) {
            std::vector<Axis> axes =
                dynamic_axes.is_none() ? default_batch_axes() : axis_list_arg(dynamic_axes, "dynamic_axes");
            return input_variable(dims_arg(shape), dtype_from_python(dtype), needs_gradient, is_sparse, axes,
                                  name);
        },
        py::arg("shape"), py::arg("dtype") = py::none(), py::arg("needs_gradient") = false,
        py::arg("is_sparse") = false, py::arg("dynamic_axes") = py::none(), py::arg("name") = "");
    // cntk.sequence.input_variable: CNTK's argument order differs from input_variable's (is_sparse second).
    m.def(
        "sequence_input_variable",
        [](const py::object& shape, bool is_sparse, const py::object& dtype, bool needs_gradient,
           const std::string& name, const py::object& sequence_axis) {
            Axis axis = sequence_axis.is_none() ? Axis::default_dynamic_axis()
                                                : axis_arg(sequence_axis, "sequence_axis");
            return sequence_input_variable(dims_arg(shape), dtype_from_python(dtype), needs_gradient,
                                           is_sparse, axis, name);
        },
        py::arg("shape"), py::arg("is_sparse") = false, py::arg("dtype") = py::none(),
        py::arg("needs_gradient") = false, py::arg("name") = "", py::arg("sequence_axis") = py::none());
    m.def(
        "parameter",
        [](const py::object& shape, const py::object& init, const py::object& dtype, const py::object& device,
           const std::string& name) {
            const bool is_array = py::isinstance<py::array>(init) || py::isinstance<py::list>(init);
            if (is_array) {
                return parameter_from(
                    float_tensor_from_python(
                        init, dtype.is_none() ? std::optional<DataType>() : dtype_from_python(dtype))
                        .to(device_from(device)),
                    name);
            }
            // Initialized values land on the default device when first read; a graph moves them where
            // it computes (CNTK's `device` placed them at once).
            // CNTK's default: 0 when no initializer is given.
            Initializer i = init.is_none() ? constant_initializer(0.0) : init_from(init);
            return parameter(dims_arg(shape), i, dtype_from_python(dtype), name);
        },
        py::arg("shape") = py::none(), py::arg("init") = py::none(), py::arg("dtype") = py::none(),
        py::arg("device") = py::none(), py::arg("name") = "");
    m.def(
        "constant",
        [](const py::object& value, const py::object& shape, const py::object& dtype,
           const py::object& /*device*/, const std::string& name) {
            const DataType dt = dtype_from_python(dtype);
            if (value.is_none()) return constant(dims_arg(shape), 0.0, dt, name);
            if (py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value)) {
                if (shape.is_none()) return constant(value.cast<double>(), dt, name);
                return constant(dims_arg(shape), value.cast<double>(), dt, name);
            }
            // CNTK: a NumPy array keeps its dtype, a list is float32 unless a dtype is given.
            std::optional<DataType> want;
            if (!dtype.is_none() || !py::isinstance<py::array>(value)) want = dt;
            return constant(tensor_from_numpy(value, want), name);
        },
        py::arg("value") = py::none(), py::arg("shape") = py::none(), py::arg("dtype") = py::none(),
        py::arg("device") = py::none(), py::arg("name") = "");
    m.def(
        "placeholder",
        [](const py::object& shape, const py::object& dynamic_axes, const std::string& name) {
            if (shape.is_none()) return placeholder(name);
            std::vector<Axis> axes =
                dynamic_axes.is_none() ? default_batch_axes() : axis_list_arg(dynamic_axes, "dynamic_axes");
            return placeholder(dims_arg(shape), axes, name);
        },
        py::arg("shape") = py::none(), py::arg("dynamic_axes") = py::none(), py::arg("name") = "");
    m.def(
        "combine",
        [](const py::args& operands, const std::string& name) {
            py::object list = operands.size() == 1 && (py::isinstance<py::list>(operands[0]) ||
                                                       py::isinstance<py::tuple>(operands[0]))
                                  ? py::object(operands[0])
                                  : py::object(operands);
            return combine(to_variables(list), name);
        },
        py::kw_only(), py::arg("name") = "");
    m.def(
        "as_block",
        [](const FunctionPtr& composite, const py::object& block_arguments_map,
           const std::string& block_op_name, const std::string& block_instance_name) {
            std::vector<std::pair<Variable, Variable>> args;
            for (const py::handle& pair : block_arguments_map) {
                auto t = pair.cast<py::tuple>();
                args.emplace_back(to_variable(t[0]), to_variable(t[1]));
            }
            // As CNTK (AsComposite of the block, with its name): a composite whose root_function is the
            // block.
            const FunctionPtr block = as_block(composite, args, block_op_name, block_instance_name);
            return combine(block->outputs(), block_instance_name);
        },
        py::arg("composite"), py::arg("block_arguments_map"), py::arg("block_op_name"),
        py::arg("block_instance_name") = "");
    m.def("as_function", &as_function);
    m.def(
        "load_model",
        [](const py::object& model, const py::object& /*device*/, const py::object& format,
           const py::object& udf_factory_callback_map) {
            return load_model_from_python(
                model, format.is_none() ? std::optional<ModelFormat>() : format.cast<ModelFormat>(),
                udf_factory_callback_map);
        },
        py::arg("model"), py::arg("device") = py::none(), py::arg("format") = py::none(),
        py::arg("udf_factory_callback_map") = py::none());
}

}  // namespace ctk::python
