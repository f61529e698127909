// The CUDA runtime as ctk uses it (declared in ctk/core/cuda.h). Compiled in every build: without the CUDA
// backend the queries report "no GPU" and the rest throws, so callers need no #ifdefs.
#include "ctk/core/cuda.h"

#include <array>
#include <atomic>
#include <mutex>

#include "ctk/core/error.h"
#include "ctk/core/op_profile.h"
#include "ctk/core/tensor.h"

#if CTK_HAVE_CUDA
#include "core/cuda/cuda_check.h"
#endif

namespace ctk::cuda {

#if CTK_HAVE_CUDA

namespace detail {

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
    cudaGetLastError();  // clear a sticky-free error so the next call starts clean
    std::string where = std::string(" (") + call + " at " + file + ":" + std::to_string(line) + ")";
    if (error == cudaErrorMemoryAllocation)
        throw OutOfMemoryError(std::string("CUDA out of memory: ") + cudaGetErrorString(error) + where);
    throw DeviceError(std::string("CUDA error ") + cudaGetErrorName(error) + ": " +
                      cudaGetErrorString(error) + where);
}

void set_device(int device) {
    // Asked each time rather than cached: other libraries in the process may switch devices too.
    int current = -1;
    CTK_CUDA_CHECK(cudaGetDevice(&current));
    if (current != device) CTK_CUDA_CHECK(cudaSetDevice(device));
}

namespace {
constexpr int kMaxDevices = 64;
std::array<cudaStream_t, kMaxDevices> g_streams{};
std::array<std::once_flag, kMaxDevices> g_stream_once;
std::array<std::atomic<cudaStream_t>, kMaxDevices> g_made_streams{};  // set once a stream exists
thread_local bool t_capturing = false;
}  // namespace

cudaStream_t cuda_stream(Device device) {
    check_device(device);
    std::call_once(g_stream_once[device.index], [&] {
        set_device(device.index);
        // Non-blocking: ctk's work must not serialize with other libraries' legacy-stream work.
        CTK_CUDA_CHECK(cudaStreamCreateWithFlags(&g_streams[device.index], cudaStreamNonBlocking));
        g_made_streams[device.index].store(g_streams[device.index], std::memory_order_release);
    });
    set_device(device.index);
    return g_streams[device.index];
}

cudaStream_t existing_cuda_stream(int device) {
    if (device < 0 || device >= kMaxDevices) return nullptr;
    return g_made_streams[device].load(std::memory_order_acquire);
}

bool this_thread_captures() {
    return t_capturing;
}
void set_this_thread_captures(bool on) {
    t_capturing = on;
}

}  // namespace detail

bool recording_on_this_thread() {
    return detail::this_thread_captures();
}

namespace {

struct Availability {
    int count = 0;
    std::string reason;
};

const Availability& availability() {
    static const Availability a = [] {
        Availability r;
        int n = 0;
        cudaError_t e = cudaGetDeviceCount(&n);
        if (e == cudaSuccess && n > 0) {
            r.count = n;
        } else if (e == cudaErrorInsufficientDriver) {
            r.reason = driver_version() == 0
                           ? "no CUDA driver is installed (libcuda.so was not found)"
                           : "the installed NVIDIA driver is older than this build's CUDA runtime";
        } else if (e == cudaErrorNoDevice || (e == cudaSuccess && n == 0)) {
            r.reason = "a CUDA driver is installed but it reports no GPU";
        } else {
            r.reason = std::string("the CUDA runtime could not be initialized: ") + cudaGetErrorName(e) +
                       ": " + cudaGetErrorString(e);
        }
        cudaGetLastError();
        return r;
    }();
    return a;
}

}  // namespace

bool is_built() {
    return true;
}
int device_count() {
    return availability().count;
}
std::string unavailable_reason() {
    return availability().reason;
}

int driver_version() {
    int v = 0;
    if (cudaDriverGetVersion(&v) != cudaSuccess) v = 0;
    cudaGetLastError();
    return v;
}

