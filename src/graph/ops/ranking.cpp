// Ranking criteria and sequence metrics: lambda_rank and ndcg_at_1 (CNTK's LambdaRank and NDCG, over
// query groups of a minibatch) and edit_distance_error (CNTK's EditDistanceError). Each reduces the
// whole minibatch to one scalar, as CNTK's nodes do. Hand-written on the host: they sort small groups
// and run a dynamic program over token sequences, which no tensor library does.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

// ---- lambda_rank and ndcg_at_1: (score, gain, group), one value per sample ----
std::vector<OutputSpec> infer_ranking(InferContext& c) {
    static const char* const names[] = {"output", "gain", "group"};
    for (size_t i = 0; i < 3; ++i) {
        const Variable& v = c.inputs[i];
        CTK_CHECK(!v.dynamic_axes().empty(), ShapeError, c.where, ": ", names[i], " ", v.to_string(),
                  " needs a batch axis (the groups are read across the minibatch)");
        CTK_CHECK(v.shape_known() && product(v.shape(), 0, v.shape().size()) == 1, ShapeError, c.where, ": ",
                  names[i], " ", v.to_string(), " must hold one value per sample ([] or [1])");
    }
    (void)merge_dynamic_axes(c.inputs, c.where);
    return {{Dims{}, common_dtype(c.inputs, c.where), {}}};
}

struct Ranking {
    std::vector<double> score, gain;
    std::vector<int64_t> offset;                    // each sample's element in the score data
    std::vector<std::pair<size_t, size_t>> groups;  // [begin, end) of each group, in sample order
};

// The samples of the minibatch split into groups: runs of consecutive samples with the same integer
// group id (CNTK's rule: a group must be contiguous).
Ranking read_ranking(std::span<const Value> in, std::span<const Variable> vars, const std::string& where) {
    Ranking r;
    r.offset = real_frame_rows(in[0], vars[0].dynamic_rank());
    auto values = [&](size_t i) {
        std::vector<double> all = in[i].data().to_vector<double>();
        std::vector<int64_t> at = real_frame_rows(in[i], vars[i].dynamic_rank());
        CTK_CHECK(at.size() == r.offset.size(), ShapeError, where, ": operand ", i, " has ", at.size(),
                  " samples but the scores have ", r.offset.size());
        std::vector<double> out;
        for (int64_t k : at) out.push_back(all[static_cast<size_t>(k)]);
        return out;
    };
    r.score = values(0);
    r.gain = values(1);
    const std::vector<double> group = values(2);
    for (size_t i = 0; i < group.size(); ++i) {
        CTK_CHECK(std::isfinite(r.gain[i]) && r.gain[i] >= 0, ValueError, where, ": gain ", r.gain[i],
                  " of sample ", i, " must be finite and non-negative");
        CTK_CHECK(std::isfinite(group[i]), ValueError, where, ": group id of sample ", i, " is ", group[i]);
        CTK_CHECK(!std::isnan(r.score[i]), ValueError, where, ": the score of sample ", i, " is NaN");
        if (i == 0 || static_cast<int64_t>(group[i]) != static_cast<int64_t>(group[i - 1]))
            r.groups.emplace_back(i, i);
        r.groups.back().second = i + 1;
    }
    return r;
}

// Discount of 0-based rank p (the log base cancels in every ratio).
double discount(size_t p) {
    return 1.0 / std::log(2.0 + static_cast<double>(p));
}

// One group's rank of each member by score: higher scores first; on equal scores the lower gain first
// (CNTK's pessimistic tie rule), then input order (CNTK's unstable sort left that open).
std::vector<size_t> ranks_by_score(const Ranking& r, size_t begin, size_t end) {
    std::vector<size_t> order(end - begin);
    std::iota(order.begin(), order.end(), begin);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        if (r.score[a] > r.score[b]) return true;
        if (r.score[a] < r.score[b]) return false;
        return r.gain[a] < r.gain[b];
    });
    std::vector<size_t> rank(end - begin);
    for (size_t p = 0; p < order.size(); ++p) rank[order[p] - begin] = p;
    return rank;
}

// The best DCG of one group: its gains in decreasing order. CNTK took the input order as ideal (inputs
// had to be sorted by gain); sorting here gives the same number for sorted inputs and a true NDCG <= 1
// for unsorted ones.
double ideal_dcg(const Ranking& r, size_t begin, size_t end) {
    std::vector<double> g(r.gain.begin() + static_cast<std::ptrdiff_t>(begin),
                          r.gain.begin() + static_cast<std::ptrdiff_t>(end));
    std::sort(g.rbegin(), g.rend());
    double ideal = 0.0;
    for (size_t p = 0; p < g.size(); ++p) ideal += g[p] * discount(p);
    return ideal;
}

