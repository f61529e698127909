// The C ABI's handles and the one wrapper every exported function runs its body in: exceptions become a
// status and a thread-local message, NULL and wrong-kind handles become errors instead of crashes.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>
#include "ctk/c/ctk.h"
#include "ctk/core/error.h"
#include "ctk/graph/function.h"
#include "ctk/graph/initializer.h"
#include "ctk/io.h"
#include "ctk/io/image.h"
#include "ctk/learners.h"
#include "ctk/train/trainer.h"

// Each handle starts with a tag naming its kind, so that a handle of another kind is refused by name; the
// tag is cleared on release (a released handle must not be used again: its memory is gone).
enum : uint32_t {
    kVariableTag = 0x43564152,  // "CVAR"
    kFunctionTag = 0x4346554e,
    kValueTag = 0x4356414c,
    kInitializerTag = 0x43494e49,
    kScheduleTag = 0x43534348,
    kLearnerTag = 0x434c524e,
    kTrainerTag = 0x43545252,
    kDeserializerTag = 0x43445352,
    kSourceTag = 0x43535243,
    kMinibatchTag = 0x434d4241,
    kImageTransformTag = 0x43494d54,
};

struct ctk_variable {
    static constexpr uint32_t kTag = kVariableTag;
    uint32_t tag = kTag;
    ctk::Variable var;
    static constexpr const char* kind = "ctk_variable_t";
};
struct ctk_function {
    static constexpr uint32_t kTag = kFunctionTag;
    uint32_t tag = kTag;
    ctk::FunctionPtr fn;
    std::string op_name;  // kept for ctk_function_op_name's pointer
    static constexpr const char* kind = "ctk_function_t";
};
struct ctk_value {
    static constexpr uint32_t kTag = kValueTag;
    uint32_t tag = kTag;
    ctk::Value value;
    // A value taken from a minibatch source keeps its reader form, so that it is fitted to the input it
    // is given for as the trainers fit a reader's streams (bind_minibatch).
    std::shared_ptr<ctk::MinibatchData> from_reader;
    std::string stream;
    static constexpr const char* kind = "ctk_value_t";
};
struct ctk_initializer {
    static constexpr uint32_t kTag = kInitializerTag;
    uint32_t tag = kTag;
    ctk::Initializer init;
    static constexpr const char* kind = "ctk_initializer_t";
};
struct ctk_schedule {
    static constexpr uint32_t kTag = kScheduleTag;
    uint32_t tag = kTag;
    ctk::TrainingParameterSchedule schedule;
    static constexpr const char* kind = "ctk_schedule_t";
};
struct ctk_learner {
    static constexpr uint32_t kTag = kLearnerTag;
    uint32_t tag = kTag;
    ctk::LearnerPtr learner;
    static constexpr const char* kind = "ctk_learner_t";
};
struct ctk_trainer {
    static constexpr uint32_t kTag = kTrainerTag;
    uint32_t tag = kTag;
    std::unique_ptr<ctk::Trainer> trainer;
    static constexpr const char* kind = "ctk_trainer_t";
};
struct ctk_deserializer {
    static constexpr uint32_t kTag = kDeserializerTag;
    uint32_t tag = kTag;
    ctk::DeserializerPtr deserializer;
    static constexpr const char* kind = "ctk_deserializer_t";
};
struct ctk_image_transform {
    static constexpr uint32_t kTag = kImageTransformTag;
    uint32_t tag = kTag;
    ctk::ImageTransform transform;
    static constexpr const char* kind = "ctk_image_transform_t";
};
struct ctk_minibatch_source {
    static constexpr uint32_t kTag = kSourceTag;
    uint32_t tag = kTag;
    std::unique_ptr<ctk::MinibatchSource> source;
    static constexpr const char* kind = "ctk_minibatch_source_t";
};
struct ctk_minibatch {
    static constexpr uint32_t kTag = kMinibatchTag;
    uint32_t tag = kTag;
    std::unordered_map<std::string, ctk::MinibatchData> streams;
    static constexpr const char* kind = "ctk_minibatch_t";
};

