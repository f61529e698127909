"""cntk.train.distributed: the API in one process, and real jobs under `mpiexec -n 2`: the distributed
example (MNIST_Distributed.py, written as CNTK's distributed examples are) with 32-bit, 1-bit and
block momentum on a small CTF set, both workers reporting the same test metric as CNTK's distributed
end-to-end tests demanded; CNTK's finalize_test (a worker raising must stop the job, not hang it)."""
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

import cntk as C
from cntk.train.distributed import (Communicator, WorkerDescriptor, DistributedLearner,
                                    data_parallel_distributed_learner, block_momentum_distributed_learner)
import ctk._ctk as _ctk

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, 'examples', 'Image', 'Classification', 'MNIST', 'Python', 'MNIST_Distributed.py')
MPIEXEC = shutil.which('mpiexec')
with_mpi = pytest.mark.skipif(MPIEXEC is None or not _ctk._info()['build']['mpi_distribution'],
                              reason='needs mpiexec and a ctk built with MPI')


def test_one_process_is_worker_zero_of_one():
    assert C.Communicator is Communicator  # CNTK's examples call C.Communicator.rank()
    assert C.train.distributed.data_parallel_distributed_learner is data_parallel_distributed_learner
    import cntk.tests.test_utils  # CNTK's examples start with its set_device_from_pytest_env()
    cntk.tests.test_utils.set_device_from_pytest_env()
    assert Communicator.rank() == 0
    assert Communicator.num_workers() == 1
    c = Communicator()
    assert c.is_main()
    workers = c.workers()
    assert len(workers) == 1 and isinstance(workers[0], WorkerDescriptor)
    assert workers[0].global_rank == 0 and workers[0].host_id
    assert c.current_worker() == workers[0]
    c.barrier()


def test_learner_arguments_are_checked_as_cntk_checked():
    x = C.input_variable(3)
    z = C.times(x, C.parameter((3, 2)))
    local = C.sgd(z.parameters, C.learning_parameter_schedule(0.1))
    for bits in (0, 3, 5, 6, 7):
        with pytest.raises(ValueError):
            data_parallel_distributed_learner(local, num_quantization_bits=bits)
    with pytest.raises(RuntimeError, match='Asynchronous parameter update'):
        data_parallel_distributed_learner(local, use_async_buffered_parameter_update=True)
    for bits in (1, 2, 4, 8, 16, 32, 64):
        learner = data_parallel_distributed_learner(local, num_quantization_bits=bits, distributed_after=10)
        assert isinstance(learner, DistributedLearner) and isinstance(learner, C.learners.Learner)
        assert learner.distributed_after == 10
        assert learner.total_number_of_samples_seen == 0
    with pytest.raises(ValueError, match='Sync period is too small'):
        block_momentum_distributed_learner(local, block_size=0)
    with pytest.raises(ValueError, match='block momentum'):
        block_momentum_distributed_learner(local, block_size=100, block_momentum_as_time_constant=-1.0)
    bm = block_momentum_distributed_learner(local, 3200, use_nestrov_momentum=False,
                                            reset_sgd_momentum_after_aggregation=False, block_learning_rate=0.5)
    assert bm.communicator().is_main()


def test_one_process_trains_as_without_the_distributed_learner():
    def train(distributed):
        C.set_fixed_random_seed(3)
        x = C.input_variable(4)
        y = C.input_variable(2)
        z = C.layers.Dense(2)(x)
        learner = C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.1), C.momentum_schedule(0.9))
        if distributed:
            learner = data_parallel_distributed_learner(learner)
        t = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)), [learner])
        rng = np.random.RandomState(0)
        for _ in range(5):
            t.train_minibatch({x: rng.rand(8, 4).astype(np.float32),
                               y: np.eye(2, dtype=np.float32)[rng.randint(0, 2, 8)]})
        return [p.value for p in z.parameters]
    for a, b in zip(train(False), train(True)):
        np.testing.assert_array_equal(a, b)


