// The C ABI's values: dense batches (copied or borrowed), sequences, one-hot and CNTK's sparse CSC
// samples, and reading results back.
#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>
#include "c/handles.h"
#include "ctk/core/error.h"

using namespace ctk;        // NOLINT(google-build-using-namespace): the C entry points below
using namespace ctk::capi;  // NOLINT(google-build-using-namespace)

namespace ctk::capi {
namespace {

// A batch given for an input with a sequence axis is a batch of one-frame sequences: CNTK's C# inputs
// have a sequence axis by default, and its Value.CreateBatch makes such batches for them.
Value as_input_of(const Variable& var, const Value& value) {
    if (!var.has_sequence_axis() || value.has_layout() || !var.shape_known()) return value;
    const Dims dims = value.shape().dims();
    if (dims.size() != var.shape().size() + 1) return value;
    const int64_t batch = dims[0];
    auto layout = std::make_shared<const SequenceLayout>(std::vector<int64_t>(static_cast<size_t>(batch), 1));
    if (value.is_one_hot()) return value.one_hot_reshaped({batch, 1}).with_layout(layout);
    Dims framed{batch, 1};
    framed.insert(framed.end(), dims.begin() + 1, dims.end());
    return Value(value.data().reshape(framed), layout);
}

}  // namespace

ValueMap bind_inputs(const ctk_variable_t* const* inputs, const ctk_value_t* const* values, int64_t n) {
    CTK_CHECK(n >= 0, ValueError, "input count ", n, " is negative");
    if (n > 0) {
        required(inputs, "inputs");
        required(values, "values");
    }
    ValueMap args;
    for (int64_t i = 0; i < n; ++i) {
        const Variable& var = handle_at(inputs, i, "inputs").var;
        const ctk_value& value = handle_at(values, i, "values");
        if (value.from_reader) {
            // Fitted as the trainers fit a reader's stream to its input (one-sample sequences become a
            // batch, the sample shape and dtype follow the input).
            MinibatchArguments fitted =
                bind_minibatch({{value.stream, *value.from_reader}}, StreamMap{{var, value.stream}});
            args[var] = std::move(fitted.at(var));
        } else {
            args[var] = as_input_of(var, value.value);
        }
    }
    return args;
}

}  // namespace ctk::capi

