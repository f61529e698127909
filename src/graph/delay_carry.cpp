// CNTK's seq_starts: a past_value's state carried from one minibatch to the next. A sequence marked as
// continuing (SequenceLayout::continues) reads, at its first frames, the last frames its past_value saw
// in the previous minibatch given to the same Function (kept per plan step in Plan::delay_carry); no
// gradient flows back into that minibatch (truncated back-propagation through time, as CNTK).
#include <algorithm>

#include "ctk/kernels/tensor_ops.h"
#include "graph/executor.h"
#include "graph/graph_internal.h"

namespace ctk::detail {

// The carry a continuing sequence i reads, checked: the previous minibatch of this Function must have
// had a sequence i with the same sample shape.
const Tensor& checked_carry(const Plan& plan, size_t step, const SequenceLayout& layout, const Tensor& y,
                            const std::string& where) {
    static const Tensor kNone;
    const Tensor& carry = step < plan.delay_carry.size() ? plan.delay_carry[step] : kNone;
    for (int64_t i = 0; i < layout.num_sequences(); ++i) {
        if (!layout.continues(i)) continue;
        CTK_CHECK(carry.defined() && i < carry.dim(0), ValueError, where, ": sequence ", i,
                  " continues the previous minibatch (seq_starts False), but the previous minibatch given to "
                  "this Function had ",
                  carry.defined() ? carry.dim(0) : 0, " sequences with seq_starts");
        CTK_CHECK(
            carry.rank() == y.rank() && std::equal(carry.shape().dims().begin() + 2,
                                                   carry.shape().dims().end(), y.shape().dims().begin() + 2),
            ShapeError, where, ": the carried frames ", carry.shape().to_string(),
            " do not fit this minibatch's ", y.shape().to_string());
    }
    return carry;
}

// Frames t < offset of a past_value's output y [N, T, sample...] for the continuing sequences: the
// previous minibatch's last frames instead of the initial state.
void apply_delay_carry(const Plan& plan, size_t step, const SequenceLayout& layout, int64_t k, Tensor& y,
                       const std::string& where) {
    const Tensor& carry = checked_carry(plan, step, layout, y, where);
    const int64_t m = std::min(k, y.dim(1));
    for (int64_t i = 0; i < layout.num_sequences(); ++i)
        if (layout.continues(i))
            y.slice(0, i, i + 1).slice(1, 0, m).copy_from(carry.slice(0, i, i + 1).slice(1, 0, m));
}

namespace {
// The carry for the next minibatch: per sequence, the last k frames of x [N, T, sample...]; a sequence
// shorter than k goes on into the previous carry (when it continued) or the initial state `init`
// [N, 1, sample...].
Tensor next_delay_carry(const Plan& plan, size_t step, const Value& x, int64_t k, const Tensor& init) {
    const SequenceLayout& layout = *x.layout();
    static const Tensor kNone;
    const Tensor& previous = step < plan.delay_carry.size() ? plan.delay_carry[step] : kNone;
    const Tensor xd = x.data().contiguous();
    const int64_t n = xd.dim(0), frames = xd.dim(1);
    Dims sample(xd.shape().dims().begin() + 2, xd.shape().dims().end());
    auto rows = [&](const Tensor& t, int64_t count) {
        Dims d{count};
        d.insert(d.end(), sample.begin(), sample.end());
        return t.contiguous().reshape(d);
    };
    // Rows of x [N * T, sample...], then (only for sequences shorter than k) the previous carry's and the
    // initial state's rows after them.
    const bool with_previous = previous.defined() && previous.rank() == xd.rank();
    const int64_t previous_rows = with_previous ? previous.dim(0) * previous.dim(1) : 0;
    std::vector<int64_t> index;
    bool beyond_x = false;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < k; ++j) {
            const int64_t src = layout.lengths()[static_cast<size_t>(i)] - k + j;
            if (src >= 0) {
                index.push_back(i * frames + src);
                continue;
            }
            beyond_x = true;
            if (layout.continues(i) && with_previous && i < previous.dim(0) && k + src >= 0)
                index.push_back(n * frames + i * previous.dim(1) + (previous.dim(1) + src));
            else
                index.push_back(n * frames + previous_rows + i);
        }
    Tensor table = rows(xd, n * frames);
    if (beyond_x) {
        std::vector<Tensor> parts{table};
        if (with_previous) parts.push_back(rows(previous, previous_rows));
        Dims init_dims{n, 1};
        init_dims.insert(init_dims.end(), sample.begin(), sample.end());
        parts.push_back(rows(init.broadcast_to(Shape(init_dims)), n));
        table = ctk::concat(parts, 0);
    }
    Tensor idx = Tensor::from_vector(index, Shape{static_cast<int64_t>(index.size())}).to(xd.device());
    Dims out{n, k};
    out.insert(out.end(), sample.begin(), sample.end());
    return ctk::gather(table, idx, 0).reshape(out);
}

}  // namespace

// After a forward step: a past_value given sequences with seq_starts keeps its input's last frames.
void record_delay_carry(const Plan& plan, size_t step_index, const std::vector<Value>& values) {
    const Step& step = plan.steps[step_index];
    if (step.def->delay_direction >= 0) return;  // only delays that read earlier frames carry state
    const Value& x = values[static_cast<size_t>(step.in[0])];
    if (!x.defined() || !x.has_layout() || !x.layout()->has_start_flags()) return;
    if (plan.delay_carry.size() != plan.steps.size()) plan.delay_carry.resize(plan.steps.size());
    Dims frame_dims = x.data().shape().dims();
    frame_dims[1] = 1;
    const Tensor init = detail::delay_initial_frame(step.in_vars[1], values[static_cast<size_t>(step.in[1])],
                                                    frame_dims, true);
    plan.delay_carry[step_index] =
        next_delay_carry(plan, step_index, x, step.fn->attributes().get<int64_t>("offset"), init);
}

// g [N, ...] with the rows of continuing sequences zeroed (CNTK's truncated back-propagation: the
// gradient of a frame carried in from the previous minibatch goes nowhere).
Tensor without_continuing(const Tensor& g, const SequenceLayout* layout) {
    if (!layout || !layout->has_start_flags()) return g;
    Tensor out = g.clone();
    for (int64_t i = 0; i < layout->num_sequences(); ++i)
        if (layout->continues(i)) out.slice(0, i, i + 1).fill(0.0);
    return out;
}

}  // namespace ctk::detail
