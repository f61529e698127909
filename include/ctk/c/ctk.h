/* ctk's stable C ABI (library ctk_c): what C, C# and other languages bind to. Plain C99: opaque handles
 * released explicitly, an int status per call with a thread-local UTF-8 message, UTF-8 strings, int64
 * sizes, and data as pointer + shape + dtype. No C++ type or exception crosses it (docs/c_api.md).
 *
 * Conventions, for every function below unless it says otherwise:
 *  - The return value is a ctk_status: CTK_OK (0), or an error code whose text ctk_last_error() gives
 *    until the next failing call on the same thread. A failing call leaves its out-parameters untouched.
 *  - A NULL handle or out-pointer where one is required is CTK_ERROR_NULL_ARGUMENT; a handle of another
 *    kind (a variable where a function is expected) is CTK_ERROR_INVALID_HANDLE. Neither crashes.
 *  - Handles returned through out-parameters are owned by the caller and released with their
 *    ctk_<object>_release (NULL-safe). Handles are independent: releasing a function does not
 *    invalidate the variables taken from it (they keep what they need alive).
 *  - A `const char*` returned by a getter lives as long as the handle it came from.
 *  - Shapes are row-major (the last dim varies fastest), as ctk's C++ and Python APIs and NumPy; CNTK's
 *    C# NDShape (column-major) is reversed by the C# binding. Data buffers are dense and row-major.
 *  - List getters take (out array, capacity, *count): they write min(capacity, count) entries and
 *    always set *count, so a first call with capacity 0 asks for the size.
 */
#ifndef CTK_C_CTK_H
#define CTK_C_CTK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define CTK_C_API __declspec(dllexport)
#else
#define CTK_C_API __attribute__((visibility("default")))
#endif

/* The ABI's version: raised when a function's signature or a struct's layout changes. A binding checks
 * ctk_abi_version() == CTK_ABI_VERSION at load time. */
#define CTK_ABI_VERSION 1
CTK_C_API int32_t ctk_abi_version(void);
/* "ctk 0.x.y (CNTK API 2.7)"; static storage. */
CTK_C_API const char* ctk_version_string(void);

/* ---- status and errors ---------------------------------------------------------------------------- */
typedef int32_t ctk_status;
enum {
    CTK_OK = 0,
    CTK_ERROR_NULL_ARGUMENT = 1,     /* a required pointer or handle is NULL */
    CTK_ERROR_INVALID_HANDLE = 2,    /* a handle of the wrong kind, or one already released */
    CTK_ERROR_VALUE = 3,             /* an argument out of its range (ctk::ValueError) */
    CTK_ERROR_TYPE = 4,              /* a wrong or unsupported data type (ctk::TypeError) */
    CTK_ERROR_SHAPE = 5,             /* shapes that do not fit together (ctk::ShapeError) */
    CTK_ERROR_INDEX = 6,             /* an index outside its range (ctk::IndexError) */
    CTK_ERROR_IO = 7,                /* a file missing, unreadable or malformed (ctk::IOError) */
    CTK_ERROR_DEVICE = 8,            /* a device missing or failed (ctk::DeviceError) */
    CTK_ERROR_OUT_OF_MEMORY = 9,     /* an allocation failed */
    CTK_ERROR_NOT_IMPLEMENTED = 10,  /* exists, but not for this device, dtype or form */
    CTK_ERROR_BUFFER_TOO_SMALL = 11, /* a caller's buffer cannot hold the result; the message says the size */
    CTK_ERROR_INTERNAL = 12          /* anything else (a bug: please report the message) */
};
/* The message of the last failing call on this thread ("" when none): UTF-8, naming the function, the
 * argument and the op, file or shape at fault. Valid until the next failing call on this thread. */
CTK_C_API const char* ctk_last_error(void);
/* The code of the last failing call on this thread (CTK_OK when none). */
CTK_C_API ctk_status ctk_last_error_code(void);
CTK_C_API void ctk_clear_error(void);

/* ---- data types, devices, process-wide switches --------------------------------------------------- */
typedef enum ctk_dtype {
    CTK_FLOAT32 = 0,
    CTK_FLOAT64 = 1,
    CTK_FLOAT16 = 2,
    CTK_BFLOAT16 = 3,
    CTK_INT32 = 4,
    CTK_INT64 = 5,
    CTK_UINT8 = 6
} ctk_dtype;
CTK_C_API int64_t ctk_dtype_size(int32_t dtype); /* bytes per element; 0 for an unknown dtype */

enum { CTK_DEVICE_CPU = 0, CTK_DEVICE_GPU = 1, CTK_DEVICE_DEFAULT = -1 };
/* A device by value: {CTK_DEVICE_GPU, 0} is the first GPU; {CTK_DEVICE_DEFAULT, 0} the default device. */
typedef struct ctk_device {
    int32_t type;
    int32_t index;
} ctk_device;
CTK_C_API ctk_status ctk_all_devices(ctk_device* out, int64_t capacity, int64_t* count);
CTK_C_API ctk_status ctk_default_device(ctk_device* out);
/* Makes `device` the default; CTK_ERROR_DEVICE when it is not available. */
CTK_C_API ctk_status ctk_set_default_device(ctk_device device);
CTK_C_API ctk_status ctk_device_available(ctk_device device, int32_t* available);

/* CNTK's SetFixedRandomSeed and ResetRandomSeed: initializers and random ops made without a seed get
 * `seed` each (fixed) or seed, seed + 1, ... in creation order (reset), so two runs that build the same
 * graph match bit for bit. */
