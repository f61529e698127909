/* CNTK 2.5's evaluation C API (its CNTKLibraryC.h), implemented by libctk_c so that C code written
 * against CNTK compiles and runs unchanged. New code should use ctk/c/ctk.h (UTF-8 strings, every dtype,
 * batches, training). Semantics as CNTK's, with one difference, documented in docs/c_api.md: a NULL
 * model handle is reported as CNTK_ERROR_INVALID_HANDLE (CNTK 2.5 returned value 0, success).
 *
 * Shapes here are CNTK's column-major dims (the reverse of Python's order); data is float32, and its
 * memory order is the same in both conventions.
 */
#ifndef CTK_C_CNTKLIBRARYC_H
#define CTK_C_CNTKLIBRARYC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define CNTK_API __declspec(dllexport)
#else
#define CNTK_API __attribute__((visibility("default")))
#endif

typedef void* CNTK_ModelHandle;
#define CNTK_INVALID_MODEL_HANDLE 0

/* The result of every call, by value: `value` is CNTK_SUCCESS or an error code, `description` the
 * error's text (wide characters, NUL-terminated, truncated to fit). */
#define CNTK_STATUSCODE_DescriptionSize 4096u
typedef struct CNTK_StatusCode {
    int32_t value;
    wchar_t description[CNTK_STATUSCODE_DescriptionSize];
} CNTK_StatusCode;

#define CNTK_SUCCESS 0
#define CNTK_ERROR_INVALID_HANDLE -1
#define CNTK_ERROR_NULL_POINTER -2
#define CNTK_ERROR_INTERNAL_ERROR -3
#define CNTK_ERROR_INVALID_INPUT -4

typedef enum CNTK_DeviceKind { CNTK_DeviceKind_CPU, CNTK_DeviceKind_GPU } CNTK_DeviceKind;

typedef struct CNTK_DeviceDescriptor {
    CNTK_DeviceKind kind;
    uint32_t id;
} CNTK_DeviceDescriptor;

/* All devices: *devices is an array of *size entries, freed with CNTK_ReleaseArray. */
CNTK_API CNTK_StatusCode CNTK_AllDevices(CNTK_DeviceDescriptor** devices, uint32_t* size);
CNTK_API CNTK_StatusCode CNTK_DefaultDevice(CNTK_DeviceDescriptor* device);

/* Loads a model file (CNTK v2, v1 or ONNX) to evaluate on `device` (NULL: the default device). */
CNTK_API CNTK_StatusCode CNTK_LoadModel(const wchar_t* modelFilePath, const CNTK_DeviceDescriptor* device,
                                        CNTK_ModelHandle* handle);
/* Loads a CNTK v2 model from memory. */
CNTK_API CNTK_StatusCode CNTK_LoadModel_FromArray(const void* modelData, int modelDataLen,
                                                  const CNTK_DeviceDescriptor* device,
                                                  CNTK_ModelHandle* handle);

typedef enum CNTK_ParameterCloningMethod {
    CNTK_ModelParameterShare,
    CNTK_ModelParameterClone,
    CNTK_ModelParameterFreeze
} CNTK_ParameterCloningMethod;

/* A copy of the model (for another thread: CNTK_ModelParameterShare shares the parameters). `flattened`
 * is accepted for CNTK's signature; ctk's graphs evaluate the same either way. */
CNTK_API CNTK_StatusCode CNTK_CloneModel(CNTK_ModelHandle model, CNTK_ParameterCloningMethod method,
                                         bool flattened, CNTK_ModelHandle* cloned);
CNTK_API void CNTK_ReleaseModel(CNTK_ModelHandle model);

/* A shape: `size` dims, column-major. */
typedef struct CNTK_Shape {
    uint32_t* value;
    uint32_t size;
} CNTK_Shape;

/* A model's input or output: its name and sample shape. */
typedef struct CNTK_Variable {
    wchar_t* name;
    CNTK_Shape shape;
} CNTK_Variable;

/* The model's arguments / outputs: an array freed by CNTK_CleanVariable on each entry, then
 * CNTK_ReleaseArray. */
CNTK_API CNTK_StatusCode CNTK_GetModelArgumentsInfo(CNTK_ModelHandle model, CNTK_Variable** inputs,
                                                    uint32_t* numInputs);
CNTK_API CNTK_StatusCode CNTK_GetModelOutputsInfo(CNTK_ModelHandle model, CNTK_Variable** outputs,
                                                  uint32_t* numOutputs);

/* A value: shape (sample dims, then the sequence length, column-major) and float data. */
typedef struct CNTK_Value {
    CNTK_Shape shape;
    float* data;
} CNTK_Value;

/* Evaluates one sequence per input (inputs matched to the model's arguments by name; each value's first
 * rank(sample) dims are the sample shape, the rest the frames). inputResetFlags[i] true starts a new
 * sequence; false continues the sequence of the previous call on this model (recurrent state carried
 * over). *outputValues NULL: the outputs are allocated (free each with CNTK_CleanValue, then the array
 * with CNTK_ReleaseArray); otherwise the caller's buffers, whose sizes must match, receive them. */
CNTK_API CNTK_StatusCode CNTK_EvaluateSequence(CNTK_ModelHandle model, const CNTK_Variable* inputs,
                                               const CNTK_Value* inputValues, const bool* inputResetFlags,
                                               uint32_t numInputs, const CNTK_Variable* outputs,
                                               uint32_t numOutputs, CNTK_Value** outputValues);

CNTK_API void CNTK_ReleaseArray(void* array);
CNTK_API void CNTK_CleanVariable(CNTK_Variable* variable);
CNTK_API void CNTK_CleanValue(CNTK_Value* value);
CNTK_API void CNTK_CleanShape(CNTK_Shape* shape);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTK_C_CNTKLIBRARYC_H */
