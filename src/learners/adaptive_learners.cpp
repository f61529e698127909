// AdaGrad, FSAdaGrad, Adam/Adamax, RMSProp and AdaDelta with CNTK 2.7's dense CPU update rules
// (CPUMatrix::Adagrad, FSAdagrad, Adam, RmsProp, AdaDelta and Learner.cpp's per-minibatch counters).
// Each parameter is updated in one fused pass, or two where CNTK divides by a mean over all elements
// (AdaGrad's and RMSProp's need_ave_multiplier).
#include <cmath>

#include "learners/learner_impl.h"

namespace ctk {

namespace {

// Learners with one learner-wide double counter that the checkpoint must carry.
class CountingLearner : public Learner {
public:
    using Learner::Learner;

    Dictionary checkpoint_state() const override {
        Dictionary d = Learner::checkpoint_state();
        d.set("smoothed_count", smoothed_count_);
        return d;
    }
    void restore_from_checkpoint(const Dictionary& state) override {
        CTK_CHECK(state.contains("smoothed_count"), ValueError, name_,
                  ": restore_from_checkpoint: the state has no smoothed_count");
        const double count = state.at("smoothed_count").as_double();
        Learner::restore_from_checkpoint(state);
        smoothed_count_ = count;
    }

protected:
    double smoothed_count_ = 0.0;
};

// AdaGrad: acc += g^2; g' = g / sqrt(acc + 1e-16); w -= lr / ave * g', where ave is the mean of
// 1 / sqrt(acc + 1e-16) over the parameter when need_ave_multiplier, else 1.
class AdaGradLearner final : public Learner {
public:
    AdaGradLearner(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                   bool need_ave_multiplier, const LearnerOptions& options)
        : Learner(parameters, lr, options, "adagrad"), need_ave_multiplier_(need_ave_multiplier) {}

    std::string recording_refusal() const override { return options_recording_refusal(); }

protected:
    int state_tensors() const override { return 1; }

    void update_parameter(const Variable& p, Tensor& value, const Tensor& gradient,
                          std::vector<Tensor>& state, int64_t) override {
        detail::dispatch_rule_dtype(value.dtype(), name_, [&](auto tag) {
            using T = decltype(tag);
            const int64_t n = value.numel();
            const T floor = T(1e-16f);  // CNTK's floor is the float literal 1e-16f, also for double
            const detail::rules::AdaGradAccumulate<T> accumulate{state[0].data<T>(), gradient.data<T>(),
                                                                 floor};
            const T* rate = step_scalar<T>(value, kLearningRate);
            if (need_ave_multiplier_) {
                const Tensor sum = detail::sum_rule_tensor(value, n, partials_, accumulate);
                T* divided = derived_scalar<T>(p, value, kMeanMultipliedRate);
                detail::mean_multiplied_rate(value, sum, step_scalar64(value, kLearningRate), divided);
                rate = divided;
            } else {
                detail::apply_rule(value, n, accumulate);
            }
            detail::apply_rule(value, n,
                               detail::rules::AdaGradStep<T>{value.data<T>(), state[0].data<T>(),
                                                             gradient.data<T>(), rate, floor});
        });
    }

private:
    bool need_ave_multiplier_;
    std::vector<double> partials_;
};

// FSAdaGrad: a learner-wide count c = vm * c + (1 - vm) * mb; per element
//   v = vm * v + (1 - vm) * g^2;  g *= min(sqrt(c) / sqrt(v), 10) (if v != 0);
//   sg = m * sg + ugf * g (if m > 0, else sg untouched and g used as is);  w -= lr * g.
class FSAdaGradLearner final : public CountingLearner {
public:
    FSAdaGradLearner(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                     const TrainingParameterSchedule& momentum, bool unit_gain,
                     const TrainingParameterSchedule& variance_momentum, const LearnerOptions& options)
        : CountingLearner(parameters, lr, options, "fsadagrad"),
          momentum_(momentum),
          variance_momentum_(variance_momentum),
          unit_gain_(unit_gain) {
        detail::check_momentum(momentum_, name_, "momentum");
        detail::check_momentum(variance_momentum_, name_, "variance_momentum");
    }

