// The compatibility doctor behind `ctk info`: can this build's GPU code run on a device under the
// installed driver, and if not, what to do. The verdict and the report are pure functions of their
// inputs, so every case can be tested without a GPU; only query_cuda_system() asks the real driver.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ctk/core/build_info.h"
#include "ctk/core/cuda.h"

namespace ctk {

// The GPU code compiled into the binary. Architectures are written as CMake and nvcc write them:
// major * 10 + minor (86 = compute capability 8.6, 120 = 12.0).
struct CudaArchitectures {
    std::vector<int> sass;  // machine code (cubins): sm_NN, sorted, unique
    std::vector<int> ptx;   // PTX the driver can JIT-compile: compute_NN, sorted, unique
};

// Parses CMake's CUDA_ARCHITECTURES, separated by spaces or ';': "80-real 86-real 89-real 90" gives
// sass {80, 86, 89, 90} and ptx {90}. `NN-real` is machine code only, `NN-virtual` PTX only, plain `NN`
// both. An empty string gives empty lists (a CPU build). Throws ValueError for anything else: "native",
// "all" and "all-major" cannot be resolved after the build, and arch-specific code ("90a") follows
// other compatibility rules than the ones check_gpu_compatibility knows.
CudaArchitectures parse_cuda_architectures(const std::string& cmake_architectures);

enum class GpuCompatibility {
    runs_native,             // a cubin in the binary fits the device
    runs_via_ptx_jit,        // no cubin fits; the driver JIT-compiles the PTX at first use
    driver_too_old,          // the driver does not support the CUDA major version the binary needs
    ptx_needs_newer_driver,  // only PTX fits and the driver is older than the toolkit that wrote it
    no_compatible_code,      // nothing in the binary fits, or the GPU is older than this CUDA supports
    no_driver,               // no NVIDIA driver is installed
};
// "runs natively", "runs via PTX JIT", "driver too old", ...
const char* to_string(GpuCompatibility compatibility);

struct CompatibilityInput {
    int driver_version = 0;   // CUDA version the driver supports: 13000 = 13.0, 12080 = 12.8; 0 = none
    int runtime_version = 0;  // CUDA runtime the binary was built with, same encoding
    CudaArchitectures architectures;
    int major = 0;  // the device's compute capability
    int minor = 0;
};

struct CompatibilityVerdict {
    GpuCompatibility kind = GpuCompatibility::no_driver;
    std::string reason;  // one line: why
    // One line: what to do. When the GPU cannot run ctk, the fix; for PTX JIT, how to skip the JIT;
    // empty for runs_native.
    std::string fix;
    bool runnable() const {
        return kind == GpuCompatibility::runs_native || kind == GpuCompatibility::runs_via_ptx_jit;
    }
};

// Decides whether code built for `input.architectures` with runtime `input.runtime_version` runs on a
// device of compute capability major.minor under `input.driver_version`. Rules (docs/ctk_info.md):
// the driver must support the runtime's major version (minor version compatibility); the GPU must be
// one this CUDA major still targets; a cubin for sm_XY runs on X.Z for Z >= Y; PTX for compute_XY is
// JIT-compiled on any capability >= X.Y by a driver at least as new as the toolkit that wrote it.
CompatibilityVerdict check_gpu_compatibility(const CompatibilityInput& input);

// What the CUDA driver and runtime report on this machine.
struct CudaSystem {
    int driver_version = 0;   // 0 without a driver or in a CPU build
    int runtime_version = 0;  // 0 in a CPU build
    std::vector<cuda::DeviceProperties> devices;
    std::string unavailable_reason;  // why `devices` is empty (ctk::cuda::unavailable_reason())
    // The libraries a GPU build opens on first use (cuBLASLt, cuDNN, NCCL), one line each: the soname
    // and the version it reports, or why it cannot be loaded. Empty in a CPU build.
    std::vector<std::string> gpu_libraries;
};

// Asks the driver through ctk::cuda. Never throws: a failing query becomes the unavailable reason.
CudaSystem query_cuda_system();

// The verdict for one of `cuda`'s devices under this build; nullopt when the build's architecture list
// cannot be checked ("native", "90a", ...; see parse_cuda_architectures).
std::optional<CompatibilityVerdict> device_verdict(const BuildInfo& build, const CudaSystem& cuda,
                                                   const cuda::DeviceProperties& device);
// The verdict on the driver alone (no_driver, driver_too_old) in a GPU build; nullopt when the driver can
// run this build, and in CPU builds.
std::optional<CompatibilityVerdict> driver_verdict(const BuildInfo& build, const CudaSystem& cuda);

// The text `ctk info` prints: CNTK's build banner, the CUDA versions and architectures, then CNTK's GPU
// block with a compatibility verdict (and the fix) per device, or "No GPUs found" and why.
// CNTK's build banner (the dash lines, "Build info:" and its tab-indented fields).
std::string format_build_banner(const BuildInfo& build);
std::string format_info_report(const BuildInfo& build, const CudaSystem& cuda);

// format_info_report(build_info(), query_cuda_system()).
std::string info_report();

}  // namespace ctk
