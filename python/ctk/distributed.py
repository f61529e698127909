"""cntk.train.distributed: CNTK's distributed training over MPI (scripts started by ``mpiexec -n N python
script.py``): the Communicator's static queries, WorkerDescriptor, and the data-parallel (32-bit and
1-16 bit quantized) and block-momentum distributed learners. Outside mpiexec a script is worker 0 of 1
and never touches MPI.

A worker whose script raises an uncaught exception stops the whole job (MPI_Abort, naming the worker),
so that the others never wait forever for it, and so does one that leaves with a non-zero exit status
(sys.exit(1)); CNTK's rule stays: call Communicator.finalize() only when training ended well (ctk also
finalizes at exit when a script that ends well forgets it)."""
import sys as _sys
import traceback as _traceback

from ._ctk import distributed as _d
from ._ctk.distributed import WorkerDescriptor, DistributedLearner  # noqa: F401


class Communicator:
    """CNTK's Communicator: the workers of the job (MPI_COMM_WORLD)."""

    def __init__(self, impl=None):
        self._impl = impl if impl is not None else _world()

    def workers(self):
        """Every worker's WorkerDescriptor, in rank order."""
        return self._impl.workers()

    def current_worker(self):
        """This worker's WorkerDescriptor."""
        return self._impl.current_worker()

    def barrier(self):
        """Waits until every worker has called barrier()."""
        self._impl.barrier()

    def is_main(self):
        """True on worker 0."""
        return self._impl.is_main()

    @staticmethod
    def rank():
        """This worker's rank (0 outside mpiexec)."""
        return _world()._rank

    @staticmethod
    def num_workers():
        """The number of workers of the job (1 outside mpiexec)."""
        return _world()._num_workers

    @staticmethod
    def finalize():
        """Ends MPI for this worker; every worker must call it, and only after training ended well."""
        _d._finalize()


def _world():
    return _d._world()


def mpi_communicator():
    """CNTK's mpi_communicator(): the job's communicator."""
    return Communicator()


def data_parallel_distributed_learner(learner, distributed_after=0, num_quantization_bits=32,
                                      use_async_buffered_parameter_update=False):
    """CNTK's data-parallel learner: every step sums the workers' gradients, losses, metrics and sample
    counts, and `learner` updates with the sums (so that N workers train as one process on the N
    minibatches together). num_quantization_bits 1, 2, 4, 8 or 16 quantizes the gradients with error
    feedback (1-bit SGD); before distributed_after samples every worker trains alone on whole minibatches."""
    return _d.data_parallel_distributed_learner(learner, distributed_after, num_quantization_bits,
                                                use_async_buffered_parameter_update)


def block_momentum_distributed_learner(learner, block_size, block_momentum_as_time_constant=None,
                                       use_nestrov_momentum=True, reset_sgd_momentum_after_aggregation=True,
                                       block_learning_rate=1.0, distributed_after=0):
    """CNTK's block momentum (BMUF) learner: workers train alone and combine their models every
    block_size samples of the job with a block-level momentum (CNTK's argument names, its spelling of
    use_nestrov_momentum included)."""
    return _d.block_momentum_distributed_learner(learner, block_size, block_momentum_as_time_constant,
                                                 use_nestrov_momentum, reset_sgd_momentum_after_aggregation,
                                                 block_learning_rate, distributed_after)


def _stop_job_on_uncaught_exception():
    """Under mpiexec, an uncaught exception prints its traceback and stops every worker."""
    previous = _sys.excepthook

    def hook(kind, value, tb):
        previous(kind, value, tb)
        rank, count, _ = _d._launched_worker()
        why = ''.join(_traceback.format_exception_only(kind, value)).strip()
        _d._abort('uncaught %s on worker %d of %d' % (why, rank, count), 1)

    _sys.excepthook = hook
    # A script that leaves without Communicator.finalize() is finalized at exit, or, when it leaves with a
    # non-zero status (sys.exit(1)), stops the job: both in the library's exit handler, which sees the
    # status.


if _d._launched_worker()[2]:  # started by mpiexec, even as its only worker
    _stop_job_on_uncaught_exception()

__all__ = ['Communicator', 'WorkerDescriptor', 'DistributedLearner', 'mpi_communicator',
           'data_parallel_distributed_learner', 'block_momentum_distributed_learner']
