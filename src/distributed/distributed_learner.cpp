// DistributedLearner's shared part (the start-of-training check and broadcast, uid order, warm start,
// checkpoints) and the 32-bit data-parallel learner (CNTK's DataParallelDistributedLearner).
#include <algorithm>
#include <cstdlib>

#include "ctk/core/error.h"
#include "ctk/distributed/learners.h"
#include "ctk/formats/model.h"
#include "distributed/gradient_buckets.h"
#include "distributed/quantized_learner.h"

namespace ctk::distributed {

namespace {
std::string describe(const Variable& p) {
    const Tensor v = p.value();
    return "'" + p.name() + "' (uid " + p.uid() + ") " + v.shape().to_string() + " " + dtype_name(v.dtype());
}
}  // namespace

DistributedLearner::DistributedLearner(LearnerPtr local, CommunicatorPtr communicator,
                                       int64_t distributed_after, const char* name)
    : Learner(
          local ? local->parameters() : std::vector<Variable>{},
          local ? local->learning_rate_schedule() : TrainingParameterSchedule(std::vector<double>{0.0}, 1),
          {}, name),
      local_(std::move(local)),
      communicator_(communicator ? std::move(communicator) : Communicator::world()),
      distributed_after_(distributed_after) {
    CTK_CHECK(local_ != nullptr, ValueError, name, ": the local learner is required");
    CTK_CHECK(!std::dynamic_pointer_cast<DistributedLearner>(local_), ValueError, name,
              ": the local learner is itself distributed");
    CTK_CHECK(distributed_after_ >= 0, ValueError, name, ": distributed_after is ", distributed_after_,
              "; it must be >= 0");
    by_uid_ = parameters_;
    std::sort(by_uid_.begin(), by_uid_.end(),
              [](const Variable& a, const Variable& b) { return a.uid() < b.uid(); });
}

bool DistributedLearner::takes_step(int64_t) {
    CTK_THROW(ValueError, name_,
              ": a distributed learner is updated by its Trainer (the step's loss, "
              "metric and sample count are aggregated with the gradients)");
}

void DistributedLearner::update_parameter(const Variable&, Tensor&, const Tensor&, std::vector<Tensor>&,
                                          int64_t) {
    CTK_THROW(ValueError, name_, ": the local learner updates the parameters");
}

std::string DistributedLearner::recording_refusal() const {
    return "a distributed learner exchanges gradients with the other workers on the host";
}

void DistributedLearner::synchronize_start() {
    if (communicator_->num_workers() == 1) return;
    // Each worker's parameters, described in uid order: the same text everywhere or a clear error.
    std::string mine;
    for (const Variable& p : by_uid_) mine += describe(p) + "\n";
    const std::vector<std::string> all = communicator_->all_gather(mine);
    for (size_t w = 1; w < all.size(); ++w) {
        if (all[w] == all[0]) continue;
        auto lines = [](const std::string& s) {
            std::vector<std::string> out;
            for (size_t at = 0, nl; (nl = s.find('\n', at)) != std::string::npos; at = nl + 1)
                out.push_back(s.substr(at, nl - at));
            return out;
        };
        const auto a = lines(all[0]), b = lines(all[w]);
        for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
            const std::string x = i < a.size() ? a[i] : "nothing", y = i < b.size() ? b[i] : "nothing";
            CTK_CHECK(x == y, ValueError, name_, ": the workers train different models: parameter ", i,
                      " (in uid order) is ", x, " on worker 0 and ", y, " on worker ", w,
                      "; every worker must build the same model");
        }
    }
    std::vector<Tensor> values;
    for (const Variable& p : by_uid_) values.push_back(p.value());
    communicator_->broadcast(values, 0);  // values alias the parameters: written in place
}

void DistributedLearner::synchronize_from_main() {
    if (communicator_->num_workers() == 1) return;
    std::vector<Tensor> values;
    for (const Variable& p : by_uid_) values.push_back(p.value());
    communicator_->broadcast(values, 0);
    std::string state = communicator_->is_main() ? cntk_dictionary_bytes(local_->checkpoint_state()) : "";
    communicator_->broadcast(state, 0);
    if (!communicator_->is_main())
        local_->restore_from_checkpoint(cntk_dictionary_from_bytes(state, "worker 0's learner state"));
}

