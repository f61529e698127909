// The CPU doctor and the f32 GEMM route (ctk/kernels/cpu_info.h). The tables here are sourced in
// docs/ctk_info.md; only the query_* functions read this machine.
#include "ctk/kernels/cpu_info.h"

#include <cblas.h>
#include <cpuid.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <dnnl.hpp>
#include <limits>
#include <mutex>
#include <optional>

#include "ctk/core/error.h"
#include "ctk/core/parallel.h"
#include "kernels/cpu/gemm.h"

extern "C" char* openblas_get_corename(void);

namespace ctk {
namespace {

using detail::concat;

constexpr std::string_view kDashes = "-------------------------------------------------------------------\n";

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
}

// The OpenBLAS core whose kernels fit a level, for OPENBLAS_CORETYPE: the oldest core of that level, so
// the CPU surely has every instruction its kernels use.
const char* openblas_core_for(IsaLevel level) {
    switch (level) {
        case IsaLevel::avx512:
            return "SkylakeX";
        case IsaLevel::avx2:
            return "Haswell";
        case IsaLevel::avx:
            return "Sandybridge";
        default:
            return nullptr;
    }
}

IsaLevel library_level(CpuGemm library, const MathLibraries& libraries) {
    return library == CpuGemm::onednn ? onednn_isa_level(libraries.onednn_isa)
                                      : openblas_core_level(libraries.openblas_core);
}

// "OpenBLAS's Haswell kernels (AVX2)".
std::string openblas_kernels(const MathLibraries& libraries) {
    return concat("OpenBLAS's ", libraries.openblas_core, " kernels (",
                  to_string(openblas_core_level(libraries.openblas_core)), ")");
}

}  // namespace

const char* to_string(IsaLevel level) {
    switch (level) {
        case IsaLevel::sse:
            return "SSE";
        case IsaLevel::avx:
            return "AVX";
        case IsaLevel::avx2:
            return "AVX2";
        case IsaLevel::avx512:
            return "AVX-512";
        default:
            return "unknown";
    }
}

IsaLevel isa_level(const CpuIsa& cpu) {
    if (cpu.avx512) return IsaLevel::avx512;
    if (cpu.avx2) return IsaLevel::avx2;
    if (cpu.avx) return IsaLevel::avx;
    return IsaLevel::sse;
}

IsaLevel openblas_core_level(std::string_view core) {
    // OpenBLAS 0.3.x, driver/others/dynamic.c (corename[]) and the kernels each core's KERNEL file uses.
    static constexpr std::pair<std::string_view, IsaLevel> kCores[] = {
        {"prescott", IsaLevel::sse},
        {"atom", IsaLevel::sse},
        {"core2", IsaLevel::sse},
        {"penryn", IsaLevel::sse},
        {"dunnington", IsaLevel::sse},
        {"nehalem", IsaLevel::sse},
        {"opteron_sse3", IsaLevel::sse},
        {"opteron", IsaLevel::sse},
        {"barcelona", IsaLevel::sse},
        {"nano", IsaLevel::sse},
        {"bobcat", IsaLevel::sse},
        {"sandybridge", IsaLevel::avx},
        {"bulldozer", IsaLevel::avx},
        {"piledriver", IsaLevel::avx},
        {"steamroller", IsaLevel::avx},
        {"excavator", IsaLevel::avx},
        {"haswell", IsaLevel::avx2},
        {"zen", IsaLevel::avx2},
        {"skylakex", IsaLevel::avx512},
        {"cooperlake", IsaLevel::avx512},
        {"sapphirerapids", IsaLevel::avx512},
    };
    const std::string name = lower(core);
    for (const auto& [n, level] : kCores)
        if (name == n) return level;
    return IsaLevel::unknown;
}

IsaLevel onednn_isa_level(std::string_view isa) {
    const std::string name = lower(isa);
    if (name.rfind("avx512", 0) == 0) return IsaLevel::avx512;
    if (name.rfind("avx2", 0) == 0) return IsaLevel::avx2;
    if (name == "avx") return IsaLevel::avx;
    if (name.rfind("sse", 0) == 0) return IsaLevel::sse;
    return IsaLevel::unknown;
}

