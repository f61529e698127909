// Distributed training with real processes: run by ctest under `mpiexec -n 2` and `-n 4`. Every worker
// runs every test in the same order (they hold collectives). N workers training data-parallel on their
// parts of each minibatch must end with the parameters one process gets on the whole minibatches (to
// 1e-10 in float64), every worker with the same bits, and two runs of the job with the same bits; the
// same through checkpoints, training_session and CTF partitioning; 1-bit SGD reproduces the reference's
// two-worker vector.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "ctk/core/cuda.h"
#include "ctk/distributed/learners.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/train.h"
#include "distributed/quantized_learner.h"

namespace ctk::distributed {
namespace {

namespace fs = std::filesystem;

CommunicatorPtr world() {
    return Communicator::world();
}

// A small two-layer classifier; the same seed gives the same initial values.
struct Mlp {
    Variable x, y;
    FunctionPtr z, loss, metric;
    Mlp(DataType dtype, uint64_t seed) {
        set_fixed_random_seed(seed);
        x = input_variable({6}, dtype, false, false, default_batch_axes(), "features");
        y = input_variable({3}, dtype, false, false, default_batch_axes(), "labels");
        Variable w1 = parameter({6, 8}, glorot_uniform(), dtype, "W1");
        Variable b1 = parameter({8}, constant_initializer(0.1), dtype, "b1");
        Variable w2 = parameter({8, 3}, glorot_uniform(), dtype, "W2");
        Variable b2 = parameter({3}, constant_initializer(0.0), dtype, "b2");
        FunctionPtr h = tanh(plus(times(x, w1)->output(), b1)->output());
        z = plus(times(h->output(), w2)->output(), b2);
        loss = cross_entropy_with_softmax(z, y);
        metric = classification_error(z, y);
    }
    std::vector<Tensor> values() const {
        std::vector<Tensor> out;
        for (const Variable& p : z->parameters()) out.push_back(p.value().to(DataType::f64));
        return out;
    }
};

// Global minibatch `step` of `size` rows (fixed pseudo-random values, labels cycling), and the rows
// worker `rank` of `workers` trains on: every workers-th, as the readers partition.
struct Batch {
    Tensor x, y;
};
Batch global_batch(int step, int64_t size, DataType dtype) {
    std::vector<double> xs, ys;
    for (int64_t i = 0; i < size; ++i) {
        for (int d = 0; d < 6; ++d) xs.push_back(std::sin(0.37 * double(i) + 1.3 * step + 0.9 * d));
        for (int c = 0; c < 3; ++c) ys.push_back((i + step) % 3 == c ? 1.0 : 0.0);
    }
    return {Tensor::from_vector<double>(xs, {size, 6}).to(dtype),
            Tensor::from_vector<double>(ys, {size, 3}).to(dtype)};
}
Tensor rows_of(const Tensor& t, int64_t workers, int64_t rank) {
    std::vector<double> out;
    const int64_t n = t.dim(0), w = t.dim(1);
    std::vector<double> all = t.to_vector<double>();
    int64_t rows = 0;
    for (int64_t i = rank; i < n; i += workers, ++rows)
        out.insert(out.end(), all.begin() + i * w, all.begin() + (i + 1) * w);
    return Tensor::from_vector<double>(out, {rows, w}).to(t.dtype());
}

using LearnerFactory = std::function<LearnerPtr(const std::vector<Variable>&)>;
LearnerPtr plain_sgd(const std::vector<Variable>& p) {
    return sgd(p, learning_parameter_schedule(0.3));  // per minibatch: divided by the job's count
}
LearnerPtr momentum(const std::vector<Variable>& p) {
    return momentum_sgd(p, learning_parameter_schedule_per_sample(0.05), momentum_schedule(0.9));
}

const std::vector<int64_t> kSizes{12, 8, 16, 12, 9, 12, 20, 12};

std::vector<Tensor> train_single(const LearnerFactory& make, DataType dtype,
                                 const std::vector<int64_t>& sizes) {
    Mlp m(dtype, 11);
    Trainer t(m.z, m.loss, m.metric, {make(m.z->parameters())});
    for (size_t s = 0; s < sizes.size(); ++s) {
        Batch b = global_batch(static_cast<int>(s), sizes[s], dtype);
        t.train_minibatch({{m.x, Value(b.x)}, {m.y, Value(b.y)}});
    }
    return m.values();
}

struct DistributedRun {
    std::vector<Tensor> values;
    std::vector<int64_t> counts;  // the job's sample count per step, as the Trainer reports it
    std::vector<double> losses;
    int64_t bytes_sent = 0;  // in the last step
};
DistributedRun train_distributed(const LearnerFactory& make, DataType dtype,
                                 const std::vector<int64_t>& sizes, int64_t bits = 32,
                                 int64_t distributed_after = 0) {
    Mlp m(dtype, 11);
    auto learner = data_parallel_distributed_learner(make(m.z->parameters()), distributed_after, bits);
    Trainer t(m.z, m.loss, m.metric, {learner});
    const int64_t n = world()->num_workers(), r = world()->rank();
    DistributedRun run;
    for (size_t s = 0; s < sizes.size(); ++s) {
        Batch b = global_batch(static_cast<int>(s), sizes[s], dtype);
        const bool warm = t.total_number_of_samples_seen() < distributed_after;
        Tensor x = warm ? b.x : rows_of(b.x, n, r), y = warm ? b.y : rows_of(b.y, n, r);
        MinibatchArguments args;
        if (x.dim(0) > 0) args = {{m.x, Value(x)}, {m.y, Value(y)}};
        t.train_minibatch(args);
        run.counts.push_back(t.previous_minibatch_sample_count());
        run.losses.push_back(t.previous_minibatch_loss_average());
    }
    run.values = m.values();
    run.bytes_sent = learner->bytes_sent_last_step();
    return run;
}

void expect_close(const std::vector<Tensor>& a, const std::vector<Tensor>& b, double rel) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
        const std::vector<double> x = a[i].to_vector<double>(), y = b[i].to_vector<double>();
        ASSERT_EQ(x.size(), y.size());
        for (size_t j = 0; j < x.size(); ++j)
            EXPECT_NEAR(x[j], y[j], rel * std::max(1.0, std::fabs(y[j])))
                << "parameter " << i << " element " << j;
    }
}
void expect_same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
        EXPECT_EQ(a[i].to_vector<double>(), b[i].to_vector<double>()) << "parameter " << i;
}
// Every worker holds the same bits: worker 0's values, broadcast, compared on each.
void expect_same_on_every_worker(const std::vector<Tensor>& values) {
    std::vector<Tensor> mine, main;
    for (const Tensor& v : values) {
        mine.push_back(v.clone());
        main.push_back(v.clone());
    }
    world()->broadcast(main, 0);
    expect_same_bits(mine, main);
}

