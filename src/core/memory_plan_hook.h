// Internal to the core: how Storage asks the memory plan whose Scope serves this thread for a block.
#pragma once

#include <cstddef>
#include <memory>

#include "ctk/core/device.h"

namespace ctk::detail {

// False when no plan serves this thread. Else true with `data` set and `keep_alive` owning it (its
// destructor gives the block back to the plan's arena or to the allocator).
bool serve_from_memory_plan(size_t bytes, Device device, void** data, std::shared_ptr<void>* keep_alive);

}  // namespace ctk::detail
