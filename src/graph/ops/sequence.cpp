// Sequence ops: past_value/future_value over whole sequences (inside a recurrent loop the executor
// steps them frame by frame instead), and CNTK's sequence.* family. Data is [N, T, sample...] with a
// SequenceLayout; ops that change sequence lengths produce a new sequence axis, as CNTK does. (The
// functions that build them: sequence_builders.cpp.)
#include <cmath>
#include <limits>

#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

// [N, T, 1...] of rank `rank`: 1 where pred(sequence, frame, length) holds.
template <typename Pred>
Tensor frame_flags(const SequenceLayout& l, int64_t frames, int rank, DataType dtype, Device device,
                   Pred pred) {
    Tensor m = Tensor::empty(Shape{l.num_sequences(), frames}, DataType::f64);
    double* p = m.data<double>();
    for (int64_t s = 0; s < l.num_sequences(); ++s)
        for (int64_t t = 0; t < frames; ++t)
            p[s * frames + t] = pred(s, t, l.lengths()[static_cast<size_t>(s)]) ? 1.0 : 0.0;
    Dims dims{l.num_sequences(), frames};
    dims.resize(static_cast<size_t>(rank), 1);
    return m.to(dtype).to(device).reshape(dims);
}

Tensor zero_like(const Tensor& t) {
    return Tensor::zeros(t.shape(), t.dtype(), t.device());
}

void require_sequence(const Variable& x, const std::string& where) {
    CTK_CHECK(x.has_sequence_axis(), ValueError, where, ": ", x.to_string(),
              " is not a sequence (it has no sequence axis; use sequence.input_variable or to_sequence)");
}

// ---- past_value / future_value: (x, initial_state) ----
std::vector<OutputSpec> infer_delay(InferContext& c) {
    const Variable &x = c.inputs[0], &init = c.inputs[1];
    require_sequence(x, c.where);
    // A sequence of another axis as initial state (past_value built it as a sequence op when it knew;
    // a placeholder bound later lands here): each sequence starts from its state sequence's boundary frame.
    const bool state_sequence = init.dynamic_axes().size() == 2 && init.has_sequence_axis() &&
                                init.dynamic_axes()[0] == x.dynamic_axes()[0];
    CTK_CHECK(init.dynamic_axes().empty() || (init.dynamic_axes().size() == 1 && init.has_batch_axis()) ||
                  state_sequence,
              ShapeError, c.where, ": the initial state ", init.to_string(),
              " must be static, have only the batch axis or be a sequence with ", x.to_string(),
              "'s batch axis");
    CTK_CHECK(!state_sequence || c.attrs.get<int64_t>("offset") == 1, ShapeError, c.where,
              ": an initial state that is a sequence (", init.to_string(),
              ") takes offset 1 here; build the "
              "delay with the sequence already known for larger offsets");
    CTK_CHECK(init.rank() <= x.rank(), ShapeError, c.where, ": the initial state ", init.to_string(),
              " does not broadcast to ", x.to_string());
    for (size_t i = 0; i < init.shape().size(); ++i) {
        const int64_t d = init.shape()[init.shape().size() - 1 - i], xd = x.shape()[x.shape().size() - 1 - i];
        CTK_CHECK(d == 1 || d == xd || xd < 0, ShapeError, c.where, ": the initial state ", init.to_string(),
                  " does not broadcast to ", x.to_string());
    }
    CTK_CHECK(c.attrs.get<int64_t>("offset") >= 1, ValueError, c.where, ": the offset must be at least 1");
    return {{x.shape(), x.dtype(), x.dynamic_axes()}};
}

template <bool Past>
void forward_delay(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    std::shared_ptr<const SequenceLayout> h;
    const SequenceLayout& l = layout_of(c.inputs[0], h);
    const int64_t frames = x.dim(1), k = c.attrs.get<int64_t>("offset");
    Dims block = x.shape().dims();
    block[1] = 1;
    Tensor init = delay_initial_frame(c.input_vars[1], c.inputs[1], block, Past);
    Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
    const int64_t shift = std::min(k, frames);
    for (int64_t t = 0; t < shift; ++t) {  // frames with nothing k steps away: the initial state
        Tensor v = y.slice(1, Past ? t : frames - 1 - t, (Past ? t : frames - 1 - t) + 1);
        v.copy_from(init);
    }
    if (k < frames) {
        Tensor dst = Past ? y.slice(1, k, frames) : y.slice(1, 0, frames - k);
        dst.copy_from(Past ? x.slice(1, 0, frames - k) : x.slice(1, k, frames));
    }
    if (!Past) {  // the frames whose future lies past their own sequence's end take the initial state
        Tensor valid = frame_flags(l, frames, x.rank(), x.dtype(), x.device(),
                                   [k](int64_t, int64_t t, int64_t len) { return t + k < len; });
        y = element_select(valid, y, init);
    }
    c.outputs.push_back(Value(y));
}

