/* Logistic regression through ctk's C ABI (ctk/c/ctk.h): two classes of 2-D points made here, a linear
 * model trained with SGD through the Trainer, its test error, and the model saved for any of ctk's
 * readers (CNTK's evaluation C API in evaluate_cntk.c, Python, C#).
 * Usage: train_logistic MODEL_PATH */
#include <stdio.h>
#include <stdlib.h>

#include "ctk/c/ctk.h"

/* Exits with ctk's message when a call fails. */
static void check(ctk_status status, const char* what) {
    if (status != CTK_OK) {
        fprintf(stderr, "train_logistic: %s failed: %s\n", what, ctk_last_error());
        exit(1);
    }
}

/* n points: class c is centred at (2c, -2c) with unit uniform noise; labels one-hot. */
static void points(unsigned* seed, int n, float* features, float* labels) {
    for (int i = 0; i < n; ++i) {
        const int c = rand_r(seed) % 2;
        features[2 * i] = (float)rand_r(seed) / RAND_MAX + 2.0f * c;
        features[2 * i + 1] = (float)rand_r(seed) / RAND_MAX - 2.0f * c;
        labels[2 * i] = c == 0;
        labels[2 * i + 1] = c == 1;
    }
}

int main(int argc, char** argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: train_logistic MODEL_PATH\n");
        return 2;
    }
    const ctk_device cpu = {CTK_DEVICE_CPU, 0};
    const int64_t two[1] = {2}, w_shape[2] = {2, 2};
    check(ctk_set_fixed_random_seed(1), "set_fixed_random_seed");

    ctk_variable_t *x, *y, *w, *b, *xw_out, *z_out;
    ctk_initializer_t *glorot, *zero;
    check(ctk_input_variable(two, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "features", &x), "input");
    check(ctk_input_variable(two, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "labels", &y), "input");
    check(ctk_initializer_create(CTK_INIT_GLOROT_UNIFORM, 1, CTK_SENTINEL_RANK, CTK_SENTINEL_RANK, CTK_SENTINEL_SEED,
                                 &glorot), "initializer");
    check(ctk_initializer_create(CTK_INIT_CONSTANT, 0, CTK_SENTINEL_RANK, CTK_SENTINEL_RANK, CTK_SENTINEL_SEED, &zero),
          "initializer");
    check(ctk_parameter(w_shape, 2, CTK_FLOAT32, glorot, "W", &w), "parameter");
    check(ctk_parameter(two, 1, CTK_FLOAT32, zero, "b", &b), "parameter");

    ctk_function_t *xw, *z, *loss, *error;
    check(ctk_times(x, w, 1, -1, NULL, &xw), "times");
    check(ctk_function_output(xw, &xw_out), "output");
    check(ctk_binary("plus", xw_out, b, "z", &z), "plus");
    check(ctk_function_output(z, &z_out), "output");
    check(ctk_binary("cross_entropy_with_softmax", z_out, y, "loss", &loss), "loss");
    check(ctk_classification_error(z_out, y, 1, CTK_AXIS_NONE, "error", &error), "metric");

    const double rate = 0.05;
    ctk_schedule_t* lr;
    ctk_learner_t* sgd;
    ctk_trainer_t* trainer;
    const ctk_variable_t* params[2] = {w, b};
    check(ctk_schedule_create(&rate, NULL, 1, 0, 1, &lr), "schedule"); /* per sample */
    check(ctk_learner_sgd(params, 2, lr, NULL, &sgd), "sgd");
    check(ctk_trainer_create(z, loss, error, (const ctk_learner_t* const*)&sgd, 1, 20, &trainer), "trainer");

    enum { kBatch = 32, kTest = 500 };
    unsigned seed = 7;
    float features[2 * kTest], labels[2 * kTest];
    const ctk_variable_t* inputs[2] = {x, y};
    for (int step = 0; step < 100; ++step) {
        points(&seed, kBatch, features, labels);
        const int64_t shape[2] = {kBatch, 2};
        ctk_value_t *fv, *lv;
        check(ctk_value_create(CTK_FLOAT32, shape, 2, features, CTK_BORROW, cpu, &fv), "value");
        check(ctk_value_create(CTK_FLOAT32, shape, 2, labels, CTK_BORROW, cpu, &lv), "value");
        const ctk_value_t* values[2] = {fv, lv};
        check(ctk_trainer_train_minibatch(trainer, inputs, values, 2, 0, cpu, NULL), "train_minibatch");
        ctk_value_release(fv);
        ctk_value_release(lv);
    }
    check(ctk_trainer_summarize_training_progress(trainer), "summarize");

    points(&seed, kTest, features, labels);
    const int64_t test_shape[2] = {kTest, 2};
    ctk_value_t *fv, *lv;
    check(ctk_value_create(CTK_FLOAT32, test_shape, 2, features, CTK_COPY, cpu, &fv), "value");
    check(ctk_value_create(CTK_FLOAT32, test_shape, 2, labels, CTK_COPY, cpu, &lv), "value");
    const ctk_value_t* test_values[2] = {fv, lv};
    double test_error = 0;
    check(ctk_trainer_test_minibatch(trainer, inputs, test_values, 2, cpu, &test_error), "test_minibatch");
    printf("test error: %.2f%% of %d points\n", 100 * test_error, kTest);

    check(ctk_function_save(z, argv[1], CTK_FORMAT_CNTK_V2), "save");
    printf("saved %s\n", argv[1]);

    ctk_value_release(fv);
    ctk_value_release(lv);
    ctk_trainer_release(trainer);
    ctk_learner_release(sgd);
    ctk_schedule_release(lr);
    ctk_function_release(error);
    ctk_function_release(loss);
    ctk_function_release(z);
    ctk_function_release(xw);
    ctk_variable_release(z_out);
    ctk_variable_release(xw_out);
    ctk_variable_release(b);
    ctk_variable_release(w);
    ctk_variable_release(y);
    ctk_variable_release(x);
    ctk_initializer_release(glorot);
    ctk_initializer_release(zero);
    return test_error < 0.05 ? 0 : 1;
}
