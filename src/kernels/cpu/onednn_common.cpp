// oneDNN engine, per-thread streams and tensor-to-memory adapters.
#include "kernels/cpu/onednn_common.h"

#include "ctk/error.h"

namespace ctk::cpu::onednn {

dnnl::engine& engine() {
    static dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}

dnnl::stream& stream() {
    thread_local dnnl::stream s(engine());
    return s;
}

dnnl::memory::data_type data_type(DataType dtype) {
    switch (dtype) {
        case DataType::f32: return dnnl::memory::data_type::f32;
        case DataType::f16: return dnnl::memory::data_type::f16;
        case DataType::bf16: return dnnl::memory::data_type::bf16;
        case DataType::i32: return dnnl::memory::data_type::s32;
        case DataType::u8: return dnnl::memory::data_type::u8;
        default: CTK_THROW(TypeError, "oneDNN has no ", dtype_name(dtype), " data type");
    }
}

dnnl::memory::desc desc_of(const Tensor& t) {
    dnnl::memory::dims dims(t.shape().dims().begin(), t.shape().dims().end());
    dnnl::memory::dims strides(t.strides().begin(), t.strides().end());
    if (dims.empty()) {  // oneDNN has no rank-0 descriptors
        dims = {1};
        strides = {1};
    }
    return dnnl::memory::desc(dims, data_type(t.dtype()), strides);
}

dnnl::memory memory_of(const Tensor& t) { return dnnl::memory(desc_of(t), engine(), t.raw_data()); }
dnnl::memory memory_of(const Tensor& t, const dnnl::memory::desc& desc) {
    return dnnl::memory(desc, engine(), t.raw_data());
}

void rethrow(const char* op, const dnnl::error& e) {
    CTK_THROW(Error, op, ": oneDNN failed: ", e.what(), " (status ", static_cast<int>(e.status), ")");
}

}  // namespace ctk::cpu::onednn
