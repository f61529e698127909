/* The C ABI's training: one SGD step checked by hand, learner state through a checkpoint, an MLP trained
 * with Adam to a low error, and two seeded runs that agree to the bit. Usage: train_test <scratch folder> */
#include "check.h"

static ctk_function_t* output_of(const ctk_function_t* f, ctk_variable_t** out) {
    OK(ctk_function_output(f, out));
    return (ctk_function_t*)f;
}

/* A linear model z = x W + b with squared error against y. */
typedef struct Linear {
    ctk_variable_t *x, *y, *w, *b, *z_out;
    ctk_function_t *xw, *z, *loss;
} Linear;

static Linear linear(void) {
    Linear m;
    int64_t two[1] = {2}, one[1] = {1}, w_shape[2] = {2, 1};
    float w[2] = {0.5f, -0.5f}, b[1] = {0.1f};
    OK(ctk_input_variable(two, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "x", &m.x));
    OK(ctk_input_variable(one, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "y", &m.y));
    OK(ctk_parameter_from_data(w_shape, 2, CTK_FLOAT32, w, "W", &m.w));
    OK(ctk_parameter_from_data(one, 1, CTK_FLOAT32, b, "b", &m.b));
    ctk_variable_t* xw_out;
    OK(ctk_times(m.x, m.w, 1, -1, NULL, &m.xw));
    output_of(m.xw, &xw_out);
    OK(ctk_binary("plus", xw_out, m.b, "z", &m.z));
    ctk_variable_release(xw_out);
    output_of(m.z, &m.z_out);
    OK(ctk_binary("squared_error", m.z_out, m.y, "loss", &m.loss));
    return m;
}

static void release_linear(Linear* m) {
    ctk_function_release(m->loss);
    ctk_variable_release(m->z_out);
    ctk_function_release(m->z);
    ctk_function_release(m->xw);
    ctk_variable_release(m->b);
    ctk_variable_release(m->w);
    ctk_variable_release(m->y);
    ctk_variable_release(m->x);
}

static void step(ctk_trainer_t* t, const Linear* m, const float* x, const float* y) {
    int64_t xs[2] = {2, 2}, ys[2] = {2, 1};
    ctk_value_t *xv, *yv;
    OK(ctk_value_create(CTK_FLOAT32, xs, 2, x, CTK_COPY, kCpu, &xv));
    OK(ctk_value_create(CTK_FLOAT32, ys, 2, y, CTK_COPY, kCpu, &yv));
    const ctk_variable_t* ins[2] = {m->x, m->y};
    const ctk_value_t* vals[2] = {xv, yv};
    int32_t updated = 0;
    OK(ctk_trainer_train_minibatch(t, ins, vals, 2, 0, kCpu, &updated));
    CHECK(updated == 1);
    ctk_value_release(xv);
    ctk_value_release(yv);
}

static void sgd_step_by_hand(void) {
    Linear m = linear();
    double rate = 0.1;
    ctk_schedule_t* lr;
    OK(ctk_schedule_create(&rate, NULL, 1, 0, 1, &lr)); /* per sample */
    const ctk_variable_t* params[2] = {m.w, m.b};
    ctk_learner_t* sgd;
    OK(ctk_learner_sgd(params, 2, lr, NULL, &sgd));
    ctk_trainer_t* t;
    OK(ctk_trainer_create(m.z, m.loss, NULL, (const ctk_learner_t* const*)&sgd, 1, 0, &t));
    const float x[4] = {1, 2, 3, -1}, y[2] = {1, 0};
    step(t, &m, x, y);
    /* z = [-0.4, 2.1]; dz = 2 (z - y) = [-2.8, 4.2]; gW = [9.8, -9.8], gb = 1.4, applied with lr 0.1. */
    float w[2], b[1];
    OK(ctk_variable_get_value(m.w, CTK_FLOAT32, w, 2));
    OK(ctk_variable_get_value(m.b, CTK_FLOAT32, b, 1));
    NEAR(w[0], -0.48, 1e-6);
    NEAR(w[1], 0.48, 1e-6);
    NEAR(b[0], -0.04, 1e-6);
    double loss = 0;
    int64_t samples = 0;
    OK(ctk_trainer_previous_minibatch_loss_average(t, &loss));
    OK(ctk_trainer_previous_minibatch_sample_count(t, &samples));
    NEAR(loss, (1.96 + 4.41) / 2, 1e-5);
    CHECK(samples == 2);
    double lr_now = 0;
    OK(ctk_learner_learning_rate(sgd, &lr_now));
    NEAR(lr_now, 0.1, 0);
    ctk_function_t* model;
    OK(ctk_trainer_model(t, &model));
    ctk_function_release(model);
    ctk_trainer_release(t);
    ctk_learner_release(sgd);
    ctk_schedule_release(lr);
    release_linear(&m);
}

