// Dictionary values, and the atomic file write and whole-file read that checkpoints use (the bytes of a
// Dictionary on disk are CNTK's protobuf framing, src/formats/cntk_dictionary.cpp).
#include "ctk/core/dictionary.h"

#include <cerrno>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "ctk/core/atomic_file.h"

namespace ctk {

DictionaryValue::DictionaryValue(const Dictionary& v) : v_(std::make_shared<const Dictionary>(v)) {}

const char* DictionaryValue::kind_name() const {
    static const char* const names[] = {"none",   "bool",   "int",  "double",
                                        "string", "tensor", "list", "dictionary"};
    return names[v_.index()];
}

namespace {
[[noreturn]] void wrong_kind(const char* wanted, const DictionaryValue& v) {
    CTK_THROW(ValueError, "Dictionary value is a ", v.kind_name(), ", not a ", wanted);
}
}  // namespace

bool DictionaryValue::as_bool() const {
    if (const bool* b = std::get_if<bool>(&v_)) return *b;
    wrong_kind("bool", *this);
}
int64_t DictionaryValue::as_int() const {
    if (const int64_t* i = std::get_if<int64_t>(&v_)) return *i;
    wrong_kind("int", *this);
}
double DictionaryValue::as_double() const {
    if (const double* d = std::get_if<double>(&v_)) return *d;
    if (const int64_t* i = std::get_if<int64_t>(&v_)) return static_cast<double>(*i);
    wrong_kind("double", *this);
}
const std::string& DictionaryValue::as_string() const {
    if (const std::string* s = std::get_if<std::string>(&v_)) return *s;
    wrong_kind("string", *this);
}
const Tensor& DictionaryValue::as_tensor() const {
    if (const Tensor* t = std::get_if<Tensor>(&v_)) return *t;
    wrong_kind("tensor", *this);
}
const DictionaryValue::List& DictionaryValue::as_list() const {
    if (const List* l = std::get_if<List>(&v_)) return *l;
    wrong_kind("list", *this);
}
const Dictionary& DictionaryValue::as_dictionary() const {
    if (const auto* d = std::get_if<std::shared_ptr<const Dictionary>>(&v_)) return **d;
    wrong_kind("dictionary", *this);
}

const DictionaryValue& Dictionary::at(const std::string& key) const {
    auto it = items_.find(key);
    CTK_CHECK(it != items_.end(), ValueError, "Dictionary has no key '", key, "'");
    return it->second;
}

namespace {
bool same_tensor(const Tensor& a, const Tensor& b) {
    if (a.defined() != b.defined()) return false;
    if (!a.defined()) return true;
    if (a.dtype() != b.dtype() || !(a.shape() == b.shape())) return false;
    Tensor ca = a.to(Device::cpu()).contiguous(), cb = b.to(Device::cpu()).contiguous();
    return std::memcmp(ca.raw_data(), cb.raw_data(), ca.numel() * ca.element_size()) == 0;
}
}  // namespace

bool operator==(const DictionaryValue& a, const DictionaryValue& b) {
    if (std::string(a.kind_name()) != b.kind_name()) return false;
    if (a.is_none()) return true;
    if (a.is<bool>()) return a.as_bool() == b.as_bool();
    if (a.is<int64_t>()) return a.as_int() == b.as_int();
    if (a.is<double>()) {
        double x = a.as_double(), y = b.as_double();
        return std::memcmp(&x, &y, sizeof(double)) == 0;  // bitwise: NaN state round trips too
    }
    if (a.is<std::string>()) return a.as_string() == b.as_string();
    if (a.is<Tensor>()) return same_tensor(a.as_tensor(), b.as_tensor());
    if (a.is<DictionaryValue::List>()) return a.as_list() == b.as_list();
    return a.as_dictionary() == b.as_dictionary();
}

// ---- files ----

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)), tmp_(path_ + ".tmp") {
    // The folders on the way are made, as CNTK made them for its models and checkpoints.
    const std::filesystem::path parent = std::filesystem::path(path_).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    CTK_CHECK(!ec, IOError, "cannot write '", path_, "': cannot create its folder '", parent.string(),
              "': ", ec.message());
    f_ = std::fopen(tmp_.c_str(), "wb");
    CTK_CHECK(f_, IOError, "cannot write '", path_, "' (through '", tmp_, "'): ", std::strerror(errno));
}

AtomicFile::~AtomicFile() {
    if (f_) std::fclose(f_);
    if (!committed_) std::remove(tmp_.c_str());
}

void AtomicFile::write(const std::string& bytes) {
    CTK_CHECK(std::fwrite(bytes.data(), 1, bytes.size(), f_) == bytes.size(), IOError, "cannot write '", tmp_,
              "': ", std::strerror(errno));
    size_ += static_cast<int64_t>(bytes.size());
}

void AtomicFile::commit() {
    bool ok = std::fflush(f_) == 0;
    ok = ::fsync(fileno(f_)) == 0 && ok;
    ok = std::fclose(f_) == 0 && ok;
    f_ = nullptr;
    CTK_CHECK(ok, IOError, "cannot write '", tmp_, "': ", std::strerror(errno));
    CTK_CHECK(std::rename(tmp_.c_str(), path_.c_str()) == 0, IOError, "cannot rename '", tmp_, "' to '",
              path_, "': ", std::strerror(errno));
    committed_ = true;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
    AtomicFile file(path);
    file.write(bytes);
    file.commit();
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    CTK_CHECK(in, IOError, "cannot open '", path, "' for reading");
    std::ostringstream ss;
    ss << in.rdbuf();
    CTK_CHECK(!in.bad(), IOError, "error reading '", path, "'");
    return ss.str();
}

}  // namespace ctk