CTK_C_API ctk_status ctk_set_fixed_random_seed(uint64_t seed);
CTK_C_API ctk_status ctk_reset_random_seed(uint64_t seed);
/* CNTK's ForceDeterministicAlgorithms: GPU algorithms that are not bit-reproducible are not used (the
 * CPU kernels are deterministic for a given thread count). */
CTK_C_API ctk_status ctk_force_deterministic_algorithms(int32_t on);
CTK_C_API ctk_status ctk_deterministic_algorithms_forced(int32_t* on);
CTK_C_API ctk_status ctk_set_max_num_cpu_threads(int32_t threads);
CTK_C_API ctk_status ctk_max_num_cpu_threads(int32_t* threads);
/* The `ctk info` report (devices, libraries, CPU): written into buf (UTF-8, NUL-terminated) when it
 * fits; *length is always set to the text's length without the NUL. */
CTK_C_API ctk_status ctk_info_report(char* buf, int64_t capacity, int64_t* length);

/* ---- handles -------------------------------------------------------------------------------------- */
typedef struct ctk_variable ctk_variable_t;       /* an input, parameter, constant, placeholder or output */
typedef struct ctk_function ctk_function_t;       /* a graph (a model, a loss) */
typedef struct ctk_value ctk_value_t;             /* data for an input or from an output */
typedef struct ctk_initializer ctk_initializer_t; /* how a parameter's first value is drawn */
typedef struct ctk_schedule ctk_schedule_t;       /* a learning-rate or momentum schedule */
typedef struct ctk_learner ctk_learner_t;
typedef struct ctk_trainer ctk_trainer_t;
typedef struct ctk_deserializer ctk_deserializer_t; /* one reader of a minibatch source */
typedef struct ctk_minibatch_source ctk_minibatch_source_t;
typedef struct ctk_minibatch ctk_minibatch_t; /* one minibatch: a value per stream */

/* ---- variables ------------------------------------------------------------------------------------ */
/* Dynamic axes of inputs and placeholders: none (a plain tensor), the batch axis, or batch + sequence. */
enum { CTK_AXES_NONE = 0, CTK_AXES_BATCH = 1, CTK_AXES_SEQUENCE = 2 };
/* A dim worked out when the graph is built (a weight's input dim) and a dim taken from each minibatch. */
#define CTK_INFERRED_DIM (-1)
#define CTK_FREE_DIM (-3)
enum {
    CTK_KIND_INPUT = 0,
    CTK_KIND_OUTPUT = 1,
    CTK_KIND_PARAMETER = 2,
    CTK_KIND_CONSTANT = 3,
    CTK_KIND_PLACEHOLDER = 4
};

/* An input of sample shape `shape` (rank dims; rank 0 is a scalar sample). `name` may be NULL. */
CTK_C_API ctk_status ctk_input_variable(const int64_t* shape, int32_t rank, int32_t dtype,
                                        int32_t dynamic_axes, int32_t is_sparse, int32_t needs_gradient,
                                        const char* name, ctk_variable_t** out);
/* A parameter drawn by `init` when first read (dims may be CTK_INFERRED_DIM until the graph is built). */
CTK_C_API ctk_status ctk_parameter(const int64_t* shape, int32_t rank, int32_t dtype,
                                   const ctk_initializer_t* init, const char* name, ctk_variable_t** out);
/* A parameter or constant holding a copy of `data` (shape-many elements of `dtype`). */
CTK_C_API ctk_status ctk_parameter_from_data(const int64_t* shape, int32_t rank, int32_t dtype,
                                             const void* data, const char* name, ctk_variable_t** out);
CTK_C_API ctk_status ctk_constant_from_data(const int64_t* shape, int32_t rank, int32_t dtype,
                                            const void* data, const char* name, ctk_variable_t** out);
/* A constant of `shape` filled with `value` (rank 0: a scalar). */
CTK_C_API ctk_status ctk_constant(const int64_t* shape, int32_t rank, int32_t dtype, double value,
                                  const char* name, ctk_variable_t** out);
/* A placeholder; shape NULL: unknown until bound. */
CTK_C_API ctk_status ctk_placeholder(const int64_t* shape, int32_t rank, int32_t dynamic_axes,
                                     const char* name, ctk_variable_t** out);
CTK_C_API void ctk_variable_release(ctk_variable_t* v);
/* Another handle to the same variable. */
CTK_C_API ctk_status ctk_variable_retain(const ctk_variable_t* v, ctk_variable_t** out);

CTK_C_API ctk_status ctk_variable_kind(const ctk_variable_t* v, int32_t* kind);
CTK_C_API ctk_status ctk_variable_name(const ctk_variable_t* v, const char** name);
CTK_C_API ctk_status ctk_variable_uid(const ctk_variable_t* v, const char** uid);
CTK_C_API ctk_status ctk_variable_dtype(const ctk_variable_t* v, int32_t* dtype);
/* The static sample shape (dims may be CTK_INFERRED_DIM or CTK_FREE_DIM); *rank is always set. A
 * placeholder of unknown shape is CTK_ERROR_SHAPE. */
CTK_C_API ctk_status ctk_variable_shape(const ctk_variable_t* v, int64_t* dims, int32_t capacity,
                                        int32_t* rank);
