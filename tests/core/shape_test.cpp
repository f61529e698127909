// Shape arithmetic, axis normalisation and broadcasting errors.
#include <gtest/gtest.h>

#include "ctk/core/error.h"
#include "ctk/core/shape.h"

using namespace ctk;

TEST(Shape, Basics) {
    Shape s{2, 3, 4};
    EXPECT_EQ(s.rank(), 3);
    EXPECT_EQ(s.numel(), 24);
    EXPECT_EQ(s.dim(-1), 4);
    EXPECT_EQ(s.contiguous_strides(), (Dims{12, 4, 1}));
    EXPECT_EQ(s.to_string(), "[2, 3, 4]");
    EXPECT_EQ(Shape{}.numel(), 1);
    EXPECT_EQ((Shape{3, 0}).numel(), 0);
}

TEST(Shape, NegativeDimsAndAxesAreErrors) {
    EXPECT_THROW(Shape({2, -1}), ShapeError);
    Shape s{2, 3};
    EXPECT_EQ(s.normalize_axis(-2), 0);
    try {
        s.normalize_axis(2);
        FAIL();
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("[2, 3]"), std::string::npos) << e.what();
    }
}

TEST(Shape, Broadcasting) {
    EXPECT_EQ(broadcast_shapes(Shape{3, 1}, Shape{4}, "plus"), (Shape{3, 4}));
    EXPECT_EQ(broadcast_shapes(Shape{}, Shape{2, 2}, "plus"), (Shape{2, 2}));
    EXPECT_EQ(broadcast_shapes(Shape{0, 1}, Shape{1, 5}, "plus"), (Shape{0, 5}));
    try {
        broadcast_shapes(Shape{2, 3}, Shape{4, 3}, "element_times");
        FAIL();
    } catch (const ShapeError& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("element_times"), std::string::npos) << m;
        EXPECT_NE(m.find("[2, 3]"), std::string::npos) << m;
        EXPECT_NE(m.find("[4, 3]"), std::string::npos) << m;
    }
}

// Element and byte counts never wrap: a shape whose count passes 64 bits is an error that names it.
TEST(Shape, CountsThatPass64BitsAreErrors) {
    const int64_t big = int64_t(1) << 31;
    try {
        Shape s{big, big, 4};
        FAIL() << "expected ValueError";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("[2147483648, 2147483648, 4]"), std::string::npos) << e.what();
    }
    EXPECT_THROW(Shape({big, big, big}), ValueError);
    EXPECT_THROW(Shape({big, big, big, 0}), ValueError);  // a zero after an overflow is still no shape
    EXPECT_EQ(checked_numel({big, big}, "x"), int64_t(1) << 62);
    EXPECT_EQ(checked_numel({0, big, big}, "x"), 0);
    EXPECT_EQ(checked_numel({}, "x"), 1);
    try {
        checked_numel({3, -2}, "parameter 'W'");
        FAIL() << "expected ValueError";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("parameter 'W'"), std::string::npos) << e.what();
    }
}
