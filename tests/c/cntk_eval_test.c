/* CNTK 2.5's evaluation C API (CNTKLibraryC.h) as CNTK's C users call it: a recurrent model made and
 * saved with ctk's C API, loaded by wide-character path, evaluated one sequence per call with the
 * recurrent state carried over or reset, into allocated and caller-owned buffers; its error codes.
 * Usage: cntk_eval_test <scratch folder> */
#include <wchar.h>

#include "check.h"
#include "ctk/c/CNTKLibraryC.h"

static int status_says(CNTK_StatusCode s, int32_t value, const char* text) {
    char message[4 * CNTK_STATUSCODE_DescriptionSize];
    size_t n = wcstombs(message, s.description, sizeof message - 1);
    if (n == (size_t)-1) n = 0;
    message[n] = '\0';
    if (s.value != value || strstr(message, text) == NULL) {
        fprintf(stderr, "status %d '%s', want %d with '%s'\n", s.value, message, value, text);
        return 0;
    }
    return 1;
}

#define CNTK_OK(call) CHECK(status_says((call), CNTK_SUCCESS, ""))

/* out = features + past_value(features), features a sequence of [3]. */
static void make_model(const char* path) {
    int64_t three[1] = {3};
    ctk_variable_t *x, *delayed_out;
    ctk_function_t *delayed, *out;
    OK(ctk_input_variable(three, 1, CTK_FLOAT32, CTK_AXES_SEQUENCE, 0, 0, "features", &x));
    OK(ctk_past_value(x, NULL, 1, NULL, &delayed));
    OK(ctk_function_output(delayed, &delayed_out));
    OK(ctk_binary("plus", x, delayed_out, "out", &out));
    OK(ctk_function_save(out, path, CTK_FORMAT_CNTK_V2));
    ctk_function_release(out);
    ctk_variable_release(delayed_out);
    ctk_function_release(delayed);
    ctk_variable_release(x);
}

/* One call with `frames` frames of [3]; the outputs are allocated by the library. */
static void evaluate(CNTK_ModelHandle model, const CNTK_Variable* in, const CNTK_Variable* out, float* data,
                     uint32_t frames, bool reset, float* result) {
    uint32_t dims[2] = {3, frames};
    CNTK_Value value = {{dims, 2}, data};
    CNTK_Value* outputs = NULL;
    CNTK_OK(CNTK_EvaluateSequence(model, in, &value, &reset, 1, out, 1, &outputs));
    if (outputs == NULL) return;
    CHECK(outputs[0].shape.size == 3 && outputs[0].shape.value[0] == 3 && outputs[0].shape.value[1] == frames &&
          outputs[0].shape.value[2] == 1);
    memcpy(result, outputs[0].data, sizeof(float) * 3 * frames);
    CNTK_CleanValue(&outputs[0]);
    CNTK_ReleaseArray(outputs);
}

