// A distributed training job that fails on purpose, for fault_test.sh: `kill` (worker 1 dies by SIGKILL
// mid-training), `raise` (worker 0 throws out of main while the others wait in a barrier, CNTK's
// finalize_test), `exit` (worker 0 calls exit(2) mid-training, without finalize) or `ok`. The job must end,
// not hang, and mpiexec must name the worker.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ctk/distributed/learners.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/train.h"

using namespace ctk;

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "ok";
    auto comm = distributed::Communicator::world();
    Variable x = input_variable({4}, DataType::f32, false, false, default_batch_axes(), "x");
    Variable w = parameter({4, 2}, glorot_uniform(), DataType::f32, "W");
    FunctionPtr loss = reduce_sum(square(times(x, w)->output())->output(), {Axis::all_static_axes()});
    Trainer t(nullptr, loss, nullptr,
              {distributed::data_parallel_distributed_learner(sgd({w}, learning_parameter_schedule(0.01)))});
    for (int step = 0; step < 1000000; ++step) {
        if (mode == "kill" && comm->rank() == 1 && step == 50) std::raise(SIGKILL);
        if (mode == "raise" && step == 50) {
            if (comm->rank() == 0) throw std::runtime_error("worker 0 fails on purpose");
            comm->barrier();  // waits for a worker that is gone
        }
        if (mode == "exit" && comm->rank() == 0 && step == 50) std::exit(2);
        t.train_minibatch({{x, Value(Tensor::full(Shape{3, 4}, 0.1))}});
        if (mode == "ok" && step == 20) break;
    }
    std::printf("worker %lld finished\n", static_cast<long long>(comm->rank()));
    distributed::Communicator::finalize();
    return 0;
}
