// The compatibility verdict, CMake's architecture list and the `ctk info` report. Every rule and
// constant here is sourced in docs/ctk_info.md; only query_cuda_system() touches the driver.
#include "ctk/kernels/device_info.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <iterator>
#include <optional>
#include <string_view>

#include "ctk/core/error.h"

namespace ctk {
namespace {

using detail::concat;

// The first Linux driver release of each CUDA major. Through minor version compatibility it runs
// binaries from every minor release of that major (NVIDIA, "CUDA Compatibility", table 1).
int minimum_linux_driver(int cuda_major) {
    switch (cuda_major) {
        case 11:
            return 450;
        case 12:
            return 525;
        case 13:
            return 580;
        default:
            return 0;  // not known yet: the fix names the CUDA version instead
    }
}

// The oldest GPU each CUDA major compiles for: CUDA 12 dropped Kepler, CUDA 13 dropped Maxwell, Pascal
// and Volta (release notes, "Deprecated Architectures"). Later majors are assumed to keep 13's floor.
int minimum_architecture(int cuda_major) {
    if (cuda_major <= 11) return 35;
    if (cuda_major == 12) return 50;
    return 75;
}

// FP32 cores per SM, from the CUDA samples' _ConvertSMVer2Cores (Common/helper_cuda.h). A GPU missing
// from the table counts as the newest entry, as the samples do.
int cores_per_sm(int major, int minor) {
    struct Entry {
        int arch;
        int cores;
    };
    static constexpr Entry kTable[] = {
        {30, 192}, {32, 192}, {35, 192},  {37, 192},  {50, 128},  {52, 128},  {53, 128},  {60, 64},
        {61, 128}, {62, 128}, {70, 64},   {72, 64},   {75, 64},   {80, 64},   {86, 128},  {87, 128},
        {89, 128}, {90, 128}, {100, 128}, {101, 128}, {103, 128}, {110, 128}, {120, 128}, {121, 128},
    };
    const int arch = major * 10 + minor;
    for (const Entry& e : kTable)
        if (e.arch == arch) return e.cores;
    return std::end(kTable)[-1].cores;
}

// 13000 -> "13.0", 12080 -> "12.8" (the encoding of cudaDriverGetVersion / cudaRuntimeGetVersion).
std::string cuda_version_string(int version) {
    return concat(version / 1000, '.', version % 1000 / 10);
}

bool contains(const std::vector<int>& v, int x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

// The CMake list that builds what `a` holds plus machine code for `add_sass`, ready to paste.
std::string cmake_list_with(const CudaArchitectures& a, int add_sass) {
    std::vector<int> all = a.sass;
    all.insert(all.end(), a.ptx.begin(), a.ptx.end());
    all.push_back(add_sass);
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    std::string list;
    for (int arch : all) {
        const bool sass = arch == add_sass || contains(a.sass, arch);
        const bool ptx = contains(a.ptx, arch);
        if (!list.empty()) list += ';';
        list += concat(arch, sass && ptx ? "" : sass ? "-real" : "-virtual");
    }
    return list;
}

std::string rebuild_fix(const CudaArchitectures& a, int device_arch) {
    return concat("rebuild ctk with -DCMAKE_CUDA_ARCHITECTURES=\"", cmake_list_with(a, device_arch), "\"");
}

std::string driver_fix(int runtime_version) {
    const int major = runtime_version / 1000;
    if (const int release = minimum_linux_driver(major))
        return concat("install an NVIDIA driver of release ", release, " or newer (CUDA ", major, ".0)");
    return concat("install an NVIDIA driver that supports CUDA ", major, ".0 or newer");
}

// The verdicts that depend on the driver alone; nullopt when the driver can run this build.
std::optional<CompatibilityVerdict> check_driver(int driver_version, int runtime_version) {
    const std::string runtime = cuda_version_string(runtime_version);
    if (driver_version <= 0)
        return CompatibilityVerdict{
            GpuCompatibility::no_driver,
            concat("no NVIDIA driver is installed; ctk was built with CUDA ", runtime),
            driver_fix(runtime_version)};
    if (driver_version / 1000 < runtime_version / 1000)
        return CompatibilityVerdict{GpuCompatibility::driver_too_old,
                                    concat("the driver supports CUDA ", cuda_version_string(driver_version),
                                           "; ctk was built with CUDA ", runtime, " and needs a CUDA ",
                                           runtime_version / 1000, ".x driver"),
                                    driver_fix(runtime_version)};
    return std::nullopt;
}

std::string join_archs(const std::vector<int>& archs, std::string_view prefix) {
    std::string out;
    for (int arch : archs) out += concat(out.empty() ? "" : " ", prefix, arch);
    return out.empty() ? "none" : out;
}

}  // namespace

CudaArchitectures parse_cuda_architectures(const std::string& cmake_architectures) {
    CudaArchitectures out;
    std::string_view rest = cmake_architectures;
    while (!rest.empty()) {
        const size_t begin = rest.find_first_not_of(" ;");
        if (begin == std::string_view::npos) break;
        rest.remove_prefix(begin);
        const size_t end = std::min(rest.find_first_of(" ;"), rest.size());
        const std::string_view token = rest.substr(0, end);
        rest.remove_prefix(end);

        const size_t digits = std::min(token.find_first_not_of("0123456789"), token.size());
        const std::string_view suffix = token.substr(digits);
        CTK_CHECK(digits > 0 && digits <= 4 && (suffix.empty() || suffix == "-real" || suffix == "-virtual"),
                  ValueError, "CUDA architecture '", token,
                  "' is not of the form NN, NN-real or NN-virtual; ctk info cannot check it");
        const int arch = std::stoi(std::string(token.substr(0, digits)));
        if (suffix != "-virtual") out.sass.push_back(arch);
        if (suffix != "-real") out.ptx.push_back(arch);
    }
    for (std::vector<int>* v : {&out.sass, &out.ptx}) {
        std::sort(v->begin(), v->end());
        v->erase(std::unique(v->begin(), v->end()), v->end());
    }
    return out;
}

const char* to_string(GpuCompatibility compatibility) {
    switch (compatibility) {
        case GpuCompatibility::runs_native:
            return "runs natively";
        case GpuCompatibility::runs_via_ptx_jit:
            return "runs via PTX JIT";
        case GpuCompatibility::driver_too_old:
            return "driver too old";
        case GpuCompatibility::ptx_needs_newer_driver:
            return "PTX needs a newer driver";
        case GpuCompatibility::no_compatible_code:
            return "no compatible code";
        case GpuCompatibility::no_driver:
            return "no driver";
    }
    return "unknown";
}

CompatibilityVerdict check_gpu_compatibility(const CompatibilityInput& in) {
    const CudaArchitectures& archs = in.architectures;
    const int device = in.major * 10 + in.minor;
    const std::string cc = concat(in.major, '.', in.minor);
    const int runtime_major = in.runtime_version / 1000;

    if (in.driver_version <= 0) return *check_driver(in.driver_version, in.runtime_version);
    // Before the driver: a newer driver would not help this GPU.
    if (const int floor = minimum_architecture(runtime_major); device < floor)
        return {GpuCompatibility::no_compatible_code,
                concat("compute capability ", cc, " is below sm_", floor, ", the oldest GPU CUDA ",
                       runtime_major, " builds for"),
                concat("this GPU (compute capability ", cc, ") is older than CUDA ", runtime_major,
                       " supports (sm_", floor, " minimum); use the CPU")};
    if (auto verdict = check_driver(in.driver_version, in.runtime_version)) return *verdict;

    // A cubin for sm_XY runs on X.Z for every Z >= Y, never across majors; take the closest one.
    int sass = 0;
    for (int arch : archs.sass)
        if (arch / 10 == in.major && arch % 10 <= in.minor) sass = std::max(sass, arch);
    if (sass) {
        std::string reason = concat("sm_", sass, " machine code fits compute capability ", cc);
        if (in.driver_version < in.runtime_version)
            reason += concat(" (the driver's CUDA ", cuda_version_string(in.driver_version),
                             " is older than CUDA ", cuda_version_string(in.runtime_version),
                             ": minor version compatibility, features that need a newer driver fail)");
        return {GpuCompatibility::runs_native, reason, ""};
    }

    // PTX for compute_XY is JIT-compiled for any capability >= X.Y; take the newest that fits.
    int ptx = 0;
    for (int arch : archs.ptx)
        if (arch <= device) ptx = std::max(ptx, arch);
    if (ptx) {
        // The driver's JIT reads PTX only up to the version of its own CUDA release, and the PTX was
        // written by the toolkit of the runtime (CUDA_ERROR_UNSUPPORTED_PTX_VERSION otherwise).
        if (in.driver_version < in.runtime_version)
            return {GpuCompatibility::ptx_needs_newer_driver,
                    concat("no machine code for sm_", device, "; its compute_", ptx, " PTX comes from CUDA ",
                           cuda_version_string(in.runtime_version),
                           " and the driver's JIT only reads up to CUDA ",
                           cuda_version_string(in.driver_version)),
                    concat("install an NVIDIA driver that supports CUDA ",
                           cuda_version_string(in.runtime_version), " or newer, or ",
                           rebuild_fix(archs, device))};
        return {GpuCompatibility::runs_via_ptx_jit,
                concat("no machine code for sm_", device, "; the driver JIT-compiles the compute_", ptx,
                       " PTX at first use (a slow first start, then cached)"),
                concat(rebuild_fix(archs, device), " to skip the JIT")};
    }

    return {GpuCompatibility::no_compatible_code,
            concat("no machine code for sm_", device, " and no PTX at or below compute_", device, " (built: ",
                   join_archs(archs.sass, "sm_"), "; PTX: ", join_archs(archs.ptx, "compute_"), ")"),
            rebuild_fix(archs, device)};
}

namespace {

// The major version of a "13.0.88"-style version string.
std::string major_of(const std::string& version) {
    return version.substr(0, version.find('.'));
}

// "cuDNN: libcudnn.so.9 9.19.0", or why it cannot be loaded. `version_symbol` is the library's version
// function (returning the code, or writing it through a pointer); the library is closed again (ctk opens
// it itself when a GPU needs it).
std::string probe_library(const std::string& what, const std::string& soname, const char* version_symbol,
                          bool version_through_pointer) {
    void* h = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char* err = dlerror();
        return concat(what, ": ", soname, " not found (", err ? err : "unknown reason", ")");
    }
    std::string version = "loads";
    if (void* sym = dlsym(h, version_symbol)) {
        long long code = 0;
        if (version_through_pointer) {
            int v = 0;
            if (reinterpret_cast<int (*)(int*)>(sym)(&v) == 0) code = v;
        } else {
            code = static_cast<long long>(reinterpret_cast<size_t (*)()>(sym)());
        }
        // cuBLASLt, cuDNN 9 and NCCL 2.9+ all count major * 10000 + minor * 100 + patch.
        if (code > 0) version = concat(code / 10000, ".", code / 100 % 100, ".", code % 100);
    }
    dlclose(h);
    return concat(what, ": ", soname, " ", version);
}

}  // namespace

CudaSystem query_cuda_system() {
    CudaSystem system;
    const BuildInfo build = build_info();
    if (build.build_target == "GPU") {
        system.gpu_libraries.push_back(probe_library(
            "cuBLASLt", "libcublasLt.so." + major_of(build.cuda_version), "cublasLtGetVersion", false));
        system.gpu_libraries.push_back(
            probe_library("cuDNN", "libcudnn.so." + major_of(build.cudnn_version), "cudnnGetVersion", false));
        if (!build.nccl_version.empty())
            system.gpu_libraries.push_back(
                probe_library("NCCL", "libnccl.so." + major_of(build.nccl_version), "ncclGetVersion", true));
    }
    try {
        if (cuda::is_built()) {
            system.driver_version = cuda::driver_version();
            system.runtime_version = cuda::runtime_version();
            const int count = cuda::device_count();
            for (int i = 0; i < count; ++i) system.devices.push_back(cuda::properties(i));
        }
        if (system.devices.empty()) system.unavailable_reason = cuda::unavailable_reason();
    } catch (const std::exception& e) {
        system.unavailable_reason = e.what();
    }
    return system;
}

namespace {
constexpr std::string_view kDashes = "-------------------------------------------------------------------\n";
}  // namespace

std::string format_build_banner(const BuildInfo& build) {
    const bool gpu_build = build.build_target == "GPU";
    std::string out;
    // CNTK's banner (Common.cpp, PrintBuiltInfo). Left out: "Last modified date" (CNTK printed
    // __TIMESTAMP__, the mtime of the one file holding the banner, which says nothing about the build),
    // "Build Branch" (only the SHA is baked in), the 1bit-SGD/ASGD lines (not built yet). NCCL's line is
    // ctk's own (CNTK used its own collectives); the MPI lines, as in CNTK, only in builds with MPI.
    out += kDashes;
    out += "Build info: \n\n";
    out += concat("\t\tBuilt time: ", build.built_time, "\n");
    out += concat("\t\tBuild type: ", build.build_type, "\n");
    out += concat("\t\tBuild target: ", build.build_target, "\n");
    out += concat("\t\tMath lib: ", build.math_lib, "\n");
    if (gpu_build) {
        out += concat("\t\tCUDA version: ", build.cuda_version, "\n");
        out += concat("\t\tCUDNN version: ", build.cudnn_version, "\n");
        if (!build.nccl_version.empty()) out += concat("\t\tNCCL version: ", build.nccl_version, "\n");
    }
    out += concat("\t\tBuild SHA1: ", build.git_sha, "\n");
    if (!build.mpi_distribution.empty()) {
        out += concat("\t\tMPI distribution: ", build.mpi_distribution, "\n");
        out += concat("\t\tMPI version: ", build.mpi_version, "\n");
    }
    out += kDashes;
    return out;
}

std::optional<CompatibilityVerdict> device_verdict(const BuildInfo& build, const CudaSystem& cuda,
                                                   const cuda::DeviceProperties& device) {
    std::optional<CudaArchitectures> archs;
    try {
        archs = parse_cuda_architectures(build.cuda_architectures);
    } catch (const ValueError&) {
        return std::nullopt;
    }
    return check_gpu_compatibility(
        {cuda.driver_version, cuda.runtime_version, *archs, device.major, device.minor});
}

std::optional<CompatibilityVerdict> driver_verdict(const BuildInfo& build, const CudaSystem& cuda) {
    if (build.build_target != "GPU") return std::nullopt;
    return check_driver(cuda.driver_version, cuda.runtime_version);
}

std::string format_info_report(const BuildInfo& build, const CudaSystem& cuda) {
    const bool gpu_build = build.build_target == "GPU";
    std::string out = format_build_banner(build);

    // ctk's additions: what the binary holds and what the machine offers.
    out += concat("ctk version: ", build.version, "\n");
    if (gpu_build) {
        std::string note;
        try {
            const CudaArchitectures archs = parse_cuda_architectures(build.cuda_architectures);
            note = concat("machine code: ", join_archs(archs.sass, "sm_"),
                          "; PTX: ", join_archs(archs.ptx, "compute_"));
        } catch (const ValueError& e) {
            note = e.what();
        }
        out += concat("CUDA architectures: ", build.cuda_architectures, " (", note, ")\n");
        out += concat(
            "CUDA driver: ",
            cuda.driver_version > 0 ? "supports CUDA " + cuda_version_string(cuda.driver_version) : "none",
            "\n");
        out += concat("CUDA runtime: ",
                      cuda.runtime_version > 0 ? cuda_version_string(cuda.runtime_version) : "unknown", "\n");
        // Opened on first use on a GPU, so a machine without them still runs on the CPU.
        for (const std::string& line : cuda.gpu_libraries) out += line + "\n";
    } else {
        out += "CUDA: not built in\n";
    }

    if (cuda.devices.empty()) {
        out += "No GPUs found\n";
        out += concat(
            "\t\treason: ", cuda.unavailable_reason.empty() ? "none given" : cuda.unavailable_reason, "\n");
        if (auto verdict = driver_verdict(build, cuda)) out += concat("\t\tfix: ", verdict->fix, "\n");
        return out;
    }

    // CNTK's GPU block (PrintGpuInfo), then a verdict line per device.
    out += kDashes;
    out += "GPU info:\n\n";
    for (const cuda::DeviceProperties& d : cuda.devices) {
        char line[512];
        std::snprintf(
            line, sizeof(line),
            "\t\tDevice[%d]: cores = %d; computeCapability = %d.%d; type = \"%s\"; total memory = %lu MB; "
            "free memory = %lu MB\n",
            d.index, d.multiprocessors * cores_per_sm(d.major, d.minor), d.major, d.minor, d.name.c_str(),
            static_cast<unsigned long>(d.total_memory >> 20),
            static_cast<unsigned long>(d.free_memory >> 20));
        out += line;
        const std::optional<CompatibilityVerdict> verdict = device_verdict(build, cuda, d);
        if (!verdict) {
            out += concat("\t\tDevice[", d.index, "] verdict: not checked (unknown architectures)\n");
            continue;
        }
        const CompatibilityVerdict& v = *verdict;
        out += concat("\t\tDevice[", d.index, "] verdict: ", to_string(v.kind), ": ", v.reason, "\n");
        if (!v.fix.empty())
            out += concat("\t\tDevice[", d.index, "] ", v.runnable() ? "tip" : "fix", ": ", v.fix, "\n");
    }
    out += kDashes;
    return out;
}

std::string info_report() {
    return format_info_report(build_info(), query_cuda_system());
}

}  // namespace ctk
