// Device: where a tensor's storage lives (the CPU, or CUDA device n). The device lives on the tensor;
// streams are passed explicitly in a KernelContext, never held in a global mode.
#pragma once

#include <string>

namespace ctk {

enum class DeviceType : uint8_t { cpu, cuda };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
    DeviceType type = DeviceType::cpu;
    int index = 0;

    static Device cpu() { return {DeviceType::cpu, 0}; }
    static Device cuda(int index) { return {DeviceType::cuda, index}; }
    bool is_cpu() const { return type == DeviceType::cpu; }
    bool is_cuda() const { return type == DeviceType::cuda; }
    std::string to_string() const;  // "CPU", "CUDA:0"
    bool operator==(const Device& o) const { return type == o.type && index == o.index; }
    bool operator!=(const Device& o) const { return !(*this == o); }
};

}  // namespace ctk