namespace ctk::capi {

// An error the C layer itself raises (a NULL argument, a handle of the wrong kind, a small buffer).
class StatusError : public std::exception {
public:
    StatusError(ctk_status code, std::string message) : code_(code), message_(std::move(message)) {}
    ctk_status code() const { return code_; }
    const char* what() const noexcept override { return message_.c_str(); }

private:
    ctk_status code_;
    std::string message_;
};

// Records a failure of `function` for ctk_last_error and returns its code.
ctk_status fail(const char* function, ctk_status code, const std::string& message);
// The status of the exception in flight, recorded for ctk_last_error.
ctk_status fail_current(const char* function);

// Runs `body` (which may throw); CTK_OK when it returns.
template <typename Body>
ctk_status guarded(const char* function, Body&& body) noexcept {
    try {
        body();
        return CTK_OK;
    } catch (...) {
        return fail_current(function);
    }
}

// A required pointer argument.
template <typename T>
T* required(T* p, const char* argument) {
    if (p == nullptr)
        throw StatusError(CTK_ERROR_NULL_ARGUMENT, std::string("argument '") + argument + "' is NULL");
    return p;
}

// The handle behind `h`, checked for NULL and for its kind.
template <typename H>
H& handle(const H* h, const char* argument) {
    if (h == nullptr)
        throw StatusError(CTK_ERROR_NULL_ARGUMENT, std::string("argument '") + argument + "' is NULL");
    uint32_t tag;
    std::memcpy(&tag, h, sizeof tag);
    if (tag != H::kTag)
        throw StatusError(CTK_ERROR_INVALID_HANDLE, std::string("argument '") + argument +
                                                        "' is not a live " + H::kind +
                                                        " (a handle of another kind, or released)");
    return const_cast<H&>(*h);
}

// The handle at array[index] (the argument named `argument[index]` in messages, formatted only on failure:
// this runs for every input of every evaluation).
template <typename H>
H& handle_at(const H* const* array, int64_t index, const char* argument) {
    const H* h = array[index];
    uint32_t tag = 0;
    if (h != nullptr) std::memcpy(&tag, h, sizeof tag);
    if (h != nullptr && tag == H::kTag) return const_cast<H&>(*h);
    const std::string what = std::string(argument) + "[" + std::to_string(index) + "]";
    return handle(h, what.c_str());  // throws, naming the argument
}

// Frees a handle (NULL-safe; a handle of the wrong kind is left alone).
template <typename H>
void release(H* h) noexcept {
    if (h == nullptr) return;
    uint32_t tag;
    std::memcpy(&tag, h, sizeof tag);
    if (tag != H::kTag) return;
    h->tag = 0;
    delete h;
}

// Handles for the C caller (owned by the caller from here on).
ctk_variable_t* new_variable(const Variable& v);
ctk_function_t* new_function(const FunctionPtr& f);
ctk_value_t* new_value(Value v);

// Arguments in C form, checked.
DataType dtype_arg(int32_t dtype, const char* argument);
Dims dims_arg(const int64_t* shape, int64_t rank, const char* argument);
Device device_arg(ctk_device device);
ctk_device device_out(Device device);
std::string name_arg(const char* name);
std::vector<Variable> variables_arg(const ctk_variable_t* const* vars, int64_t n, const char* argument);
std::vector<Variable> function_outputs(const ctk_function_t* f, const char* argument);

// The ValueMap for inputs[i] = values[i], reader values fitted to their inputs.
ValueMap bind_inputs(const ctk_variable_t* const* inputs, const ctk_value_t* const* values, int64_t n);

// Text into a caller's buffer: copied with its NUL when it fits; *length always set.
void write_text(const std::string& text, char* buf, int64_t capacity, int64_t* length, const char* what);
// Bytes into a caller's buffer: copied when they fit; *size always set.
void write_bytes(const std::string& bytes, void* buf, int64_t capacity, int64_t* size, const char* what);
// A list into a caller's array: make(items[i]) for the first min(capacity, size) items; *count always set.
template <typename T, typename Out, typename Make>
void write_list(const std::vector<T>& items, Out* out, int64_t capacity, int64_t* count, const char* argument,
                Make&& make) {
    required(count, "count");
    CTK_CHECK(capacity >= 0, ValueError, "capacity ", capacity, " is negative");
    if (capacity > 0) required(out, argument);
    const size_t n = std::min(items.size(), static_cast<size_t>(capacity));
    for (size_t i = 0; i < n; ++i) out[i] = make(items[i]);
    *count = static_cast<int64_t>(items.size());
}
// min(capacity, dims) dims; *rank always set.
void write_dims(const Dims& dims, int64_t* out, int32_t capacity, int32_t* rank);
// Tensor `t` converted to `dtype` into `data` (count must equal its size).
void copy_out(const Tensor& t, int32_t dtype, void* data, int64_t count, const char* what);
// A new CPU tensor of `dims` holding a copy of `data` (`dtype`).
Tensor copy_in(const Dims& dims, DataType dtype, const void* data, const char* argument);

}  // namespace ctk::capi