const char* to_string(CpuGemm gemm) {
    switch (gemm) {
        case CpuGemm::openblas:
            return "openblas";
        case CpuGemm::onednn:
            return "onednn";
        default:
            return "auto";
    }
}

CpuGemm parse_cpu_gemm(std::string_view name, std::string_view origin) {
    const std::string n = lower(name);
    if (n == "openblas") return CpuGemm::openblas;
    if (n == "onednn") return CpuGemm::onednn;
    if (n == "auto" || n.empty()) return CpuGemm::automatic;
    CTK_THROW(ValueError, origin, ": '", name, "' is not a CPU GEMM library (openblas, onednn or auto)");
}

GemmChoice choose_cpu_gemm(const CpuIsa& cpu, const MathLibraries& libraries, CpuGemm requested) {
    if (requested == CpuGemm::openblas) return {CpuGemm::openblas, 0, "requested (CTK_GEMM or set_cpu_gemm)"};
    if (requested == CpuGemm::onednn)
        return {CpuGemm::onednn, kOnednnGemmMinWork, "requested (CTK_GEMM or set_cpu_gemm)"};
    const IsaLevel machine = isa_level(cpu);
    const IsaLevel blas = openblas_core_level(libraries.openblas_core);
    const IsaLevel dnn = onednn_isa_level(libraries.onednn_isa);
    if (blas == IsaLevel::unknown)
        return {CpuGemm::openblas, 0,
                concat("OpenBLAS's core '", libraries.openblas_core, "' is newer than ctk's table: trusted")};
    if (blas >= machine && machine >= IsaLevel::avx2 && dnn >= machine)
        return {CpuGemm::onednn, kOnednnGemmMinWorkBothFit,
                concat(openblas_kernels(libraries), " and oneDNN's ", libraries.onednn_isa,
                       " code both fit this CPU; oneDNN's sgemm is the faster from 2^20 multiply-adds")};
    if (blas >= machine)
        return {CpuGemm::openblas, 0,
                concat(openblas_kernels(libraries), " fit this ", to_string(machine), " CPU")};
    if (dnn > blas)
        return {CpuGemm::onednn, kOnednnGemmMinWork,
                concat(openblas_kernels(libraries), " are below this ", to_string(machine),
                       " CPU; oneDNN generates ", libraries.onednn_isa, " code")};
    return {CpuGemm::openblas, 0,
            concat(openblas_kernels(libraries), " are below this ", to_string(machine), " CPU, and oneDNN's ",
                   libraries.onednn_isa, " code is no wider")};
}

