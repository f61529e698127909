// The quantized data-parallel learner (CNTK's QuantizedDataParallelDistributedLearner), made by
// data_parallel_distributed_learner for num_quantization_bits < 32; and its exchange, exposed for tests.
#pragma once

#include <vector>

#include "ctk/distributed/learners.h"
#include "distributed/quantization.h"

namespace ctk::distributed::detail {

DistributedLearnerPtr make_quantized_learner(LearnerPtr local, CommunicatorPtr communicator,
                                             int64_t distributed_after, int bits);

// The state of a quantized sum over the workers: per gradient, this worker's residual (the gradient's
// shape) and the residual of the stripe it owns.
template <typename T>
struct QuantizedSum {
    int bits = 1;
    std::vector<std::vector<T>> residuals, stripe_residuals;
    std::vector<MatrixView> views;  // each gradient's matrix, fixed at the first sum
    int64_t bytes_sent = 0;         // by this worker in the last sum, to the others
    // Replaces each gradient (host, contiguous, all of type T) by the job's quantized sum: every worker
    // quantizes its gradient plus residual and sends stripe k to worker k; the owner sums the stripes in
    // rank order, quantizes the sum plus its stripe residual and sends it to everyone; everyone
    // dequantizes. The result is the same bits on every worker.
    void sum(Communicator& communicator, std::vector<std::vector<T>>& gradients,
             const std::vector<Shape>& shapes);
    void zero_residuals();
};

}  // namespace ctk::distributed::detail