// A directory every worker names alike: worker 0's, broadcast.
fs::path shared_dir(const std::string& name) {
    std::string d =
        (fs::temp_directory_path() / ("ctk_mpi_test_" + name + "_" + std::to_string(::getpid()))).string();
    world()->broadcast(d, 0);
    if (world()->is_main()) {
        fs::remove_all(d);
        fs::create_directories(d);
    }
    world()->barrier();
    return d;
}

TEST(Mpi, RunsUnderMpiexec) {
    EXPECT_TRUE(Communicator::launched_distributed());
    EXPECT_GE(world()->num_workers(), 2);
    ASSERT_EQ(static_cast<int64_t>(world()->workers().size()), world()->num_workers());
    EXPECT_EQ(world()->current_worker().global_rank, world()->rank());
    EXPECT_FALSE(world()->current_worker().host_id.empty());
}

TEST(Mpi, CollectivesCombineEveryWorker) {
    const int64_t n = world()->num_workers(), r = world()->rank();
    std::vector<double> v{double(r), 1.0, -double(r)};
    world()->all_reduce(v);
    EXPECT_EQ(v, (std::vector<double>{double(n * (n - 1) / 2), double(n), -double(n * (n - 1) / 2)}));
    std::vector<double> m{double(r)};
    world()->all_reduce(m, ReduceOp::max);
    EXPECT_EQ(m[0], double(n - 1));
    const std::vector<std::string> all = world()->all_gather(std::string(size_t(r), 'a'));
    for (int64_t w = 0; w < n; ++w) EXPECT_EQ(all[size_t(w)], std::string(size_t(w), 'a'));
    const std::vector<std::string> at_root = world()->gather("w" + std::to_string(r), 0);
    EXPECT_EQ(at_root.size(), r == 0 ? size_t(n) : 0u);
    for (size_t w = 0; w < at_root.size(); ++w) EXPECT_EQ(at_root[w], "w" + std::to_string(w));
    std::string b = r == 0 ? "from main" : "";
    world()->broadcast(b, 0);
    EXPECT_EQ(b, "from main");
    std::vector<std::string> out;
    for (int64_t w = 0; w < n; ++w) out.push_back(std::to_string(r) + ">" + std::to_string(w));
    const std::vector<std::string> in = world()->all_to_all(out);
    for (int64_t w = 0; w < n; ++w) EXPECT_EQ(in[size_t(w)], std::to_string(w) + ">" + std::to_string(r));
    std::vector<Tensor> ts{Tensor::full(Shape{3}, double(r + 1), DataType::f32),
                           Tensor::full(Shape{2, 2}, 0.5, DataType::f64)};
    world()->all_reduce_sum(ts);
    EXPECT_EQ(ts[0].to_vector<float>(), std::vector<float>(3, float(n * (n + 1) / 2)));
    EXPECT_EQ(ts[1].to_vector<double>(), std::vector<double>(4, 0.5 * double(n)));
    world()->barrier();
}