int main(int argc, char** argv) {
    const char* dir = argc > 1 ? argv[1] : "/tmp";
    char path[1024];
    snprintf(path, sizeof path, "%s/cntk_eval_test.model", dir);
    make_model(path);
    wchar_t wpath[1024];
    CHECK(mbstowcs(wpath, path, 1024) != (size_t)-1);

    CNTK_DeviceDescriptor* devices = NULL;
    uint32_t num_devices = 0;
    CNTK_OK(CNTK_AllDevices(&devices, &num_devices));
    CHECK(num_devices >= 1 && devices[num_devices - 1].kind == CNTK_DeviceKind_CPU);
    CNTK_ReleaseArray(devices);
    CNTK_DeviceDescriptor cpu = {CNTK_DeviceKind_CPU, 0};

    CNTK_ModelHandle model = CNTK_INVALID_MODEL_HANDLE;
    CNTK_OK(CNTK_LoadModel(wpath, &cpu, &model));
    CHECK(model != CNTK_INVALID_MODEL_HANDLE);

    CNTK_Variable* args = NULL;
    CNTK_Variable* outs = NULL;
    uint32_t num_args = 0, num_outs = 0;
    CNTK_OK(CNTK_GetModelArgumentsInfo(model, &args, &num_args));
    CNTK_OK(CNTK_GetModelOutputsInfo(model, &outs, &num_outs));
    CHECK(num_args == 1 && wcscmp(args[0].name, L"features") == 0 && args[0].shape.size == 1 &&
          args[0].shape.value[0] == 3);
    CHECK(num_outs == 1 && wcscmp(outs[0].name, L"out") == 0);

    /* Two frames, a new sequence: out = [x0, x1 + x0]. */
    float x[6] = {1, 2, 3, 4, 5, 6}, got[6];
    evaluate(model, args, outs, x, 2, true, got);
    const float want[6] = {1, 2, 3, 5, 7, 9};
    for (int i = 0; i < 6; ++i) NEAR(got[i], want[i], 0);
    /* One more frame of the same sequence: the previous call's last frame is its past. */
    float next[3] = {10, 20, 30};
    evaluate(model, args, outs, next, 1, false, got);
    NEAR(got[0], 14, 0);
    NEAR(got[1], 25, 0);
    NEAR(got[2], 36, 0);
    /* A new sequence again. */
    evaluate(model, args, outs, next, 1, true, got);
    NEAR(got[0], 10, 0);
    NEAR(got[2], 30, 0);

    /* Into the caller's buffer. */
    {
        uint32_t in_dims[2] = {3, 2}, out_dims[3] = {3, 2, 1};
        float buffer[6] = {0};
        CNTK_Value in = {{in_dims, 2}, x};
        CNTK_Value out = {{out_dims, 3}, buffer};
        CNTK_Value* outputs = &out;
        bool reset = true;
        CNTK_OK(CNTK_EvaluateSequence(model, args, &in, &reset, 1, outs, 1, &outputs));
        CHECK(outputs == &out);
        for (int i = 0; i < 6; ++i) NEAR(buffer[i], want[i], 0);
        uint32_t small_dims[3] = {3, 1, 1};
        CNTK_Value small = {{small_dims, 3}, buffer};
        CNTK_Value* small_outputs = &small;
        CHECK(status_says(CNTK_EvaluateSequence(model, args, &in, &reset, 1, outs, 1, &small_outputs),
                          CNTK_ERROR_INTERNAL_ERROR, "holds 3 elements"));
    }

    /* A clone sharing the parameters evaluates the same; so does a model loaded from memory. */
    CNTK_ModelHandle clone = CNTK_INVALID_MODEL_HANDLE;
    CNTK_OK(CNTK_CloneModel(model, CNTK_ModelParameterShare, false, &clone));
    evaluate(clone, args, outs, x, 2, true, got);
    for (int i = 0; i < 6; ++i) NEAR(got[i], want[i], 0);
    CNTK_ReleaseModel(clone);
    {
        FILE* f = fopen(path, "rb");
        CHECK(f != NULL);
        static char bytes[1 << 16];
        const size_t n = f ? fread(bytes, 1, sizeof bytes, f) : 0;
        if (f) fclose(f);
        CNTK_ModelHandle from_memory = CNTK_INVALID_MODEL_HANDLE;
        CNTK_OK(CNTK_LoadModel_FromArray(bytes, (int)n, NULL, &from_memory));
        evaluate(from_memory, args, outs, x, 2, true, got);
        for (int i = 0; i < 6; ++i) NEAR(got[i], want[i], 0);
        CNTK_ReleaseModel(from_memory);
    }

    /* Errors: CNTK's codes, and a description that says what was wrong. */
    {
        uint32_t dims[2] = {3, 2};
        CNTK_Value in = {{dims, 2}, x};
        CNTK_Value* outputs = NULL;
        bool reset = true;
        CHECK(status_says(CNTK_EvaluateSequence(CNTK_INVALID_MODEL_HANDLE, args, &in, &reset, 1, outs, 1, &outputs),
                          CNTK_ERROR_INVALID_HANDLE, "Invalid model handle"));
        CHECK(status_says(CNTK_EvaluateSequence(model, args, &in, &reset, 1, outs, 1, NULL), CNTK_ERROR_NULL_POINTER,
                          "'outputValues' parameter is not allowed to be null"));
        CNTK_Variable wrong = {L"labels", args[0].shape};
        CHECK(status_says(CNTK_EvaluateSequence(model, &wrong, &in, &reset, 1, outs, 1, &outputs),
                          CNTK_ERROR_INTERNAL_ERROR, "Unexpected argument 'labels'"));
        uint32_t odd_dims[2] = {4, 1};
        CNTK_Value odd = {{odd_dims, 2}, x};
        CHECK(status_says(CNTK_EvaluateSequence(model, args, &odd, &reset, 1, outs, 1, &outputs),
                          CNTK_ERROR_INTERNAL_ERROR, "not a whole number of samples"));
        CHECK(outputs == NULL);
        CNTK_ModelHandle none = CNTK_INVALID_MODEL_HANDLE;
        CHECK(status_says(CNTK_LoadModel(L"/nonexistent/model.dnn", NULL, &none), CNTK_ERROR_INTERNAL_ERROR,
                          "/nonexistent/model.dnn"));
        CHECK(none == CNTK_INVALID_MODEL_HANDLE);
        CHECK(status_says(CNTK_LoadModel(wpath, NULL, NULL), CNTK_ERROR_NULL_POINTER, "'handle'"));
        CHECK(status_says(CNTK_GetModelArgumentsInfo(NULL, &args, &num_args), CNTK_ERROR_INVALID_HANDLE, ""));
    }

    for (uint32_t i = 0; i < num_args; ++i) CNTK_CleanVariable(&args[i]);
    CNTK_ReleaseArray(args);
    for (uint32_t i = 0; i < num_outs; ++i) CNTK_CleanVariable(&outs[i]);
    CNTK_ReleaseArray(outs);
    CNTK_ReleaseModel(model);
    CNTK_ReleaseModel(CNTK_INVALID_MODEL_HANDLE);
    return finish("cntk_eval_test");
}
