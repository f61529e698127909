// The C ABI's variables, initializers and functions: building, loading, saving, cloning and evaluating
// graphs.
#include <string>
#include <vector>
#include "c/handles.h"
#include "ctk/core/error.h"
#include "ctk/formats/model.h"
#include "ctk/graph/graph_ops.h"

using namespace ctk;        // NOLINT(google-build-using-namespace): the C entry points below
using namespace ctk::capi;  // NOLINT(google-build-using-namespace)

namespace {

std::vector<Axis> dynamic_axes_arg(int32_t dynamic_axes) {
    switch (dynamic_axes) {
        case CTK_AXES_NONE:
            return {};
        case CTK_AXES_BATCH:
            return default_batch_axes();
        case CTK_AXES_SEQUENCE:
            return default_sequence_axes();
        default:
            CTK_THROW(ValueError, "dynamic_axes is ", dynamic_axes,
                      ", not CTK_AXES_NONE (0), CTK_AXES_BATCH (1) or CTK_AXES_SEQUENCE (2)");
    }
}

int rank_arg(int32_t rank) {
    return rank == 2147483647 ? kSentinelRank : rank;
}

ModelFormat format_arg(int32_t format) {
    CTK_CHECK(format >= CTK_FORMAT_CNTK_V2 && format <= CTK_FORMAT_CNTK_V1, ValueError, "format ", format,
              " is not CTK_FORMAT_CNTK_V2 (0), CTK_FORMAT_ONNX (1) or CTK_FORMAT_CNTK_V1 (2)");
    return static_cast<ModelFormat>(format);
}

VariableMap pairs_arg(const ctk_variable_t* const* from, const ctk_variable_t* const* to, int64_t n,
                      const char* from_name, const char* to_name) {
    const std::vector<Variable> a = variables_arg(from, n, from_name);
    const std::vector<Variable> b = variables_arg(to, n, to_name);
    VariableMap map;
    for (size_t i = 0; i < a.size(); ++i) map[a[i]] = b[i];
    return map;
}

}  // namespace

extern "C" {

// ---- variables ----

ctk_status ctk_input_variable(const int64_t* shape, int32_t rank, int32_t dtype, int32_t dynamic_axes,
                              int32_t is_sparse, int32_t needs_gradient, const char* name,
                              ctk_variable_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        const Variable v =
            input_variable(dims_arg(shape, rank, "shape"), dtype_arg(dtype, "dtype"), needs_gradient != 0,
                           is_sparse != 0, dynamic_axes_arg(dynamic_axes), name_arg(name));
        *out = new_variable(v);
    });
}

ctk_status ctk_parameter(const int64_t* shape, int32_t rank, int32_t dtype, const ctk_initializer_t* init,
                         const char* name, ctk_variable_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        const Variable v = parameter(dims_arg(shape, rank, "shape"), handle(init, "init").init,
                                     dtype_arg(dtype, "dtype"), name_arg(name));
        *out = new_variable(v);
    });
}

ctk_status ctk_parameter_from_data(const int64_t* shape, int32_t rank, int32_t dtype, const void* data,
                                   const char* name, ctk_variable_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        const Tensor t = copy_in(dims_arg(shape, rank, "shape"), dtype_arg(dtype, "dtype"), data, "data");
        *out = new_variable(parameter_from(t, name_arg(name)));
    });
}

ctk_status ctk_constant_from_data(const int64_t* shape, int32_t rank, int32_t dtype, const void* data,
                                  const char* name, ctk_variable_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        const Tensor t = copy_in(dims_arg(shape, rank, "shape"), dtype_arg(dtype, "dtype"), data, "data");
        *out = new_variable(constant(t, name_arg(name)));
    });
}

ctk_status ctk_constant(const int64_t* shape, int32_t rank, int32_t dtype, double value, const char* name,
                        ctk_variable_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        *out = new_variable(
            constant(dims_arg(shape, rank, "shape"), value, dtype_arg(dtype, "dtype"), name_arg(name)));
    });
}

