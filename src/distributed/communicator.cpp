// Communicator::world(): MPI_COMM_WORLD through OpenMPI (or any MPI) when the process was started by
// mpiexec, one local worker otherwise. The only file that includes <mpi.h>; without CTK_HAVE_MPI the
// build has the local worker alone.
#include "ctk/distributed/communicator.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "ctk/core/error.h"
#include "ctk/graph/initializer.h"

#ifdef CTK_HAVE_MPI
#include <mpi.h>
#endif
#ifdef CTK_HAVE_NCCL
#include <cuda_runtime.h>
#include <nccl.h>

#include "ctk/core/shared_library.h"

#include "ctk/core/cuda.h"
#endif

namespace ctk::distributed {

namespace {

std::string host_name() {
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) != 0) return "localhost";
    return name;
}

// Collectives on one worker: every reduction is the identity.
class LocalCommunicator final : public Communicator {
public:
    LocalCommunicator() : Communicator(0, 1, {WorkerDescriptor{0, host_name()}}) {}
    void barrier() override {}
    void all_reduce(std::vector<double>&, ReduceOp) override {}
    void all_reduce_sum(std::vector<Tensor>&) override {}
    void all_reduce_sum(void*, int64_t, DataType) override {}
    std::vector<std::string> all_gather(const std::string& bytes) override { return {bytes}; }
    std::vector<std::string> gather(const std::string& bytes, int64_t root) override {
        CTK_CHECK(root == 0, ValueError, "gather: root ", root, " is not a worker of a one-worker job");
        return {bytes};
    }
    void broadcast(std::string&, int64_t root) override {
        CTK_CHECK(root == 0, ValueError, "broadcast: root ", root, " is not a worker of a one-worker job");
    }
    void broadcast(std::vector<Tensor>&, int64_t root) override {
        CTK_CHECK(root == 0, ValueError, "broadcast: root ", root, " is not a worker of a one-worker job");
    }
    std::vector<std::string> all_to_all(const std::vector<std::string>& to_each) override {
        CTK_CHECK(to_each.size() == 1, ValueError, "all_to_all: ", to_each.size(),
                  " messages for a one-worker job");
        return to_each;
    }
};

bool g_finalized = false;

#ifdef CTK_HAVE_MPI

void check_mpi(int code, const char* what) {
    if (code == MPI_SUCCESS) return;
    char text[MPI_MAX_ERROR_STRING] = {};
    int len = 0;
    MPI_Error_string(code, text, &len);
    CTK_THROW(Error, "MPI ", what, " failed: ", std::string(text, static_cast<size_t>(len)));
}

int checked_count(size_t n, const char* what) {
    CTK_CHECK(n <= static_cast<size_t>(INT_MAX), ValueError, what, ": ", n,
              " bytes is more than one MPI message carries (2^31 - 1)");
    return static_cast<int>(n);
}

// Sums host values in place; MPI counts are ints, so in pieces of at most 2^30 elements.
template <typename T>
void sum_in_place(T* data, int64_t total, MPI_Datatype type) {
    constexpr int64_t kPiece = int64_t(1) << 30;
    for (int64_t start = 0; start < total; start += kPiece) {
        const int n = static_cast<int>(std::min(kPiece, total - start));
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, data + start, n, type, MPI_SUM, MPI_COMM_WORLD), "all-reduce");
    }
}

