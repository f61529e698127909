// Page-locked host memory with a cache (declared in ctk/core/cuda.h), the staging copies that uploads from
// pageable memory go through (copy.h), and CUDA events. cudaHostAlloc is slow (it maps pages for the
// device), so freed blocks are kept. A block may still be the source of an asynchronous copy when its
// tensor dies, so on release the cache records an event on every ctk stream in use and hands the block
// out again only once those events have completed.
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include "core/cuda/copy.h"
#include "core/cuda/cuda_check.h"
#include "ctk/core/cuda.h"
#include "ctk/core/op_profile.h"
#include "ctk/core/tensor.h"

namespace ctk::cuda {

namespace {

struct FreeBlock {
    void* data;
    std::vector<cudaEvent_t> pending;  // one per device stream that was live at release
};

class PinnedCache {
public:
    void* take(size_t bytes) {
        // Its event queries and a cudaHostAlloc are no work a graph can record.
        CTK_CHECK(!detail::this_thread_captures(), DeviceError,
                  "pinned host memory cannot be taken while this thread records a CUDA Graph");
        std::lock_guard<std::mutex> lock(mutex_);
        settle_deferred();
        auto range = free_.equal_range(bytes);
        for (auto it = range.first; it != range.second; ++it) {
            if (!all_done(it->second.pending)) continue;  // a queued copy may still read it
            void* p = it->second.data;
            release_events(it->second.pending);
            free_.erase(it);
            return p;
        }
        void* p = nullptr;
        if (cudaHostAlloc(&p, bytes, cudaHostAllocPortable) != cudaSuccess) {
            cudaGetLastError();
            CTK_THROW(OutOfMemoryError, "pinned host allocation of ", bytes, " bytes failed (", free_.size(),
                      " pinned blocks cached)");
        }
        pinned_[p] = bytes;
        return p;
    }

    void give_back(void* p, size_t bytes) {
        FreeBlock b{p, {}};
        const bool recorded = record_events(b.pending);
        std::lock_guard<std::mutex> lock(mutex_);
        if (recorded)
            free_.emplace(bytes, std::move(b));
        else
            deferred_.emplace_back(p, bytes);
    }

    bool contains(const void* p) const {
        std::lock_guard<std::mutex> lock(mutex_);
        return pinned_.count(const_cast<void*>(p)) > 0;
    }

private:
    // An event on every ctk stream made so far, behind the work queued there (a copy may still read the
    // block). False, with no events, while a stream is recording a CUDA Graph (the record would join the
    // graph, and a captured event cannot be queried) or when a record fails: the block then waits in
    // deferred_. Leaves the current device as it was.
    static bool record_events(std::vector<cudaEvent_t>& events) {
        int current = -1;
        if (cudaGetDevice(&current) != cudaSuccess) current = -1;
        bool ok = true;
        for (int d = 0; d < device_count() && ok; ++d) {
            cudaStream_t stream = detail::existing_cuda_stream(d);
            if (!stream) continue;  // nothing was ever queued there
            cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
            cudaEvent_t e = nullptr;
            ok = cudaStreamIsCapturing(stream, &capture) == cudaSuccess &&
                 capture == cudaStreamCaptureStatusNone && cudaSetDevice(d) == cudaSuccess &&
                 cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess;
            if (ok) {
                events.push_back(e);
                ok = cudaEventRecord(e, stream) == cudaSuccess;
            }
        }
        if (!ok) {
            cudaGetLastError();
            release_events(events);
        }
        if (current >= 0) cudaSetDevice(current);
        return ok;
    }
    // Blocks released while a graph recorded get their events once none does (mutex_ held).
    void settle_deferred() {
        for (auto it = deferred_.begin(); it != deferred_.end();) {
            FreeBlock b{it->first, {}};
            if (!record_events(b.pending)) return;
            free_.emplace(it->second, std::move(b));
            it = deferred_.erase(it);
        }
    }
    static bool all_done(const std::vector<cudaEvent_t>& events) {
        for (cudaEvent_t e : events)
            if (cudaEventQuery(e) != cudaSuccess) {
                cudaGetLastError();
                return false;
            }
        return true;
    }
    static void release_events(std::vector<cudaEvent_t>& events) {
        for (cudaEvent_t e : events) cudaEventDestroy(e);
        events.clear();
    }

