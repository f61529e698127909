"""cntk.train.distributed: CNTK's data-parallel training over MPI. ctk's distributed training (MPI and
NCCL, 1-bit SGD, block momentum) is not built yet: each name here raises NotImplementedError saying so,
so that a script fails at the line that needs it rather than training one worker silently."""


def _missing(name):
    def f(*args, **kwargs):
        raise NotImplementedError('cntk.train.distributed.%s: distributed training is not in ctk yet; '
                                  'run the script without the distributed learner' % name)
    f.__name__ = name
    return f


data_parallel_distributed_learner = _missing('data_parallel_distributed_learner')
block_momentum_distributed_learner = _missing('block_momentum_distributed_learner')


class Communicator:
    """CNTK's communicator queries: one process, rank 0, until ctk has distributed training."""

    @staticmethod
    def rank():
        return 0

    @staticmethod
    def num_workers():
        return 1

    @staticmethod
    def finalize():
        pass


__all__ = ['data_parallel_distributed_learner', 'block_momentum_distributed_learner', 'Communicator']