template <bool Past>
void backward_delay(BackwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const Tensor& dy = c.output_grads[0];
    std::shared_ptr<const SequenceLayout> h;
    const SequenceLayout& l = layout_of(c.inputs[0], h);
    const int64_t frames = x.dim(1), k = c.attrs.get<int64_t>("offset");
    Tensor to_x = dy, to_init;
    if (Past) {
        to_init = dy.slice(1, 0, std::min(k, frames));
    } else {
        Tensor valid = frame_flags(l, frames, x.rank(), x.dtype(), x.device(),
                                   [k](int64_t, int64_t t, int64_t len) { return t + k < len; });
        to_x = element_times(dy, valid);
        to_init = minus(dy, to_x);
    }
    if (c.needs[0]) {
        Tensor dx = zero_like(x);
        if (k < frames) {
            Tensor dst = Past ? dx.slice(1, 0, frames - k) : dx.slice(1, k, frames);
            dst.copy_from(Past ? to_x.slice(1, k, frames) : to_x.slice(1, 0, frames - k));
        }
        c.input_grads[0] = dx;
    }
    if (c.needs[1])
        c.input_grads[1] =
            delay_initial_grad(c.input_vars[1], c.inputs[1], reduce_sum(to_init, {1}, true), Past);
}

// ---- first, last: one frame per sequence ----
std::vector<OutputSpec> infer_pick(InferContext& c) {
    require_sequence(c.inputs[0], c.where);
    return {{c.inputs[0].shape(), c.inputs[0].dtype(), {c.inputs[0].dynamic_axes()[0]}}};
}
template <bool First>
std::vector<int64_t> picked_frames(const Value& v) {
    std::shared_ptr<const SequenceLayout> h;
    const SequenceLayout& l = layout_of(v, h);
    std::vector<int64_t> f;
    for (int64_t len : l.lengths()) f.push_back(First ? 0 : len - 1);
    return f;
}
// Frame frames[s] of each sequence s of x [N, T, sample...], as [N, sample...]; and the adjoint: g
// [N, sample...] put at those frames of zeros shaped like x.
Tensor pick_frames(const Tensor& x, const std::vector<int64_t>& frames) {
    Dims dims = x.shape().dims();
    dims.erase(dims.begin() + 1);
    Tensor y = Tensor::empty(Shape(dims), x.dtype(), x.device());
    for (int64_t s = 0; s < x.dim(0); ++s) {
        Tensor dst = y.select(0, s);
        dst.copy_from(x.select(0, s).select(0, frames[static_cast<size_t>(s)]));
    }
    return y;
}
Tensor place_frames(const Tensor& g, const Tensor& like, const std::vector<int64_t>& frames) {
    Tensor dx = zero_like(like);
    for (int64_t s = 0; s < like.dim(0); ++s) {
        Tensor dst = dx.select(0, s).select(0, frames[static_cast<size_t>(s)]);
        dst.copy_from(g.select(0, s));
    }
    return dx;
}
template <bool First>
void forward_pick(ForwardContext& c) {
    c.outputs.push_back(Value(pick_frames(c.inputs[0].data(), picked_frames<First>(c.inputs[0]))));
}
template <bool First>
void backward_pick(BackwardContext& c) {
    c.input_grads[0] = place_frames(c.output_grads[0], c.inputs[0].data(), picked_frames<First>(c.inputs[0]));
}
// The frames an initial-state sequence gives a delay: each sequence's last for a past delay, first for
// a future one (graph_internal.h).
std::vector<int64_t> initial_state_frames(const Value& init, bool past) {
    return past ? picked_frames<false>(init) : picked_frames<true>(init);
}
}  // namespace

Tensor delay_initial_frame(const Variable& init_var, const Value& init, const Dims& frame_dims, bool past) {
    Tensor d = init.data();
    if (init_var.has_sequence_axis()) {  // [N, T', sample...] -> [N, 1, sample...]
        CTK_CHECK(d.dim(0) == frame_dims[0], ShapeError, "a delay's initial state ", init_var.to_string(),
                  " holds ", d.dim(0), " sequences for ", frame_dims[0]);
        return pick_frames(d, initial_state_frames(init, past))
            .expand_dims(1)
            .broadcast_to(Shape(frame_dims));
    }
    if (init_var.has_batch_axis()) d = d.expand_dims(1);
    return d.broadcast_to(Shape(frame_dims));
}

