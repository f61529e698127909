// Gradients summed over the workers while backward still runs (ctk's addition to CNTK's data-parallel
// SGD, as PyTorch's DDP does it): the gradients are grouped, in the order backward finishes them, into
// buckets of about a fixed size; a bucket is summed by a communication thread as soon as its last
// gradient is final. Every worker groups the same way (the order comes from the schedule, not from a
// run), so the sums are the same bits on every worker and in every run, whatever the timing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <unordered_map>
#include <vector>

#include "ctk/distributed/communicator.h"
#include "ctk/learners.h"

namespace ctk::distributed::detail {

class GradientBuckets {
public:
    // `order`: the parameters in the order their gradients become final; all f32 or all f64.
    GradientBuckets(CommunicatorPtr communicator, const std::vector<Variable>& order, int64_t bucket_bytes);
    ~GradientBuckets();
    GradientBuckets(const GradientBuckets&) = delete;
    GradientBuckets& operator=(const GradientBuckets&) = delete;

    bool made_for(const std::vector<Variable>& order) const { return order == order_; }
    int64_t num_buckets() const { return static_cast<int64_t>(buckets_.size()); }
    // A gradient is final: copied into its bucket, which starts its sum when complete.
    void ready(const Variable& parameter, const Tensor& gradient);
    // Waits for the sums, sums the buckets no backward filled (a worker without data: zeros), and puts
    // the job's gradients into `gradients`. Rethrows a failure of the communication thread.
    void finish(GradientMap& gradients);

private:
    struct Bucket {
        std::vector<size_t> members;  // indices into order_
        int64_t elements = 0;
        int64_t pending = 0;  // members not yet ready in this step
        bool started = false;
        std::vector<float> f32;
        std::vector<double> f64;
    };
    void copy_in(size_t member, const Tensor* gradient);  // null: zeros
    void start(size_t bucket);  // hands a complete bucket to the communication thread
    void run_thread();

    CommunicatorPtr communicator_;
    std::vector<Variable> order_;
    struct Place {
        size_t bucket = 0, member = 0;  // member: index into order_
        int64_t offset = 0;             // in the bucket's values
    };
    std::unordered_map<const void*, Place> where_;  // by parameter
    std::vector<Bucket> buckets_;
    std::vector<char> reported_;  // per member of order_: its gradient is in its bucket this step
    bool f64_ = false;

    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::vector<char> startable_;  // per bucket: complete in this step
    size_t next_ = 0;              // the next bucket to sum
    size_t completed_ = 0;         // buckets summed in this step
    bool stop_ = false;
    std::exception_ptr failure_;
    std::thread thread_;
};

}  // namespace ctk::distributed::detail