/* CTK_AXES_NONE, _BATCH or _SEQUENCE. */
CTK_C_API ctk_status ctk_variable_dynamic_axes(const ctk_variable_t* v, int32_t* dynamic_axes);
CTK_C_API ctk_status ctk_variable_is_sparse(const ctk_variable_t* v, int32_t* is_sparse);
CTK_C_API ctk_status ctk_variable_needs_gradient(const ctk_variable_t* v, int32_t* needs_gradient);
/* 1 when both handles name the same variable. */
CTK_C_API ctk_status ctk_variable_equals(const ctk_variable_t* a, const ctk_variable_t* b, int32_t* equal);
/* The Function that computes an output variable; *out = NULL for the other kinds. */
CTK_C_API ctk_status ctk_variable_owner(const ctk_variable_t* v, ctk_function_t** out);
/* The variable as a Function (its owner for an output, a one-node graph otherwise: CNTK's conversion). */
CTK_C_API ctk_status ctk_variable_as_function(const ctk_variable_t* v, ctk_function_t** out);
/* Parameters and constants: the current value converted to `dtype` into `data` (count elements, which
 * must equal the value's size). */
CTK_C_API ctk_status ctk_variable_get_value(const ctk_variable_t* v, int32_t dtype, void* data,
                                            int64_t count);
/* Parameters and constants: copies `count` elements of `dtype` in (converted to the variable's dtype). */
CTK_C_API ctk_status ctk_variable_set_value(const ctk_variable_t* v, int32_t dtype, const void* data,
                                            int64_t count);
/* CNTK's text: "Input('x', [#], [784])". */
CTK_C_API ctk_status ctk_variable_to_string(const ctk_variable_t* v, char* buf, int64_t capacity,
                                            int64_t* length);

/* ---- initializers --------------------------------------------------------------------------------- */
enum {
    CTK_INIT_CONSTANT = 0, /* scale is the value */
    CTK_INIT_UNIFORM = 1,  /* U(-scale, scale) */
    CTK_INIT_NORMAL = 2,
    CTK_INIT_TRUNCATED_NORMAL = 3,
    CTK_INIT_XAVIER = 4,
    CTK_INIT_GLOROT_UNIFORM = 5,
    CTK_INIT_GLOROT_NORMAL = 6,
    CTK_INIT_HE_UNIFORM = 7,
    CTK_INIT_HE_NORMAL = 8
};
/* CNTK's SentinelValueForInferParamInitRank and its automatic seed. */
#define CTK_SENTINEL_RANK (2147483647)
#define CTK_SENTINEL_SEED (UINT64_MAX)
CTK_C_API ctk_status ctk_initializer_create(int32_t kind, double scale, int32_t output_rank,
                                            int32_t filter_rank, uint64_t seed, ctk_initializer_t** out);
CTK_C_API ctk_status ctk_initializer_bilinear(int64_t kernel_width, int64_t kernel_height,
                                              ctk_initializer_t** out);
CTK_C_API void ctk_initializer_release(ctk_initializer_t* init);

/* ---- values --------------------------------------------------------------------------------------- */
enum { CTK_COPY = 0, CTK_BORROW = 1 };
/* Dense data of full shape [batch, sample...] (or any shape, for a variable without dynamic axes).
 * CTK_COPY copies `data`; CTK_BORROW (CPU only) uses it in place: the caller keeps it alive and unchanged
 * until the value is released. */
CTK_C_API ctk_status ctk_value_create(int32_t dtype, const int64_t* shape, int32_t rank, const void* data,
                                      int32_t copy_mode, ctk_device device, ctk_value_t** out);
/* A batch of variable-length sequences: `data` holds the frames of all sequences one after another
 * (sum(lengths) frames of sample_shape each). `continues` (NULL: all start here) marks sequences that go
 * on from the previous minibatch (CNTK's seq_starts[i] == false). */
CTK_C_API ctk_status ctk_value_create_sequences(int32_t dtype, const int64_t* sample_shape,
                                                int32_t sample_rank, const void* data, const int64_t* lengths,
                                                int64_t num_sequences, const int32_t* continues,
                                                ctk_device device, ctk_value_t** out);
/* One-hot samples: indices[i] is the hot class of sample i (-1: all zero). lengths NULL: a batch of
 * `count` samples; else sequences of those lengths (sum(lengths) == count), `continues` as above. */
CTK_C_API ctk_status ctk_value_create_one_hot(int64_t num_classes, const int64_t* indices, int64_t count,
                                              const int64_t* lengths, int64_t num_sequences,
                                              const int32_t* continues, int32_t dtype, ctk_device device,
                                              ctk_value_t** out);
/* Sparse samples in CNTK's CSC form: column j (one sample) has the entries col_starts[j] ..
 * col_starts[j+1]-1 of row_indices/values; `dim` rows. Samples with one entry of 1 stay in index form. */
CTK_C_API ctk_status ctk_value_create_sparse_csc(int32_t dtype, int64_t dim, int64_t num_columns,
                                                 const int64_t* col_starts, const int64_t* row_indices,
                                                 const void* values, const int64_t* lengths,
                                                 int64_t num_sequences, const int32_t* continues,
                                                 ctk_device device, ctk_value_t** out);
CTK_C_API void ctk_value_release(ctk_value_t* value);
CTK_C_API ctk_status ctk_value_dtype(const ctk_value_t* value, int32_t* dtype);
/* The full shape: [batch, sample...] or [sequences, max_length, sample...]. */
CTK_C_API ctk_status ctk_value_shape(const ctk_value_t* value, int64_t* dims, int32_t capacity,
                                     int32_t* rank);
CTK_C_API ctk_status ctk_value_device(const ctk_value_t* value, ctk_device* device);
CTK_C_API ctk_status ctk_value_is_one_hot(const ctk_value_t* value, int32_t* one_hot);
/* Sequences: their count and lengths (a value without sequences: *count = 0). */
CTK_C_API ctk_status ctk_value_sequence_lengths(const ctk_value_t* value, int64_t* lengths, int64_t capacity,
                                                int64_t* count);
