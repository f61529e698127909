// Block momentum (BMUF; CNTK's BlockMomentumDistributedLearner): local training, and every block of the
// job's samples a combination of the workers' models with a block-level momentum. CNTK negotiated block
// ends, checkpoints and the end of data between workers that counted samples apart; here one small
// all-reduce per step gives every worker the job's count, so all of them decide together and no
// negotiation can deadlock.
#include <cmath>

#include "ctk/core/error.h"
#include "ctk/distributed/learners.h"

namespace ctk::distributed {

namespace detail {
void combine_block(std::vector<double>& last, const std::vector<double>& sum_of_differences,
                   std::vector<double>& smoothed, double block_momentum, double block_learning_rate,
                   bool nesterov) {
    for (size_t i = 0; i < last.size(); ++i) {
        smoothed[i] = block_momentum * smoothed[i] +
                      (1.0 - block_momentum) * block_learning_rate * sum_of_differences[i];
        last[i] -= smoothed[i];
        if (nesterov) last[i] -= block_momentum * smoothed[i];
    }
}
}  // namespace detail

namespace {

class BlockMomentumLearner final : public DistributedLearner {
public:
    BlockMomentumLearner(LearnerPtr local, CommunicatorPtr communicator, int64_t distributed_after,
                         int64_t block_size, std::optional<double> time_constant, bool nesterov, bool reset,
                         double block_lr)
        : DistributedLearner(std::move(local), std::move(communicator), distributed_after,
                             "BlockMomentumDistributedLearner"),
          block_size_(block_size),
          nesterov_(nesterov),
          reset_(reset),
          block_lr_(block_lr) {
        const int64_t n = communicator_->num_workers();
        CTK_CHECK(block_size_ / n > 0, ValueError, "Sync period is too small.");
        const double period = static_cast<double>(block_size_ / n);
        // CNTK's Momentum2TimeConstant(1 - 1/N, block_size); one worker: no block momentum.
        time_constant_ =
            time_constant
                ? *time_constant
                : (n == 1 ? 0.0 : -static_cast<double>(block_size_) / std::log(1.0 - 1.0 / double(n)));
        const double per_worker = time_constant_ / double(n);
        const double bm = per_worker == 0.0 ? 0.0 : std::exp(-period / per_worker);
        CTK_CHECK(bm >= 0.0 && bm < 1.0, ValueError, "Unexpected block momentum (", bm,
                  "). Block momentum should be in the range of [0,1)");
    }
    int64_t minibatch_size_scale_factor() const override { return communicator_->num_workers(); }

    bool update(GradientMap& gradients, MinibatchInfo& info) override {
        const int64_t n = communicator_->num_workers();
        const bool warm = samples_seen_ < distributed_after_;
        if (!warm && start_sharing()) capture_last();
        if (info.number_of_samples > 0)
            local_->update(gradients, info.number_of_samples, info.at_end_of_sweep);
        if (warm || n == 1) {  // alone: every worker trains on the whole minibatch
            samples_seen_ += info.number_of_samples;
            return info.number_of_samples > 0;
        }
        sum_step_totals(info);
        samples_seen_ += info.number_of_samples;
        block_samples_ += info.number_of_samples;
        bytes_sent_ = 0;
        info.synchronized = info.number_of_samples == 0 ? block_samples_ > 0 : block_samples_ >= block_size_;
        if (info.synchronized) combine();
        return info.number_of_samples > 0;  // at the end of the job's data, the last block is combined
    }

    void restore_from_checkpoint(const Dictionary& state) override {
        CTK_CHECK(state.contains("base") && state.contains("blockLevelSmoothedGradient"), ValueError, name_,
                  ": restore_from_checkpoint: not a block momentum learner's state");
        const auto& saved = state.at("blockLevelSmoothedGradient").as_list();
        CTK_CHECK(saved.size() == by_uid_.size(), ValueError, name_,
                  ": restore_from_checkpoint: the state holds ", saved.size(),
                  " smoothed gradients, the learner has ", by_uid_.size(), " parameters");
        std::vector<std::vector<double>> smoothed;
        for (size_t i = 0; i < saved.size(); ++i) {
            const Tensor& t = saved[i].as_tensor();
            CTK_CHECK(t.shape() == by_uid_[i].value().shape(), ValueError, name_,
                      ": restore_from_checkpoint: the smoothed gradient of ", by_uid_[i].to_string(),
                      " has shape ", t.shape().to_string());
            smoothed.push_back(t.to_vector<double>());
        }
        DistributedLearner::restore_from_checkpoint(state.at("base").as_dictionary());
        smoothed_ = std::move(smoothed);
        block_samples_ = 0;
        capture_last();  // the checkpoint was written right after a combination
    }

