// Members of zip files, read with libzip (CNTK's ImageDeserializer read "archive.zip@/member" paths the
// same way). One archive handle per file, shared by the reader threads under a lock (libzip handles are
// not thread-safe); only the read is locked, the decode runs outside.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ctk::detail {

class ZipArchives {
public:
    ZipArchives();
    ~ZipArchives();
    ZipArchives(const ZipArchives&) = delete;
    ZipArchives& operator=(const ZipArchives&) = delete;

    // The bytes of `member` of the zip file `archive`; IOError naming both when either is missing or
    // the member is corrupt.
    std::vector<uint8_t> read(const std::string& archive, const std::string& member);

private:
    struct Archive;
    std::mutex mutex_;
    std::map<std::string, std::unique_ptr<Archive>> open_;
};

}  // namespace ctk::detail
