// The CPU allocator: 64-byte aligned blocks with statistics, and a bounded cache of freed blocks.
// Why a cache: glibc hands large freed blocks back to the kernel (munmap, or a heap trim), so a training
// step that frees and reallocates the same activations pays a page fault per 4 KiB every step (~2 us
// each here: a third of a ResNet convolution's time). Keeping freed blocks for reuse removes that, as
// the CUDA caching allocator does for cudaMalloc.
#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctk/core/error.h"
#include "ctk/core/storage.h"

namespace ctk {

namespace {

// Requests of this size and more round up to one of 8 classes per power of two (at most 12.5 % more
// than asked), so a freed block serves every later request of its class exactly; smaller ones are
// kept by their exact size in whole cache lines. Every size is cached: with the executor releasing
// values by liveness, a steady training step then takes all its tensors from the cache and asks the
// system for nothing (glibc also trims freed heap tops above 128 KiB back to the kernel, which cost the
// MLP benchmark ~100 page faults a step before large blocks were cached).
constexpr size_t kSizeClassMinBytes = size_t(4) << 10;

size_t size_class(size_t bytes) {
    size_t step = std::bit_floor(bytes) / 8;
    return (bytes + step - 1) / step * step;
}

size_t default_cache_limit() {
#if defined(__SANITIZE_ADDRESS__)
    return 0;  // every free goes back to ASan, which then catches use after free
#else
    if (const char* env = std::getenv("CTK_CPU_CACHE_MB")) {
        char* end = nullptr;
        unsigned long long mb = std::strtoull(env, &end, 10);
        if (end != env && *end == '\0') return static_cast<size_t>(mb) << 20;
        std::fprintf(stderr, "ctk: ignoring CTK_CPU_CACHE_MB=\"%s\": not a whole number of mebibytes\n", env);
    }
    return size_t(2) << 30;
#endif
}

class CpuAllocator final : public Allocator {
public:
    void* allocate(size_t bytes) override {
        // Empty tensors get a real (one-line) block too, so kernels never do arithmetic on null.
        size_t rounded = block_bytes(bytes);
        void* p = nullptr;
        if (rounded >= bytes) {  // else the rounding overflowed: an absurd request
            p = take_cached(rounded);
            if (!p) p = std::aligned_alloc(kCpuAlignment, rounded);
            if (!p && empty_cache_if_any()) p = std::aligned_alloc(kCpuAlignment, rounded);
        }
        std::lock_guard<std::mutex> lock(mutex_);
        CTK_CHECK(p != nullptr, OutOfMemoryError, "CPU allocation of ", bytes, " bytes failed (",
                  stats_.bytes_in_use, " bytes in use by ctk, ", stats_.bytes_cached, " bytes cached)");
        stats_.bytes_in_use += static_cast<int64_t>(bytes);
        stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
        ++stats_.num_allocations;
        return p;
    }

    void deallocate(void* ptr, size_t bytes) override {
        size_t rounded = block_bytes(bytes);
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.bytes_in_use -= static_cast<int64_t>(bytes);
        ++stats_.num_frees;
        if (stats_.bytes_cached + static_cast<int64_t>(rounded) <= static_cast<int64_t>(cache_limit_)) {
            free_blocks_[rounded].push_back(ptr);
            stats_.bytes_cached += static_cast<int64_t>(rounded);
        } else {
            std::free(ptr);
        }
    }

    AllocatorStats stats() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        return stats_;
    }
    void reset_peak() override {
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.peak_bytes_in_use = stats_.bytes_in_use;
    }
    void empty_cache() override {
        std::lock_guard<std::mutex> lock(mutex_);
        release_cache();
    }
    void set_cache_limit(size_t bytes) override {
        std::lock_guard<std::mutex> lock(mutex_);
        cache_limit_ = bytes;
        if (static_cast<int64_t>(bytes) < stats_.bytes_cached) release_cache();
    }
    size_t cache_limit() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        return cache_limit_;
    }
    Device device() const override { return Device::cpu(); }

private:
    // The size of the block that serves a request of `bytes`: whole cache lines, at least one, and for
    // cached sizes the size class. May wrap around for absurd requests; allocate() checks.
    static size_t block_bytes(size_t bytes) {
        size_t lines = std::max<size_t>((bytes + kCpuAlignment - 1) / kCpuAlignment, 1) * kCpuAlignment;
        return lines >= kSizeClassMinBytes ? size_class(lines) : lines;
    }

    // A cached block of exactly `rounded` bytes, or null.
    void* take_cached(size_t rounded) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = free_blocks_.find(rounded);
        if (it == free_blocks_.end() || it->second.empty()) return nullptr;
        void* p = it->second.back();
        it->second.pop_back();
        stats_.bytes_cached -= static_cast<int64_t>(rounded);
        ++stats_.num_cache_hits;
        return p;
    }

    // Memory is short: give the cache back. True if there was anything to give.
    bool empty_cache_if_any() {
        std::lock_guard<std::mutex> lock(mutex_);
        bool any = stats_.bytes_cached > 0;
        release_cache();
        return any;
    }

    // Frees every cached block. Caller holds mutex_.
    void release_cache() {
        for (auto& [size, blocks] : free_blocks_) {
            for (void* p : blocks) std::free(p);
        }
        free_blocks_.clear();
        stats_.bytes_cached = 0;
    }

    mutable std::mutex mutex_;
    AllocatorStats stats_;
    size_t cache_limit_ = default_cache_limit();
    std::unordered_map<size_t, std::vector<void*>> free_blocks_;  // by block size
};

}  // namespace

Allocator& cpu_allocator() {
    // Never destroyed: tensors held in other static objects may be freed after main returns.
    static CpuAllocator* allocator = new CpuAllocator;
    return *allocator;
}

}  // namespace ctk
