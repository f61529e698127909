#include <gtest/gtest.h>

#include "ctk/model.h"
#include "formats/formats_test_util.h"

namespace ctk {
namespace {

TEST(Placeholder, Builds) {
    SUCCEED();
}

}  // namespace
}  // namespace ctk
