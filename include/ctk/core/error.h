// The ctk error hierarchy. Every user-facing failure is one of these; nothing aborts the process on bad
// input. Messages name the op, the operand and the shapes at fault.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace ctk {

// `text` with every byte that is not part of valid UTF-8 written as \xNN: error messages quote the bytes
// of files and names, and Python, C# and terminals take only UTF-8 (Python turned a message with one
// stray byte into an exception with no text at all).
std::string escape_invalid_utf8(std::string_view text);

// Base of all ctk errors. The message is kept as valid UTF-8 (escape_invalid_utf8).
class Error : public std::runtime_error {
public:
    explicit Error(const std::string& message) : std::runtime_error(escape_invalid_utf8(message)) {}
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
