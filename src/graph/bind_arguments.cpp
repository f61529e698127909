// Binds argument values to a plan's input variables: each value checked against its variable (dynamic
// axes, sample shape, sequence layout) and converted to its dtype, and inputs that share a sequence axis
// checked against each other.
#include "graph/executor.h"

namespace ctk::detail {

namespace {

// Checks an argument's value against its variable and converts its dtype if needed.
// A one-hot value stays in index form: it is checked against the variable and retyped, never made dense.
Value bind_one_hot_argument(const Variable& var, const Value& value) {
    const int dyn = var.dynamic_rank();
    const Tensor& idx = value.one_hot_indices();
    auto describe = [&] {
        return "one-hot data of shape " + value.shape().to_string() + " for " + var.to_string();
    };
    CTK_CHECK(
        var.shape().size() == 1 && (var.shape()[0] == value.num_classes() || var.shape()[0] == kFreeDim),
        ShapeError, describe(), ": a one-hot value feeds a variable of sample shape [", value.num_classes(),
        "]");
    CTK_CHECK(idx.rank() == dyn, ShapeError, describe(), ": expected ", dyn, " leading dynamic axes (",
              dynamic_axes_string(var.dynamic_axes()), ")");
    if (var.has_sequence_axis() && value.layout()) {
        const SequenceLayout& l = *value.layout();
        CTK_CHECK(l.num_sequences() == idx.dim(0) && l.max_length() == idx.dim(1), ShapeError, describe(),
                  ": its sequence layout has ", l.num_sequences(), " sequences of at most ", l.max_length(),
                  " frames");
    }
    return value.one_hot_as(var.dtype());  // checked when made: GPU indices are not read back
}

}  // namespace

Value bind_argument(const Variable& var, const Value& value) {
    CTK_CHECK(value.defined(), ValueError, "no data given for ", var.to_string());
    if (value.is_one_hot()) return bind_one_hot_argument(var, value);
    Tensor data = value.data();
    const int dyn = var.dynamic_rank();
    const Dims& shape = var.shape();
    auto describe = [&] { return "data of shape " + data.shape().to_string() + " for " + var.to_string(); };
    CTK_CHECK(data.rank() == dyn + static_cast<int>(shape.size()), ShapeError, describe(), ": expected ", dyn,
              " leading dynamic axes (", dynamic_axes_string(var.dynamic_axes()), ") and the sample shape ",
              static_shape_string(shape));
    for (size_t i = 0; i < shape.size(); ++i)
        CTK_CHECK(shape[i] == kFreeDim || shape[i] == data.dim(dyn + static_cast<int>(i)), ShapeError,
                  describe(), ": sample dim ", i, " is ", data.dim(dyn + static_cast<int>(i)), ", expected ",
                  shape[i]);
    if (var.has_sequence_axis() && value.layout()) {
        const SequenceLayout& l = *value.layout();
        CTK_CHECK(l.num_sequences() == data.dim(0) && l.max_length() == data.dim(1), ShapeError, describe(),
                  ": its sequence layout has ", l.num_sequences(), " sequences of at most ", l.max_length(),
                  " frames");
    }
    CTK_CHECK(is_floating(data.dtype()), TypeError, describe(), ": dtype ", dtype_name(data.dtype()),
              " is not floating-point");
    if (data.dtype() != var.dtype()) data = data.to(var.dtype());
    if (!var.has_sequence_axis()) return Value(data);
    // Padding is zeroed once here, so that no op ever sees garbage (NaN, inf) in padded frames.
    return Value(Value(data, value.layout()).masked_data(0.0), value.layout());
}

// Inputs on one sequence axis are frames of the same sequences (CNTK's rule): data of other lengths is
// an error naming both inputs, not a silent misalignment.
void check_shared_sequence_axes(const Plan& plan, const std::vector<Value>& values) {
    struct Seen {
        const Variable* var;
        std::vector<int64_t> lengths;
    };
    std::vector<Seen> seen;
    for (int s : plan.leaves) {
        const Variable& v = plan.slot_vars[static_cast<size_t>(s)];
        const Value& value = values[static_cast<size_t>(s)];
        if (!v.is_input() || !v.has_sequence_axis() || !value.defined()) continue;
        // The dims [sequences, frames, ...] without densifying one-hot data.
        const Tensor& shape_of = value.is_one_hot() ? value.one_hot_indices() : value.data();
        if (shape_of.rank() < 2) continue;
        std::vector<int64_t> lengths =
            value.layout() ? value.layout()->lengths()
                           : std::vector<int64_t>(static_cast<size_t>(shape_of.dim(0)), shape_of.dim(1));
        for (const Seen& other : seen) {
            if (other.var->dynamic_axes() != v.dynamic_axes()) continue;
            CTK_CHECK(other.lengths == lengths, ValueError, "forward: ", other.var->to_string(), " and ",
                      v.to_string(),
                      " share their sequence axis but their data has sequences of other lengths (",
                      dims_to_string(other.lengths), " and ", dims_to_string(lengths),
                      "); give one its own sequence axis (sequence_axis=...) or data of the same lengths");
        }
        seen.push_back({&v, std::move(lengths)});
    }
}

}  // namespace ctk::detail
