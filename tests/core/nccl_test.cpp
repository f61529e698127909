// NCCL, which the distributed layer opens with dlopen for its GPU collectives: the library configure found
// loads without a GPU and is the release whose headers the build banner names.
#include <gtest/gtest.h>
#include <nccl.h>

#include <string>

#include "ctk/core/build_info.h"

TEST(Nccl, LinkedLibraryIsTheVersionTheBannerNames) {
    int code = 0;
    ASSERT_EQ(ncclGetVersion(&code), ncclSuccess);
    // NCCL_VERSION_CODE since 2.9: major * 10000 + minor * 100 + patch.
    const std::string loaded = std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
                               std::to_string(code % 100);
    EXPECT_EQ(loaded, ctk::build_info().nccl_version);
    EXPECT_EQ(code, NCCL_VERSION_CODE);
}
