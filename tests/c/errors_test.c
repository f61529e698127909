/* The C ABI's error paths: every bad argument returns a status and a message naming what was wrong, and
 * nothing crashes (this program also runs under the sanitizer build). */
#include "check.h"

int main(void) {
    CHECK(ctk_abi_version() == CTK_ABI_VERSION);
    CHECK(strstr(ctk_version_string(), "CNTK API 2.7") != NULL);
    CHECK(ctk_dtype_size(CTK_FLOAT32) == 4 && ctk_dtype_size(CTK_BFLOAT16) == 2 && ctk_dtype_size(99) == 0);

    int64_t dims[1] = {3};
    ctk_variable_t* x = NULL;
    ctk_function_t* f = NULL;
    ctk_value_t* value = NULL;

    /* NULL out-pointers and handles. */
    FAILS(ctk_input_variable(dims, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "x", NULL), CTK_ERROR_NULL_ARGUMENT,
          "argument 'out' is NULL");
    FAILS(ctk_input_variable(NULL, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "x", &x), CTK_ERROR_NULL_ARGUMENT,
          "argument 'shape' is NULL");
    CHECK(x == NULL); /* a failing call leaves its out-parameters alone */
    FAILS(ctk_unary("relu", NULL, NULL, &f), CTK_ERROR_NULL_ARGUMENT, "ctk_unary: argument 'x' is NULL");
    FAILS(ctk_function_evaluate(NULL, NULL, NULL, 0, NULL, 0, kCpu, NULL), CTK_ERROR_NULL_ARGUMENT, "'f'");
    CHECK(ctk_last_error_code() == CTK_ERROR_NULL_ARGUMENT);
    ctk_clear_error();
    CHECK(ctk_last_error_code() == CTK_OK && strcmp(ctk_last_error(), "") == 0);

    /* Wrong dtypes, ranks, devices. */
    FAILS(ctk_input_variable(dims, 1, 42, CTK_AXES_BATCH, 0, 0, "x", &x), CTK_ERROR_TYPE,
          "argument 'dtype' is 42, not a ctk_dtype");
    FAILS(ctk_input_variable(dims, -1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "x", &x), CTK_ERROR_VALUE, "rank -1");
    FAILS(ctk_input_variable(dims, 1, CTK_FLOAT32, 7, 0, 0, "x", &x), CTK_ERROR_VALUE, "dynamic_axes is 7");
    ctk_device bad_type = {5, 0};
    ctk_device missing_gpu = {CTK_DEVICE_GPU, 64};
    float data[6] = {1, 2, 3, 4, 5, 6};
    int64_t batch_shape[2] = {2, 3};
    FAILS(ctk_value_create(CTK_FLOAT32, batch_shape, 2, data, CTK_COPY, bad_type, &value), CTK_ERROR_VALUE,
          "device: type 5");
    FAILS(ctk_value_create(CTK_FLOAT32, batch_shape, 2, data, CTK_COPY, missing_gpu, &value), CTK_ERROR_DEVICE,
          "GPU 64 is not available");
    FAILS(ctk_value_create(CTK_FLOAT32, batch_shape, 2, data, 9, kCpu, &value), CTK_ERROR_VALUE, "copy_mode 9");
    FAILS(ctk_set_max_num_cpu_threads(0), CTK_ERROR_VALUE, "at least 1");

    /* A handle of another kind where a variable is expected. */
    OK(ctk_value_create(CTK_FLOAT32, batch_shape, 2, data, CTK_COPY, kCpu, &value));
    FAILS(ctk_unary("relu", (const ctk_variable_t*)value, NULL, &f), CTK_ERROR_INVALID_HANDLE,
          "argument 'x' is not a live ctk_variable_t");
    FAILS(ctk_function_output((const ctk_function_t*)value, &x), CTK_ERROR_INVALID_HANDLE, "ctk_function_t");
    ctk_variable_release((ctk_variable_t*)value); /* the wrong kind: left alone, not freed */
    int32_t one_hot = -1;
    OK(ctk_value_is_one_hot(value, &one_hot));
    CHECK(one_hot == 0);

    /* Unknown ops, shapes that do not fit. */
    OK(ctk_input_variable(dims, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "x", &x));
    FAILS(ctk_unary("frobnicate", x, NULL, &f), CTK_ERROR_VALUE, "'frobnicate' is not a unary op");
    FAILS(ctk_unary_alpha("relu", x, 0.1, NULL, &f), CTK_ERROR_VALUE, "takes no alpha");
    FAILS(ctk_binary("plus_minus", x, x, NULL, &f), CTK_ERROR_VALUE, "not a binary op");
    int64_t four[1] = {4};
    ctk_variable_t* y = NULL;
    OK(ctk_input_variable(four, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "y", &y));
    FAILS(ctk_binary("plus", x, y, NULL, &f), CTK_ERROR_SHAPE, "[3]");
    FAILS(ctk_axis_op("softmax", x, 9, NULL, &f), CTK_ERROR_VALUE, "axis");

    /* Evaluation with a value of the wrong shape, or no outputs. */
    ctk_function_t* relu = NULL;
    OK(ctk_unary("relu", x, "r", &relu));
    ctk_variable_t* out = NULL;
    OK(ctk_function_output(relu, &out));
    ctk_value_t* result = NULL;
    float four_values[8] = {0};
    int64_t wrong_shape[2] = {2, 4};
    ctk_value_t* wrong = NULL;
    OK(ctk_value_create(CTK_FLOAT32, wrong_shape, 2, four_values, CTK_COPY, kCpu, &wrong));
    const ctk_variable_t* ins[1] = {x};
    const ctk_value_t* vals[1] = {wrong};
    const ctk_variable_t* outs[1] = {out};
    FAILS(ctk_function_evaluate(relu, ins, vals, 1, outs, 1, kCpu, &result), CTK_ERROR_SHAPE, "x");
    FAILS(ctk_function_evaluate(relu, ins, vals, 1, outs, 0, kCpu, &result), CTK_ERROR_VALUE, "no outputs");
    CHECK(result == NULL);

    /* Reading data back into a buffer of the wrong size. */
    float small[5];
    FAILS(ctk_value_copy_data(value, CTK_FLOAT32, small, 5), CTK_ERROR_SHAPE, "has 6 elements");
    FAILS(ctk_value_copy_data(value, 77, small, 6), CTK_ERROR_TYPE, "dtype");
    FAILS(ctk_value_one_hot_indices(value, NULL, 0), CTK_ERROR_VALUE, "not one-hot");
    FAILS(ctk_variable_get_value(x, CTK_FLOAT32, small, 3), CTK_ERROR_VALUE, "not a parameter or constant");

    /* A text buffer that is too small still says how long the text is. */
    int64_t length = -1;
    char tiny[4];
    FAILS(ctk_variable_to_string(x, tiny, sizeof tiny, &length), CTK_ERROR_BUFFER_TOO_SMALL, "needs");
    CHECK(length > 4);
    char text[128];
    OK(ctk_variable_to_string(x, text, sizeof text, &length));
    CHECK(strstr(text, "Input('x'") != NULL && (int64_t)strlen(text) == length);

    /* Files that are missing or not models. */
    FAILS(ctk_function_load("/nonexistent/dir/model.dnn", CTK_FORMAT_AUTO, &f), CTK_ERROR_IO,
          "/nonexistent/dir/model.dnn");
    FAILS(ctk_function_load("/nonexistent/model.onnx", 17, &f), CTK_ERROR_VALUE, "format 17");
    const char junk[] = "not a model at all";
    FAILS(ctk_function_load_buffer(junk, sizeof junk, &f), CTK_ERROR_IO, "<buffer>");
    FAILS(ctk_function_load_buffer(junk, 0, &f), CTK_ERROR_VALUE, "size 0");
    ctk_deserializer_t* d = NULL;
    ctk_stream_def stream = {"features", NULL, 3, 0, 0};
    FAILS(ctk_ctf_deserializer("/nonexistent/train.ctf", &stream, 1, &d), CTK_ERROR_IO, "/nonexistent/train.ctf");
    FAILS(ctk_ctf_deserializer("/tmp/x.ctf", &stream, 0, &d), CTK_ERROR_VALUE, "at least one stream");

    /* Learners and trainers with missing pieces. */
    ctk_schedule_t* lr = NULL;
    double rate = 0.1;
    FAILS(ctk_schedule_create(&rate, NULL, 0, 0, 1, &lr), CTK_ERROR_VALUE, "at least one value");
    OK(ctk_schedule_create(&rate, NULL, 1, 0, 1, &lr));
    ctk_learner_t* learner = NULL;
    FAILS(ctk_learner_sgd(NULL, 0, lr, NULL, &learner), CTK_ERROR_VALUE, "at least one parameter");
    const ctk_variable_t* not_params[1] = {x};
    FAILS(ctk_learner_sgd(not_params, 1, lr, NULL, &learner), CTK_ERROR_VALUE, "not a parameter");
    ctk_trainer_t* trainer = NULL;
    FAILS(ctk_trainer_create(NULL, relu, NULL, NULL, 0, 0, &trainer), CTK_ERROR_VALUE, "at least one learner");
    FAILS(ctk_trainer_create(NULL, NULL, NULL, NULL, 0, 0, &trainer), CTK_ERROR_NULL_ARGUMENT, "'loss'");

    /* Releasing NULL is a no-op. */
    ctk_variable_release(NULL);
    ctk_function_release(NULL);
    ctk_value_release(NULL);
    ctk_trainer_release(NULL);
    ctk_minibatch_source_release(NULL);

    ctk_schedule_release(lr);
    ctk_value_release(wrong);
    ctk_variable_release(out);
    ctk_function_release(relu);
    ctk_variable_release(y);
    ctk_variable_release(x);
    ctk_value_release(value);
    return finish("errors_test");
}
