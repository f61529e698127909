// The caching GPU allocator. cudaMalloc and cudaFree are slow and cudaFree synchronizes the device, so
// freed blocks are kept and handed out again. All ctk work on a device is ordered on that device's one
// ctk stream (ctk/core/cuda.h), so a block freed by the host can be reused by the next kernel at once: the
// stream runs the old reader before the new writer. Code that uses other streams must synchronize
// before it frees. A CUDA Graph capture gets a pool of its own (allocator.h), since a replay writes the
// recorded addresses again long after the capture's frees.
#include <algorithm>
#include <bit>
#include <memory>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include <cuda_runtime.h>

#include "core/cuda/allocator.h"
#include "core/cuda/cuda_check.h"
#include "ctk/core/cuda.h"
#include "ctk/core/error.h"

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

thread_local bool t_outside_capture_pool = false;

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
        CapturePool* pool = capturing_pool();
        void* p = pool ? take(pool->free_blocks, rounded, &stats_.bytes_in_graph_pools) : nullptr;
        // A cached block may join a capture's pool: the eager work that used it was queued on this
        // device's one stream before the capture, so it runs before any replay.
        if (!p) p = take(free_blocks_, rounded, &stats_.bytes_cached);
        if (!p) {
            p = device_malloc(rounded, bytes, this_thread_captures());
            stats_.bytes_reserved += static_cast<int64_t>(rounded);
        } else {
            ++stats_.num_cache_hits;
        }
        if (pool) pool_of_[p] = pool->id;
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
        // The live graph pool the block came from, if any (0: an ordinary block).
        int origin = 0;
        if (auto it = pool_of_.empty() ? pool_of_.end() : pool_of_.find(ptr); it != pool_of_.end()) {
            if (pools_.count(it->second))
                origin = it->second;
            else
                pool_of_.erase(it);  // its graph is gone: an ordinary block now
        }
        CapturePool* capturing = capturing_pool();
        if (origin != 0 && (!capturing || capturing->id == origin)) {  // back to its graph's pool
            pools_.at(origin).free_blocks[rounded].push_back(ptr);
            stats_.bytes_in_graph_pools += static_cast<int64_t>(rounded);
            return;
        }
        if (capturing) {
            // Not the capture's own block, freed during it: the recorded kernels may read it at every
            // replay, so it is held until this graph goes (then back to its own graph's pool, if that one
            // still lives: its kernels use it too).
            capturing->held.push_back({ptr, rounded, origin});
            stats_.bytes_in_graph_pools += static_cast<int64_t>(rounded);
            return;
        }
        cache(ptr, rounded);
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

    int open_pool() {
        std::lock_guard<std::mutex> lock(mutex_);
        CTK_CHECK(capturing_ == 0, DeviceError, "CUDA:", device_,
                  ": a CUDA Graph capture is already recording on this device");
        const int id = next_pool_id_++;
        pools_[id].id = id;
        capturing_ = id;
        capture_thread_ = std::this_thread::get_id();
        return id;
    }
    void close_pool(int id) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (capturing_ == id) capturing_ = 0;
    }
    void release_pool(int id) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (capturing_ == id) capturing_ = 0;
        auto it = pools_.find(id);
        if (it == pools_.end()) return;
        CapturePool pool = std::move(it->second);
        pools_.erase(it);
        for (auto& [size, blocks] : pool.free_blocks)
            for (void* p : blocks) {
                pool_of_.erase(p);
                stats_.bytes_in_graph_pools -= static_cast<int64_t>(size);
                cache(p, size);
            }
        for (const HeldBlock& h : pool.held) {
            if (h.origin != 0 && pools_.count(h.origin)) {
                pools_.at(h.origin).free_blocks[h.size].push_back(h.ptr);
                continue;
            }
            pool_of_.erase(h.ptr);
            stats_.bytes_in_graph_pools -= static_cast<int64_t>(h.size);
            cache(h.ptr, h.size);
        }
    }

