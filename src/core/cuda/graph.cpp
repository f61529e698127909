// CUDA Graph capture and replay on a device's ctk stream (ctk/core/cuda.h), with the allocator's capture pool
// so that the recorded addresses stay the graph's own. CUDA-only; runtime.cpp holds the stubs.
#include <cuda_runtime.h>

#include "core/cuda/allocator.h"
#include "core/cuda/cuda_check.h"
#include "ctk/core/cuda.h"
#include "ctk/core/error.h"

namespace ctk::cuda {

std::unique_ptr<Graph> Graph::capture(Device device, const std::function<void()>& work,
                                      std::string* why_not) {
    check_device(device);
    std::unique_ptr<Graph> graph(new Graph(device));
    cudaStream_t stream = detail::cuda_stream(device);
    std::string error;
    try {
        graph->pool_ = detail::open_capture_pool(device.index);
    } catch (const std::exception& e) {  // another capture is recording on this device
        if (why_not) *why_not = e.what();
        return nullptr;
    }
    // Thread-local: an unsafe call (a synchronization, a pageable copy) on this thread ends the capture
    // with an error. Other threads' calls are not checked, but whatever they queue on this device's ctk
    // stream meanwhile is recorded too: while a capture runs, only its thread may use the device.
    cudaError_t begun = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
    if (begun == cudaSuccess) {
        detail::set_this_thread_captures(true);
        try {
            work();
        } catch (const std::exception& e) {
            error = e.what();
        } catch (...) {
            error = "the recorded work threw an exception that is not a std::exception";
        }
        detail::set_this_thread_captures(false);
        cudaGraph_t recorded = nullptr;
        const cudaError_t ended = cudaStreamEndCapture(stream, &recorded);
        if (error.empty() && ended != cudaSuccess)
            error = std::string("the capture failed: ") + cudaGetErrorString(ended);
        graph->graph_ = recorded;
    } else {
        error = std::string("the capture could not start: ") + cudaGetErrorString(begun);
    }
    cudaGetLastError();  // a failed capture leaves its error behind; the stream itself is fine
    detail::close_capture_pool(device.index, graph->pool_);
    if (error.empty()) {
        auto* recorded = static_cast<cudaGraph_t>(graph->graph_);
        size_t nodes = 0;
        cudaGraphExec_t exec = nullptr;
        if (cudaGraphGetNodes(recorded, nullptr, &nodes) != cudaSuccess ||
            cudaGraphInstantiateWithFlags(&exec, recorded, 0) != cudaSuccess) {
            error =
                std::string("the graph could not be instantiated: ") + cudaGetErrorString(cudaGetLastError());
        } else {
            graph->exec_ = exec;
            graph->num_nodes_ = static_cast<int64_t>(nodes);
        }
    }
    if (!error.empty()) {
        if (why_not) *why_not = error;
        return nullptr;  // the destructor gives the pool back
    }
    return graph;
}

Graph::~Graph() {
    // The replays must be done before the pool's blocks are reused. A graph that never got that far ran
    // nothing (and may be going away inside another capture, where a wait is not allowed).
    if (exec_) {
        try {
            synchronize(device_);
        } catch (const std::exception&) {
            // An asynchronous kernel error surfaces at the next ctk call on this device; nothing to do.
        }
    }
    if (exec_) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
    if (graph_) cudaGraphDestroy(static_cast<cudaGraph_t>(graph_));
    cudaGetLastError();
    detail::release_capture_pool(device_.index, pool_);
}

void Graph::replay() {
    CTK_CHECK(exec_ != nullptr, DeviceError, "cuda::Graph::replay: the graph was not captured");
    CTK_CUDA_CHECK(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), detail::cuda_stream(device_)));
}

}  // namespace ctk::cuda
