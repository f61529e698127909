// Sampling ops: random_sample and random_sample_inclusion_frequency (CNTK's RandomSample and
// RandomSampleInclusionFrequency), and nce_loss, CNTK's NCE block built on them. Draws come from the
// Function's Philox stream (seed, counter), so they are reproducible and restorable from checkpoints.
// Hand-written: no library samples classes by weight; the weights are a small host vector.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ctk/core/rng.h"
#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {
namespace {

// Uniform in [0, 1) for Philox counter `index` of the stream `seed`.
double uniform_at(uint64_t seed, uint64_t index) {
    const auto w = philox_draw(seed, index);
    return uniform_double(w[0], w[1]);
}

// The sampling weights as doubles, checked: none negative or NaN, and enough positive ones for the draw.
std::vector<double> checked_weights(const Tensor& weights, int64_t num_samples, bool allow_duplicates,
                                    const std::string& where) {
    std::vector<double> w = weights.to_vector<double>();
    int64_t positive = 0;
    for (size_t i = 0; i < w.size(); ++i) {
        CTK_CHECK(w[i] >= 0.0 && std::isfinite(w[i]), ValueError, where, ": sampling weight ", i, " is ",
                  w[i], "; weights must be finite and non-negative");
        positive += w[i] > 0.0;
    }
    CTK_CHECK(positive > 0, ValueError, where, ": all ", w.size(), " sampling weights are zero");
    // CNTK looped forever here (rejection sampling that can never find enough distinct classes).
    CTK_CHECK(allow_duplicates || positive >= num_samples, ValueError, where, ": ", num_samples,
              " samples without duplicates need as many classes of positive weight, but only ", positive,
              " of ", w.size(), " have one");
    return w;
}

// num_samples classes drawn with replacement: the class whose cumulative-weight interval holds u * total
// (upper_bound, so a zero-weight class, whose interval is empty, is never drawn). Draw i uses counter
// offset + i.
std::vector<int64_t> draw_with_replacement(const std::vector<double>& w, int64_t num_samples, uint64_t seed,
                                           uint64_t offset) {
    std::vector<double> cumulative(w.size());
    double total = 0.0;
    for (size_t i = 0; i < w.size(); ++i) cumulative[i] = total += w[i];
    int64_t last_positive = 0;
    for (size_t i = 0; i < w.size(); ++i)
        if (w[i] > 0) last_positive = static_cast<int64_t>(i);
    std::vector<int64_t> out(static_cast<size_t>(num_samples));
    for (int64_t i = 0; i < num_samples; ++i) {
        const double r = uniform_at(seed, offset + static_cast<uint64_t>(i)) * total;
        const auto it = std::upper_bound(cumulative.begin(), cumulative.end(), r);
        // u * total can round up to total itself: that is the last class with weight.
        out[static_cast<size_t>(i)] =
            it == cumulative.end() ? last_positive : static_cast<int64_t>(it - cumulative.begin());
    }
    return out;
}

// num_samples distinct classes, each drawn in proportion to the weight not yet taken (successive
// sampling, the law of CNTK's rejection sampler and of numpy's choice(replace=False)), in draw order.
// Efraimidis & Spirakis (2006): the classes with the largest keys log(u_i) / w_i, one uniform per class
// (counter offset + class), sorted by key, are such a draw. Unlike rejection sampling it never stalls
// on a dominant class.
std::vector<int64_t> draw_without_replacement(const std::vector<double>& w, int64_t num_samples,
                                              uint64_t seed, uint64_t offset) {
    std::vector<std::pair<double, int64_t>> keys;
    for (size_t i = 0; i < w.size(); ++i) {
        if (w[i] <= 0.0) continue;
        // u in (0, 1]: log(u) <= 0, and a larger weight pulls the key towards 0.
        const double u = 1.0 - uniform_at(seed, offset + i);
        keys.emplace_back(std::log(u) / w[i], static_cast<int64_t>(i));
    }
    const auto k = static_cast<std::ptrdiff_t>(num_samples);
    std::partial_sort(keys.begin(), keys.begin() + k, keys.end(),
                      [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<int64_t> out;
    for (std::ptrdiff_t i = 0; i < k; ++i) out.push_back(keys[static_cast<size_t>(i)].second);
    return out;
}

std::vector<int64_t> draw(const std::vector<double>& w, int64_t num_samples, bool allow_duplicates,
                          uint64_t seed, uint64_t offset) {
    return allow_duplicates ? draw_with_replacement(w, num_samples, seed, offset)
                            : draw_without_replacement(w, num_samples, seed, offset);
}
// Counters one draw consumes.
uint64_t counters_per_draw(size_t num_classes, int64_t num_samples, bool allow_duplicates) {
    return allow_duplicates ? static_cast<uint64_t>(num_samples) : num_classes;
}

// The expected number of times each class is drawn. With duplicates exactly num_samples * p. Without,
// CNTK's estimate 1 - (1 - p)^N, N the mean number of tries a rejection sampler needs for num_samples
// distinct classes over 10 trial draws. ctk averages the expected tries of each trial draw,
// sum_j 1 / (1 - P_j) with P_j the probability mass taken before pick j (the same expectation as
// CNTK's counted tries, with less variance). The trials use counters from 0 of `seed`, so the value is
// a function of the weights and the seed, as CNTK's, which recomputed it only when the weights changed.
std::vector<double> inclusion_frequency(const std::vector<double>& w, int64_t num_samples,
                                        bool allow_duplicates, uint64_t seed) {
    double total = 0.0;
    for (double v : w) total += v;
    std::vector<double> out(w.size());
    if (allow_duplicates) {
        for (size_t i = 0; i < w.size(); ++i) out[i] = static_cast<double>(num_samples) * w[i] / total;
        return out;
    }
    constexpr int kTrials = 10;  // CNTK's number of experiments
    double tries = 0.0;
    for (int t = 0; t < kTrials; ++t) {
        double taken = 0.0;
        for (int64_t c :
             draw_without_replacement(w, num_samples, seed, static_cast<uint64_t>(t) * w.size())) {
            tries += 1.0 / std::max(1.0 - taken / total, std::numeric_limits<double>::min());
            taken += w[static_cast<size_t>(c)];
        }
    }
    tries /= kTrials;
    for (size_t i = 0; i < w.size(); ++i) out[i] = -std::expm1(tries * std::log1p(-w[i] / total));
    return out;
}

// ---- shape rules: weights a static vector [C]; attrs numSamples, allowDuplicates, rngSeed ----
void check_sampling(InferContext& c) {
    const Variable& w = c.inputs[0];
    CTK_CHECK(w.dynamic_axes().empty(), ShapeError, c.where, ": the sampling weights ", w.to_string(),
              " must not have dynamic axes (one draw serves the whole minibatch)");
    // A vector [C], or [1, ..., 1, C] (CNTK counted the classes along its first, Python's last, axis;
    // CNTK's word_rnn example samples from weights reshaped to (1, C)).
    bool vector = w.rank() >= 1;
    for (int i = 0; vector && i + 1 < w.rank(); ++i) vector = w.shape()[static_cast<size_t>(i)] == 1;
    CTK_CHECK(vector, ShapeError, c.where, ": the sampling weights ", w.to_string(),
              " must be a vector [C] (or [1, C])");
    CTK_CHECK(is_floating(w.dtype()), TypeError, c.where, ": the sampling weights ", w.to_string(),
              " must be floating-point");
    const int64_t k = c.attrs.get<int64_t>("numSamples");
    const int64_t classes = w.shape().back();
    CTK_CHECK(k > 0, ValueError, c.where, ": the number of samples must be > 0, got ", k);
    CTK_CHECK(c.attrs.get<bool>("allowDuplicates") || classes < 0 || k < classes, ValueError, c.where,
              ": sampling ", k, " classes without duplicates needs more than ", k, " classes, but ",
              w.to_string(), " has ", classes);
}
std::vector<OutputSpec> infer_random_sample(InferContext& c) {
    check_sampling(c);
    const Variable& w = c.inputs[0];
    return {{Dims{c.attrs.get<int64_t>("numSamples"), w.shape().back()}, w.dtype(), {}}};
}
std::vector<OutputSpec> infer_inclusion_frequency(InferContext& c) {
    check_sampling(c);
    const Variable& w = c.inputs[0];
    return {{w.shape(), w.dtype(), {}}};
}

struct SamplingAttrs {
    int64_t num_samples;
    bool allow_duplicates;
    uint64_t seed;
};
SamplingAttrs sampling_attrs(const Attributes& a) {
    return {a.get<int64_t>("numSamples"), a.get<bool>("allowDuplicates"),
            static_cast<uint64_t>(a.get<int64_t>("rngSeed"))};
}

// One-hot rows [num_samples, C] in index form: times() with them gathers rows (no dense [k, C] matrix).
void forward_random_sample(ForwardContext& c) {
    const Tensor& weights = c.inputs[0].data();
    const SamplingAttrs a = sampling_attrs(c.attrs);
    std::vector<double> w = checked_weights(weights, a.num_samples, a.allow_duplicates, c.where);
    std::vector<int64_t> classes = draw(w, a.num_samples, a.allow_duplicates, a.seed, c.rng_offset);
    c.rng_offset += counters_per_draw(w.size(), a.num_samples, a.allow_duplicates);
    // Made (and checked) on the host, then moved: a check of GPU indices would read them back.
    c.outputs.push_back(Value::one_hot(Tensor::from_vector(classes, Shape{a.num_samples}),
                                       static_cast<int64_t>(w.size()), weights.dtype())
                            .to(weights.device()));
}

void forward_inclusion_frequency(ForwardContext& c) {
    const Tensor& weights = c.inputs[0].data();
    const SamplingAttrs a = sampling_attrs(c.attrs);
    std::vector<double> w = checked_weights(weights, a.num_samples, a.allow_duplicates, c.where);
    Tensor f = Tensor::from_vector(inclusion_frequency(w, a.num_samples, a.allow_duplicates, a.seed),
                                   weights.shape());
    c.outputs.push_back(Value(f.to(weights.dtype()).to(weights.device())));
}

}  // namespace

void register_sampling_ops(OpTable& t) {
    t.add(PrimitiveOp::random_sample,
          OpDef{"RandomSample", 1, 1, infer_random_sample, forward_random_sample, nullptr});
    t.add(PrimitiveOp::random_sample_inclusion_frequency,
          OpDef{"RandomSampleInclusionFrequency", 1, 1, infer_inclusion_frequency,
                forward_inclusion_frequency, nullptr});
    t.refuse_capture(PrimitiveOp::random_sample, kRandomStreamRecorded);
    t.refuse_capture(PrimitiveOp::random_sample_inclusion_frequency, kRandomStreamRecorded);
}

}  // namespace detail

namespace {
Attributes sampling_attributes(int64_t num_samples, bool allow_duplicates, uint64_t seed) {
    const uint64_t s = seed == kSentinelSeed ? next_worker_random_seed() : seed;
    return Attributes{{"numSamples", num_samples},
                      {"allowDuplicates", allow_duplicates},
                      {"rngSeed", static_cast<int64_t>(s)}};
}
}  // namespace

FunctionPtr random_sample(const Variable& weights, int64_t num_samples, bool allow_duplicates, uint64_t seed,
                          const std::string& name) {
    return detail::make_op(PrimitiveOp::random_sample, {weights},
                           sampling_attributes(num_samples, allow_duplicates, seed), name);
}

FunctionPtr random_sample_inclusion_frequency(const Variable& weights, int64_t num_samples,
                                              bool allow_duplicates, uint64_t seed, const std::string& name) {
    return detail::make_op(PrimitiveOp::random_sample_inclusion_frequency, {weights},
                           sampling_attributes(num_samples, allow_duplicates, seed), name);
}

// CNTK's NCELoss (Function.cpp), after C. Dyer's notes on noise-contrastive estimation: with q the
// normalised noise distribution and k samples shared by the minibatch, per sample
//   softplus(log(k q_y) - s_y) + k * sum_j iw_j * log_add_exp(s_j, log(k q_j)) - H,
// s = W x + b the logits of the label y and of the sampled classes j, iw = q / inclusion frequency
// (1/k with duplicates) and H = sum_c k q_c log(k q_c), CNTK's constant in place of the sampled
// sum_j log(k q_j) (same gradients). The noise-derived vectors are computed here once, as constants.
FunctionPtr nce_loss(const Variable& weights, const Variable& biases, const Variable& inputs,
                     const Variable& labels, const Variable& noise_distribution, int64_t num_samples,
                     bool allow_duplicates, uint64_t seed, const std::string& name) {
    const std::string where = "nce_loss '" + name + "'";
    CTK_CHECK(noise_distribution.is_constant(), ValueError, where, ": noise_distribution ",
              noise_distribution.to_string(), " must be a Constant (it is read once, at construction)");
    CTK_CHECK(noise_distribution.rank() == 1, ShapeError, where, ": noise_distribution ",
              noise_distribution.to_string(), " must be a vector");
    const int64_t classes = noise_distribution.shape()[0];
    CTK_CHECK(num_samples > 0, ValueError, where, ": num_samples must be > 0, got ", num_samples);
    CTK_CHECK(allow_duplicates || num_samples < classes, ValueError, where, ": ", num_samples,
              " samples without duplicates need more than ", num_samples, " classes, but there are ",
              classes);
    CTK_CHECK(weights.rank() == 2 && weights.shape()[0] == classes, ShapeError, where, ": weights ",
              weights.to_string(), " must be [", classes, ", input dim] (one row per class)");
    CTK_CHECK((biases.rank() == 2 && biases.shape() == Dims{classes, 1}) ||
                  (biases.rank() == 1 && biases.shape()[0] == classes),
              ShapeError, where, ": biases ", biases.to_string(), " must be [", classes, ", 1] or [", classes,
              "]");
    CTK_CHECK(inputs.rank() == 1, ShapeError, where, ": inputs ", inputs.to_string(), " must be a vector");
    CTK_CHECK(labels.rank() == 1 && labels.shape()[0] == classes, ShapeError, where, ": labels ",
              labels.to_string(), " must be one-hot vectors [", classes, "]");
    const int64_t dim = inputs.shape()[0];
    Dims& wshape = weights.impl()->shape;
    if (wshape[1] == kInferredDim) wshape[1] = dim;  // CNTK inferred it the same way, from the inputs
    CTK_CHECK(wshape[1] == dim, ShapeError, where, ": weights ", weights.to_string(), " take inputs of ",
              wshape[1], " features but inputs ", inputs.to_string(), " have ", dim);

    // The noise-derived constants, in double, then in the inputs' dtype.
    std::vector<double> q = noise_distribution.value().to_vector<double>();
    double total = 0.0;
    for (size_t i = 0; i < q.size(); ++i) {
        CTK_CHECK(q[i] > 0.0 && std::isfinite(q[i]), ValueError, where, ": noise_distribution entry ", i,
                  " is ", q[i], "; entries must be positive");
        total += q[i];
    }
    for (double& v : q) v /= total;
    const uint64_t s = seed == kSentinelSeed ? next_worker_random_seed() : seed;
    const std::vector<double> included = detail::inclusion_frequency(q, num_samples, allow_duplicates, s);
    const double k = static_cast<double>(num_samples);
    std::vector<double> log_kq(q.size()), k_iw(q.size());
    double entropy = 0.0;  // CNTK's name for H
    for (size_t i = 0; i < q.size(); ++i) {
        log_kq[i] = std::log(k * q[i]);
        k_iw[i] = k * q[i] / included[i];
        entropy += k * q[i] * log_kq[i];
    }
    const DataType dtype = inputs.dtype();
    auto column = [&](const std::vector<double>& v, const char* what) {
        return constant(Tensor::from_vector(v, Shape{classes, 1}).to(dtype), where + " " + what);
    };
    Variable noise = constant(Tensor::from_vector(q, Shape{classes}).to(dtype), "noise");
    Variable log_noise = column(log_kq, "logNoisePrior"), weights_k = column(k_iw, "importanceWeights");
    Variable b = biases.rank() == 1 ? Variable(reshape(biases, {classes, 1})) : biases;

    auto body = [&](const std::vector<Variable>& in) {
        const Variable &x = in[0], &y = in[1];
        // Negatives: k classes for the whole minibatch, as one-hot rows [k, C] (times() gathers rows).
        Variable samples = random_sample(noise, num_samples, allow_duplicates, s, "negativeSamples");
        Variable sampled_logits = plus(times(x, transpose(times(samples, weights), {1, 0})),
                                       reshape(times(samples, b), {num_samples}));
        Variable sampled_log_noise = reshape(times(samples, log_noise), {num_samples});
        Variable sampled_weights = reshape(times(samples, weights_k), {num_samples});
        Variable negative =
            minus(reduce_sum(element_times(sampled_weights, log_add_exp(sampled_logits, sampled_log_noise)),
                             {Axis::all_static_axes()}, false),
                  constant(entropy, dtype, "noisePriorEntropy"));
        // The label's logit and log noise.
        Variable label_logit =
            plus(reduce_sum(element_times(x, times(y, weights)), {Axis::all_static_axes()}, false),
                 reshape(times(y, b), Dims{}));
        Variable label_log_noise = reshape(times(y, log_noise), Dims{});
        Variable positive = minus(log_add_exp(label_logit, label_log_noise), label_logit);
        return Variable(plus(positive, negative));
    };
    return detail::make_block_op("NCE", {inputs, labels}, body, name);
}

}  // namespace ctk
