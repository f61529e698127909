// A file written piece by piece into `path.tmp` and renamed over `path` by commit(), after an fsync: a
// crash or an error part way never leaves a half file under the name (checkpoints, models, converted
// data). The folders on the way are made. The temporary is removed when commit() is never reached.
// Errors are IOError naming the file.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace ctk {

class AtomicFile {
public:
    explicit AtomicFile(std::string path);
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const std::string& bytes);
    int64_t size() const { return size_; }  // bytes written so far
    void commit();

private:
    std::string path_, tmp_;
    FILE* f_ = nullptr;
    int64_t size_ = 0;
    bool committed_ = false;
};

}  // namespace ctk