// The elements of one dtype, packed into one host buffer so that one call reduces them all (CNTK's
// packing of small gradients, done for all of them: a copy is cheap beside a message per tensor).
template <typename T>
void sum_packed(std::vector<Tensor*>& tensors, MPI_Datatype type) {
    if (tensors.empty()) return;
    int64_t total = 0;
    for (Tensor* t : tensors) total += t->numel();
    std::vector<T> buffer(static_cast<size_t>(total));
    int64_t at = 0;
    for (Tensor* t : tensors) {
        Tensor host = t->to(Device::cpu()).contiguous();
        std::memcpy(buffer.data() + at, host.data<T>(), static_cast<size_t>(host.numel()) * sizeof(T));
        at += host.numel();
    }
    sum_in_place(buffer.data(), total, type);
    at = 0;
    for (Tensor* t : tensors) {
        Tensor host = Tensor::empty(t->shape(), t->dtype());
        std::memcpy(host.data<T>(), buffer.data() + at, static_cast<size_t>(host.numel()) * sizeof(T));
        at += host.numel();
        t->copy_from(host);
    }
}

#ifdef CTK_HAVE_NCCL
// NCCL's entry points, resolved from libnccl.so.<major> with dlopen on first use (as cuDNN's and
// cuBLASLt's): ctk loads where NCCL is not installed, which only GPU collectives need.
struct Nccl {
    decltype(&ncclGetErrorString) GetErrorString;
    decltype(&ncclGetUniqueId) GetUniqueId;
    decltype(&ncclCommInitRank) CommInitRank;
    decltype(&ncclCommDestroy) CommDestroy;
    decltype(&ncclGroupStart) GroupStart;
    decltype(&ncclGroupEnd) GroupEnd;
    decltype(&ncclAllReduce) AllReduce;
};

const Nccl& nccl_library() {
    static const Nccl table = [] {
        const SharedLibrary lib("libnccl.so." + std::to_string(NCCL_MAJOR), "NCCL",
                                "install NCCL " + std::to_string(NCCL_MAJOR));
        Nccl t{};
        lib.bind(t.GetErrorString, "ncclGetErrorString");
        lib.bind(t.GetUniqueId, "ncclGetUniqueId");
        lib.bind(t.CommInitRank, "ncclCommInitRank");
        lib.bind(t.CommDestroy, "ncclCommDestroy");
        lib.bind(t.GroupStart, "ncclGroupStart");
        lib.bind(t.GroupEnd, "ncclGroupEnd");
        lib.bind(t.AllReduce, "ncclAllReduce");
        return t;
    }();
    return table;
}
#endif

