// SharedLibrary: dlopen and dlsym with errors that name the library and who needed it.
#include "ctk/core/shared_library.h"

#include <dlfcn.h>

#include "ctk/core/error.h"

namespace ctk {

SharedLibrary::SharedLibrary(std::string soname, std::string who, const std::string& hint)
    : soname_(std::move(soname)), who_(std::move(who)) {
    handle_ = dlopen(soname_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle_ == nullptr) {
        const char* reason = dlerror();
        CTK_THROW(DeviceError, who_, ": cannot load ", soname_, " (", hint,
                  "): ", reason ? reason : "unknown reason");
    }
}

void* SharedLibrary::address(const char* name) const {
    void* p = dlsym(handle_, name);
    CTK_CHECK(p != nullptr, DeviceError, who_, ": ", soname_, " has no ", name);
    return p;
}

}  // namespace ctk
