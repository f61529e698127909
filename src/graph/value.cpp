// Value and SequenceLayout (declared in ctk/value.h).
#include "ctk/value.h"

#include <algorithm>

#include "ctk/ops.h"

namespace ctk {

SequenceLayout::SequenceLayout(std::vector<int64_t> lengths) : lengths_(std::move(lengths)) {
    for (size_t i = 0; i < lengths_.size(); ++i) {
        CTK_CHECK(lengths_[i] >= 1, ValueError, "SequenceLayout: sequence ", i, " has length ", lengths_[i],
                  "; every sequence needs at least one frame");
        max_length_ = std::max(max_length_, lengths_[i]);
        frames_ += lengths_[i];
    }
}

Tensor SequenceLayout::mask(DataType dtype, Device device) const {
    for (const Tensor& m : masks_)
        if (m.dtype() == dtype && m.device() == device) return m;
    Tensor m = Tensor::zeros(Shape{num_sequences(), max_length_}, DataType::f64);
    double* p = m.data<double>();
    for (int64_t s = 0; s < num_sequences(); ++s)
        std::fill(p + s * max_length_, p + s * max_length_ + lengths_[static_cast<size_t>(s)], 1.0);
    m = m.to(dtype).to(device);
    masks_.push_back(m);
    return m;
}

Value Value::from_sequences(const std::vector<Tensor>& sequences) {
    CTK_CHECK(!sequences.empty(), ValueError, "Value::from_sequences: no sequences given");
    const Tensor& first = sequences[0];
    CTK_CHECK(first.rank() >= 1, ShapeError, "Value::from_sequences: sequence 0 has shape ",
              first.shape().to_string(), "; expected [length, sample...]");
    std::vector<int64_t> lengths;
    for (size_t i = 0; i < sequences.size(); ++i) {
        const Tensor& s = sequences[i];
        CTK_CHECK(s.rank() == first.rank() && std::equal(s.shape().dims().begin() + 1, s.shape().dims().end(),
                                                         first.shape().dims().begin() + 1),
                  ShapeError, "Value::from_sequences: sequence ", i, " has shape ", s.shape().to_string(),
                  " but sequence 0 has ", first.shape().to_string(), " (the sample shapes must agree)");
        CTK_CHECK(s.dtype() == first.dtype(), TypeError, "Value::from_sequences: sequence ", i, " has dtype ",
                  dtype_name(s.dtype()), ", sequence 0 ", dtype_name(first.dtype()));
        lengths.push_back(s.dim(0));
    }
    auto layout = std::make_shared<SequenceLayout>(lengths);
    Dims dims{layout->num_sequences(), layout->max_length()};
    dims.insert(dims.end(), first.shape().dims().begin() + 1, first.shape().dims().end());
    Tensor data = Tensor::zeros(Shape(dims), first.dtype(), first.device());
    for (size_t i = 0; i < sequences.size(); ++i)
        data.select(0, static_cast<int64_t>(i)).slice(0, 0, lengths[i]).copy_from(sequences[i]);
    return Value(data, layout);
}

Tensor Value::sequence(int64_t i) const {
    CTK_CHECK(data_.defined() && data_.rank() >= 2, ValueError,
              "Value::sequence: the value holds no sequences");
    CTK_CHECK(i >= 0 && i < data_.dim(0), IndexError, "Value::sequence: index ", i, " out of range for ",
              data_.dim(0), " sequences");
    const int64_t len = layout_ ? layout_->lengths()[static_cast<size_t>(i)] : data_.dim(1);
    return data_.select(0, i).slice(0, 0, len);
}

Tensor Value::masked_data(double fill) const {
    if (!layout_ || !layout_->has_padding()) return data_;
    Tensor mask = layout_->mask(data_.dtype(), data_.device());
    Dims dims = mask.shape().dims();
    dims.resize(static_cast<size_t>(data_.rank()), 1);
    Tensor m = mask.view(dims);
    return element_select(m, data_, Tensor::full(Shape{}, fill, data_.dtype(), data_.device()));
}

}  // namespace ctk
