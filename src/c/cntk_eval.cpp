// CNTK 2.5's evaluation C API (ctk/c/CNTKLibraryC.h) over ctk's C++ API: wide-character names, a status
// struct returned by value, column-major shapes, one sequence per input and call.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>
#include "c/handles.h"
#include "ctk/c/CNTKLibraryC.h"
#include "ctk/core/error.h"
#include "ctk/formats/model.h"

using namespace ctk;  // NOLINT(google-build-using-namespace): the C entry points below

namespace {

constexpr uint32_t kModelTag = 0x434e544b;  // "CNTK"

struct Model {
    uint32_t tag = kModelTag;
    FunctionPtr fn;
    Device device;
};

// wchar_t is UTF-32 on the platforms ctk builds for; names and paths travel as UTF-8 inside.
std::string to_utf8(const wchar_t* text) {
    std::string out;
    for (; *text != 0; ++text) {
        const auto c = static_cast<uint32_t>(*text);
        if (c < 0x80) {
            out += static_cast<char>(c);
        } else if (c < 0x800) {
            out += static_cast<char>(0xc0 | (c >> 6));
            out += static_cast<char>(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            out += static_cast<char>(0xe0 | (c >> 12));
            out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (c & 0x3f));
        } else {
            out += static_cast<char>(0xf0 | ((c >> 18) & 0x07));
            out += static_cast<char>(0x80 | ((c >> 12) & 0x3f));
            out += static_cast<char>(0x80 | ((c >> 6) & 0x3f));
            out += static_cast<char>(0x80 | (c & 0x3f));
        }
    }
    return out;
}

std::wstring to_wide(const std::string& text) {
    std::wstring out;
    for (size_t i = 0; i < text.size();) {
        const auto b = static_cast<unsigned char>(text[i]);
        const int extra = b < 0x80 ? 0 : b < 0xe0 ? 1 : b < 0xf0 ? 2 : 3;
        uint32_t c = extra == 0 ? b : b & (0x3f >> extra);
        for (int k = 1; k <= extra && i + k < text.size(); ++k)
            c = (c << 6) | (static_cast<unsigned char>(text[i + static_cast<size_t>(k)]) & 0x3f);
        out += static_cast<wchar_t>(c);
        i += static_cast<size_t>(extra) + 1;
    }
    return out;
}

CNTK_StatusCode status(int32_t value, const std::string& message = "") {
    CNTK_StatusCode s{};
    s.value = value;
    const std::wstring w = to_wide(message);
    const size_t n = std::min(w.size(), static_cast<size_t>(CNTK_STATUSCODE_DescriptionSize - 1));
    std::copy_n(w.begin(), n, s.description);
    s.description[n] = 0;
    return s;
}

template <typename Body>
CNTK_StatusCode call(const char* function, Body&& body) noexcept {
    try {
        body();
        return status(CNTK_SUCCESS);
    } catch (const capi::StatusError& e) {
        const int32_t code = e.code() == CTK_ERROR_NULL_ARGUMENT    ? CNTK_ERROR_NULL_POINTER
                             : e.code() == CTK_ERROR_INVALID_HANDLE ? CNTK_ERROR_INVALID_HANDLE
                                                                    : CNTK_ERROR_INTERNAL_ERROR;
        return status(code, std::string(function) + ": " + e.what());
    } catch (const std::exception& e) {  // CNTK reported every C++ exception as an internal error
        return status(CNTK_ERROR_INTERNAL_ERROR, std::string(function) + ": " + e.what());
    } catch (...) {
        return status(CNTK_ERROR_INTERNAL_ERROR, std::string(function) + ": an unknown exception");
    }
}

Model& model_of(CNTK_ModelHandle handle) {
    if (handle == CNTK_INVALID_MODEL_HANDLE)
        throw capi::StatusError(CTK_ERROR_INVALID_HANDLE, "Invalid model handle");
    auto* m = static_cast<Model*>(handle);
    if (m->tag != kModelTag) throw capi::StatusError(CTK_ERROR_INVALID_HANDLE, "Invalid model handle");
    return *m;
}

template <typename T>
T* required(T* p, const char* argument) {
    if (p == nullptr)
        throw capi::StatusError(CTK_ERROR_NULL_ARGUMENT,
                                std::string("'") + argument + "' parameter is not allowed to be null");
    return p;
}

Device device_of(const CNTK_DeviceDescriptor* device) {
    if (device == nullptr) return default_device();
    if (device->kind == CNTK_DeviceKind_GPU) {
        const Device d = Device::cuda(static_cast<int>(device->id));
        CTK_CHECK(device_available(d), DeviceError, "GPU ", device->id, " is not available");
        return d;
    }
    return Device::cpu();
}

template <typename T>
T* allocate(size_t n) {
    void* p = std::calloc(std::max<size_t>(n, 1), sizeof(T));
    if (p == nullptr) throw std::bad_alloc();
    return static_cast<T*>(p);
}

// CNTK's column-major dims of a row-major shape.
CNTK_Shape shape_out(const Dims& dims) {
    CNTK_Shape s{allocate<uint32_t>(dims.size()), static_cast<uint32_t>(dims.size())};
    for (size_t i = 0; i < dims.size(); ++i)
        s.value[i] = static_cast<uint32_t>(std::max<int64_t>(dims[dims.size() - 1 - i], 0));
    return s;
}

Dims dims_in(const CNTK_Shape& shape) {
    CTK_CHECK(shape.size <= 64, ValueError, "a shape of rank ", shape.size);
    if (shape.size > 0) required(shape.value, "shape.value");
    Dims dims;
    for (uint32_t i = shape.size; i-- > 0;) dims.push_back(shape.value[i]);
    return dims;
}

void variables_out(const std::vector<Variable>& vars, CNTK_Variable** out, uint32_t* count) {
    auto* list = allocate<CNTK_Variable>(vars.size());
    try {
        for (size_t i = 0; i < vars.size(); ++i) {
            const std::wstring name = to_wide(vars[i].name());
            list[i].name = allocate<wchar_t>(name.size() + 1);
            std::copy(name.begin(), name.end(), list[i].name);
            list[i].shape = shape_out(vars[i].shape());
        }
    } catch (...) {
        for (size_t i = 0; i < vars.size(); ++i) CNTK_CleanVariable(&list[i]);
        std::free(list);
        throw;
    }
    *out = list;
    *count = static_cast<uint32_t>(vars.size());
}

const Variable& find_by_name(const std::vector<Variable>& vars, const wchar_t* name, const char* what) {
    const std::string n = to_utf8(required(name, "name"));
    for (const Variable& v : vars)
        if (v.name() == n) return v;
    throw capi::StatusError(CTK_ERROR_VALUE, std::string("Unexpected ") + what + " '" + n + "'.");
}

// One input sequence (CNTK's value: the sample's dims, then the frames) as a ctk value for `var`.
Value input_value(const Variable& var, const CNTK_Value& in, bool reset) {
    const Dims all = dims_in(in.shape);
    const Dims& sample = var.shape();
    CTK_CHECK(all.size() >= sample.size(), ShapeError, "the value for '", var.name(), "' has rank ",
              all.size(), ", below its sample rank ", sample.size());
    const int64_t sample_size = Shape(sample).numel();
    const int64_t total = Shape(all).numel();
    CTK_CHECK(sample_size > 0 && total % sample_size == 0 && total > 0, ShapeError, "the value for '",
              var.name(), "' holds ", total, " elements, not a whole number of samples of shape ",
              Shape(sample).to_string());
    const int64_t frames = total / sample_size;
    Dims dims{frames};
    dims.insert(dims.end(), sample.begin(), sample.end());
    Tensor t = Tensor::empty(Shape(dims), DataType::f32);
    std::memcpy(t.raw_data(), required(in.data, "data"), static_cast<size_t>(total) * sizeof(float));
    if (var.dtype() != DataType::f32) t = t.to(var.dtype());
    if (!var.has_sequence_axis()) return Value(t);
    Value v = Value::from_sequences({t});
    return v.with_layout(
        std::make_shared<SequenceLayout>(std::vector<int64_t>{frames}, std::vector<bool>{!reset}));
}

}  // namespace

