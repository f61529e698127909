#include "io/zip_archive.h"

#include <zip.h>

#include "ctk/core/error.h"

namespace ctk::detail {

struct ZipArchives::Archive {
    zip_t* handle = nullptr;
    std::mutex mutex;
    ~Archive() {
        if (handle) zip_discard(handle);
    }
};

ZipArchives::ZipArchives() = default;
ZipArchives::~ZipArchives() = default;

std::vector<uint8_t> ZipArchives::read(const std::string& archive, const std::string& member) {
    Archive* a = nullptr;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = open_.find(archive);
        if (it == open_.end()) {
            int error = 0;
            zip_t* z = zip_open(archive.c_str(), ZIP_RDONLY, &error);
            if (!z) {
                zip_error_t e;
                zip_error_init_with_code(&e, error);
                const std::string why = zip_error_strerror(&e);
                zip_error_fini(&e);
                CTK_THROW(IOError, "cannot open zip file '", archive, "': ", why);
            }
            it = open_.emplace(archive, std::make_unique<Archive>()).first;
            it->second->handle = z;
        }
        a = it->second.get();
    }
    std::lock_guard<std::mutex> lock(a->mutex);
    zip_stat_t st;
    zip_stat_init(&st);
    CTK_CHECK(zip_stat(a->handle, member.c_str(), 0, &st) == 0 && (st.valid & ZIP_STAT_SIZE), IOError,
              "zip file '", archive, "' has no member '", member, "'");
    zip_file_t* f = zip_fopen(a->handle, member.c_str(), 0);
    CTK_CHECK(f != nullptr, IOError, "cannot read member '", member, "' of zip file '", archive,
              "': ", zip_strerror(a->handle));
    std::vector<uint8_t> bytes(static_cast<size_t>(st.size));
    const zip_int64_t n = bytes.empty() ? 0 : zip_fread(f, bytes.data(), bytes.size());
    const std::string why = n < 0 ? zip_file_strerror(f) : "";
    zip_fclose(f);
    CTK_CHECK(n == static_cast<zip_int64_t>(bytes.size()), IOError, "member '", member, "' of zip file '",
              archive, "' is corrupt", why.empty() ? "" : ": ", why);
    return bytes;
}

}  // namespace ctk::detail