    // CNTK forces a combination before a checkpoint (every worker saves at the same step), so that the
    // block's start point and its sample count need not be saved.
    Dictionary checkpoint_state() const override {
        auto* self = const_cast<BlockMomentumLearner*>(this);
        if (sharing_ && block_samples_ > 0 && communicator_->num_workers() > 1) self->combine();
        DictionaryValue::List smoothed;
        for (size_t i = 0; i < by_uid_.size(); ++i) {
            const Shape shape = by_uid_[i].value().shape();
            smoothed.emplace_back(i < smoothed_.size() ? Tensor::from_vector<double>(smoothed_[i], shape)
                                                       : Tensor::zeros(shape, DataType::f64));
        }
        Dictionary d;
        d.set("base", DistributedLearner::checkpoint_state());
        d.set("localTotalNumSamplesSeen", samples_seen_);
        d.set("blockLevelSmoothedGradient", std::move(smoothed));
        return d;
    }

private:
    void capture_last() {
        last_.clear();
        for (const Variable& p : by_uid_) last_.push_back(p.value().to_vector<double>());
        if (smoothed_.size() != last_.size()) {
            smoothed_.clear();
            for (const auto& v : last_) smoothed_.emplace_back(v.size(), 0.0);
        }
    }

    void combine() {
        const double bm =
            time_constant_ == 0.0 ? 0.0 : std::exp(-static_cast<double>(block_samples_) / time_constant_);
        std::vector<Tensor> differences;
        for (size_t i = 0; i < by_uid_.size(); ++i) {
            std::vector<double> d = by_uid_[i].value().to_vector<double>();
            for (size_t j = 0; j < d.size(); ++j) d[j] = last_[i][j] - d[j];
            differences.push_back(Tensor::from_vector<double>(d, by_uid_[i].value().shape()));
        }
        communicator_->all_reduce_sum(differences);
        int64_t bytes = 0;
        for (const Tensor& d : differences) bytes += d.numel() * static_cast<int64_t>(d.element_size());
        bytes_sent_ = all_reduce_bytes(bytes);
        for (size_t i = 0; i < by_uid_.size(); ++i) {
            detail::combine_block(last_[i], differences[i].to_vector<double>(), smoothed_[i], bm, block_lr_,
                                  nesterov_);
            by_uid_[i].set_value(Tensor::from_vector<double>(last_[i], by_uid_[i].value().shape()));
            last_[i] =
                by_uid_[i].value().to_vector<double>();  // as stored (rounded to the parameter's dtype)
        }
        block_samples_ = 0;
        if (reset_) local_->reset_smoothed_gradients();
    }

    int64_t block_size_;
    bool nesterov_, reset_;
    double block_lr_, time_constant_ = 0;
    int64_t block_samples_ = 0;  // the job's samples since the last combination
    std::vector<std::vector<double>> last_, smoothed_;
};

}  // namespace

DistributedLearnerPtr block_momentum_distributed_learner(
    LearnerPtr learner, int64_t block_size, std::optional<double> block_momentum_as_time_constant,
    bool use_nestrov_momentum, bool reset_sgd_momentum_after_aggregation, double block_learning_rate,
    int64_t distributed_after, CommunicatorPtr communicator) {
    return std::make_shared<BlockMomentumLearner>(std::move(learner), std::move(communicator),
                                                  distributed_after, block_size,
                                                  block_momentum_as_time_constant, use_nestrov_momentum,
                                                  reset_sgd_momentum_after_aggregation, block_learning_rate);
}

}  // namespace ctk::distributed