TEST(Mpi, GpuTensorsAreSummedWhereTheyAre) {
    // Run with one worker per GPU (ctest distributed_mpi_gpu: mpiexec -n 1); NCCL under MPI builds with it.
    const int64_t n = world()->num_workers(), r = world()->rank();
    if (ctk::cuda::device_count() < n)
        GTEST_SKIP() << "needs a GPU per worker (" << ctk::cuda::device_count() << " here)";
    const Device gpu = Device::cuda(static_cast<int>(r));
    std::vector<Tensor> ts{Tensor::full(Shape{1000}, double(r + 1), DataType::f32).to(gpu),
                           Tensor::full(Shape{3, 5}, 0.25, DataType::f64).to(gpu)};
    world()->all_reduce_sum(ts);
    EXPECT_TRUE(ts[0].device() == gpu);
    EXPECT_EQ(ts[0].to(Device::cpu()).to_vector<float>(), std::vector<float>(1000, float(n * (n + 1) / 2)));
    EXPECT_EQ(ts[1].to(Device::cpu()).to_vector<double>(), std::vector<double>(15, 0.25 * double(n)));
}

TEST(Mpi, OneBitSumOfTwoWorkersIsTheReferenceVector) {
    if (world()->num_workers() != 2) GTEST_SKIP() << "the reference vector is for two workers";
    // Column-major 4 x 2 gradients of the reference: worker 0's and worker 1's.
    const std::vector<float> g0{0.3f, -0.1f, 0.5f, -0.4f, -0.2f, 0.6f, 0.0f, -0.8f};
    const std::vector<float> g1{0.1f, 0.3f, -0.5f, 0.7f, 0.2f, -0.4f, 0.6f, -0.8f};
    detail::QuantizedSum<float> q;
    q.bits = 1;
    std::vector<std::vector<float>> grads{world()->rank() == 0 ? g0 : g1};
    q.sum(*world(), grads, {Shape{2, 4}});
    const std::vector<float> want{1.0f / 3, 1.0f / 3, -0.1f, 1.0f / 3, -0.5f, -0.5f, 0.7f, -0.5f};
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(grads[0][i], want[i], 1e-6f) << i;
    EXPECT_GT(q.bytes_sent, 0);
}

TEST(Mpi, DataParallelSgdEqualsOneProcessOnTheGlobalMinibatch) {
    for (const auto& [name, make] :
         {std::pair<const char*, LearnerFactory>{"sgd", plain_sgd}, {"momentum", momentum}}) {
        SCOPED_TRACE(name);
        const std::vector<Tensor> single = train_single(make, DataType::f64, kSizes);
        const DistributedRun run = train_distributed(make, DataType::f64, kSizes);
        expect_close(run.values, single, 1e-10);
        expect_same_on_every_worker(run.values);
        for (size_t s = 0; s < kSizes.size(); ++s) EXPECT_EQ(run.counts[s], kSizes[s]);  // the job's count
        // A ring all-reduce's traffic: 2 (N - 1) / N of the gradients' bytes (6*8 + 8 + 8*3 + 3 doubles).
        const int64_t n = world()->num_workers();
        EXPECT_EQ(run.bytes_sent, 2 * (n - 1) * (83 * 8) / n);
        const DistributedRun again = train_distributed(make, DataType::f64, kSizes);
        expect_same_bits(run.values, again.values);
        EXPECT_EQ(run.losses, again.losses);
    }
}

