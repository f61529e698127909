// Internal: the oneDNN CPU engine and stream, memory descriptors built from ctk tensors (any strides,
// so views need no copy), a bounded cache for primitives, and per-thread scratch buffers.
// oneDNN runs on the shared OpenMP pool.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ctk/core/tensor.h"
#include "ctk/kernels/kernel_table.h"

namespace ctk::cpu::onednn {

dnnl::engine& engine();
// A stream for the calling thread (oneDNN CPU streams are cheap, but not thread-safe to share).
dnnl::stream& stream();

dnnl::memory::data_type data_type(DataType dtype);  // throws TypeError for types oneDNN lacks
// A descriptor with the tensor's own dims and strides.
dnnl::memory::desc desc_of(const Tensor& t);
// The channels-last descriptor of a shape (nwc, nhwc, ndhwc: ctk/core/tensor.h).
dnnl::memory::desc channels_last_desc(const Shape& shape, DataType dtype);
// An activation as the layout-aware kernels take it: itself when row-major or channels-last (no copy),
// else a row-major copy.
Tensor dense(const Tensor& t);
// `t` itself when channels-last, else a channels-last copy (an operand from a row-major op).
Tensor as_channels_last(const Tensor& t);
// True when t lies densely in the channels-last layout (channels_last) or row-major (!channels_last).
// A tensor with one channel or one pixel is both.
bool in_layout(const Tensor& t, bool channels_last);
// `out` itself when it lies in the layout, else a new tensor in it (for the kernel to write and then
// copy into `out`).
Tensor output_in_layout(const Tensor& out, bool channels_last);
// 1 for a channels-last tensor, 0 otherwise: part of a cached plan's key.
inline int64_t layout_code(const Tensor& t) {
    return is_channels_last(t) ? 1 : 0;
}
// A memory object over the tensor's data (no copy).
dnnl::memory memory_of(const Tensor& t);
dnnl::memory memory_of(const Tensor& t, const dnnl::memory::desc& desc);

// True when oneDNN has bf16 kernels on this CPU (it needs AVX-512; on AVX2 machines it has none).
bool has_native_bf16();

// A 16-bit kernel for CPUs where oneDNN has none (bf16 needs AVX-512, f16 AVX-512-FP16): runs the f32
// kernel on f32 copies of the bf16/f16 operands and rounds the results back, so 16-bit and
// mixed-precision models still run (more slowly) on such machines.
template <void (*F32Kernel)(const KernelCall&)>
void via_f32(const KernelCall& call) {
    auto is_16bit = [](const Tensor& t) {
        return t.defined() && (t.dtype() == DataType::bf16 || t.dtype() == DataType::f16);
    };
    std::vector<Tensor> ins, outs;
    for (const Tensor& t : call.inputs) ins.push_back(is_16bit(t) ? t.to(DataType::f32) : t);
    for (const Tensor& t : call.outputs)
        outs.push_back(is_16bit(t) ? Tensor::empty(t.shape(), DataType::f32) : t);
    F32Kernel(KernelCall{call.op, ins, outs, call.attrs, call.ctx});
    for (size_t i = 0; i < outs.size(); ++i) {
        if (!call.outputs[i].defined())
            call.outputs[i] = outs[i];  // allocated by the kernel (a pooling workspace)
        else if (!call.outputs[i].shares_storage(outs[i]))
            call.outputs[i].copy_from(outs[i]);
    }
}
// The kernel to register for bf16: `kernel` itself where oneDNN has bf16, else the f32 round trip.
template <void (*Kernel)(const KernelCall&)>
KernelFn bf16_kernel() {
    return has_native_bf16() ? Kernel : via_f32<Kernel>;
}

// Converts oneDNN's exceptions into ctk errors that name the op.
[[noreturn]] void rethrow(const char* op, const dnnl::error& e);

// ---- scratch memory ----
// Per-thread buffers that grow on demand and are kept for the thread's lifetime. Cached primitives
// stage their blocked-layout operands and their scratchpads here, so a training step in steady state
// allocates (and page-faults) nothing. A kernel owns all slots while it runs; kernels never nest.
inline constexpr int kScratchSlots = 6;
void* scratch(int slot, size_t bytes);

// Attributes for cached primitives: the scratchpad comes from scratch(), so one primitive can run on
// several threads at once and nothing is allocated per call.
dnnl::primitive_attr user_scratchpad_attr();
// Adds DNNL_ARG_SCRATCHPAD (backed by scratch slot `slot`) when `md` is not empty.
void add_scratchpad(std::unordered_map<int, dnnl::memory>& args, const dnnl::memory::desc& md, int slot);

// ---- primitive cache ----
// Creating primitive descriptors costs far more than running small primitives (JIT code generation),
// so every family caches what it built, keyed by everything the primitive depends on.
using CacheKey = std::vector<int64_t>;
struct CacheKeyHash {
    size_t operator()(const CacheKey& key) const noexcept;
};
// The part of a key every family shares: the data type and the OpenMP thread count, because oneDNN
// fixes the thread partition of a JIT kernel when the primitive descriptor is created.
CacheKey base_key(int64_t family, DataType dtype);
void append(CacheKey& key, const Dims& values);
inline void append(CacheKey& key, std::initializer_list<int64_t> values) {
    key.insert(key.end(), values.begin(), values.end());
}

// A least-recently-used map from keys to immutable plans, safe to share between threads. Plans are
// built outside the lock (two threads may build the same plan once; one copy wins).
template <typename Plan>
class PlanCache {
public:
    explicit PlanCache(size_t capacity) : capacity_(capacity) {}

    template <typename Make>
    std::shared_ptr<const Plan> get(const CacheKey& key, Make&& make) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = map_.find(key);
            if (it != map_.end()) {
                order_.splice(order_.begin(), order_, it->second.second);
                return it->second.first;
            }
        }
        auto plan = std::make_shared<const Plan>(make());
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = map_.find(key);
        if (it != map_.end()) return it->second.first;
        order_.push_front(key);
        map_.emplace(key, std::make_pair(plan, order_.begin()));
        if (map_.size() > capacity_) {
            map_.erase(order_.back());
            order_.pop_back();
        }
        return plan;
    }

private:
    using Order = std::list<CacheKey>;
    size_t capacity_;
    std::mutex mutex_;
    Order order_;  // most recently used first
    std::unordered_map<CacheKey, std::pair<std::shared_ptr<const Plan>, Order::iterator>, CacheKeyHash> map_;
};

}  // namespace ctk::cpu::onednn
