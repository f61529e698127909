// cntk.train.distributed's native half: the communicator, worker descriptors and the distributed
// learners (ctk/distributed/). The Python half (python/ctk/distributed.py) keeps CNTK's static
// Communicator methods and stops the job when a worker's script raises.
#include "convert.h"
#include "ctk/distributed/learners.h"

namespace ctk::python {

void bind_distributed(py::module_& m) {
    using namespace ctk::distributed;
    using py::arg;
    py::module_ d = m.def_submodule("distributed", "CNTK's distributed training (cntk.train.distributed)");

    py::class_<WorkerDescriptor>(d, "WorkerDescriptor")
        .def_readonly("global_rank", &WorkerDescriptor::global_rank)
        .def_readonly("host_id", &WorkerDescriptor::host_id)
        .def("__eq__", [](const WorkerDescriptor& a, const WorkerDescriptor& b) { return a == b; })
        .def("__repr__", [](const WorkerDescriptor& w) {
            return "WorkerDescriptor(global_rank=" + std::to_string(w.global_rank) + ", host_id='" +
                   w.host_id + "')";
        });

    py::class_<Communicator, CommunicatorPtr>(d, "_Communicator")
        .def("workers", &Communicator::workers)
        .def("current_worker", &Communicator::current_worker)
        .def("barrier", &Communicator::barrier, py::call_guard<py::gil_scoped_release>())
        .def("is_main", &Communicator::is_main)
        .def_property_readonly("_rank", &Communicator::rank)
        .def_property_readonly("_num_workers", &Communicator::num_workers);
    d.def("_world", &Communicator::world);
    d.def("_finalize", &Communicator::finalize);
    d.def(
        "_abort", [](const std::string& why, int code) { Communicator::abort(why, code); }, arg("why"),
        arg("code") = 1);
    d.def("_launched_distributed", &Communicator::launched_distributed);
    d.def("_launched_worker", [] {
        const LaunchedWorker w = launched_worker();
        return py::make_tuple(w.rank, w.count, w.by_launcher);
    });

    py::class_<DistributedLearner, Learner, DistributedLearnerPtr>(d, "DistributedLearner")
        .def("communicator", &DistributedLearner::communicator)
        .def_property_readonly("distributed_after", &DistributedLearner::distributed_after)
        .def_property_readonly("local_learner", &DistributedLearner::local_learner)
        // ctk's: the gradient (or model) bytes this worker sent in the last step (docs/distributed.md).
        .def_property_readonly("bytes_sent_last_step", &DistributedLearner::bytes_sent_last_step)
        // CNTK made one learner of several report the job's loss and metric; ctk's Trainer reports its
        // first distributed learner's, and every learner aggregates its own copy.
        .def("set_as_metric_aggregator", [](DistributedLearner&) {});

    d.def(
        "data_parallel_distributed_learner",
        [](const LearnerPtr& learner, int64_t distributed_after, int64_t num_quantization_bits,
           bool use_async_buffered_parameter_update) {
            return data_parallel_distributed_learner(learner, distributed_after, num_quantization_bits,
                                                     use_async_buffered_parameter_update);
        },
        arg("learner"), arg("distributed_after") = 0, arg("num_quantization_bits") = 32,
        arg("use_async_buffered_parameter_update") = false);
    d.def(
        "block_momentum_distributed_learner",
        [](const LearnerPtr& learner, int64_t block_size,
           std::optional<double> block_momentum_as_time_constant, bool use_nestrov_momentum,
           bool reset_sgd_momentum_after_aggregation, double block_learning_rate, int64_t distributed_after) {
            return block_momentum_distributed_learner(
                learner, block_size, block_momentum_as_time_constant, use_nestrov_momentum,
                reset_sgd_momentum_after_aggregation, block_learning_rate, distributed_after);
        },
        arg("learner"), arg("block_size"), arg("block_momentum_as_time_constant") = py::none(),
        arg("use_nestrov_momentum") = true, arg("reset_sgd_momentum_after_aggregation") = true,
        arg("block_learning_rate") = 1.0, arg("distributed_after") = 0);
}

}  // namespace ctk::python
