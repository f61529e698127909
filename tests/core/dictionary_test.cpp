// Dictionary values, their binary framing (round trips, hostile bytes) and the atomic file write.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ctk/dictionary.h"

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

TEST(Dictionary, RoundTripsThroughBytes) {
    Dictionary d = sample();
    Dictionary back = deserialize_dictionary(serialize_dictionary(d));
    EXPECT_TRUE(back == d);
    EXPECT_EQ(back.at("tensor").as_tensor().to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
    Dictionary other = d;
    other.set("lr", 0.5);
    EXPECT_FALSE(other == d);
}

TEST(Dictionary, EveryTruncationFailsCleanly) {
    std::string bytes = serialize_dictionary(sample());
    for (size_t n = 0; n < bytes.size(); ++n)
        EXPECT_THROW(deserialize_dictionary(bytes.substr(0, n), "cut.ckp"), IOError) << "cut at " << n;
    EXPECT_THROW(deserialize_dictionary(bytes + "x"), IOError);
}

TEST(Dictionary, HostileLengthsDoNotAllocate) {
    std::string bytes = serialize_dictionary(Dictionary{{"t", Tensor::zeros({2}, DataType::f32)}});
    // Overwrite every 8-byte window with a huge count: each must be rejected by the bounds checks.
    for (size_t at = 8; at + 8 <= bytes.size(); ++at) {
        std::string bad = bytes;
        uint64_t huge = uint64_t(1) << 60;
        std::memcpy(bad.data() + at, &huge, sizeof(huge));
        try {
            deserialize_dictionary(bad, "bad.ckp");
        } catch (const IOError& e) {
            EXPECT_NE(std::string(e.what()).find("bad.ckp"), std::string::npos);
        } catch (const Error&) {
        }
    }
    EXPECT_THROW(deserialize_dictionary("NOTADICT", "x"), IOError);
}

TEST(Dictionary, AtomicSaveKeepsThePreviousFileOnFailure) {
    auto dir = std::filesystem::temp_directory_path() / "ctk_dictionary_test";
    std::filesystem::create_directories(dir);
    std::string path = (dir / "state.ckp").string();
    save_dictionary(sample(), path);
    EXPECT_TRUE(load_dictionary(path) == sample());
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
    // A save that cannot write its temporary file (a directory is in the way) leaves the old file whole.
    std::filesystem::create_directories(path + ".tmp");
    EXPECT_THROW(save_dictionary(Dictionary{{"x", 1}}, path), IOError);
    EXPECT_TRUE(load_dictionary(path) == sample());
    std::filesystem::remove_all(dir);
    EXPECT_THROW(load_dictionary(path), IOError);
}

}  // namespace
}  // namespace ctk