CpuVerdict check_cpu_gemm(const CpuIsa& cpu, const MathLibraries& libraries, CpuGemm requested) {
    const IsaLevel machine = isa_level(cpu);
    const GemmChoice choice = choose_cpu_gemm(cpu, libraries, requested);
    const IsaLevel used = library_level(choice.library, libraries);
    const IsaLevel blas = openblas_core_level(libraries.openblas_core);
    const bool dynamic_arch = libraries.openblas_config.find("DYNAMIC_ARCH") != std::string::npos;
    // What makes OpenBLAS itself fit the machine (NumPy and PyTorch load the same library).
    std::string blas_fix;
    if (blas != IsaLevel::unknown && blas < machine) {
        if (!libraries.openblas_coretype.empty())
            blas_fix =
                concat("OPENBLAS_CORETYPE=", libraries.openblas_coretype,
                       " in the environment holds OpenBLAS to those kernels: unset it (OpenBLAS then picks "
                       "its own) or set it to ",
                       openblas_core_for(machine) ? openblas_core_for(machine) : "this CPU's core");
        else if (dynamic_arch && openblas_core_for(machine))
            blas_fix =
                concat("start programs that use OpenBLAS with OPENBLAS_CORETYPE=", openblas_core_for(machine),
                       " (its ", to_string(machine), " kernels; this CPU has every instruction they use)");
        else
            blas_fix =
                concat("install an OpenBLAS built for this CPU (this one has no DYNAMIC_ARCH kernels for ",
                       to_string(machine), ")");
    }
    CpuVerdict v;
    if (used == IsaLevel::unknown || used >= machine) {
        v.verdict = concat("f32 matrix products run at this CPU's level (", to_string(machine), ") through ",
                           choice.library == CpuGemm::onednn ? "oneDNN" : "OpenBLAS");
        if (!blas_fix.empty()) {
            v.verdict += concat("; ", openblas_kernels(libraries),
                                " are below it (f64 and small products still use them)");
            v.fix = blas_fix;
        }
        return v;
    }
    v.below_machine = true;
    v.verdict = concat("f32 matrix products run below this ", to_string(machine), " CPU: ",
                       choice.library == CpuGemm::onednn ? concat("oneDNN's ", libraries.onednn_isa, " code")
                                                         : openblas_kernels(libraries));
    const GemmChoice automatic = choose_cpu_gemm(cpu, libraries, CpuGemm::automatic);
    if (requested != CpuGemm::automatic && library_level(automatic.library, libraries) > used)
        v.fix = concat("unset CTK_GEMM (or set_cpu_gemm('auto')): the automatic route uses ",
                       automatic.library == CpuGemm::onednn ? "oneDNN" : "OpenBLAS");
    else if (choice.library == CpuGemm::openblas && !blas_fix.empty())
        v.fix = blas_fix;
    else
        v.fix = concat("oneDNN is limited to ", libraries.onednn_isa,
                       ": unset ONEDNN_MAX_CPU_ISA, or install a oneDNN that knows this CPU");
    return v;
}

std::string format_cpu_report(const CpuIsa& cpu, const MathLibraries& libraries, CpuGemm requested,
                              int threads) {
    std::string features;
    auto add = [&](bool has, const char* name) {
        if (has) features += concat(features.empty() ? "" : " ", name);
    };
    add(cpu.avx, "AVX");
    add(cpu.avx2, "AVX2 FMA");
    add(cpu.avx512, "AVX-512");
    add(cpu.avx512_bf16, "AVX512_BF16");
    add(cpu.avx512_fp16, "AVX512_FP16");
    add(cpu.amx_bf16, "AMX_BF16");
    if (features.empty()) features = "SSE only";
    const GemmChoice choice = choose_cpu_gemm(cpu, libraries, requested);
    const CpuVerdict verdict = check_cpu_gemm(cpu, libraries, requested);
    std::string out;
    out += kDashes;
    out += "CPU info:\n\n";
    out += concat("\t\tCPU: ", cpu.model_name.empty() ? "unknown" : cpu.model_name, " (", cpu.vendor,
                  ", family ", cpu.family, ", model ", cpu.model, "); ", threads, " threads\n");
    out += concat("\t\tISA: ", features, " (level ", to_string(isa_level(cpu)), ")\n");
    out += concat("\t\tOpenBLAS: ", libraries.openblas_config, "; kernels: ", libraries.openblas_core, " (",
                  to_string(openblas_core_level(libraries.openblas_core)),
                  libraries.openblas_coretype.empty() ? "" : ", chosen by OPENBLAS_CORETYPE", ")\n");
    out += concat("\t\toneDNN: ", libraries.onednn_version, "; code for: ", libraries.onednn_isa, " (",
                  to_string(onednn_isa_level(libraries.onednn_isa)), ")\n");
    out += concat("\t\tf32 GEMM: ",
                  choice.library == CpuGemm::onednn
                      ? concat("oneDNN from ", choice.min_work, " multiply-adds, OpenBLAS below")
                      : std::string("OpenBLAS"),
                  " (", requested == CpuGemm::automatic ? "auto" : "CTK_GEMM", "): ", choice.reason, "\n");
    out += concat("\t\tbf16: ",
                  cpu.amx_bf16 || cpu.avx512_bf16
                      ? concat("native (", cpu.amx_bf16 ? "AMX" : "AVX512_BF16", ") through oneDNN")
                      : "emulated by oneDNN (no BF16 instructions)",
                  "\n");
    out += concat("\t\tverdict: ", verdict.verdict, "\n");
    if (!verdict.fix.empty()) out += concat("\t\tfix: ", verdict.fix, "\n");
    out += kDashes;
    return out;
}

