// The C ABI's errors, version, devices, process-wide switches, and the argument helpers the other files
// share.
#include <cmath>
#include <cstring>
#include <new>
#include <string>
#include "c/handles.h"
#include "ctk/core/build_info.h"
#include "ctk/core/cuda.h"
#include "ctk/core/error.h"
#include "ctk/core/parallel.h"
#include "ctk/kernels/cpu_info.h"
#include "ctk/kernels/device_info.h"

namespace ctk::capi {
namespace {

struct LastError {
    ctk_status code = CTK_OK;
    std::string message;
};
thread_local LastError t_last_error;

}  // namespace

ctk_status fail(const char* function, ctk_status code, const std::string& message) {
    t_last_error.code = code;
    t_last_error.message = escape_invalid_utf8(std::string(function) + ": " + message);
    return code;
}

ctk_status fail_current(const char* function) {
    try {
        throw;
    } catch (const StatusError& e) {
        return fail(function, e.code(), e.what());
    } catch (const ShapeError& e) {
        return fail(function, CTK_ERROR_SHAPE, e.what());
    } catch (const TypeError& e) {
        return fail(function, CTK_ERROR_TYPE, e.what());
    } catch (const ValueError& e) {
        return fail(function, CTK_ERROR_VALUE, e.what());
    } catch (const IndexError& e) {
        return fail(function, CTK_ERROR_INDEX, e.what());
    } catch (const IOError& e) {
        return fail(function, CTK_ERROR_IO, e.what());
    } catch (const DeviceError& e) {
        return fail(function, CTK_ERROR_DEVICE, e.what());
    } catch (const OutOfMemoryError& e) {
        return fail(function, CTK_ERROR_OUT_OF_MEMORY, e.what());
    } catch (const NotImplementedError& e) {
        return fail(function, CTK_ERROR_NOT_IMPLEMENTED, e.what());
    } catch (const std::bad_alloc&) {
        return fail(function, CTK_ERROR_OUT_OF_MEMORY, "out of memory");
    } catch (const std::exception& e) {
        return fail(function, CTK_ERROR_INTERNAL, e.what());
    } catch (...) {
        return fail(function, CTK_ERROR_INTERNAL, "an unknown exception");
    }
}

ctk_variable_t* new_variable(const Variable& v) {
    auto* h = new ctk_variable;
    h->var = v;
    return h;
}

ctk_function_t* new_function(const FunctionPtr& f) {
    auto* h = new ctk_function;
    h->fn = f;
    return h;
}

ctk_value_t* new_value(Value v) {
    auto* h = new ctk_value;
    h->value = std::move(v);
    return h;
}

DataType dtype_arg(int32_t dtype, const char* argument) {
    if (dtype < 0 || dtype >= kNumDataTypes)
        throw StatusError(CTK_ERROR_TYPE, std::string("argument '") + argument + "' is " +
                                              std::to_string(dtype) + ", not a ctk_dtype (0-" +
                                              std::to_string(kNumDataTypes - 1) + ")");
    return static_cast<DataType>(dtype);
}

Dims dims_arg(const int64_t* shape, int64_t rank, const char* argument) {
    CTK_CHECK(rank >= 0 && rank <= 64, ValueError, "argument '", argument, "': rank ", rank,
              " is outside 0-64");
    if (rank > 0) required(shape, argument);
    return Dims(shape, shape + rank);
}

Device device_arg(ctk_device device) {
    switch (device.type) {
        case CTK_DEVICE_DEFAULT:
            return default_device();
        case CTK_DEVICE_CPU:
            return Device::cpu(device.index);
        case CTK_DEVICE_GPU:
            CTK_CHECK(device.index >= 0, ValueError, "device: GPU index ", device.index, " is negative");
            CTK_CHECK(device_available(Device::cuda(device.index)), DeviceError, "device: GPU ", device.index,
                      " is not available (", all_devices().size() - 1, " GPUs found; `ctk info` says why)");
            return Device::cuda(device.index);
        default:
            CTK_THROW(ValueError, "device: type ", device.type,
                      " is not CTK_DEVICE_CPU (0), CTK_DEVICE_GPU (1) or CTK_DEVICE_DEFAULT (-1)");
    }
}

ctk_device device_out(Device device) {
    return {device.is_cuda() ? CTK_DEVICE_GPU : CTK_DEVICE_CPU, device.index};
}

std::string name_arg(const char* name) {
    return name == nullptr ? std::string() : std::string(name);
}

std::vector<Variable> variables_arg(const ctk_variable_t* const* vars, int64_t n, const char* argument) {
    CTK_CHECK(n >= 0, ValueError, "argument '", argument, "': count ", n, " is negative");
    if (n > 0) required(vars, argument);
    std::vector<Variable> out;
    out.reserve(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) out.push_back(handle_at(vars, i, argument).var);
    return out;
}

std::vector<Variable> function_outputs(const ctk_function_t* f, const char* argument) {
    return handle(f, argument).fn->outputs();
}

void write_text(const std::string& text, char* buf, int64_t capacity, int64_t* length, const char* what) {
    required(length, "length");
    *length = static_cast<int64_t>(text.size());
    if (buf == nullptr || capacity == 0) return;
    if (capacity <= static_cast<int64_t>(text.size()))
        throw StatusError(CTK_ERROR_BUFFER_TOO_SMALL, std::string(what) + " needs " +
                                                          std::to_string(text.size() + 1) + " bytes, " +
                                                          std::to_string(capacity) + " given");
    std::memcpy(buf, text.data(), text.size());
    buf[text.size()] = '\0';
}

void write_bytes(const std::string& bytes, void* buf, int64_t capacity, int64_t* size, const char* what) {
    required(size, "size");
    *size = static_cast<int64_t>(bytes.size());
    if (buf == nullptr || capacity == 0) return;
    if (capacity < static_cast<int64_t>(bytes.size()))
        throw StatusError(CTK_ERROR_BUFFER_TOO_SMALL, std::string(what) + " needs " +
                                                          std::to_string(bytes.size()) + " bytes, " +
                                                          std::to_string(capacity) + " given");
    std::memcpy(buf, bytes.data(), bytes.size());
}

void write_dims(const Dims& dims, int64_t* out, int32_t capacity, int32_t* rank) {
    required(rank, "rank");
    CTK_CHECK(capacity >= 0, ValueError, "capacity ", capacity, " is negative");
    if (capacity > 0) required(out, "dims");
    for (size_t i = 0; i < dims.size() && static_cast<int32_t>(i) < capacity; ++i) out[i] = dims[i];
    *rank = static_cast<int32_t>(dims.size());
}

void copy_out(const Tensor& t, int32_t dtype, void* data, int64_t count, const char* what) {
    const DataType want = dtype_arg(dtype, "dtype");
    required(data, "data");
    CTK_CHECK(count == t.numel(), ShapeError, what, " has ", t.numel(), " elements (shape ",
              t.shape().to_string(), "); the buffer was given for ", count);
    const Tensor host = t.to(Device::cpu()).contiguous().to(want);
    std::memcpy(data, host.raw_data(), static_cast<size_t>(host.numel()) * size_of(want));
}

Tensor copy_in(const Dims& dims, DataType dtype, const void* data, const char* argument) {
    Tensor t = Tensor::empty(Shape(dims), dtype);
    if (t.numel() > 0)
        std::memcpy(t.raw_data(), required(data, argument), static_cast<size_t>(t.numel()) * size_of(dtype));
    return t;
}

}  // namespace ctk::capi