// CNTK's scale: (1 - mean NDCG over the groups) * 100 * samples, so that a trainer's per-sample
// average of the metric reports percent.
void forward_lambda_rank(ForwardContext& c) {
    const Ranking r = read_ranking(c.inputs, c.input_vars, c.where);
    double ndcg_sum = 0.0;
    for (auto [b, e] : r.groups) {
        const double ideal = ideal_dcg(r, b, e);
        if (ideal == 0.0) continue;  // an all-zero group counts as NDCG 0, as CNTK
        const std::vector<size_t> rank = ranks_by_score(r, b, e);
        double dcg = 0.0;
        for (size_t i = b; i < e; ++i) dcg += r.gain[i] * discount(rank[i - b]);
        ndcg_sum += dcg / ideal;
    }
    const double n = static_cast<double>(r.score.size());
    const double value =
        r.groups.empty() ? 0.0 : (1.0 - ndcg_sum / static_cast<double>(r.groups.size())) * 100 * n;
    c.outputs.push_back(
        Value(Tensor::full(Shape{}, value, c.inputs[0].data().dtype(), c.inputs[0].data().device())));
}

// CNTK's lambdas (Burges, "From RankNet to LambdaRank to LambdaMART", 2010) with sigma 1: for each pair
// of a group with gains g_hi > g_lo, lambda = -|dNDCG| / (1 + exp(s_hi - s_lo)), |dNDCG| the change of
// the group's NDCG when the two swap ranks; the higher-gain sample gets +lambda, the other -lambda.
// They are not the derivative of the (piecewise constant) value; ctk scales them by the output's
// gradient (CNTK ignored it, the same for a root gradient of 1). CNTK read the sigmoid of a wrong pair
// once a pair of equal gains had been skipped in a group; ctk pairs them correctly.
void backward_lambda_rank(BackwardContext& c) {
    if (!c.needs[0] || !c.output_grads[0].defined()) return;
    const Ranking r = read_ranking(c.inputs, c.input_vars, c.where);
    std::vector<double> lambda(r.score.size(), 0.0);
    for (auto [b, e] : r.groups) {
        const double ideal = ideal_dcg(r, b, e);
        if (ideal == 0.0) continue;
        const std::vector<size_t> rank = ranks_by_score(r, b, e);
        for (size_t i = b; i < e; ++i) {
            for (size_t j = i + 1; j < e; ++j) {
                if (r.gain[i] == r.gain[j]) continue;
                const size_t hi = r.gain[i] > r.gain[j] ? i : j, lo = hi == i ? j : i;
                const double swap =
                    std::fabs((r.gain[hi] - r.gain[lo]) * (discount(rank[lo - b]) - discount(rank[hi - b]))) /
                    ideal;
                const double l = -swap / (1.0 + std::exp(r.score[hi] - r.score[lo]));
                lambda[hi] += l;
                lambda[lo] -= l;
            }
        }
    }
    const double dy = c.output_grads[0].item();
    const Tensor& like = c.inputs[0].data();
    std::vector<double> g(static_cast<size_t>(like.numel()), 0.0);
    for (size_t i = 0; i < r.offset.size(); ++i) g[static_cast<size_t>(r.offset[i])] = dy * lambda[i];
    c.input_grads[0] = Tensor::from_vector(g, like.shape()).to(like.dtype()).to(like.device());
}

// NDCG@1 per group: the gain of the top-scored sample over the group's best gain (CNTK took the first
// sample's gain, the best for inputs sorted by gain); its mean over the groups * 100 * samples.
void forward_ndcg(ForwardContext& c) {
    const Ranking r = read_ranking(c.inputs, c.input_vars, c.where);
    double sum = 0.0;
    for (auto [b, e] : r.groups) {
        const double best = *std::max_element(r.gain.begin() + static_cast<std::ptrdiff_t>(b),
                                              r.gain.begin() + static_cast<std::ptrdiff_t>(e));
        if (best == 0.0) continue;
        const std::vector<size_t> rank = ranks_by_score(r, b, e);
        const size_t top = b + static_cast<size_t>(std::find(rank.begin(), rank.end(), 0) - rank.begin());
        sum += r.gain[top] / best;
    }
    const double n = static_cast<double>(r.score.size());
    const double value = r.groups.empty() ? 0.0 : sum / static_cast<double>(r.groups.size()) * 100 * n;
    c.outputs.push_back(
        Value(Tensor::full(Shape{}, value, c.inputs[0].data().dtype(), c.inputs[0].data().device())));
}

