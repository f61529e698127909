// The KernelTable type the backends fill (ctk_kernel_registry); the process's table and dispatch are in
// dispatch.cpp, above the backends.
#include "ctk/kernels/kernel_table.h"

namespace ctk {

size_t KernelTable::index(OpKind op, DeviceType device, DataType dtype) {
    return (static_cast<size_t>(op) * kNumDeviceTypes + static_cast<size_t>(device)) * kNumDataTypes +
           static_cast<size_t>(dtype);
}

void KernelTable::add(OpKind op, DeviceType device, DataType dtype, KernelFn fn) {
    fns_[index(op, device, dtype)] = fn;
}

KernelFn KernelTable::find(OpKind op, DeviceType device, DataType dtype) const {
    return fns_[index(op, device, dtype)];
}

}  // namespace ctk
