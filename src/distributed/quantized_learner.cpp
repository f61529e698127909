// 1-bit SGD and its 2-16 bit variants: CNTK's stripe-wise two-phase exchange of quantized gradients
// with error feedback (docs/distributed.md), over the communicator's all-to-all and all-gather.
#include "distributed/quantized_learner.h"

#include <cstring>

#include "ctk/core/error.h"
#include "distributed/quantization.h"

namespace ctk::distributed::detail {

template <typename T>
void QuantizedSum<T>::sum(Communicator& communicator, std::vector<std::vector<T>>& gradients,
                          const std::vector<Shape>& shapes) {
    const int64_t workers = communicator.num_workers(), me = communicator.rank();
    const size_t n = gradients.size();
    if (residuals.size() != n) {
        residuals.assign(n, {});
        stripe_residuals.assign(n, {});
        views.clear();
        for (size_t g = 0; g < n; ++g) {
            const MatrixView m = views.emplace_back(matrix_view(shapes[g]));
            residuals[g].assign(static_cast<size_t>(m.rows * m.cols), T(0));
            stripe_residuals[g].assign(static_cast<size_t>(m.rows * stripe_of(m.cols, workers, me).count),
                                       T(0));
        }
    }
    // Phase 1: worker k gets everyone's quantized stripe k of every gradient.
    std::vector<std::string> to_each(static_cast<size_t>(workers));
    for (size_t g = 0; g < n; ++g) {
        const MatrixView m = views[g];
        for (int64_t k = 0; k < workers; ++k) {
            const Stripe s = stripe_of(m.cols, workers, k);
            quantize_columns(gradients[g].data() + s.begin * m.rows, residuals[g].data() + s.begin * m.rows,
                             m.rows, s.count, bits, to_each[static_cast<size_t>(k)]);
        }
    }
    bytes_sent = 0;
    for (int64_t k = 0; k < workers; ++k)
        if (k != me) bytes_sent += static_cast<int64_t>(to_each[static_cast<size_t>(k)].size());
    const std::vector<std::string> mine = communicator.all_to_all(to_each);
    // Phase 2: this worker sums its stripes in rank order (the same order on every run), quantizes the
    // sum with its stripe residual and sends it to everyone.
    std::vector<const char*> at(mine.size());
    for (size_t w = 0; w < mine.size(); ++w) at[w] = mine[w].data();
    std::string summed;
    std::vector<T> stripe;
    for (size_t g = 0; g < n; ++g) {
        const MatrixView m = views[g];
        const Stripe s = stripe_of(m.cols, workers, me);
        stripe.assign(static_cast<size_t>(m.rows * s.count), T(0));
        for (size_t w = 0; w < mine.size(); ++w)
            dequantize_columns(at[w], mine[w].data() + mine[w].size(), stripe.data(), m.rows, s.count, bits,
                               w > 0);
        quantize_columns(stripe.data(), stripe_residuals[g].data(), m.rows, s.count, bits, summed);
    }
    bytes_sent += static_cast<int64_t>(summed.size()) * (workers - 1);
    const std::vector<std::string> sums = communicator.all_gather(summed);
    for (size_t w = 0; w < sums.size(); ++w) {
        const char* in = sums[w].data();
        const char* end = in + sums[w].size();
        for (size_t g = 0; g < n; ++g) {
            const MatrixView m = views[g];
            const Stripe s = stripe_of(m.cols, workers, static_cast<int64_t>(w));
            dequantize_columns(in, end, gradients[g].data() + s.begin * m.rows, m.rows, s.count, bits, false);
        }
        CTK_CHECK(in == end, IOError, "quantized gradient: worker ", w, " sent ", end - in,
                  " bytes more than its stripes take; the workers' models differ");
    }
}

template <typename T>
void QuantizedSum<T>::zero_residuals() {
    for (auto& r : residuals) std::fill(r.begin(), r.end(), T(0));
    for (auto& r : stripe_residuals) std::fill(r.begin(), r.end(), T(0));
}

template struct QuantizedSum<float>;
template struct QuantizedSum<double>;

namespace {

template <typename T>
std::vector<T> host_values(const Tensor& t) {
    Tensor host = t.to(Device::cpu()).contiguous();
    const T* p = host.data<T>();
    return std::vector<T>(p, p + host.numel());
}

// CNTK's QuantizedDataParallelDistributedLearner: the step's loss, metric and count are summed exactly,
// the gradients through QuantizedSum; the local learner updates with the job's count.
class QuantizedLearner final : public DistributedLearner {
public:
    QuantizedLearner(LearnerPtr local, CommunicatorPtr communicator, int64_t distributed_after, int bits)
        : DistributedLearner(std::move(local), std::move(communicator), distributed_after,
                             "QuantizedDataParallelDistributedLearner") {
        f32_.bits = f64_.bits = bits;
    }
    bool quantized() const override { return true; }

    bool update(GradientMap& gradients, MinibatchInfo& info) override {
        // As CNTK: no "more than one worker" condition; with one worker the exchange is with itself.
        if (samples_seen_ >= distributed_after_) {
            start_sharing();
            sum_step_totals(info);
            info.synchronized = true;
            std::vector<Tensor> grads = ordered_gradients(gradients);
            const DataType dtype = grads.empty() ? DataType::f32 : grads[0].dtype();
            std::vector<Shape> shapes;
            for (const Tensor& g : grads) {
                CTK_CHECK(g.dtype() == dtype, TypeError,
                          "Currently values of different types are not supported for quantize.");
                shapes.push_back(g.shape());
            }
            CTK_CHECK(dtype == DataType::f32 || dtype == DataType::f64, TypeError,
                      "quantized data-parallel training: gradients must be float32 or float64, not ",
                      dtype_name(dtype));
            if (dtype == DataType::f32)
                sum(f32_, grads, shapes);
            else
                sum(f64_, grads, shapes);
            bytes_sent_ = dtype == DataType::f32 ? f32_.bytes_sent : f64_.bytes_sent;
        }
        samples_seen_ += info.number_of_samples;
        if (info.number_of_samples == 0) return false;
        return local_->update(gradients, info.number_of_samples, info.at_end_of_sweep);
    }

    // CNTK does not keep the residuals in checkpoints: it zeroes them when it makes one, so that the
    // run that goes on and the run restored from the checkpoint are the same.
    Dictionary checkpoint_state() const override {
        f32_.zero_residuals();
        f64_.zero_residuals();
        return DistributedLearner::checkpoint_state();
    }

private:
    template <typename T>
    void sum(QuantizedSum<T>& state, std::vector<Tensor>& grads, const std::vector<Shape>& shapes) {
        std::vector<std::vector<T>> host;
        for (const Tensor& g : grads) host.push_back(host_values<T>(g));
        state.sum(*communicator_, host, shapes);
        for (size_t i = 0; i < grads.size(); ++i) {
            Tensor t = Tensor::empty(shapes[i], grads[i].dtype());
            std::memcpy(t.data<T>(), host[i].data(), host[i].size() * sizeof(T));
            grads[i].copy_from(t);
        }
    }

    mutable QuantizedSum<float> f32_;
    mutable QuantizedSum<double> f64_;
};

}  // namespace

DistributedLearnerPtr make_quantized_learner(LearnerPtr local, CommunicatorPtr communicator,
                                             int64_t distributed_after, int bits) {
    return std::make_shared<QuantizedLearner>(std::move(local), std::move(communicator), distributed_after,
                                              bits);
}

}  // namespace ctk::distributed::detail
