// Value: the data of a variable with dynamic axes, and the sequence layout that says which of its
// frames are real. Data is row-major with the dynamic axes first: [batch, sample...] without a sequence
// axis, [batch, max_length, sample...] with one. Shorter sequences are padded at the end; the padding's
// content is unspecified, and every op that looks across frames (sequence reductions, losses summed by a
// trainer, gradients flowing into parameters) ignores it.
#pragma once

#include <memory>
#include <vector>

#include "ctk/core/tensor.h"

namespace ctk {

// The lengths of the sequences of one minibatch (CNTK's MBLayout reduced to what ctk needs).
class SequenceLayout {
public:
    explicit SequenceLayout(std::vector<int64_t> lengths);
    // `continues[i]`: sequence i goes on from the sequence in the same place of the previous minibatch
    // given to the same Function (CNTK's seq_starts[i] = False): a past_value at its first frames reads
    // the previous minibatch's last frames instead of the initial state (truncated back-propagation
    // through time: no gradient flows back into the previous minibatch).
    SequenceLayout(std::vector<int64_t> lengths, std::vector<bool> continues);
    int64_t num_sequences() const { return static_cast<int64_t>(lengths_.size()); }
    bool continues(int64_t i) const { return !continues_.empty() && continues_[static_cast<size_t>(i)]; }
    // Whether the caller said where sequences start (seq_starts given, even all True): the delays then
    // keep their last frames for a minibatch that may continue these sequences.
    bool has_start_flags() const { return !continues_.empty(); }
    int64_t max_length() const { return max_length_; }
    const std::vector<int64_t>& lengths() const { return lengths_; }
    int64_t num_frames() const { return frames_; }  // real frames, padding excluded
    bool has_padding() const { return frames_ != num_sequences() * max_length_; }
    // 1 at real frames and 0 at padding, shape [num_sequences, max_length], in `dtype` on `device`
    // (built once per dtype and device and cached).
    Tensor mask(DataType dtype, Device device) const;
    bool operator==(const SequenceLayout& o) const { return lengths_ == o.lengths_; }

private:
    std::vector<int64_t> lengths_;
    std::vector<bool> continues_;  // empty: no seq_starts given (every sequence starts here)
    int64_t max_length_ = 0;
    int64_t frames_ = 0;
    mutable std::vector<Tensor> masks_;  // cache
};

class Value {
public:
    Value() = default;
    // Dense data without sequences (or for a variable without a sequence axis).
    explicit Value(Tensor data) : data_(std::move(data)) {}
    Value(Tensor data, std::shared_ptr<const SequenceLayout> layout)
        : data_(std::move(data)), layout_(std::move(layout)) {}

    // A batch of variable-length sequences: each entry is [length, sample...]; they are padded to the
    // longest. Throws ShapeError naming the sequence whose sample shape differs.
    static Value from_sequences(const std::vector<Tensor>& sequences);
    // A one-hot value in index form, CNTK's sparse input with a single 1 per sample: `indices` (int64,
    // the value's dynamic dims: [batch] or [batch, max_length]) holds the hot class of each sample, -1
    // for an all-zero row; padded frames are set to -1 here. times() with this value as its left
    // operand gathers rows instead of multiplying (an embedding lookup); every other reader calls
    // data(), which builds the dense [dims..., num_classes] rows once and shares them between copies.
    static Value one_hot(Tensor indices, int64_t num_classes, DataType dtype = DataType::f32,
                         std::shared_ptr<const SequenceLayout> layout = nullptr);
    bool is_one_hot() const { return one_hot_ != nullptr; }
    const Tensor& one_hot_indices() const;  // ValueError unless is_one_hot()
    // The same one-hot value with its indices seen with other dims (as many), without a layout: the
    // indices were checked when the value was made, so indices on a GPU are not read back (a reader's
    // one-sample sequences become a batch this way). ValueError unless is_one_hot().
    Value one_hot_reshaped(const Dims& index_dims) const;
    // The same one-hot value (its checked indices and layout) with dense rows of another dtype; no
    // re-check, so indices on a GPU are not read back. ValueError unless is_one_hot().
    Value one_hot_as(DataType dtype) const;
    int64_t num_classes() const;  // ValueError unless is_one_hot()
    // The value's shape, without building dense rows for a one-hot value.
    Shape shape() const;
    DataType dtype() const;
    // The real frames of sequence `i`, [length, sample...] (a view).
    Tensor sequence(int64_t i) const;

    bool defined() const { return data_.defined() || one_hot_ != nullptr; }
    const Tensor& data() const { return data_.defined() || !one_hot_ ? data_ : dense_one_hot(); }
    const std::shared_ptr<const SequenceLayout>& layout() const { return layout_; }
    bool has_layout() const { return layout_ != nullptr; }
    // Data with padded frames set to `fill` (the data itself when nothing is padded).
    Tensor masked_data(double fill = 0.0) const;
    // The same value with its padded frames zeroed (itself when they are known to be zero: nothing is
    // padded, the value is one-hot, or it was made by from_sequences or by this function). Binding an
    // input does this, so that no op sees garbage (NaN, inf) in padding; once is enough.
    Value with_zeroed_padding() const;
    // The device of the data (of the indices, for a one-hot value).
    Device device() const;
    // The same value on `device` (itself when already there): dense data, or one-hot indices (the dense
    // rows are rebuilt there when read), with the same layout.
    Value to(Device device) const;
    // The same data (dense or one-hot) with another layout of the same frames.
    Value with_layout(std::shared_ptr<const SequenceLayout> layout) const;

private:
    struct OneHot;
    const Tensor& dense_one_hot() const;
    Tensor data_;
    std::shared_ptr<const SequenceLayout> layout_;
    std::shared_ptr<OneHot> one_hot_;
    bool padding_zeroed_ =
        false;  // known: padded frames of data_ hold zeros  // the index form, and its dense rows once built
};

}  // namespace ctk
