// What this build of ctk is: version, git SHA, build type, when it was built, the math libraries and,
// in GPU builds, the CUDA toolkit, cuDNN, NCCL and the GPU architectures compiled in; MPI when built with it.
#pragma once

#include <string>

namespace ctk {

struct BuildInfo {
    std::string version;
    std::string git_sha;
    std::string build_type;
    std::string build_target;  // "GPU" when the CUDA backend is built in, else "CPU"
    std::string math_lib;      // e.g. "OpenBLAS (OpenBLAS 0.3.21 ...) + oneDNN"
    std::string built_time;    // "Nov 23 2025 02:48:00": __DATE__ __TIME__, as CNTK printed it
    // Empty in CPU builds.
    std::string cuda_version;        // the CUDA toolkit, e.g. "13.0.88"
    std::string cudnn_version;       // e.g. "9.19.0"
    std::string cuda_architectures;  // CMake's CUDA_ARCHITECTURES, e.g. "80-real 86-real 89-real 90"
    std::string nccl_version;        // the NCCL headers built against, e.g. "2.28.9"; empty without NCCL
    // Empty unless built with MPI (CTK_USE_MPI).
    std::string mpi_distribution;  // e.g. "Open MPI"
    std::string mpi_version;       // e.g. "4.1.4"
};

BuildInfo build_info();

}  // namespace ctk
