// oneDNN engine, per-thread streams, tensor-to-memory adapters, scratch buffers and cache keys.
#include "kernels/cpu/onednn_common.h"

#include <omp.h>

#include <array>
#include <cstdlib>

#include "ctk/core/error.h"

namespace ctk::cpu::onednn {

dnnl::engine& engine() {
    static dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}

dnnl::stream& stream() {
    thread_local dnnl::stream s(engine());
    return s;
}

bool has_native_bf16() {
    // cpu_isa values are bit masks in which each ISA contains the bits of those it extends.
    static const bool native = [] {
        const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
        return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
    }();
    return native;
}

dnnl::memory::data_type data_type(DataType dtype) {
    switch (dtype) {
        case DataType::f32:
            return dnnl::memory::data_type::f32;
        case DataType::f16:
            return dnnl::memory::data_type::f16;
        case DataType::bf16:
            return dnnl::memory::data_type::bf16;
        case DataType::i32:
            return dnnl::memory::data_type::s32;
        case DataType::u8:
            return dnnl::memory::data_type::u8;
        default:
            CTK_THROW(TypeError, "oneDNN has no ", dtype_name(dtype), " data type");
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

dnnl::memory memory_of(const Tensor& t) {
    return dnnl::memory(desc_of(t), engine(), t.raw_data());
}
dnnl::memory::desc channels_last_desc(const Shape& shape, DataType dtype) {
    const Dims strides = channels_last_strides(shape);
    return dnnl::memory::desc(dnnl::memory::dims(shape.dims().begin(), shape.dims().end()), data_type(dtype),
                              dnnl::memory::dims(strides.begin(), strides.end()));
}

Tensor dense(const Tensor& t) {
    return t.is_contiguous() || is_channels_last(t) ? t : t.contiguous();
}

bool in_layout(const Tensor& t, bool channels_last) {
    if (!channels_last) return t.is_contiguous();
    if (t.rank() < 3) return false;
    const Dims want = channels_last_strides(t.shape());
    for (int i = 0; i < t.rank(); ++i)
        if (t.dim(i) != 1 && t.strides()[static_cast<size_t>(i)] != want[static_cast<size_t>(i)])
            return false;
    return true;
}

Tensor output_in_layout(const Tensor& out, bool channels_last) {
    if (in_layout(out, channels_last)) return out;
    return channels_last ? empty_channels_last(out.shape(), out.dtype(), out.device())
                         : Tensor::empty(out.shape(), out.dtype(), out.device());
}

Tensor as_channels_last(const Tensor& t) {
    if (is_channels_last(t)) return t;
    Tensor converted = empty_channels_last(t.shape(), t.dtype(), t.device());
    converted.copy_from(t);
    return converted;
}

dnnl::memory memory_of(const Tensor& t, const dnnl::memory::desc& desc) {
    return dnnl::memory(desc, engine(), t.raw_data());
}

void rethrow(const char* op, const dnnl::error& e) {
    CTK_THROW(Error, op, ": oneDNN failed: ", e.what(), " (status ", static_cast<int>(e.status), ")");
}

namespace {

struct ScratchBuffer {
    void* data = nullptr;
    size_t bytes = 0;
    ScratchBuffer() = default;
    ScratchBuffer(const ScratchBuffer&) = delete;
    ScratchBuffer& operator=(const ScratchBuffer&) = delete;
    ~ScratchBuffer() { std::free(data); }
};

}  // namespace

void* scratch(int slot, size_t bytes) {
    thread_local std::array<ScratchBuffer, kScratchSlots> buffers;
    CTK_CHECK(slot >= 0 && slot < kScratchSlots, ValueError, "onednn::scratch: slot ", slot, " out of range");
    ScratchBuffer& b = buffers[static_cast<size_t>(slot)];
    if (bytes > b.bytes) {
        // 64-byte alignment suits every oneDNN layout (a cache line, one AVX-512 register); whole pages
        // keep the allocator from splitting them.
        constexpr size_t kPage = 4096;
        size_t rounded = (bytes + kPage - 1) / kPage * kPage;
        void* p = std::aligned_alloc(64, rounded);
        CTK_CHECK(p != nullptr, OutOfMemoryError, "oneDNN scratch buffer of ", rounded,
                  " bytes could not be allocated");
        std::free(b.data);
        b.data = p;
        b.bytes = rounded;
    }
    return b.data;
}

dnnl::primitive_attr user_scratchpad_attr() {
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    return attr;
}

void add_scratchpad(std::unordered_map<int, dnnl::memory>& args, const dnnl::memory::desc& md, int slot) {
    size_t bytes = md.get_size();
    if (bytes == 0) return;
    args.insert({DNNL_ARG_SCRATCHPAD, dnnl::memory(md, engine(), scratch(slot, bytes))});
}

size_t CacheKeyHash::operator()(const CacheKey& key) const noexcept {
    // FNV-1a over the 64-bit words: cheap, and keys are short.
    uint64_t h = 1469598103934665603ull;
    for (int64_t v : key) {
        h ^= static_cast<uint64_t>(v);
        h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
}

CacheKey base_key(int64_t family, DataType dtype) {
    return {family, static_cast<int64_t>(dtype), static_cast<int64_t>(omp_get_max_threads())};
}

void append(CacheKey& key, const Dims& values) {
    key.push_back(static_cast<int64_t>(values.size()));  // keeps [1, 2] + [3] apart from [1] + [2, 3]
    key.insert(key.end(), values.begin(), values.end());
}

}  // namespace ctk::cpu::onednn
