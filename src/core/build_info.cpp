// Build facts baked in by CMake.
#include "ctk/build_info.h"

#include <cblas.h>

namespace ctk {

BuildInfo build_info() {
    BuildInfo info;
    info.version = CTK_VERSION;
    info.git_sha = CTK_GIT_SHA;
    info.build_type = CTK_BUILD_TYPE;
    info.build_target = "CPU";
    info.math_lib = std::string("OpenBLAS (") + openblas_get_config() + ") + oneDNN";
    return info;
}

}  // namespace ctk
