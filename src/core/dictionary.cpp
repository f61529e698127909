// Dictionary values and ctk's binary framing of them (checkpoint state). The framing is little-endian:
// "CTKDICT1", then one tagged value per entry; every length is checked against the bytes left.
#include "ctk/dictionary.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

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

// ---- framing ----
namespace {
constexpr char kMagic[8] = {'C', 'T', 'K', 'D', 'I', 'C', 'T', '1'};
constexpr int kMaxDepth = 64;
enum Tag : uint8_t { none = 0, boolean, integer, real, string, tensor, list, dictionary };

class Writer {
public:
    template <typename T>
    void pod(T v) {
        out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
    }
    void str(const std::string& s) {
        pod<uint64_t>(s.size());
        out_ += s;
    }
    void value(const DictionaryValue& v) {
        if (v.is_none()) {
            pod<uint8_t>(none);
        } else if (v.is<bool>()) {
            pod<uint8_t>(boolean);
            pod<uint8_t>(v.as_bool() ? 1 : 0);
        } else if (v.is<int64_t>()) {
            pod<uint8_t>(integer);
            pod<int64_t>(v.as_int());
        } else if (v.is<double>()) {
            pod<uint8_t>(real);
            pod<double>(v.as_double());
        } else if (v.is<std::string>()) {
            pod<uint8_t>(string);
            str(v.as_string());
        } else if (v.is<Tensor>()) {
            pod<uint8_t>(tensor);
            write_tensor(v.as_tensor());
        } else if (v.is<DictionaryValue::List>()) {
            pod<uint8_t>(list);
            pod<uint64_t>(v.as_list().size());
            for (const auto& item : v.as_list()) value(item);
        } else {
            pod<uint8_t>(dictionary);
            dict(v.as_dictionary());
        }
    }
    void dict(const Dictionary& d) {
        pod<uint64_t>(d.size());
        for (const auto& [k, v] : d.items()) {
            str(k);
            value(v);
        }
    }
    void write_tensor(const Tensor& t) {
        CTK_CHECK(t.defined(), ValueError, "Dictionary: cannot save an undefined tensor");
        Tensor c = t.to(Device::cpu()).contiguous();
        pod<uint8_t>(static_cast<uint8_t>(c.dtype()));
        pod<uint32_t>(static_cast<uint32_t>(c.rank()));
        for (int64_t d : c.shape().dims()) pod<int64_t>(d);
        out_.append(static_cast<const char*>(c.raw_data()), c.numel() * c.element_size());
    }
    std::string& out() { return out_; }

private:
    std::string out_;
};

class Reader {
public:
    Reader(const std::string& bytes, const std::string& source) : b_(bytes), source_(source) {}
    void need(uint64_t n, const char* what) {
        CTK_CHECK(n <= b_.size() - pos_, IOError, source_, ": truncated or corrupt dictionary: ", what,
                  " needs ", n, " bytes at offset ", pos_, ", only ", b_.size() - pos_, " left");
    }
    template <typename T>
    T pod(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, b_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    std::string str(const char* what) {
        uint64_t n = pod<uint64_t>(what);
        need(n, what);
        std::string s = b_.substr(pos_, n);
        pos_ += n;
        return s;
    }
    DictionaryValue value(int depth) {
        CTK_CHECK(depth < kMaxDepth, IOError, source_, ": dictionary nested deeper than ", kMaxDepth);
        auto tag = pod<uint8_t>("value tag");
        switch (tag) {
            case none:
                return {};
            case boolean:
                return DictionaryValue(pod<uint8_t>("bool") != 0);
            case integer:
                return DictionaryValue(pod<int64_t>("int"));
            case real:
                return DictionaryValue(pod<double>("double"));
            case string:
                return DictionaryValue(str("string"));
            case tensor:
                return DictionaryValue(read_tensor());
            case list: {
                uint64_t n = pod<uint64_t>("list length");
                need(n, "list items");  // every item takes at least its tag byte
                DictionaryValue::List items;
                items.reserve(n);
                for (uint64_t i = 0; i < n; ++i) items.push_back(value(depth + 1));
                return DictionaryValue(std::move(items));
            }
            case dictionary:
                return DictionaryValue(dict(depth + 1));
            default:
                CTK_THROW(IOError, source_, ": corrupt dictionary: unknown value tag ", int(tag),
                          " at offset ", pos_ - 1);
        }
    }
    Dictionary dict(int depth) {
        uint64_t n = pod<uint64_t>("dictionary size");
        need(n, "dictionary entries");
        Dictionary d;
        for (uint64_t i = 0; i < n; ++i) {
            std::string key = str("key");
            d.set(key, value(depth));
        }
        return d;
    }
    Tensor read_tensor() {
        auto dtype = pod<uint8_t>("tensor dtype");
        CTK_CHECK(dtype < kNumDataTypes, IOError, source_, ": corrupt dictionary: tensor dtype ", int(dtype));
        auto rank = pod<uint32_t>("tensor rank");
        CTK_CHECK(rank <= 64, IOError, source_, ": corrupt dictionary: tensor rank ", rank);
        Dims dims(rank);
        uint64_t numel = 1;
        for (auto& d : dims) {
            d = pod<int64_t>("tensor dim");
            CTK_CHECK(d >= 0 && uint64_t(d) <= b_.size(), IOError, source_,
                      ": corrupt dictionary: tensor dim ", d);
            numel *= uint64_t(d);
            CTK_CHECK(numel <= b_.size(), IOError, source_,
                      ": corrupt dictionary: tensor larger than the file");
        }
        auto dt = static_cast<DataType>(dtype);
        uint64_t bytes = numel * size_of(dt);
        need(bytes, "tensor data");
        Tensor t = Tensor::empty(Shape(dims), dt);
        if (bytes) std::memcpy(t.raw_data(), b_.data() + pos_, bytes);
        pos_ += bytes;
        return t;
    }
    bool done() const { return pos_ == b_.size(); }

private:
    const std::string& b_;
    const std::string& source_;
    uint64_t pos_ = 0;
};
}  // namespace

std::string serialize_dictionary(const Dictionary& d) {
    Writer w;
    w.out().append(kMagic, sizeof(kMagic));
    w.dict(d);
    return std::move(w.out());
}

Dictionary deserialize_dictionary(const std::string& bytes, const std::string& source) {
    CTK_CHECK(bytes.size() >= sizeof(kMagic) && std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) == 0,
              IOError, source, ": not a ctk dictionary (wrong magic)");
    Reader r(bytes, source);
    for (size_t i = 0; i < sizeof(kMagic); ++i) r.pod<char>("magic");
    Dictionary d = r.dict(0);
    CTK_CHECK(r.done(), IOError, source, ": corrupt dictionary: trailing bytes");
    return d;
}

