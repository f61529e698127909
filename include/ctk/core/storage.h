// Storage: a reference-counted block of device memory, and the allocators that provide it.
// The CPU allocator aligns to 64 bytes (a cache line, and what AVX-512 and oneDNN prefer), keeps
// statistics, and caches freed blocks of every size for reuse (bounded by a limit); the CUDA caching
// allocator implements the same interface.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "ctk/core/device.h"

namespace ctk {

struct AllocatorStats {
    int64_t bytes_in_use = 0;       // currently allocated by callers
    int64_t peak_bytes_in_use = 0;  // high-water mark since the last reset_peak()
    int64_t bytes_cached = 0;       // held by the allocator but free (caching allocators only)
    int64_t num_allocations = 0;    // calls to allocate() since start
    int64_t num_frees = 0;
    int64_t num_cache_hits = 0;  // allocations served from the cache (caching allocators only)
    int64_t bytes_reserved = 0;  // taken from the device (in use, rounding and cache; GPU allocator only)
    // Free but kept for captured CUDA Graphs (cuda::Graph), whose recorded kernels use these addresses
    // (part of bytes_reserved, not of bytes_cached; GPU allocator only).
    int64_t bytes_in_graph_pools = 0;
};

class Allocator {
public:
    virtual ~Allocator() = default;
    virtual void* allocate(size_t bytes) = 0;  // throws OutOfMemoryError
    virtual void deallocate(void* ptr, size_t bytes) = 0;
    virtual AllocatorStats stats() const = 0;
    virtual void reset_peak() = 0;
    virtual Device device() const = 0;
    // Caching: frees every cached block; the most bytes kept cached (0 turns caching off and empties
    // the cache). An allocator without a cache ignores these.
    virtual void empty_cache() {}
    virtual void set_cache_limit(size_t /*bytes*/) {}
    virtual size_t cache_limit() const { return 0; }
};

inline constexpr size_t kCpuAlignment = 64;

// The process's CPU allocator (thread-safe). Its cache limit defaults to 2 GiB, or CTK_CPU_CACHE_MB
// mebibytes from the environment, or 0 in AddressSanitizer builds (so that use after free is caught).
// A request that fails empties the cache and tries once more before it throws OutOfMemoryError.
Allocator& cpu_allocator();
// The allocator for a device; throws DeviceError for a device this build cannot reach.
Allocator& allocator_for(Device device);

class Storage {
public:
    // Allocates `bytes` on `device`.
    Storage(size_t bytes, Device device);
    // Wraps memory owned elsewhere; `keep_alive` holds the owner (may be null for static data).
    Storage(void* data, size_t bytes, Device device, std::shared_ptr<void> keep_alive);
    ~Storage();
    Storage(const Storage&) = delete;
    Storage& operator=(const Storage&) = delete;

    void* data() const { return data_; }
    size_t bytes() const { return bytes_; }
    Device device() const { return device_; }
    // The owner of wrapped memory (null for allocated storage).
    const std::shared_ptr<void>& keep_alive() const { return keep_alive_; }

private:
    void* data_ = nullptr;
    size_t bytes_ = 0;
    Device device_;
    Allocator* allocator_ = nullptr;  // null when the memory is owned elsewhere
    std::shared_ptr<void> keep_alive_;
};

}  // namespace ctk