ctk_status ctk_placeholder(const int64_t* shape, int32_t rank, int32_t dynamic_axes, const char* name,
                           ctk_variable_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        if (shape == nullptr) {
            *out = new_variable(placeholder(name_arg(name)));
        } else {
            *out = new_variable(
                placeholder(dims_arg(shape, rank, "shape"), dynamic_axes_arg(dynamic_axes), name_arg(name)));
        }
    });
}

void ctk_variable_release(ctk_variable_t* v) {
    release(v);
}

ctk_status ctk_variable_retain(const ctk_variable_t* v, ctk_variable_t** out) {
    return guarded(__func__, [&] {
        const Variable& var = handle(v, "v").var;
        *required(out, "out") = new_variable(var);
    });
}

ctk_status ctk_variable_kind(const ctk_variable_t* v, int32_t* kind) {
    return guarded(__func__, [&] {
        const Variable& var = handle(v, "v").var;
        *required(kind, "kind") = static_cast<int32_t>(var.kind());
    });
}

ctk_status ctk_variable_name(const ctk_variable_t* v, const char** name) {
    return guarded(__func__, [&] {
        const Variable& var = handle(v, "v").var;
        *required(name, "name") = var.name().c_str();
    });
}

ctk_status ctk_variable_uid(const ctk_variable_t* v, const char** uid) {
    return guarded(__func__, [&] {
        const Variable& var = handle(v, "v").var;
        *required(uid, "uid") = var.uid().c_str();
    });
}

ctk_status ctk_variable_dtype(const ctk_variable_t* v, int32_t* dtype) {
    return guarded(__func__, [&] {
        const Variable& var = handle(v, "v").var;
        *required(dtype, "dtype") = static_cast<int32_t>(var.dtype());
    });
}

ctk_status ctk_variable_shape(const ctk_variable_t* v, int64_t* dims, int32_t capacity, int32_t* rank) {
    return guarded(__func__, [&] {
        const Variable& var = handle(v, "v").var;
        CTK_CHECK(var.shape_known(), ShapeError, var.to_string(),
                  " has no shape yet (a placeholder not bound)");
        write_dims(var.shape(), dims, capacity, rank);
    });
}

ctk_status ctk_variable_dynamic_axes(const ctk_variable_t* v, int32_t* dynamic_axes) {
    return guarded(__func__, [&] {
        const Variable& var = handle(v, "v").var;
        *required(dynamic_axes, "dynamic_axes") = var.has_sequence_axis() ? CTK_AXES_SEQUENCE
                                                  : var.has_batch_axis()  ? CTK_AXES_BATCH
                                                                          : CTK_AXES_NONE;
    });
}

ctk_status ctk_variable_is_sparse(const ctk_variable_t* v, int32_t* is_sparse) {
    return guarded(__func__, [&] {
        const Variable& var = handle(v, "v").var;
        *required(is_sparse, "is_sparse") = var.is_sparse() ? 1 : 0;
    });
}

ctk_status ctk_variable_needs_gradient(const ctk_variable_t* v, int32_t* needs_gradient) {
    return guarded(__func__, [&] {
        const Variable& var = handle(v, "v").var;
        *required(needs_gradient, "needs_gradient") = var.needs_gradient() ? 1 : 0;
    });
}

ctk_status ctk_variable_equals(const ctk_variable_t* a, const ctk_variable_t* b, int32_t* equal) {
    return guarded(__func__, [&] {
        const bool same = handle(a, "a").var == handle(b, "b").var;
        *required(equal, "equal") = same ? 1 : 0;
    });
}

ctk_status ctk_variable_owner(const ctk_variable_t* v, ctk_function_t** out) {
    return guarded(__func__, [&] {
        const FunctionPtr owner = handle(v, "v").var.owner();
        *required(out, "out") = owner ? new_function(owner) : nullptr;
    });
}

