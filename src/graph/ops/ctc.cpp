// CTC, as CNTK 2.7 did it: labels_to_graph (an identity that marks the labels) and forward_backward (the
// connectionist temporal classification loss of Graves et al., 2006, over unnormalised logits). The
// labels are frame-aligned with the logits (CNTK's format): a frame whose largest value is 2 starts a
// token, its argmax; other frames continue one. Hand-written on the host in double: a per-sequence
// dynamic program over 2N+1 states, which no tensor library offers.
#include <cmath>
#include <limits>

#include "ctk/core/parallel.h"
#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

constexpr double kLogZero = -std::numeric_limits<double>::infinity();

double log_add(double a, double b) {
    if (a == kLogZero) return b;
    if (b == kLogZero) return a;
    const double m = std::max(a, b);
    return m + std::log1p(std::exp(-std::fabs(a - b)));
}

std::vector<OutputSpec> infer_forward_backward(InferContext& c) {
    const Variable &graph = c.inputs[0], &z = c.inputs[1];
    CTK_CHECK(z.has_sequence_axis() && graph.dynamic_axes() == z.dynamic_axes(), ShapeError, c.where,
              ": the labels ", graph.to_string(), " and the features ", z.to_string(),
              " must be sequences with the same dynamic axes (labels are frame-aligned, CNTK's format)");
    CTK_CHECK(z.rank() == 1 && graph.shape() == z.shape(), ShapeError, c.where, ": the labels ",
              graph.to_string(), " and the features ", z.to_string(),
              " must be vectors of the same number of classes");
    const int64_t blank = c.attrs.get<int64_t>("blankTokenId");
    CTK_CHECK(blank >= 0 && blank < z.shape()[0], ValueError, c.where, ": blankTokenId ", blank,
              " is not one of the ", z.shape()[0], " classes");
    return {{Dims{}, common_dtype(c.inputs, c.where), {}}};
}

// One sequence's CTC: its tokens with their start frames, and the log-softmax of its frames [T, C].
struct Utterance {
    std::vector<int64_t> tokens, starts;
    int64_t frames = 0;
};

// Forward-backward over the extended sequence blank, l1, blank, l2, ..., lN, blank (state s: token
// (s-1)/2 when odd). Returns log p(labels | logits) and fills the per-frame class posteriors gamma
// [T, C]. delay >= 0: a token may not last past the next token's start frame + delay (a blank + delay
// - 1), CNTK's delayConstraint; the last blank is left free (CNTK read past its bounds there).
double ctc(const Utterance& u, const double* logp, int64_t classes, int64_t blank, int64_t delay,
           std::vector<double>& gamma) {
    const int64_t n = static_cast<int64_t>(u.tokens.size()), states = 2 * n + 1, t_len = u.frames;
    auto label = [&](int64_t s) { return s % 2 == 0 ? blank : u.tokens[static_cast<size_t>(s / 2)]; };
    // The last frame state s may occupy under the delay constraint.
    auto last_frame = [&](int64_t s) {
        if (delay < 0 || s == states - 1) return t_len - 1;
        // CNTK bounds a token, and the blank before it, by the start of the token after that token.
        const int64_t next = s / 2 + 1;
        if (next >= n) return t_len - 1;
        return u.starts[static_cast<size_t>(next)] + delay - (s % 2 == 0 ? 1 : 0);
    };
    auto can_skip = [&](int64_t s) { return s % 2 == 1 && s >= 2 && label(s) != label(s - 2); };
    std::vector<double> alpha(static_cast<size_t>(t_len * states), kLogZero), beta(alpha.size(), kLogZero);
    auto at = [states](int64_t t, int64_t s) { return static_cast<size_t>(t * states + s); };
    auto emit = [&](int64_t t, int64_t s) { return logp[t * classes + label(s)]; };
    alpha[at(0, 0)] = emit(0, 0);
    if (states > 1) alpha[at(0, 1)] = emit(0, 1);
    for (int64_t t = 1; t < t_len; ++t)
        for (int64_t s = 0; s < states; ++s) {
            if (t > last_frame(s)) continue;
            double a = alpha[at(t - 1, s)];
            if (s >= 1) a = log_add(a, alpha[at(t - 1, s - 1)]);
            if (can_skip(s)) a = log_add(a, alpha[at(t - 1, s - 2)]);
            if (a != kLogZero) alpha[at(t, s)] = a + emit(t, s);
        }
    beta[at(t_len - 1, states - 1)] = emit(t_len - 1, states - 1);
    if (states > 1) beta[at(t_len - 1, states - 2)] = emit(t_len - 1, states - 2);
    for (int64_t t = t_len - 2; t >= 0; --t)
        for (int64_t s = 0; s < states; ++s) {
            if (t > last_frame(s)) continue;
            double b = beta[at(t + 1, s)];
            if (s + 1 < states) b = log_add(b, beta[at(t + 1, s + 1)]);
            if (s + 2 < states && can_skip(s + 2)) b = log_add(b, beta[at(t + 1, s + 2)]);
            if (b != kLogZero) beta[at(t, s)] = b + emit(t, s);
        }
    double log_p = beta[at(0, 0)];
    if (states > 1) log_p = log_add(log_p, beta[at(0, 1)]);
    if (log_p == kLogZero) return log_p;
    // gamma_t(k) = sum over states labelled k of alpha * beta / (p * emission), as probabilities.
    gamma.assign(static_cast<size_t>(t_len * classes), 0.0);
    for (int64_t t = 0; t < t_len; ++t)
        for (int64_t s = 0; s < states; ++s) {
            const double a = alpha[at(t, s)], b = beta[at(t, s)];
            if (a == kLogZero || b == kLogZero) continue;
            gamma[static_cast<size_t>(t * classes + label(s))] += std::exp(a + b - emit(t, s) - log_p);
        }
    return log_p;
}

