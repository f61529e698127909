// CNTK's argument forms rewritten onto ctk's graph ops (op_forms.h).
#include "op_forms.h"

namespace ctk::python {

// CNTK's gather along a static axis of the reference (NumPy's take): the reference's axis moved to the
// front, gathered, and the index dims put back where that axis was.
FunctionPtr gather_along(const Variable& ref, const Variable& indices, int axis, const std::string& name) {
    const int rank = ref.rank();
    if (axis < 0) axis += rank;
    CTK_CHECK(axis >= 0 && axis < rank, ValueError, "gather: axis ", axis, " is not an axis of ",
              ref.to_string());
    if (axis == 0) return gather(ref, indices, name);
    std::vector<int> front{axis};
    for (int i = 0; i < rank; ++i)
        if (i != axis) front.push_back(i);
    const FunctionPtr taken = gather(transpose(ref, front), indices);
    const int r = indices.rank();
    std::vector<int> back;  // [indices..., others...] -> [others before axis, indices..., others after]
    for (int i = 0; i < axis; ++i) back.push_back(r + i);
    for (int i = 0; i < r; ++i) back.push_back(i);
    for (int i = axis; i < rank - 1; ++i) back.push_back(r + i);
    return transpose(taken, back, name);
}

// x with axis `axis` in reverse order: that axis moved last, times the anti-identity, moved back (works on
// batched operands too, and the gradient comes along).
FunctionPtr reverse_along(const Variable& x, int axis, const std::string& name) {
    const int rank = x.rank();
    const int64_t len = x.shape().at(static_cast<size_t>(axis));
    std::vector<double> flip(static_cast<size_t>(len * len), 0.0);
    for (int64_t i = 0; i < len; ++i) flip[static_cast<size_t>(i * len + (len - 1 - i))] = 1.0;
    const Variable j = constant(Tensor::from_vector(flip, Shape{len, len}).to(x.dtype()));
    std::vector<int> last;
    for (int i = 0; i < rank; ++i)
        if (i != axis) last.push_back(i);
    last.push_back(axis);
    std::vector<int> back(static_cast<size_t>(rank));
    for (int i = 0; i < rank; ++i) back[static_cast<size_t>(last[static_cast<size_t>(i)])] = i;
    const Variable moved = axis == rank - 1 ? x : Variable(transpose(x, last));
    const FunctionPtr flipped = times(moved, j, 1, -1, axis == rank - 1 ? name : "");
    if (axis == rank - 1) return flipped;
    return transpose(flipped, back, name);
}

// CNTK's reduction_rank=0: an operand without a channel axis and a kernel [filters, spatial...] or just
// [spatial...] (one filter); as ctk's convolution of a one-channel operand.
FunctionPtr convolution_without_channels(const Variable& w, const Variable& x, const Dims& strides,
                                         const std::vector<bool>& pads, const Dims& dilation,
                                         const std::string& name) {
    CTK_CHECK(w.shape_known() && x.shape_known() && !w.has_inferred_dims(), ValueError,
              "convolution: reduction_rank=0 needs the kernel's and the operand's shapes");
    const int spatial = x.rank(), extra = w.rank() - spatial;
    CTK_CHECK(extra == 0 || extra == 1, ShapeError, "convolution: a kernel ", w.to_string(),
              " for an operand without channels ", x.to_string(), " must have its rank or one axis more");
    Dims kernel{extra == 1 ? w.shape()[0] : 1, 1};
    kernel.insert(kernel.end(), w.shape().end() - spatial, w.shape().end());
    Dims one_channel{1};
    one_channel.insert(one_channel.end(), x.shape().begin(), x.shape().end());
    // A kernel without a filter axis still gives one map (CNTK's output keeps that axis of 1).
    return convolution(reshape(w, kernel), reshape(x, one_channel), strides, pads, dilation, 1, name);
}

FunctionPtr convolution_transpose_without_channels(const Variable& w, const Variable& x, const Dims& strides,
                                                   const std::vector<bool>& pads, const Dims& output_shape,
                                                   const Dims& dilation, const std::string& name) {
    CTK_CHECK(w.shape_known() && x.shape_known() && w.rank() == x.rank(), NotImplementedError,
              "convolution_transpose: reduction_rank=0 takes a kernel of the operand's rank, got ",
              w.to_string(), " for ", x.to_string());
    Dims kernel{1, 1}, one_channel{1};
    kernel.insert(kernel.end(), w.shape().begin(), w.shape().end());
    one_channel.insert(one_channel.end(), x.shape().begin(), x.shape().end());
    return convolution_transpose(reshape(w, kernel), reshape(x, one_channel), strides, pads, output_shape,
                                 dilation, name);
}

}  // namespace ctk::python