ctk_status ctk_variable_as_function(const ctk_variable_t* v, ctk_function_t** out) {
    return guarded(__func__, [&] {
        const FunctionPtr f = as_function(handle(v, "v").var);
        *required(out, "out") = new_function(f);
    });
}

ctk_status ctk_variable_get_value(const ctk_variable_t* v, int32_t dtype, void* data, int64_t count) {
    return guarded(__func__, [&] {
        const Variable& var = handle(v, "v").var;
        CTK_CHECK(var.is_parameter() || var.is_constant(), ValueError, var.to_string(),
                  " is not a parameter or constant: only those hold a value");
        copy_out(var.value(), dtype, data, count, var.to_string().c_str());
    });
}

ctk_status ctk_variable_set_value(const ctk_variable_t* v, int32_t dtype, const void* data, int64_t count) {
    return guarded(__func__, [&] {
        const Variable& var = handle(v, "v").var;
        CTK_CHECK(var.is_parameter() || var.is_constant(), ValueError, var.to_string(),
                  " is not a parameter or constant: only those hold a value");
        CTK_CHECK(!var.has_inferred_dims(), ShapeError, var.to_string(),
                  " has inferred dims still: build the graph that fixes them first");
        const Shape shape(var.shape());
        CTK_CHECK(count == shape.numel(), ShapeError, var.to_string(), " has ", shape.numel(),
                  " elements; the data has ", count);
        var.set_value(copy_in(var.shape(), dtype_arg(dtype, "dtype"), data, "data"));
    });
}

ctk_status ctk_variable_to_string(const ctk_variable_t* v, char* buf, int64_t capacity, int64_t* length) {
    return guarded(__func__,
                   [&] { write_text(handle(v, "v").var.to_string(), buf, capacity, length, "the text"); });
}

// ---- initializers ----

ctk_status ctk_initializer_create(int32_t kind, double scale, int32_t output_rank, int32_t filter_rank,
                                  uint64_t seed, ctk_initializer_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        const int o = rank_arg(output_rank), f = rank_arg(filter_rank);
        Initializer init;
        switch (kind) {
            case CTK_INIT_CONSTANT:
                init = constant_initializer(scale);
                break;
            case CTK_INIT_UNIFORM:
                init = uniform(scale, seed);
                break;
            case CTK_INIT_NORMAL:
                init = normal(scale, o, f, seed);
                break;
            case CTK_INIT_TRUNCATED_NORMAL:
                init = truncated_normal(scale, seed);
                break;
            case CTK_INIT_XAVIER:
                init = xavier(scale, o, f, seed);
                break;
            case CTK_INIT_GLOROT_UNIFORM:
                init = glorot_uniform(scale, o, f, seed);
                break;
            case CTK_INIT_GLOROT_NORMAL:
                init = glorot_normal(scale, o, f, seed);
                break;
            case CTK_INIT_HE_UNIFORM:
                init = he_uniform(scale, o, f, seed);
                break;
            case CTK_INIT_HE_NORMAL:
                init = he_normal(scale, o, f, seed);
                break;
            default:
                CTK_THROW(ValueError, "kind ", kind, " is not a CTK_INIT_* kind (0-8)");
        }
        auto* h = new ctk_initializer;
        h->init = init;
        *out = h;
    });
}

ctk_status ctk_initializer_bilinear(int64_t kernel_width, int64_t kernel_height, ctk_initializer_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        auto* h = new ctk_initializer;
        h->init = bilinear(kernel_width, kernel_height);
        *out = h;
    });
}

void ctk_initializer_release(ctk_initializer_t* init) {
    release(init);
}

// ---- functions ----

ctk_status ctk_function_load(const char* path, int32_t format, ctk_function_t** out) {
    return guarded(__func__, [&] {
        const std::string file = required(path, "path");
        required(out, "out");
        const FunctionPtr f =
            format == CTK_FORMAT_AUTO ? load_model(file) : load_model(file, format_arg(format));
        *out = new_function(f);
    });
}

