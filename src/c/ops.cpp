// The C ABI's graph ops: element-wise ops and losses by name (from the op lists, so a new element-wise op
// is reachable from C without touching this file), and one entry point per op with attributes.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>
#include "c/handles.h"
#include "ctk/core/error.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/kernels/kernel_op_list.h"

using namespace ctk;        // NOLINT(google-build-using-namespace): the C entry points below
using namespace ctk::capi;  // NOLINT(google-build-using-namespace)

namespace {

using UnaryFn = std::function<FunctionPtr(const Variable&, const std::string&)>;
using BinaryFn = std::function<FunctionPtr(const Variable&, const Variable&, const std::string&)>;

const std::unordered_map<std::string, UnaryFn>& unary_ops() {
    static const std::unordered_map<std::string, UnaryFn> table = [] {
        std::unordered_map<std::string, UnaryFn> t;
#define CTK_C_UNARY(op, attrs) t[#op] = [](const Variable& x, const std::string& n) { return ctk::op(x, n); };
        CTK_UNARY_OPS(CTK_C_UNARY)
#undef CTK_C_UNARY
        t["stop_gradient"] = [](const Variable& x, const std::string& n) { return stop_gradient(x, n); };
        t["alias"] = [](const Variable& x, const std::string& n) { return alias(x, n); };
        t["straight_through"] = [](const Variable& x, const std::string& n) {
            return straight_through(x, n);
        };
        return t;
    }();
    return table;
}

const std::unordered_map<std::string, BinaryFn>& binary_ops() {
    static const std::unordered_map<std::string, BinaryFn> table = [] {
        std::unordered_map<std::string, BinaryFn> t;
#define CTK_C_BINARY(op, attrs) \
    t[#op] = [](const Variable& a, const Variable& b, const std::string& n) { return ctk::op(a, b, n); };
        CTK_BINARY_OPS(CTK_C_BINARY)
#undef CTK_C_BINARY
        t["cross_entropy_with_softmax"] = [](const Variable& a, const Variable& b, const std::string& n) {
            return cross_entropy_with_softmax(a, b, Axis(-1), n);
        };
        t["classification_error"] = [](const Variable& a, const Variable& b, const std::string& n) {
            return classification_error(a, b, 1, Axis(-1), n);
        };
        t["squared_error"] = [](const Variable& a, const Variable& b, const std::string& n) {
            return squared_error(a, b, n);
        };
        t["binary_cross_entropy"] = [](const Variable& a, const Variable& b, const std::string& n) {
            return binary_cross_entropy(a, b, n);
        };
        t["cosine_distance"] = [](const Variable& a, const Variable& b, const std::string& n) {
            return cosine_distance(a, b, n);
        };
        t["times_transpose"] = [](const Variable& a, const Variable& b, const std::string& n) {
            return times_transpose(a, b, n);
        };
        return t;
    }();
    return table;
}

template <typename Table>
const typename Table::mapped_type& lookup(const Table& table, const char* op, const char* family) {
    const std::string name = required(op, "op");
    auto it = table.find(name);
    if (it == table.end()) {
        std::vector<std::string> names;
        for (const auto& [k, fn] : table) names.push_back(k);
        std::sort(names.begin(), names.end());
        std::string known;
        for (const std::string& k : names) known += (known.empty() ? "" : ", ") + k;
        CTK_THROW(ValueError, "'", name, "' is not a ", family, " op; the ", family, " ops are: ", known);
    }
    return it->second;
}

Axis axis_arg(int32_t axis) {
    switch (axis) {
        case CTK_AXIS_ALL_STATIC:
            return Axis::all_static_axes();
        case CTK_AXIS_ALL:
            return Axis::all_axes();
        case CTK_AXIS_BATCH:
            return Axis::default_batch_axis();
        case CTK_AXIS_SEQUENCE:
            return Axis::default_dynamic_axis();
        default:
            CTK_CHECK(axis > -64 && axis < 64, ValueError, "axis ", axis,
                      " is neither a static axis index nor a CTK_AXIS_* constant");
            return Axis(axis);
    }
}

std::optional<Axis> optional_axis(int32_t axis) {
    if (axis == CTK_AXIS_NONE) return std::nullopt;
    return axis_arg(axis);
}

std::vector<bool> flags_arg(const int32_t* flags, int32_t n, const char* argument) {
    CTK_CHECK(n >= 0, ValueError, "argument '", argument, "': count ", n, " is negative");
    if (n > 0) required(flags, argument);
    std::vector<bool> out;
    for (int32_t i = 0; i < n; ++i) out.push_back(flags[i] != 0);
    return out;
}

const Variable& var(const ctk_variable_t* v, const char* argument) {
    return handle(v, argument).var;
}

// A variable that may be NULL (an undefined Variable then).
Variable optional_var(const ctk_variable_t* v, const char* argument) {
    return v == nullptr ? Variable() : handle(v, argument).var;
}

template <typename Make>
ctk_status make_op(const char* function, ctk_function_t** out, Make&& make) {
    return guarded(function, [&] {
        required(out, "out");
        *out = new_function(make());
    });
}

}  // namespace

extern "C" {

ctk_status ctk_unary(const char* op, const ctk_variable_t* x, const char* name, ctk_function_t** out) {
    return make_op(__func__, out,
                   [&] { return lookup(unary_ops(), op, "unary")(var(x, "x"), name_arg(name)); });
}

ctk_status ctk_unary_alpha(const char* op, const ctk_variable_t* x, double alpha, const char* name,
                           ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        const std::string which = required(op, "op");
        if (which == "elu") return elu(var(x, "x"), alpha, name_arg(name));
        CTK_CHECK(which == "leaky_relu", ValueError, "'", which,
                  "' takes no alpha; 'elu' and 'leaky_relu' do");
        return leaky_relu(var(x, "x"), alpha, name_arg(name));
    });
}