private:
    struct HeldBlock {
        void* ptr;
        size_t size;
        int origin;  // the live graph pool it came from, 0 for an ordinary block
    };
    struct CapturePool {
        int id = 0;
        std::unordered_map<size_t, std::vector<void*>> free_blocks;  // the pool's own, free
        std::vector<HeldBlock> held;                                 // others freed during the capture
    };

    // The pool the calling thread is capturing into, if any.
    CapturePool* capturing_pool() {
        if (capturing_ == 0 || std::this_thread::get_id() != capture_thread_ || t_outside_capture_pool)
            return nullptr;
        return &pools_.at(capturing_);
    }

    void* take(std::unordered_map<size_t, std::vector<void*>>& blocks, size_t rounded, int64_t* counter) {
        auto it = blocks.find(rounded);
        if (it == blocks.end() || it->second.empty()) return nullptr;
        void* p = it->second.back();
        it->second.pop_back();
        *counter -= static_cast<int64_t>(rounded);
        return p;
    }

    void cache(void* p, size_t rounded) {
        if (static_cast<size_t>(stats_.bytes_cached) + rounded <= cache_limit_) {
            free_blocks_[rounded].push_back(p);
            stats_.bytes_cached += static_cast<int64_t>(rounded);
        } else {
            free_block(p, rounded);
        }
    }

    void* device_malloc(size_t rounded, size_t bytes, bool capturing) {
        set_device(device_);
        // cudaMalloc is not stream work: during a capture it is allowed (relaxed mode) and not recorded.
        cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        if (capturing) cudaThreadExchangeStreamCaptureMode(&mode);
        void* p = nullptr;
        bool ok = cudaMalloc(&p, rounded) == cudaSuccess;
        if (!ok) {
            cudaGetLastError();
            // Giving the cache back frees with cudaFree, which waits for the device: not during a capture
            // (the capture then fails with the out-of-memory error, and the eager path retries it).
            if (!capturing) {
                release_cache();
                ok = cudaMalloc(&p, rounded) == cudaSuccess;
                if (!ok) cudaGetLastError();
            }
        }
        if (capturing) cudaThreadExchangeStreamCaptureMode(&mode);  // back to the capture's mode
        if (ok) return p;
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        cudaGetLastError();
        CTK_THROW(
            OutOfMemoryError, "CUDA out of memory on CUDA:", device_, ": tried to allocate ",
            mib(static_cast<int64_t>(bytes)), "; ctk has ", mib(stats_.bytes_in_use), " in use and ",
            mib(stats_.bytes_cached), " cached (already given back)",
            stats_.bytes_in_graph_pools ? " and " + mib(stats_.bytes_in_graph_pools) + " kept for CUDA Graphs"
                                        : std::string(),
            "; the GPU has ", mib(static_cast<int64_t>(free_b)), " free of ",
            mib(static_cast<int64_t>(total_b)), ". Use a smaller minibatch, or free tensors held elsewhere.");
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
    // CUDA Graph capture pools: block -> pool for the pools' own blocks; capturing_ is the pool that
    // capture_thread_ records into (0: none).
    std::unordered_map<int, CapturePool> pools_;
    std::unordered_map<void*, int> pool_of_;
    int capturing_ = 0;
    int next_pool_id_ = 1;
    std::thread::id capture_thread_;
};

CudaCachingAllocator& caching_allocator(int device) {
    return static_cast<CudaCachingAllocator&>(device_allocator(device));
}

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

OutsideCapturePool::OutsideCapturePool() : previous_(t_outside_capture_pool) {
    t_outside_capture_pool = true;
}
OutsideCapturePool::~OutsideCapturePool() {
    t_outside_capture_pool = previous_;
}

int open_capture_pool(int device) {
    return caching_allocator(device).open_pool();
}
void close_capture_pool(int device, int pool) {
    caching_allocator(device).close_pool(pool);
}
void release_capture_pool(int device, int pool) {
    caching_allocator(device).release_pool(pool);
}

}  // namespace ctk::cuda::detail