TEST(Mpi, GradientsSummedDuringBackwardInAnyBucketSizeAreTheSame) {
    // One bucket per parameter (100 bytes), CNTK's single sum after backward (0), and the default: the
    // same parameters as one process, and the same bits in two runs, with workers that have no data.
    const int64_t n = world()->num_workers();
    const std::vector<int64_t> sizes{12, n - 1, 16, 1, 12};
    for (const char* mb : {"0.0001", "0", "1"}) {
        SCOPED_TRACE(mb);
        ::setenv("CTK_ALLREDUCE_BUCKET_MB", mb, 1);
        const DistributedRun run = train_distributed(momentum, DataType::f64, sizes);
        expect_close(run.values, train_single(momentum, DataType::f64, sizes), 1e-10);
        expect_same_on_every_worker(run.values);
        expect_same_bits(run.values, train_distributed(momentum, DataType::f64, sizes).values);
    }
    ::unsetenv("CTK_ALLREDUCE_BUCKET_MB");
}

TEST(Mpi, DataParallelInFloat32IsWithinRounding) {
    const std::vector<Tensor> single = train_single(momentum, DataType::f32, kSizes);
    const DistributedRun run = train_distributed(momentum, DataType::f32, kSizes);
    expect_close(run.values, single, 2e-5);
    expect_same_on_every_worker(run.values);
    expect_same_bits(run.values, train_distributed(momentum, DataType::f32, kSizes).values);
}

TEST(Mpi, WorkersWithoutDataStillStep) {
    // Minibatches of fewer rows than workers: the last workers have nothing and contribute zeros.
    const int64_t n = world()->num_workers();
    const std::vector<int64_t> sizes{n - 1, 1, 2 * n + 1, n - 1};
    const DistributedRun run = train_distributed(momentum, DataType::f64, sizes);
    expect_close(run.values, train_single(momentum, DataType::f64, sizes), 1e-10);
    EXPECT_EQ(run.counts[1], 1);
}

TEST(Mpi, WarmStartTrainsAloneThenShares) {
    // Before distributed_after every worker trains on the whole minibatch, alone; then on its part.
    const DistributedRun run = train_distributed(momentum, DataType::f64, kSizes, 32, 20);
    expect_close(run.values, train_single(momentum, DataType::f64, kSizes), 1e-10);
    expect_same_on_every_worker(run.values);
}

TEST(Mpi, QuantizedTrainingIsTheSameOnEveryWorkerAndClose) {
    for (int64_t bits : {1, 2, 8}) {
        SCOPED_TRACE(bits);
        const DistributedRun run = train_distributed(momentum, DataType::f32, kSizes, bits);
        expect_same_on_every_worker(run.values);
        expect_same_bits(run.values, train_distributed(momentum, DataType::f32, kSizes, bits).values);
        for (size_t s = 0; s < kSizes.size(); ++s) EXPECT_EQ(run.counts[s], kSizes[s]);
        EXPECT_GT(run.bytes_sent, 0);
    }
    // 16 bits is all but exact.
    expect_close(train_distributed(momentum, DataType::f64, kSizes, 16).values,
                 train_single(momentum, DataType::f64, kSizes), 1e-3);
}

TEST(Mpi, DifferentModelsAreNamedAtTheFirstStep) {
    set_fixed_random_seed(3);
    const int64_t width = world()->rank() == 1 ? 5 : 4;  // worker 1 builds another model
    Variable x = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "x");
    Variable w = parameter({3, width}, glorot_uniform(), DataType::f32, "W");
    FunctionPtr loss = reduce_sum(times(x, w)->output(), {Axis::all_static_axes()});
    Trainer t(nullptr, loss, nullptr,
              {data_parallel_distributed_learner(sgd({w}, learning_parameter_schedule(0.1)))});
    try {
        t.train_minibatch({{x, Value(Tensor::full(Shape{2, 3}, 1.0))}});
        ADD_FAILURE() << "no error";
    } catch (const ValueError& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("worker 1"), std::string::npos) << what;
        EXPECT_NE(what.find("'W'"), std::string::npos) << what;
    }
}