/* All elements (padding included) converted to `dtype`; count must equal the value's size. */
CTK_C_API ctk_status ctk_value_copy_data(const ctk_value_t* value, int32_t dtype, void* data, int64_t count);
/* The real frames of sequence i, converted to `dtype`; *frames set; capacity in elements. */
CTK_C_API ctk_status ctk_value_copy_sequence(const ctk_value_t* value, int64_t i, int32_t dtype, void* data,
                                             int64_t capacity, int64_t* frames);
/* Copies src's data (padding included) into dst, converted to dst's dtype: the shapes must be equal and
 * dst dense. A dst that borrows caller memory (CTK_BORROW) is written there: a preallocated output. */
CTK_C_API ctk_status ctk_value_assign(ctk_value_t* dst, const ctk_value_t* src);
/* A one-hot value's indices (size = the value's dynamic dims; -1 for all-zero and padded samples). */
CTK_C_API ctk_status ctk_value_one_hot_indices(const ctk_value_t* value, int64_t* indices, int64_t count);

/* ---- functions ------------------------------------------------------------------------------------ */
enum { CTK_FORMAT_AUTO = -1, CTK_FORMAT_CNTK_V2 = 0, CTK_FORMAT_ONNX = 1, CTK_FORMAT_CNTK_V1 = 2 };
/* Loads a model file of any format ctk reads (CNTK v2, CNTK v1, ONNX; AUTO detects it). */
CTK_C_API ctk_status ctk_function_load(const char* path, int32_t format, ctk_function_t** out);
/* Loads a CNTK v2 model from memory. */
CTK_C_API ctk_status ctk_function_load_buffer(const void* bytes, int64_t size, ctk_function_t** out);
/* Writes atomically (a crash never leaves a half file), creating missing folders as CNTK did. */
CTK_C_API ctk_status ctk_function_save(const ctk_function_t* f, const char* path, int32_t format);
/* A CNTK v2 model in memory: written into buf when it fits; *size always set. */
CTK_C_API ctk_status ctk_function_save_buffer(const ctk_function_t* f, void* buf, int64_t capacity,
                                              int64_t* size);
CTK_C_API void ctk_function_release(ctk_function_t* f);
CTK_C_API ctk_status ctk_function_retain(const ctk_function_t* f, ctk_function_t** out);

CTK_C_API ctk_status ctk_function_name(const ctk_function_t* f, const char** name);
CTK_C_API ctk_status ctk_function_set_name(ctk_function_t* f, const char* name);
CTK_C_API ctk_status ctk_function_uid(const ctk_function_t* f, const char** uid);
/* The op's name ("Times", "Combine", a block's op name). */
CTK_C_API ctk_status ctk_function_op_name(const ctk_function_t* f, const char** op_name);
enum {
    CTK_VARS_ARGUMENTS = 0,
    CTK_VARS_OUTPUTS = 1,
    CTK_VARS_INPUTS = 2,
    CTK_VARS_PARAMETERS = 3,
    CTK_VARS_CONSTANTS = 4,
    CTK_VARS_PLACEHOLDERS = 5
};
/* The function's variables of one kind; each returned handle is the caller's to release. */
CTK_C_API ctk_status ctk_function_variables(const ctk_function_t* f, int32_t which, ctk_variable_t** out,
                                            int64_t capacity, int64_t* count);
/* The single output; CTK_ERROR_VALUE when the function has several. */
CTK_C_API ctk_status ctk_function_output(const ctk_function_t* f, ctk_variable_t** out);
/* The first function of that name in the graph (blocks entered when nested); *out = NULL if none. */
CTK_C_API ctk_status ctk_function_find_by_name(const ctk_function_t* f, const char* name, int32_t nested,
                                               ctk_function_t** out);
/* Every function of that name (blocks entered when nested); each handle the caller's to release. */
CTK_C_API ctk_status ctk_function_find_all_with_name(const ctk_function_t* f, const char* name,
                                                     int32_t nested, ctk_function_t** out, int64_t capacity,
                                                     int64_t* count);
enum { CTK_CLONE = 0, CTK_SHARE = 1, CTK_FREEZE = 2 };
/* CNTK's Clone: parameters copied, shared or frozen into constants; from[i] replaced by to[i]. */
CTK_C_API ctk_status ctk_function_clone(const ctk_function_t* f, int32_t method,
                                        const ctk_variable_t* const* from, const ctk_variable_t* const* to,
                                        int64_t n, ctk_function_t** out);
CTK_C_API ctk_status ctk_function_replace_placeholders(ctk_function_t* f,
                                                       const ctk_variable_t* const* placeholders,
                                                       const ctk_variable_t* const* replacements, int64_t n);
/* f applied to new arguments (in the order of f's arguments). */
CTK_C_API ctk_status ctk_function_call(const ctk_function_t* f, const ctk_variable_t* const* args, int64_t n,
                                       ctk_function_t** out);
CTK_C_API ctk_status ctk_combine(const ctk_variable_t* const* outputs, int64_t n, const char* name,
                                 ctk_function_t** out);
/* CNTK's AsComposite: f's graph as a composite named `name`. */
CTK_C_API ctk_status ctk_function_as_composite(const ctk_function_t* f, const char* name,
                                               ctk_function_t** out);
/* Evaluates outputs[0..n_out) given inputs[i] = values[i] (inference mode); results[i] receives a new
 * value the caller releases. Inputs the graph does not read are ignored, as CNTK's Forward. */
