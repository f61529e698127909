// The C ABI's training: schedules, CNTK's learners, the Trainer and its checkpoints.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>
#include "c/handles.h"
#include "ctk/core/error.h"
#include "ctk/train/progress.h"

using namespace ctk;        // NOLINT(google-build-using-namespace): the C entry points below
using namespace ctk::capi;  // NOLINT(google-build-using-namespace)

namespace {

LearnerOptions options_arg(const ctk_learner_options* options) {
    LearnerOptions o;
    if (options == nullptr) return o;
    o.l1_regularization_weight = options->l1_regularization_weight;
    o.l2_regularization_weight = options->l2_regularization_weight;
    o.gaussian_noise_injection_std_dev = TrainingParameterSchedule(options->gaussian_noise_injection_std_dev);
    o.gradient_clipping_threshold_per_sample = options->gradient_clipping_threshold_per_sample;
    o.gradient_clipping_with_truncation = options->gradient_clipping_with_truncation != 0;
    o.use_mean_gradient = options->use_mean_gradient != 0;
    return o;
}

const TrainingParameterSchedule& schedule(const ctk_schedule_t* s, const char* argument) {
    return handle(s, argument).schedule;
}

TrainingParameterSchedule variance_or_default(const ctk_schedule_t* s) {
    return s == nullptr ? momentum_schedule_per_sample(0.9999986111120757) : schedule(s, "variance_momentum");
}

template <typename Make>
ctk_status make_learner(const char* function, ctk_learner_t** out, Make&& make) {
    return guarded(function, [&] {
        required(out, "out");
        LearnerPtr learner = make();
        auto* h = new ctk_learner;
        h->learner = std::move(learner);
        *out = h;
    });
}

std::vector<Variable> parameters_arg(const ctk_variable_t* const* parameters, int64_t n) {
    std::vector<Variable> params = variables_arg(parameters, n, "parameters");
    CTK_CHECK(!params.empty(), ValueError, "a learner needs at least one parameter");
    for (size_t i = 0; i < params.size(); ++i)
        CTK_CHECK(params[i].is_parameter(), ValueError, "parameters[", i, "] is ", params[i].to_string(),
                  ", not a parameter");
    return params;
}

ctk::Trainer& trainer_of(const ctk_trainer_t* t) {
    return *handle(t, "trainer").trainer;
}

}  // namespace

extern "C" {

// ---- schedules ----

ctk_status ctk_schedule_create(const double* values, const int64_t* counts, int64_t n, int64_t epoch_size,
                               int64_t minibatch_size, ctk_schedule_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        required(values, "values");
        CTK_CHECK(n >= 1, ValueError, "a schedule needs at least one value, not ", n);
        CTK_CHECK(minibatch_size >= 0, ValueError, "minibatch_size ", minibatch_size, " is negative");
        CTK_CHECK(epoch_size >= 0, ValueError, "epoch_size ", epoch_size, " is negative");
        TrainingParameterSchedule s;
        if (counts == nullptr && n == 1) {
            s = TrainingParameterSchedule(values[0], minibatch_size);
        } else if (counts == nullptr) {
            s = TrainingParameterSchedule(std::vector<double>(values, values + n), epoch_size,
                                          minibatch_size);
        } else {
            std::vector<std::pair<int64_t, double>> entries;
            for (int64_t i = 0; i < n; ++i) {
                CTK_CHECK(counts[i] >= 1, ValueError, "counts[", i, "] is ", counts[i],
                          "; each must be at least 1");
                entries.emplace_back(counts[i], values[i]);
            }
            s = TrainingParameterSchedule(std::move(entries), epoch_size, minibatch_size);
        }
        auto* h = new ctk_schedule;
        h->schedule = std::move(s);
        *out = h;
    });
}

ctk_status ctk_momentum_as_time_constant_schedule(double time_constant, int64_t epoch_size,
                                                  ctk_schedule_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        auto* h = new ctk_schedule;
        h->schedule = momentum_as_time_constant_schedule(time_constant, epoch_size);
        *out = h;
    });
}

ctk_status ctk_schedule_at(const ctk_schedule_t* s, int64_t samples_seen, double* value) {
    return guarded(__func__, [&] {
        const TrainingParameterSchedule& sched = schedule(s, "s");
        *required(value, "value") = sched.at(samples_seen);
    });
}

void ctk_schedule_release(ctk_schedule_t* s) {
    release(s);
}

// ---- learners ----

ctk_status ctk_learner_options_default(ctk_learner_options* options) {
    return guarded(__func__, [&] {
        ctk_learner_options& o = *required(options, "options");
        o.l1_regularization_weight = 0.0;
        o.l2_regularization_weight = 0.0;
        o.gaussian_noise_injection_std_dev = 0.0;
        o.gradient_clipping_threshold_per_sample = std::numeric_limits<double>::infinity();
        o.gradient_clipping_with_truncation = 1;
        o.use_mean_gradient = 0;
    });
}

