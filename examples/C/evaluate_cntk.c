/* Evaluation with CNTK's C API (CNTKLibraryC.h), as C code written for CNTK 2.5 does it: load a model by
 * a wide-character path, list its inputs and outputs, evaluate one sample of the given values (the rest
 * of the input zero) and print the first output. Usage: evaluate_cntk MODEL_PATH [VALUE...] */
#include <stdio.h>
#include <stdlib.h>
#include <wchar.h>

#include "ctk/c/CNTKLibraryC.h"

static int ok(CNTK_StatusCode status, const char* what) {
    if (status.value == CNTK_SUCCESS) return 1;
    fprintf(stderr, "evaluate_cntk: %s failed (%d): %ls\n", what, status.value, status.description);
    return 0;
}

static uint32_t total(const CNTK_Shape* shape) {
    uint32_t n = 1;
    for (uint32_t i = 0; i < shape->size; ++i) n *= shape->value[i];
    return n;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: evaluate_cntk MODEL_PATH [VALUE...]\n");
        return 2;
    }
    wchar_t path[4096];
    if (mbstowcs(path, argv[1], 4096) == (size_t)-1) return 2;
    CNTK_DeviceDescriptor cpu = {CNTK_DeviceKind_CPU, 0};
    CNTK_ModelHandle model = CNTK_INVALID_MODEL_HANDLE;
    if (!ok(CNTK_LoadModel(path, &cpu, &model), "CNTK_LoadModel")) return 1;

    CNTK_Variable *inputs = NULL, *outputs = NULL;
    uint32_t num_inputs = 0, num_outputs = 0;
    if (!ok(CNTK_GetModelArgumentsInfo(model, &inputs, &num_inputs), "CNTK_GetModelArgumentsInfo") ||
        !ok(CNTK_GetModelOutputsInfo(model, &outputs, &num_outputs), "CNTK_GetModelOutputsInfo"))
        return 1;
    for (uint32_t i = 0; i < num_inputs; ++i) printf("input %ls: %u values\n", inputs[i].name, total(&inputs[i].shape));
    for (uint32_t i = 0; i < num_outputs; ++i) printf("output %ls: %u values\n", outputs[i].name, total(&outputs[i].shape));

    /* One sample for each input: the command line's values, then zeros. */
    CNTK_Value* values = calloc(num_inputs, sizeof(CNTK_Value));
    bool* reset = calloc(num_inputs, sizeof(bool));
    for (uint32_t i = 0; i < num_inputs; ++i) {
        const uint32_t n = total(&inputs[i].shape);
        values[i].shape = inputs[i].shape;
        values[i].data = calloc(n, sizeof(float));
        for (uint32_t k = 0; k < n && (int)k + 2 < argc; ++k) values[i].data[k] = strtof(argv[k + 2], NULL);
        reset[i] = true;
    }
    CNTK_Value* results = NULL;
    if (!ok(CNTK_EvaluateSequence(model, inputs, values, reset, num_inputs, outputs, 1, &results),
            "CNTK_EvaluateSequence"))
        return 1;
    printf("%ls:", outputs[0].name);
    for (uint32_t k = 0; k < total(&results[0].shape); ++k) printf(" %g", results[0].data[k]);
    printf("\n");

    CNTK_CleanValue(&results[0]);
    CNTK_ReleaseArray(results);
    for (uint32_t i = 0; i < num_inputs; ++i) free(values[i].data);
    free(values);
    free(reset);
    for (uint32_t i = 0; i < num_inputs; ++i) CNTK_CleanVariable(&inputs[i]);
    CNTK_ReleaseArray(inputs);
    for (uint32_t i = 0; i < num_outputs; ++i) CNTK_CleanVariable(&outputs[i]);
    CNTK_ReleaseArray(outputs);
    CNTK_ReleaseModel(model);
    return 0;
}