CTK_C_API ctk_status ctk_function_evaluate(const ctk_function_t* f, const ctk_variable_t* const* inputs,
                                           const ctk_value_t* const* values, int64_t n_in,
                                           const ctk_variable_t* const* outputs, int64_t n_out,
                                           ctk_device device, ctk_value_t** results);
/* Gradients of `of` (NULL: the function's single output, summed over its elements and samples) with
 * respect to wrt[0..n_wrt) (parameters or inputs made with needs_gradient), the forward run in training
 * mode as CNTK's Function.grad; results[i] receives a new value the caller releases. */
CTK_C_API ctk_status ctk_function_grad(const ctk_function_t* f, const ctk_variable_t* const* inputs,
                                       const ctk_value_t* const* values, int64_t n_in,
                                       const ctk_variable_t* const* wrt, int64_t n_wrt,
                                       const ctk_variable_t* of, ctk_device device, ctk_value_t** results);
CTK_C_API ctk_status ctk_function_to_string(const ctk_function_t* f, char* buf, int64_t capacity,
                                            int64_t* length);

/* ---- ops (each returns a new function; `name` may be NULL) ----------------------------------------- */
/* Axes of ops: a static axis index (row-major, negative from the end) or one of these. */
#define CTK_AXIS_ALL_STATIC (2147483600)
#define CTK_AXIS_ALL (2147483601)
#define CTK_AXIS_BATCH (2147483602)
#define CTK_AXIS_SEQUENCE (2147483603)
#define CTK_AXIS_NONE (2147483647) /* "no axis given": the op's default */
/* Element-wise ops of one operand, by ctk's name: "negate", "abs", "sqrt", "square", "exp", "log",
 * "floor", "ceil", "round", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh",
 * "asinh", "atanh", "erf", "reciprocal", "sigmoid", "relu", "elu", "selu", "leaky_relu", "softplus",
 * "softsign", "hard_sigmoid", "element_not", and "stop_gradient", "alias", "straight_through". */
CTK_C_API ctk_status ctk_unary(const char* op, const ctk_variable_t* x, const char* name,
                               ctk_function_t** out);
/* "elu" and "leaky_relu" with their alpha. */
CTK_C_API ctk_status ctk_unary_alpha(const char* op, const ctk_variable_t* x, double alpha, const char* name,
                                     ctk_function_t** out);
/* Element-wise ops of two operands, broadcasting: "plus", "minus", "element_times", "element_divide",
 * "pow", "element_max", "element_min", "log_add_exp", "equal", "not_equal", "less", "less_equal",
 * "greater", "greater_equal", "element_and", "element_or", "element_xor", "param_relu"; and the losses
 * "cross_entropy_with_softmax", "classification_error", "squared_error", "binary_cross_entropy",
 * "cosine_distance" (output first, target second), "times_transpose". */
CTK_C_API ctk_status ctk_binary(const char* op, const ctk_variable_t* a, const ctk_variable_t* b,
                                const char* name, ctk_function_t** out);
CTK_C_API ctk_status ctk_clip(const ctk_variable_t* x, double min_value, double max_value, const char* name,
                              ctk_function_t** out);
CTK_C_API ctk_status ctk_element_select(const ctk_variable_t* condition, const ctk_variable_t* then_value,
                                        const ctk_variable_t* else_value, const char* name,
                                        ctk_function_t** out);
/* CNTK's times(x, w) in Python's operand order: x [..., k] times w [k, ...]. */
CTK_C_API ctk_status ctk_times(const ctk_variable_t* x, const ctk_variable_t* w, int32_t output_rank,
                               int32_t infer_input_rank_to_map, const char* name, ctk_function_t** out);
/* "softmax", "log_softmax", "hardmax", "argmax", "argmin" along `axis` (CTK_AXIS_NONE: the op's default). */
CTK_C_API ctk_status ctk_axis_op(const char* op, const ctk_variable_t* x, int32_t axis, const char* name,
                                 ctk_function_t** out);
/* "reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod", "reduce_log_sum_exp",
 * "reduce_l1", "reduce_l2", "reduce_sum_square" over axes[0..n) (n = 0: all static axes). */
CTK_C_API ctk_status ctk_reduce(const char* op, const ctk_variable_t* x, const int32_t* axes, int32_t n,
                                int32_t keepdims, const char* name, ctk_function_t** out);
CTK_C_API ctk_status ctk_classification_error(const ctk_variable_t* output, const ctk_variable_t* target,
                                              int64_t top_n, int32_t axis, const char* name,
                                              ctk_function_t** out);
CTK_C_API ctk_status ctk_reshape(const ctk_variable_t* x, const int64_t* shape, int32_t rank,
                                 const char* name, ctk_function_t** out);
CTK_C_API ctk_status ctk_transpose(const ctk_variable_t* x, const int32_t* perm, int32_t rank,
                                   const char* name, ctk_function_t** out);
CTK_C_API ctk_status ctk_splice(const ctk_variable_t* const* operands, int64_t n, int32_t axis,
                                const char* name, ctk_function_t** out);
/* Elements [begin[i], end[i]) with stride strides[i] (NULL: 1) of static axis axes[i], for n axes (negative
 * begin/end count from the end; end 0: to the end). */
CTK_C_API ctk_status ctk_slice(const ctk_variable_t* x, const int32_t* axes, const int64_t* begin,
                               const int64_t* end, const int64_t* strides, int32_t n, const char* name,
                               ctk_function_t** out);
CTK_C_API ctk_status ctk_sum(const ctk_variable_t* const* operands, int64_t n, const char* name,
                             ctk_function_t** out);