int runtime_version() {
    int v = 0;
    cudaRuntimeGetVersion(&v);
    return v;
}

void check_device(Device device) {
    CTK_CHECK(device.is_cuda(), DeviceError, "expected a CUDA device, got ", device.to_string());
    int n = device_count();
    CTK_CHECK(n > 0, DeviceError, device.to_string(), " is not available: ", unavailable_reason());
    CTK_CHECK(device.index >= 0 && device.index < n && device.index < detail::kMaxDevices, DeviceError,
              device.to_string(), " does not exist: this process sees ", n, " GPU(s)");
}

DeviceProperties properties(int index) {
    check_device(Device::cuda(index));
    cudaDeviceProp p{};
    CTK_CUDA_CHECK(cudaGetDeviceProperties(&p, index));
    DeviceProperties r;
    r.index = index;
    r.name = p.name;
    r.major = p.major;
    r.minor = p.minor;
    r.multiprocessors = p.multiProcessorCount;
    r.total_memory = static_cast<int64_t>(p.totalGlobalMem);
    r.l2_cache_bytes = p.l2CacheSize;
    detail::set_device(index);
    size_t free_bytes = 0, total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess)
        r.free_memory = static_cast<int64_t>(free_bytes);
    cudaGetLastError();
    return r;
}

void* stream(Device device) {
    return detail::cuda_stream(device);
}

void synchronize(Device device) {
    cudaStream_t s = detail::cuda_stream(device);
    ctk::detail::host_wait([&] { CTK_CUDA_CHECK(cudaStreamSynchronize(s)); });
}

#else  // no CUDA backend in this build

namespace {
[[noreturn]] void no_backend() {
    CTK_THROW(DeviceError, "this build of ctk has no CUDA backend");
}
}  // namespace

bool is_built() {
    return false;
}
int device_count() {
    return 0;
}
bool is_available() {
    return false;
}
std::string unavailable_reason() {
    return "this build of ctk has no CUDA backend";
}
int driver_version() {
    return 0;
}
int runtime_version() {
    return 0;
}
DeviceProperties properties(int) {
    no_backend();
}
void check_device(Device device) {
    CTK_THROW(DeviceError, device.to_string(), " is not available: this build of ctk has no CUDA backend");
}
void* stream(Device) {
    no_backend();
}
void synchronize(Device) {
    no_backend();
}

// Pinned memory degrades to ordinary host memory, and every copy to a "device" is the ordinary one
// (which throws, naming the device).
Tensor pinned_empty(const Shape& shape, DataType dtype) {
    return Tensor::empty(shape, dtype);
}
bool is_pinned(const Tensor&) {
    return false;
}
Tensor to_device_async(const Tensor& host, Device device) {
    return host.to(device);
}
Tensor to_host_async(const Tensor& t, Event&) {
    return t.to(Device::cpu());  // no Event exists without the backend; kept for the declaration
}

bool recording_on_this_thread() {
    return false;
}

std::unique_ptr<Graph> Graph::capture(Device, const std::function<void()>&, std::string* why_not) {
    if (why_not) *why_not = "this build of ctk has no CUDA backend";
    return nullptr;
}
Graph::~Graph() = default;
void Graph::replay() {
    no_backend();
}

Event::Event(Device device) : device_(device) {
    check_device(device);
}
Event::~Event() = default;
void Event::record() {
    no_backend();
}
void Event::synchronize() const {
    no_backend();
}
bool Event::ready() const {
    no_backend();
}
float Event::elapsed_ms(const Event&) const {
    no_backend();
}

#endif

#if CTK_HAVE_CUDA
bool is_available() {
    return device_count() > 0;
}
#endif

namespace {
std::atomic<bool> g_allow_tf32{false};
std::atomic<bool> g_deterministic{false};
}  // namespace
void set_allow_tf32(bool allow) {
    g_allow_tf32 = allow;
}
void set_deterministic(bool d) {
    g_deterministic = d;
}
bool deterministic() {
    return g_deterministic;
}
bool allow_tf32() {
    return g_allow_tf32;
}

}  // namespace ctk::cuda