namespace {

// Sequence lengths as given: each at least one frame (and at most 2^40, so that their sum cannot overflow).
std::vector<int64_t> sequence_lengths(const int64_t* lengths, int64_t num_sequences) {
    required(lengths, "lengths");
    CTK_CHECK(num_sequences > 0, ValueError, "num_sequences ", num_sequences, " must be positive");
    std::vector<int64_t> out(lengths, lengths + num_sequences);
    for (size_t i = 0; i < out.size(); ++i)
        CTK_CHECK(out[i] > 0 && out[i] <= (int64_t{1} << 40), ValueError, "lengths[", i, "] is ", out[i],
                  "; a sequence has at least one frame");
    return out;
}

// Sequence lengths that must add up to the `total` samples (`what`) given.
std::vector<int64_t> lengths_arg(const int64_t* lengths, int64_t num_sequences, int64_t total,
                                 const char* what) {
    std::vector<int64_t> out = sequence_lengths(lengths, num_sequences);
    const int64_t sum = std::accumulate(out.begin(), out.end(), int64_t{0});
    CTK_CHECK(sum == total, ShapeError, "the lengths add up to ", sum, ", but ", total, " ", what,
              " were given");
    return out;
}

// CNTK's seq_starts as ctk's `continues` flags (empty: every sequence starts here).
std::vector<bool> flags_of(const int32_t* continues, const int64_t* lengths, int64_t num_sequences) {
    std::vector<bool> flags;
    if (continues == nullptr || lengths == nullptr) return flags;
    for (int64_t i = 0; i < num_sequences; ++i) flags.push_back(continues[i] != 0);
    return flags;
}

// Frames [count, sample...] cut into sequences of `lengths`.
Value sequences_of(const Tensor& frames, const std::vector<int64_t>& lengths, std::vector<bool> continues) {
    std::vector<Tensor> seqs;
    seqs.reserve(lengths.size());
    int64_t at = 0;
    for (int64_t len : lengths) {
        seqs.push_back(frames.slice(0, at, at + len));
        at += len;
    }
    Value v = Value::from_sequences(seqs);
    if (!continues.empty())
        v = v.with_layout(std::make_shared<SequenceLayout>(lengths, std::move(continues)));
    return v;
}

// A one-hot value from per-sample indices, as a batch or as sequences.
Value one_hot_of(const std::vector<int64_t>& indices, int64_t num_classes, const int64_t* lengths,
                 int64_t num_sequences, const std::vector<bool>& continues, DataType dtype) {
    const auto count = static_cast<int64_t>(indices.size());
    if (lengths == nullptr)
        return Value::one_hot(Tensor::from_vector(indices, Shape({count})), num_classes, dtype);
    const std::vector<int64_t> lens = lengths_arg(lengths, num_sequences, count, "samples");
    const int64_t longest = *std::max_element(lens.begin(), lens.end());
    std::vector<int64_t> padded(static_cast<size_t>(num_sequences * longest), -1);
    int64_t at = 0;
    for (size_t s = 0; s < lens.size(); ++s) {
        std::copy_n(indices.begin() + at, lens[s], padded.begin() + static_cast<int64_t>(s) * longest);
        at += lens[s];
    }
    auto layout = continues.empty() ? std::make_shared<const SequenceLayout>(lens)
                                    : std::make_shared<const SequenceLayout>(lens, continues);
    return Value::one_hot(Tensor::from_vector(padded, Shape({num_sequences, longest})), num_classes, dtype,
                          layout);
}

}  // namespace

extern "C" {

ctk_status ctk_value_create(int32_t dtype, const int64_t* shape, int32_t rank, const void* data,
                            int32_t copy_mode, ctk_device device, ctk_value_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        const DataType dt = dtype_arg(dtype, "dtype");
        const Dims dims = dims_arg(shape, rank, "shape");
        const Device dev = device_arg(device);
        CTK_CHECK(copy_mode == CTK_COPY || copy_mode == CTK_BORROW, ValueError, "copy_mode ", copy_mode,
                  " is not CTK_COPY (0) or CTK_BORROW (1)");
        Tensor t;
        if (copy_mode == CTK_BORROW && dev.is_cpu()) {
            const Shape s(dims);
            const size_t bytes = checked_nbytes(dims, dt, "the value");
            // NOLINTNEXTLINE(cppcoreguidelines-pro-type-const-cast): ctk never writes to an input's data
            t = Tensor::wrap(const_cast<void*>(required(data, "data")), bytes, s, s.contiguous_strides(), dt,
                             Device::cpu(), nullptr);
        } else {
            t = copy_in(dims, dt, data, "data").to(dev);
        }
        *out = new_value(Value(t));
    });
}

ctk_status ctk_value_create_sequences(int32_t dtype, const int64_t* sample_shape, int32_t sample_rank,
                                      const void* data, const int64_t* lengths, int64_t num_sequences,
                                      const int32_t* continues, ctk_device device, ctk_value_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        const DataType dt = dtype_arg(dtype, "dtype");
        const Dims sample = dims_arg(sample_shape, sample_rank, "sample_shape");
        const std::vector<int64_t> lens = sequence_lengths(lengths, num_sequences);
        Dims all{std::accumulate(lens.begin(), lens.end(), int64_t{0})};
        all.insert(all.end(), sample.begin(), sample.end());
        const Tensor t = copy_in(all, dt, data, "data");
        const Value v = sequences_of(t, lens, flags_of(continues, lengths, num_sequences));
        *out = new_value(v.to(device_arg(device)));
    });
}

