// Value and SequenceLayout (declared in ctk/graph/value.h).
#include "ctk/graph/value.h"

#include <algorithm>
#include <mutex>

#include "ctk/kernels/tensor_ops.h"

namespace ctk {

struct Value::OneHot {
    Tensor indices;  // int64, the value's dynamic dims; -1: an all-zero row
    int64_t num_classes = 0;
    DataType dtype = DataType::f32;
    std::once_flag built;
    Tensor dense;
};

SequenceLayout::SequenceLayout(std::vector<int64_t> lengths) : lengths_(std::move(lengths)) {
    for (size_t i = 0; i < lengths_.size(); ++i) {
        CTK_CHECK(lengths_[i] >= 1, ValueError, "SequenceLayout: sequence ", i, " has length ", lengths_[i],
                  "; every sequence needs at least one frame");
        max_length_ = std::max(max_length_, lengths_[i]);
        frames_ += lengths_[i];
    }
}

SequenceLayout::SequenceLayout(std::vector<int64_t> lengths, std::vector<bool> continues)
    : SequenceLayout(std::move(lengths)) {
    CTK_CHECK(continues.size() == lengths_.size(), ValueError, "SequenceLayout: ", continues.size(),
              " continuation flags (seq_starts) for ", lengths_.size(), " sequences");
    continues_ = std::move(continues);
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
    Value v(data, layout);
    v.padding_zeroed_ = true;
    return v;
}

Value Value::one_hot(Tensor indices, int64_t num_classes, DataType dtype,
                     std::shared_ptr<const SequenceLayout> layout) {
    CTK_CHECK(indices.defined() && indices.dtype() == DataType::i64, TypeError,
              "Value::one_hot: indices must be an int64 tensor");
    CTK_CHECK(num_classes > 0, ValueError, "Value::one_hot: num_classes is ", num_classes);
    CTK_CHECK(is_floating(dtype), TypeError, "Value::one_hot: dtype ", dtype_name(dtype),
              " is not floating-point");
    Tensor idx = indices.device().is_cpu() ? indices.contiguous() : indices.to(Device::cpu());
    if (layout) {
        // [N, T] for vector samples; [N, T, d...] for samples [d..., num_classes].
        CTK_CHECK(
            idx.rank() >= 2 && idx.dim(0) == layout->num_sequences() && idx.dim(1) == layout->max_length(),
            ShapeError, "Value::one_hot: indices of shape ", idx.shape().to_string(), " for ",
            layout->num_sequences(), " sequences of at most ", layout->max_length(), " frames");
        if (layout->has_padding()) idx = idx.clone();
    }
    int64_t* p = idx.data<int64_t>();
    const int64_t frames = idx.rank() >= 2 ? idx.dim(1) : 1;
    const int64_t per_frame = idx.rank() > 2 && idx.numel() > 0 ? idx.numel() / (idx.dim(0) * frames) : 1;
    for (int64_t k = 0; k < idx.numel(); ++k) {
        const int64_t frame = k / per_frame;  // over [N, T]
        if (layout && frame % frames >= layout->lengths()[static_cast<size_t>(frame / frames)]) {
            p[k] = -1;  // padding is zero, as the executor makes every padded frame
            continue;
        }
        CTK_CHECK(p[k] >= -1 && p[k] < num_classes, IndexError, "Value::one_hot: index ", p[k],
                  " at position ", k, " is outside [0, ", num_classes, ") (-1 marks an all-zero row)");
    }
    Value v;
    v.layout_ = std::move(layout);
    v.one_hot_ = std::make_shared<OneHot>();
    v.one_hot_->indices = indices.device().is_cpu() ? idx : idx.to(indices.device());
    v.one_hot_->num_classes = num_classes;
    v.one_hot_->dtype = dtype;
    return v;
}

Value Value::one_hot_reshaped(const Dims& index_dims) const {
    CTK_CHECK(one_hot_ != nullptr, ValueError, "Value::one_hot_reshaped: the value is not one-hot");
    Value v;
    v.one_hot_ = std::make_shared<OneHot>();
    v.one_hot_->indices = one_hot_->indices.reshape(index_dims);
    v.one_hot_->num_classes = one_hot_->num_classes;
    v.one_hot_->dtype = one_hot_->dtype;
    return v;
}

Value Value::one_hot_as(DataType dtype) const {
    CTK_CHECK(one_hot_ != nullptr, ValueError, "Value::one_hot_as: the value is not one-hot");
    CTK_CHECK(is_floating(dtype), TypeError, "Value::one_hot_as: dtype ", dtype_name(dtype),
              " is not floating-point");
    if (dtype == one_hot_->dtype) return *this;
    Value v;
    v.layout_ = layout_;
    v.one_hot_ = std::make_shared<OneHot>();
    v.one_hot_->indices = one_hot_->indices;
    v.one_hot_->num_classes = one_hot_->num_classes;
    v.one_hot_->dtype = dtype;
    return v;
}

const Tensor& Value::one_hot_indices() const {
    CTK_CHECK(one_hot_ != nullptr, ValueError, "Value::one_hot_indices: the value is not one-hot");
    return one_hot_->indices;
}

int64_t Value::num_classes() const {
    CTK_CHECK(one_hot_ != nullptr, ValueError, "Value::num_classes: the value is not one-hot");
    return one_hot_->num_classes;
}

Shape Value::shape() const {
    if (data_.defined() || !one_hot_) return data_.shape();
    Dims d = one_hot_->indices.shape().dims();
    d.push_back(one_hot_->num_classes);
    return Shape(d);
}

DataType Value::dtype() const {
    return data_.defined() || !one_hot_ ? data_.dtype() : one_hot_->dtype;
}

const Tensor& Value::dense_one_hot() const {
    std::call_once(one_hot_->built, [this] {
        // The indices were checked when the value was made (-1: a zero row), so a GPU's are not read
        // back here: no wait for the GPU, and a CUDA Graph can record the rows being built.
        const OneHot& h = *one_hot_;
        one_hot_->dense = detail::one_hot_of_checked(h.indices, h.num_classes, h.dtype);
    });
    return one_hot_->dense;
}

Device Value::device() const {
    return data_.defined() || !one_hot_ ? data_.device() : one_hot_->indices.device();
}

Value Value::to(Device device) const {
    if (!defined() || this->device() == device) return *this;
    if (data_.defined() || !one_hot_) {
        Value v(data_.to(device), layout_);
        v.padding_zeroed_ = padding_zeroed_;
        return v;
    }
    Value v;
    v.layout_ = layout_;
    v.one_hot_ = std::make_shared<OneHot>();
    v.one_hot_->indices = one_hot_->indices.to(device);
    v.one_hot_->num_classes = one_hot_->num_classes;
    v.one_hot_->dtype = one_hot_->dtype;
    return v;
}

Value Value::with_layout(std::shared_ptr<const SequenceLayout> layout) const {
    CTK_CHECK(!layout_ || !layout || (layout->lengths() == layout_->lengths()), ValueError,
              "Value::with_layout: the new layout has other sequence lengths");
    Value v = *this;
    v.layout_ = std::move(layout);
    return v;
}

Tensor Value::sequence(int64_t i) const {
    const Tensor& d = data();
    CTK_CHECK(d.defined() && d.rank() >= 2, ValueError, "Value::sequence: the value holds no sequences");
    CTK_CHECK(i >= 0 && i < d.dim(0), IndexError, "Value::sequence: index ", i, " out of range for ",
              d.dim(0), " sequences");
    const int64_t len = layout_ ? layout_->lengths()[static_cast<size_t>(i)] : d.dim(1);
    return d.select(0, i).slice(0, 0, len);
}

Tensor Value::masked_data(double fill) const {
    const Tensor& d = data();
    if (!layout_ || !layout_->has_padding() || (one_hot_ && fill == 0.0)) return d;  // one-hot padding is 0
    Tensor mask = layout_->mask(d.dtype(), d.device());
    Dims dims = mask.shape().dims();
    dims.resize(static_cast<size_t>(d.rank()), 1);
    Tensor m = mask.view(dims);
    return element_select(m, d, Tensor::full(Shape{}, fill, d.dtype(), d.device()));
}

Value Value::with_zeroed_padding() const {
    if (padding_zeroed_ || one_hot_ || !layout_ || !layout_->has_padding()) return *this;
    Value v(masked_data(0.0), layout_);
    v.padding_zeroed_ = true;
    return v;
}

}  // namespace ctk