// The gradient of a delay's initial state from one frame's gradient g [N, 1, sample...].
Tensor delay_initial_grad(const Variable& init_var, const Value& init, const Tensor& g, bool past) {
    const Tensor& d = init.data();
    const Dims& shape = d.shape().dims();
    if (init_var.has_sequence_axis()) {  // back onto the frame each sequence's state came from
        Dims frame_shape = shape;
        frame_shape[1] = 1;
        const Tensor per_sequence = sum_to_shape(g, Shape(frame_shape)).squeeze(1);
        return place_frames(per_sequence, d, initial_state_frames(init, past));
    }
    if (init_var.has_batch_axis()) return g.reshape(shape);
    Dims aligned(static_cast<size_t>(g.rank()) - shape.size(), 1);
    aligned.insert(aligned.end(), shape.begin(), shape.end());
    return sum_to_shape(g, Shape(aligned)).reshape(shape);
}

namespace {

// ---- reduce_sum, reduce_max, softmax over the sequence axis ----
std::vector<OutputSpec> infer_seq_reduce(InferContext& c) {
    require_sequence(c.inputs[0], c.where);
    return {{c.inputs[0].shape(), c.inputs[0].dtype(), {c.inputs[0].dynamic_axes()[0]}}};
}
void forward_seq_sum(ForwardContext& c) {
    c.outputs.push_back(Value(reduce_sum(c.inputs[0].masked_data(0.0), {1}, false)));
}
void backward_seq_sum(BackwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    c.input_grads[0] = Tensor(c.output_grads[0].expand_dims(1).broadcast_to(x.shape())).contiguous();
}
void forward_seq_max(ForwardContext& c) {
    c.outputs.push_back(
        Value(reduce_max(c.inputs[0].masked_data(-std::numeric_limits<double>::infinity()), {1}, false)));
}
void backward_seq_max(BackwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    Tensor y = c.outputs[0].data().expand_dims(1), dy = c.output_grads[0].expand_dims(1);
    c.input_grads[0] = element_times(dy, equal(x, y));  // padded frames are masked by the executor
}
std::vector<OutputSpec> infer_seq_same(InferContext& c) {
    require_sequence(c.inputs[0], c.where);
    return {{c.inputs[0].shape(), c.inputs[0].dtype(), c.inputs[0].dynamic_axes()}};
}
void forward_seq_softmax(ForwardContext& c) {
    c.outputs.push_back(Value(softmax(c.inputs[0].masked_data(-std::numeric_limits<double>::infinity()), 1)));
}
void backward_seq_softmax(BackwardContext& c) {
    c.input_grads[0] = softmax_backward(c.outputs[0].data(), c.output_grads[0], 1);
}

// ---- is_first, is_last: per-frame flags ----
std::vector<OutputSpec> infer_flags(InferContext& c) {
    require_sequence(c.inputs[0], c.where);
    return {{Dims{}, c.inputs[0].dtype(), c.inputs[0].dynamic_axes()}};
}
template <bool First>
void forward_flags(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    std::shared_ptr<const SequenceLayout> h;
    const SequenceLayout& l = layout_of(c.inputs[0], h);
    c.outputs.push_back(
        Value(frame_flags(l, x.dim(1), 2, x.dtype(), x.device(),
                          [](int64_t, int64_t t, int64_t len) { return First ? t == 0 : t == len - 1; })));
}

// ---- broadcast_as(operand, like) ----
std::vector<OutputSpec> infer_broadcast_as(InferContext& c) {
    const Variable &x = c.inputs[0], &like = c.inputs[1];
    require_sequence(like, c.where);
    CTK_CHECK(!x.has_sequence_axis(), ValueError, c.where, ": ", x.to_string(), " already is a sequence");
    return {{x.shape(), x.dtype(), like.dynamic_axes()}};
}
void forward_broadcast_as(ForwardContext& c) {
    const Tensor& like = c.inputs[1].data();
    Tensor x = c.inputs[0].data();
    Dims dims{like.dim(0), like.dim(1)};
    const int stat = c.input_vars[0].rank();
    for (int i = 0; i < stat; ++i) dims.push_back(x.dim(x.rank() - stat + i));
    x = c.dyn_rank(0) == 1 ? x.expand_dims(1) : align(x, 0, 2, stat);
    c.outputs.push_back(Value(Tensor(x.broadcast_to(Shape(dims))).contiguous(), c.inputs[1].layout()));
}
void backward_broadcast_as(BackwardContext& c) {
    if (!c.needs[0]) return;
    const Tensor& dy = c.output_grads[0];
    Tensor g = reduce_sum(dy, {1}, false);  // padded frames carry no gradient
    c.input_grads[0] =
        c.dyn_rank(0) == 1 ? g : reduce_sum(g, {0}, false).reshape(c.inputs[0].data().shape().dims());
}

// ---- ops that make new sequences: slice, gather, where, to_sequence; and scatter ----
// Frames [begin, end) of each sequence, as CNTK's sequence.slice (negative: from the end; end 0: the end).
std::vector<std::pair<int64_t, int64_t>> slice_ranges(const Attributes& a, const SequenceLayout& l,
                                                      const std::string& where) {
    const int64_t b = a.get<int64_t>("beginIndex"), e = a.get<int64_t>("endIndex");
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int64_t s = 0; s < l.num_sequences(); ++s) {
        const int64_t len = l.lengths()[static_cast<size_t>(s)];
        const int64_t lo = std::clamp(b < 0 ? len + b : b, int64_t(0), len);
        const int64_t hi = std::clamp(e <= 0 ? len + e : e, int64_t(0), len);
        CTK_CHECK(hi > lo, ValueError, where, ": slice [", b, ", ", e, ") leaves sequence ", s, " (", len,
                  " frames) empty");
        out.emplace_back(lo, hi);
    }
    return out;
}
std::vector<OutputSpec> infer_new_sequence(InferContext& c) {
    const Variable& x = c.inputs[0];
    require_sequence(x, c.where);
    const Axis axis = Axis::dynamic(c.attrs.get<std::string>("newAxis"));
    Dims shape = c.op == PrimitiveOp::sequence_where ? Dims{} : x.shape();
    return {{shape, x.dtype(), {x.dynamic_axes()[0], axis}}};
}
// Packs the chosen frames of each sequence ([N, T, sample...] -> [N, T', sample...]) with a new layout.
// Frame moves between [N, T_from, ...] and [N, T_to, ...] as flat rows: `from` and `to` row indices (one
// gather and one scatter-add however many frames move).
struct FrameRows {
    std::vector<int64_t> from, to;
};
FrameRows frame_rows(const std::vector<std::vector<int64_t>>& frames, int64_t t_packed, int64_t t_full) {
    FrameRows r;
    for (size_t s = 0; s < frames.size(); ++s)
        for (size_t j = 0; j < frames[s].size(); ++j) {
            r.from.push_back(static_cast<int64_t>(s) * t_full + frames[s][j]);
            r.to.push_back(static_cast<int64_t>(s) * t_packed + static_cast<int64_t>(j));
        }
    return r;
}
// dst (zeros, [N, T_dst, ...]) with src's rows `from` added at rows `to`.
Tensor move_rows(const Tensor& src, const Tensor& dst, const std::vector<int64_t>& from,
                 const std::vector<int64_t>& to) {
    if (from.empty()) return dst;
    auto index = [&](const std::vector<int64_t>& v) {
        return Tensor::from_vector(v, Shape{static_cast<int64_t>(v.size())}).to(src.device());
    };
    const int64_t n = src.dim(0);
    Tensor rows = gather(src.reshape({n * src.dim(1), -1}), index(from), 0);
    return scatter_add(dst.reshape({n * dst.dim(1), -1}), index(to), rows, 0).reshape(dst.shape().dims());
}