static void checkpoint_round_trip(const char* dir) {
    Linear m = linear();
    double rate = 0.05, momentum = 0.9;
    ctk_schedule_t *lr, *mom;
    OK(ctk_schedule_create(&rate, NULL, 1, 0, 1, &lr));
    OK(ctk_schedule_create(&momentum, NULL, 1, 0, 0, &mom));
    const ctk_variable_t* params[2] = {m.w, m.b};
    ctk_learner_t* learner;
    OK(ctk_learner_momentum_sgd(params, 2, lr, mom, 1, NULL, &learner));
    ctk_trainer_t* t;
    OK(ctk_trainer_create(m.z, m.loss, NULL, (const ctk_learner_t* const*)&learner, 1, 0, &t));
    const float x[4] = {1, 2, 3, -1}, y[2] = {1, 0}, x2[4] = {0.5f, 1, -2, 1}, y2[2] = {0, 1};
    step(t, &m, x, y);
    char path[1024];
    snprintf(path, sizeof path, "%s/train_test.ckp", dir);
    OK(ctk_trainer_save_checkpoint(t, path));
    step(t, &m, x2, y2);
    float after[3], again[3];
    OK(ctk_variable_get_value(m.w, CTK_FLOAT32, after, 2));
    OK(ctk_variable_get_value(m.b, CTK_FLOAT32, after + 2, 1));
    OK(ctk_trainer_restore_from_checkpoint(t, path));
    step(t, &m, x2, y2); /* the momentum was restored too, so the same step gives the same values */
    OK(ctk_variable_get_value(m.w, CTK_FLOAT32, again, 2));
    OK(ctk_variable_get_value(m.b, CTK_FLOAT32, again + 2, 1));
    CHECK(memcmp(after, again, sizeof after) == 0);
    int64_t seen = 0;
    OK(ctk_trainer_total_samples_seen(t, &seen));
    CHECK(seen == 4);
    snprintf(path, sizeof path, "%s/no_such_folder/none.ckp", dir);
    FAILS(ctk_trainer_restore_from_checkpoint(t, path), CTK_ERROR_IO, "none.ckp");
    ctk_trainer_release(t);
    ctk_learner_release(learner);
    ctk_schedule_release(lr);
    ctk_schedule_release(mom);
    release_linear(&m);
}

/* Two Gaussian-ish blobs of 2-D points, made with a fixed linear congruential generator. */
static void make_data(float* x, float* labels, int n) {
    uint32_t state = 12345;
    for (int i = 0; i < n; ++i) {
        const int c = i % 2;
        for (int k = 0; k < 2; ++k) {
            state = state * 1664525u + 1013904223u;
            const float u = (float)(state >> 8) / 16777216.0f - 0.5f;
            x[2 * i + k] = (c == 0 ? -1.0f : 1.0f) + u;
        }
        labels[2 * i] = c == 0 ? 1.0f : 0.0f;
        labels[2 * i + 1] = c == 0 ? 0.0f : 1.0f;
    }
}