CpuIsa query_cpu_isa() {
    CpuIsa cpu;
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return cpu;
    const unsigned max_leaf = a;
    char vendor[13] = {};
    std::memcpy(vendor, &b, 4);
    std::memcpy(vendor + 4, &d, 4);
    std::memcpy(vendor + 8, &c, 4);
    cpu.vendor = vendor;
    __get_cpuid(1, &a, &b, &c, &d);
    const unsigned base_family = (a >> 8) & 0xf, base_model = (a >> 4) & 0xf;
    cpu.family = static_cast<int>(base_family == 0xf ? base_family + ((a >> 20) & 0xff) : base_family);
    cpu.model = static_cast<int>(
        base_family == 6 || base_family == 0xf ? base_model | (((a >> 16) & 0xf) << 4) : base_model);
    const bool osxsave = (c >> 27) & 1, fma = (c >> 12) & 1;
    // The OS must save the wider registers (XCR0): YMM for AVX, opmask/ZMM for AVX-512, tiles for AMX.
    unsigned long long xcr0 = 0;
    if (osxsave) {
        unsigned lo = 0, hi = 0;
        __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
        xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
    }
    const bool ymm = (xcr0 & 0x6) == 0x6, zmm = (xcr0 & 0xe6) == 0xe6, tiles = (xcr0 & 0x60000) == 0x60000;
    cpu.avx = ymm && ((c >> 28) & 1);
    if (max_leaf >= 7) {
        __get_cpuid_count(7, 0, &a, &b, &c, &d);
        cpu.avx2 = cpu.avx && fma && ((b >> 5) & 1);
        const bool f = (b >> 16) & 1, dq = (b >> 17) & 1, bw = (b >> 30) & 1, vl = (b >> 31) & 1;
        cpu.avx512 = zmm && f && dq && bw && vl;
        cpu.avx512_fp16 = cpu.avx512 && ((d >> 23) & 1);
        cpu.amx_bf16 = tiles && ((d >> 22) & 1) && ((d >> 24) & 1);
        __get_cpuid_count(7, 1, &a, &b, &c, &d);
        cpu.avx512_bf16 = cpu.avx512 && ((a >> 5) & 1);
    }
    unsigned brand[12] = {};
    if (__get_cpuid(0x80000000, &a, &b, &c, &d) && a >= 0x80000004) {
        for (unsigned i = 0; i < 3; ++i)
            __get_cpuid(0x80000002 + i, &brand[4 * i], &brand[4 * i + 1], &brand[4 * i + 2],
                        &brand[4 * i + 3]);
        std::string name(reinterpret_cast<const char*>(brand), sizeof(brand));
        name = name.c_str();  // up to the first NUL
        const size_t first = name.find_first_not_of(' '), last = name.find_last_not_of(' ');
        cpu.model_name = first == std::string::npos ? "" : name.substr(first, last - first + 1);
    }
    return cpu;
}