extern "C" {

CNTK_StatusCode CNTK_AllDevices(CNTK_DeviceDescriptor** devices, uint32_t* size) {
    return call(__func__, [&] {
        required(devices, "devices");
        required(size, "size");
        const std::vector<Device> all = all_devices();
        auto* list = allocate<CNTK_DeviceDescriptor>(all.size());
        for (size_t i = 0; i < all.size(); ++i)
            list[i] = {all[i].is_cuda() ? CNTK_DeviceKind_GPU : CNTK_DeviceKind_CPU,
                       static_cast<uint32_t>(all[i].index)};
        *devices = list;
        *size = static_cast<uint32_t>(all.size());
    });
}

CNTK_StatusCode CNTK_DefaultDevice(CNTK_DeviceDescriptor* device) {
    return call(__func__, [&] {
        const Device d = default_device();
        *required(device, "device") = {d.is_cuda() ? CNTK_DeviceKind_GPU : CNTK_DeviceKind_CPU,
                                       static_cast<uint32_t>(d.index)};
    });
}

CNTK_StatusCode CNTK_LoadModel(const wchar_t* modelFilePath, const CNTK_DeviceDescriptor* device,
                               CNTK_ModelHandle* handle) {
    return call(__func__, [&] {
        const std::string path = to_utf8(required(modelFilePath, "modelFilePath"));
        required(handle, "handle");
        auto m = std::make_unique<Model>();
        m->device = device_of(device);
        m->fn = load_model(path);
        *handle = m.release();
    });
}

CNTK_StatusCode CNTK_LoadModel_FromArray(const void* modelData, int modelDataLen,
                                         const CNTK_DeviceDescriptor* device, CNTK_ModelHandle* handle) {
    return call(__func__, [&] {
        required(modelData, "modelData");
        required(handle, "handle");
        CTK_CHECK(modelDataLen > 0, ValueError, "modelDataLen ", modelDataLen, " is not positive");
        auto m = std::make_unique<Model>();
        m->device = device_of(device);
        m->fn = deserialize_cntk_v2_model(
            std::string(static_cast<const char*>(modelData), static_cast<size_t>(modelDataLen)));
        *handle = m.release();
    });
}

CNTK_StatusCode CNTK_CloneModel(CNTK_ModelHandle model, CNTK_ParameterCloningMethod method,
                                bool /*flattened*/, CNTK_ModelHandle* cloned) {
    return call(__func__, [&] {
        const Model& m = model_of(model);
        required(cloned, "cloned");
        CTK_CHECK(method >= CNTK_ModelParameterShare && method <= CNTK_ModelParameterFreeze, ValueError,
                  "cloning method ", static_cast<int>(method),
                  " is not one of CNTK_ParameterCloningMethod's");
        const CloneMethod how = method == CNTK_ModelParameterShare   ? CloneMethod::share
                                : method == CNTK_ModelParameterClone ? CloneMethod::clone
                                                                     : CloneMethod::freeze;
        auto copy = std::make_unique<Model>();
        copy->device = m.device;
        copy->fn = m.fn->clone(how);
        *cloned = copy.release();
    });
}

void CNTK_ReleaseModel(CNTK_ModelHandle model) {
    if (model == CNTK_INVALID_MODEL_HANDLE) return;
    auto* m = static_cast<Model*>(model);
    if (m->tag != kModelTag) return;
    m->tag = 0;
    delete m;
}

CNTK_StatusCode CNTK_GetModelArgumentsInfo(CNTK_ModelHandle model, CNTK_Variable** inputs,
                                           uint32_t* numInputs) {
    return call(__func__, [&] {
        const Model& m = model_of(model);
        variables_out(m.fn->arguments(), required(inputs, "inputs"), required(numInputs, "numInputs"));
    });
}

CNTK_StatusCode CNTK_GetModelOutputsInfo(CNTK_ModelHandle model, CNTK_Variable** outputs,
                                         uint32_t* numOutputs) {
    return call(__func__, [&] {
        const Model& m = model_of(model);
        variables_out(m.fn->outputs(), required(outputs, "outputs"), required(numOutputs, "numOutputs"));
    });
}

CNTK_StatusCode CNTK_EvaluateSequence(CNTK_ModelHandle model, const CNTK_Variable* inputs,
                                      const CNTK_Value* inputValues, const bool* inputResetFlags,
                                      uint32_t numInputs, const CNTK_Variable* outputs, uint32_t numOutputs,
                                      CNTK_Value** outputValues) {
    return call(__func__, [&] {
        Model& m = model_of(model);
        required(outputValues, "outputValues");
        CTK_CHECK(numOutputs > 0, ValueError, "no outputs asked for");
        required(outputs, "outputs");
        if (numInputs > 0) {
            required(inputs, "inputs");
            required(inputValues, "inputValues");
            required(inputResetFlags, "inputResetFlags");
        }
        const std::vector<Variable> args = m.fn->arguments();
        ValueMap feed;
        for (uint32_t i = 0; i < numInputs; ++i) {
            const Variable& var = find_by_name(args, inputs[i].name, "argument");
            feed[var] = input_value(var, inputValues[i], inputResetFlags[i]);
        }
        const std::vector<Variable> outs_all = m.fn->outputs();
        std::vector<Variable> wanted;
        for (uint32_t i = 0; i < numOutputs; ++i)
            wanted.push_back(find_by_name(outs_all, outputs[i].name, "output"));
        ValueMap got = m.fn->eval(feed, wanted, m.device);
        std::vector<Tensor> results;
        for (const Variable& v : wanted)
            results.push_back(got.at(v).data().to(Device::cpu()).contiguous().to(DataType::f32));
        if (*outputValues != nullptr) {  // the caller's buffers
            for (size_t i = 0; i < results.size(); ++i) {
                CNTK_Value& out = (*outputValues)[i];
                const int64_t size = Shape(dims_in(out.shape)).numel();
                CTK_CHECK(size == results[i].numel(), ShapeError, "the buffer for output '", wanted[i].name(),
                          "' holds ", size, " elements; the output has ", results[i].numel(), " (shape ",
                          results[i].shape().to_string(), ")");
                std::memcpy(required(out.data, "outputValues.data"), results[i].raw_data(),
                            static_cast<size_t>(size) * sizeof(float));
            }
            return;
        }
        auto* list = allocate<CNTK_Value>(results.size());
        try {
            for (size_t i = 0; i < results.size(); ++i) {
                list[i].shape = shape_out(results[i].shape().dims());
                list[i].data = allocate<float>(static_cast<size_t>(results[i].numel()));
                std::memcpy(list[i].data, results[i].raw_data(),
                            static_cast<size_t>(results[i].numel()) * sizeof(float));
            }
        } catch (...) {
            for (size_t i = 0; i < results.size(); ++i) CNTK_CleanValue(&list[i]);
            std::free(list);
            throw;
        }
        *outputValues = list;
    });
}

void CNTK_ReleaseArray(void* array) {
    std::free(array);
}

void CNTK_CleanVariable(CNTK_Variable* variable) {
    if (variable == nullptr) return;
    std::free(variable->name);
    variable->name = nullptr;
    CNTK_CleanShape(&variable->shape);
}

void CNTK_CleanValue(CNTK_Value* value) {
    if (value == nullptr) return;
    std::free(value->data);
    value->data = nullptr;
    CNTK_CleanShape(&value->shape);
}

void CNTK_CleanShape(CNTK_Shape* shape) {
    if (shape == nullptr) return;
    std::free(shape->value);
    shape->value = nullptr;
    shape->size = 0;
}

}  // extern "C"