TEST(Mpi, WorkersStartFromWorkerZerosParameters) {
    // Each worker initialises differently; the first step gives them worker 0's values.
    Mlp m(DataType::f64, 11 + static_cast<uint64_t>(world()->rank()));
    Trainer t(m.z, m.loss, m.metric, {data_parallel_distributed_learner(momentum(m.z->parameters()))});
    const int64_t n = world()->num_workers(), r = world()->rank();
    for (size_t s = 0; s < kSizes.size(); ++s) {
        Batch b = global_batch(static_cast<int>(s), kSizes[s], DataType::f64);
        t.train_minibatch({{m.x, Value(rows_of(b.x, n, r))}, {m.y, Value(rows_of(b.y, n, r))}});
    }
    expect_close(m.values(), train_single(momentum, DataType::f64, kSizes), 1e-10);
}

TEST(Mpi, BlockMomentumFollowsTheHandComputationOfTwoCombinations) {
    if (world()->num_workers() != 2) GTEST_SKIP() << "the hand computation is for two workers";
    // loss = x * w per sample, so a worker's SGD step (rate 1 per sample) is w -= x; one sample per
    // worker per step and block_size 2: a combination after each step, bm = 1 - 1/2.
    Variable x = input_variable({1}, DataType::f64, false, false, default_batch_axes(), "x");
    Variable w = parameter({1}, constant_initializer(1.0), DataType::f64, "w");
    FunctionPtr loss = reduce_sum(element_times(x, w)->output(), {Axis::all_static_axes()});
    Trainer t(nullptr, loss, nullptr,
              {block_momentum_distributed_learner(sgd({w}, learning_parameter_schedule_per_sample(1.0)), 2)});
    const bool first = world()->rank() == 0;
    t.train_minibatch({{x, Value(Tensor::full(Shape{1, 1}, first ? 0.2 : 0.4, DataType::f64))}});
    EXPECT_NEAR(w.value().item(), 0.55, 1e-15);         // worker models 0.8 and 0.6
    EXPECT_EQ(t.previous_minibatch_sample_count(), 2);  // the job's
    t.train_minibatch({{x, Value(Tensor::full(Shape{1, 1}, first ? 0.05 : 0.1, DataType::f64))}});
    EXPECT_NEAR(w.value().item(), 0.2125, 1e-15);  // worker models 0.5 and 0.45
    EXPECT_EQ(t.total_number_of_samples_seen(), 4);
}

TEST(Mpi, BlockMomentumWithoutMomentumAveragesModels) {
    // bm = 0 (time constant 0), block learning rate 1/N, a block per step and equal parts: the average
    // of the workers' SGD steps is one SGD step on the global minibatch.
    const int64_t n = world()->num_workers(), r = world()->rank();
    const std::vector<int64_t> sizes(6, 3 * n);
    Mlp m(DataType::f64, 11);
    Trainer t(m.z, m.loss, m.metric,
              {block_momentum_distributed_learner(plain_sgd(m.z->parameters()), 3 * n, 0.0, false, false,
                                                  1.0 / double(n))});
    for (size_t s = 0; s < sizes.size(); ++s) {
        Batch b = global_batch(static_cast<int>(s), sizes[s], DataType::f64);
        t.train_minibatch({{m.x, Value(rows_of(b.x, n, r))}, {m.y, Value(rows_of(b.y, n, r))}});
    }
    expect_close(m.values(), train_single(plain_sgd, DataType::f64, sizes), 1e-10);
    expect_same_on_every_worker(m.values());
}

