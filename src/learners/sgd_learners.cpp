// Plain, momentum and Nesterov SGD with CNTK's dense update rules (Matrix::MomentumSGDUpdate and
// NesterovAcceleratedMomentumSGDUpdate): the learning rate is folded into the smoothed gradient,
//   sg = m * sg + ugf * lr * g,  w -= sg                      (momentum)
//   sg = m * sg + ugf * lr * g,  w -= m * sg + ugf * lr * g   (Nesterov)
// with ugf = 1 - m for unit-gain momentum and 1 otherwise, m already scaled to the minibatch.
#include "learners/learner_impl.h"

namespace ctk {

namespace {

class SgdLearner final : public Learner {
public:
    SgdLearner(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
               const LearnerOptions& options)
        : Learner(parameters, lr, options, "sgd") {}

    std::string recording_refusal() const override { return options_recording_refusal(); }

protected:
    void update_parameter(const Variable&, Tensor& value, const Tensor& gradient, std::vector<Tensor>&,
                          int64_t) override {
        detail::dispatch_rule_dtype(value.dtype(), name_, [&](auto tag) {
            using T = decltype(tag);
            detail::apply_rule(value, value.numel(),
                               detail::rules::SgdStep<T>{value.data<T>(), gradient.data<T>(),
                                                         step_scalar<T>(value, kLearningRate)});
        });
    }
};

class MomentumLearner final : public Learner {
public:
    MomentumLearner(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                    const TrainingParameterSchedule& momentum, bool unit_gain, bool nesterov,
                    const LearnerOptions& options)
        : Learner(parameters, lr, options, nesterov ? "nesterov" : "momentum_sgd"),
          momentum_(momentum),
          unit_gain_(unit_gain),
          nesterov_(nesterov) {
        detail::check_momentum(momentum_, name_, "momentum");
    }

    std::string recording_refusal() const override { return options_recording_refusal(); }

protected:
    enum { kMomentum = kFirstSubclassSlot, kStepSize };

    int state_tensors() const override { return 1; }

    void report_schedules() override {
        Learner::report_schedules();
        report_schedule(momentum_, "Momentum", last_reported_momentum_);
    }

    void step_scalars(int64_t mb_size, double lr, double* slots) override {
        const double m = momentum_for(momentum_, mb_size);
        const double ugf = unit_gain_ ? 1.0 - m : 1.0;
        slots[kMomentum] = m;
        slots[kStepSize] = ugf * lr;
    }

    void update_parameter(const Variable&, Tensor& value, const Tensor& gradient, std::vector<Tensor>& state,
                          int64_t) override {
        detail::dispatch_rule_dtype(value.dtype(), name_, [&](auto tag) {
            using T = decltype(tag);
            detail::apply_rule(
                value, value.numel(),
                detail::rules::MomentumStep<T>{value.data<T>(), state[0].data<T>(), gradient.data<T>(),
                                               step_scalar<T>(value, kMomentum),
                                               step_scalar<T>(value, kStepSize), nesterov_});
        });
    }

private:
    TrainingParameterSchedule momentum_;
    bool unit_gain_;
    bool nesterov_;
    double last_reported_momentum_ = std::numeric_limits<double>::quiet_NaN();
};

}  // namespace

LearnerPtr sgd(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
               const LearnerOptions& options) {
    return std::make_shared<SgdLearner>(parameters, lr, options);
}

LearnerPtr momentum_sgd(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                        const TrainingParameterSchedule& momentum, bool unit_gain,
                        const LearnerOptions& options) {
    return std::make_shared<MomentumLearner>(parameters, lr, momentum, unit_gain, false, options);
}

LearnerPtr nesterov(const std::vector<Variable>& parameters, const TrainingParameterSchedule& lr,
                    const TrainingParameterSchedule& momentum, bool unit_gain,
                    const LearnerOptions& options) {
    return std::make_shared<MomentumLearner>(parameters, lr, momentum, unit_gain, true, options);
}

}  // namespace ctk