// The chosen frames of each sequence of x [N, T, ...], packed from frame 0: [N, longest, ...].
Value pack_frames(const Tensor& x, const std::vector<std::vector<int64_t>>& frames) {
    std::vector<int64_t> lengths;
    int64_t longest = 0;
    for (const auto& f : frames) {
        lengths.push_back(static_cast<int64_t>(f.size()));
        longest = std::max(longest, static_cast<int64_t>(f.size()));
    }
    Dims dims = x.shape().dims();
    dims[1] = longest;
    const FrameRows r = frame_rows(frames, longest, x.dim(1));
    Tensor y = move_rows(x, Tensor::zeros(Shape(dims), x.dtype(), x.device()), r.from, r.to);
    return Value(y, std::make_shared<SequenceLayout>(lengths));
}
// The adjoint of pack_frames: dy [N, T', ...] back into [N, T, ...] zeros; a repeated frame sums the
// gradients of its copies.
Tensor unpack_frames(const Tensor& dy, const Tensor& like, const std::vector<std::vector<int64_t>>& frames) {
    const FrameRows r = frame_rows(frames, dy.dim(1), like.dim(1));
    return move_rows(dy, zero_like(like), r.to, r.from);
}
std::vector<std::vector<int64_t>> sliced_frames(const Attributes& a, const Value& x,
                                                const std::string& where) {
    std::shared_ptr<const SequenceLayout> h;
    std::vector<std::vector<int64_t>> frames;
    for (auto [lo, hi] : slice_ranges(a, layout_of(x, h), where)) {
        frames.emplace_back();
        for (int64_t t = lo; t < hi; ++t) frames.back().push_back(t);
    }
    return frames;
}
// Frames where the condition ([N, T] flags, any trailing dims of 1) is nonzero, per sequence.
std::vector<std::vector<int64_t>> chosen_frames(const Value& cond, const std::string& where) {
    std::shared_ptr<const SequenceLayout> h;
    const SequenceLayout& l = layout_of(cond, h);
    const Tensor flags = cond.data().reshape({cond.data().dim(0), cond.data().dim(1), -1});
    CTK_CHECK(flags.dim(2) == 1, ShapeError, where, ": the condition must hold one value per frame, got ",
              cond.data().shape().to_string());
    auto v = flags.to_vector<double>();
    std::vector<std::vector<int64_t>> frames(static_cast<size_t>(l.num_sequences()));
    for (int64_t s = 0; s < l.num_sequences(); ++s) {
        // CNTK's repeat factors: a value above 1 repeats the frame; fractions round up, the overshoot
        // taken from the next frames (the running total's ceiling, to float rounding: 10 frames of 1.2
        // give 12).
        double total = 0.0;
        int64_t taken = 0;
        for (int64_t t = 0; t < l.lengths()[static_cast<size_t>(s)]; ++t) {
            const double f = v[static_cast<size_t>(s * flags.dim(1) + t)];
            CTK_CHECK(f >= 0.0, ValueError, where, ": the condition of sequence ", s, " is ", f, " at frame ",
                      t, "; repeat factors must be non-negative");
            total += f;
            const auto wanted = static_cast<int64_t>(std::ceil(total - 1e-5 * std::max(1.0, total)));
            for (; taken < wanted; ++taken) frames[static_cast<size_t>(s)].push_back(t);
        }
        CTK_CHECK(!frames[static_cast<size_t>(s)].empty(), ValueError, where,
                  ": the condition selects no frame of sequence ", s);
    }
    return frames;
}
void forward_seq_slice(ForwardContext& c) {
    c.outputs.push_back(pack_frames(c.inputs[0].data(), sliced_frames(c.attrs, c.inputs[0], c.where)));
}
void backward_seq_slice(BackwardContext& c) {
    c.input_grads[0] =
        unpack_frames(c.output_grads[0], c.inputs[0].data(), sliced_frames(c.attrs, c.inputs[0], c.where));
}
std::vector<OutputSpec> infer_seq_gather(InferContext& c) {
    CTK_CHECK(c.inputs[0].dynamic_axes() == c.inputs[1].dynamic_axes(), ShapeError, c.where, ": ",
              c.inputs[0].to_string(), " and the condition ", c.inputs[1].to_string(),
              " have different dynamic axes");
    return infer_new_sequence(c);
}
void forward_seq_gather(ForwardContext& c) {
    c.outputs.push_back(pack_frames(c.inputs[0].data(), chosen_frames(c.inputs[1], c.where)));
}
void backward_seq_gather(BackwardContext& c) {
    if (c.needs[0])
        c.input_grads[0] =
            unpack_frames(c.output_grads[0], c.inputs[0].data(), chosen_frames(c.inputs[1], c.where));
}
void forward_seq_where(ForwardContext& c) {
    auto frames = chosen_frames(c.inputs[0], c.where);
    const Tensor& x = c.inputs[0].data();
    // frame numbers within each sequence: arange over T for every sequence
    Tensor t =
        Tensor(Tensor::arange(Shape{1, x.dim(1)}, DataType::f64).broadcast_to(Shape{x.dim(0), x.dim(1)}))
            .to(x.device())
            .contiguous();
    Value packed = pack_frames(t, frames);
    c.outputs.push_back(Value(packed.data().to(x.dtype()), packed.layout()));
}
// scatter(x, condition): x's frames placed at the condition's nonzero frames, zeros elsewhere.
std::vector<OutputSpec> infer_seq_scatter(InferContext& c) {
    require_sequence(c.inputs[0], c.where);
    require_sequence(c.inputs[1], c.where);
    return {{c.inputs[0].shape(), c.inputs[0].dtype(), c.inputs[1].dynamic_axes()}};
}
void forward_seq_scatter(ForwardContext& c) {
    auto frames = chosen_frames(c.inputs[1], c.where);
    for (size_t s = 0; s < frames.size(); ++s)
        for (size_t j = 1; j < frames[s].size(); ++j)
            CTK_CHECK(frames[s][j] != frames[s][j - 1], ValueError, c.where, ": the condition repeats frame ",
                      frames[s][j], " of sequence ", s, "; scatter places each frame once (use 0/1 values)");
    const Tensor& x = c.inputs[0].data();
    std::shared_ptr<const SequenceLayout> h;
    const SequenceLayout& xl = layout_of(c.inputs[0], h);
    for (size_t s = 0; s < frames.size(); ++s)
        CTK_CHECK(static_cast<int64_t>(frames[s].size()) == xl.lengths()[s], ShapeError, c.where,
                  ": sequence ", s, " has ", xl.lengths()[s], " frames but the condition selects ",
                  frames[s].size());
    Dims dims = x.shape().dims();
    dims[1] = c.inputs[1].data().dim(1);
    Tensor like = Tensor::zeros(Shape(dims), x.dtype(), x.device());
    c.outputs.push_back(Value(unpack_frames(x, like, frames), c.inputs[1].layout()));
}
void backward_seq_scatter(BackwardContext& c) {
    if (c.needs[0])
        c.input_grads[0] = pack_frames(c.output_grads[0], chosen_frames(c.inputs[1], c.where)).data();
}