    mutable std::mutex mutex_;
    std::multimap<size_t, FreeBlock> free_;
    std::vector<std::pair<void*, size_t>> deferred_;  // released during a capture, no events yet
    std::map<void*, size_t> pinned_;                  // every block this cache made (they are never freed)
};

PinnedCache& cache() {
    static auto* c = new PinnedCache();  // never destroyed: tensors may die during static destruction
    return *c;
}

// Blocks come in powers of two from 4 KiB: the cache reuses a block only for its own size, and
// minibatches of sequences ask for a new size almost every step (page-rounded sizes would each make a
// block, and pinned blocks are never freed).
size_t pinned_block_size(size_t bytes) {
    size_t block = 4096;
    while (block < bytes) block *= 2;
    return block;
}

}  // namespace

Tensor pinned_empty(const Shape& shape, DataType dtype) {
    if (!is_available()) return Tensor::empty(shape, dtype);
    const size_t bytes =
        pinned_block_size(std::max(checked_nbytes(shape.dims(), dtype, "pinned tensor"), size_of(dtype)));
    void* p = cache().take(bytes);
    std::shared_ptr<void> owner(p, [bytes](void* q) { cache().give_back(q, bytes); });
    return Tensor::wrap(p, bytes, shape, shape.contiguous_strides(), dtype, Device::cpu(), std::move(owner));
}

namespace detail {
Tensor staged_for_upload(const Tensor& host) {
    const size_t bytes = static_cast<size_t>(host.numel()) * host.element_size();
    if (bytes > kMaxStagedUpload || !is_available()) return Tensor();
    const size_t block = pinned_block_size(bytes);
    void* p = cache().take(block);
    std::shared_ptr<void> owner(p, [block](void* q) { cache().give_back(q, block); });
    if (bytes > 0) std::memcpy(p, host.raw_data(), bytes);
    return Tensor::wrap(p, block, host.shape(), host.shape().contiguous_strides(), host.dtype(),
                        Device::cpu(), std::move(owner));
}
}  // namespace detail

bool is_pinned(const Tensor& t) {
    return t.defined() && t.device().is_cpu() && is_available() && cache().contains(t.storage()->data());
}

Tensor to_device_async(const Tensor& host, Device device) {
    if (!is_pinned(host)) return host.to(device);
    Tensor out = Tensor::empty(host.shape(), host.dtype(), device);
    detail::copy_tensor(host, out, /*async=*/true);
    return out;
}

Tensor to_host_async(const Tensor& t, Event& done) {
    CTK_CHECK(t.device().is_cuda() && t.device() == done.device(), DeviceError, "to_host_async: a tensor on ",
              t.device().to_string(), " with an event of ", done.device().to_string(),
              "; both must be on the same GPU");
    detail::check_not_capturing(t.device(), "to_host_async");
    const Tensor packed = t.contiguous();  // if a copy, freed in stream order: the copy below reads it first
    Tensor host = pinned_empty(t.shape(), t.dtype());
    detail::set_device(t.device().index);
    CTK_CUDA_CHECK(cudaMemcpyAsync(host.raw_data(), packed.raw_data(),
                                   static_cast<size_t>(t.numel()) * size_of(t.dtype()),
                                   cudaMemcpyDeviceToHost, detail::cuda_stream(t.device())));
    done.record();
    return host;
}

Event::Event(Device device) : device_(device) {
    check_device(device);
    detail::set_device(device.index);
    cudaEvent_t e = nullptr;
    CTK_CUDA_CHECK(cudaEventCreate(&e));
    event_ = e;
}

Event::~Event() {
    if (event_) cudaEventDestroy(static_cast<cudaEvent_t>(event_));
}

void Event::record() {
    CTK_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(event_), detail::cuda_stream(device_)));
}

void Event::synchronize() const {
    ctk::detail::host_wait([&] { CTK_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(event_))); });
}

bool Event::ready() const {
    cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event_));
    if (e == cudaErrorNotReady) return false;
    CTK_CUDA_CHECK(e);
    return true;
}

float Event::elapsed_ms(const Event& later) const {
    float ms = 0;
    CTK_CUDA_CHECK(
        cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(event_), static_cast<cudaEvent_t>(later.event_)));
    return ms;
}

}  // namespace ctk::cuda
