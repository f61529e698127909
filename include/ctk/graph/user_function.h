// User functions (CNTK's UserFunction): an op whose shape rule, forward and backward are callbacks, for
// computations no built-in op expresses (CNTK users wrote them in Python with NumPy; the Python package
// builds its UserFunction class on this). A user function joins graphs like any op: it is differentiated
// through, cloned (sharing its callbacks), evaluated on any device (it gets the values where the
// evaluation runs and whatever it returns is moved there). It cannot run inside a recurrent loop. A CNTK v2
// model file holds one as CNTK wrote it (a "UserDefinedFunction" entry with the state its `serialize`
// callback returns); loading it back needs a deserializer that rebuilds the callbacks from that state
// (CNTK's Python package re-imports the user's class; ctk's does the same).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ctk/core/dictionary.h"
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
    // The state a model file keeps for this function (CNTK's Function::Serialize of a user function).
    // Null: the function cannot be saved.
    std::function<Dictionary()> serialize;
};

// A user function as a model file holds it: the uid it had when saved, its name, its inputs (rebuilt
// from the file) and the state its `serialize` callback returned.
struct SavedUserFunction {
    std::string uid;
    std::string name;
    std::vector<Variable> inputs;
    Dictionary state;
};
// Rebuilds a saved user function (CNTK's UDFDeserializeCallback). Returns the Function that stands
// where the saved one stood: its outputs take the saved outputs' places.
using UserFunctionDeserializer = std::function<FunctionPtr(const SavedUserFunction& saved)>;
// A deserializer that rebuilds each saved user function with the callbacks of the user function of the
// same uid in `graph` (reading back a checkpoint of the graph being trained); ValueError for one it lacks.
UserFunctionDeserializer live_user_functions(const FunctionPtr& graph);

// The user function over `inputs`; `op_name` is what Function::op_name reports (CNTK: the class name).
FunctionPtr user_function(const std::string& op_name, const std::vector<Variable>& inputs,
                          std::shared_ptr<const UserFunctionCallbacks> callbacks,
                          const std::string& name = "");
// The callbacks of a user function (null for other Functions).
std::shared_ptr<const UserFunctionCallbacks> user_function_callbacks(const Function& f);

}  // namespace ctk