// ---- unpack: a sequence to a static axis (with its mask as a second output); to_sequence: back ----
std::vector<OutputSpec> infer_unpack(InferContext& c) {
    const Variable& x = c.inputs[0];
    require_sequence(x, c.where);
    Dims shape{kFreeDim};
    shape.insert(shape.end(), x.shape().begin(), x.shape().end());
    const std::vector<Axis> batch{x.dynamic_axes()[0]};
    return {{shape, x.dtype(), batch}, {Dims{kFreeDim}, x.dtype(), batch}};
}
void forward_unpack(ForwardContext& c) {
    const Value& x = c.inputs[0];
    c.outputs.push_back(Value(x.masked_data(c.attrs.get<double>("paddingValue"))));
    std::shared_ptr<const SequenceLayout> h;
    c.outputs.push_back(Value(layout_of(x, h).mask(x.data().dtype(), x.data().device())));
}
void backward_unpack(BackwardContext& c) {
    if (c.output_grads[0].defined()) c.input_grads[0] = c.output_grads[0];
}
std::vector<OutputSpec> infer_to_sequence(InferContext& c) {
    const Variable& x = c.inputs[0];
    CTK_CHECK(x.dynamic_axes().size() == 1, ValueError, c.where, ": ", x.to_string(),
              " must have the batch axis and no sequence axis");
    CTK_CHECK(x.rank() >= 1, ShapeError, c.where, ": ", x.to_string(),
              " has no static axis to turn into a sequence");
    if (c.inputs.size() > 1)
        CTK_CHECK(c.inputs[1].dynamic_axes() == x.dynamic_axes(), ShapeError, c.where, ": the lengths ",
                  c.inputs[1].to_string(), " must have the batch axis");
    Dims shape(x.shape().begin() + 1, x.shape().end());
    return {{shape, x.dtype(), {x.dynamic_axes()[0], Axis::dynamic(c.attrs.get<std::string>("newAxis"))}}};
}
void forward_to_sequence(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    std::vector<int64_t> lengths(static_cast<size_t>(x.dim(0)), x.dim(1));
    if (c.inputs.size() > 1) {
        auto v = c.inputs[1].data().to_vector<double>();
        CTK_CHECK(static_cast<int64_t>(v.size()) == x.dim(0), ShapeError, c.where,
                  ": one length per sample expected");
        for (size_t s = 0; s < v.size(); ++s) {
            const double len = v[s];
            CTK_CHECK(len >= 1 && len <= static_cast<double>(x.dim(1)) && len == std::floor(len), ValueError,
                      c.where, ": sequence length ", len, " of sample ", s, " is not in [1, ", x.dim(1), "]");
            lengths[s] = static_cast<int64_t>(len);
        }
    }
    auto layout = std::make_shared<SequenceLayout>(lengths);
    c.outputs.push_back(Value(Value(x, layout).masked_data(0.0), layout));
}
void backward_to_sequence(BackwardContext& c) {
    if (c.needs[0]) c.input_grads[0] = c.output_grads[0];
}

