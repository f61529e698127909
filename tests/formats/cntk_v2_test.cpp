#include <gtest/gtest.h>

#include "ctk/model.h"

namespace ctk {
namespace {

TEST(ModelFormat, Names) {
    EXPECT_STREQ(model_format_name(ModelFormat::cntk_v2), "CNTKv2");
    EXPECT_STREQ(model_format_name(ModelFormat::onnx), "ONNX");
    EXPECT_STREQ(model_format_name(ModelFormat::cntk_v1), "CNTKv1");
}

}  // namespace
}  // namespace ctk