def write_ctf(path, rows, seed):
    rng = np.random.RandomState(seed)
    with open(path, 'w') as f:
        for i in range(rows):
            label = i % 10
            pixels = (rng.rand(784) * 255 * (np.arange(784) % 10 == label)).astype(int)
            f.write('|labels %s |features %s\n' % (' '.join('1' if c == label else '0' for c in range(10)),
                                                    ' '.join(map(str, pixels))))


def job_environment():
    return dict(os.environ, OMPI_MCA_btl_vader_single_copy_mechanism='none',
                PYTHONPATH=os.pathsep.join(p for p in sys.path if p))


def mpiexec(args, cwd, timeout=300, workers=2):
    """This Python running args under mpiexec with `workers` workers; or alone when workers is None."""
    launcher = [] if workers is None else [MPIEXEC, '--allow-run-as-root', '--oversubscribe', '-n', str(workers)]
    return subprocess.run(launcher + [sys.executable] + args, cwd=cwd, env=job_environment(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)


@pytest.fixture(scope='module')
def mnist_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp('mnist')
    write_ctf(str(d / 'Train-28x28_cntk_text.txt'), 640, 1)
    write_ctf(str(d / 'Test-28x28_cntk_text.txt'), 200, 2)
    return d


@with_mpi
@pytest.mark.parametrize('flags', [['-q', '32'], ['-q', '1'], ['-b', '640'], ['-q', '32', '-a', '320']])
def test_distributed_example_runs_on_two_workers(mnist_dir, tmp_path, flags):
    out = mpiexec([EXAMPLE, '-datadir', str(mnist_dir), '-outputdir', str(tmp_path), '-n', '3', '-e', '640',
                   '-m', '32', '-r'] + flags, cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout
    # Both workers print the same test result (CNTK's distributed_common.py compares these lines). The
    # workers' lines reach mpiexec's output interleaved, so they are found by pattern.
    results = re.findall(r'Finished Evaluation \[1\]: Minibatch\[1-1\]: metric = ([0-9.]+)% \* 200;', out.stdout)
    assert len(results) == 2, out.stdout
    assert results[0] == results[1], out.stdout
    assert float(results[0]) < 30.0, out.stdout  # ten easy classes: far below chance (90%)
    epochs = re.findall(r'Finished Epoch\[3 of 3\]: \[Training\] loss = [0-9.]+ \* 640, ', out.stdout)
    assert len(epochs) == 2, out.stdout  # the job's samples per epoch
    if '-b' in flags:
        assert 'Distributed training: #Syncs elapsed = 1, #Samples elapsed = 640' in out.stdout, out.stdout
    assert os.path.exists(str(tmp_path / 'MNIST_Distributed_mlp.model'))
    assert os.path.exists(str(tmp_path / 'MNIST_Distributed_mlp.model.ckp'))


@with_mpi
def test_restarted_job_continues_from_its_checkpoint(mnist_dir, tmp_path):
    args = [EXAMPLE, '-datadir', str(mnist_dir), '-outputdir', str(tmp_path), '-e', '640', '-m', '32']
    first = mpiexec(args + ['-n', '2', '-r'], cwd=str(tmp_path))
    assert first.returncode == 0, first.stdout
    second = mpiexec(args + ['-n', '3'], cwd=str(tmp_path))
    assert second.returncode == 0, second.stdout
    # Restored after epoch 2: each worker trains one more epoch (its printer counts from 1, as CNTK's).
    epochs = re.findall(r'Finished Epoch\[[0-9] of 3\]: \[Training\] loss = [0-9.]+ \* 640, ', second.stdout)
    assert len(epochs) == 2, second.stdout


FAILING_WORKER = '''
import sys
from cntk.train.distributed import Communicator
if Communicator.rank() == 0:
    if sys.argv[1] == 'raise':
        raise RuntimeError("worker 0 fails before finalize")
    sys.exit(int(sys.argv[1]))  # leaves without finalize()
Communicator().barrier()
print("worker %d passed the barrier" % Communicator.rank())
Communicator.finalize()
'''


def job_whose_worker_zero_fails(tmp_path, how):
    """Worker 0 fails (`raise`, or sys.exit with the status given) while worker 1 waits in a barrier: the
    job must end, within 60 s and with a non-zero status, and worker 1 never passes the barrier."""
    script = tmp_path / 'failing_worker.py'
    script.write_text(FAILING_WORKER)
    start = time.time()
    out = mpiexec([str(script), how], cwd=str(tmp_path), timeout=120)
    assert out.returncode != 0, out.stdout
    assert time.time() - start < 60
    assert 'passed the barrier' not in out.stdout
    return out


@with_mpi
def test_a_worker_that_raises_stops_the_job(tmp_path):
    # CNTK's finalize_test: worker 0 raises, worker 1 waits in a barrier; the job must end (no hang).
    out = job_whose_worker_zero_fails(tmp_path, 'raise')
    assert 'worker 0 fails before finalize' in out.stdout
    assert 'worker 0 of 2' in out.stdout  # ctk names the worker that stopped the job


@with_mpi
def test_a_worker_that_exits_with_an_error_status_stops_the_job(tmp_path):
    # sys.exit(3) on worker 0: finalizing at exit would wait for worker 1 forever; the job must end,
    # naming the worker and its status.
    out = job_whose_worker_zero_fails(tmp_path, '3')
    assert 'worker 0 of 2 stops the job: it is leaving with exit status 3' in out.stdout


FORGETFUL = '''
from cntk.train.distributed import Communicator
Communicator().barrier()
print("worker %d done" % Communicator.rank())
'''


@with_mpi
def test_a_job_that_ends_well_without_finalize_is_finalized_at_exit(tmp_path):
    script = tmp_path / 'forgetful.py'
    script.write_text(FORGETFUL)
    out = mpiexec([str(script)], cwd=str(tmp_path), timeout=120)
    assert out.returncode == 0, out.stdout
    assert 'worker 0 done' in out.stdout and 'worker 1 done' in out.stdout
    assert 'stops the job' not in out.stdout and 'exiting improperly' not in out.stdout


MANUAL_LOOP = '''
import numpy as np
import cntk as C
from cntk.train.distributed import Communicator, data_parallel_distributed_learner
C.set_fixed_random_seed(1)
x = C.input_variable(4)
y = C.input_variable(2)
z = C.layers.Dense(2)(x)
learner = data_parallel_distributed_learner(C.sgd(z.parameters, C.learning_parameter_schedule(0.1)))
trainer = C.Trainer(z, (C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)), [learner])
rank, workers = Communicator.rank(), Communicator.num_workers()
X = np.random.RandomState(0).rand(10, 4).astype(np.float32)
Y = np.eye(2, dtype=np.float32)[np.arange(10) % 2]
source = C.io.MinibatchSourceFromData(dict(x=X, y=Y), max_samples=20)
steps = 0
while True:  # the Basic_GAN_Distributed.py pattern: every worker reads its partition and steps
    mb = source.next_minibatch(3, input_map={x: source.streams.x, y: source.streams.y},
                               num_data_partitions=workers, partition_index=rank)
    trainer.train_minibatch(mb)
    if trainer.previous_minibatch_sample_count == 0:
        break
    steps += 1
import sys
with open('%s%d.txt' % (sys.argv[1], rank), 'w') as f:  # a file: the workers' stdout lines interleave
    f.write('%d steps, %d samples, %s' % (steps, learner.total_number_of_samples_seen,
                                          ' '.join('%.9g' % v for p in z.parameters for v in p.value.flat)))
Communicator.finalize()
'''


@with_mpi
def test_hand_written_loop_over_partitions_trains_as_one_process(tmp_path):
    script = tmp_path / 'loop.py'
    script.write_text(MANUAL_LOOP)
    out = mpiexec([str(script), 'job'], cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout
    lines = [(tmp_path / ('job%d.txt' % r)).read_text() for r in range(2)]
    # Both workers hold the same parameters, after 8 steps (3, 3, 3, 1 rows per sweep) and 20 samples.
    assert lines[0] == lines[1]
    assert lines[0].startswith('8 steps, 20 samples, '), lines[0]
    # One process on the same minibatches gets the same parameters.
    single = mpiexec([str(script), 'single'], cwd=str(tmp_path), workers=None)
    assert single.returncode == 0, single.stdout
    ref = (tmp_path / 'single0.txt').read_text()
    assert ref.startswith('8 steps, 20 samples, '), ref
    np.testing.assert_allclose([float(v) for v in lines[0].split(', ')[2].split()],
                               [float(v) for v in ref.split(', ')[2].split()], rtol=1e-5, atol=1e-6)


RESIZED = '''
import sys
import numpy as np
import cntk as C
from cntk.train.distributed import Communicator, data_parallel_distributed_learner
phase, folder = sys.argv[1], sys.argv[2]
rank, workers = Communicator.rank(), Communicator.num_workers()
C.set_fixed_random_seed(3)
x = C.input_variable(5, dtype=np.float64)
y = C.input_variable(3, dtype=np.float64)
W1 = C.parameter((5, 7), dtype=np.float64, init=C.glorot_uniform())
W2 = C.parameter((7, 3), dtype=np.float64, init=C.glorot_uniform())
b = C.parameter(3, dtype=np.float64, init=0.1)
z = C.times(C.tanh(C.times(x, W1)), W2) + b
loss = C.cross_entropy_with_softmax(z, y)
learner = data_parallel_distributed_learner(
    C.momentum_sgd(z.parameters, C.learning_parameter_schedule(0.05), C.momentum_schedule(0.9)))
trainer = C.Trainer(z, (loss, C.classification_error(z, y)), [learner])
def step(s):  # the job's minibatch s (12 samples), of which this worker takes rows rank, rank + workers, ...
    g = np.random.RandomState(100 + s)
    X, Y = g.randn(12, 5), np.eye(3)[g.randint(0, 3, 12)]
    trainer.train_minibatch({x: X[rank::workers], y: Y[rank::workers]})
if phase == 'write':
    for s in range(4):
        step(s)
    trainer.save_checkpoint(folder + '/model')
    for s in range(4, 8):
        step(s)
else:
    trainer.restore_from_checkpoint(folder + '/model')
    assert learner.total_number_of_samples_seen == 48, learner.total_number_of_samples_seen
    for s in range(4, 8):
        step(s)
np.save('%s/%s_%d.npy' % (folder, phase, rank), np.concatenate([p.value.ravel() for p in z.parameters]))
Communicator.finalize()
'''


@with_mpi
def test_a_checkpoint_restored_on_another_number_of_workers_continues_the_run(tmp_path):
    # N workers train as one process on the job's minibatches, so a checkpoint of two workers continues on
    # three, or in one plain process, as the two would have gone on (float64: only the sums' order differs).
    script = tmp_path / 'resized.py'
    script.write_text(RESIZED)
    out = mpiexec([str(script), 'write', str(tmp_path)], cwd=str(tmp_path))
    assert out.returncode == 0, out.stdout
    out = mpiexec([str(script), 'three', str(tmp_path)], cwd=str(tmp_path), workers=3)
    assert out.returncode == 0, out.stdout
    out = mpiexec([str(script), 'one', str(tmp_path)], cwd=str(tmp_path), workers=None)
    assert out.returncode == 0, out.stdout
    written = np.load(str(tmp_path / 'write_0.npy'))
    np.testing.assert_array_equal(np.load(str(tmp_path / 'write_1.npy')), written)
    for name in ('three_0', 'three_1', 'three_2', 'one_0'):
        np.testing.assert_allclose(np.load(str(tmp_path / (name + '.npy'))), written, rtol=1e-10, atol=1e-12,
                                   err_msg=name)