class MpiCommunicator final : public Communicator {
public:
    MpiCommunicator(int64_t rank, int64_t size) : Communicator(rank, size, {}) {
        // Every worker's host name, so that workers() describes the job (CNTK filled its own only).
        std::string me = host_name();
        for (size_t r = 0; const std::string& name : all_gather(me))
            workers_.push_back(WorkerDescriptor{static_cast<int64_t>(r++), name});
    }
    void barrier() override {
        check_usable();
        check_mpi(MPI_Barrier(MPI_COMM_WORLD), "barrier");
    }
    void all_reduce(std::vector<double>& values, ReduceOp op) override {
        check_usable();
        if (values.empty()) return;
        MPI_Op mpi_op = op == ReduceOp::sum ? MPI_SUM : op == ReduceOp::max ? MPI_MAX : MPI_MIN;
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, values.data(), checked_count(values.size(), "all-reduce"),
                                MPI_DOUBLE, mpi_op, MPI_COMM_WORLD),
                  "all-reduce");
    }
    void all_reduce_sum(std::vector<Tensor>& tensors) override {
        check_usable();
#ifdef CTK_HAVE_NCCL
        if (every_worker_has_them_on_one_gpu(tensors)) return nccl_sum(tensors);
#endif
        std::vector<Tensor*> f32, f64;
        for (Tensor& t : tensors) {
            CTK_CHECK(t.dtype() == DataType::f32 || t.dtype() == DataType::f64, TypeError,
                      "all_reduce_sum: tensors must be float32 or float64, not ", dtype_name(t.dtype()));
            (t.dtype() == DataType::f32 ? f32 : f64).push_back(&t);
        }
        sum_packed<float>(f32, MPI_FLOAT);
        sum_packed<double>(f64, MPI_DOUBLE);
    }
    void all_reduce_sum(void* data, int64_t count, DataType dtype) override {
        check_usable();
        CTK_CHECK(dtype == DataType::f32 || dtype == DataType::f64, TypeError,
                  "all_reduce_sum: values must be float32 or float64, not ", dtype_name(dtype));
        if (dtype == DataType::f32)
            sum_in_place(static_cast<float*>(data), count, MPI_FLOAT);
        else
            sum_in_place(static_cast<double*>(data), count, MPI_DOUBLE);
    }
    std::vector<std::string> all_gather(const std::string& bytes) override {
        check_usable();
        int mine = checked_count(bytes.size(), "all-gather");
        std::vector<int> sizes(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
        check_mpi(MPI_Allgather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD), "all-gather");
        size_t total = 0;
        for (size_t r = 0; r < sizes.size(); ++r) {
            offsets[r] = checked_count(total, "all-gather");
            total += static_cast<size_t>(sizes[r]);
        }
        std::string all(total, '\0');
        check_mpi(MPI_Allgatherv(bytes.data(), mine, MPI_BYTE, all.data(), sizes.data(), offsets.data(),
                                 MPI_BYTE, MPI_COMM_WORLD),
                  "all-gather");
        return split(all, sizes, offsets);
    }
    std::vector<std::string> gather(const std::string& bytes, int64_t root) override {
        check_usable();
        check_root(root, "gather");
        int mine = checked_count(bytes.size(), "gather");
        const bool at_root = rank_ == root;
        std::vector<int> sizes(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
        check_mpi(
            MPI_Gather(&mine, 1, MPI_INT, sizes.data(), 1, MPI_INT, static_cast<int>(root), MPI_COMM_WORLD),
            "gather");
        size_t total = 0;
        for (size_t r = 0; at_root && r < sizes.size(); ++r) {
            offsets[r] = checked_count(total, "gather");
            total += static_cast<size_t>(sizes[r]);
        }
        std::string all(total, '\0');
        check_mpi(MPI_Gatherv(bytes.data(), mine, MPI_BYTE, all.data(), sizes.data(), offsets.data(),
                              MPI_BYTE, static_cast<int>(root), MPI_COMM_WORLD),
                  "gather");
        return at_root ? split(all, sizes, offsets) : std::vector<std::string>{};
    }
    void broadcast(std::string& bytes, int64_t root) override {
        check_usable();
        check_root(root, "broadcast");
        unsigned long long n = bytes.size();
        check_mpi(MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, static_cast<int>(root), MPI_COMM_WORLD),
                  "broadcast");
        bytes.resize(static_cast<size_t>(n));
        check_mpi(MPI_Bcast(bytes.data(), checked_count(bytes.size(), "broadcast"), MPI_BYTE,
                            static_cast<int>(root), MPI_COMM_WORLD),
                  "broadcast");
    }
    void broadcast(std::vector<Tensor>& tensors, int64_t root) override {
        check_usable();
        check_root(root, "broadcast");
        for (Tensor& t : tensors) {
            Tensor host = t.to(Device::cpu()).contiguous();  // t itself when on the CPU and contiguous
            const size_t bytes = static_cast<size_t>(host.numel()) * host.element_size();
            check_mpi(MPI_Bcast(host.raw_data(), checked_count(bytes, "broadcast"), MPI_BYTE,
                                static_cast<int>(root), MPI_COMM_WORLD),
                      "broadcast");
            if (!host.shares_storage(t)) t.copy_from(host);
        }
    }
    std::vector<std::string> all_to_all(const std::vector<std::string>& to_each) override {
        check_usable();
        CTK_CHECK(static_cast<int64_t>(to_each.size()) == size_, ValueError, "all_to_all: ", to_each.size(),
                  " messages for ", size_, " workers");
        std::vector<int> send_sizes, send_offsets, recv_sizes(static_cast<size_t>(size_)),
            recv_offsets(static_cast<size_t>(size_));
        std::string out;
        for (const std::string& m : to_each) {
            send_offsets.push_back(checked_count(out.size(), "all-to-all"));
            send_sizes.push_back(checked_count(m.size(), "all-to-all"));
            out += m;
        }
        check_mpi(MPI_Alltoall(send_sizes.data(), 1, MPI_INT, recv_sizes.data(), 1, MPI_INT, MPI_COMM_WORLD),
                  "all-to-all");
        size_t total = 0;
        for (size_t r = 0; r < recv_sizes.size(); ++r) {
            recv_offsets[r] = checked_count(total, "all-to-all");
            total += static_cast<size_t>(recv_sizes[r]);
        }
        std::string in(total, '\0');
        check_mpi(MPI_Alltoallv(out.data(), send_sizes.data(), send_offsets.data(), MPI_BYTE, in.data(),
                                recv_sizes.data(), recv_offsets.data(), MPI_BYTE, MPI_COMM_WORLD),
                  "all-to-all");
        return split(in, recv_sizes, recv_offsets);
    }