/* An MLP 2-8-2 trained with Adam; its parameters after training go to `params` (8*2 + 8 + 8*2 + 2). */
static void train_mlp(uint64_t seed, float* params, double* error) {
    OK(ctk_reset_random_seed(
        seed)); /* seeds seed, seed + 1, ...: W1 and W2 differ (a fixed seed gives both one) */
    int64_t two[1] = {2}, hidden[1] = {8}, w1s[2] = {2, 8}, w2s[2] = {8, 2};
    ctk_variable_t *x, *y, *w1, *b1, *w2, *b2;
    ctk_initializer_t *glorot, *zero;
    OK(ctk_initializer_create(CTK_INIT_GLOROT_UNIFORM, 1, CTK_SENTINEL_RANK, CTK_SENTINEL_RANK,
                              CTK_SENTINEL_SEED, &glorot));
    OK(ctk_initializer_create(CTK_INIT_CONSTANT, 0, CTK_SENTINEL_RANK, CTK_SENTINEL_RANK, CTK_SENTINEL_SEED,
                              &zero));
    OK(ctk_input_variable(two, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "features", &x));
    OK(ctk_input_variable(two, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "labels", &y));
    OK(ctk_parameter(w1s, 2, CTK_FLOAT32, glorot, "W1", &w1));
    OK(ctk_parameter(hidden, 1, CTK_FLOAT32, zero, "b1", &b1));
    OK(ctk_parameter(w2s, 2, CTK_FLOAT32, glorot, "W2", &w2));
    OK(ctk_parameter(two, 1, CTK_FLOAT32, zero, "b2", &b2));
    ctk_function_t *h0, *h1, *h, *o0, *z, *ce, *err;
    ctk_variable_t *v0, *v1, *vh, *vo, *vz;
    OK(ctk_times(x, w1, 1, -1, NULL, &h0));
    output_of(h0, &v0);
    OK(ctk_binary("plus", v0, b1, NULL, &h1));
    output_of(h1, &v1);
    OK(ctk_unary("relu", v1, NULL, &h));
    output_of(h, &vh);
    OK(ctk_times(vh, w2, 1, -1, NULL, &o0));
    output_of(o0, &vo);
    OK(ctk_binary("plus", vo, b2, "z", &z));
    output_of(z, &vz);
    OK(ctk_binary("cross_entropy_with_softmax", vz, y, "ce", &ce));
    OK(ctk_classification_error(vz, y, 1, CTK_AXIS_NONE, "err", &err));

    double rate = 0.1, beta1 = 0.9;
    ctk_schedule_t *lr, *mom;
    OK(ctk_schedule_create(&rate, NULL, 1, 0, 0, &lr));
    OK(ctk_schedule_create(&beta1, NULL, 1, 0, 0, &mom));
    const ctk_variable_t* params_list[4] = {w1, b1, w2, b2};
    ctk_learner_t* adam;
    OK(ctk_learner_adam(params_list, 4, lr, mom, 1, NULL, 1e-8, 0, NULL, &adam));
    ctk_trainer_t* t;
    OK(ctk_trainer_create(z, ce, err, (const ctk_learner_t* const*)&adam, 1, 0, &t));

    enum { kN = 64 };
    float data[2 * kN], labels[2 * kN];
    make_data(data, labels, kN);
    int64_t xs[2] = {kN, 2};
    ctk_value_t *xv, *yv;
    OK(ctk_value_create(CTK_FLOAT32, xs, 2, data, CTK_COPY, kCpu, &xv));
    OK(ctk_value_create(CTK_FLOAT32, xs, 2, labels, CTK_COPY, kCpu, &yv));
    const ctk_variable_t* ins[2] = {x, y};
    const ctk_value_t* vals[2] = {xv, yv};
    double first_loss = 0, loss = 0;
    for (int i = 0; i < 150; ++i) {
        OK(ctk_trainer_train_minibatch(t, ins, vals, 2, 0, kCpu, NULL));
        OK(ctk_trainer_previous_minibatch_loss_average(t, i == 0 ? &first_loss : &loss));
    }
    if (!(loss < 0.3 * first_loss)) fprintf(stderr, "loss %g -> %g\n", first_loss, loss);
    CHECK(loss < 0.3 * first_loss); /* about 0.28 of it after 150 steps from seed 1 */
    OK(ctk_trainer_test_minibatch(t, ins, vals, 2, kCpu, error));
    const ctk_variable_t* all[4] = {w1, b1, w2, b2};
    const int64_t sizes[4] = {16, 8, 16, 2};
    for (int i = 0, at = 0; i < 4; at += (int)sizes[i], ++i)
        OK(ctk_variable_get_value(all[i], CTK_FLOAT32, params + at, sizes[i]));

    ctk_value_release(xv);
    ctk_value_release(yv);
    ctk_trainer_release(t);
    ctk_learner_release(adam);
    ctk_schedule_release(lr);
    ctk_schedule_release(mom);
    ctk_function_t* fs[7] = {h0, h1, h, o0, z, ce, err};
    for (int i = 0; i < 7; ++i) ctk_function_release(fs[i]);
    ctk_variable_t* vs[11] = {v0, v1, vh, vo, vz, x, y, w1, b1, w2, b2};
    for (int i = 0; i < 11; ++i) ctk_variable_release(vs[i]);
    ctk_initializer_release(glorot);
    ctk_initializer_release(zero);
}

int main(int argc, char** argv) {
    const char* dir = argc > 1 ? argv[1] : "/tmp";
    sgd_step_by_hand();
    checkpoint_round_trip(dir);
    float a[42], b[42], c[42];
    double err_a = 1, err_b = 1, err_c = 1;
    train_mlp(1, a, &err_a);
    train_mlp(1, b, &err_b);
    train_mlp(2, c, &err_c);
    CHECK(err_a <= 0.02);
    CHECK(memcmp(a, b, sizeof a) == 0); /* the same seed: the same run, bit for bit */
    CHECK(err_a == err_b);
    CHECK(memcmp(a, c, sizeof a) != 0); /* another seed: another start */
    return finish("train_test");
}