ctk_status ctk_value_create_one_hot(int64_t num_classes, const int64_t* indices, int64_t count,
                                    const int64_t* lengths, int64_t num_sequences, const int32_t* continues,
                                    int32_t dtype, ctk_device device, ctk_value_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        const DataType dt = dtype_arg(dtype, "dtype");
        CTK_CHECK(num_classes > 0, ValueError, "num_classes ", num_classes, " must be positive");
        CTK_CHECK(count > 0, ValueError, "count ", count, " must be positive");
        required(indices, "indices");
        std::vector<int64_t> idx(indices, indices + count);
        for (int64_t i = 0; i < count; ++i)
            CTK_CHECK(idx[static_cast<size_t>(i)] >= -1 && idx[static_cast<size_t>(i)] < num_classes,
                      IndexError, "indices[", i, "] is ", idx[static_cast<size_t>(i)], ", outside [-1, ",
                      num_classes, ")");
        const Value v = one_hot_of(idx, num_classes, lengths, num_sequences,
                                   flags_of(continues, lengths, num_sequences), dt);
        *out = new_value(v.to(device_arg(device)));
    });
}

ctk_status ctk_value_create_sparse_csc(int32_t dtype, int64_t dim, int64_t num_columns,
                                       const int64_t* col_starts, const int64_t* row_indices,
                                       const void* values, const int64_t* lengths, int64_t num_sequences,
                                       const int32_t* continues, ctk_device device, ctk_value_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        const DataType dt = dtype_arg(dtype, "dtype");
        CTK_CHECK(dim > 0, ValueError, "dim ", dim, " must be positive");
        CTK_CHECK(num_columns > 0, ValueError, "num_columns ", num_columns, " must be positive");
        required(col_starts, "col_starts");
        CTK_CHECK(col_starts[0] == 0, ValueError, "col_starts[0] is ", col_starts[0], ", not 0");
        for (int64_t j = 0; j < num_columns; ++j)
            CTK_CHECK(col_starts[j + 1] >= col_starts[j] && col_starts[j + 1] - col_starts[j] <= dim,
                      ValueError, "col_starts[", j + 1, "] = ", col_starts[j + 1],
                      " does not follow col_starts[", j, "] = ", col_starts[j], " by 0 to ", dim, " entries");
        const int64_t nnz = col_starts[num_columns];
        if (nnz > 0) {
            required(row_indices, "row_indices");
            required(values, "values");
        }
        for (int64_t k = 0; k < nnz; ++k)
            CTK_CHECK(row_indices[k] >= 0 && row_indices[k] < dim, IndexError, "row_indices[", k, "] is ",
                      row_indices[k], ", outside [0, ", dim, ")");
        // Columns with one entry of 1 (or none) are one-hot: kept in index form, as CNTK's readers give them.
        bool one_hot = true;
        std::vector<int64_t> hot(static_cast<size_t>(num_columns), -1);
        for (int64_t j = 0; j < num_columns && one_hot; ++j) {
            const int64_t n = col_starts[j + 1] - col_starts[j];
            if (n == 0) continue;
            one_hot = n == 1 && load_as_double(static_cast<const char*>(values) + col_starts[j] * size_of(dt),
                                               dt) == 1.0;
            hot[static_cast<size_t>(j)] = row_indices[col_starts[j]];
        }
        Value v;
        if (one_hot) {
            v = one_hot_of(hot, dim, lengths, num_sequences, flags_of(continues, lengths, num_sequences), dt);
        } else {
            Tensor dense = Tensor::zeros(Shape({num_columns, dim}), dt);
            auto* base = static_cast<char*>(dense.raw_data());
            for (int64_t j = 0; j < num_columns; ++j)
                for (int64_t k = col_starts[j]; k < col_starts[j + 1]; ++k)
                    std::memcpy(base + (j * dim + row_indices[k]) * size_of(dt),
                                static_cast<const char*>(values) + k * size_of(dt), size_of(dt));
            v = lengths == nullptr
                    ? Value(dense)
                    : sequences_of(dense, lengths_arg(lengths, num_sequences, num_columns, "columns"),
                                   flags_of(continues, lengths, num_sequences));
        }
        *out = new_value(v.to(device_arg(device)));
    });
}

