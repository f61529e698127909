// A library ctk opens with dlopen when first needed instead of linking it (cuBLASLt, cuDNN, NCCL): ctk's
// own libraries then load on machines without it, and only its first use (on a GPU) asks for it.
#pragma once
#include <string>

namespace ctk {

class SharedLibrary {
public:
    // Opens `soname` on the loader's path, for the rest of the process. Throws DeviceError
    // "<who>: cannot load <soname> (<hint>): <the loader's reason>" when it is missing.
    SharedLibrary(std::string soname, std::string who, const std::string& hint);

    // Points `fn` at the library's entry point `name` (`fn`'s type is the declared one, e.g.
    // decltype(&cudnnCreate)). Throws DeviceError "<who>: <soname> has no <name>" when it lacks it.
    template <typename Fn>
    void bind(Fn& fn, const char* name) const {
        fn = reinterpret_cast<Fn>(address(name));
    }

private:
    void* address(const char* name) const;
    void* handle_ = nullptr;
    std::string soname_, who_;
};

}  // namespace ctk
