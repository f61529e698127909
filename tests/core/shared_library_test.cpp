// SharedLibrary: a library and its entry points found by name, and errors that say which and for whom.
#include "ctk/core/shared_library.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "ctk/core/error.h"

TEST(SharedLibrary, BindsAnEntryPointOfALibraryOnTheLoadersPath) {
    const ctk::SharedLibrary libc("libc.so.6", "test", "glibc");
    decltype(&strlen) length = nullptr;
    libc.bind(length, "strlen");
    ASSERT_NE(length, nullptr);
    EXPECT_EQ(length("four"), 4u);
}

TEST(SharedLibrary, MissingLibrariesAndEntryPointsAreNamed) {
    try {
        ctk::SharedLibrary("libctk_no_such_library.so.1", "cuDNN", "install cuDNN 9");
        FAIL() << "no exception";
    } catch (const ctk::DeviceError& e) {
        EXPECT_EQ(std::string(e.what()).rfind(
                      "cuDNN: cannot load libctk_no_such_library.so.1 (install cuDNN 9): ", 0),
                  0u)
            << e.what();
    }
    const ctk::SharedLibrary libc("libc.so.6", "test", "glibc");
    void (*fn)() = nullptr;
    EXPECT_THROW(libc.bind(fn, "ctk_no_such_function"), ctk::DeviceError);
}