    std::string recording_refusal() const override { return options_recording_refusal(); }

protected:
    enum { kMomentum = kFirstSubclassSlot, kVarianceMomentum, kUnitGainFactor, kMultiplier };

    int state_tensors() const override { return 2; }  // [0] smoothed g^2, [1] smoothed gradient

    void report_schedules() override {
        Learner::report_schedules();
        report_schedule(momentum_, "Momentum", last_reported_momentum_);
    }

    void on_minibatch(int64_t mb_size) override {
        const double vm = momentum_for(variance_momentum_, mb_size);
        smoothed_count_ = vm * smoothed_count_ + (1.0 - vm) * double(mb_size);
    }

    void step_scalars(int64_t mb_size, double, double* slots) override {
        const double m = momentum_for(momentum_, mb_size);
        slots[kMomentum] = m;
        slots[kVarianceMomentum] = momentum_for(variance_momentum_, mb_size);
        slots[kUnitGainFactor] = unit_gain_ ? 1.0 - m : 1.0;
        // CNTK's targetAdagradAvDenom (1) times sqrt(#samples in the g^2 average).
        slots[kMultiplier] = std::sqrt(smoothed_count_);
    }

    void update_parameter(const Variable&, Tensor& value, const Tensor& gradient, std::vector<Tensor>& state,
                          int64_t) override {
        detail::dispatch_rule_dtype(value.dtype(), name_, [&](auto tag) {
            using T = decltype(tag);
            detail::apply_rule(
                value, value.numel(),
                detail::rules::FSAdaGradStep<T>{
                    value.data<T>(), state[0].data<T>(), state[1].data<T>(), gradient.data<T>(),
                    step_scalar<T>(value, kMomentum), step_scalar<T>(value, kVarianceMomentum),
                    step_scalar<T>(value, kUnitGainFactor), step_scalar<T>(value, kLearningRate),
                    step_scalar<T>(value, kMultiplier)});
        });
    }

private:
    TrainingParameterSchedule momentum_, variance_momentum_;
    bool unit_gain_;
    double last_reported_momentum_ = std::numeric_limits<double>::quiet_NaN();
};

// Adam: t += 1 per minibatch; bias = sqrt(1 - vm^t) / (1 - m^t) (Adamax: 1 / (1 - m^t)); per element
//   v = vm * v + (1 - vm) * g^2, d = sqrt(v)   (Adamax: v = max(vm * v, |g|), d = v);
//   sg = m * sg + ugf * g;  w -= lr * sg * bias / (d + epsilon).
class AdamLearner final : public CountingLearner {
public:
    AdamLearner(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                const TrainingParameterSchedule& momentum, bool unit_gain,
                const TrainingParameterSchedule& variance_momentum, double epsilon, bool adamax,
                const LearnerOptions& options)
        : CountingLearner(parameters, lr, options, "adam"),
          momentum_(momentum),
          variance_momentum_(variance_momentum),
          unit_gain_(unit_gain),
          epsilon_(epsilon),
          adamax_(adamax) {
        detail::check_momentum(momentum_, name_, "momentum");
        detail::check_momentum(variance_momentum_, name_, "variance_momentum");
        CTK_CHECK(epsilon >= 0, ValueError, name_, ": epsilon must be >= 0, got ", epsilon);
    }

    std::string recording_refusal() const override { return options_recording_refusal(); }

protected:
    enum { kMomentum = kFirstSubclassSlot, kVarianceMomentum, kUnitGainFactor, kBiasCorrection };

    int state_tensors() const override { return 2; }  // [0] second moment, [1] first moment

    void report_schedules() override {
        Learner::report_schedules();
        report_schedule(momentum_, "Momentum", last_reported_momentum_);
    }

    void on_minibatch(int64_t) override { smoothed_count_ += 1.0; }