// ---- edit_distance_error(a, b): token sequences by argmax per frame; b is the reference ----
std::vector<OutputSpec> infer_edit_distance(InferContext& c) {
    const Variable &a = c.inputs[0], &b = c.inputs[1];
    CTK_CHECK(!a.dynamic_axes().empty() && a.dynamic_axes() == b.dynamic_axes(), ShapeError, c.where, ": ",
              a.to_string(), " and ", b.to_string(),
              " must have the same dynamic axes (sequences of frames)");
    CTK_CHECK(a.rank() >= 1 && a.shape() == b.shape(), ShapeError, c.where, ": ", a.to_string(), " and ",
              b.to_string(), " must have the same sample shape (score or one-hot vectors)");
    for (const char* key : {"subPen", "delPen", "insPen"})
        CTK_CHECK(c.attrs.get<double>(key) >= 0, ValueError, c.where, ": penalty ", key, " must be >= 0");
    return {{Dims{}, common_dtype(c.inputs, c.where), {}}};
}

// The tokens of each sequence: the first maximum of each frame's flattened sample. With `squash`,
// repeats collapse first (an ignored token still separates two repeats: CTC's best path), then ignored
// tokens go.
std::vector<std::vector<int64_t>> token_sequences(const Value& v, int dyn, bool squash,
                                                  const std::vector<int64_t>& ignore) {
    const Tensor d = v.data().to(DataType::f64).to(Device::cpu()).contiguous();
    const int64_t classes =
        d.numel() / std::max<int64_t>(1, product(d.shape().dims(), 0, static_cast<size_t>(dyn)));
    const double* p = d.data<double>();
    auto token = [&](int64_t frame) {
        const double* f = p + frame * classes;
        return static_cast<int64_t>(std::max_element(f, f + classes) - f);
    };
    std::vector<std::vector<int64_t>> frames;  // raw tokens per sequence
    if (dyn < 2) {                             // every sample a one-frame sequence
        for (int64_t s = 0; s < d.dim(0); ++s) frames.push_back({token(s)});
    } else {
        std::shared_ptr<const SequenceLayout> h;
        const SequenceLayout& l = layout_of(v, h);
        for (int64_t s = 0; s < l.num_sequences(); ++s) {
            frames.emplace_back();
            for (int64_t k = 0; k < l.lengths()[static_cast<size_t>(s)]; ++k)
                frames.back().push_back(token(s * l.max_length() + k));
        }
    }
    auto ignored = [&](int64_t t) { return std::find(ignore.begin(), ignore.end(), t) != ignore.end(); };
    for (auto& seq : frames) {
        std::vector<int64_t> kept;
        for (size_t k = 0; k < seq.size(); ++k) {
            if (squash && k > 0 && seq[k] == seq[k - 1]) continue;
            if (!ignored(seq[k])) kept.push_back(seq[k]);
        }
        seq = std::move(kept);
    }
    return frames;
}

// The number of edits (substitutions + deletions + insertions) on the cheapest path that turns `a` into
// `b` under the penalties; CNTK's tie order: substitution, then deletion, and insertion on a
// deletion/insertion tie. A matching token always takes the diagonal, as in CNTK.
int64_t edit_count(const std::vector<int64_t>& a, const std::vector<int64_t>& b, double sub, double del,
                   double ins) {
    const size_t n = a.size(), m = b.size();
    std::vector<double> cost((n + 1) * (m + 1));
    std::vector<int64_t> edits((n + 1) * (m + 1));
    auto at = [m](size_t i, size_t j) { return i * (m + 1) + j; };
    for (size_t i = 0; i <= n; ++i)
        cost[at(i, 0)] = static_cast<double>(i) * del, edits[at(i, 0)] = static_cast<int64_t>(i);
    for (size_t j = 0; j <= m; ++j)
        cost[at(0, j)] = static_cast<double>(j) * ins, edits[at(0, j)] = static_cast<int64_t>(j);
    for (size_t i = 1; i <= n; ++i) {
        for (size_t j = 1; j <= m; ++j) {
            if (a[i - 1] == b[j - 1]) {
                cost[at(i, j)] = cost[at(i - 1, j - 1)];
                edits[at(i, j)] = edits[at(i - 1, j - 1)];
                continue;
            }
            const double s = cost[at(i - 1, j - 1)] + sub, d = cost[at(i - 1, j)] + del,
                         in = cost[at(i, j - 1)] + ins;
            if (s <= d && s <= in) {
                cost[at(i, j)] = s, edits[at(i, j)] = edits[at(i - 1, j - 1)] + 1;
            } else if (d < in) {
                cost[at(i, j)] = d, edits[at(i, j)] = edits[at(i - 1, j)] + 1;
            } else {
                cost[at(i, j)] = in, edits[at(i, j)] = edits[at(i, j - 1)] + 1;
            }
        }
    }
    return edits[at(n, m)];
}