using namespace ctk;        // NOLINT(google-build-using-namespace): the C entry points below
using namespace ctk::capi;  // NOLINT(google-build-using-namespace)

extern "C" {

int32_t ctk_abi_version(void) {
    return CTK_ABI_VERSION;
}

const char* ctk_version_string(void) {
    static const std::string text = "ctk " + build_info().version + " (CNTK API 2.7)";
    return text.c_str();
}

const char* ctk_last_error(void) {
    return t_last_error.message.c_str();
}

ctk_status ctk_last_error_code(void) {
    return t_last_error.code;
}

void ctk_clear_error(void) {
    t_last_error.code = CTK_OK;
    t_last_error.message.clear();
}

int64_t ctk_dtype_size(int32_t dtype) {
    if (dtype < 0 || dtype >= kNumDataTypes) return 0;
    return static_cast<int64_t>(size_of(static_cast<DataType>(dtype)));
}

ctk_status ctk_all_devices(ctk_device* out, int64_t capacity, int64_t* count) {
    return guarded(__func__, [&] { write_list(all_devices(), out, capacity, count, "out", device_out); });
}

ctk_status ctk_default_device(ctk_device* out) {
    return guarded(__func__, [&] { *required(out, "out") = device_out(default_device()); });
}

ctk_status ctk_set_default_device(ctk_device device) {
    return guarded(__func__, [&] {
        const Device d = device_arg(device);
        CTK_CHECK(try_set_default_device(d), DeviceError, "device ", d.to_string(), " is not available");
    });
}

ctk_status ctk_device_available(ctk_device device, int32_t* available) {
    return guarded(__func__, [&] {
        required(available, "available");
        CTK_CHECK(device.type == CTK_DEVICE_CPU || device.type == CTK_DEVICE_GPU, ValueError, "device type ",
                  device.type, " is not CTK_DEVICE_CPU or CTK_DEVICE_GPU");
        const Device d =
            device.type == CTK_DEVICE_GPU ? Device::cuda(device.index) : Device::cpu(device.index);
        *available = device.index >= 0 && device_available(d) ? 1 : 0;
    });
}

ctk_status ctk_set_fixed_random_seed(uint64_t seed) {
    return guarded(__func__, [&] { set_fixed_random_seed(seed); });
}

ctk_status ctk_reset_random_seed(uint64_t seed) {
    return guarded(__func__, [&] { reset_random_seed(seed); });
}

ctk_status ctk_force_deterministic_algorithms(int32_t on) {
    return guarded(__func__, [&] { cuda::set_deterministic(on != 0); });
}

ctk_status ctk_deterministic_algorithms_forced(int32_t* on) {
    return guarded(__func__, [&] { *required(on, "on") = cuda::deterministic() ? 1 : 0; });
}

ctk_status ctk_set_max_num_cpu_threads(int32_t threads) {
    return guarded(__func__, [&] {
        CTK_CHECK(threads >= 1, ValueError, "threads must be at least 1, not ", threads);
        set_num_threads(threads);
    });
}

ctk_status ctk_max_num_cpu_threads(int32_t* threads) {
    return guarded(__func__, [&] { *required(threads, "threads") = num_threads(); });
}

ctk_status ctk_info_report(char* buf, int64_t capacity, int64_t* length) {
    return guarded(__func__,
                   [&] { write_text(info_report() + cpu_report(), buf, capacity, length, "the report"); });
}

}  // extern "C"
