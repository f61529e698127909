// Devices: their names, which exist here, and the process-wide default device (ctk/core/device.h).
#include "ctk/core/device.h"

#include <atomic>
#include <cstdlib>
#include <string>

#include "ctk/core/cuda.h"
#include "ctk/core/error.h"
#include "ctk/core/launcher.h"

namespace ctk {

std::string Device::to_string() const {
    if (type == DeviceType::cpu) return index == 0 ? std::string("CPU") : "CPU:" + std::to_string(index);
    return "CUDA:" + std::to_string(index);
}

std::vector<Device> all_devices() {
    std::vector<Device> devices{Device::cpu()};
    for (int i = 0; i < cuda::device_count(); ++i) devices.push_back(Device::cuda(i));
    return devices;
}

bool device_available(Device device) {
    if (device.index < 0) return false;
    return device.is_cpu() || device.index < cuda::device_count();
}

namespace {

int64_t device_code(Device d) {
    return (static_cast<int64_t>(d.type) << 32) | static_cast<uint32_t>(d.index);
}

Device initial_default_device() {
    const char* env = std::getenv("CTK_DEFAULT_DEVICE");
    if (!env || !*env) return Device::cpu();
    return parse_device(env, "CTK_DEFAULT_DEVICE");
}

// Packed type and index, so that readers on other threads never see half an update.
std::atomic<int64_t>& default_device_code() {
    static std::atomic<int64_t> code{device_code(initial_default_device())};
    return code;
}

}  // namespace

int gpu_of_worker(int64_t local_rank, int gpu_count) {
    return gpu_count > 0 ? static_cast<int>(local_rank % gpu_count) : 0;
}

Device parse_device(const std::string& spec, const std::string& what) {
    if (spec == "cpu") return Device::cpu();
    // Unnumbered, each worker of a job takes its own GPU of the machine (CNTK's default device did too).
    auto workers_gpu = [] { return gpu_of_worker(launched_worker().local_rank, cuda::device_count()); };
    if (spec == "auto") return cuda::device_count() > 0 ? Device::cuda(workers_gpu()) : Device::cpu();
    int index = -1;
    if (spec == "gpu") {
        index = workers_gpu();
    } else if (spec.rfind("gpu:", 0) == 0 && spec.size() > 4 && spec.size() < 10 &&
               spec.find_first_not_of("0123456789", 4) == std::string::npos) {
        index = std::stoi(spec.substr(4));
    }
    CTK_CHECK(index >= 0, ValueError, what, " '", spec, "': expected cpu, gpu, gpu:N or auto");
    const int n = cuda::device_count();
    CTK_CHECK(index < n, DeviceError, what, " '", spec, "': there is no GPU ", index, " here (", n, " found",
              n ? "" : ": " + cuda::unavailable_reason(), ")");
    return Device::cuda(index);
}

Device default_device() {
    const int64_t code = default_device_code().load(std::memory_order_relaxed);
    return {static_cast<DeviceType>(code >> 32), static_cast<int>(code & 0xffffffff)};
}

bool try_set_default_device(Device device) {
    if (!device_available(device)) return false;
    default_device_code().store(device_code(device), std::memory_order_relaxed);
    return true;
}

}  // namespace ctk