CTK_C_API ctk_status ctk_cast(const ctk_variable_t* x, int32_t dtype, const char* name, ctk_function_t** out);
CTK_C_API ctk_status ctk_dropout(const ctk_variable_t* x, double rate, uint64_t seed, const char* name,
                                 ctk_function_t** out);
/* CNTK's convolution(W, x): W [out_channels, in_channels, kh, kw], x [channels, h, w]; strides and
 * auto_padding per spatial axis (n entries; 1 entry applies to all). */
CTK_C_API ctk_status ctk_convolution(const ctk_variable_t* w, const ctk_variable_t* x, const int64_t* strides,
                                     int32_t n_strides, const int32_t* auto_padding, int32_t n_padding,
                                     const char* name, ctk_function_t** out);
enum { CTK_POOL_MAX = 0, CTK_POOL_AVERAGE = 1 };
/* ceil_out_dim: the last window may hang over the edge; include_pad: average pooling counts padding. */
CTK_C_API ctk_status ctk_pooling(const ctk_variable_t* x, int32_t type, const int64_t* window,
                                 int32_t n_window, const int64_t* strides, int32_t n_strides,
                                 const int32_t* auto_padding, int32_t n_padding, int32_t ceil_out_dim,
                                 int32_t include_pad, const char* name, ctk_function_t** out);
/* CNTK's batch_normalization with its running statistics as constants (running_var as CNTK 2.x). */
CTK_C_API ctk_status ctk_batch_normalization(const ctk_variable_t* x, const ctk_variable_t* scale,
                                             const ctk_variable_t* bias, const ctk_variable_t* running_mean,
                                             const ctk_variable_t* running_var,
                                             const ctk_variable_t* running_count, int32_t spatial,
                                             double normalization_time_constant, double blend_time_constant,
                                             double epsilon, const char* name, ctk_function_t** out);
/* past_value / future_value over the sequence axis; initial_state NULL: 0. */
CTK_C_API ctk_status ctk_past_value(const ctk_variable_t* x, const ctk_variable_t* initial_state,
                                    int64_t time_step, const char* name, ctk_function_t** out);
CTK_C_API ctk_status ctk_future_value(const ctk_variable_t* x, const ctk_variable_t* initial_state,
                                      int64_t time_step, const char* name, ctk_function_t** out);
/* Sequence ops of one operand: "first", "last", "reduce_sum", "reduce_max", "softmax", "is_first",
 * "is_last", "unpack". */
CTK_C_API ctk_status ctk_sequence_op(const char* op, const ctk_variable_t* x, const char* name,
                                     ctk_function_t** out);
CTK_C_API ctk_status ctk_sequence_broadcast_as(const ctk_variable_t* x, const ctk_variable_t* like,
                                               const char* name, ctk_function_t** out);

/* ---- schedules and learners ----------------------------------------------------------------------- */
/* CNTK's TrainingParameterSchedule: values[i] for counts[i] epochs of epoch_size samples each (counts NULL:
 * one epoch each; the last value holds on), per `minibatch_size` samples (0: per minibatch, 1: per sample).
 * n = 1 with counts NULL is a constant schedule. epoch_size 0 counts full data sweeps. */
CTK_C_API ctk_status ctk_schedule_create(const double* values, const int64_t* counts, int64_t n,
                                         int64_t epoch_size, int64_t minibatch_size, ctk_schedule_t** out);
/* CNTK's MomentumAsTimeConstantSchedule. */
CTK_C_API ctk_status ctk_momentum_as_time_constant_schedule(double time_constant, int64_t epoch_size,
                                                            ctk_schedule_t** out);
CTK_C_API ctk_status ctk_schedule_at(const ctk_schedule_t* s, int64_t samples_seen, double* value);
CTK_C_API void ctk_schedule_release(ctk_schedule_t* s);

/* CNTK's AdditionalLearningOptions; ctk_learner_options_default fills CNTK's defaults. */
typedef struct ctk_learner_options {
    double l1_regularization_weight;
    double l2_regularization_weight;
    double gaussian_noise_injection_std_dev;
    double gradient_clipping_threshold_per_sample; /* +inf: none */
    int32_t gradient_clipping_with_truncation;
    int32_t use_mean_gradient;
} ctk_learner_options;
CTK_C_API ctk_status ctk_learner_options_default(ctk_learner_options* options);
/* options may be NULL (the defaults). */
CTK_C_API ctk_status ctk_learner_sgd(const ctk_variable_t* const* parameters, int64_t n,
                                     const ctk_schedule_t* lr, const ctk_learner_options* options,
                                     ctk_learner_t** out);
CTK_C_API ctk_status ctk_learner_momentum_sgd(const ctk_variable_t* const* parameters, int64_t n,
                                              const ctk_schedule_t* lr, const ctk_schedule_t* momentum,
                                              int32_t unit_gain, const ctk_learner_options* options,
                                              ctk_learner_t** out);
CTK_C_API ctk_status ctk_learner_nesterov(const ctk_variable_t* const* parameters, int64_t n,
                                          const ctk_schedule_t* lr, const ctk_schedule_t* momentum,
                                          int32_t unit_gain, const ctk_learner_options* options,
                                          ctk_learner_t** out);
CTK_C_API ctk_status ctk_learner_adagrad(const ctk_variable_t* const* parameters, int64_t n,
                                         const ctk_schedule_t* lr, int32_t need_ave_multiplier,
                                         const ctk_learner_options* options, ctk_learner_t** out);
