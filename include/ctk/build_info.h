// What this build of ctk is: version, git SHA, build type, the math libraries and their versions.
#pragma once

#include <string>

namespace ctk {

struct BuildInfo {
    std::string version;
    std::string git_sha;
    std::string build_type;
    std::string build_target;  // "CPU" until the CUDA backend is built in
    std::string math_lib;      // e.g. "OpenBLAS 0.3.21 (OpenMP) + oneDNN"
};

BuildInfo build_info();

}  // namespace ctk