bool DistributedLearner::start_sharing() {
    if (sharing_) return false;
    sharing_ = true;
    if (distributed_after_ > 0) synchronize_from_main();  // replicas may have drifted apart
    return true;
}

void DistributedLearner::sum_step_totals(MinibatchInfo& info) {
    std::vector<double> totals{info.eval_criterion, info.training_loss,
                               static_cast<double>(info.number_of_samples)};
    communicator_->all_reduce(totals);
    info.eval_criterion = totals[0];
    info.training_loss = totals[1];
    info.number_of_samples = static_cast<int64_t>(totals[2]);
}

std::vector<Tensor> DistributedLearner::ordered_gradients(GradientMap& gradients) const {
    std::vector<Tensor> out;
    for (const Variable& p : by_uid_) {
        auto it = gradients.find(p);
        if (it == gradients.end()) {
            const Tensor v = p.value();
            it = gradients.emplace(p, Tensor::zeros(v.shape(), v.dtype(), v.device())).first;
        } else if (!it->second.is_contiguous()) {
            it->second = it->second.contiguous();
        }
        out.push_back(it->second);
    }
    return out;
}

int64_t DistributedLearner::all_reduce_bytes(int64_t bytes) const {
    const int64_t n = communicator_->num_workers();
    return n > 1 ? 2 * (n - 1) * bytes / n : 0;
}

Dictionary DistributedLearner::checkpoint_state() const {
    Dictionary d;
    d.set("localLearners", local_->checkpoint_state());
    d.set("totalNumberOfSamplesSeen", samples_seen_);
    return d;
}

void DistributedLearner::restore_from_checkpoint(const Dictionary& state) {
    CTK_CHECK(state.contains("localLearners") && state.contains("totalNumberOfSamplesSeen"), ValueError,
              name_,
              ": restore_from_checkpoint: not a distributed learner's state (no localLearners or "
              "totalNumberOfSamplesSeen)");
    local_->restore_from_checkpoint(state.at("localLearners").as_dictionary());
    samples_seen_ = state.at("totalNumberOfSamplesSeen").as_int();
}

namespace {

// The size of the groups in which gradients are summed during backward (CTK_ALLREDUCE_BUCKET_MB, default
// 1 MiB: small enough that a small model's first groups leave before backward ends; 0 turns the overlap
// off and sums everything after backward in one call, as CNTK did).
int64_t bucket_bytes() {
    const char* v = std::getenv("CTK_ALLREDUCE_BUCKET_MB");
    if (!v || !*v) return int64_t(1) << 20;
    char* end = nullptr;
    const double mb = std::strtod(v, &end);
    CTK_CHECK(*end == '\0' && mb >= 0, ValueError,
              "CTK_ALLREDUCE_BUCKET_MB must be a number of MiB >= 0, not '", v, "'");
    return static_cast<int64_t>(mb * 1048576.0);
}

// CNTK's DataParallelDistributedLearner: the gradients summed (not averaged) over the workers, then the
// step's loss, metric and count; the local learner updates with the job's count. ctk sums the gradients
// in buckets while backward runs (GradientBuckets), grouped by an order all workers agree on at their
// first shared step; until then, and with buckets off, in one call after backward.
class DataParallelLearner final : public DistributedLearner {
public:
    DataParallelLearner(LearnerPtr local, CommunicatorPtr communicator, int64_t distributed_after)
        : DistributedLearner(std::move(local), std::move(communicator), distributed_after,
                             "DataParallelDistributedLearner") {}

    Program::GradientReady gradients_as_ready(const std::vector<Variable>& order) override {
        if (local_order_.empty())
            for (const Variable& v : order)
                if (std::find(by_uid_.begin(), by_uid_.end(), v) != by_uid_.end()) local_order_.push_back(v);
        if (!buckets_ || samples_seen_ < distributed_after_) return {};
        return [this](const Variable& v, const Value& g) { buckets_->ready(v, g.data()); };
    }