#ifdef CTK_HAVE_NCCL
    bool sums_on_gpus() const override {
        return true;
    }
    ~MpiCommunicator() override {
        if (nccl_) nccl_library().CommDestroy(nccl_);
    }
#endif

private:
#ifdef CTK_HAVE_NCCL
    // NCCL sums GPU tensors where they are (CNTK's NcclComm) when every worker's tensors of this call
    // are contiguous f32/f64 on one GPU: decided together (one small all-reduce), so that all workers
    // take the same path.
    bool every_worker_has_them_on_one_gpu(const std::vector<Tensor>& tensors) {
        int mine = tensors.empty() ? 0 : 1;
        for (const Tensor& t : tensors)
            if (!t.device().is_cuda() || t.device() != tensors[0].device() || !t.is_contiguous() ||
                (t.dtype() != DataType::f32 && t.dtype() != DataType::f64))
                mine = 0;
        int all = 0;
        check_mpi(MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD), "all-reduce");
        return all == 1;
    }
    static void check_nccl(ncclResult_t r, const char* what) {
        CTK_CHECK(r == ncclSuccess, Error, "NCCL ", what, " failed: ", nccl_library().GetErrorString(r));
    }
    // The NCCL communicator of the job, made on first use: worker 0's unique id sent over MPI.
    ncclComm_t nccl_for(Device device) {
        if (nccl_) {
            CTK_CHECK(nccl_device_ == device, DeviceError, "NCCL: this worker sums on ",
                      nccl_device_.to_string(), " and now on ", device.to_string(),
                      "; a worker uses one GPU");
            return nccl_;
        }
        ncclUniqueId id{};
        if (rank_ == 0) check_nccl(nccl_library().GetUniqueId(&id), "unique id");
        std::string bytes(reinterpret_cast<const char*>(&id), sizeof(id));
        broadcast(bytes, 0);
        std::memcpy(&id, bytes.data(), sizeof(id));
        CTK_CHECK(cudaSetDevice(device.index) == cudaSuccess, DeviceError, "NCCL: cannot use ",
                  device.to_string());
        check_nccl(nccl_library().CommInitRank(&nccl_, static_cast<int>(size_), id, static_cast<int>(rank_)),
                   "initialisation");
        nccl_device_ = device;
        return nccl_;
    }
    // In place, on the device's ctk stream: the work queued after (the learners' updates) sees the sums.
    void nccl_sum(std::vector<Tensor>& tensors) {
        const Device device = tensors[0].device();
        ncclComm_t comm = nccl_for(device);
        auto stream = static_cast<cudaStream_t>(cuda::stream(device));
        check_nccl(nccl_library().GroupStart(), "group start");
        for (Tensor& t : tensors)
            check_nccl(nccl_library().AllReduce(t.raw_data(), t.raw_data(), static_cast<size_t>(t.numel()),
                                                t.dtype() == DataType::f32 ? ncclFloat : ncclDouble, ncclSum,
                                                comm, stream),
                       "all-reduce");
        check_nccl(nccl_library().GroupEnd(), "group end");
    }
    ncclComm_t nccl_ = nullptr;
    Device nccl_device_ = Device::cpu();