/* variance_momentum NULL: CNTK's default (per-sample 0.9999986111120757). */
CTK_C_API ctk_status ctk_learner_fsadagrad(const ctk_variable_t* const* parameters, int64_t n,
                                           const ctk_schedule_t* lr, const ctk_schedule_t* momentum,
                                           int32_t unit_gain, const ctk_schedule_t* variance_momentum,
                                           const ctk_learner_options* options, ctk_learner_t** out);
CTK_C_API ctk_status ctk_learner_adam(const ctk_variable_t* const* parameters, int64_t n,
                                      const ctk_schedule_t* lr, const ctk_schedule_t* momentum,
                                      int32_t unit_gain, const ctk_schedule_t* variance_momentum,
                                      double epsilon, int32_t adamax, const ctk_learner_options* options,
                                      ctk_learner_t** out);
CTK_C_API ctk_status ctk_learner_rmsprop(const ctk_variable_t* const* parameters, int64_t n,
                                         const ctk_schedule_t* lr, double gamma, double inc, double dec,
                                         double max, double min, int32_t need_ave_multiplier,
                                         const ctk_learner_options* options, ctk_learner_t** out);
CTK_C_API ctk_status ctk_learner_adadelta(const ctk_variable_t* const* parameters, int64_t n,
                                          const ctk_schedule_t* lr, double rho, double epsilon,
                                          const ctk_learner_options* options, ctk_learner_t** out);
CTK_C_API void ctk_learner_release(ctk_learner_t* learner);
CTK_C_API ctk_status ctk_learner_learning_rate(const ctk_learner_t* learner, double* lr);
CTK_C_API ctk_status ctk_learner_reset_learning_rate(ctk_learner_t* learner, const ctk_schedule_t* lr);
CTK_C_API ctk_status ctk_learner_samples_seen(const ctk_learner_t* learner, int64_t* samples);

/* ---- trainer -------------------------------------------------------------------------------------- */
/* CNTK's Trainer. model and metric may be NULL. progress_frequency > 0 prints CNTK's progress log to
 * stdout every that many minibatches (0: no printer). */
CTK_C_API ctk_status ctk_trainer_create(const ctk_function_t* model, const ctk_function_t* loss,
                                        const ctk_function_t* metric, const ctk_learner_t* const* learners,
                                        int64_t n_learners, int64_t progress_frequency, ctk_trainer_t** out);
CTK_C_API void ctk_trainer_release(ctk_trainer_t* trainer);
/* One step on inputs[i] = values[i]; *updated (may be NULL) says whether the parameters changed. A value
 * from a minibatch source is fitted to its input as the Python API does (a one-sample-per-sequence
 * stream becomes a batch). */
CTK_C_API ctk_status ctk_trainer_train_minibatch(ctk_trainer_t* trainer, const ctk_variable_t* const* inputs,
                                                 const ctk_value_t* const* values, int64_t n,
                                                 int32_t sweep_end, ctk_device device, int32_t* updated);
/* The metric's (else the loss's) average over the minibatch, in inference mode. */
CTK_C_API ctk_status ctk_trainer_test_minibatch(ctk_trainer_t* trainer, const ctk_variable_t* const* inputs,
                                                const ctk_value_t* const* values, int64_t n,
                                                ctk_device device, double* average);
CTK_C_API ctk_status ctk_trainer_previous_minibatch_loss_average(const ctk_trainer_t* trainer, double* loss);
CTK_C_API ctk_status ctk_trainer_previous_minibatch_evaluation_average(const ctk_trainer_t* trainer,
                                                                       double* metric);
CTK_C_API ctk_status ctk_trainer_previous_minibatch_sample_count(const ctk_trainer_t* trainer,
                                                                 int64_t* count);
CTK_C_API ctk_status ctk_trainer_total_samples_seen(const ctk_trainer_t* trainer, int64_t* count);
CTK_C_API ctk_status ctk_trainer_summarize_training_progress(ctk_trainer_t* trainer);
CTK_C_API ctk_status ctk_trainer_summarize_test_progress(ctk_trainer_t* trainer);
/* Checkpoints: the model, every learner's state and the trainer's counters, written atomically. */
CTK_C_API ctk_status ctk_trainer_save_checkpoint(const ctk_trainer_t* trainer, const char* path);
CTK_C_API ctk_status ctk_trainer_restore_from_checkpoint(ctk_trainer_t* trainer, const char* path);
CTK_C_API ctk_status ctk_trainer_model(const ctk_trainer_t* trainer, ctk_function_t** out);

/* ---- readers -------------------------------------------------------------------------------------- */
/* One stream of a CTF file: `field` is its name in the file (NULL: the stream's name). */
typedef struct ctk_stream_def {
    const char* name;
    const char* field;
    int64_t dim;
    int32_t is_sparse;
    int32_t defines_mb_size;
} ctk_stream_def;
CTK_C_API ctk_status ctk_ctf_deserializer(const char* path, const ctk_stream_def* streams, int64_t n,
                                          ctk_deserializer_t** out);
/* CNTK's binary format (CBF: what ctf2bin and `ctk data ctf2cbf` write). streams NULL/n 0: every stream
 * of the file under its own name; else the named streams (`field`: the name in the file). */
CTK_C_API ctk_status ctk_cbf_deserializer(const char* path, const ctk_stream_def* streams, int64_t n,
                                          ctk_deserializer_t** out);
/* MNIST-style IDX images and labels (streams "features" [rows*cols] and "labels" [num_classes]). */
CTK_C_API ctk_status ctk_idx_deserializer(const char* images_path, const char* labels_path,
                                          int64_t num_classes, ctk_deserializer_t** out);
