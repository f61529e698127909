// Helpers of the CNTK v2 model tests (cntk_v2_test.cpp, cntk_v2_recurrent_test.cpp): seeded inputs, and
// a save and load through a temporary file that checks the structure comes back.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "ctk/core/tensor.h"
#include "ctk/formats/model.h"
#include "formats/cntk_dictionary.h"
#include "formats/formats_test_util.h"

namespace ctk::test {

inline Tensor random_tensor(const Dims& dims, uint32_t seed) {
    std::mt19937 gen(seed);
    std::normal_distribution<float> dist(0.0f, 1.0f);
    Tensor t = Tensor::empty(Shape(dims), DataType::f32);
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = dist(gen);
    return t;
}

inline FunctionPtr round_trip(const FunctionPtr& model, const std::string& tag) {
    const std::string path = test::temp_dir("cntk_v2_" + tag) + "/model.dnn";
    save_model(model, path);
    EXPECT_EQ(detect_model_format(path), ModelFormat::cntk_v2);
    FunctionPtr back = load_model(path);
    // Saving the loaded model again gives the same structure: the same leaves and the same ops (uids
    // differ).
    auto ops = [](const formats::proto::Dictionary& d) {
        std::vector<uint64_t> out;
        for (const auto& f : d.data().at("primitive_functions").vector_value().value())
            out.push_back(f.dictionary_value().data().at("op").size_t_value());
        std::sort(out.begin(), out.end());  // the order of independent Functions may differ
        out.push_back(static_cast<uint64_t>(d.data().at("inputs").vector_value().value_size()));
        return out;
    };
    EXPECT_EQ(ops(formats::cntk_v2_model_dictionary(model)), ops(formats::cntk_v2_model_dictionary(back)));
    return back;
}

}  // namespace ctk::test