    bool update(GradientMap& gradients, MinibatchInfo& info) override {
        const int64_t workers = communicator_->num_workers();
        if (samples_seen_ >= distributed_after_ && workers > 1) {
            if (start_sharing()) agree_on_buckets();
            int64_t bytes = 0;
            if (buckets_) {
                buckets_->finish(gradients);
                for (const Variable& p : by_uid_)
                    bytes += p.value().numel() * static_cast<int64_t>(size_of(p.dtype()));
            } else {
                std::vector<Tensor> grads = ordered_gradients(gradients);
                communicator_->all_reduce_sum(grads);
                for (const Tensor& g : grads) bytes += g.numel() * static_cast<int64_t>(g.element_size());
            }
            bytes_sent_ = all_reduce_bytes(bytes);
            sum_step_totals(info);
            info.synchronized = true;
        }
        samples_seen_ += info.number_of_samples;
        if (info.number_of_samples == 0) return false;
        return local_->update(gradients, info.number_of_samples, info.at_end_of_sweep);
    }

private:
    // The workers take the backward order of the first worker that knows one (the same graph gives the
    // same order everywhere), else uid order, and group their gradients by it from now on.
    void agree_on_buckets() {
        const int64_t bytes = bucket_bytes();
        if (bytes == 0 || by_uid_.empty()) return;
        for (const Variable& p : by_uid_)
            if (p.dtype() != by_uid_[0].dtype() || (p.dtype() != DataType::f32 && p.dtype() != DataType::f64))
                return;
        // Gradients on every worker's GPU are summed there by NCCL (after backward) instead.
        const bool on_gpu = communicator_->sums_on_gpus() && by_uid_[0].value().device().is_cuda();
        std::string mine = on_gpu ? "G" : "C";
        for (const Variable& v : local_order_)
            mine += std::to_string(std::find(by_uid_.begin(), by_uid_.end(), v) - by_uid_.begin()) + " ";
        std::vector<Variable> order;
        const std::vector<std::string> all = communicator_->all_gather(mine);
        if (std::all_of(all.begin(), all.end(), [](const std::string& w) { return w[0] == 'G'; })) return;
        for (const std::string& with_kind : all) {
            const std::string theirs = with_kind.substr(1);
            if (theirs.empty()) continue;
            size_t at = 0;
            for (size_t next; (next = theirs.find(' ', at)) != std::string::npos; at = next + 1)
                order.push_back(by_uid_.at(std::stoul(theirs.substr(at, next - at))));
            break;
        }
        if (order.size() != by_uid_.size()) order = by_uid_;
        buckets_ = std::make_unique<detail::GradientBuckets>(communicator_, order, bytes);
    }

    std::vector<Variable> local_order_;  // this worker's backward order, from its first step
    std::unique_ptr<detail::GradientBuckets> buckets_;
};

}  // namespace

DistributedLearnerPtr data_parallel_distributed_learner(LearnerPtr learner, int64_t distributed_after,
                                                        int64_t num_quantization_bits,
                                                        bool use_async_buffered_parameter_update,
                                                        CommunicatorPtr communicator) {
    CTK_CHECK(!use_async_buffered_parameter_update, Error,
              "Asynchronous parameter update is not yet supported for the DataParallelDistributedLearner.");
    CTK_CHECK(num_quantization_bits >= 1, ValueError,
              "data_parallel_distributed_learner: num_quantization_bits is ", num_quantization_bits,
              "; it must be 1, 2, 4, 8, 16 or at least 32");
    if (num_quantization_bits >= 32)
        return std::make_shared<DataParallelLearner>(std::move(learner), std::move(communicator),
                                                     distributed_after);
    CTK_CHECK((num_quantization_bits & (num_quantization_bits - 1)) == 0, ValueError,
              "data_parallel_distributed_learner: num_quantization_bits is ", num_quantization_bits,
              "; it must be a power of two (1, 2, 4, 8 or 16) or at least 32");
    return detail::make_quantized_learner(std::move(learner), std::move(communicator), distributed_after,
                                          static_cast<int>(num_quantization_bits));
}

}  // namespace ctk::distributed
