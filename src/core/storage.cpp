// The aligned CPU allocator with statistics, and Storage.
#include "ctk/storage.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "ctk/error.h"

namespace ctk {

std::string Device::to_string() const {
    return type == DeviceType::cpu ? std::string("CPU") : "CUDA:" + std::to_string(index);
}

namespace {

class CpuAllocator final : public Allocator {
public:
    void* allocate(size_t bytes) override {
        // Empty tensors get a real (one-line) block too, so kernels never do arithmetic on null.
        size_t rounded = std::max<size_t>((bytes + kCpuAlignment - 1) / kCpuAlignment, 1) * kCpuAlignment;
        void* p = rounded >= bytes ? std::aligned_alloc(kCpuAlignment, rounded) : nullptr;  // >= : no overflow
        if (!p) {
            AllocatorStats s = stats();
            CTK_THROW(OutOfMemoryError, "CPU allocation of ", bytes, " bytes failed (", s.bytes_in_use,
                      " bytes in use by ctk)");
        }
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.bytes_in_use += static_cast<int64_t>(bytes);
        stats_.peak_bytes_in_use = std::max(stats_.peak_bytes_in_use, stats_.bytes_in_use);
        ++stats_.num_allocations;
        return p;
    }
    void deallocate(void* ptr, size_t bytes) override {
        std::free(ptr);
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.bytes_in_use -= static_cast<int64_t>(bytes);
        ++stats_.num_frees;
    }
    AllocatorStats stats() const override {
        std::lock_guard<std::mutex> lock(mutex_);
        return stats_;
    }
    void reset_peak() override {
        std::lock_guard<std::mutex> lock(mutex_);
        stats_.peak_bytes_in_use = stats_.bytes_in_use;
    }
    Device device() const override { return Device::cpu(); }

private:
    mutable std::mutex mutex_;
    AllocatorStats stats_;
};

}  // namespace

Allocator& cpu_allocator() {
    static CpuAllocator allocator;
    return allocator;
}

Allocator& allocator_for(Device device) {
    if (device.is_cpu()) return cpu_allocator();
    CTK_THROW(DeviceError, "device ", device.to_string(), " is not available in this build of ctk");
}

Storage::Storage(size_t bytes, Device device)
    : bytes_(bytes), device_(device), allocator_(&allocator_for(device)) {
    data_ = allocator_->allocate(bytes);
}

Storage::Storage(void* data, size_t bytes, Device device, std::shared_ptr<void> keep_alive)
    : data_(data), bytes_(bytes), device_(device), keep_alive_(std::move(keep_alive)) {}

Storage::~Storage() {
    if (allocator_) allocator_->deallocate(data_, bytes_);
}

}  // namespace ctk
