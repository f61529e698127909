// Storage, and the choice of allocator per device (the CPU allocator is in cpu_allocator.cpp).
#include "ctk/core/storage.h"

#include "core/memory_plan_hook.h"
#include "ctk/core/error.h"

#if CTK_HAVE_CUDA
#include "core/cuda/allocator.h"
#endif

namespace ctk {

Allocator& allocator_for(Device device) {
    if (device.is_cpu()) return cpu_allocator();
#if CTK_HAVE_CUDA
    return cuda::detail::device_allocator(device.index);
#endif
    CTK_THROW(DeviceError, "device ", device.to_string(), " is not available in this build of ctk");
}

Storage::Storage(size_t bytes, Device device) : bytes_(bytes), device_(device) {
    if (detail::serve_from_memory_plan(bytes, device, &data_, &keep_alive_)) return;  // memory_plan.h
    allocator_ = &allocator_for(device);
    data_ = allocator_->allocate(bytes);
}

Storage::Storage(void* data, size_t bytes, Device device, std::shared_ptr<void> keep_alive)
    : data_(data), bytes_(bytes), device_(device), keep_alive_(std::move(keep_alive)) {}

Storage::~Storage() {
    if (allocator_) allocator_->deallocate(data_, bytes_);
}

}  // namespace ctk