#endif
    static std::vector<std::string> split(const std::string& all, const std::vector<int>& sizes,
                                          const std::vector<int>& offsets) {
        std::vector<std::string> out;
        for (size_t r = 0; r < sizes.size(); ++r)
            out.emplace_back(all.data() + offsets[r], static_cast<size_t>(sizes[r]));
        return out;
    }
    void check_root(int64_t root, const char* what) const {
        CTK_CHECK(root >= 0 && root < size_, ValueError, what, ": root ", root, " is not a worker (", size_,
                  " workers)");
    }
    void check_usable() const {
        CTK_CHECK(!g_finalized, Error,
                  "the distributed communicator was finalized (Communicator.finalize()); "
                  "no collective can run after it");
    }
};

#endif  // CTK_HAVE_MPI

std::mutex g_world_mutex;
std::shared_ptr<Communicator> g_world;

#ifdef CTK_HAVE_MPI
// Runs inside exit(), after Python's own shutdown, with the status the process leaves with. A worker
// leaving well that forgot Communicator.finalize() is finalized here; one leaving with a non-zero status
// (sys.exit(1), exit(1) in C++) stops the job, since the other workers may be waiting for it in a
// collective and MPI_Finalize would then wait for them forever.
void leave_job_at_exit(int status, void*) {
    if (g_finalized) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (status != 0)
        Communicator::abort(
            "it is leaving with exit status " + std::to_string(status) + " before Communicator.finalize()",
            status);
    Communicator::finalize();
}
#endif

}  // namespace

bool Communicator::launched_distributed() {
    return launched_worker().count > 1;
}

std::shared_ptr<Communicator> Communicator::world() {
    std::lock_guard<std::mutex> lock(g_world_mutex);
    if (g_world) return g_world;
    const LaunchedWorker launched = launched_worker();
    if (!launched.by_launcher) return g_world = std::make_shared<LocalCommunicator>();
#ifndef CTK_HAVE_MPI
    if (launched.count == 1) return g_world = std::make_shared<LocalCommunicator>();
#endif
#ifdef CTK_HAVE_MPI
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        int provided = 0;
        check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "initialisation");
        // (An MPI someone else started, mpi4py's say, is theirs to finalize.)
        on_exit(leave_job_at_exit, nullptr);
    }
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CTK_CHECK(size == launched.count && rank == launched.rank, Error, "MPI says this is worker ", rank,
              " of ", size, " but the launcher's environment says ", launched.rank, " of ", launched.count);
    return g_world = std::make_shared<MpiCommunicator>(rank, size);
#else
    CTK_THROW(Error, "this process is worker ", launched.rank, " of ", launched.count,
              " (started by mpiexec), but this ctk was built without MPI (CTK_USE_MPI=OFF): it cannot "
              "train with the other workers");
#endif
}

void Communicator::finalize() {
    std::lock_guard<std::mutex> lock(g_world_mutex);
    if (g_finalized) return;
#ifdef CTK_HAVE_MPI
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Finalize();
#endif
    g_finalized = true;  // (the local worker never checks it)
}

void Communicator::abort(const std::string& why, int code) {
    const LaunchedWorker launched = launched_worker();
    std::fprintf(stderr, "ctk: worker %lld of %lld stops the job: %s\n",
                 static_cast<long long>(launched.rank), static_cast<long long>(launched.count), why.c_str());
    std::fflush(stderr);
#ifdef CTK_HAVE_MPI
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    std::_Exit(code);
}

}  // namespace ctk::distributed
