// The CPU doctor and the f32 GEMM route. Debian's OpenBLAS picks its kernels from its own CPU table, and
// on processors newer than the table it falls back to older kernels (AVX2 "Haswell" on AMD Zen 5, SSE3
// "Prescott" on Sapphire Rapids), running matrix products at a fraction of the machine. oneDNN generates
// code for the ISA it finds. So ctk reads what the CPU can do and what each library will use, and sends
// f32 products to the library that uses the whole ISA. The decision and the report are pure functions
// of those facts, so every combination is testable on any machine; only the query_* functions look at
// this one (docs/ctk_info.md).
#pragma once

#include <string>
#include <string_view>

namespace ctk {

// What the processor runs, from cpuid, with the OS check (xgetbv) for the wider registers.
struct CpuIsa {
    std::string vendor;      // "GenuineIntel", "AuthenticAMD"
    std::string model_name;  // the brand string
    int family = 0;          // display family and model, as /proc/cpuinfo prints them
    int model = 0;
    bool avx = false;
    bool avx2 = false;  // with FMA
    bool avx512 =
        false;  // F, DQ, BW and VL: the set OpenBLAS's SkylakeX kernels and oneDNN's avx512_core use
    bool avx512_bf16 = false;
    bool avx512_fp16 = false;
    bool amx_bf16 = false;
};

// Vector width classes, ordered: a library whose kernels are of a lower level than the CPU runs below it.
enum class IsaLevel { unknown, sse, avx, avx2, avx512 };
const char* to_string(IsaLevel level);  // "SSE", "AVX", "AVX2", "AVX-512", "unknown"
IsaLevel isa_level(const CpuIsa& cpu);

// What the math libraries linked into this process will use.
struct MathLibraries {
    std::string openblas_config;    // openblas_get_config(): version, build options, core
    std::string openblas_core;      // openblas_get_corename(): "Haswell", "SkylakeX", "Prescott", ...
    std::string openblas_coretype;  // OPENBLAS_CORETYPE in the environment, which chose the core ("" unset)
    std::string onednn_version;     // "2.6.3"
    std::string onednn_isa;         // the ISA oneDNN generates code for: "avx512_core_bf16", "avx2", ...
};

// The vector level of an OpenBLAS core's kernels (OpenBLAS's DYNAMIC_ARCH table for x86-64); unknown for
// a core name missing from the table (a newer OpenBLAS: trusted, see choose_cpu_gemm).
IsaLevel openblas_core_level(std::string_view core);
// The level of a oneDNN ISA name ("avx512_core_amx" -> avx512).
IsaLevel onednn_isa_level(std::string_view isa);

// Which library computes f32 matrix products on the CPU. f64 always uses OpenBLAS (oneDNN has no f64
// GEMM); bf16 always uses oneDNN's matmul.
enum class CpuGemm { automatic, openblas, onednn };
const char* to_string(CpuGemm gemm);  // "auto", "openblas", "onednn"
// "openblas", "onednn", "auto" (case-insensitive); throws ValueError naming `origin` for anything else.
CpuGemm parse_cpu_gemm(std::string_view name, std::string_view origin);

// Products smaller than these many multiply-adds (m * n * k) stay on OpenBLAS on the oneDNN route, where
// oneDNN's per-call set-up costs more than it gains (measured, docs/ctk_info.md): 32^3 when OpenBLAS runs
// below the CPU, 2^20 when both libraries fit it (OpenBLAS's kernels win small products there).
constexpr long long kOnednnGemmMinWork = 32LL * 32 * 32;
constexpr long long kOnednnGemmMinWorkBothFit = 1LL << 20;

struct GemmChoice {
    CpuGemm library = CpuGemm::openblas;  // never automatic: the library of products of min_work or more
    long long min_work = 0;               // oneDNN route: smaller products use OpenBLAS
    std::string reason;                   // one line: why
};

// The route: a forced library when `requested` names one; otherwise, by the levels of the CPU and the
// libraries: oneDNN from 32^3 when OpenBLAS's kernels are below the CPU and oneDNN's are not; on
// AVX-512 and AVX2 CPUs where both fit, oneDNN from 2^20 (its sgemm measured 5-20 % faster on AVX-512,
// 2x at 32x1024x256, and ahead on most products at the AVX2 level too: docs/ctk_info.md); OpenBLAS
// otherwise, and for a core ctk's table does not know (a newer OpenBLAS).
// Deterministic: the same facts give the same route (no timing), so results never depend on load.
GemmChoice choose_cpu_gemm(const CpuIsa& cpu, const MathLibraries& libraries, CpuGemm requested);

// The doctor's verdict on the CPU's matrix products.
struct CpuVerdict {
    bool below_machine = false;  // f32 products run on kernels narrower than the CPU
    std::string verdict;         // one line
    std::string fix;             // one line; empty when nothing needs doing
};
CpuVerdict check_cpu_gemm(const CpuIsa& cpu, const MathLibraries& libraries, CpuGemm requested);

// CNTK-style block for `ctk info`: the CPU, its ISA, each library and its kernels, the GEMM route and
// why, the verdict and the fix.
std::string format_cpu_report(const CpuIsa& cpu, const MathLibraries& libraries, CpuGemm requested,
                              int threads);

// Whether CPU convolutions write channels-last activations (ctk/core/tensor.h), which the batch
// normalization, pooling and element-wise ops after them keep, so that no reorder runs between them. On by
// default; CTK_CHANNELS_LAST=0 (read once) or set_cpu_channels_last(false) keeps every activation row-major,
// as before (for comparisons: the results differ only by f32 rounding).
bool cpu_channels_last();
void set_cpu_channels_last(bool on);

// This machine and process.
CpuIsa query_cpu_isa();
MathLibraries query_math_libraries();
// The requested route: set_cpu_gemm's, else CTK_GEMM's (read once), else automatic.
CpuGemm cpu_gemm_setting();
void set_cpu_gemm(CpuGemm gemm);
// choose_cpu_gemm for this machine and the current setting (the facts are read once per process).
GemmChoice cpu_gemm_choice();
// format_cpu_report for this machine.
std::string cpu_report();

}  // namespace ctk