ctk_status ctk_learner_sgd(const ctk_variable_t* const* parameters, int64_t n, const ctk_schedule_t* lr,
                           const ctk_learner_options* options, ctk_learner_t** out) {
    return make_learner(__func__, out, [&] {
        return sgd(parameters_arg(parameters, n), schedule(lr, "lr"), options_arg(options));
    });
}

ctk_status ctk_learner_momentum_sgd(const ctk_variable_t* const* parameters, int64_t n,
                                    const ctk_schedule_t* lr, const ctk_schedule_t* momentum,
                                    int32_t unit_gain, const ctk_learner_options* options,
                                    ctk_learner_t** out) {
    return make_learner(__func__, out, [&] {
        return momentum_sgd(parameters_arg(parameters, n), schedule(lr, "lr"), schedule(momentum, "momentum"),
                            unit_gain != 0, options_arg(options));
    });
}

ctk_status ctk_learner_nesterov(const ctk_variable_t* const* parameters, int64_t n, const ctk_schedule_t* lr,
                                const ctk_schedule_t* momentum, int32_t unit_gain,
                                const ctk_learner_options* options, ctk_learner_t** out) {
    return make_learner(__func__, out, [&] {
        return nesterov(parameters_arg(parameters, n), schedule(lr, "lr"), schedule(momentum, "momentum"),
                        unit_gain != 0, options_arg(options));
    });
}

ctk_status ctk_learner_adagrad(const ctk_variable_t* const* parameters, int64_t n, const ctk_schedule_t* lr,
                               int32_t need_ave_multiplier, const ctk_learner_options* options,
                               ctk_learner_t** out) {
    return make_learner(__func__, out, [&] {
        return adagrad(parameters_arg(parameters, n), schedule(lr, "lr"), need_ave_multiplier != 0,
                       options_arg(options));
    });
}

ctk_status ctk_learner_fsadagrad(const ctk_variable_t* const* parameters, int64_t n, const ctk_schedule_t* lr,
                                 const ctk_schedule_t* momentum, int32_t unit_gain,
                                 const ctk_schedule_t* variance_momentum, const ctk_learner_options* options,
                                 ctk_learner_t** out) {
    return make_learner(__func__, out, [&] {
        return fsadagrad(parameters_arg(parameters, n), schedule(lr, "lr"), schedule(momentum, "momentum"),
                         unit_gain != 0, variance_or_default(variance_momentum), options_arg(options));
    });
}

ctk_status ctk_learner_adam(const ctk_variable_t* const* parameters, int64_t n, const ctk_schedule_t* lr,
                            const ctk_schedule_t* momentum, int32_t unit_gain,
                            const ctk_schedule_t* variance_momentum, double epsilon, int32_t adamax,
                            const ctk_learner_options* options, ctk_learner_t** out) {
    return make_learner(__func__, out, [&] {
        return adam(parameters_arg(parameters, n), schedule(lr, "lr"), schedule(momentum, "momentum"),
                    unit_gain != 0, variance_or_default(variance_momentum), epsilon, adamax != 0,
                    options_arg(options));
    });
}

ctk_status ctk_learner_rmsprop(const ctk_variable_t* const* parameters, int64_t n, const ctk_schedule_t* lr,
                               double gamma, double inc, double dec, double max, double min,
                               int32_t need_ave_multiplier, const ctk_learner_options* options,
                               ctk_learner_t** out) {
    return make_learner(__func__, out, [&] {
        return rmsprop(parameters_arg(parameters, n), schedule(lr, "lr"), gamma, inc, dec, max, min,
                       need_ave_multiplier != 0, options_arg(options));
    });
}

ctk_status ctk_learner_adadelta(const ctk_variable_t* const* parameters, int64_t n, const ctk_schedule_t* lr,
                                double rho, double epsilon, const ctk_learner_options* options,
                                ctk_learner_t** out) {
    return make_learner(__func__, out, [&] {
        return adadelta(parameters_arg(parameters, n), schedule(lr, "lr"), rho, epsilon,
                        options_arg(options));
    });
}

void ctk_learner_release(ctk_learner_t* learner) {
    release(learner);
}

ctk_status ctk_learner_learning_rate(const ctk_learner_t* learner, double* lr) {
    return guarded(__func__, [&] {
        const double rate = handle(learner, "learner").learner->learning_rate();
        *required(lr, "lr") = rate;
    });
}

ctk_status ctk_learner_reset_learning_rate(ctk_learner_t* learner, const ctk_schedule_t* lr) {
    return guarded(__func__,
                   [&] { handle(learner, "learner").learner->reset_learning_rate(schedule(lr, "lr")); });
}

ctk_status ctk_learner_samples_seen(const ctk_learner_t* learner, int64_t* samples) {
    return guarded(__func__, [&] {
        const int64_t seen = handle(learner, "learner").learner->total_number_of_samples_seen();
        *required(samples, "samples") = seen;
    });
}

// ---- trainer ----

