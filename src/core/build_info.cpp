// Build facts baked in by CMake (CTK_* macros, private to ctk_core; CTK_GIT_SHA from the header the
// ctk_git_sha target rewrites when the commit changes).
#include "ctk/core/build_info.h"

#include <cblas.h>

#include "ctk_git_sha.h"

namespace ctk {

BuildInfo build_info() {
    BuildInfo info;
    info.version = CTK_VERSION;
    info.git_sha = CTK_GIT_SHA;
    info.build_type = CTK_BUILD_TYPE;
    info.math_lib = std::string("OpenBLAS (") + openblas_get_config() + ") + oneDNN";
    // The time this file was last compiled, as in CNTK; it changes only when this file is rebuilt.
    info.built_time = __DATE__ " " __TIME__;
#ifdef CTK_HAVE_CUDA
    info.build_target = "GPU";
    info.cuda_version = CTK_CUDA_VERSION;
    info.cudnn_version = CTK_CUDNN_VERSION;
    info.cuda_architectures = CTK_CUDA_ARCHITECTURES;
#ifdef CTK_NCCL_VERSION
    info.nccl_version = CTK_NCCL_VERSION;
#endif
#else
    info.build_target = "CPU";
#endif
#ifdef CTK_MPI_DISTRIBUTION
    info.mpi_distribution = CTK_MPI_DISTRIBUTION;
    info.mpi_version = CTK_MPI_VERSION;
#endif
    return info;
}

}  // namespace ctk
