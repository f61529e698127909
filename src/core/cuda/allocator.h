// Internal: the caching allocator of each GPU (the public face is allocator_for(Device::cuda(n))).
#pragma once

#include "ctk/storage.h"

namespace ctk::cuda::detail {

Allocator& device_allocator(int device);

}  // namespace ctk::cuda::detail
