// The CPU doctor and the GEMM route on a table of CPU/library combinations (no particular machine
// needed), then the facts this machine reports.
#include <gtest/gtest.h>

#include <string>

#include "ctk/core/error.h"
#include "ctk/kernels/cpu_info.h"

using namespace ctk;

namespace {

const char* kDynamic =
    "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY USE_OPENMP Haswell MAX_THREADS=64";

CpuIsa avx512_cpu(bool bf16 = true) {
    CpuIsa cpu;
    cpu.vendor = "AuthenticAMD";
    cpu.model_name = "AMD EPYC";
    cpu.family = 26;
    cpu.model = 2;
    cpu.avx = cpu.avx2 = cpu.avx512 = true;
    cpu.avx512_bf16 = bf16;
    return cpu;
}

CpuIsa avx2_cpu() {
    CpuIsa cpu;
    cpu.vendor = "GenuineIntel";
    cpu.model_name = "Intel(R) Core(TM) i7-4770";
    cpu.family = 6;
    cpu.model = 60;
    cpu.avx = cpu.avx2 = true;
    return cpu;
}

MathLibraries libraries(const std::string& core, const std::string& onednn_isa,
                        const char* config = kDynamic) {
    return {config, core, "", "2.6.3", onednn_isa};
}

bool has(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST(CpuInfo, IsaLevelsOfCoresAndOnednn) {
    EXPECT_EQ(openblas_core_level("Prescott"), IsaLevel::sse);
    EXPECT_EQ(openblas_core_level("Sandybridge"), IsaLevel::avx);
    EXPECT_EQ(openblas_core_level("Haswell"), IsaLevel::avx2);
    EXPECT_EQ(openblas_core_level("zen"), IsaLevel::avx2);
    EXPECT_EQ(openblas_core_level("SkylakeX"), IsaLevel::avx512);
    EXPECT_EQ(openblas_core_level("Cooperlake"), IsaLevel::avx512);
    EXPECT_EQ(openblas_core_level("Zen5"), IsaLevel::unknown);
    EXPECT_EQ(onednn_isa_level("avx512_core_amx"), IsaLevel::avx512);
    EXPECT_EQ(onednn_isa_level("avx2_vnni"), IsaLevel::avx2);
    EXPECT_EQ(onednn_isa_level("avx"), IsaLevel::avx);
    EXPECT_EQ(onednn_isa_level("sse41"), IsaLevel::sse);
    EXPECT_EQ(isa_level(avx512_cpu()), IsaLevel::avx512);
    EXPECT_EQ(isa_level(avx2_cpu()), IsaLevel::avx2);
    EXPECT_EQ(isa_level(CpuIsa{}), IsaLevel::sse);
}

TEST(CpuInfo, FallbackCoreRoutesToOnednnAndNamesTheFix) {
    // AMD Zen 5: OpenBLAS 0.3.21 does not know it and runs its Haswell (AVX2) kernels.
    const GemmChoice c =
        choose_cpu_gemm(avx512_cpu(), libraries("Haswell", "avx512_core_bf16"), CpuGemm::automatic);
    EXPECT_EQ(c.library, CpuGemm::onednn);
    EXPECT_EQ(c.min_work, kOnednnGemmMinWork);
    EXPECT_TRUE(has(c.reason, "Haswell")) << c.reason;
    const CpuVerdict v =
        check_cpu_gemm(avx512_cpu(), libraries("Haswell", "avx512_core_bf16"), CpuGemm::automatic);
    EXPECT_FALSE(v.below_machine);
    EXPECT_TRUE(has(v.verdict, "through oneDNN")) << v.verdict;
    EXPECT_TRUE(has(v.fix, "OPENBLAS_CORETYPE=SkylakeX")) << v.fix;

    // Sapphire Rapids: OpenBLAS falls back to its oldest SSE kernels.
    CpuIsa spr = avx512_cpu();
    spr.vendor = "GenuineIntel";
    spr.avx512_fp16 = spr.amx_bf16 = true;
    EXPECT_EQ(choose_cpu_gemm(spr, libraries("Prescott", "avx512_core_amx"), CpuGemm::automatic).library,
              CpuGemm::onednn);
    EXPECT_TRUE(has(check_cpu_gemm(spr, libraries("Prescott", "avx512_core_amx"), CpuGemm::automatic).fix,
                    "OPENBLAS_CORETYPE=SkylakeX"));
    // On an AVX2 machine with SSE kernels the right core is Haswell.
    EXPECT_TRUE(
        has(check_cpu_gemm(avx2_cpu(), libraries("Prescott", "avx2"), CpuGemm::automatic).fix, "=Haswell"));
}

TEST(CpuInfo, CoreForcedByTheEnvironmentIsNamed) {
    // OpenBLAS would pick its AVX-512 kernels here, but OPENBLAS_CORETYPE=Haswell holds it back.
    MathLibraries libs = libraries("Haswell", "avx512_core_bf16");
    libs.openblas_coretype = "Haswell";
    EXPECT_EQ(choose_cpu_gemm(avx512_cpu(), libs, CpuGemm::automatic).library, CpuGemm::onednn);
    const CpuVerdict v = check_cpu_gemm(avx512_cpu(), libs, CpuGemm::automatic);
    EXPECT_TRUE(has(v.fix, "OPENBLAS_CORETYPE=Haswell in the environment")) << v.fix;
    EXPECT_TRUE(has(v.fix, "set it to SkylakeX")) << v.fix;
    EXPECT_TRUE(
        has(format_cpu_report(avx512_cpu(), libs, CpuGemm::automatic, 2), "chosen by OPENBLAS_CORETYPE"));
}

TEST(CpuInfo, BothFitOnAvx512SendsLargeProductsToOnednn) {
    for (const auto& [core, isa] :
         {std::pair{"SkylakeX", "avx512_core"}, std::pair{"Cooperlake", "avx512_core_bf16"}}) {
        const GemmChoice c = choose_cpu_gemm(avx512_cpu(), libraries(core, isa), CpuGemm::automatic);
        EXPECT_EQ(c.library, CpuGemm::onednn) << core;
        EXPECT_EQ(c.min_work, kOnednnGemmMinWorkBothFit) << core;
        EXPECT_TRUE(has(c.reason, "both fit")) << c.reason;
        const CpuVerdict v = check_cpu_gemm(avx512_cpu(), libraries(core, isa), CpuGemm::automatic);
        EXPECT_FALSE(v.below_machine) << core;
        EXPECT_TRUE(v.fix.empty()) << v.fix;
    }
    // oneDNN held below AVX-512 (ONEDNN_MAX_CPU_ISA): OpenBLAS's AVX-512 kernels keep everything.
    EXPECT_EQ(choose_cpu_gemm(avx512_cpu(), libraries("SkylakeX", "avx2"), CpuGemm::automatic).library,
              CpuGemm::openblas);
}

TEST(CpuInfo, KnownCoreOnAvx2SharesAsOnAvx512) {
    // Both fit an AVX2 CPU: oneDNN from 2^20, OpenBLAS below (bench/gemm_shapes.py at the AVX2 level).
    for (const auto& [cpu, core, isa] :
         {std::tuple{avx2_cpu(), "Haswell", "avx2"}, std::tuple{avx2_cpu(), "Zen", "avx2"}}) {
        const GemmChoice c = choose_cpu_gemm(cpu, libraries(core, isa), CpuGemm::automatic);
        EXPECT_EQ(c.library, CpuGemm::onednn) << core;
        EXPECT_EQ(c.min_work, kOnednnGemmMinWorkBothFit) << core;
        EXPECT_TRUE(has(c.reason, "both fit")) << c.reason;
        const CpuVerdict v = check_cpu_gemm(cpu, libraries(core, isa), CpuGemm::automatic);
        EXPECT_FALSE(v.below_machine) << core;
        EXPECT_TRUE(v.fix.empty()) << v.fix;
    }
    // oneDNN held below AVX2: OpenBLAS keeps everything.
    EXPECT_EQ(choose_cpu_gemm(avx2_cpu(), libraries("Haswell", "avx"), CpuGemm::automatic).library,
              CpuGemm::openblas);
}

TEST(CpuInfo, UnknownCoreIsTrusted) {
    const GemmChoice c =
        choose_cpu_gemm(avx512_cpu(), libraries("Zen5", "avx512_core_bf16"), CpuGemm::automatic);
    EXPECT_EQ(c.library, CpuGemm::openblas);
    EXPECT_TRUE(has(c.reason, "newer than ctk's table")) << c.reason;
    EXPECT_TRUE(
        check_cpu_gemm(avx512_cpu(), libraries("Zen5", "avx512_core_bf16"), CpuGemm::automatic).fix.empty());
}

TEST(CpuInfo, ForcedRouteIsObeyedAndJudged) {
    const MathLibraries libs = libraries("Haswell", "avx512_core_bf16");
    EXPECT_EQ(choose_cpu_gemm(avx512_cpu(), libs, CpuGemm::openblas).library, CpuGemm::openblas);
    const CpuVerdict v = check_cpu_gemm(avx512_cpu(), libs, CpuGemm::openblas);
    EXPECT_TRUE(v.below_machine);
    EXPECT_TRUE(has(v.fix, "unset CTK_GEMM")) << v.fix;
    EXPECT_EQ(choose_cpu_gemm(avx2_cpu(), libraries("Haswell", "avx2"), CpuGemm::onednn).library,
              CpuGemm::onednn);
    EXPECT_FALSE(check_cpu_gemm(avx2_cpu(), libraries("Haswell", "avx2"), CpuGemm::onednn).below_machine);
}

TEST(CpuInfo, NeitherLibraryFitsTheMachine) {
    // oneDNN held to AVX2 (ONEDNN_MAX_CPU_ISA) and OpenBLAS on its Haswell kernels: OpenBLAS stays, and the
    // fix is OpenBLAS's core.
    const MathLibraries libs = libraries("Haswell", "avx2");
    EXPECT_EQ(choose_cpu_gemm(avx512_cpu(), libs, CpuGemm::automatic).library, CpuGemm::openblas);
    const CpuVerdict v = check_cpu_gemm(avx512_cpu(), libs, CpuGemm::automatic);
    EXPECT_TRUE(v.below_machine);
    EXPECT_TRUE(has(v.fix, "OPENBLAS_CORETYPE=SkylakeX")) << v.fix;
    // Forced oneDNN below the machine: its own limit is named.
    EXPECT_TRUE(has(check_cpu_gemm(avx512_cpu(), libs, CpuGemm::onednn).fix, "ONEDNN_MAX_CPU_ISA"));
    // An OpenBLAS without DYNAMIC_ARCH cannot be told its core.
    const MathLibraries fixed = libraries("Haswell", "avx2", "OpenBLAS 0.3.21 NO_LAPACKE USE_OPENMP HASWELL");
    ASSERT_TRUE(fixed.openblas_coretype.empty());
    EXPECT_TRUE(
        has(check_cpu_gemm(avx512_cpu(), fixed, CpuGemm::automatic).fix, "install an OpenBLAS built"));
}

TEST(CpuInfo, ChoiceIsAFunctionOfTheFacts) {
    const MathLibraries libs = libraries("Haswell", "avx512_core_bf16");
    const GemmChoice a = choose_cpu_gemm(avx512_cpu(), libs, CpuGemm::automatic);
    for (int i = 0; i < 3; ++i) {
        const GemmChoice b = choose_cpu_gemm(avx512_cpu(), libs, CpuGemm::automatic);
        EXPECT_EQ(a.library, b.library);
        EXPECT_EQ(a.reason, b.reason);
    }
}

TEST(CpuInfo, ParsesTheSetting) {
    EXPECT_EQ(parse_cpu_gemm("openblas", "CTK_GEMM"), CpuGemm::openblas);
    EXPECT_EQ(parse_cpu_gemm("oneDNN", "CTK_GEMM"), CpuGemm::onednn);
    EXPECT_EQ(parse_cpu_gemm("auto", "CTK_GEMM"), CpuGemm::automatic);
    try {
        parse_cpu_gemm("mkl", "CTK_GEMM");
        FAIL() << "no error";
    } catch (const ValueError& e) {
        EXPECT_TRUE(has(e.what(), "CTK_GEMM")) << e.what();
        EXPECT_TRUE(has(e.what(), "'mkl'")) << e.what();
    }
}

TEST(CpuInfo, ReportNamesEveryFact) {
    const std::string r =
        format_cpu_report(avx512_cpu(), libraries("Haswell", "avx512_core_bf16"), CpuGemm::automatic, 2);
    for (const char* part : {"CPU info:", "AMD EPYC (AuthenticAMD, family 26, model 2); 2 threads",
                             "ISA: AVX AVX2 FMA AVX-512 AVX512_BF16 (level AVX-512)",
                             "kernels: Haswell (AVX2)", "oneDNN: 2.6.3; code for: avx512_core_bf16",
                             "f32 GEMM: oneDNN from 32768 multiply-adds, OpenBLAS below (auto)",
                             "bf16: native (AVX512_BF16)", "verdict: ", "fix: start programs"})
        EXPECT_TRUE(has(r, part)) << part << "\n" << r;
    const std::string ok = format_cpu_report(avx2_cpu(), libraries("Haswell", "avx2"), CpuGemm::automatic, 1);
    EXPECT_TRUE(has(ok, "f32 GEMM: oneDNN from 1048576 multiply-adds, OpenBLAS below (auto)")) << ok;
    EXPECT_TRUE(has(ok, "bf16: emulated")) << ok;
    EXPECT_FALSE(has(ok, "fix:")) << ok;
}

TEST(CpuInfo, ThisMachine) {
    const CpuIsa cpu = query_cpu_isa();
    EXPECT_FALSE(cpu.vendor.empty());
    EXPECT_EQ(cpu.avx2, __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") != 0);
    EXPECT_EQ(cpu.avx512, __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                              __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"));
    const MathLibraries libs = query_math_libraries();
    EXPECT_TRUE(has(libs.openblas_config, "OpenBLAS")) << libs.openblas_config;
    EXPECT_NE(openblas_core_level(libs.openblas_core), IsaLevel::unknown) << libs.openblas_core;
    EXPECT_NE(onednn_isa_level(libs.onednn_isa), IsaLevel::unknown) << libs.onednn_isa;
    EXPECT_TRUE(has(cpu_report(), "f32 GEMM: ")) << cpu_report();
}
