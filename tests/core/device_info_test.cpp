// The compatibility verdict for every case `ctk info` must tell apart, CMake's architecture list, and
// the report text, all on fake devices: no GPU is needed.
#include <gtest/gtest.h>

#include <string>

#include "ctk/core/error.h"
#include "ctk/kernels/device_info.h"

using namespace ctk;

namespace {

// What the default build holds: CMAKE_CUDA_ARCHITECTURES "80-real 86-real 89-real 90".
CudaArchitectures default_archs() {
    return {{80, 86, 89, 90}, {90}};
}

CompatibilityVerdict check(int driver, int runtime, CudaArchitectures archs, int major, int minor) {
    return check_gpu_compatibility({driver, runtime, std::move(archs), major, minor});
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST(CudaArchitectures, ParsesCMakeList) {
    const CudaArchitectures a = parse_cuda_architectures("80-real 86-real 89-real 90");
    EXPECT_EQ(a.sass, (std::vector<int>{80, 86, 89, 90}));
    EXPECT_EQ(a.ptx, (std::vector<int>{90}));

    const CudaArchitectures b = parse_cuda_architectures("120-virtual;75;90-real;75-real ");
    EXPECT_EQ(b.sass, (std::vector<int>{75, 90}));
    EXPECT_EQ(b.ptx, (std::vector<int>{75, 120}));

    const CudaArchitectures none = parse_cuda_architectures("");
    EXPECT_TRUE(none.sass.empty());
    EXPECT_TRUE(none.ptx.empty());
}

TEST(CudaArchitectures, RejectsWhatItCannotCheck) {
    for (const char* list : {"native", "all-major", "90a", "90a-real", "sm_90", "-real", "86-fake", "80 all"})
        EXPECT_THROW(parse_cuda_architectures(list), ValueError) << list;
}

TEST(GpuCompatibility, NoDriver) {
    const CompatibilityVerdict v = check(0, 13000, default_archs(), 9, 0);
    EXPECT_EQ(v.kind, GpuCompatibility::no_driver);
    EXPECT_FALSE(v.runnable());
    EXPECT_EQ(v.fix, "install an NVIDIA driver of release 580 or newer (CUDA 13.0)");
}

TEST(GpuCompatibility, DriverOlderThanRuntimeMajor) {
    const CompatibilityVerdict v = check(12080, 13000, default_archs(), 8, 6);
    EXPECT_EQ(v.kind, GpuCompatibility::driver_too_old);
    EXPECT_TRUE(has(v.reason, "the driver supports CUDA 12.8")) << v.reason;
    EXPECT_EQ(v.fix, "install an NVIDIA driver of release 580 or newer (CUDA 13.0)");
    // A CUDA 12 build: release 525 is the first of that major.
    EXPECT_EQ(check(11080, 12040, default_archs(), 8, 0).fix,
              "install an NVIDIA driver of release 525 or newer (CUDA 12.0)");
    // A major not in the table names the CUDA version.
    EXPECT_EQ(check(13000, 14000, default_archs(), 9, 0).fix,
              "install an NVIDIA driver that supports CUDA 14.0 or newer");
}

TEST(GpuCompatibility, NativeCubinRunsOnSameMajorWithMinorAtLeast) {
    // sm_80 runs on 8.6 and 8.9; the closest cubin is chosen.
    EXPECT_EQ(check(13000, 13000, {{80}, {}}, 8, 6).kind, GpuCompatibility::runs_native);
    EXPECT_EQ(check(13000, 13000, {{80}, {}}, 8, 9).kind, GpuCompatibility::runs_native);
    EXPECT_TRUE(has(check(13000, 13000, default_archs(), 8, 9).reason, "sm_89 machine code"))
        << "closest cubin";
    EXPECT_TRUE(has(check(13000, 13000, default_archs(), 8, 7).reason, "sm_86 machine code"));
    const CompatibilityVerdict h100 = check(13000, 13000, default_archs(), 9, 0);
    EXPECT_EQ(h100.kind, GpuCompatibility::runs_native);
    EXPECT_TRUE(h100.runnable());
    EXPECT_TRUE(h100.fix.empty());
    EXPECT_TRUE(has(h100.reason, "sm_90 machine code fits compute capability 9.0")) << h100.reason;
    // A newer driver of the same major, or a newer major, is fine (backward compatibility).
    EXPECT_EQ(check(13020, 13000, default_archs(), 9, 0).kind, GpuCompatibility::runs_native);
    EXPECT_EQ(check(14000, 13000, default_archs(), 9, 0).kind, GpuCompatibility::runs_native);
}

TEST(GpuCompatibility, CubinDoesNotRunOnLowerMinorOrOtherMajor) {
    // sm_86 does not run on 8.0; sm_80 does not run on 9.0; sm_90 only on 9.x.
    EXPECT_EQ(check(13000, 13000, {{86}, {}}, 8, 0).kind, GpuCompatibility::no_compatible_code);
    EXPECT_EQ(check(13000, 13000, {{80, 86, 89}, {}}, 9, 0).kind, GpuCompatibility::no_compatible_code);

    const CompatibilityVerdict v = check(13000, 13000, {{90}, {}}, 8, 6);
    EXPECT_EQ(v.kind, GpuCompatibility::no_compatible_code);
    EXPECT_TRUE(has(v.reason, "no machine code for sm_86")) << v.reason;
    EXPECT_EQ(v.fix, "rebuild ctk with -DCMAKE_CUDA_ARCHITECTURES=\"86-real;90-real\"");
    // compute_90 PTX cannot be JIT-compiled down to 8.6 either.
    const CompatibilityVerdict with_ptx = check(13000, 13000, {{90}, {90}}, 8, 6);
    EXPECT_EQ(with_ptx.kind, GpuCompatibility::no_compatible_code);
    EXPECT_EQ(with_ptx.fix, "rebuild ctk with -DCMAKE_CUDA_ARCHITECTURES=\"86-real;90\"");
}

TEST(GpuCompatibility, NewerGpuRunsThePtxThroughTheJit) {
    for (int major : {10, 12}) {
        const CompatibilityVerdict v = check(13000, 13000, default_archs(), major, 0);
        EXPECT_EQ(v.kind, GpuCompatibility::runs_via_ptx_jit) << major;
        EXPECT_TRUE(v.runnable());
        EXPECT_TRUE(has(v.reason, "compute_90 PTX")) << v.reason;
        EXPECT_EQ(v.fix, "rebuild ctk with -DCMAKE_CUDA_ARCHITECTURES=\"80-real;86-real;89-real;90;" +
                             std::to_string(major * 10) + "-real\" to skip the JIT");
    }
    // The newest PTX not above the device is chosen.
    EXPECT_TRUE(has(check(13000, 13000, {{}, {75, 80, 100}}, 8, 6).reason, "compute_80 PTX"));
}

TEST(GpuCompatibility, PtxFromANewerToolkitThanTheDriver) {
    // Built with CUDA 13.1, driver supports 13.0: minor version compatibility covers the cubins ...
    const CompatibilityVerdict native = check(13000, 13010, default_archs(), 8, 6);
    EXPECT_EQ(native.kind, GpuCompatibility::runs_native);
    EXPECT_TRUE(has(native.reason, "minor version compatibility")) << native.reason;
    // ... but not the PTX: the driver's JIT cannot read PTX newer than its CUDA.
    const CompatibilityVerdict v = check(13000, 13010, default_archs(), 12, 0);
    EXPECT_EQ(v.kind, GpuCompatibility::ptx_needs_newer_driver);
    EXPECT_FALSE(v.runnable());
    EXPECT_TRUE(has(v.reason, "CUDA 13.1")) << v.reason;
    EXPECT_EQ(v.fix,
              "install an NVIDIA driver that supports CUDA 13.1 or newer, or rebuild ctk with "
              "-DCMAKE_CUDA_ARCHITECTURES=\"80-real;86-real;89-real;90;120-real\"");
}

TEST(GpuCompatibility, GpuOlderThanTheToolkitSupports) {
    const CompatibilityVerdict v = check(13000, 13000, default_archs(), 7, 0);
    EXPECT_EQ(v.kind, GpuCompatibility::no_compatible_code);
    EXPECT_EQ(
        v.fix,
        "this GPU (compute capability 7.0) is older than CUDA 13 supports (sm_75 minimum); use the CPU");
    // Upgrading the driver would not help, so the old GPU is the verdict even under an old driver.
    EXPECT_EQ(
        check(12080, 13000, default_archs(), 6, 1).fix,
        "this GPU (compute capability 6.1) is older than CUDA 13 supports (sm_75 minimum); use the CPU");
    // Turing is CUDA 13's floor: no cubin here, no PTX at or below 7.5, so a rebuild fixes it.
    const CompatibilityVerdict turing = check(13000, 13000, default_archs(), 7, 5);
    EXPECT_EQ(turing.kind, GpuCompatibility::no_compatible_code);
    EXPECT_EQ(turing.fix,
              "rebuild ctk with -DCMAKE_CUDA_ARCHITECTURES=\"75-real;80-real;86-real;89-real;90\"");
}

TEST(GpuCompatibility, NamesEveryKind) {
    EXPECT_STREQ(to_string(GpuCompatibility::runs_native), "runs natively");
    EXPECT_STREQ(to_string(GpuCompatibility::runs_via_ptx_jit), "runs via PTX JIT");
    EXPECT_STREQ(to_string(GpuCompatibility::driver_too_old), "driver too old");
    EXPECT_STREQ(to_string(GpuCompatibility::ptx_needs_newer_driver), "PTX needs a newer driver");
    EXPECT_STREQ(to_string(GpuCompatibility::no_compatible_code), "no compatible code");
    EXPECT_STREQ(to_string(GpuCompatibility::no_driver), "no driver");
}

namespace {

BuildInfo fake_gpu_build() {
    BuildInfo b;
    b.version = "0.1.0";
    b.git_sha = "5ed1fc7abcde";
    b.build_type = "Release";
    b.build_target = "GPU";
    b.math_lib = "OpenBLAS (fake) + oneDNN";
    b.built_time = "Nov 23 2025 02:48:00";
    b.cuda_version = "13.0.88";
    b.cudnn_version = "9.19.0";
    b.nccl_version = "2.28.9";
    b.cuda_architectures = "80-real 86-real 89-real 90";
    return b;
}

cuda::DeviceProperties fake_device(int index, std::string name, int major, int minor, int sms,
                                   int64_t total_mb, int64_t free_mb) {
    cuda::DeviceProperties d;
    d.index = index;
    d.name = std::move(name);
    d.major = major;
    d.minor = minor;
    d.multiprocessors = sms;
    d.total_memory = total_mb << 20;
    d.free_memory = free_mb << 20;
    return d;
}

const std::string kDashes = "-------------------------------------------------------------------\n";

}  // namespace

TEST(InfoReport, BannerAndGpuBlockInCntkForm) {
    CudaSystem system;
    system.driver_version = 13000;
    system.runtime_version = 13000;
    system.devices.push_back(fake_device(0, "NVIDIA H100 80GB HBM3", 9, 0, 132, 81079, 80562));
    system.devices.push_back(fake_device(1, "Tesla V100-SXM2-16GB", 7, 0, 80, 16160, 15800));
    const std::string report = format_info_report(fake_gpu_build(), system);

    const std::string banner = kDashes +
                               "Build info: \n\n"
                               "\t\tBuilt time: Nov 23 2025 02:48:00\n"
                               "\t\tBuild type: Release\n"
                               "\t\tBuild target: GPU\n"
                               "\t\tMath lib: OpenBLAS (fake) + oneDNN\n"
                               "\t\tCUDA version: 13.0.88\n"
                               "\t\tCUDNN version: 9.19.0\n"
                               "\t\tNCCL version: 2.28.9\n"
                               "\t\tBuild SHA1: 5ed1fc7abcde\n" +
                               kDashes;
    EXPECT_EQ(report.substr(0, banner.size()), banner) << report;
    EXPECT_TRUE(has(report, "ctk version: 0.1.0\n"));
    EXPECT_TRUE(
        has(report,
            "CUDA architectures: 80-real 86-real 89-real 90 (machine code: sm_80 sm_86 sm_89 sm_90; PTX: "
            "compute_90)\n"))
        << report;
    EXPECT_TRUE(has(report, "CUDA driver: supports CUDA 13.0\nCUDA runtime: 13.0\n")) << report;
    // 132 SMs x 128 cores per SM.
    EXPECT_TRUE(has(report, kDashes +
                                "GPU info:\n\n"
                                "\t\tDevice[0]: cores = 16896; computeCapability = 9.0; type = \"NVIDIA H100 "
                                "80GB HBM3\"; total memory = 81079 MB; free memory = 80562 MB\n"
                                "\t\tDevice[0] verdict: runs natively: sm_90 machine code fits compute "
                                "capability 9.0\n"))
        << report;
    // 80 SMs x 64 cores per SM; too old for CUDA 13, with the fix.
    EXPECT_TRUE(has(report,
                    "\t\tDevice[1]: cores = 5120; computeCapability = 7.0; type = \"Tesla V100-SXM2-16GB\"; "
                    "total memory = 16160 MB; free memory = 15800 MB\n"))
        << report;
    EXPECT_TRUE(has(report, "\t\tDevice[1] verdict: no compatible code: "));
    EXPECT_TRUE(has(report,
                    "\t\tDevice[1] fix: this GPU (compute capability 7.0) is older than CUDA 13 supports "
                    "(sm_75 minimum); use the CPU\n"));
    EXPECT_EQ(report.substr(report.size() - kDashes.size()), kDashes);
    EXPECT_FALSE(has(report, "No GPUs found"));
    EXPECT_FALSE(has(report, "Last modified date"));
}

TEST(InfoReport, PtxJitDeviceGetsATip) {
    CudaSystem system{13000, 13000, {fake_device(0, "NVIDIA B200", 10, 0, 148, 183359, 182000)}, "", {}};
    const std::string report = format_info_report(fake_gpu_build(), system);
    EXPECT_TRUE(has(report, "\t\tDevice[0]: cores = 18944; computeCapability = 10.0;")) << report;
    EXPECT_TRUE(has(report, "\t\tDevice[0] verdict: runs via PTX JIT: ")) << report;
    EXPECT_TRUE(has(report, "\t\tDevice[0] tip: rebuild ctk with")) << report;
}

TEST(InfoReport, NamesTheGpuLibrariesAndWhetherTheyLoad) {
    CudaSystem system;
    system.runtime_version = 13000;
    system.unavailable_reason = "no CUDA driver is installed";
    system.gpu_libraries = {"cuBLASLt: libcublasLt.so.13 13.1.0",
                            "cuDNN: libcudnn.so.9 not found (libcudnn.so.9: cannot open shared object file)"};
    const std::string report = format_info_report(fake_gpu_build(), system);
    EXPECT_TRUE(
        has(report, "CUDA runtime: 13.0\ncuBLASLt: libcublasLt.so.13 13.1.0\ncuDNN: libcudnn.so.9 not found"))
        << report;
}

TEST(InfoReport, TheMachinesGpuLibrariesAreProbedInAGpuBuild) {
    const CudaSystem system = query_cuda_system();
    if (build_info().build_target != "GPU") {
        EXPECT_TRUE(system.gpu_libraries.empty());
        return;
    }
    ASSERT_GE(system.gpu_libraries.size(), 2u);
    EXPECT_EQ(system.gpu_libraries[0].rfind("cuBLASLt: libcublasLt.so.", 0), 0u) << system.gpu_libraries[0];
    EXPECT_EQ(system.gpu_libraries[1].rfind("cuDNN: libcudnn.so.", 0), 0u) << system.gpu_libraries[1];
}

TEST(InfoReport, NoGpuNamesTheReasonAndTheFix) {
    CudaSystem system;
    system.driver_version = 0;
    system.runtime_version = 13000;
    system.unavailable_reason = "no CUDA driver is installed";
    const std::string report = format_info_report(fake_gpu_build(), system);
    EXPECT_TRUE(has(report, "CUDA driver: none\n")) << report;
    EXPECT_TRUE(has(report,
                    "No GPUs found\n"
                    "\t\treason: no CUDA driver is installed\n"
                    "\t\tfix: install an NVIDIA driver of release 580 or newer (CUDA 13.0)\n"))
        << report;
    EXPECT_FALSE(has(report, "GPU info:"));

    // An old driver often shows no devices at all; the report still says what to install.
    system.driver_version = 12080;
    system.unavailable_reason = "the CUDA driver is older than the CUDA runtime";
    EXPECT_TRUE(has(format_info_report(fake_gpu_build(), system),
                    "\t\tfix: install an NVIDIA driver of release 580 or newer (CUDA 13.0)\n"));

    // A good driver without a GPU needs no fix.
    system.driver_version = 13000;
    system.unavailable_reason = "CUDA driver found but no GPU";
    EXPECT_FALSE(has(format_info_report(fake_gpu_build(), system), "fix:"));
}

TEST(InfoReport, CpuBuildHasNoCudaLines) {
    BuildInfo build = fake_gpu_build();
    build.build_target = "CPU";
    build.cuda_version = build.cudnn_version = build.nccl_version = build.cuda_architectures = "";
    CudaSystem system;
    system.unavailable_reason = "this build of ctk has no CUDA backend";
    const std::string report = format_info_report(build, system);
    EXPECT_TRUE(
        has(report, "\t\tBuild target: CPU\n\t\tMath lib: OpenBLAS (fake) + oneDNN\n\t\tBuild SHA1: "))
        << report;
    EXPECT_FALSE(has(report, "CUDA version:"));
    EXPECT_FALSE(has(report, "CUDNN version:"));
    EXPECT_FALSE(has(report, "NCCL version:"));
    EXPECT_FALSE(has(report, "MPI"));
    EXPECT_TRUE(has(report, "CUDA: not built in\n"));
    EXPECT_TRUE(has(report, "No GPUs found\n\t\treason: this build of ctk has no CUDA backend\n")) << report;
    EXPECT_FALSE(has(report, "fix:"));
}

TEST(InfoReport, UncheckableArchitecturesAreSaidSo) {
    BuildInfo build = fake_gpu_build();
    build.cuda_architectures = "native";
    CudaSystem system{
        13000, 13000, {fake_device(0, "NVIDIA A100-SXM4-40GB", 8, 0, 108, 40326, 40000)}, "", {}};
    const std::string report = format_info_report(build, system);
    EXPECT_TRUE(has(report, "CUDA architectures: native (CUDA architecture 'native' is not of the form"))
        << report;
    EXPECT_TRUE(has(report, "\t\tDevice[0]: cores = 6912; computeCapability = 8.0;")) << report;
    EXPECT_TRUE(has(report, "\t\tDevice[0] verdict: not checked")) << report;
}

TEST(InfoReport, RealSystemNeverThrows) {
    const std::string report = info_report();
    EXPECT_EQ(report.substr(0, kDashes.size() + 13), kDashes + "Build info: \n");
    EXPECT_TRUE(has(report, "GPU info:") || has(report, "No GPUs found")) << report;
}

TEST(InfoReport, MpiLinesFollowTheShaInBuildsWithMpi) {
    BuildInfo build = fake_gpu_build();
    build.mpi_distribution = "Open MPI";
    build.mpi_version = "4.1.4";
    const std::string banner = format_build_banner(build);
    EXPECT_TRUE(has(banner,
                    "\t\tBuild SHA1: 5ed1fc7abcde\n"
                    "\t\tMPI distribution: Open MPI\n"
                    "\t\tMPI version: 4.1.4\n" +
                        kDashes))
        << banner;
}

TEST(InfoReport, VerdictsPerDeviceAndForTheDriver) {
    const BuildInfo build = fake_gpu_build();
    CudaSystem system{13000, 13000, {fake_device(0, "NVIDIA A10", 8, 6, 72, 22731, 22000)}, "", {}};
    const auto verdict = device_verdict(build, system, system.devices[0]);
    ASSERT_TRUE(verdict.has_value());
    EXPECT_EQ(verdict->kind, GpuCompatibility::runs_native);
    EXPECT_FALSE(driver_verdict(build, system).has_value());

    system.driver_version = 12080;
    ASSERT_TRUE(driver_verdict(build, system).has_value());
    EXPECT_EQ(driver_verdict(build, system)->kind, GpuCompatibility::driver_too_old);
    BuildInfo cpu = build;
    cpu.build_target = "CPU";
    EXPECT_FALSE(driver_verdict(cpu, system).has_value());  // a CPU build needs no driver

    BuildInfo native = build;
    native.cuda_architectures = "native";
    EXPECT_FALSE(device_verdict(native, system, system.devices[0]).has_value());
}