TEST(Mpi, BlockMomentumCheckpointRestartContinuesAsTheUninterruptedRun) {
    const fs::path dir = shared_dir("bmuf");
    const std::string path = (dir / "model").string();
    const int64_t n = world()->num_workers(), r = world()->rank();
    auto run = [&](Mlp& m, Trainer& t, size_t from, size_t to) {
        for (size_t s = from; s < to; ++s) {
            Batch b = global_batch(static_cast<int>(s), kSizes[s], DataType::f32);
            t.train_minibatch({{m.x, Value(rows_of(b.x, n, r))}, {m.y, Value(rows_of(b.y, n, r))}});
        }
    };
    auto learner = [](const Mlp& m) {
        return block_momentum_distributed_learner(momentum(m.z->parameters()), 30);
    };
    Mlp a(DataType::f32, 5);
    Trainer ta(a.z, a.loss, a.metric, {learner(a)});
    run(a, ta, 0, 3);          // 36 samples: a combination at 30, 6 into the next block
    ta.save_checkpoint(path);  // combines first
    expect_same_on_every_worker(a.values());
    run(a, ta, 3, kSizes.size());
    Mlp b(DataType::f32, 99);
    Trainer tb(b.z, b.loss, b.metric, {learner(b)});
    tb.restore_from_checkpoint(path);
    run(b, tb, 3, kSizes.size());
    expect_same_bits(a.values(), b.values());
    world()->barrier();
    if (world()->is_main()) fs::remove_all(dir);
}

TEST(Mpi, CheckpointRestartContinuesAsTheUninterruptedRun) {
    for (int64_t bits : {32, 1}) {
        SCOPED_TRACE(bits);
        const fs::path dir = shared_dir("ckp" + std::to_string(bits));
        const std::string path = (dir / "model").string();
        const int64_t n = world()->num_workers(), r = world()->rank();
        auto run = [&](Mlp& m, Trainer& t, size_t from, size_t to) {
            for (size_t s = from; s < to; ++s) {
                Batch b = global_batch(static_cast<int>(s), kSizes[s], DataType::f32);
                t.train_minibatch({{m.x, Value(rows_of(b.x, n, r))}, {m.y, Value(rows_of(b.y, n, r))}});
            }
        };
        Mlp a(DataType::f32, 5);
        Trainer ta(a.z, a.loss, a.metric,
                   {data_parallel_distributed_learner(momentum(a.z->parameters()), 0, bits)});
        run(a, ta, 0, 4);
        ta.save_checkpoint(path, Dictionary{{"worker", world()->rank()}});
        EXPECT_TRUE(fs::exists(path) && fs::exists(path + ".ckp"));
        run(a, ta, 4, kSizes.size());

        Mlp b(DataType::f32, 99);  // other initial values: the checkpoint replaces them
        Trainer tb(b.z, b.loss, b.metric,
                   {data_parallel_distributed_learner(momentum(b.z->parameters()), 0, bits)});
        const Dictionary external = tb.restore_from_checkpoint(path);
        EXPECT_EQ(external.at("worker").as_int(), world()->rank());  // each worker gets its own state back
        EXPECT_EQ(tb.total_number_of_samples_seen(), 12 + 8 + 16 + 12);
        run(b, tb, 4, kSizes.size());
        expect_same_bits(a.values(), b.values());
        world()->barrier();
        if (world()->is_main()) fs::remove_all(dir);
    }
}

// A CTF file of `rows` samples in the layout of Mlp's inputs.
void write_ctf(const std::string& path, int rows) {
    std::ofstream out(path);
    for (int i = 0; i < rows; ++i) {
        out << "|features";
        for (int d = 0; d < 6; ++d) out << ' ' << std::sin(0.61 * i + 0.8 * d);
        out << " |labels";
        for (int c = 0; c < 3; ++c) out << ' ' << (i % 3 == c ? 1 : 0);
        out << "\n";
    }
}

// A reader of such a file: `sweeps` sweeps, randomized (two chunks at a time) or in file order.
std::shared_ptr<MinibatchSource> ctf_source(const std::string& path, int64_t sweeps, bool randomize) {
    MinibatchSourceConfig c;
    c.deserializers = {ctf_deserializer(path, {{"features", "features", {6}}, {"labels", "labels", {3}}})};
    c.max_sweeps = sweeps;
    c.randomize = randomize;
    c.randomization_window_in_chunks = 2;
    return std::make_shared<MinibatchSource>(c);
}