// ---- to_sequence_like(x, like), reconcile_dynamic_axes(x, like) ----
std::vector<OutputSpec> infer_to_sequence_like(InferContext& c) {
    const Variable &x = c.inputs[0], &like = c.inputs[1];
    require_sequence(like, c.where);
    CTK_CHECK(x.dynamic_axes().size() == 1 && x.rank() >= 1, ValueError, c.where, ": ", x.to_string(),
              " must have the batch axis, no sequence axis, and a static axis to turn into frames");
    return {{Dims(x.shape().begin() + 1, x.shape().end()), x.dtype(), like.dynamic_axes()}};
}
void forward_to_sequence_like(ForwardContext& c) {
    const Tensor& x = c.inputs[0].data();
    const Tensor& like = c.inputs[1].data();
    CTK_CHECK(x.dim(0) == like.dim(0) && x.dim(1) == like.dim(1), ShapeError, c.where, ": data ",
              x.shape().to_string(), " does not hold the ", like.dim(0), " sequences of ", like.dim(1),
              " frames it should take the lengths of");
    c.outputs.push_back(Value(Value(x, c.inputs[1].layout()).masked_data(0.0), c.inputs[1].layout()));
}
std::vector<OutputSpec> infer_reconcile(InferContext& c) {
    const Variable &x = c.inputs[0], &like = c.inputs[1];
    CTK_CHECK(!like.dynamic_axes().empty(), ValueError, c.where, ": ", like.to_string(),
              " has no dynamic axes");
    CTK_CHECK(x.dynamic_axes().size() <= like.dynamic_axes().size(), ValueError, c.where, ": ", x.to_string(),
              " has more dynamic axes than ", like.to_string());
    return {{x.shape(), x.dtype(), like.dynamic_axes()}};
}
void forward_reconcile(ForwardContext& c) {
    if (c.dyn_rank(0) < c.dyn_rank(1)) return forward_broadcast_as(c);
    const Value &x = c.inputs[0], &like = c.inputs[1];
    CTK_CHECK(
        x.data().dim(0) == like.data().dim(0) && (c.dyn_rank(0) < 2 || x.data().dim(1) == like.data().dim(1)),
        ShapeError, c.where, ": ", x.data().shape().to_string(), " does not have the dynamic dims of ",
        like.data().shape().to_string());
    if (x.has_layout() && like.has_layout())
        CTK_CHECK(*x.layout() == *like.layout(), ShapeError, c.where,
                  ": the sequences have different lengths");
    c.outputs.push_back(Value(x.data(), like.layout()));
}
void backward_reconcile(BackwardContext& c) {
    if (c.dyn_rank(0) < c.dyn_rank(1)) return backward_broadcast_as(c);
    if (c.needs[0]) c.input_grads[0] = c.output_grads[0];
}