// The utterances of the labels value: tokens at frames whose largest value is 2 (CNTK's phone boundary).
std::vector<Utterance> utterances(const Value& labels, int64_t classes) {
    const Tensor d = labels.data().to(DataType::f64).to(Device::cpu()).contiguous();
    const double* p = d.data<double>();
    std::shared_ptr<const SequenceLayout> holder;
    const SequenceLayout& layout = layout_of(labels, holder);
    std::vector<Utterance> out;
    for (int64_t s = 0; s < layout.num_sequences(); ++s) {
        Utterance u;
        u.frames = layout.lengths()[static_cast<size_t>(s)];
        for (int64_t t = 0; t < u.frames; ++t) {
            const double* f = p + (s * layout.max_length() + t) * classes;
            const int64_t k = static_cast<int64_t>(std::max_element(f, f + classes) - f);
            if (f[k] == 2.0) {
                u.tokens.push_back(k);
                u.starts.push_back(t);
            }
        }
        out.push_back(std::move(u));
    }
    return out;
}

struct CtcResult {
    double loss = 0;
    Tensor gamma;  // [N, T, C] posteriors at real frames, 0 at padding
};

CtcResult run_ctc(std::span<const Value> inputs, const Attributes& attrs, const std::string& where) {
    const Value &labels = inputs[0], &z = inputs[1];
    const Tensor& zd = z.data();
    std::shared_ptr<const SequenceLayout> hl, hz;
    CTK_CHECK(layout_of(labels, hl) == layout_of(z, hz), ShapeError, where,
              ": the labels and the features must hold the same sequences with the same lengths (CNTK's "
              "frame-aligned labels)");
    const int64_t classes = zd.dim(2), t_max = zd.dim(1);
    const int64_t blank = attrs.get<int64_t>("blankTokenId"), delay = attrs.get<int64_t>("delayConstraint");
    const Tensor logp_all = log_softmax(zd.to(DataType::f64).to(Device::cpu()), 2).contiguous();
    std::vector<Utterance> utts = utterances(labels, classes);
    CtcResult r;
    std::vector<double> gamma_all(static_cast<size_t>(zd.numel()), 0.0);
    for (size_t s = 0; s < utts.size(); ++s) {  // checked first: nothing may throw in the parallel part
        const Utterance& u = utts[s];
        int64_t needed = static_cast<int64_t>(u.tokens.size());
        for (size_t k = 1; k < u.tokens.size(); ++k) needed += u.tokens[k] == u.tokens[k - 1];
        CTK_CHECK(needed <= u.frames, ValueError, where, ": sequence ", s, " has ", u.tokens.size(),
                  " tokens, which need at least ", needed, " frames (a blank between repeats), but only ",
                  u.frames);
        for (int64_t k : u.tokens)
            CTK_CHECK(k != blank, ValueError, where, ": sequence ", s, " has the blank ", blank,
                      " as a token");
    }
    // The sequences are independent: one per task; each writes its own slice of the posteriors.
    std::vector<double> log_p(utts.size());
    parallel_for(0, static_cast<int64_t>(utts.size()), 1, [&](int64_t begin, int64_t end) {
        std::vector<double> gamma;
        for (int64_t s = begin; s < end; ++s) {
            const double* logp = logp_all.data<double>() + s * t_max * classes;
            log_p[static_cast<size_t>(s)] =
                ctc(utts[static_cast<size_t>(s)], logp, classes, blank, delay, gamma);
            if (log_p[static_cast<size_t>(s)] != kLogZero)
                std::copy(gamma.begin(), gamma.end(),
                          gamma_all.begin() + static_cast<std::ptrdiff_t>(s * t_max * classes));
        }
    });
    for (size_t s = 0; s < utts.size(); ++s) {
        CTK_CHECK(log_p[s] != kLogZero, ValueError, where, ": sequence ", s,
                  " has no alignment with its labels under delayConstraint ", delay);
        r.loss -= log_p[s];
    }
    r.gamma = Tensor::from_vector(gamma_all, zd.shape()).to(zd.dtype()).to(zd.device());
    return r;
}

