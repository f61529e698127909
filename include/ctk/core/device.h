// Device: where a tensor's storage lives (the CPU, or CUDA device n). The device lives on the tensor;
// streams are passed explicitly in a KernelContext, never held in a global mode.
//
// CPU devices other than CPU:0 are logical: they share host memory and the CPU kernels but count as
// distinct devices, so an op that mixes CPU:0 and CPU:1 operands is refused exactly as one that mixes
// the CPU and a GPU. Tests compute graphs on CPU:1 to prove that no op leaves a tensor behind on the
// default device, without needing a GPU.
#pragma once

#include <string>
#include <vector>

namespace ctk {

enum class DeviceType : uint8_t { cpu, cuda };
inline constexpr int kNumDeviceTypes = 2;

struct Device {
    DeviceType type = DeviceType::cpu;
    int index = 0;

    static Device cpu(int index = 0) { return {DeviceType::cpu, index}; }
    static Device cuda(int index) { return {DeviceType::cuda, index}; }
    bool is_cpu() const { return type == DeviceType::cpu; }
    bool is_cuda() const { return type == DeviceType::cuda; }
    std::string to_string() const;  // "CPU", "CPU:1" (a logical CPU device), "CUDA:0"
    bool operator==(const Device& o) const { return type == o.type && index == o.index; }
    bool operator!=(const Device& o) const { return !(*this == o); }
};

// The devices this process can compute on: the CPU, then every CUDA device (none in a CPU-only build
// or without a driver).
std::vector<Device> all_devices();
// Whether `device` exists here (the CPU and its logical devices always; CUDA:n when n < device_count()).
bool device_available(Device device);

// "cpu", "gpu" (GPU 0), "gpu:N", or "auto" (GPU 0 when there is one, else the CPU). In a job started by
// mpiexec, "gpu" and "auto" mean the GPU gpu_of_worker() gives the worker, so that the workers on one
// machine spread over its GPUs. ValueError for other text and DeviceError for a GPU this machine lacks
// (saying why), both naming `what` (an option's name).
Device parse_device(const std::string& spec, const std::string& what = "device");
// The GPU of the worker with this local rank (its place among the job's workers on this machine):
// local_rank modulo the number of GPUs (0 without GPUs).
int gpu_of_worker(int64_t local_rank, int gpu_count);

// The device that graph evaluation, training and new parameter values use when the call names none
// (CNTK's DeviceDescriptor::UseDefaultDevice). Process-wide, as in CNTK. Initially the CPU, or what the
// environment variable CTK_DEFAULT_DEVICE says: cpu, gpu, gpu:N, or auto (GPU 0 when there is one, each
// worker's own GPU under mpiexec: CNTK picked a GPU by itself). A value that names no GPU here throws
// DeviceError on first use.
Device default_device();
// Makes `device` the default; false (and no change) when it is not available.
bool try_set_default_device(Device device);

}  // namespace ctk
