// The process's kernel table, built on first use from every backend this build has, and dispatch.
#include "ctk/core/cuda.h"
#include "ctk/core/parallel.h"
#include "ctk/kernels/kernel_table.h"

namespace ctk {

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
