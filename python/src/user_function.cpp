// _ctk._user_function: ctk::user_function with Python callables (the glue that gives them CNTK's
// UserFunction calling conventions is Python, in ctk/ops/functions.py). Callbacks run with the GIL taken
// back; states returned by forward are Python objects released under the GIL.
#include "convert.h"
#include "user_io.h"

namespace ctk::python {

namespace {

std::shared_ptr<py::object> held(const py::object& obj) {
    return std::shared_ptr<py::object>(new py::object(obj), [](py::object* p) {
        py::gil_scoped_acquire gil;
        delete p;
    });
}

}  // namespace

void bind_user_function(py::module_& m) {
    // infer(inputs) -> [(shape, dtype, dynamic_axes)]; forward(values, is_training) -> (state, [data]);
    // backward(state, values, output_grads (None where absent), needs) -> [gradient or None]; serialize()
    // -> the dict a model file keeps.
    m.def(
        "_user_function",
        [](const std::string& op_name, const std::vector<Variable>& inputs, const py::function& infer,
           const py::function& forward, const py::object& backward, const std::string& name,
           const py::object& serialize) {
            auto cb = std::make_shared<UserFunctionCallbacks>();
            auto infer_fn = held(infer), forward_fn = held(forward);
            cb->infer_outputs = [infer_fn](const std::vector<Variable>& in) {
                py::gil_scoped_acquire gil;
                std::vector<UserFunctionOutput> out;
                for (const py::handle& o : (*infer_fn)(py::cast(in))) {
                    auto t = o.cast<py::tuple>();
                    UserFunctionOutput u;
                    for (const py::handle& d : t[0]) u.shape.push_back(d.cast<int64_t>());
                    u.dtype = dtype_from_python(t[1]);
                    u.dynamic_axes = t[2].cast<std::vector<Axis>>();
                    out.push_back(std::move(u));
                }
                return out;
            };
            cb->forward = [forward_fn](const std::vector<Value>& in, std::vector<Value>& out, bool training) {
                py::gil_scoped_acquire gil;
                py::tuple r = (*forward_fn)(py::cast(in), training).cast<py::tuple>();
                for (const py::handle& o : r[1]) {
                    if (py::isinstance<Value>(o)) {
                        out.push_back(o.cast<Value>());
                    } else if (py::isinstance<Tensor>(o)) {
                        out.push_back(Value(o.cast<Tensor>()));
                    } else {
                        out.push_back(Value(tensor_from_numpy(o).clone()));  // the array may be reused
                    }
                }
                return std::static_pointer_cast<void>(held(r[0]));
            };
            if (!backward.is_none()) {
                auto backward_fn = held(backward);
                cb->backward = [backward_fn](const std::shared_ptr<void>& state, const std::vector<Value>& in,
                                             const std::vector<Tensor>& dy, const std::vector<bool>& needs,
                                             std::vector<Tensor>& dx) {
                    py::gil_scoped_acquire gil;
                    py::list grads;
                    for (const Tensor& g : dy)
                        grads.append(g.defined() ? py::object(numpy_from_tensor(g)) : py::none());
                    const py::object st = state ? *static_cast<py::object*>(state.get()) : py::none();
                    py::object r = (*backward_fn)(st, py::cast(in), grads, py::cast(needs));
                    size_t i = 0;
                    for (const py::handle& g : r) {
                        if (i >= dx.size()) break;
                        if (!g.is_none())
                            dx[i] =
                                py::isinstance<Tensor>(g) ? g.cast<Tensor>() : tensor_from_numpy(g).clone();
                        ++i;
                    }
                };
            }
            if (!serialize.is_none()) {
                auto serialize_fn = held(serialize);
                cb->serialize = [serialize_fn, op_name]() {
                    py::gil_scoped_acquire gil;
                    return dictionary_from_python((*serialize_fn)(), op_name + ".serialize()");
                };
            }
            return user_function(op_name, inputs, cb, name);
        },
        py::arg("op_name"), py::arg("inputs"), py::arg("infer"), py::arg("forward"), py::arg("backward"),
        py::arg("name") = "", py::arg("serialize") = py::none());
}

}  // namespace ctk::python