    void step_scalars(int64_t mb_size, double, double* slots) override {
        const double m = momentum_for(momentum_, mb_size);
        const double vm = momentum_for(variance_momentum_, mb_size);
        const double t = smoothed_count_;
        slots[kMomentum] = m;
        slots[kVarianceMomentum] = vm;
        slots[kUnitGainFactor] = unit_gain_ ? 1.0 - m : 1.0;
        slots[kBiasCorrection] = adamax_ ? 1.0 / (1.0 - std::pow(m, t))
                                         : std::sqrt(1.0 - std::pow(vm, t)) / (1.0 - std::pow(m, t));
    }

    void update_parameter(const Variable&, Tensor& value, const Tensor& gradient, std::vector<Tensor>& state,
                          int64_t) override {
        detail::dispatch_rule_dtype(value.dtype(), name_, [&](auto tag) {
            using T = decltype(tag);
            detail::apply_rule(
                value, value.numel(),
                detail::rules::AdamStep<T>{
                    value.data<T>(), state[0].data<T>(), state[1].data<T>(), gradient.data<T>(),
                    step_scalar<T>(value, kMomentum), step_scalar<T>(value, kVarianceMomentum),
                    step_scalar<T>(value, kUnitGainFactor), step_scalar<T>(value, kLearningRate),
                    step_scalar<T>(value, kBiasCorrection), T(epsilon_), adamax_});
        });
    }

private:
    TrainingParameterSchedule momentum_, variance_momentum_;
    bool unit_gain_;
    double epsilon_;
    bool adamax_;
    double last_reported_momentum_ = std::numeric_limits<double>::quiet_NaN();
};

// RMSProp (CNTK's variant with per-element step sizes): on the first minibatch v = g^2, step = 0.02,
// sign = 0; then per element
//   v = gamma * v + (1 - gamma) * g^2;
//   step = sign * sgn(g) > 0 ? min(step * inc, max) : max(step * dec, min);  sign = sgn(g);
//   a = step / sqrt(v + 1e-6);  w -= lr / ave * a * g, ave = mean(a) if need_ave_multiplier else 1.
class RMSPropLearner final : public CountingLearner {
public:
    RMSPropLearner(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr, double gamma,
                   double inc, double dec, double max, double min, bool need_ave_multiplier,
                   const LearnerOptions& options)
        : CountingLearner(parameters, lr, options, "rmsprop"),
          gamma_(gamma),
          inc_(inc),
          dec_(dec),
          max_(max),
          min_(min),
          need_ave_multiplier_(need_ave_multiplier) {
        CTK_CHECK(gamma > 0 && gamma < 1, ValueError, name_, ": gamma must be in (0, 1), got ", gamma);
        CTK_CHECK(inc > 1, ValueError, name_, ": inc must be > 1, got ", inc);
        CTK_CHECK(dec > 0 && dec < 1, ValueError, name_, ": dec must be in (0, 1), got ", dec);
        CTK_CHECK(min > 0, ValueError, name_, ": min must be > 0, got ", min);
        CTK_CHECK(max > min, ValueError, name_, ": max must be > min, got max ", max, " and min ", min);
    }

    std::string recording_refusal() const override { return options_recording_refusal(); }

protected:
    enum { kInitialized = kFirstSubclassSlot };

    int state_tensors() const override { return 3; }  // [0] mean g^2, [1] sign of the last g, [2] step

    void on_minibatch(int64_t) override { smoothed_count_ += 1.0; }

    // CNTK (re)initialises the state while its minibatch count is at most 1.
    void step_scalars(int64_t, double, double* slots) override {
        slots[kInitialized] = smoothed_count_ > 1.0 ? 1.0 : 0.0;
    }

