// The caching GPU allocator. cudaMalloc and cudaFree are slow and cudaFree synchronizes the device, so
// freed blocks are kept and handed out again. All ctk work on a device is ordered on that device's one
// ctk stream (ctk/cuda.h), so a block freed by the host can be reused by the next kernel at once: the
// stream runs the old reader before the new writer. Code that uses other streams must synchronize
// before it frees.
#include <algorithm>
#include <bit>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/cuda/allocator.h"
#include "core/cuda/cuda_check.h"
#include "ctk/cuda.h"
#include "ctk/error.h"

namespace ctk::cuda::detail {

namespace {

// Requests round up so that a freed block serves later requests of its class exactly: small ones to
// 512 bytes (cudaMalloc's own granularity), large ones to 8 classes per power of two (<= 12.5 % over).
size_t size_class(size_t bytes) {
    constexpr size_t kSmall = size_t(1) << 20;
    if (bytes == 0) return 512;
    if (bytes < kSmall) return (bytes + 511) / 512 * 512;
    size_t step = std::bit_floor(bytes) / 8;
    return (bytes + step - 1) / step * step;
}

std::string mib(int64_t bytes) {
    return std::to_string(bytes / (1 << 20)) + "." + std::to_string((bytes % (1 << 20)) * 10 / (1 << 20)) +
           " MiB";
}

class CudaCachingAllocator final : public Allocator {
public:
    explicit CudaCachingAllocator(int device) : device_(device) {}

    void* allocate(size_t bytes) override {
        size_t rounded = size_class(bytes);
        CTK_CHECK(rounded >= bytes, OutOfMemoryError, "CUDA:", device_, ": cannot allocate ", bytes,
                  " bytes");
        std::lock_guard<std::mutex> lock(mutex_);
        void* p = take_cached(rounded);
        if (!p) {
            set_device(device_);
            if (cudaMalloc(&p, rounded) != cudaSuccess) {
                cudaGetLastError();
                release_cache();
                if (cudaMalloc(&p, rounded) != cudaSuccess) {
                    cudaGetLastError();
                    size_t free_b = 0, total_b = 0;
                    cudaMemGetInfo(&free_b, &total_b);
                    cudaGetLastError();
                    CTK_THROW(OutOfMemoryError, "CUDA out of memory on CUDA:", device_,
                              ": tried to allocate ", mib(static_cast<int64_t>(bytes)), "; ctk has ",
                              mib(stats_.bytes_in_use), " in use and ", mib(stats_.bytes_cached),
                              " cached (already given back); the GPU has ", mib(static_cast<int64_t>(free_b)),
                              " free of ", mib(static_cast<int64_t>(total_b)),
                              ". Use a smaller minibatch, or free tensors held elsewhere.");
                }
            }
            stats_.bytes_reserved += static_cast<int64_t>(rounded);
        }
        stats_.bytes_in_use += static_cast<int64_t>(bytes);
        stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
        ++stats_.num_allocations;
        return p;
    }

    void deallocate(void* ptr, size_t bytes) override {
        size_t rounded = size_class(bytes);
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.bytes_in_use -= static_cast<int64_t>(bytes);
        ++stats_.num_frees;
        if (static_cast<size_t>(stats_.bytes_cached) + rounded <= cache_limit_) {
            free_blocks_[rounded].push_back(ptr);
            stats_.bytes_cached += static_cast<int64_t>(rounded);
        } else {
            free_block(ptr, rounded);
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
    Device device() const override { return Device::cuda(device_); }

    void empty_cache() override {
        std::lock_guard<std::mutex> lock(mutex_);
        release_cache();
    }
    void set_cache_limit(size_t bytes) override {
        std::lock_guard<std::mutex> lock(mutex_);
        cache_limit_ = bytes;
        if (static_cast<size_t>(stats_.bytes_cached) > cache_limit_) release_cache();
    }
    size_t cache_limit() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        return cache_limit_;
    }

private:
    void* take_cached(size_t rounded) {
        auto it = free_blocks_.find(rounded);
        if (it == free_blocks_.end() || it->second.empty()) return nullptr;
        void* p = it->second.back();
        it->second.pop_back();
        stats_.bytes_cached -= static_cast<int64_t>(rounded);
        ++stats_.num_cache_hits;
        return p;
    }

    // cudaFree waits for the device, which is what makes giving memory back safe here.
    void release_cache() {
        for (auto& [size, blocks] : free_blocks_)
            for (void* p : blocks) free_block(p, size);
        free_blocks_.clear();
        stats_.bytes_cached = 0;
    }

    void free_block(void* p, size_t rounded) {
        set_device(device_);
        cudaFree(p);
        cudaGetLastError();
        stats_.bytes_reserved -= static_cast<int64_t>(rounded);
    }

    const int device_;
    mutable std::mutex mutex_;
    std::unordered_map<size_t, std::vector<void*>> free_blocks_;
    AllocatorStats stats_;
    size_t cache_limit_ = SIZE_MAX;  // like cudaMalloc-based frameworks: keep everything until asked
};

}  // namespace

Allocator& device_allocator(int device) {
    check_device(Device::cuda(device));
    static std::once_flag once;
    // Never destroyed: tensors freed during static destruction still find their allocator, and nothing
    // calls into the CUDA runtime after it has shut down.
    static std::vector<CudaCachingAllocator*>* allocators = nullptr;
    std::call_once(once, [] {
        allocators = new std::vector<CudaCachingAllocator*>();
        for (int i = 0; i < device_count(); ++i) allocators->push_back(new CudaCachingAllocator(i));
    });
    return *(*allocators)[static_cast<size_t>(device)];
}

}  // namespace ctk::cuda::detail