// ---- unpack_batch, to_batch: the batch axis to a static axis and back ----
std::vector<OutputSpec> infer_unpack_batch(InferContext& c) {
    const Variable& x = c.inputs[0];
    CTK_CHECK(x.dynamic_axes().size() == 1, ValueError, c.where, ": ", x.to_string(),
              " must have the batch axis and no sequence axis");
    Dims shape{kFreeDim};
    shape.insert(shape.end(), x.shape().begin(), x.shape().end());
    return {{shape, x.dtype(), {}}};
}
std::vector<OutputSpec> infer_to_batch(InferContext& c) {
    const Variable& x = c.inputs[0];
    CTK_CHECK(x.dynamic_axes().empty() && x.rank() >= 1, ValueError, c.where, ": ", x.to_string(),
              " must be static with a leading axis to become the batch axis");
    return {{Dims(x.shape().begin() + 1, x.shape().end()), x.dtype(), {Axis::default_batch_axis()}}};
}
void forward_pass_data(ForwardContext& c) {
    c.outputs.push_back(Value(c.inputs[0].data()));
}
void backward_pass_data(BackwardContext& c) {
    c.input_grads[0] = c.output_grads[0];
}

// A relabelling of the same frames is local, and so is a broadcast of a value without a sequence axis
// (what sequence.broadcast_as becomes in a CNTK file: both are ReconcileDynamicAxis there).
bool reconcile_is_frame_local(const Function& f) {
    const auto in = f.inputs();
    return in[0].dynamic_axes() == in[1].dynamic_axes() || in[0].dynamic_rank() < in[1].dynamic_rank();
}
// A value without a sequence axis seen at every frame is local (an attention decoder's step reads the
// encoder's window through broadcast_as to its own state).
bool always_frame_local(const Function&) {
    return true;
}

}  // namespace

