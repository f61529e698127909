// The Learner base: CNTK's LearnerBase::Update with its PreProcess (mean gradient, clipping, L2) and
// PostProcess (noise injection, L1 proximal step), value reporting, and checkpoint state. The concrete
// update rules live in sgd_learners.cpp and adaptive_learners.cpp.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_set>

#include "ctk/core/rng.h"
#include "learners/learner_impl.h"

namespace ctk {

namespace detail {

void check_momentum(const TrainingParameterSchedule& s, const char* learner, const char* argument) {
    for (double m : s.values())
        CTK_CHECK(m >= 0 && m < 1, ValueError, learner, ": ", argument, " must be in [0, 1), got ", m);
}

}  // namespace detail

namespace {

std::string schedule_key(const char* name, const TrainingParameterSchedule& s) {
    if (s.minibatch_size() == TrainingParameterSchedule::kIgnoreMinibatchSize)
        return std::string(name) + " per minibatch";
    return std::string(name) + " per " + std::to_string(s.minibatch_size()) + " samples";
}

DictionaryValue::List dims_list(const Shape& shape) {
    DictionaryValue::List l;
    for (int64_t d : shape.dims()) l.emplace_back(d);
    return l;
}

std::string dims_list_string(const DictionaryValue::List& l) {
    std::ostringstream out;
    out << "[";
    for (size_t i = 0; i < l.size(); ++i) out << (i ? ", " : "") << l[i].as_int();
    out << "]";
    return out.str();
}

std::string param_label(const Variable& p) {
    return "'" + p.name() + "' (uid " + p.uid() + ")";
}

constexpr int64_t kCheckpointVersion = 1;

}  // namespace

Learner::Learner(std::vector<Variable> parameters, TrainingParameterSchedule lr, LearnerOptions options,
                 const char* name)
    : parameters_(std::move(parameters)), lr_(std::move(lr)), options_(std::move(options)), name_(name) {
    CTK_CHECK(!parameters_.empty(), ValueError, name_, ": the parameters list must not be empty");
    std::unordered_set<Variable, VariableHash> seen;
    for (size_t i = 0; i < parameters_.size(); ++i) {
        const Variable& p = parameters_[i];
        CTK_CHECK(p.defined(), ValueError, name_, ": parameters[", i, "] is an undefined Variable");
        CTK_CHECK(p.is_parameter(), ValueError, name_, ": parameters[", i, "] is ", p.to_string(),
                  ", not a Parameter");
        CTK_CHECK(seen.insert(p).second, ValueError, name_, ": parameters[", i, "] ", p.to_string(),
                  " appears more than once");
    }
    for (double v : lr_.values())
        CTK_CHECK(v >= 0 && std::isfinite(v), ValueError, name_, ": lr must be finite and >= 0, got ", v);
    CTK_CHECK(options_.l1_regularization_weight >= 0, ValueError, name_,
              ": l1_regularization_weight must be >= 0, got ", options_.l1_regularization_weight);
    CTK_CHECK(options_.l2_regularization_weight >= 0, ValueError, name_,
              ": l2_regularization_weight must be >= 0, got ", options_.l2_regularization_weight);
    CTK_CHECK(options_.gradient_clipping_threshold_per_sample > 0, ValueError, name_,
              ": gradient_clipping_threshold_per_sample must be > 0, got ",
              options_.gradient_clipping_threshold_per_sample);
    for (double v : options_.gaussian_noise_injection_std_dev.values())
        CTK_CHECK(v >= 0, ValueError, name_, ": gaussian_noise_injection_std_dev must be >= 0, got ", v);
    noise_seed_ = options_.gaussian_noise_injection_seed == kSentinelSeed
                      ? next_random_seed()
                      : options_.gaussian_noise_injection_seed;
}

double Learner::learning_rate() const {
    return current_value(lr_);
}

void Learner::reset_learning_rate(const TrainingParameterSchedule& lr) {
    for (double v : lr.values())
        CTK_CHECK(v >= 0 && std::isfinite(v), ValueError, name_, ": lr must be finite and >= 0, got ", v);
    // The new schedule starts now: shift it by the current count (CNTK's ResetLearningRate).
    lr_ = lr.shifted(lr.is_sweep_based() ? sweeps_seen_ : samples_seen_);
}

void Learner::report(const std::string& key, double value) const {
    for (const auto& r : reporters_) r(key, value);
}

void Learner::report_schedule(const TrainingParameterSchedule& s, const char* name, double& last) const {
    const double v = current_value(s);
    if (v == last) return;  // NaN (never reported) compares unequal
    last = v;
    report(schedule_key(name, s), v);
}

void Learner::report_schedules() {
    report_schedule(lr_, "Learning rate", last_reported_lr_);
}

double Learner::effective_learning_rate(int64_t mb_size) const {
    const double lr = learning_rate();
    const auto mb = static_cast<double>(mb_size);
    if (lr_.minibatch_size() == TrainingParameterSchedule::kIgnoreMinibatchSize)
        return compatible_mode() ? lr : lr / mb;  // per minibatch: a mean-gradient step
    const auto ref = static_cast<double>(lr_.minibatch_size());
    return compatible_mode() ? lr * mb / ref : lr / ref;
}

double Learner::momentum_for(const TrainingParameterSchedule& s, int64_t mb_size) const {
    const double m = current_value(s);
    if (s.minibatch_size() == TrainingParameterSchedule::kIgnoreMinibatchSize) return m;
    return std::pow(m, static_cast<double>(mb_size) / static_cast<double>(s.minibatch_size()));
}

std::vector<Tensor>& Learner::state_for(const Variable& p, const Tensor& value) {
    auto it = state_.find(p);
    if (it == state_.end()) {
        std::vector<Tensor> s;
        for (int i = 0; i < state_tensors(); ++i)
            s.push_back(Tensor::zeros(value.shape(), value.dtype(), value.device()));
        it = state_.emplace(p, std::move(s)).first;
    }
    // The state follows its parameter (restored on the CPU, say, before the graph first ran on a GPU).
    for (Tensor& t : it->second)
        if (t.device() != value.device()) t = t.to(value.device());
    return it->second;
}

const Tensor& Learner::preprocess(const Variable& p, const Tensor& value, const Tensor& gradient) {
    // The host's copies of this step's scalars decide which kernels run (the same at every step of a kind).
    const double scale = step_value(kGradientScale);
    const double limit = step_value(kClipLimit);
    // Parameters without regularization (BatchNormalization(disable_regularization=True)) read 0.
    const int l2_slot = p.regularization_enabled() ? kL2Weight : kZero;
    const double l2 = step_value(l2_slot);
    const bool plain_input = gradient.dtype() == value.dtype() && gradient.is_contiguous();
    if (scale == 1.0 && std::isinf(limit) && l2 == 0.0 && plain_input) return gradient;

    Tensor& out = gradient_scratch_[p];
    if (!out.defined() || out.device() != value.device())
        out = Tensor::empty(value.shape(), value.dtype(), value.device());
    const Tensor src = plain_input ? gradient : gradient.contiguous().to(value.dtype());
    const bool truncate = options_.gradient_clipping_with_truncation;
    detail::dispatch_rule_dtype(value.dtype(), name_, [&](auto tag) {
        using T = decltype(tag);
        const int64_t n = value.numel();
        const T* scale_at = step_scalar<T>(value, kGradientScale);
        // Rescaling clip: the whole (mean-scaled) gradient shrinks when its Frobenius norm passes the
        // limit; the norm and the scale it gives stay where the parameter lives.
        if (!truncate && !std::isinf(limit)) {
            const Tensor sum_of_squares =
                detail::sum_rule_tensor(value, n, partials_, detail::rules::GradientSquare<T>{src.data<T>()});
            T* clipped_scale = derived_scalar<T>(p, value, kClipScale);
            detail::apply_rule(value, 1,
                               detail::rules::ClipScale<T>{sum_of_squares.data<double>(),
                                                           step_scalar64(value, kGradientScale),
                                                           step_scalar64(value, kClipLimit), clipped_scale});
            scale_at = clipped_scale;
        }
        detail::apply_rule(value, n,
                           detail::rules::PrepareGradient<T>{src.data<T>(), value.data<T>(), out.data<T>(),
                                                             scale_at, step_scalar<T>(value, kClipLimit),
                                                             step_scalar<T>(value, l2_slot),
                                                             truncate && !std::isinf(limit)});
    });
    return out;
}

void Learner::postprocess(const Variable& p, Tensor& value) {
    const double stddev = current_value(options_.gaussian_noise_injection_std_dev);
    if (stddev > 0) {
        // Drawn on the CPU (the same numbers on every device), then added where the parameter lives.
        Tensor& noise = noise_scratch_[p];
        if (!noise.defined()) noise = Tensor::empty(value.shape(), value.dtype());
        Generator gen(noise_seed_, static_cast<uint64_t>(noise_draws_));
        gen.normal(noise, 0.0, stddev);
        noise_draws_ = static_cast<int64_t>(gen.offset());
        const Tensor z = noise.to(value.device());
        detail::dispatch_rule_dtype(value.dtype(), name_, [&](auto tag) {
            using T = decltype(tag);
            detail::apply_rule(value, value.numel(),
                               detail::rules::AddNoise<T>{value.data<T>(), z.data<T>()});
        });
    }
    if (options_.l1_regularization_weight > 0 && p.regularization_enabled()) {
        // Proximal step for the L1 term: soft-threshold by lr * weight (* mb, as the rate is per sample).
        detail::dispatch_rule_dtype(value.dtype(), name_, [&](auto tag) {
            using T = decltype(tag);
            detail::apply_rule(
                value, value.numel(),
                detail::rules::SoftThreshold<T>{value.data<T>(), step_scalar<T>(value, kL1Threshold)});
        });
    }
}

const Tensor* Learner::scalar_block(Device device, DataType dtype) const {
    for (const ScalarBlock& b : scalar_blocks_)
        if (b.device == device && b.dtype == dtype) return &b.slots;
    return nullptr;
}

const void* Learner::step_scalar_address(Device device, DataType dtype, int slot) const {
    CTK_CHECK(slot >= 0 && slot < kMaxStepSlots, ValueError, name_, ": step scalar slot ", slot,
              " out of range");
    const Tensor* block = scalar_block(device, dtype);
    CTK_CHECK(block != nullptr, Error, name_, ": no step scalars for ", dtype_name(dtype), " on ",
              device.to_string(), " (the step was not prepared for this parameter)");
    return static_cast<const char*>(block->raw_data()) + static_cast<size_t>(slot) * block->element_size();
}

void* Learner::derived_scalar_address(const Variable& p, const Tensor& value, int index) {
    Tensor& t = derived_scratch_[p];
    if (!t.defined() || t.device() != value.device() || t.dtype() != value.dtype())
        t = Tensor::empty(Shape{kDerivedScalars}, value.dtype(), value.device());
    return static_cast<char*>(t.raw_data()) + static_cast<size_t>(index) * t.element_size();
}

void Learner::prepare_step(int64_t mb_size) {
    const bool compat = compatible_mode();
    const auto mb = static_cast<double>(mb_size);
    const double lr = effective_learning_rate(mb_size);
    on_minibatch(mb_size);
    const double threshold = options_.gradient_clipping_threshold_per_sample;
    std::fill(step_values_.begin(), step_values_.end(), 0.0);
    step_values_[kLearningRate] = lr;
    step_values_[kGradientScale] = compat ? 1.0 / mb : 1.0;
    step_values_[kClipLimit] = std::isinf(threshold) ? threshold : (compat ? threshold : threshold * mb);
    step_values_[kL2Weight] = options_.l2_regularization_weight * (compat ? 1.0 : mb);
    step_values_[kL1Threshold] = lr * options_.l1_regularization_weight * (compat ? 1.0 : mb);
    step_scalars(mb_size, lr, step_values_.data());

    // A block per device and dtype the parameters have (normally one), and an f64 one per device for
    // what is computed there in double (mean multipliers, clipping norms); each written in queue order.
    std::vector<std::pair<Device, DataType>> wanted;
    for (const Variable& p : parameters_) {
        const Tensor value = p.value();
        detail::dispatch_rule_dtype(value.dtype(), name_, [](auto) {});
        for (DataType dtype : {value.dtype(), DataType::f64})
            if (std::find(wanted.begin(), wanted.end(), std::make_pair(value.device(), dtype)) ==
                wanted.end())
                wanted.emplace_back(value.device(), dtype);
    }
    for (const auto& [device, dtype] : wanted) {
        if (!scalar_block(device, dtype))
            scalar_blocks_.push_back({device, dtype, Tensor::empty(Shape{kMaxStepSlots}, dtype, device)});
        detail::write_scalars(*scalar_block(device, dtype), step_values_.data(), kMaxStepSlots);
    }
}

void Learner::check_gradients(const GradientMap& gradients) const {
    for (const Variable& p : parameters_) {
        auto it = gradients.find(p);
        if (it == gradients.end()) continue;
        const Tensor& g = it->second;
        CTK_CHECK(g.defined(), ValueError, name_, ": the gradient of ", p.to_string(), " is undefined");
        const Tensor value = p.value();
        CTK_CHECK(g.device() == value.device(), DeviceError, name_, ": the gradient of ", p.to_string(),
                  " is on ", g.device().to_string(), " but the parameter is on ", value.device().to_string());
        CTK_CHECK(value.is_contiguous(), NotImplementedError, name_, ": parameter ", p.to_string(),
                  " is not contiguous");
        CTK_CHECK(g.shape() == value.shape(), ShapeError, name_, ": the gradient of ", p.to_string(),
                  " has shape ", g.shape().to_string(), ", expected ", value.shape().to_string());
        detail::dispatch_rule_dtype(value.dtype(), name_, [](auto) {});
    }
}

bool Learner::apply_step(const GradientMap& gradients, int64_t mb_size) {
    for (const Variable& p : parameters_) {
        auto it = gradients.find(p);
        if (it == gradients.end()) continue;
        Tensor value = p.value();
        std::vector<Tensor>& state = state_for(p, value);
        const Tensor& g = preprocess(p, value, it->second);
        update_parameter(p, value, g, state, mb_size);
        postprocess(p, value);
    }
    return true;
}

bool Learner::takes_step(int64_t minibatch_sample_count) {
    CTK_CHECK(minibatch_sample_count >= 0, ValueError, name_,
              ": update: minibatch_sample_count must be >= 0, got ", minibatch_sample_count);
    if (minibatch_sample_count == 0) return false;
    report_schedules();
    // CNTK skips the whole update (counters included) while the learning rate is 0.
    return learning_rate() != 0.0;
}

bool Learner::begin_update(int64_t minibatch_sample_count, bool sweep_end) {
    if (!takes_step(minibatch_sample_count)) return false;
    step_sweep_end_ = sweep_end;
    prepare_step(minibatch_sample_count);
    return true;
}

bool Learner::apply_update(const GradientMap& gradients, int64_t minibatch_sample_count) {
    check_gradients(gradients);
    return apply_step(gradients, minibatch_sample_count);
}

void Learner::end_update(int64_t minibatch_sample_count) {
    samples_seen_ += minibatch_sample_count;
    ++minibatches_seen_;
    if (step_sweep_end_) ++sweeps_seen_;
}

bool Learner::update(const GradientMap& gradients, int64_t minibatch_sample_count, bool sweep_end) {
    if (!takes_step(minibatch_sample_count)) return false;
    // Check everything before touching any state, so a bad gradient leaves the learner unchanged.
    check_gradients(gradients);
    step_sweep_end_ = sweep_end;
    prepare_step(minibatch_sample_count);
    const bool going_on = apply_step(gradients, minibatch_sample_count);
    end_update(minibatch_sample_count);
    return going_on;
}

std::string Learner::recording_refusal() const {
    return std::string("the ") + name_ + " learner's update is not made of ctk's update rules";
}

std::string Learner::options_recording_refusal() const {
    for (double v : options_.gaussian_noise_injection_std_dev.values())
        if (v > 0)
            return std::string("the ") + name_ +
                   " learner injects Gaussian noise (drawn on the host at every step)";
    return {};
}

void Learner::add_recording_key(std::vector<int64_t>& words) const {
    auto address = [&](const Tensor& t) {
        words.push_back(t.defined() ? static_cast<int64_t>(reinterpret_cast<uintptr_t>(t.raw_data())) : 0);
    };
    for (const Variable& p : parameters_) {
        auto s = state_.find(p);
        if (s != state_.end())
            for (const Tensor& t : s->second) address(t);
        auto g = gradient_scratch_.find(p);
        if (g != gradient_scratch_.end()) address(g->second);
        auto d = derived_scratch_.find(p);
        if (d != derived_scratch_.end()) address(d->second);
    }
    for (const ScalarBlock& b : scalar_blocks_) address(b.slots);
}

void Learner::reset_smoothed_gradients() {
    for (auto& [p, tensors] : state_)
        for (Tensor& t : tensors) t.fill(0.0);
}

Dictionary Learner::checkpoint_state() const {
    Dictionary d;
    d.set("type", std::string(name_));
    d.set("version", kCheckpointVersion);
    d.set("sample_count", samples_seen_);
    d.set("minibatch_count", minibatches_seen_);
    d.set("sweep_count", sweeps_seen_);
    d.set("noise_seed", noise_seed_);
    d.set("noise_offset", noise_draws_);
    d.set("learning_rate_schedule", lr_.state());
    DictionaryValue::List params;
    for (const Variable& p : parameters_) {
        Dictionary e;
        e.set("uid", p.uid());
        e.set("name", p.name());
        const Tensor value = p.value();
        e.set("shape", dims_list(value.shape()));
        DictionaryValue::List tensors;
        auto it = state_.find(p);
        for (int i = 0; i < state_tensors(); ++i)
            if (it == state_.end()) {
                tensors.emplace_back(Tensor::zeros(value.shape(), value.dtype()));
            } else {  // a host copy, whatever the device
                const Tensor& t = it->second[static_cast<size_t>(i)];
                Tensor host = Tensor::empty(t.shape(), t.dtype());
                host.copy_from(t);
                tensors.emplace_back(host);
            }
        e.set("state", std::move(tensors));
        params.emplace_back(e);
    }
    d.set("parameters", std::move(params));
    return d;
}

void Learner::restore_from_checkpoint(const Dictionary& state) {
    CTK_CHECK(state.contains("type"), ValueError, name_, ": restore_from_checkpoint: not a learner's state");
    const std::string& type = state.at("type").as_string();
    CTK_CHECK(type == name_, ValueError, name_, ": restore_from_checkpoint: the state was saved by a '", type,
              "' learner");
    CTK_CHECK(state.at("version").as_int() <= kCheckpointVersion, ValueError, name_,
              ": restore_from_checkpoint: state version ", state.at("version").as_int(), " is newer than ",
              kCheckpointVersion);
    const auto& saved = state.at("parameters").as_list();
    CTK_CHECK(saved.size() == parameters_.size(), ValueError, name_,
              ": restore_from_checkpoint: the state holds ", saved.size(), " parameters, this learner has ",
              parameters_.size());

    // Match by uid, else by position; build everything first so a mismatch leaves the learner unchanged.
    std::unordered_map<Variable, std::vector<Tensor>, VariableHash> restored;
    for (size_t i = 0; i < parameters_.size(); ++i) {
        const Variable& p = parameters_[i];
        const Dictionary* entry = nullptr;
        for (const auto& s : saved)
            if (s.as_dictionary().at("uid").as_string() == p.uid()) entry = &s.as_dictionary();
        if (!entry) entry = &saved[i].as_dictionary();
        const Tensor value = p.value();
        const auto& shape = entry->at("shape").as_list();
        const std::string saved_label =
            "'" + entry->at("name").as_string() + "' (uid " + entry->at("uid").as_string() + ")";
        CTK_CHECK(dims_list(value.shape()) == shape, ValueError, name_,
                  ": restore_from_checkpoint: parameter ", param_label(p), " has shape ",
                  value.shape().to_string(), " but the state of ", saved_label, " has shape ",
                  dims_list_string(shape));
        const auto& tensors = entry->at("state").as_list();
        CTK_CHECK(static_cast<int>(tensors.size()) == state_tensors(), ValueError, name_,
                  ": restore_from_checkpoint: ", saved_label, " holds ", tensors.size(),
                  " state tensors, expected ", state_tensors());
        std::vector<Tensor> s;
        for (const auto& t : tensors) {
            const Tensor& src = t.as_tensor();
            CTK_CHECK(src.shape() == value.shape(), ValueError, name_,
                      ": restore_from_checkpoint: a state tensor of ", saved_label, " has shape ",
                      src.shape().to_string(), ", expected ", value.shape().to_string());
            Tensor moved = src.to(value.dtype()).to(value.device());
            s.push_back(moved.shares_storage(src) ? moved.clone() : moved);  // one copy, never an alias
        }
        restored.emplace(p, std::move(s));
    }
    TrainingParameterSchedule lr =
        TrainingParameterSchedule::from_state(state.at("learning_rate_schedule").as_dictionary());

    state_ = std::move(restored);
    lr_ = std::move(lr);
    samples_seen_ = state.at("sample_count").as_int();
    minibatches_seen_ = state.at("minibatch_count").as_int();
    sweeps_seen_ = state.at("sweep_count").as_int();
    noise_seed_ = static_cast<uint64_t>(state.at("noise_seed").as_int());
    noise_draws_ = state.at("noise_offset").as_int();
}

}  // namespace ctk
