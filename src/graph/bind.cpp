// Binding (ctk/graph/bind.h): data given for an input variable checked against it (dynamic axes, sample
// shape, sequence layout), brought to its form (a batch, its sample shape, its dtype, its device, zeroed
// padding); and inputs that share a sequence axis checked against each other.
#include "ctk/graph/bind.h"

#include "graph/executor.h"

namespace ctk {

namespace {

std::string source(const BindOptions& o) {
    return o.stream.empty() ? "" : "stream '" + std::string(o.stream) + "': ";
}

std::string describe(const Value& value, const Variable& var, const BindOptions& o) {
    return source(o) + (value.is_one_hot() ? "one-hot data" : "data") + " of shape " +
           value.shape().to_string() + " for " + var.to_string();
}

// Sequences of one frame each for an input without a sequence axis: a batch (CNTK's readers deliver
// every stream as sequences; a stream of one sample per sequence feeds such an input).
Value frames_as_batch(const Variable& var, const Value& value, const BindOptions& o) {
    const SequenceLayout& l = *value.layout();
    bool one_frame_each = true;
    for (int64_t n : l.lengths()) one_frame_each = one_frame_each && n == 1;
    CTK_CHECK(one_frame_each, ShapeError, describe(value, var, o), ": it holds sequences of up to ",
              l.max_length(), " samples; an input without a sequence axis takes one sample per sequence");
    if (value.is_one_hot()) {  // [N, 1, rows...] -> [N, rows...]
        Dims dims = value.one_hot_indices().shape().dims();
        dims.erase(dims.begin() + 1);
        return value.one_hot_reshaped(dims);
    }
    return Value(value.data().select(1, 0));
}

// A one-hot value is checked against its variable and retyped, never made dense.
Value bind_one_hot(const Variable& var, const Value& value, const BindOptions& o) {
    const int dyn = var.dynamic_rank();
    const Tensor& idx = value.one_hot_indices();
    // The indices are [dynamic..., rows...] for samples [rows..., num_classes].
    const Dims& vs = var.shape();
    bool fits = !vs.empty() && idx.rank() - dyn == static_cast<int>(vs.size()) - 1 &&
                (vs.back() == value.num_classes() || vs.back() == kFreeDim);
    for (size_t i = 0; fits && i + 1 < vs.size(); ++i)
        fits = vs[i] == kFreeDim || vs[i] == idx.dim(dyn + static_cast<int>(i));
    CTK_CHECK(fits || idx.rank() < dyn, ShapeError, describe(value, var, o),
              ": a one-hot value feeds a variable of sample shape ", dims_to_string([&] {
                  Dims s(idx.shape().dims().begin() + std::min(dyn, idx.rank()), idx.shape().dims().end());
                  s.push_back(value.num_classes());
                  return s;
              }()));
    CTK_CHECK(idx.rank() >= dyn, ShapeError, describe(value, var, o), ": expected ", dyn,
              " leading dynamic axes (", detail::dynamic_axes_string(var.dynamic_axes()), ")");
    if (var.has_sequence_axis() && value.layout()) {
        const SequenceLayout& l = *value.layout();
        CTK_CHECK(l.num_sequences() == idx.dim(0) && l.max_length() == idx.dim(1), ShapeError,
                  describe(value, var, o), ": its sequence layout has ", l.num_sequences(),
                  " sequences of at most ", l.max_length(), " frames");
    }
    return value.one_hot_as(var.dtype());  // checked when made: GPU indices are not read back
}

// Data in another arrangement of the same samples, as the input's batch: a single sample (no batch
// axis), CNTK's [batch, 1, sample...] for an input without a sequence axis, or (reader streams) samples
// of another shape with as many elements.
Tensor arrange_samples(const Variable& var, Tensor data, const Value& value, const BindOptions& o) {
    const int dyn = var.dynamic_rank(), rank = var.rank();
    auto sample_fits = [&](const Tensor& t, int from) {
        for (int i = 0; i < rank; ++i)
            if (var.shape()[static_cast<size_t>(i)] != kFreeDim &&
                var.shape()[static_cast<size_t>(i)] != t.dim(from + i))
                return false;
        return true;
    };
    if (!var.has_sequence_axis() && var.has_batch_axis()) {
        if (data.rank() == rank && dyn == 1 && sample_fits(data, 0)) return data.expand_dims(0);
        if (data.rank() == dyn + rank + 1 && data.dim(dyn) == 1) {
            Tensor t = data.select(dyn, 0);
            if (sample_fits(t, dyn)) return t;
        }
    }
    if (!o.reshape_samples || data.rank() < dyn) return data;
    Dims sample(data.shape().dims().begin() + dyn, data.shape().dims().end());
    if (sample == var.shape()) return data;
    int64_t have = 1, want = 1;
    for (int64_t s : sample) have *= s;
    for (int64_t s : var.shape()) {
        if (s < 0) return data;  // free dims take the data's shape
        want *= s;
    }
    CTK_CHECK(have == want, ShapeError, describe(value, var, o), ": its samples of shape ",
              Shape(sample).to_string(), " do not fit the input's ",
              detail::static_shape_string(var.shape()));
    Dims dims(data.shape().dims().begin(), data.shape().dims().begin() + dyn);
    dims.insert(dims.end(), var.shape().begin(), var.shape().end());
    return data.reshape(dims);
}

}  // namespace

Value bind_input(const Variable& var, const Value& given, const BindOptions& o) {
    CTK_CHECK(given.defined(), ValueError, source(o), "no data given for ", var.to_string());
    Value value = o.device ? given.to(*o.device) : given;
    if (value.layout() && !var.has_sequence_axis() && var.has_batch_axis())
        value = frames_as_batch(var, value, o);
    if (value.is_one_hot()) return bind_one_hot(var, value, o);
    Tensor data = arrange_samples(var, value.data(), value, o);
    const int dyn = var.dynamic_rank();
    const Dims& shape = var.shape();
    CTK_CHECK(data.rank() == dyn + static_cast<int>(shape.size()), ShapeError, describe(value, var, o),
              ": expected ", dyn, " leading dynamic axes (", detail::dynamic_axes_string(var.dynamic_axes()),
              ") and the sample shape ", detail::static_shape_string(shape));
    for (size_t i = 0; i < shape.size(); ++i)
        CTK_CHECK(shape[i] == kFreeDim || shape[i] == data.dim(dyn + static_cast<int>(i)), ShapeError,
                  describe(value, var, o), ": sample dim ", i, " is ", data.dim(dyn + static_cast<int>(i)),
                  ", expected ", shape[i]);
    if (var.has_sequence_axis() && value.layout()) {
        const SequenceLayout& l = *value.layout();
        CTK_CHECK(l.num_sequences() == data.dim(0) && l.max_length() == data.dim(1), ShapeError,
                  describe(value, var, o), ": its sequence layout has ", l.num_sequences(),
                  " sequences of at most ", l.max_length(), " frames");
    }
    CTK_CHECK(is_floating(data.dtype()), TypeError, describe(value, var, o), ": dtype ",
              dtype_name(data.dtype()), " is not floating-point");
    if (!var.has_sequence_axis() || !value.layout()) {
        if (data.dtype() != var.dtype()) data = data.to(var.dtype());
        return Value(data);
    }
    // Data that is the value's own (nothing rearranged) keeps the value, and with it whether its padding
    // is known to be zero.
    if (data.dtype() == var.dtype() && data.shape() == value.data().shape())
        return value.with_zeroed_padding();
    return Value(data.to(var.dtype()), value.layout()).with_zeroed_padding();
}

namespace detail {

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

}  // namespace detail
}  // namespace ctk