// CNTK's value: edits * frames / reference tokens over the whole minibatch, so that a trainer's
// per-sample average reports the token error rate (edits / reference tokens).
void forward_edit_distance(ForwardContext& c) {
    const Value &a = c.inputs[0], &b = c.inputs[1];
    std::shared_ptr<const SequenceLayout> ha, hb;
    const bool same_layout = c.dyn_rank(0) < 2 || layout_of(a, ha) == layout_of(b, hb);
    CTK_CHECK(same_layout && a.data().shape() == b.data().shape(), ShapeError, c.where,
              ": both operands must hold the same sequences with the same lengths, got data ",
              a.data().shape().to_string(), " and ", b.data().shape().to_string());
    const bool squash = c.attrs.get<bool>("squashInputs");
    const Dims& ignore = c.attrs.get<Dims>("tokensToIgnore");
    const auto ta = token_sequences(a, c.dyn_rank(0), squash, ignore);
    const auto tb = token_sequences(b, c.dyn_rank(1), squash, ignore);
    int64_t edits = 0, reference = 0;
    for (size_t s = 0; s < ta.size(); ++s) {
        edits += edit_count(ta[s], tb[s], c.attrs.get<double>("subPen"), c.attrs.get<double>("delPen"),
                            c.attrs.get<double>("insPen"));
        reference += static_cast<int64_t>(tb[s].size());
    }
    const double frames = static_cast<double>(real_frame_rows(a, c.dyn_rank(0)).size());
    CTK_CHECK(reference > 0 || edits == 0, ValueError, c.where,
              ": the reference (the second operand) has no tokens in this minibatch, so the error rate of ",
              edits, " edits is undefined");
    const double value =
        edits == 0 ? 0.0 : static_cast<double>(edits) * frames / static_cast<double>(reference);
    c.outputs.push_back(Value(Tensor::full(Shape{}, value, a.data().dtype(), a.data().device())));
}

}  // namespace

void register_ranking_ops(OpTable& t) {
    // Not frame-local: they read the whole minibatch.
    t.add(PrimitiveOp::lambda_rank,
          OpDef{"LambdaRank", 3, 3, infer_ranking, forward_lambda_rank, backward_lambda_rank, false});
    t.backward_reads(PrimitiveOp::lambda_rank, kReadsInputs);
    t.add(PrimitiveOp::ndcg_at_1, OpDef{"NDCG", 3, 3, infer_ranking, forward_ndcg, nullptr, false});
    t.add(PrimitiveOp::edit_distance_error,
          OpDef{"EditDistanceError", 2, 2, infer_edit_distance, forward_edit_distance, nullptr, false});
}

}  // namespace detail

FunctionPtr lambda_rank(const Variable& output, const Variable& gain, const Variable& group,
                        const std::string& name) {
    return detail::make_op(PrimitiveOp::lambda_rank, {output, gain, group}, {}, name);
}

FunctionPtr ndcg_at_1(const Variable& output, const Variable& gain, const Variable& group,
                      const std::string& name) {
    return detail::make_op(PrimitiveOp::ndcg_at_1, {output, gain, group}, {}, name);
}

FunctionPtr edit_distance_error(const Variable& input_a, const Variable& input_b, double substitution_penalty,
                                double deletion_penalty, double insertion_penalty, bool squash_inputs,
                                const std::vector<int64_t>& tokens_to_ignore, const std::string& name) {
    return detail::make_op(
        PrimitiveOp::edit_distance_error, {input_a, input_b},
        Attributes{{"subPen", substitution_penalty},
                   {"delPen", deletion_penalty},
                   {"insPen", insertion_penalty},
                   {"squashInputs", squash_inputs},
                   {"tokensToIgnore", Dims(tokens_to_ignore.begin(), tokens_to_ignore.end())}},
        name);
}

}  // namespace ctk
