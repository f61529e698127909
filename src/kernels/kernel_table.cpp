// The kernel table and dispatch.
#include "ctk/kernel_table.h"
#include "ctk/parallel.h"

#include "ctk/cuda.h"

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

const KernelTable& kernel_table() {
    static const KernelTable table = [] {
        KernelTable t;
        detail::register_cpu_kernels(t);
#if CTK_HAVE_CUDA
        detail::register_cuda_kernels(t);
#endif
        return t;
    }();
    return table;
}

bool supports(OpKind op, Device device, DataType dtype) {
    return kernel_table().supports(op, device.type, dtype);
}

void dispatch(OpKind op, std::span<const Tensor> inputs, std::span<Tensor> outputs, const OpAttrs& attrs,
              DataType dispatch_dtype) {
    detail::ensure_float_mode();
    CTK_CHECK(!inputs.empty() && inputs[0].defined(), ValueError, op_name(op), ": missing first input");
    CTK_CHECK(attrs.index() == op_attrs_index(op), ValueError, op_name(op),
              ": attributes of the wrong kind were passed");
    Device device = inputs[0].device();
    for (size_t i = 1; i < inputs.size(); ++i) {
        if (!inputs[i].defined()) continue;
        CTK_CHECK(inputs[i].device() == device, DeviceError, op_name(op), ": input ", i, " is on ",
                  inputs[i].device().to_string(), " but input 0 is on ", device.to_string());
    }
    KernelFn fn = kernel_table().find(op, device.type, dispatch_dtype);
    CTK_CHECK(fn != nullptr, NotImplementedError, op_name(op), ": no ", device.to_string(),
              " kernel for dtype ", dtype_name(dispatch_dtype));
    for (const Tensor& out : outputs)
        CTK_CHECK(!out.defined() || out.device() == device, DeviceError, op_name(op), ": an output is on ",
                  out.device().to_string(), " but the inputs are on ", device.to_string());
    KernelContext ctx{device, device.is_cuda() ? cuda::stream(device) : nullptr};
    fn(KernelCall{op, inputs, outputs, attrs, ctx});
}

}  // namespace ctk