ctk_status ctk_trainer_create(const ctk_function_t* model, const ctk_function_t* loss,
                              const ctk_function_t* metric, const ctk_learner_t* const* learners,
                              int64_t n_learners, int64_t progress_frequency, ctk_trainer_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        const FunctionPtr m = model == nullptr ? nullptr : handle(model, "model").fn;
        const FunctionPtr l = handle(loss, "loss").fn;
        const FunctionPtr e = metric == nullptr ? nullptr : handle(metric, "metric").fn;
        CTK_CHECK(n_learners >= 1, ValueError, "a trainer needs at least one learner, not ", n_learners);
        required(learners, "learners");
        std::vector<LearnerPtr> list;
        for (int64_t i = 0; i < n_learners; ++i) {
            const std::string what = "learners[" + std::to_string(i) + "]";
            list.push_back(handle(learners[i], what.c_str()).learner);
        }
        CTK_CHECK(progress_frequency >= 0, ValueError, "progress_frequency ", progress_frequency,
                  " is negative");
        std::vector<ProgressWriterPtr> writers;
        if (progress_frequency > 0) {
            ProgressPrinterOptions options;
            options.freq = progress_frequency;
            writers.push_back(std::make_shared<ProgressPrinter>(options));
        }
        auto trainer = std::make_unique<Trainer>(m, l, e, std::move(list), std::move(writers));
        auto* h = new ctk_trainer;
        h->trainer = std::move(trainer);
        *out = h;
    });
}

void ctk_trainer_release(ctk_trainer_t* trainer) {
    release(trainer);
}

ctk_status ctk_trainer_train_minibatch(ctk_trainer_t* trainer, const ctk_variable_t* const* inputs,
                                       const ctk_value_t* const* values, int64_t n, int32_t sweep_end,
                                       ctk_device device, int32_t* updated) {
    return guarded(__func__, [&] {
        ctk::Trainer& t = trainer_of(trainer);
        const ValueMap args = bind_inputs(inputs, values, n);
        const bool changed = t.train_minibatch(args, sweep_end != 0, device_arg(device));
        if (updated != nullptr) *updated = changed ? 1 : 0;
    });
}

ctk_status ctk_trainer_test_minibatch(ctk_trainer_t* trainer, const ctk_variable_t* const* inputs,
                                      const ctk_value_t* const* values, int64_t n, ctk_device device,
                                      double* average) {
    return guarded(__func__, [&] {
        ctk::Trainer& t = trainer_of(trainer);
        required(average, "average");
        const ValueMap args = bind_inputs(inputs, values, n);
        *average = t.test_minibatch(args, device_arg(device));
    });
}

ctk_status ctk_trainer_previous_minibatch_loss_average(const ctk_trainer_t* trainer, double* loss) {
    return guarded(__func__, [&] {
        const double v = trainer_of(trainer).previous_minibatch_loss_average();
        *required(loss, "loss") = v;
    });
}

ctk_status ctk_trainer_previous_minibatch_evaluation_average(const ctk_trainer_t* trainer, double* metric) {
    return guarded(__func__, [&] {
        const double v = trainer_of(trainer).previous_minibatch_evaluation_average();
        *required(metric, "metric") = v;
    });
}

ctk_status ctk_trainer_previous_minibatch_sample_count(const ctk_trainer_t* trainer, int64_t* count) {
    return guarded(__func__, [&] {
        const int64_t v = trainer_of(trainer).previous_minibatch_sample_count();
        *required(count, "count") = v;
    });
}

ctk_status ctk_trainer_total_samples_seen(const ctk_trainer_t* trainer, int64_t* count) {
    return guarded(__func__, [&] {
        const int64_t v = trainer_of(trainer).total_number_of_samples_seen();
        *required(count, "count") = v;
    });
}

ctk_status ctk_trainer_summarize_training_progress(ctk_trainer_t* trainer) {
    return guarded(__func__, [&] { trainer_of(trainer).summarize_training_progress(); });
}

ctk_status ctk_trainer_summarize_test_progress(ctk_trainer_t* trainer) {
    return guarded(__func__, [&] { trainer_of(trainer).summarize_test_progress(); });
}

ctk_status ctk_trainer_save_checkpoint(const ctk_trainer_t* trainer, const char* path) {
    return guarded(__func__, [&] { trainer_of(trainer).save_checkpoint(required(path, "path")); });
}

ctk_status ctk_trainer_restore_from_checkpoint(ctk_trainer_t* trainer, const char* path) {
    return guarded(__func__, [&] { trainer_of(trainer).restore_from_checkpoint(required(path, "path")); });
}

ctk_status ctk_trainer_model(const ctk_trainer_t* trainer, ctk_function_t** out) {
    return guarded(__func__, [&] {
        const FunctionPtr m = trainer_of(trainer).model();
        required(out, "out");
        CTK_CHECK(m != nullptr, ValueError, "the trainer was made without a model");
        *out = new_function(m);
    });
}

}  // extern "C"
