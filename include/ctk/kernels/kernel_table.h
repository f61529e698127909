// Backends are a kernel table plus supports(op, device, dtype): a backend registers what it has, and
// dispatch reports a clear NotImplementedError for what it lacks. Registration is explicit (no static
// initializers): the table is built on first use by calling each built backend's register function.
#pragma once

#include <array>
#include <span>

#include "ctk/core/device.h"
#include "ctk/core/tensor.h"
#include "ctk/kernels/kernel_op_list.h"

namespace ctk {

// Per-call execution state. The CUDA backend passes its stream here; the CPU backend ignores it.
struct KernelContext {
    Device device;
    void* stream = nullptr;
};

// One kernel invocation. Outputs are allocated by the op's API function from its shape rule, except
// outputs whose layout only the backend knows (a pooling workspace), which the kernel allocates when
// they arrive undefined.
struct KernelCall {
    OpKind op;
    std::span<const Tensor> inputs;
    std::span<Tensor> outputs;
    const OpAttrs& attrs;
    const KernelContext& ctx;

    template <typename A>
    const A& attr() const {
        return std::get<A>(attrs);
    }
};

using KernelFn = void (*)(const KernelCall&);

class KernelTable {
public:
    void add(OpKind op, DeviceType device, DataType dtype, KernelFn fn);
    KernelFn find(OpKind op, DeviceType device, DataType dtype) const;
    bool supports(OpKind op, DeviceType device, DataType dtype) const {
        return find(op, device, dtype) != nullptr;
    }

private:
    std::array<KernelFn, static_cast<size_t>(kNumOps) * kNumDeviceTypes * kNumDataTypes> fns_{};
    static size_t index(OpKind op, DeviceType device, DataType dtype);
};

// The process's kernel table, built on first use.
const KernelTable& kernel_table();
bool supports(OpKind op, Device device, DataType dtype);

// Runs `op` on the device of inputs[0], choosing the kernel by `dispatch_dtype` (normally the first
// input's dtype). Checks that all inputs share a device and that the attrs match the op's schema.
void dispatch(OpKind op, std::span<const Tensor> inputs, std::span<Tensor> outputs, const OpAttrs& attrs,
              DataType dispatch_dtype);
inline void dispatch(OpKind op, std::span<const Tensor> inputs, std::span<Tensor> outputs,
                     const OpAttrs& attrs) {
    dispatch(op, inputs, outputs, attrs, inputs[0].dtype());
}

namespace detail {
void register_cpu_kernels(KernelTable& table);   // src/kernels/cpu/register.cpp
void register_cuda_kernels(KernelTable& table);  // src/kernels/cuda/register.cpp (CUDA builds only)
}  // namespace detail

}  // namespace ctk
