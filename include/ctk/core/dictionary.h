// Dictionary: CNTK's nested key/value state (learner state, reader position, checkpoint contents).
// Checkpoints hold one: the learners' smoothed gradients and counters, the reader's position and the
// user's external state. On disk a Dictionary is CNTK's v2 protobuf framing (save_cntk_dictionary in
// ctk/formats/model.h), written atomically (write_file_atomically: a temporary file, then rename), so a crash
// while saving never loses the previous file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ctk/core/tensor.h"

namespace ctk {

class Dictionary;

class DictionaryValue {
public:
    using List = std::vector<DictionaryValue>;
    DictionaryValue() = default;
    DictionaryValue(bool v) : v_(v) {}  // NOLINT(google-explicit-constructor): value semantics
    DictionaryValue(int v) : v_(int64_t(v)) {}
    DictionaryValue(int64_t v) : v_(v) {}
    DictionaryValue(uint64_t v) : v_(static_cast<int64_t>(v)) {}
    DictionaryValue(double v) : v_(v) {}
    DictionaryValue(const char* v) : v_(std::string(v)) {}
    DictionaryValue(std::string v) : v_(std::move(v)) {}
    DictionaryValue(Tensor v) : v_(std::move(v)) {}
    DictionaryValue(List v) : v_(std::move(v)) {}
    DictionaryValue(const Dictionary& v);

    bool is_none() const { return std::holds_alternative<std::monostate>(v_); }
    template <typename T>
    bool is() const {
        return std::holds_alternative<T>(v_);
    }
    // Typed access; throws ValueError naming the expected and actual kinds.
    bool as_bool() const;
    int64_t as_int() const;
    double as_double() const;  // ints convert
    const std::string& as_string() const;
    const Tensor& as_tensor() const;
    const List& as_list() const;
    const Dictionary& as_dictionary() const;
    const char* kind_name() const;

private:
    std::variant<std::monostate, bool, int64_t, double, std::string, Tensor, List,
                 std::shared_ptr<const Dictionary>>
        v_;
};

class Dictionary {
public:
    Dictionary() = default;
    Dictionary(std::initializer_list<std::pair<const std::string, DictionaryValue>> items) : items_(items) {}

    bool contains(const std::string& key) const { return items_.count(key) > 0; }
    // Throws ValueError naming the key when it is missing.
    const DictionaryValue& at(const std::string& key) const;
    DictionaryValue& operator[](const std::string& key) { return items_[key]; }
    void set(const std::string& key, DictionaryValue v) { items_[key] = std::move(v); }
    size_t size() const { return items_.size(); }
    const std::map<std::string, DictionaryValue>& items() const { return items_; }

private:
    std::map<std::string, DictionaryValue> items_;
};

// Exact equality (tensors compared bitwise after moving to the CPU); for tests.
bool operator==(const DictionaryValue& a, const DictionaryValue& b);
inline bool operator==(const Dictionary& a, const Dictionary& b) {
    return a.items() == b.items();
}

// Atomically replaces `path` with `bytes`: `path.tmp` is written and flushed, then renamed over `path`
// (the folders on the way are made). Throws IOError naming the file.
void write_file_atomically(const std::string& path, const std::string& bytes);
// The whole file's bytes; throws IOError naming the file when it cannot be opened or read.
std::string read_file(const std::string& path);

}  // namespace ctk