void write_file_atomically(const std::string& path, const std::string& bytes) {
    // The folders on the way are made, as CNTK made them for its models and checkpoints.
    const std::filesystem::path parent = std::filesystem::path(path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    CTK_CHECK(!ec, IOError, "cannot write '", path, "': cannot create its folder '", parent.string(),
              "': ", ec.message());
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    CTK_CHECK(f, IOError, "cannot write '", path, "' (through '", tmp, "'): ", std::strerror(errno));
    bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
    ok = std::fflush(f) == 0 && ok;
    ok = ::fsync(fileno(f)) == 0 && ok;
    ok = std::fclose(f) == 0 && ok;
    if (!ok) {
        std::remove(tmp.c_str());
        CTK_THROW(IOError, "cannot write '", tmp, "': ", std::strerror(errno));
    }
    CTK_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, IOError, "cannot rename '", tmp, "' to '", path,
              "': ", std::strerror(errno));
}

void save_dictionary(const Dictionary& d, const std::string& path) {
    write_file_atomically(path, serialize_dictionary(d));
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    CTK_CHECK(in, IOError, "cannot open '", path, "' for reading");
    std::ostringstream ss;
    ss << in.rdbuf();
    CTK_CHECK(!in.bad(), IOError, "error reading '", path, "'");
    return ss.str();
}

Dictionary load_dictionary(const std::string& path) {
    return deserialize_dictionary(read_file(path), path);
}

}  // namespace ctk