ctk_status ctk_binary(const char* op, const ctk_variable_t* a, const ctk_variable_t* b, const char* name,
                      ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        return lookup(binary_ops(), op, "binary")(var(a, "a"), var(b, "b"), name_arg(name));
    });
}

ctk_status ctk_clip(const ctk_variable_t* x, double min_value, double max_value, const char* name,
                    ctk_function_t** out) {
    return make_op(__func__, out, [&] { return clip(var(x, "x"), min_value, max_value, name_arg(name)); });
}

ctk_status ctk_element_select(const ctk_variable_t* condition, const ctk_variable_t* then_value,
                              const ctk_variable_t* else_value, const char* name, ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        return element_select(var(condition, "condition"), var(then_value, "then_value"),
                              var(else_value, "else_value"), name_arg(name));
    });
}

ctk_status ctk_times(const ctk_variable_t* x, const ctk_variable_t* w, int32_t output_rank,
                     int32_t infer_input_rank_to_map, const char* name, ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        return times(var(x, "x"), var(w, "w"), output_rank, infer_input_rank_to_map, name_arg(name));
    });
}

ctk_status ctk_axis_op(const char* op, const ctk_variable_t* x, int32_t axis, const char* name,
                       ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        const std::string which = required(op, "op");
        const Variable& v = var(x, "x");
        const std::optional<Axis> a = optional_axis(axis);
        if (which == "softmax") return softmax(v, a, name_arg(name));
        if (which == "log_softmax") return log_softmax(v, a, name_arg(name));
        if (which == "hardmax") return hardmax(v, a, name_arg(name));
        if (which == "argmax") return argmax(v, a, name_arg(name));
        CTK_CHECK(which == "argmin", ValueError, "'", which,
                  "' is not an axis op (softmax, log_softmax, hardmax, argmax, argmin)");
        return argmin(v, a, name_arg(name));
    });
}

