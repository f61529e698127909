// Bindings of the graph ops (graph_ops.h) with CNTK 2.7's Python names, argument order and defaults:
// cntk.ops.* at the top of _ctk, cntk.ops.sequence.* in _ctk.sequence. Operands may be Variables,
// Functions, numbers or arrays (constants, as CNTK's sanitize_input).
#include "convert.h"
#include "op_forms.h"

namespace ctk::python {

namespace {

// Two operands with the dtype of whichever is a graph node; with none, CNTK's get_data_type: float64
// when one is a float64 NumPy array, else float32 (lists and numbers).
std::pair<Variable, Variable> operands(const py::handle& a, const py::handle& b) {
    DataType dt = DataType::f32;
    bool node = false;
    for (const py::handle& h : {a, b}) {
        if (py::isinstance<Variable>(h) || py::isinstance<Function>(h)) {
            dt = to_variable(h).dtype();
            node = true;
            break;
        }
    }
    if (!node)
        for (const py::handle& h : {a, b})
            if (py::isinstance<py::array>(h) &&
                py::reinterpret_borrow<py::array>(h).dtype().is(py::dtype::of<double>()))
                dt = DataType::f64;
    return {to_variable(a, dt), to_variable(b, dt)};
}

// CNTK's axis arguments: None (all static axes), an int or Axis, or a list of them.
std::vector<Axis> axes_arg(const py::handle& axis) {
    if (axis.is_none()) return {Axis::all_static_axes()};
    return axis_list_arg(axis);
}

std::optional<Axis> optional_axis(const py::handle& axis) {
    if (axis.is_none()) return std::nullopt;
    return axis_arg(axis);
}

// An integer within a C int, or None.
std::optional<int> optional_int(const py::handle& value, const char* what) {
    if (value.is_none()) return std::nullopt;
    return int32_arg(value, what);
}

// CNTK's Axis.new_leading_axis(): a new axis in front of the others (graph.cpp makes it).
bool is_new_leading_axis(const py::handle& axis) {
    return py::isinstance<Axis>(axis) && axis.cast<Axis>().name() == kNewLeadingAxisName;
}
// reshape's begin_axis / end_axis, where the new leading axis stands for the end of x's axes.
std::optional<int> reshape_axis(const Variable& x, const py::handle& value, const char* what) {
    if (is_new_leading_axis(value)) return x.rank();
    return optional_int(value, what);
}

std::vector<bool> bools_arg(const py::handle& b) {
    if (py::isinstance<py::bool_>(b)) return {b.cast<bool>()};
    return b.cast<std::vector<bool>>();
}

}  // namespace

void bind_ops(py::module_& m) {
    using py::arg;
    const auto name = arg("name") = "";

    // ---- element-wise ----
#define CTK_BIND_UNARY(op, attrs) \
    m.def(                        \
        #op, [](const Variable& x, const std::string& n) { return op(x, n); }, arg("x"), name);
    CTK_UNARY_OPS(CTK_BIND_UNARY)
#undef CTK_BIND_UNARY
    m.def(
        "elu", [](const Variable& x, double alpha, const std::string& n) { return elu(x, alpha, n); },
        arg("x"), arg("alpha") = 1.0, name);
    m.def(
        "leaky_relu",
        [](const Variable& x, double alpha, const std::string& n) { return leaky_relu(x, alpha, n); },
        arg("x"), arg("alpha") = 0.01, name);
    m.def(
        "clip",
        [](const Variable& x, double lo, double hi, const std::string& n) { return clip(x, lo, hi, n); },
        arg("x"), arg("min_value"), arg("max_value"), name);
    m.def(
        "hard_sigmoid",
        [](const Variable& x, double alpha, double beta, const std::string& n) {
            return hard_sigmoid(x, alpha, beta, n);
        },
        arg("x"), arg("alpha") = 0.2, arg("beta") = 0.5, name);
#define CTK_BIND_BINARY(op, attrs)                                                  \
    m.def(                                                                          \
        #op,                                                                        \
        [](const py::object& left, const py::object& right, const std::string& n) { \
            auto [a, b] = operands(left, right);                                    \
            return op(a, b, n);                                                     \
        },                                                                          \
        arg("left"), arg("right"), name);
    CTK_BINARY_OPS(CTK_BIND_BINARY)
#undef CTK_BIND_BINARY
    m.def(
        "element_select",
        [](const Variable& flag, const py::object& t, const py::object& f, const std::string& n) {
            auto [a, b] = operands(t, f);
            return element_select(flag, a, b, n);
        },
        arg("flag"), arg("value_if_true"), arg("value_if_false"), name);
    m.def(
        "sum", [](const py::args& ops, const std::string& n) { return sum(to_variables(ops), n); },
        py::kw_only(), name);
    // CNTK's mean(*operands): varargs, or one list of operands.
    m.def(
        "mean",
        [](const py::args& ops, const std::string& n) {
            const bool listed =
                ops.size() == 1 && (py::isinstance<py::list>(ops[0]) || py::isinstance<py::tuple>(ops[0]));
            return mean(to_variables(listed ? py::object(ops[0]) : py::object(ops)), n);
        },
        py::kw_only(), name);

    // ---- products ----
    m.def(
        "times",
        [](const py::object& left, const py::object& right, const py::object& output_rank,
           const py::object& infer, const std::string& n) {
            auto [a, b] = operands(left, right);
            return times(a, b, int32_arg(output_rank, "output_rank"),
                         int32_arg(infer, "infer_input_rank_to_map"), n);
        },
        arg("left"), arg("right"), arg("output_rank") = 1, arg("infer_input_rank_to_map") = -1, name);
    // CNTK's values of infer_input_rank_to_map.
    m.attr("TIMES_NO_INFERRED_INPUT_RANK") = -1;
    m.attr("TIMES_REDUCE_SEQUENCE_AXIS_WITHOUT_INFERRED_INPUT_RANK") = kTimesReduceSequenceAxis;
    m.def(
        "times_transpose",
        [](const py::object& left, const py::object& right, const std::string& n) {
            auto [a, b] = operands(left, right);
            return times_transpose(a, b, n);
        },
        arg("left"), arg("right"), name);

    // ---- reductions ----
#define CTK_BIND_REDUCE(op)                                                                  \
    m.def(                                                                                   \
        #op,                                                                                 \
        [](const Variable& x, const py::object& axis, bool keepdims, const std::string& n) { \
            return op(x, axes_arg(axis), keepdims, n);                                       \
        },                                                                                   \
        arg("x"), arg("axis") = py::none(), arg("keepdims") = true, name);
    CTK_BIND_REDUCE(reduce_sum)
    CTK_BIND_REDUCE(reduce_mean)
    CTK_BIND_REDUCE(reduce_max)
    CTK_BIND_REDUCE(reduce_min)
    CTK_BIND_REDUCE(reduce_prod)
    CTK_BIND_REDUCE(reduce_log_sum_exp)
    CTK_BIND_REDUCE(reduce_l1)
    CTK_BIND_REDUCE(reduce_l2)
    CTK_BIND_REDUCE(reduce_sum_square)
#undef CTK_BIND_REDUCE
#define CTK_BIND_AXIS_OP(op)                                                  \
    m.def(                                                                    \
        #op,                                                                  \
        [](const Variable& x, const py::object& axis, const std::string& n) { \
            return op(x, optional_axis(axis), n);                             \
        },                                                                    \
        arg("x"), arg("axis") = py::none(), name);
    CTK_BIND_AXIS_OP(argmax)
    CTK_BIND_AXIS_OP(argmin)
    CTK_BIND_AXIS_OP(softmax)
    CTK_BIND_AXIS_OP(log_softmax)
    CTK_BIND_AXIS_OP(hardmax)
#undef CTK_BIND_AXIS_OP

    // ---- shape ----
    m.def(
        "reshape",
        [](const Variable& x, const py::object& shape, const py::object& begin, const py::object& end,
           const std::string& n) {
            return reshape(x, dims_arg(shape), reshape_axis(x, begin, "begin_axis"),
                           reshape_axis(x, end, "end_axis"), n);
        },
        arg("x"), arg("shape"), arg("begin_axis") = py::none(), arg("end_axis") = py::none(), name);
    m.def(
        "flatten",
        [](const Variable& x, const py::object& axis, const std::string& n) {
            return flatten(x, optional_int(axis, "axis").value_or(0), n);
        },
        arg("x"), arg("axis") = py::none(), name);
    m.def(
        "squeeze",
        [](const Variable& x, const py::object& axes, const std::string& n) {
            std::optional<std::vector<int>> a;
            if (!axes.is_none()) a = int_list_arg(axes, "axes");
            return squeeze(x, a, n);
        },
        arg("x"), arg("axes") = py::none(), name);
    m.def(
        "expand_dims",
        [](const Variable& x, const py::object& axis, const std::string& n) {
            return expand_dims(x, int32_arg(axis, "axis"), n);
        },
        arg("x"), arg("axis"), name);
    m.def(
        "slice",
        [](const Variable& x, const py::object& axis, const py::object& begin, const py::object& end,
           const py::object& strides, const std::string& n) {
            const std::vector<Axis> axes = axis_list_arg(axis);
            Dims step = dims_arg(strides, "strides");
            // CNTK: a negative stride takes [begin, end) with its magnitude, last element first.
            std::vector<size_t> reversed;
            for (size_t i = 0; i < step.size(); ++i)
                if (step[i] < 0) {
                    step[i] = -step[i];
                    reversed.push_back(i);
                }
            if (reversed.empty())
                return slice(x, axes, dims_arg(begin, "begin_index"), dims_arg(end, "end_index"), step, n);
            Variable out = slice(x, axes, dims_arg(begin, "begin_index"), dims_arg(end, "end_index"), step);
            for (size_t k = 0; k < reversed.size(); ++k) {
                const int a = axes.at(reversed[k]).static_index() < 0
                                  ? axes.at(reversed[k]).static_index() + out.rank()
                                  : axes.at(reversed[k]).static_index();
                out = reverse_along(out, a, k + 1 == reversed.size() ? n : "");
            }
            return out.owner();
        },
        arg("x"), arg("axis"), arg("begin_index"), arg("end_index"), arg("strides") = py::none(), name);
    m.def(
        "splice",
        [](const py::args& inputs, const py::object& axis, const std::string& n) {
            py::object list = inputs.size() == 1 && (py::isinstance<py::list>(inputs[0]) ||
                                                     py::isinstance<py::tuple>(inputs[0]))
                                  ? py::object(inputs[0])
                                  : py::object(inputs);
            std::vector<Variable> parts = to_variables(list);
            if (is_new_leading_axis(axis)) {  // stacked along a new first axis
                for (Variable& p : parts) p = expand_dims(p, 0);
                return splice(parts, Axis(0), n);
            }
            return splice(parts, axis_arg(axis), n);
        },
        py::kw_only(), arg("axis") = -1, name);
    m.def(
        "transpose",
        [](const Variable& x, const py::object& perm, const std::string& n) {
            std::vector<int> p;
            // CNTK: a transpose needs at least two axes.
            CTK_CHECK(!x.shape_known() || x.rank() >= 2, ValueError, "transpose: ", x.to_string(),
                      " has fewer than two axes");
            if (perm.is_none()) {
                for (int i = x.rank() - 1; i >= 0; --i) p.push_back(i);  // reversed, as NumPy
            } else {
                p = int_list_arg(perm, "perm");
            }
            return transpose(x, p, n);
        },
        arg("x"), arg("perm") = py::none(), name);
    m.def(
        "swapaxes",
        [](const Variable& x, const py::object& a1, const py::object& a2, const std::string& n) {
            return swapaxes(x, int32_arg(a1, "axis1"), int32_arg(a2, "axis2"), n);
        },
        arg("x"), arg("axis1") = 0, arg("axis2") = 1, name);
    py::enum_<PadMode>(m, "PadMode")
        .value("CONSTANT", PadMode::constant)
        .value("REFLECT", PadMode::reflect)
        .value("SYMMETRIC", PadMode::symmetric);
    m.attr("CONSTANT_PAD") = PadMode::constant;
    m.attr("REFLECT_PAD") = PadMode::reflect;
    m.attr("SYMMETRIC_PAD") = PadMode::symmetric;
    m.def(
        "pad",
        [](const Variable& x, const std::vector<std::pair<int64_t, int64_t>>& pattern, const py::object& mode,
           double value, const std::string& n) {
            // CNTK's mode constants are the integers 0 (constant), 1 (reflect) and 2 (symmetric).
            PadMode m = PadMode::constant;
            if (py::isinstance<PadMode>(mode)) {
                m = mode.cast<PadMode>();
            } else {
                const int k = int32_arg(mode, "mode");
                CTK_CHECK(k >= 0 && k <= 2, ValueError, "pad: mode ", k, " is not 0, 1 or 2");
                m = static_cast<PadMode>(k);
            }
            return pad(x, pattern, m, value, n);
        },
        arg("x"), arg("pattern"), arg("mode") = 0, arg("constant_value") = 0.0, name);
    m.def(
        "gather",
        [](const Variable& ref, const Variable& idx, const py::object& axis, const std::string& n) {
            if (axis.is_none()) return gather(ref, idx, n);
            return gather_along(ref, idx, int32_arg(axis, "axis"), n);
        },
        arg("reference"), arg("indices"), arg("axis") = py::none(), name);
    m.def(
        "one_hot",
        [](const Variable& x, const py::object& num_classes, bool sparse, const py::object& axis,
           const std::string& n) {
            return one_hot(x, int_arg(num_classes, "num_classes"), sparse, int32_arg(axis, "axis"), n);
        },
        arg("x"), arg("num_classes"), arg("sparse_output") = false, arg("axis") = -1, name);
    m.def(
        "top_k",
        [](const Variable& x, const py::object& k, const py::object& axis, const std::string& n) {
            return top_k(x, int_arg(k, "k"), int32_arg(axis, "axis"), n);
        },
        arg("x"), arg("k"), arg("axis") = -1, name);
    m.def(
        "cast",
        [](const Variable& x, const py::object& dtype, const std::string& n) {
            return cast(x, dtype_from_python(dtype), n);
        },
        arg("node_input"), arg("dtype"), name);
    m.def(
        "stop_gradient", [](const Variable& x, const std::string& n) { return stop_gradient(x, n); },
        arg("input"), name);
    m.def(
        "alias", [](const Variable& x, const std::string& n) { return alias(x, n); }, arg("x"), name);

    // ---- convolution, pooling, dropout ----
    m.def(
        "convolution",
        [](const Variable& w, const Variable& x, const py::object& strides, const py::object& /*sharing*/,
           const py::object& auto_padding, bool sequential, const py::object& dilation,
           const py::object& reduction_rank, const py::object& groups, int64_t /*max_temp_mem*/,
           const std::string& n) {
            CTK_CHECK(!sequential, NotImplementedError, "convolution: sequential=True is not supported");
            const int64_t rank = int_arg(reduction_rank, "reduction_rank");
            CTK_CHECK(rank == 0 || rank == 1, ValueError, "convolution: reduction_rank must be 0 or 1");
            if (rank == 0)
                return convolution_without_channels(w, x, dims_arg(strides), bools_arg(auto_padding),
                                                    dims_arg(dilation), n);
            return convolution(w, x, dims_arg(strides), bools_arg(auto_padding), dims_arg(dilation),
                               int_arg(groups, "groups"), n);
        },
        arg("convolution_map"), arg("operand"), arg("strides") = py::make_tuple(1),
        arg("sharing") = py::make_tuple(true), arg("auto_padding") = py::make_tuple(true),
        arg("sequential") = false, arg("dilation") = py::make_tuple(1), arg("reduction_rank") = 1,
        arg("groups") = 1, arg("max_temp_mem_size_in_samples") = 0, name);
    m.def(
        "convolution_transpose",
        [](const Variable& w, const Variable& x, const py::object& strides, const py::object& /*sharing*/,
           const py::object& auto_padding, const py::object& output_shape, const py::object& dilation,
           const py::object& reduction_rank, int64_t /*max_temp_mem*/, const std::string& n) {
            const int64_t rank = int_arg(reduction_rank, "reduction_rank");
            CTK_CHECK(rank == 0 || rank == 1, ValueError,
                      "convolution_transpose: reduction_rank must be 0 or 1");
            // CNTK's output_shape may include the output's channel axis: ctk's op takes the spatial dims.
            Dims out = dims_arg(output_shape);
            const int operand_rank = x.shape_known() ? x.rank() + (rank == 0 ? 1 : 0) : -1;
            if (!out.empty() && static_cast<int>(out.size()) == operand_rank) out.erase(out.begin());
            if (rank == 1)
                return convolution_transpose(w, x, dims_arg(strides), bools_arg(auto_padding), out,
                                             dims_arg(dilation), n);
            return convolution_transpose_without_channels(w, x, dims_arg(strides), bools_arg(auto_padding),
                                                          out, dims_arg(dilation), n);
        },
        arg("convolution_map"), arg("operand"), arg("strides") = py::make_tuple(1),
        arg("sharing") = py::make_tuple(true), arg("auto_padding") = py::make_tuple(true),
        arg("output_shape") = py::none(), arg("dilation") = py::make_tuple(1), arg("reduction_rank") = 1,
        arg("max_temp_mem_size_in_samples") = 0, name);
    py::enum_<PoolingType>(m, "PoolingType")
        .value("MAX", PoolingType::max)
        .value("AVERAGE", PoolingType::average);
    m.attr("MAX_POOLING") = PoolingType::max;
    m.attr("MAX_UNPOOLING") = PoolingType::max;  // CNTK's name for unpooling's type
    m.attr("AVG_POOLING") = PoolingType::average;
    m.def(
        "pooling",
        [](const Variable& x, PoolingType type, const py::object& window, const py::object& strides,
           const py::object& auto_padding, bool ceil_out_dim, bool include_pad, const std::string& n) {
            return pooling(x, type, dims_arg(window), dims_arg(strides), bools_arg(auto_padding),
                           ceil_out_dim, include_pad, n);
        },
        arg("operand"), arg("pooling_type"), arg("pooling_window_shape"), arg("strides") = py::make_tuple(1),
        arg("auto_padding") = py::make_tuple(false), arg("ceil_out_dim") = false, arg("include_pad") = false,
        name);
    m.def(
        "ones_like", [](const Variable& x, const std::string& n) { return ones_like(x, n); }, arg("x"), name);
    m.def(
        "zeros_like", [](const Variable& x, const std::string& n) { return zeros_like(x, n); }, arg("x"),
        name);
    m.def(
        "eye_like",
        [](const Variable& x, bool sparse, const std::string& n) { return eye_like(x, sparse, n); }, arg("x"),
        arg("sparse_output") = true, name);
    // CNTK's Python name for straight_through.
    m.def(
        "straight_through_impl",
        [](const Variable& x, const std::string& n) { return straight_through(x, n); }, arg("x"), name);
    m.def(
        "crop_manual",
        [](const Variable& x, const Variable& ref, int64_t ox, int64_t oy, const std::string& n) {
            return crop_manual(x, ref, ox, oy, n);
        },
        arg("node_input"), arg("node_referent"), arg("offset_x"), arg("offset_y"), name);
    m.def(
        "crop_automatic",
        [](const Variable& x, const Variable& ref, const std::string& n) {
            return crop_automatic(x, ref, n);
        },
        arg("node_input"), arg("node_referent"), name);
    m.def(
        "crop_automatic_with_ancestors",
        [](const Variable& x, const Variable& ref, const Variable& ax, const Variable& aref,
           const std::string& n) { return crop_automatic_with_ancestors(x, ref, ax, aref, n); },
        arg("node_input"), arg("node_referent"), arg("ancestor_input"), arg("ancestor_referent"), name);
    m.def(
        "labels_to_graph", [](const Variable& x, const std::string& n) { return labels_to_graph(x, n); },
        arg("labels"), name);
    m.def(
        "forward_backward",
        [](const Variable& graph, const Variable& features, int64_t blank, int64_t delay,
           const std::string& n) { return forward_backward(graph, features, blank, delay, n); },
        arg("graph"), arg("features"), arg("blankTokenId"), arg("delayConstraint") = -1, name);
    m.def(
        "cosine_distance_with_negative_samples",
        [](const Variable& x, const Variable& y, int64_t shift, int64_t k, const std::string& n) {
            return cosine_distance_with_negative_samples(x, y, shift, k, n);
        },
        arg("x"), arg("y"), arg("shift"), arg("num_negative_samples"), name);
    m.def(
        "depth_to_space",
        [](const Variable& x, double b, const std::string& n) {
            CTK_CHECK(b == std::floor(b), ValueError, "block_size must be an integer.");
            return depth_to_space(x, static_cast<int64_t>(b), n);
        },
        arg("operand"), arg("block_size"), name);
    m.def(
        "space_to_depth",
        [](const Variable& x, double b, const std::string& n) {
            CTK_CHECK(b == std::floor(b), ValueError, "block_size must be an integer.");
            return space_to_depth(x, static_cast<int64_t>(b), n);
        },
        arg("operand"), arg("block_size"), name);
    m.def(
        "image_scaler",
        [](const Variable& x, double scalar, const std::vector<double>& biases, const std::string& n) {
            return image_scaler(x, scalar, biases, n);
        },
        arg("x"), arg("scalar"), arg("biases"), name);
    m.def(
        "local_response_normalization",
        [](const Variable& x, int64_t radius, double bias, double alpha, double beta, const std::string& n) {
            return local_response_normalization(x, radius, bias, alpha, beta, n);
        },
        arg("operand"), arg("depth_radius"), arg("bias"), arg("alpha"), arg("beta"), name);
    m.def(
        "mean_variance_normalization",
        [](const py::object& x, double epsilon, bool across, bool scaling, const std::string& n) {
            return mean_variance_normalization(to_variable(x), epsilon, across, scaling, n);
        },
        arg("operand"), arg("epsilon") = 0.00001, arg("use_stats_across_channels") = false,
        arg("do_variance_scaling") = true, name);
    m.def(
        "per_dim_mean_variance_normalize",
        [](const Variable& x, const py::object& mean, const py::object& inv_stddev, const std::string& n) {
            return per_dim_mean_variance_normalize(x, to_variable(mean), to_variable(inv_stddev), n);
        },
        arg("operand"), arg("mean"), arg("inv_stddev"), name);
    m.def(
        "unpooling",
        [](const Variable& operand, const Variable& pooling_input, PoolingType type, const py::object& window,
           const py::object& strides, const py::object& auto_padding, const std::string& n) {
            return unpooling(operand, pooling_input, type, dims_arg(window), dims_arg(strides),
                             bools_arg(auto_padding), n);
        },
        arg("operand"), arg("pooling_input"), arg("unpooling_type"), arg("unpooling_window_shape"),
        arg("strides") = py::make_tuple(1), arg("auto_padding") = py::make_tuple(false), name);
    m.def(
        "dropout",
        [](const Variable& x, double rate, std::optional<double> keep_prob, uint64_t seed,
           const std::string& n) {
            if (keep_prob) {
                CTK_CHECK(rate == 0.0, ValueError, "dropout: give dropout_rate or keep_prob, not both");
                rate = 1.0 - *keep_prob;
            }
            return dropout(x, rate, seed, n);
        },
        arg("x"), arg("dropout_rate") = 0.0, arg("keep_prob") = py::none(), arg("seed") = kSentinelSeed,
        name);
    // CNTK's batch_normalization op (CNTK's running_inv_std holds a running variance in ctk); without a
    // running_count a fresh count of 0 is made, as CNTK does.
    m.def(
        "batch_normalization",
        [](const Variable& operand, const Variable& scale, const Variable& bias, const Variable& running_mean,
           const Variable& running_inv_std, bool spatial, double normalization_time_constant,
           double blend_time_constant, double epsilon, bool /*use_cudnn_engine*/, bool disable_regularization,
           const std::string& n, const py::object& running_count) {
            if (running_count.is_none())  // CNTK 2.7's deprecation warning, with its wording
                py::module_::import("warnings")
                    .attr("warn")(
                        "batch_normalization requires an additional 'running_count' parameter, which can "
                        "be instantiated as 'constant(0)'",
                        py::handle(PyExc_Warning));
            Variable count = running_count.is_none() ? constant(Tensor::zeros(Shape{}, operand.dtype()))
                                                     : to_variable(running_count);
            return batch_normalization(operand, scale, bias, running_mean, running_inv_std, count, spatial,
                                       normalization_time_constant, blend_time_constant, epsilon, n,
                                       disable_regularization);
        },
        arg("operand"), arg("scale"), arg("bias"), arg("running_mean"), arg("running_inv_std"),
        arg("spatial"), arg("normalization_time_constant") = 5000.0, arg("blend_time_constant") = 0.0,
        arg("epsilon") = 1e-5, arg("use_cudnn_engine") = false, arg("disable_regularization") = false,
        arg("name") = "", arg("running_count") = py::none());

    // ---- losses and metrics ----
    m.def(
        "squared_error",
        [](const Variable& o, const Variable& t, const std::string& n) { return squared_error(o, t, n); },
        arg("output"), arg("target"), name);
    m.def(
        "cross_entropy_with_softmax",
        [](const Variable& o, const Variable& t, const Axis& axis, const std::string& n) {
            return cross_entropy_with_softmax(o, t, axis, n);
        },
        arg("output_vector"), arg("target_vector"), arg("axis") = -1, name);
    m.def(
        "classification_error",
        [](const Variable& o, const Variable& t, const Axis& axis, int64_t top_n, const std::string& n) {
            return classification_error(o, t, top_n, axis, n);
        },
        arg("output_vector"), arg("target_vector"), arg("axis") = -1, arg("topN") = 1, name);
    m.def(
        "binary_cross_entropy",
        [](const Variable& o, const Variable& t, const std::string& n) {
            return binary_cross_entropy(o, t, n);
        },
        arg("output"), arg("target"), name);
    m.def(
        "weighted_binary_cross_entropy",
        [](const Variable& o, const Variable& t, const Variable& w, const std::string& n) {
            return weighted_binary_cross_entropy(o, t, w, n);
        },
        arg("output"), arg("target"), arg("weight"), name);
    m.def(
        "cosine_distance",
        [](const Variable& x, const Variable& y, const std::string& n) { return cosine_distance(x, y, n); },
        arg("x"), arg("y"), name);
    m.def(
        "lambda_rank",
        [](const Variable& o, const Variable& g, const Variable& q, const std::string& n) {
            return lambda_rank(o, g, q, n);
        },
        arg("output"), arg("gain"), arg("group"), name);
    m.def(
        "ndcg_at_1",
        [](const Variable& o, const Variable& g, const Variable& q, const std::string& n) {
            return ndcg_at_1(o, g, q, n);
        },
        arg("output"), arg("gain"), arg("group"), name);
    m.def(
        "edit_distance_error",
        [](const Variable& a, const Variable& b, double sub, double del, double ins, bool squash,
           const std::vector<int64_t>& ignore,
           const std::string& n) { return edit_distance_error(a, b, sub, del, ins, squash, ignore, n); },
        arg("input_a"), arg("input_b"), arg("subPen") = 1.0, arg("delPen") = 1.0, arg("insPen") = 1.0,
        arg("squashInputs") = false, arg("tokensToIgnore") = std::vector<int64_t>{}, name);
    // CNTK's nce_loss: noise_distribution is read once (an array or a Constant) in the inputs' dtype.
    m.def(
        "nce_loss",
        [](const Variable& weights, const Variable& biases, const Variable& inputs, const py::object& labels,
           const py::object& noise, int64_t num_samples, bool allow_duplicates, uint64_t seed,
           const std::string& n) {
            return nce_loss(weights, biases, inputs, to_variable(labels, inputs.dtype()),
                            to_variable(noise, inputs.dtype()), num_samples, allow_duplicates, seed, n);
        },
        arg("weights"), arg("biases"), arg("inputs"), arg("labels"), arg("noise_distribution"),
        arg("num_samples") = 32, arg("allow_duplicates") = true, arg("seed") = kSentinelSeed, name);

    // ---- sampling, ROI pooling, the cuDNN RNN stack in graph form ----
    m.def(
        "random_sample",
        [](const py::object& weights, int64_t num_samples, bool allow_duplicates, uint64_t seed,
           const std::string& n) {
            return random_sample(to_variable(weights), num_samples, allow_duplicates, seed, n);
        },
        arg("weights"), arg("num_samples"), arg("allow_duplicates"), arg("seed") = kSentinelSeed, name);
    m.def(
        "random_sample_inclusion_frequency",
        [](const py::object& weights, int64_t num_samples, bool allow_duplicates, uint64_t seed,
           const std::string& n) {
            return random_sample_inclusion_frequency(to_variable(weights), num_samples, allow_duplicates,
                                                     seed, n);
        },
        arg("weights"), arg("num_samples"), arg("allow_duplicates"), arg("seed") = kSentinelSeed, name);
    m.def(
        "roipooling",
        [](const Variable& operand, const py::object& rois, PoolingType type, const py::object& shape,
           double scale, const std::string& n) {
            return roipooling(operand, to_variable(rois, operand.dtype()), type, dims_arg(shape), scale, n);
        },
        arg("operand"), arg("rois"), arg("pooling_type"), arg("roi_output_shape"), arg("spatial_scale"),
        name);
    m.def(
        "optimized_rnnstack",
        [](const Variable& operand, const Variable& weights, int64_t hidden_size, int64_t num_layers,
           bool bidirectional, const std::string& recurrent_op, const std::string& n) {
            return optimized_rnnstack(operand, weights, hidden_size, num_layers, bidirectional, recurrent_op,
                                      n);
        },
        arg("operand"), arg("weights"), arg("hidden_size"), arg("num_layers"), arg("bidirectional") = false,
        arg("recurrent_op") = "lstm", name);

    // ---- random ----
    m.def(
        "uniform_random",
        [](const py::object& shape, const py::object& dtype, double low, double high, uint64_t seed,
           const std::string& n) {
            return uniform_random(dims_arg(shape), dtype_from_python(dtype), low, high, seed, n);
        },
        arg("shape"), arg("dtype") = py::none(), arg("low") = 0.0, arg("high") = 1.0,
        arg("seed") = kSentinelSeed, name);
    m.def(
        "normal_random",
        [](const py::object& shape, const py::object& dtype, double mean, double scale, uint64_t seed,
           const std::string& n) {
            return normal_random(dims_arg(shape), dtype_from_python(dtype), mean, scale, seed, n);
        },
        arg("shape"), arg("dtype") = py::none(), arg("mean") = 0.0, arg("scale") = 1.0,
        arg("seed") = kSentinelSeed, name);

    // ---- cntk.random: CNTK's names (uniform, normal, bernoulli, gumbel and their *_like forms) ----
    py::module_ rnd = m.def_submodule("random", "cntk.random");
    auto two_args = [&rnd, &name](const char* pyname, const char* a, const char* b, double da, double db,
                                  auto make, auto make_like) {
        rnd.def(
            pyname,
            [make](const py::object& shape, const py::object& dtype, double x, double y, uint64_t seed,
                   const std::string& n) {
                return make(dims_arg(shape), dtype_from_python(dtype), x, y, seed, n);
            },
            arg("shape"), arg("dtype") = py::none(), arg(a) = da, arg(b) = db, arg("seed") = kSentinelSeed,
            name);
        rnd.def((std::string(pyname) + "_like").c_str(), make_like, arg("x"), arg(a) = da, arg(b) = db,
                arg("seed") = kSentinelSeed, name);
    };
    two_args("uniform", "low", "high", 0.0, 1.0, &uniform_random, &uniform_random_like);
    two_args("normal", "mean", "scale", 0.0, 1.0, &normal_random, &normal_random_like);
    two_args("gumbel", "loc", "scale", 0.0, 1.0, &gumbel_random, &gumbel_random_like);
    rnd.def(
        "bernoulli",
        [](const py::object& shape, const py::object& dtype, double mean, uint64_t seed,
           const std::string& n) {
            return bernoulli_random(dims_arg(shape), dtype_from_python(dtype), mean, seed, n);
        },
        arg("shape"), arg("dtype") = py::none(), arg("mean") = 0.5, arg("seed") = kSentinelSeed, name);
    rnd.def("bernoulli_like", &bernoulli_random_like, arg("x"), arg("mean") = 0.5,
            arg("seed") = kSentinelSeed, name);

    // ---- dynamic axes (cntk.ops: to_sequence, to_sequence_like, reconcile_dynamic_axes, unpack_batch,
    // to_batch) ----
    m.def(
        "to_sequence",
        [](const Variable& x, const py::object& lengths, const std::string& /*prefix*/,
           const std::string& n) {
            return to_sequence(x, lengths.is_none() ? Variable() : to_variable(lengths, x.dtype()), n);
        },
        arg("x"), arg("sequence_lengths") = py::none(), arg("sequence_axis_name_prefix") = "toSequence_",
        name);
    m.def(
        "to_sequence_like",
        [](const Variable& x, const Variable& like, const std::string& n) {
            return to_sequence_like(x, like, n);
        },
        arg("x"), arg("dynamic_axes_like"), name);
    m.def(
        "reconcile_dynamic_axes",
        [](const Variable& x, const Variable& as, const std::string& n) {
            return reconcile_dynamic_axes(x, as, n);
        },
        arg("x"), arg("dynamic_axes_as"), name);
    m.def(
        "unpack_batch", [](const Variable& x, const std::string& n) { return unpack_batch(x, n); }, arg("x"),
        name);
    m.def(
        "to_batch", [](const Variable& x, const std::string& n) { return to_batch(x, n); }, arg("x"), name);
    m.def(
        "assign",
        [](const Variable& ref, const py::object& input, const std::string& n) {
            return assign(ref, to_variable(input, ref.dtype()), n);
        },
        arg("ref"), arg("input"), name);

    // ---- cntk.ops.sequence ----
    py::module_ s = m.def_submodule("sequence", "cntk.ops.sequence");
    s.def(
        "past_value",
        [](const Variable& x, const py::object& init, int64_t t, const std::string& n) {
            return sequence::past_value(x, init.is_none() ? Variable() : to_variable(init, x.dtype()), t, n);
        },
        arg("x"), arg("initial_state") = py::none(), arg("time_step") = 1, name);
    s.def(
        "future_value",
        [](const Variable& x, const py::object& init, int64_t t, const std::string& n) {
            return sequence::future_value(x, init.is_none() ? Variable() : to_variable(init, x.dtype()), t,
                                          n);
        },
        arg("x"), arg("initial_state") = py::none(), arg("time_step") = 1, name);
    s.def(
        "delay",
        [](const Variable& x, const py::object& init, int64_t t, const std::string& n) {
            return sequence::delay(x, init.is_none() ? Variable() : to_variable(init, x.dtype()), t, n);
        },
        arg("x"), arg("initial_state") = py::none(), arg("time_step") = 1, name);
#define CTK_BIND_SEQ_UNARY(op) \
    s.def(                     \
        #op, [](const Variable& x, const std::string& n) { return sequence::op(x, n); }, arg("seq"), name);
    CTK_BIND_SEQ_UNARY(first)
    CTK_BIND_SEQ_UNARY(last)
    CTK_BIND_SEQ_UNARY(reduce_sum)
    CTK_BIND_SEQ_UNARY(reduce_max)
    CTK_BIND_SEQ_UNARY(softmax)
    CTK_BIND_SEQ_UNARY(is_first)
    CTK_BIND_SEQ_UNARY(is_last)
#undef CTK_BIND_SEQ_UNARY
    s.def(
        "broadcast_as",
        [](const Variable& x, const Variable& like, const std::string& n) {
            return sequence::broadcast_as(x, like, n);
        },
        arg("operand"), arg("broadcast_as_operand"), name);
    s.def(
        "slice",
        [](const Variable& x, int64_t b, int64_t e, const std::string& n) {
            return sequence::slice(x, b, e, n);
        },
        arg("seq"), arg("begin_index"), arg("end_index"), name);
    // CNTK's new_sequence_axis_typeinfo: (scaling, additive) of the new axis's lengths (graph_ops.h).
    s.def(
        "gather",
        [](const Variable& x, const Variable& c, const py::object& typeinfo, const std::string& n) {
            if (typeinfo.is_none()) return sequence::gather(x, c, n);
            return sequence::gather(x, c, typeinfo.cast<sequence::DerivedAxis>(), n);
        },
        arg("seq"), arg("condition"), arg("new_sequence_axis_typeinfo") = py::none(), name);
    s.def(
        "where",
        [](const Variable& c, const py::object& typeinfo, const std::string& n) {
            if (typeinfo.is_none()) return sequence::where(c, n);
            return sequence::where(c, typeinfo.cast<sequence::DerivedAxis>(), n);
        },
        arg("condition"), arg("new_sequence_axis_typeinfo") = py::none(), name);
    s.def(
        "scatter",
        [](const Variable& x, const Variable& c, const std::string& n) { return sequence::scatter(x, c, n); },
        arg("seq"), arg("condition"), name);
    s.def(
        "unpack",
        [](const Variable& x, double padding_value, bool no_mask_output, const std::string& n) {
            const FunctionPtr both = sequence::unpack(x, padding_value, no_mask_output ? "" : n);
            return no_mask_output ? alias(both->outputs().at(0), n) : both;  // the data only
        },
        arg("x"), arg("padding_value"), arg("no_mask_output") = false, name);
    s.def("input_variable", [m](py::args args, py::kwargs kwargs) {
        return m.attr("sequence_input_variable")(*args, **kwargs);
    });
}

}  // namespace ctk::python
