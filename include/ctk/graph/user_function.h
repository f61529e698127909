// User functions (CNTK's UserFunction): an op whose shape rule, forward and backward are callbacks, for
// computations no built-in op expresses (CNTK users wrote them in Python with NumPy; the Python package
// builds its UserFunction class on this). A user function joins graphs like any op: it is differentiated
// through, cloned (sharing its callbacks), evaluated on any device (it gets the values where the
// evaluation runs and whatever it returns is moved there). It cannot run inside a recurrent loop, and model
// files refuse it (CNTK saved the Python class to re-import; ctk keeps no such registry).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ctk/graph/function.h"

namespace ctk {

struct UserFunctionOutput {
    Dims shape;  // the sample shape
    DataType dtype = DataType::f32;
    std::vector<Axis> dynamic_axes;
};

struct UserFunctionCallbacks {
    // The outputs' sample shapes, dtypes and dynamic axes from the input variables.
    std::function<std::vector<UserFunctionOutput>(const std::vector<Variable>& inputs)> infer_outputs;
    // Fills `outputs` (one Value per declared output: [dynamic dims..., sample shape]; a sequence output
    // may leave its layout empty to take its input's) and returns what backward will need (may be null).
    std::function<std::shared_ptr<void>(const std::vector<Value>& inputs, std::vector<Value>& outputs,
                                        bool is_training)>
        forward;
    // The gradient of every input i with needs[i] (its data's shape; undefined: zero) from the outputs'
    // gradients (zeros for an output nothing downstream differentiates). Null: no gradient flows through.
    std::function<void(const std::shared_ptr<void>& state, const std::vector<Value>& inputs,
                       const std::vector<Tensor>& output_grads, const std::vector<bool>& needs,
                       std::vector<Tensor>& input_grads)>
        backward;
};

// The user function over `inputs`; `op_name` is what Function::op_name reports (CNTK: the class name).
FunctionPtr user_function(const std::string& op_name, const std::vector<Variable>& inputs,
                          std::shared_ptr<const UserFunctionCallbacks> callbacks,
                          const std::string& name = "");
// The callbacks of a user function (null for other Functions).
std::shared_ptr<const UserFunctionCallbacks> user_function_callbacks(const Function& f);

}  // namespace ctk
