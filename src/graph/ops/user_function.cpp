// User functions: the callbacks of ctk/graph/user_function.h as a graph op. The callbacks travel in an
// OpaqueAttr (so clones share them); the state forward returns for backward travels in the op's saved
// tensors as an empty tensor whose storage owns it.
#include "ctk/graph/user_function.h"

#include <unordered_map>
#include <unordered_set>

#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

constexpr const char* kCallbacks = "callbacks";
constexpr const char* kOutputDtypes = "outputDtypes";

const UserFunctionCallbacks& callbacks_of(const Attributes& a) {
    return *static_cast<const UserFunctionCallbacks*>(a.get<OpaqueAttr>(kCallbacks).ptr.get());
}

std::vector<OutputSpec> infer_user(InferContext& c) {
    std::vector<UserFunctionOutput> declared = callbacks_of(c.attrs).infer_outputs(c.inputs);
    CTK_CHECK(!declared.empty(), ValueError, c.where, ": infer_outputs declared no outputs");
    std::vector<OutputSpec> out;
    Dims dtypes;
    for (size_t i = 0; i < declared.size(); ++i) {
        const UserFunctionOutput& d = declared[i];
        for (int64_t dim : d.shape)
            CTK_CHECK(dim > 0 || dim == kFreeDim, ShapeError, c.where, ": output ", i,
                      " is declared with shape ", detail::static_shape_string(d.shape),
                      "; user function outputs need known (or free) dims");
        CTK_CHECK(is_floating(d.dtype), TypeError, c.where, ": output ", i, " is declared ",
                  dtype_name(d.dtype), "; outputs are floating-point");
        out.push_back({d.shape, d.dtype, d.dynamic_axes});
        dtypes.push_back(static_cast<int64_t>(d.dtype));
    }
    c.attrs.set(kOutputDtypes, dtypes);
    return out;
}

void forward_user(ForwardContext& c) {
    const UserFunctionCallbacks& cb = callbacks_of(c.attrs);
    const Dims& dtypes = c.attrs.get<Dims>(kOutputDtypes);
    std::vector<Value> outs;
    std::shared_ptr<void> state =
        cb.forward(std::vector<Value>(c.inputs.begin(), c.inputs.end()), outs, c.training);
    CTK_CHECK(outs.size() == dtypes.size(), ValueError, c.where, ": forward produced ", outs.size(),
              " outputs; infer_outputs declared ", dtypes.size());
    for (size_t i = 0; i < outs.size(); ++i) {
        CTK_CHECK(outs[i].defined(), ValueError, c.where, ": forward left output ", i, " empty");
        const auto dtype = static_cast<DataType>(dtypes[i]);
        Value v = outs[i].to(c.device);
        if (v.dtype() != dtype) v = Value(v.data().to(dtype), v.layout());
        c.outputs.push_back(std::move(v));
    }
    if (c.keep_for_backward && cb.backward) {
        // An empty tensor that owns the state (its data pointer is only an address).
        static char anchor;
        void* address = state ? state.get() : &anchor;
        c.saved.push_back(Tensor::wrap(address, 0, Shape{0}, Dims{1}, DataType::f32, Device::cpu(), state));
    }
}

void backward_user(BackwardContext& c) {
    const UserFunctionCallbacks& cb = callbacks_of(c.attrs);
    if (!cb.backward) return;  // no gradient flows through (the inputs' gradients stay zero)
    CTK_CHECK(!c.saved.empty(), Error, c.where, ": backward without the state of its forward");
    std::vector<Tensor> grads(c.inputs.size());
    // An output that got no gradient (nothing downstream needs it) passes zeros, as CNTK's root gradients.
    std::vector<Tensor> dy(c.output_grads.begin(), c.output_grads.end());
    for (size_t j = 0; j < dy.size(); ++j)
        if (!dy[j].defined()) {
            const Tensor& y = c.outputs[j].data();
            dy[j] = Tensor::zeros(y.shape(), y.dtype(), y.device());
        }
    cb.backward(c.saved[0].storage()->keep_alive(), std::vector<Value>(c.inputs.begin(), c.inputs.end()), dy,
                c.needs, grads);
    CTK_CHECK(grads.size() == c.inputs.size(), ValueError, c.where, ": backward returned ", grads.size(),
              " gradients for ", c.inputs.size(), " inputs");
    for (size_t i = 0; i < grads.size(); ++i) {
        if (!c.needs[i] || !grads[i].defined()) continue;
        const Tensor& x = c.inputs[i].data();
        CTK_CHECK(grads[i].shape() == x.shape(), ShapeError, c.where, ": the gradient of input ", i,
                  " has shape ", grads[i].shape().to_string(), "; the input's data has ",
                  x.shape().to_string());
        c.input_grads[i] = grads[i].to(x.device()).to(x.dtype());
    }
}

}  // namespace

void register_user_function_ops(OpTable& t) {
    // Not frame-local: a callback sees whole values (it cannot run frame by frame inside a loop).
    t.add(PrimitiveOp::user_function,
          OpDef{"UserFunction", 0, 1 << 20, infer_user, forward_user, backward_user, false});
    t.refuse_capture(PrimitiveOp::user_function,
                     "is a user function, whose host callbacks would not run when the graph is replayed");
}

}  // namespace detail

FunctionPtr user_function(const std::string& op_name, const std::vector<Variable>& inputs,
                          std::shared_ptr<const UserFunctionCallbacks> callbacks, const std::string& name) {
    CTK_CHECK(callbacks && callbacks->infer_outputs && callbacks->forward, ValueError, "user_function '",
              name, "' (", op_name, "): infer_outputs and forward are required");
    Attributes attrs{{"opName", op_name}, {detail::kCallbacks, OpaqueAttr{std::move(callbacks)}}};
    return detail::make_op(PrimitiveOp::user_function, inputs, std::move(attrs), name);
}

std::shared_ptr<const UserFunctionCallbacks> user_function_callbacks(const Function& f) {
    if (f.is_block() || f.is_composite() || f.op() != PrimitiveOp::user_function) return nullptr;
    return std::static_pointer_cast<const UserFunctionCallbacks>(
        f.attributes().get<OpaqueAttr>(detail::kCallbacks).ptr);
}

UserFunctionDeserializer live_user_functions(const FunctionPtr& graph) {
    auto found = std::make_shared<std::unordered_map<std::string, FunctionPtr>>();
    std::unordered_set<const Function*> seen;
    std::vector<FunctionPtr> todo{graph};
    while (!todo.empty()) {
        FunctionPtr f = std::move(todo.back());
        todo.pop_back();
        if (!f || !seen.insert(f.get()).second) continue;
        if (user_function_callbacks(*f)) found->emplace(f->uid(), f);
        if (f->is_block()) todo.push_back(f->block_root());
        for (const Variable& v : f->is_composite() ? f->outputs() : f->inputs())
            if (v.is_output()) todo.push_back(v.owner());
    }
    return [found](const SavedUserFunction& saved) {
        auto it = found->find(saved.uid);
        CTK_CHECK(it != found->end(), ValueError, "the user function '", saved.name, "' (", saved.uid,
                  ") of the saved model is not in this graph");
        return user_function(it->second->op_name(), saved.inputs, user_function_callbacks(*it->second),
                             saved.name);
    };
}

}  // namespace ctk
