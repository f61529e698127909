// Shared by the graph layer's unit tests.
#pragma once

#include <string>

#include "ctk/core/error.h"

namespace ctk::test {

// The message of the ctk::Error that fn throws, or "" when it throws none.
template <typename Fn>
std::string error_of(Fn&& fn) {
    try {
        fn();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace ctk::test
