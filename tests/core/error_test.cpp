// Error messages stay valid UTF-8: bytes quoted from a file that are not UTF-8 come out as \xNN.
#include <gtest/gtest.h>

#include "ctk/core/error.h"

using namespace ctk;

TEST(Error, InvalidUtf8IsEscaped) {
    EXPECT_EQ(escape_invalid_utf8("plain ascii"), "plain ascii");
    EXPECT_EQ(escape_invalid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"),
              "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80");
    EXPECT_EQ(escape_invalid_utf8("|x 1 \xff 3"), "|x 1 \\xff 3");
    EXPECT_EQ(escape_invalid_utf8("\xc3"), "\\xc3");                    // a sequence cut short
    EXPECT_EQ(escape_invalid_utf8("\xc3(x"), "\\xc3(x");                // a lead without its continuation
    EXPECT_EQ(escape_invalid_utf8("\x80"), "\\x80");                    // a continuation alone
    EXPECT_EQ(escape_invalid_utf8("\xc0\xaf"), "\\xc0\\xaf");           // overlong '/'
    EXPECT_EQ(escape_invalid_utf8("\xe0\x80\xaf"), "\\xe0\\x80\\xaf");  // overlong, three bytes
    EXPECT_EQ(escape_invalid_utf8("\xed\xa0\x80"), "\\xed\\xa0\\x80");  // a UTF-16 surrogate
    EXPECT_EQ(escape_invalid_utf8("\xf4\x90\x80\x80"), "\\xf4\\x90\\x80\\x80");  // above U+10FFFF
    EXPECT_EQ(escape_invalid_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(Error, MessagesAreKeptAsUtf8) {
    try {
        CTK_THROW(IOError, "'bad.ctf' line 1: cannot parse '", "\xff", "'");
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(), "'bad.ctf' line 1: cannot parse '\\xff'");
    }
}