void register_sequence_ops(OpTable& t) {
    t.add(PrimitiveOp::past_value,
          OpDef{"PastValue", 2, 2, infer_delay, forward_delay<true>, backward_delay<true>, false});
    t.add(PrimitiveOp::future_value,
          OpDef{"FutureValue", 2, 2, infer_delay, forward_delay<false>, backward_delay<false>, false});
    t.add(PrimitiveOp::sequence_first,
          OpDef{"SequenceFirst", 1, 1, infer_pick, forward_pick<true>, backward_pick<true>, false});
    t.add(PrimitiveOp::sequence_last,
          OpDef{"SequenceLast", 1, 1, infer_pick, forward_pick<false>, backward_pick<false>, false});
    t.add(PrimitiveOp::sequence_reduce_sum,
          OpDef{"SequenceReduceSum", 1, 1, infer_seq_reduce, forward_seq_sum, backward_seq_sum, false});
    t.add(PrimitiveOp::sequence_reduce_max,
          OpDef{"SequenceReduceMax", 1, 1, infer_seq_reduce, forward_seq_max, backward_seq_max, false});
    t.add(PrimitiveOp::sequence_softmax,
          OpDef{"SequenceSoftmax", 1, 1, infer_seq_same, forward_seq_softmax, backward_seq_softmax, false});
    t.add(PrimitiveOp::sequence_is_first,
          OpDef{"IsFirst", 1, 1, infer_flags, forward_flags<true>, nullptr, false});
    t.add(PrimitiveOp::sequence_is_last,
          OpDef{"IsLast", 1, 1, infer_flags, forward_flags<false>, nullptr, false});
    t.add(PrimitiveOp::sequence_broadcast_as, OpDef{"ReconcileDynamicAxis", 2, 2, infer_broadcast_as,
                                                    forward_broadcast_as, backward_broadcast_as, false});
    t.add(PrimitiveOp::sequence_slice,
          OpDef{"SequenceSlice", 1, 1, infer_new_sequence, forward_seq_slice, backward_seq_slice, false});
    t.add(PrimitiveOp::sequence_gather,
          OpDef{"GatherPacked", 2, 2, infer_seq_gather, forward_seq_gather, backward_seq_gather, false});
    t.add(PrimitiveOp::sequence_where,
          OpDef{"Where", 1, 1, infer_new_sequence, forward_seq_where, nullptr, false});
    t.add(PrimitiveOp::sequence_scatter,
          OpDef{"ScatterPacked", 2, 2, infer_seq_scatter, forward_seq_scatter, backward_seq_scatter, false});
    t.add(PrimitiveOp::sequence_unpack,
          OpDef{"UnpackSequence", 1, 1, infer_unpack, forward_unpack, backward_unpack, false});
    t.add(PrimitiveOp::to_sequence_like, OpDef{"ToSequenceLike", 2, 2, infer_to_sequence_like,
                                               forward_to_sequence_like, backward_to_sequence, false});
    t.add(PrimitiveOp::reconcile_dynamic_axes,
          OpDef{"ReconcileDynamicAxis", 2, 2, infer_reconcile, forward_reconcile, backward_reconcile, false});
    t.add(PrimitiveOp::unpack_batch,
          OpDef{"UnpackBatch", 1, 1, infer_unpack_batch, forward_pass_data, backward_pass_data, false});
    t.add(PrimitiveOp::to_batch,
          OpDef{"ToBatch", 1, 1, infer_to_batch, forward_pass_data, backward_pass_data, false});
    t.add(PrimitiveOp::to_sequence,
          OpDef{"ToSequence", 1, 2, infer_to_sequence, forward_to_sequence, backward_to_sequence, false});
    t.autocast({PrimitiveOp::past_value, PrimitiveOp::future_value, PrimitiveOp::sequence_first,
                PrimitiveOp::sequence_last, PrimitiveOp::sequence_slice, PrimitiveOp::sequence_broadcast_as,
                PrimitiveOp::reconcile_dynamic_axes, PrimitiveOp::to_sequence_like, PrimitiveOp::unpack_batch,
                PrimitiveOp::to_batch},
               Autocast::follow);
    // The data follows; indices and lengths keep their dtype.
    t.autocast({PrimitiveOp::sequence_gather, PrimitiveOp::to_sequence}, Autocast::follow_data);
    t.delay(PrimitiveOp::past_value, -1);
    t.delay(PrimitiveOp::future_value, +1);
    t.frame_local_for(PrimitiveOp::reconcile_dynamic_axes, reconcile_is_frame_local);
    t.frame_local_for(PrimitiveOp::sequence_broadcast_as, always_frame_local);
}

}  // namespace detail

}  // namespace ctk