ctk_status ctk_function_load_buffer(const void* bytes, int64_t size, ctk_function_t** out) {
    return guarded(__func__, [&] {
        required(bytes, "bytes");
        required(out, "out");
        CTK_CHECK(size > 0, ValueError, "size ", size, " is not positive");
        const std::string data(static_cast<const char*>(bytes), static_cast<size_t>(size));
        *out = new_function(deserialize_cntk_v2_model(data, "<buffer>"));
    });
}

ctk_status ctk_function_save(const ctk_function_t* f, const char* path, int32_t format) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        save_model(fn, required(path, "path"), format_arg(format));
    });
}

ctk_status ctk_function_save_buffer(const ctk_function_t* f, void* buf, int64_t capacity, int64_t* size) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        write_bytes(serialize_cntk_v2_model(fn), buf, capacity, size, "the model");
    });
}

void ctk_function_release(ctk_function_t* f) {
    release(f);
}

ctk_status ctk_function_retain(const ctk_function_t* f, ctk_function_t** out) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        *required(out, "out") = new_function(fn);
    });
}

ctk_status ctk_function_name(const ctk_function_t* f, const char** name) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        *required(name, "name") = fn->name().c_str();
    });
}

ctk_status ctk_function_set_name(ctk_function_t* f, const char* name) {
    return guarded(__func__, [&] { handle(f, "f").fn->set_name(required(name, "name")); });
}

ctk_status ctk_function_uid(const ctk_function_t* f, const char** uid) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        *required(uid, "uid") = fn->uid().c_str();
    });
}

ctk_status ctk_function_op_name(const ctk_function_t* f, const char** op_name) {
    return guarded(__func__, [&] {
        ctk_function& h = handle(f, "f");
        required(op_name, "op_name");
        h.op_name = h.fn->op_name();
        *op_name = h.op_name.c_str();
    });
}

ctk_status ctk_function_variables(const ctk_function_t* f, int32_t which, ctk_variable_t** out,
                                  int64_t capacity, int64_t* count) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        std::vector<Variable> vars;
        switch (which) {
            case CTK_VARS_ARGUMENTS:
                vars = fn->arguments();
                break;
            case CTK_VARS_OUTPUTS:
                vars = fn->outputs();
                break;
            case CTK_VARS_INPUTS:
                vars = fn->inputs();
                break;
            case CTK_VARS_PARAMETERS:
                vars = fn->parameters();
                break;
            case CTK_VARS_CONSTANTS:
                vars = fn->constants();
                break;
            case CTK_VARS_PLACEHOLDERS:
                vars = fn->placeholders();
                break;
            default:
                CTK_THROW(ValueError, "which ", which, " is not a CTK_VARS_* list (0-5)");
        }
        write_list(vars, out, capacity, count, "out", new_variable);
    });
}

ctk_status ctk_function_output(const ctk_function_t* f, ctk_variable_t** out) {
    return guarded(__func__, [&] {
        const Variable v = handle(f, "f").fn->output();
        *required(out, "out") = new_variable(v);
    });
}

ctk_status ctk_function_find_by_name(const ctk_function_t* f, const char* name, int32_t nested,
                                     ctk_function_t** out) {
    return guarded(__func__, [&] {
        const FunctionPtr found = handle(f, "f").fn->find_by_name(required(name, "name"), nested != 0);
        *required(out, "out") = found ? new_function(found) : nullptr;
    });
}

ctk_status ctk_function_find_all_with_name(const ctk_function_t* f, const char* name, int32_t nested,
                                           ctk_function_t** out, int64_t capacity, int64_t* count) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        write_list(fn->find_all_with_name(required(name, "name"), nested != 0), out, capacity, count, "out",
                   new_function);
    });
}