/* CNTK's ImageDeserializer: a map file of "<image path>\t<label>" lines, decoded by OpenCV on reader
 * threads, `transforms` applied in order (CNTK's crop, scale, mean and colour), images as CHW floats in BGR
 * order under `image_stream`, one-hot labels of num_classes under `label_stream`. base64: the map file
 * holds the images themselves (CNTK's Base64ImageDeserializer). See docs/images.md. */
typedef struct ctk_image_transform ctk_image_transform_t;
/* crop_type "center", "randomside" or "randomarea" (any case); width/height 0: a square of the side
 * ratio; ratio ranges as CNTK's sideRatio/areaRatio/aspectRatio; jitter_type "none" or "uniratio";
 * hflip -1: CNTK's default for the crop type, else 0 or 1; seed 0: CNTK's default. */
CTK_C_API ctk_status ctk_image_crop(const char* crop_type, int64_t width, int64_t height,
                                    double side_ratio_min, double side_ratio_max, double area_ratio_min,
                                    double area_ratio_max, double aspect_ratio_min, double aspect_ratio_max,
                                    const char* jitter_type, int32_t hflip, uint32_t seed,
                                    ctk_image_transform_t** out);
/* interpolations "nearest", "linear", "cubic" or "lanczos" (NULL: linear); scale_mode "fill", "crop" or
 * "pad" (NULL: fill); pad_value -1 replicates the border. */
CTK_C_API ctk_status ctk_image_scale(int64_t width, int64_t height, int64_t channels,
                                     const char* interpolations, const char* scale_mode, int64_t pad_value,
                                     ctk_image_transform_t** out);
/* CNTK's mean file (OpenCV XML, as CNTK's CIFAR-10 installer and `ctk data images` write it). */
CTK_C_API ctk_status ctk_image_mean(const char* mean_file, ctk_image_transform_t** out);
CTK_C_API ctk_status ctk_image_color(double brightness_radius, double contrast_radius,
                                     double saturation_radius, uint32_t seed, ctk_image_transform_t** out);
CTK_C_API void ctk_image_transform_release(ctk_image_transform_t* t);
CTK_C_API ctk_status ctk_image_deserializer(const char* map_file, const char* label_stream,
                                            int64_t num_classes, const char* image_stream,
                                            const ctk_image_transform_t* const* transforms, int64_t n,
                                            int32_t grayscale, int32_t base64, ctk_deserializer_t** out);
CTK_C_API void ctk_deserializer_release(ctk_deserializer_t* d);

/* CNTK's INFINITELY_REPEAT and FULL_DATA_SWEEP. */
#define CTK_INFINITELY_REPEAT (INT64_MAX)
#define CTK_FULL_DATA_SWEEP (INT64_MAX - 2)
typedef struct ctk_source_config {
    int64_t max_samples;                     /* CTK_INFINITELY_REPEAT */
    int64_t max_sweeps;                      /* CTK_INFINITELY_REPEAT */
    int32_t randomize;                       /* 1 */
    int64_t randomization_window_in_chunks;  /* 128 */
    int64_t randomization_window_in_samples; /* 0: the window in chunks applies */
    uint64_t randomization_seed;             /* 0 */
    int32_t num_reader_threads;              /* 0: the machine's cores */
} ctk_source_config;
CTK_C_API ctk_status ctk_source_config_default(ctk_source_config* config);
/* config NULL: the defaults. */
CTK_C_API ctk_status ctk_minibatch_source_create(const ctk_deserializer_t* const* deserializers, int64_t n,
                                                 const ctk_source_config* config,
                                                 ctk_minibatch_source_t** out);
CTK_C_API void ctk_minibatch_source_release(ctk_minibatch_source_t* source);
CTK_C_API ctk_status ctk_minibatch_source_stream_count(const ctk_minibatch_source_t* source, int64_t* count);
/* Stream i's name (lives as long as the source), sample shape, dtype and sparsity. */
CTK_C_API ctk_status ctk_minibatch_source_stream_info(const ctk_minibatch_source_t* source, int64_t i,
                                                      const char** name, int64_t* dims, int32_t capacity,
                                                      int32_t* rank, int32_t* dtype, int32_t* is_sparse);
/* The next minibatch of about `samples` samples (this worker's share of num_partitions); an empty
 * minibatch (ctk_minibatch_stream_count 0) once the source's sample or sweep limit is reached. */
CTK_C_API ctk_status ctk_minibatch_source_next(ctk_minibatch_source_t* source, int64_t samples,
                                               int64_t num_partitions, int64_t partition_index,
                                               ctk_device device, ctk_minibatch_t** out);
/* The source's position, to resume reading after a restart (bytes of a CNTK Dictionary). */
CTK_C_API ctk_status ctk_minibatch_source_get_state(const ctk_minibatch_source_t* source, void* buf,
                                                    int64_t capacity, int64_t* size);
CTK_C_API ctk_status ctk_minibatch_source_set_state(ctk_minibatch_source_t* source, const void* bytes,
                                                    int64_t size);
CTK_C_API void ctk_minibatch_release(ctk_minibatch_t* mb);
CTK_C_API ctk_status ctk_minibatch_stream_count(const ctk_minibatch_t* mb, int64_t* count);
/* A stream's data and counts; *value is the caller's to release (any out-pointer may be NULL).
 * CTK_ERROR_VALUE naming the streams when `stream` is not one of them. */
CTK_C_API ctk_status ctk_minibatch_stream(const ctk_minibatch_t* mb, const char* stream, ctk_value_t** value,
                                          int64_t* num_samples, int64_t* num_sequences, int32_t* sweep_end);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CTK_C_CTK_H */