void ctk_value_release(ctk_value_t* value) {
    release(value);
}

ctk_status ctk_value_dtype(const ctk_value_t* value, int32_t* dtype) {
    return guarded(__func__, [&] {
        const Value& v = handle(value, "value").value;
        *required(dtype, "dtype") = static_cast<int32_t>(v.dtype());
    });
}

ctk_status ctk_value_shape(const ctk_value_t* value, int64_t* dims, int32_t capacity, int32_t* rank) {
    return guarded(__func__,
                   [&] { write_dims(handle(value, "value").value.shape().dims(), dims, capacity, rank); });
}

ctk_status ctk_value_device(const ctk_value_t* value, ctk_device* device) {
    return guarded(__func__, [&] {
        const Value& v = handle(value, "value").value;
        *required(device, "device") = device_out(v.device());
    });
}

ctk_status ctk_value_is_one_hot(const ctk_value_t* value, int32_t* one_hot) {
    return guarded(__func__, [&] {
        const Value& v = handle(value, "value").value;
        *required(one_hot, "one_hot") = v.is_one_hot() ? 1 : 0;
    });
}

ctk_status ctk_value_sequence_lengths(const ctk_value_t* value, int64_t* lengths, int64_t capacity,
                                      int64_t* count) {
    return guarded(__func__, [&] {
        const Value& v = handle(value, "value").value;
        const std::vector<int64_t> lens = v.has_layout() ? v.layout()->lengths() : std::vector<int64_t>{};
        write_list(lens, lengths, capacity, count, "lengths", [](int64_t n) { return n; });
    });
}

ctk_status ctk_value_copy_data(const ctk_value_t* value, int32_t dtype, void* data, int64_t count) {
    return guarded(__func__,
                   [&] { copy_out(handle(value, "value").value.data(), dtype, data, count, "the value"); });
}

ctk_status ctk_value_copy_sequence(const ctk_value_t* value, int64_t i, int32_t dtype, void* data,
                                   int64_t capacity, int64_t* frames) {
    return guarded(__func__, [&] {
        const Value& v = handle(value, "value").value;
        required(frames, "frames");
        const int64_t n = v.has_layout() ? v.layout()->num_sequences() : 0;
        CTK_CHECK(i >= 0 && i < n, IndexError, "sequence ", i, " is outside the value's ", n, " sequences");
        const Tensor seq = v.sequence(i);
        if (capacity < seq.numel())
            throw StatusError(CTK_ERROR_BUFFER_TOO_SMALL,
                              "sequence " + std::to_string(i) + " has " + std::to_string(seq.numel()) +
                                  " elements; capacity is " + std::to_string(capacity));
        copy_out(seq, dtype, data, seq.numel(), "the sequence");
        *frames = seq.dim(0);
    });
}

ctk_status ctk_value_assign(ctk_value_t* dst, const ctk_value_t* src) {
    return guarded(__func__, [&] {
        ctk_value& d = handle(dst, "dst");
        const Value& from = handle(src, "src").value;
        CTK_CHECK(!d.value.is_one_hot() && !d.from_reader, ValueError,
                  "dst is a one-hot or reader value; only a dense value made by the caller can be written");
        CTK_CHECK(d.value.shape() == from.shape(), ShapeError, "dst has shape ", d.value.shape().to_string(),
                  ", src ", from.shape().to_string());
        Tensor target = d.value.data();
        target.copy_from(from.data().to(target.device()).to(target.dtype()));
    });
}

ctk_status ctk_value_one_hot_indices(const ctk_value_t* value, int64_t* indices, int64_t count) {
    return guarded(__func__, [&] {
        const Value& v = handle(value, "value").value;
        CTK_CHECK(v.is_one_hot(), ValueError, "the value is dense, not one-hot");
        copy_out(v.one_hot_indices(), CTK_INT64, indices, count, "the indices");
    });
}

}  // extern "C"