TEST(Mpi, TrainingSessionPartitionsTheReaderAndMatchesOneProcess) {
    const fs::path dir = shared_dir("session");
    const std::string data = (dir / "train.ctf").string();
    if (world()->is_main()) write_ctf(data, 100);
    world()->barrier();
    auto source = [&] { return ctf_source(data, 2, true); };
    // The test set (37 samples: the last minibatch leaves some workers without data) and a
    // cross-validation, evaluated by the job as by one process.
    const std::string test_data = (dir / "test.ctf").string();
    if (world()->is_main()) write_ctf(test_data, 37);
    world()->barrier();
    auto test_source = [&] { return ctf_source(test_data, 1, false); };
    struct TestRecorder : ProgressWriter {
        std::vector<std::pair<int64_t, double>> tests;
        void on_write_training_update(Range, Range, Sums, std::optional<Sums>) override {}
        void on_write_test_update(Range, Range, Sums) override {}
        void on_write_training_summary(int64_t, int64_t, int64_t, double, std::optional<double>,
                                       int64_t) override {}
        void on_write_test_summary(int64_t samples, int64_t, int64_t, double metric, int64_t) override {
            tests.emplace_back(samples, metric);
        }
        void write(const std::string&, double) override {}
    };
    std::vector<std::tuple<int64_t, double, int64_t>> cv_single, cv_many;
    auto cv = [&](std::vector<std::tuple<int64_t, double, int64_t>>& out) {
        CrossValidationConfig c;
        c.source = test_source();
        c.minibatch_size = 8;
        c.frequency = {100, DataUnit::sample};
        c.callback = [&out](int64_t index, double average, int64_t samples, int64_t) {
            out.emplace_back(index, average, samples);
            return true;
        };
        return c;
    };
    auto recorder_one = std::make_shared<TestRecorder>(), recorder_many = std::make_shared<TestRecorder>();
    Mlp one(DataType::f64, 21);
    auto single = std::make_shared<Trainer>(one.z, one.loss, one.metric,
                                            std::vector<LearnerPtr>{momentum(one.z->parameters())},
                                            std::vector<ProgressWriterPtr>{recorder_one});
    TrainingSession(single, source(), 16, {{one.x, "features"}, {one.y, "labels"}}, {}, kInfinitelyRepeat,
                    std::nullopt, cv(cv_single), TestConfig{test_source(), 8})
        .train();

    Mlp many(DataType::f64, 21);
    auto trainer = std::make_shared<Trainer>(
        many.z, many.loss, many.metric,
        std::vector<LearnerPtr>{data_parallel_distributed_learner(momentum(many.z->parameters()))},
        std::vector<ProgressWriterPtr>{recorder_many});
    TrainingSession(trainer, source(), 16, {{many.x, "features"}, {many.y, "labels"}}, {}, kInfinitelyRepeat,
                    CheckpointConfig{(dir / "session.model").string(), {64, DataUnit::sample}}, cv(cv_many),
                    TestConfig{test_source(), 8})
        .train();
    EXPECT_EQ(trainer->total_number_of_samples_seen(), 200);
    expect_close(many.values(), one.values(), 1e-10);
    // Tests: the job's 37 samples, one process's metric (each worker evaluated its part).
    ASSERT_EQ(recorder_one->tests.size(), recorder_many->tests.size());
    ASSERT_FALSE(recorder_many->tests.empty());
    for (size_t i = 0; i < recorder_many->tests.size(); ++i) {
        EXPECT_EQ(recorder_many->tests[i].first, 37);
        EXPECT_EQ(recorder_many->tests[i].first, recorder_one->tests[i].first);
        EXPECT_NEAR(recorder_many->tests[i].second, recorder_one->tests[i].second, 1e-9);
    }
    ASSERT_EQ(cv_many.size(), cv_single.size());
    EXPECT_EQ(cv_many.size(), 2u);  // at 100 and 200 samples
    for (size_t i = 0; i < cv_many.size(); ++i) {
        EXPECT_EQ(std::get<2>(cv_many[i]), 37);
        EXPECT_NEAR(std::get<1>(cv_many[i]), std::get<1>(cv_single[i]), 1e-9);
    }
    expect_same_on_every_worker(many.values());
    world()->barrier();
    if (world()->is_main()) fs::remove_all(dir);
}

}  // namespace
}  // namespace ctk::distributed

// Every worker prints its own results (mpiexec merges them); each exits with its own status.
int main(int argc, char** argv) {
    ::testing::InitGoogleTest(&argc, argv);
    const int status = RUN_ALL_TESTS();
    ctk::distributed::Communicator::finalize();
    return status;
}