ctk_status ctk_function_clone(const ctk_function_t* f, int32_t method, const ctk_variable_t* const* from,
                              const ctk_variable_t* const* to, int64_t n, ctk_function_t** out) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        required(out, "out");
        CTK_CHECK(method >= CTK_CLONE && method <= CTK_FREEZE, ValueError, "method ", method,
                  " is not CTK_CLONE (0), CTK_SHARE (1) or CTK_FREEZE (2)");
        const CloneMethod m = method == CTK_CLONE   ? CloneMethod::clone
                              : method == CTK_SHARE ? CloneMethod::share
                                                    : CloneMethod::freeze;
        *out = new_function(fn->clone(m, pairs_arg(from, to, n, "from", "to")));
    });
}

ctk_status ctk_function_replace_placeholders(ctk_function_t* f, const ctk_variable_t* const* placeholders,
                                             const ctk_variable_t* const* replacements, int64_t n) {
    return guarded(__func__, [&] {
        ctk_function& h = handle(f, "f");
        h.fn = h.fn->replace_placeholders(
            pairs_arg(placeholders, replacements, n, "placeholders", "replacements"));
    });
}

ctk_status ctk_function_call(const ctk_function_t* f, const ctk_variable_t* const* args, int64_t n,
                             ctk_function_t** out) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        required(out, "out");
        *out = new_function((*fn)(variables_arg(args, n, "args")));
    });
}

ctk_status ctk_combine(const ctk_variable_t* const* outputs, int64_t n, const char* name,
                       ctk_function_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        const std::vector<Variable> vars = variables_arg(outputs, n, "outputs");
        CTK_CHECK(!vars.empty(), ValueError, "combine needs at least one output");
        *out = new_function(combine(vars, name_arg(name)));
    });
}

ctk_status ctk_function_as_composite(const ctk_function_t* f, const char* name, ctk_function_t** out) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        required(out, "out");
        *out = new_function(combine(fn->outputs(), name_arg(name)));
    });
}

ctk_status ctk_function_evaluate(const ctk_function_t* f, const ctk_variable_t* const* inputs,
                                 const ctk_value_t* const* values, int64_t n_in,
                                 const ctk_variable_t* const* outputs, int64_t n_out, ctk_device device,
                                 ctk_value_t** results) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        const std::vector<Variable> outs = variables_arg(outputs, n_out, "outputs");
        CTK_CHECK(!outs.empty(), ValueError, "no outputs asked for");
        required(results, "results");
        const ValueMap args = bind_inputs(inputs, values, n_in);
        ValueMap got = fn->eval(args, outs, device_arg(device));
        for (const Variable& v : outs)  // every result first, so that nothing is allocated for a failure
            CTK_CHECK(got.count(v) != 0, ValueError, "the evaluation produced no value for ", v.to_string());
        for (size_t i = 0; i < outs.size(); ++i) results[i] = new_value(got.at(outs[i]));
    });
}

ctk_status ctk_function_grad(const ctk_function_t* f, const ctk_variable_t* const* inputs,
                             const ctk_value_t* const* values, int64_t n_in, const ctk_variable_t* const* wrt,
                             int64_t n_wrt, const ctk_variable_t* of, ctk_device device,
                             ctk_value_t** results) {
    return guarded(__func__, [&] {
        const FunctionPtr& fn = handle(f, "f").fn;
        const std::vector<Variable> targets = variables_arg(wrt, n_wrt, "wrt");
        CTK_CHECK(!targets.empty(), ValueError, "no variables to differentiate with respect to");
        required(results, "results");
        const Variable root = of == nullptr ? Variable() : handle(of, "of").var;
        const ValueMap args = bind_inputs(inputs, values, n_in);
        ValueMap got = fn->grad(args, targets, root, device_arg(device));
        for (const Variable& v : targets)
            CTK_CHECK(got.count(v) != 0, ValueError, "no gradient was computed for ", v.to_string());
        for (size_t i = 0; i < targets.size(); ++i) results[i] = new_value(got.at(targets[i]));
    });
}

ctk_status ctk_function_to_string(const ctk_function_t* f, char* buf, int64_t capacity, int64_t* length) {
    return guarded(__func__,
                   [&] { write_text(handle(f, "f").fn->to_string(), buf, capacity, length, "the text"); });
}

}  // extern "C"