MathLibraries query_math_libraries() {
    MathLibraries libs;
    libs.openblas_config = openblas_get_config();
    libs.openblas_core = openblas_get_corename();
    if (const char* coretype = std::getenv("OPENBLAS_CORETYPE")) libs.openblas_coretype = coretype;
    const dnnl_version_t* v = dnnl_version();
    libs.onednn_version = concat(v->major, '.', v->minor, '.', v->patch);
    switch (dnnl_get_effective_cpu_isa()) {
        case dnnl_cpu_isa_sse41:
            libs.onednn_isa = "sse41";
            break;
        case dnnl_cpu_isa_avx:
            libs.onednn_isa = "avx";
            break;
        case dnnl_cpu_isa_avx2:
            libs.onednn_isa = "avx2";
            break;
        case dnnl_cpu_isa_avx2_vnni:
            libs.onednn_isa = "avx2_vnni";
            break;
        case dnnl_cpu_isa_avx512_core:
            libs.onednn_isa = "avx512_core";
            break;
        case dnnl_cpu_isa_avx512_core_vnni:
            libs.onednn_isa = "avx512_core_vnni";
            break;
        case dnnl_cpu_isa_avx512_core_bf16:
            libs.onednn_isa = "avx512_core_bf16";
            break;
        case dnnl_cpu_isa_avx512_core_amx:
            libs.onednn_isa = "avx512_core_amx";
            break;
        default:
            libs.onednn_isa = "unknown";
    }
    return libs;
}

namespace {

struct MachineFacts {
    CpuIsa cpu = query_cpu_isa();
    MathLibraries libraries = query_math_libraries();
};
const MachineFacts& machine() {
    static const MachineFacts facts;
    return facts;
}

std::mutex g_setting_mutex;
std::optional<CpuGemm> g_setting;        // set_cpu_gemm's, or CTK_GEMM's once read
std::atomic<long long> g_threshold{-1};  // products of this many multiply-adds or more use oneDNN; -1 unset

}  // namespace

CpuGemm cpu_gemm_setting() {
    std::lock_guard<std::mutex> lock(g_setting_mutex);
    if (!g_setting) {
        const char* env = std::getenv("CTK_GEMM");
        g_setting = env ? parse_cpu_gemm(env, "CTK_GEMM") : CpuGemm::automatic;
    }
    return *g_setting;
}

void set_cpu_gemm(CpuGemm gemm) {
    std::lock_guard<std::mutex> lock(g_setting_mutex);
    g_setting = gemm;
    g_threshold.store(-1, std::memory_order_relaxed);
}

GemmChoice cpu_gemm_choice() {
    return choose_cpu_gemm(machine().cpu, machine().libraries, cpu_gemm_setting());
}

namespace cpu {
long long onednn_gemm_threshold() {
    long long threshold = g_threshold.load(std::memory_order_relaxed);
    if (threshold < 0) {
        const GemmChoice choice = cpu_gemm_choice();
        threshold =
            choice.library == CpuGemm::onednn ? choice.min_work : std::numeric_limits<long long>::max();
        g_threshold.store(threshold, std::memory_order_relaxed);
    }
    return threshold;
}

CpuGemm gemm_route() {
    return onednn_gemm_threshold() == std::numeric_limits<long long>::max() ? CpuGemm::openblas
                                                                            : CpuGemm::onednn;
}
}  // namespace cpu

namespace {
bool channels_last_from_environment() {
    const char* v = std::getenv("CTK_CHANNELS_LAST");
    return !(v && (std::strcmp(v, "0") == 0 || lower(v) == "false" || lower(v) == "off"));
}
std::atomic<bool> g_channels_last{channels_last_from_environment()};
}  // namespace

bool cpu_channels_last() {
    return g_channels_last.load(std::memory_order_relaxed);
}

void set_cpu_channels_last(bool on) {
    g_channels_last.store(on, std::memory_order_relaxed);
}

std::string cpu_report() {
    CpuGemm setting = CpuGemm::automatic;
    std::string setting_error;
    try {
        setting = cpu_gemm_setting();
    } catch (const ValueError& e) {  // the doctor reports a bad CTK_GEMM instead of failing on it
        setting_error = concat("\t\terror: ", e.what(), "\n");
    }
    std::string report = format_cpu_report(machine().cpu, machine().libraries, setting, num_threads());
    return setting_error.empty() ? report : report.insert(report.size() - kDashes.size(), setting_error);
}

}  // namespace ctk