ctk_status ctk_reduce(const char* op, const ctk_variable_t* x, const int32_t* axes, int32_t n,
                      int32_t keepdims, const char* name, ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        const std::string which = required(op, "op");
        CTK_CHECK(n >= 0, ValueError, "axis count ", n, " is negative");
        if (n > 0) required(axes, "axes");
        std::vector<Axis> list;
        for (int32_t i = 0; i < n; ++i) list.push_back(axis_arg(axes[i]));
        if (list.empty()) list.push_back(Axis::all_static_axes());
        const Variable& v = var(x, "x");
        const bool keep = keepdims != 0;
        const std::string nm = name_arg(name);
#define CTK_C_REDUCE(fn) \
    if (which == #fn) return fn(v, list, keep, nm);
        CTK_C_REDUCE(reduce_sum)
        CTK_C_REDUCE(reduce_mean)
        CTK_C_REDUCE(reduce_max)
        CTK_C_REDUCE(reduce_min)
        CTK_C_REDUCE(reduce_prod)
        CTK_C_REDUCE(reduce_log_sum_exp)
        CTK_C_REDUCE(reduce_l1)
        CTK_C_REDUCE(reduce_l2)
        CTK_C_REDUCE(reduce_sum_square)
#undef CTK_C_REDUCE
        CTK_THROW(ValueError, "'", which, "' is not a reduction (reduce_sum, reduce_mean, reduce_max, ...)");
    });
}

ctk_status ctk_classification_error(const ctk_variable_t* output, const ctk_variable_t* target, int64_t top_n,
                                    int32_t axis, const char* name, ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        const Axis a = axis == CTK_AXIS_NONE ? Axis(-1) : axis_arg(axis);
        return classification_error(var(output, "output"), var(target, "target"), top_n, a, name_arg(name));
    });
}

ctk_status ctk_reshape(const ctk_variable_t* x, const int64_t* shape, int32_t rank, const char* name,
                       ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        return reshape(var(x, "x"), dims_arg(shape, rank, "shape"), {}, {}, name_arg(name));
    });
}

ctk_status ctk_transpose(const ctk_variable_t* x, const int32_t* perm, int32_t rank, const char* name,
                         ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        CTK_CHECK(rank >= 0 && rank <= 64, ValueError, "rank ", rank, " is outside 0-64");
        if (rank > 0) required(perm, "perm");
        return transpose(var(x, "x"), std::vector<int>(perm, perm + rank), name_arg(name));
    });
}

ctk_status ctk_splice(const ctk_variable_t* const* operands, int64_t n, int32_t axis, const char* name,
                      ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        const std::vector<Variable> ops = variables_arg(operands, n, "operands");
        CTK_CHECK(!ops.empty(), ValueError, "splice needs at least one operand");
        return splice(ops, axis == CTK_AXIS_NONE ? Axis(-1) : axis_arg(axis), name_arg(name));
    });
}

ctk_status ctk_slice(const ctk_variable_t* x, const int32_t* axes, const int64_t* begin, const int64_t* end,
                     const int64_t* strides, int32_t n, const char* name, ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        CTK_CHECK(n >= 1 && n <= 64, ValueError, "axis count ", n, " is outside 1-64");
        required(axes, "axes");
        required(begin, "begin");
        required(end, "end");
        std::vector<Axis> a;
        Dims b(begin, begin + n), e(end, end + n), st;
        for (int32_t i = 0; i < n; ++i) {
            a.push_back(axis_arg(axes[i]));
            st.push_back(strides == nullptr || strides[i] == 0 ? 1 : strides[i]);
        }
        return slice(var(x, "x"), a, b, e, st, name_arg(name));
    });
}

ctk_status ctk_sum(const ctk_variable_t* const* operands, int64_t n, const char* name, ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        const std::vector<Variable> ops = variables_arg(operands, n, "operands");
        CTK_CHECK(!ops.empty(), ValueError, "sum needs at least one operand");
        return sum(ops, name_arg(name));
    });
}

ctk_status ctk_cast(const ctk_variable_t* x, int32_t dtype, const char* name, ctk_function_t** out) {
    return make_op(__func__, out,
                   [&] { return cast(var(x, "x"), dtype_arg(dtype, "dtype"), name_arg(name)); });
}

ctk_status ctk_dropout(const ctk_variable_t* x, double rate, uint64_t seed, const char* name,
                       ctk_function_t** out) {
    return make_op(__func__, out, [&] { return dropout(var(x, "x"), rate, seed, name_arg(name)); });
}

