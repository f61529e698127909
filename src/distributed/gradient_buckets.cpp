// GradientBuckets: the grouping, the copies in and out, and the communication thread. MPI is initialised
// for serialized calls (MPI_THREAD_SERIALIZED): this thread calls it only between ready() and finish(),
// while the training thread makes no other MPI call.
#include "distributed/gradient_buckets.h"

#include <algorithm>
#include <cstring>

#include "ctk/core/error.h"

namespace ctk::distributed::detail {

GradientBuckets::GradientBuckets(CommunicatorPtr communicator, const std::vector<Variable>& order,
                                 int64_t bucket_bytes)
    : communicator_(std::move(communicator)), order_(order) {
    CTK_CHECK(!order_.empty(), ValueError, "GradientBuckets: no gradients");
    f64_ = order_[0].dtype() == DataType::f64;
    const int64_t element = f64_ ? 8 : 4;
    for (size_t i = 0; i < order_.size(); ++i) {
        const Variable& p = order_[i];
        CTK_CHECK(
            p.dtype() == order_[0].dtype() && (p.dtype() == DataType::f32 || p.dtype() == DataType::f64),
            TypeError, "GradientBuckets: parameters must all be float32 or all float64 (", p.to_string(),
            ")");
        if (buckets_.empty() || buckets_.back().elements * element >= bucket_bytes) buckets_.emplace_back();
        Bucket& b = buckets_.back();
        where_[p.impl()] = Place{buckets_.size() - 1, i, b.elements};
        b.members.push_back(i);
        b.elements += p.value().numel();
    }
    for (Bucket& b : buckets_) {
        if (f64_)
            b.f64.resize(static_cast<size_t>(b.elements));
        else
            b.f32.resize(static_cast<size_t>(b.elements));
        b.pending = static_cast<int64_t>(b.members.size());
    }
    reported_.assign(order_.size(), 0);
    startable_.assign(buckets_.size(), 0);
    thread_ = std::thread([this] { run_thread(); });
}

GradientBuckets::~GradientBuckets() {
    {
        std::lock_guard<std::mutex> lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
}

void GradientBuckets::ready(const Variable& parameter, const Tensor& gradient) {
    auto it = where_.find(parameter.impl());
    if (it == where_.end()) return;  // another learner's parameter
    const Place place = it->second;
    if (reported_[place.member]) return;
    copy_in(place.member, &gradient);
    if (--buckets_[place.bucket].pending == 0) start(place.bucket);
}

void GradientBuckets::copy_in(size_t member, const Tensor* gradient) {
    reported_[member] = 1;
    const Place place = where_.at(order_[member].impl());
    Bucket& b = buckets_[place.bucket];
    const int64_t offset = place.offset;
    void* at = f64_ ? static_cast<void*>(b.f64.data() + offset) : static_cast<void*>(b.f32.data() + offset);
    const int64_t n = order_[member].value().numel();
    if (!gradient) {
        std::memset(at, 0, static_cast<size_t>(n) * (f64_ ? 8 : 4));
        return;
    }
    const Tensor host = gradient->to(Device::cpu()).contiguous().to(f64_ ? DataType::f64 : DataType::f32);
    CTK_CHECK(host.numel() == n, ShapeError, "GradientBuckets: the gradient of ", order_[member].to_string(),
              " has ", host.numel(), " elements");
    std::memcpy(at, host.raw_data(), static_cast<size_t>(n) * host.element_size());
}

void GradientBuckets::start(size_t bucket) {
    buckets_[bucket].started = true;
    {
        std::lock_guard<std::mutex> lock(mutex_);
        startable_[bucket] = 1;
    }
    wake_.notify_one();
}

// Sums the buckets strictly in bucket order, whatever order they fill in, so that every worker makes
// the same sequence of collectives.
void GradientBuckets::run_thread() {
    for (;;) {
        size_t index;
        {
            std::unique_lock<std::mutex> lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || (next_ < startable_.size() && startable_[next_]); });
            if (stop_) return;
            index = next_++;
        }
        try {
            if (!failure_) {
                Bucket& b = buckets_[index];
                if (f64_)
                    communicator_->all_reduce_sum(b.f64.data(), b.elements, DataType::f64);
                else
                    communicator_->all_reduce_sum(b.f32.data(), b.elements, DataType::f32);
            }
        } catch (...) {
            failure_ = std::current_exception();
        }
        {
            std::lock_guard<std::mutex> lock(mutex_);
            ++completed_;
        }
        done_.notify_all();
    }
}

void GradientBuckets::finish(GradientMap& gradients) {
    // Buckets backward did not fill (no data on this worker, or a gradient never reported) are summed
    // now, in bucket order, as on every other worker; missing gradients count as zeros.
    for (size_t i = 0; i < buckets_.size(); ++i) {
        Bucket& b = buckets_[i];
        if (b.started) continue;
        for (size_t m : b.members) {
            if (reported_[m]) continue;
            auto g = gradients.find(order_[m]);
            copy_in(m, g == gradients.end() ? nullptr : &g->second);
        }
        start(i);
    }
    {
        std::unique_lock<std::mutex> lock(mutex_);
        done_.wait(lock, [&] { return completed_ == buckets_.size(); });
        completed_ = 0;
        next_ = 0;
        std::fill(startable_.begin(), startable_.end(), 0);
    }
    std::fill(reported_.begin(), reported_.end(), 0);
    for (Bucket& b : buckets_) {
        b.started = false;
        b.pending = static_cast<int64_t>(b.members.size());
    }
    if (failure_) std::rethrow_exception(failure_);
    for (const Variable& p : order_) {
        const Tensor value = p.value();
        const Place place = where_.at(p.impl());
        const Bucket& b = buckets_[place.bucket];
        const int64_t offset = place.offset;
        Tensor sum = Tensor::empty(value.shape(), f64_ ? DataType::f64 : DataType::f32);
        std::memcpy(sum.raw_data(),
                    f64_ ? static_cast<const void*>(b.f64.data() + offset)
                         : static_cast<const void*>(b.f32.data() + offset),
                    static_cast<size_t>(sum.numel()) * sum.element_size());
        gradients[p] = sum.to(value.dtype()).to(value.device());
    }
}

}  // namespace ctk::distributed::detail
