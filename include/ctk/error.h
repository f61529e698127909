// The ctk error hierarchy. Every user-facing failure is one of these; nothing aborts the process on bad
// input. Messages name the op, the operand and the shapes at fault.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace ctk {

// Base of all ctk errors.
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(message) {}
};
// Shapes do not fit together (mismatched dims, bad rank, negative sizes).
class ShapeError : public Error {
    using Error::Error;
};
// A data type is wrong or unsupported for the operation.
class TypeError : public Error {
    using Error::Error;
};
// An argument is out of its range (an axis, an index, a probability).
class ValueError : public Error {
    using Error::Error;
};
// A view or an index reaches outside its storage.
class IndexError : public Error {
    using Error::Error;
};
// A file cannot be read or written, or its content is malformed.
class IOError : public Error {
    using Error::Error;
};
// A device is missing, mismatched or failed.
class DeviceError : public Error {
    using Error::Error;
};
// An allocation failed; the message says what was asked and what is in use.
class OutOfMemoryError : public Error {
    using Error::Error;
};
// The operation exists but not for this device or data type.
class NotImplementedError : public Error {
    using Error::Error;
};

namespace detail {
template <typename... Args>
std::string concat(Args&&... args) {
    std::ostringstream out;
    (out << ... << std::forward<Args>(args));
    return out.str();
}
}  // namespace detail

}  // namespace ctk

// CTK_CHECK(cond, ErrorType, parts...): throws ErrorType with the parts streamed together.
#define CTK_CHECK(cond, ErrorType, ...)                                   \
    do {                                                                  \
        if (!(cond)) throw ErrorType(::ctk::detail::concat(__VA_ARGS__)); \
    } while (0)

#define CTK_THROW(ErrorType, ...) throw ErrorType(::ctk::detail::concat(__VA_ARGS__))