void forward_forward_backward(ForwardContext& c) {
    CtcResult r = run_ctc(c.inputs, c.attrs, c.where);
    const Tensor& z = c.inputs[1].data();
    c.outputs.push_back(Value(Tensor::full(Shape{}, r.loss, z.dtype(), z.device())));
    if (c.keep_for_backward) c.saved.push_back(r.gamma);
}

// d loss / d z = softmax(z) - gamma at real frames (the executor zeroes padded frames), times the
// output's gradient. The labels get none (CNTK gave them -log_softmax(z), which no model used).
void backward_forward_backward(BackwardContext& c) {
    if (!c.needs[1] || !c.output_grads[0].defined()) return;
    const Tensor& z = c.inputs[1].data();
    c.input_grads[1] = element_times(minus(softmax(z, 2), c.saved[0]), c.output_grads[0]);
}

}  // namespace

void register_ctc_ops(OpTable& t) {
    t.add(PrimitiveOp::labels_to_graph,
          OpDef{"LabelsToGraph", 1, 1, infer_identity, forward_identity, backward_identity});
    t.backward_reads(PrimitiveOp::labels_to_graph, kReadsNothing);
    t.add(PrimitiveOp::forward_backward, OpDef{"ForwardBackward", 2, 2, infer_forward_backward,
                                               forward_forward_backward, backward_forward_backward, false});
    t.backward_reads(PrimitiveOp::forward_backward, reads_input(1));  // the posteriors are saved
}

}  // namespace detail

FunctionPtr labels_to_graph(const Variable& labels, const std::string& name) {
    return detail::make_op(PrimitiveOp::labels_to_graph, {labels}, {}, name);
}

FunctionPtr forward_backward(const Variable& graph, const Variable& features, int64_t blank_token_id,
                             int64_t delay_constraint, const std::string& name) {
    return detail::make_op(
        PrimitiveOp::forward_backward, {graph, features},
        Attributes{{"blankTokenId", blank_token_id}, {"delayConstraint", delay_constraint}}, name);
}

}  // namespace ctk
