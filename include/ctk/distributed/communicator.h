// The processes of a distributed job and their collectives: CNTK's DistributedCommunicator over MPI
// (OpenMPI under mpiexec), and one process, rank 0 of 1, where MPI is absent or the process was not
// started by mpiexec. See docs/distributed.md.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ctk/core/tensor.h"

namespace ctk::distributed {

// CNTK's WorkerDescriptor: a worker's rank in the job and the name of its host.
struct WorkerDescriptor {
    int64_t global_rank = 0;
    std::string host_id;
    bool operator==(const WorkerDescriptor&) const = default;
};

enum class ReduceOp : uint8_t { sum, max, min };

// The workers of the job (MPI_COMM_WORLD). Every collective must be called by every worker in the
// same order with the same sizes (sizes are checked where a mismatch would otherwise hang or corrupt).
// Results are the same bits on every worker and, for the same job, from run to run: MPI's algorithm
// for a reduction depends on the sizes and the number of workers only, never on timing.
class Communicator {
public:
    // The process's communicator, made on first use. Under mpiexec (OpenMPI's OMPI_COMM_WORLD_SIZE or
    // PMI_SIZE in the environment) this initialises MPI (MPI_THREAD_SERIALIZED, as CNTK did); without
    // it, it is one worker and never touches MPI. Throws RuntimeError when the job is distributed but
    // this build has no MPI.
    static std::shared_ptr<Communicator> world();
    // CNTK's Communicator.finalize(): MPI_Finalize, once all workers call it; later collectives throw.
    // Call it only when training ended well: a worker that failed must not (the job is then stopped by
    // mpiexec, the others' waits included). A no-op in one process.
    static void finalize();
    // Stops the whole job now with `code` (MPI_Abort), after printing `why` naming this rank on stderr.
    [[noreturn]] static void abort(const std::string& why, int code = 1);
    // Whether this process was started as one worker of several (by the launcher's environment alone:
    // the graph's random seeds use it before any communicator exists).
    static bool launched_distributed();

    virtual ~Communicator() = default;
    int64_t rank() const { return rank_; }
    int64_t num_workers() const { return size_; }
    bool is_main() const { return rank_ == 0; }
    const std::vector<WorkerDescriptor>& workers() const { return workers_; }
    const WorkerDescriptor& current_worker() const { return workers_[static_cast<size_t>(rank_)]; }

    // Whether GPU tensors are summed on the GPUs (NCCL) rather than through host copies.
    virtual bool sums_on_gpus() const { return false; }

    virtual void barrier() = 0;
    // Reduces `values` element-wise over the workers, in place.
    virtual void all_reduce(std::vector<double>& values, ReduceOp op = ReduceOp::sum) = 0;
    // Sums each tensor over the workers in place (f32 or f64; contiguous, on the CPU or, through a host
    // copy, on a GPU). Tensors of one dtype are packed into one buffer and reduced in one call.
    virtual void all_reduce_sum(std::vector<Tensor>& tensors) = 0;
    // Sums `count` host values of `dtype` (f32 or f64) over the workers, in place.
    virtual void all_reduce_sum(void* data, int64_t count, DataType dtype) = 0;
    // Every worker's `bytes`, in rank order, on every worker.
    virtual std::vector<std::string> all_gather(const std::string& bytes) = 0;
    // Every worker's `bytes`, in rank order, on `root`; an empty list elsewhere.
    virtual std::vector<std::string> gather(const std::string& bytes, int64_t root = 0) = 0;
    // `root`'s bytes (or tensor values) on every worker; tensors must have the same shapes everywhere.
    virtual void broadcast(std::string& bytes, int64_t root = 0) = 0;
    virtual void broadcast(std::vector<Tensor>& tensors, int64_t root = 0) = 0;
    // Worker w sends to_each[v] to every worker v and gets back from_each[v] from each (MPI_Alltoallv):
    // the exchange of the quantized learner's stripes.
    virtual std::vector<std::string> all_to_all(const std::vector<std::string>& to_each) = 0;

protected:
    Communicator(int64_t rank, int64_t size, std::vector<WorkerDescriptor> workers)
        : rank_(rank), size_(size), workers_(std::move(workers)) {}
    int64_t rank_, size_;
    std::vector<WorkerDescriptor> workers_;
};
using CommunicatorPtr = std::shared_ptr<Communicator>;

}  // namespace ctk::distributed