ctk_status ctk_convolution(const ctk_variable_t* w, const ctk_variable_t* x, const int64_t* strides,
                           int32_t n_strides, const int32_t* auto_padding, int32_t n_padding,
                           const char* name, ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        Dims s = dims_arg(strides, n_strides, "strides");
        std::vector<bool> pad = flags_arg(auto_padding, n_padding, "auto_padding");
        if (s.empty()) s = {1};
        if (pad.empty()) pad = {true};
        return convolution(var(w, "w"), var(x, "x"), s, pad, {1}, 1, name_arg(name));
    });
}

ctk_status ctk_pooling(const ctk_variable_t* x, int32_t type, const int64_t* window, int32_t n_window,
                       const int64_t* strides, int32_t n_strides, const int32_t* auto_padding,
                       int32_t n_padding, int32_t ceil_out_dim, int32_t include_pad, const char* name,
                       ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        CTK_CHECK(type == CTK_POOL_MAX || type == CTK_POOL_AVERAGE, ValueError, "type ", type,
                  " is not CTK_POOL_MAX (0) or CTK_POOL_AVERAGE (1)");
        Dims s = dims_arg(strides, n_strides, "strides");
        std::vector<bool> pad = flags_arg(auto_padding, n_padding, "auto_padding");
        if (s.empty()) s = {1};
        if (pad.empty()) pad = {false};
        return pooling(var(x, "x"), static_cast<PoolingType>(type), dims_arg(window, n_window, "window"), s,
                       pad, ceil_out_dim != 0, include_pad != 0, name_arg(name));
    });
}

ctk_status ctk_batch_normalization(const ctk_variable_t* x, const ctk_variable_t* scale,
                                   const ctk_variable_t* bias, const ctk_variable_t* running_mean,
                                   const ctk_variable_t* running_var, const ctk_variable_t* running_count,
                                   int32_t spatial, double normalization_time_constant,
                                   double blend_time_constant, double epsilon, const char* name,
                                   ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        return batch_normalization(var(x, "x"), var(scale, "scale"), var(bias, "bias"),
                                   var(running_mean, "running_mean"), var(running_var, "running_var"),
                                   var(running_count, "running_count"), spatial != 0,
                                   normalization_time_constant, blend_time_constant, epsilon, name_arg(name));
    });
}

ctk_status ctk_past_value(const ctk_variable_t* x, const ctk_variable_t* initial_state, int64_t time_step,
                          const char* name, ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        return sequence::past_value(var(x, "x"), optional_var(initial_state, "initial_state"), time_step,
                                    name_arg(name));
    });
}

ctk_status ctk_future_value(const ctk_variable_t* x, const ctk_variable_t* initial_state, int64_t time_step,
                            const char* name, ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        return sequence::future_value(var(x, "x"), optional_var(initial_state, "initial_state"), time_step,
                                      name_arg(name));
    });
}

ctk_status ctk_sequence_op(const char* op, const ctk_variable_t* x, const char* name, ctk_function_t** out) {
    return make_op(__func__, out, [&] {
        const std::string which = required(op, "op");
        const Variable& v = var(x, "x");
        const std::string nm = name_arg(name);
        if (which == "first") return sequence::first(v, nm);
        if (which == "last") return sequence::last(v, nm);
        if (which == "reduce_sum") return sequence::reduce_sum(v, nm);
        if (which == "reduce_max") return sequence::reduce_max(v, nm);
        if (which == "softmax") return sequence::softmax(v, nm);
        if (which == "is_first") return sequence::is_first(v, nm);
        if (which == "is_last") return sequence::is_last(v, nm);
        CTK_CHECK(which == "unpack", ValueError, "'", which,
                  "' is not a sequence op (first, last, reduce_sum, reduce_max, softmax, is_first, is_last, "
                  "unpack)");
        return sequence::unpack(v, 0.0, nm);
    });
}

ctk_status ctk_sequence_broadcast_as(const ctk_variable_t* x, const ctk_variable_t* like, const char* name,
                                     ctk_function_t** out) {
    return make_op(__func__, out,
                   [&] { return sequence::broadcast_as(var(x, "x"), var(like, "like"), name_arg(name)); });
}

}  // extern "C"