    void update_parameter(const Variable& p, Tensor& value, const Tensor& gradient,
                          std::vector<Tensor>& state, int64_t) override {
        detail::dispatch_rule_dtype(value.dtype(), name_, [&](auto tag) {
            using T = decltype(tag);
            const int64_t n = value.numel();
            const detail::rules::RMSPropState<T> st{state[0].data<T>(),
                                                    state[1].data<T>(),
                                                    state[2].data<T>(),
                                                    gradient.data<T>(),
                                                    T(gamma_),
                                                    T(1) - T(gamma_),
                                                    T(inc_),
                                                    T(dec_),
                                                    T(max_),
                                                    T(min_),
                                                    T(1e-6f),  // CNTK's float literal, also for double
                                                    step_scalar<T>(value, kInitialized)};
            const T* rate = step_scalar<T>(value, kLearningRate);
            if (need_ave_multiplier_) {
                const Tensor sum =
                    detail::sum_rule_tensor(value, n, partials_, detail::rules::RMSPropStateSum<T>{st});
                T* divided = derived_scalar<T>(p, value, kMeanMultipliedRate);
                detail::mean_multiplied_rate(value, sum, step_scalar64(value, kLearningRate), divided);
                rate = divided;
            }
            detail::apply_rule(
                value, n, detail::rules::RMSPropStep<T>{st, value.data<T>(), rate, !need_ave_multiplier_});
        });
    }

private:
    double gamma_, inc_, dec_, max_, min_;
    bool need_ave_multiplier_;
    std::vector<double> partials_;
};

// AdaDelta: v = rho * v + (1 - rho) * g^2;  dx = -sqrt(u + eps) / sqrt(v + eps) * g;
//           u = rho * u + (1 - rho) * dx^2;  w += lr * dx.
class AdaDeltaLearner final : public Learner {
public:
    AdaDeltaLearner(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr, double rho,
                    double epsilon, const LearnerOptions& options)
        : Learner(parameters, lr, options, "adadelta"), rho_(rho), epsilon_(epsilon) {
        CTK_CHECK(rho >= 0 && rho <= 1, ValueError, name_, ": rho must be in [0, 1], got ", rho);
        CTK_CHECK(epsilon >= 0, ValueError, name_, ": epsilon must be >= 0, got ", epsilon);
    }

    std::string recording_refusal() const override { return options_recording_refusal(); }

protected:
    int state_tensors() const override { return 2; }  // [0] mean g^2, [1] mean dx^2

    void update_parameter(const Variable&, Tensor& value, const Tensor& gradient, std::vector<Tensor>& state,
                          int64_t) override {
        detail::dispatch_rule_dtype(value.dtype(), name_, [&](auto tag) {
            using T = decltype(tag);
            detail::apply_rule(
                value, value.numel(),
                detail::rules::AdaDeltaStep<T>{value.data<T>(), state[0].data<T>(), state[1].data<T>(),
                                               gradient.data<T>(), T(rho_), T(epsilon_),
                                               step_scalar<T>(value, kLearningRate)});
        });
    }

private:
    double rho_, epsilon_;
};

}  // namespace

LearnerPtr adagrad(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                   bool need_ave_multiplier, const LearnerOptions& options) {
    return std::make_shared<AdaGradLearner>(parameters, lr, need_ave_multiplier, options);
}

LearnerPtr fsadagrad(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                     const TrainingParameterSchedule& momentum, bool unit_gain,
                     const TrainingParameterSchedule& variance_momentum, const LearnerOptions& options) {
    return std::make_shared<FSAdaGradLearner>(parameters, lr, momentum, unit_gain, variance_momentum,
                                              options);
}

LearnerPtr adam(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                const TrainingParameterSchedule& momentum, bool unit_gain,
                const TrainingParameterSchedule& variance_momentum, double epsilon, bool adamax,
                const LearnerOptions& options) {
    return std::make_shared<AdamLearner>(parameters, lr, momentum, unit_gain, variance_momentum, epsilon,
                                         adamax, options);
}

LearnerPtr rmsprop(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr, double gamma,
                   double inc, double dec, double max, double min, bool need_ave_multiplier,
                   const LearnerOptions& options) {
    return std::make_shared<RMSPropLearner>(parameters, lr, gamma, inc, dec, max, min, need_ave_multiplier,
                                            options);
}

LearnerPtr adadelta(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr, double rho,
                    double epsilon, const LearnerOptions& options) {
    return std::make_shared<AdaDeltaLearner>(parameters, lr, rho, epsilon, options);
}

}  // namespace ctk
