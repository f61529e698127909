// Dictionary values and the atomic file write (Dictionaries on disk: tests/formats/cntk_v2_test.cpp).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ctk/core/dictionary.h"

namespace ctk {
namespace {

Dictionary sample() {
    Dictionary inner{{"count", int64_t(7)}, {"name", "inner"}};
    Tensor t = Tensor::arange({2, 3}, DataType::f32);
    DictionaryValue::List list{DictionaryValue(1.5), DictionaryValue(true), DictionaryValue(inner)};
    return Dictionary{{"Version", int64_t(1)},
                      {"lr", 0.25},
                      {"tensor", t},
                      {"list", list},
                      {"inner", inner},
                      {"none", DictionaryValue()},
                      {"empty", Tensor::zeros({0, 4}, DataType::f64)}};
}

TEST(Dictionary, TypedAccessAndErrors) {
    Dictionary d = sample();
    EXPECT_EQ(d.at("Version").as_int(), 1);
    EXPECT_DOUBLE_EQ(d.at("Version").as_double(), 1.0);
    EXPECT_EQ(d.at("inner").as_dictionary().at("name").as_string(), "inner");
    EXPECT_THROW(d.at("missing"), ValueError);
    EXPECT_THROW(d.at("lr").as_string(), ValueError);
    try {
        d.at("absent");
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("absent"), std::string::npos);
    }
}

TEST(Dictionary, Equality) {
    Dictionary d = sample();
    EXPECT_TRUE(sample() == d);
    Dictionary other = d;
    other.set("lr", 0.5);
    EXPECT_FALSE(other == d);
}

TEST(Dictionary, AtomicWriteKeepsThePreviousFileOnFailure) {
    auto dir = std::filesystem::temp_directory_path() / "ctk_dictionary_test";
    std::filesystem::create_directories(dir);
    std::string path = (dir / "state.ckp").string();
    write_file_atomically(path, "first");
    EXPECT_EQ(read_file(path), "first");
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    // A write that cannot make its temporary file (a directory is in the way) leaves the old file whole.
    std::filesystem::create_directories(path + ".tmp");
    EXPECT_THROW(write_file_atomically(path, "second"), IOError);
    EXPECT_EQ(read_file(path), "first");
    std::filesystem::remove_all(dir);
    EXPECT_THROW(read_file(path), IOError);
}

}  // namespace
}  // namespace ctk
