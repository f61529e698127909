// The CUDA runtime, the caching device allocator and copies between host and GPU. Tests that need a
// GPU skip (saying why) without one; the no-GPU behaviour is tested where there is none.
#include <gtest/gtest.h>

#include "ctk/ctk.h"

using namespace ctk;

namespace {

class CudaTest : public ::testing::Test {
protected:
    void SetUp() override {
        if (!cuda::is_available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
    }
    const Device gpu = Device::cuda(0);
};

}  // namespace

TEST(CudaRuntime, ReportsWhyThereIsNoGpu) {
    if (cuda::is_available()) GTEST_SKIP() << "a GPU is present";
    EXPECT_EQ(cuda::device_count(), 0);
    EXPECT_FALSE(cuda::unavailable_reason().empty());
    try {
        Tensor::empty(Shape{4}, DataType::f32, Device::cuda(0));
        FAIL() << "allocating on a missing GPU must throw";
    } catch (const DeviceError& e) {
        EXPECT_NE(std::string(e.what()).find("CUDA:0"), std::string::npos) << e.what();
    }
}

TEST(CudaRuntime, GraphsNeedAGpu) {
    if (cuda::is_available()) GTEST_SKIP() << "a GPU is present";
    std::string why;
    bool ran = false;
    try {
        EXPECT_FALSE(cuda::Graph::capture(
            Device::cuda(0), [&] { ran = true; }, &why));
        EXPECT_FALSE(why.empty());    // a CPU-only build says so
    } catch (const DeviceError& e) {  // a CUDA build says the device is missing
        EXPECT_NE(std::string(e.what()).find("CUDA:0"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(ran);
}

TEST(CudaRuntime, Tf32AndDeterministicSwitches) {
    EXPECT_FALSE(cuda::allow_tf32());
    cuda::set_allow_tf32(true);
    EXPECT_TRUE(cuda::allow_tf32());
    cuda::set_allow_tf32(false);
    EXPECT_FALSE(cuda::deterministic());
    cuda::set_deterministic(true);
    EXPECT_TRUE(cuda::deterministic());
    cuda::set_deterministic(false);
}

TEST_F(CudaTest, MissingDeviceIndexIsAnError) {
    EXPECT_THROW(Tensor::empty(Shape{4}, DataType::f32, Device::cuda(cuda::device_count())), DeviceError);
}

TEST_F(CudaTest, PropertiesAreSane) {
    auto p = cuda::properties(0);
    EXPECT_FALSE(p.name.empty());
    EXPECT_GE(p.major, 7);
    EXPECT_GT(p.total_memory, 0);
    EXPECT_GT(p.multiprocessors, 0);
    EXPECT_GT(cuda::driver_version(), 0);
}

TEST_F(CudaTest, RoundTripPreservesValues) {
    Tensor a = Tensor::arange(Shape{3, 5}, DataType::f32);
    Tensor g = a.to(gpu);
    EXPECT_TRUE(g.device().is_cuda());
    EXPECT_EQ(g.to(Device::cpu()).to_vector<float>(), a.to_vector<float>());
    EXPECT_EQ(g.to_vector<float>(), a.to_vector<float>());  // to_vector copies device tensors itself
}

TEST_F(CudaTest, StridedAndConvertingCopies) {
    Tensor a = Tensor::arange(Shape{4, 6}, DataType::f64);
    Tensor g = a.to(gpu);
    // A transposed view copied on the device, with a dtype conversion on the way.
    Tensor t = Tensor::empty(Shape{6, 4}, DataType::f32, gpu);
    t.copy_from(g.transpose(0, 1));
    EXPECT_EQ(t.to_vector<double>(), a.transpose(0, 1).contiguous().to_vector<double>());
    // Host strided view -> device, device -> host strided view.
    Tensor host_view = a.slice(1, 1, 5, 2);
    Tensor d = Tensor::empty(host_view.shape(), DataType::bf16, gpu);
    d.copy_from(host_view);
    EXPECT_EQ(d.to_vector<double>(), host_view.contiguous().to_vector<double>());
    Tensor back = Tensor::zeros(Shape{4, 6}, DataType::f64);
    back.slice(1, 0, 3).copy_from(g.slice(1, 3, 6));
    EXPECT_EQ(back.at({2, 1}), a.at({2, 4}));
    EXPECT_EQ(back.at({2, 4}), 0.0);
    // int64 beyond 2^53 moves exactly.
    Tensor big = Tensor::full(Shape{3}, 0.0, DataType::i64);
    big.data<int64_t>()[1] = (int64_t(1) << 60) + 1;
    EXPECT_EQ(big.to(gpu).to_vector<int64_t>(), big.to_vector<int64_t>());
}

TEST_F(CudaTest, FillAtAndSet) {
    Tensor g = Tensor::full(Shape{2, 3}, 2.5, DataType::f16, gpu);
    EXPECT_EQ(g.to_vector<float>(), std::vector<float>(6, 2.5f));
    g.set({1, 2}, -1.0);
    EXPECT_EQ(g.at({1, 2}), -1.0);
    EXPECT_EQ(g.at({0, 0}), 2.5);
    EXPECT_EQ(Tensor::scalar(7.0).to(gpu).item(), 7.0);
    EXPECT_EQ(Tensor::zeros(Shape{2, 2}, DataType::f32, gpu).to_vector<float>(), std::vector<float>(4, 0.0f));
}

TEST_F(CudaTest, AllocatorCachesAndReportsStatistics) {
    Allocator& alloc = allocator_for(gpu);
    alloc.empty_cache();
    const auto before = alloc.stats();
    {
        Tensor t = Tensor::empty(Shape{1 << 20}, DataType::f32, gpu);
        EXPECT_GE(alloc.stats().bytes_in_use, before.bytes_in_use + (4 << 20));
    }
    const auto freed = alloc.stats();
    EXPECT_GE(freed.bytes_cached, 4 << 20);
    Tensor again = Tensor::empty(Shape{1 << 20}, DataType::f32, gpu);
    EXPECT_EQ(alloc.stats().num_cache_hits, freed.num_cache_hits + 1);
    alloc.empty_cache();
    EXPECT_EQ(alloc.stats().bytes_cached, 0);
}

TEST_F(CudaTest, OutOfMemoryIsAClearError) {
    try {
        Tensor::empty(Shape{int64_t(1) << 48}, DataType::f32, gpu);  // 1 PiB
        FAIL() << "expected OutOfMemoryError";
    } catch (const OutOfMemoryError& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("CUDA out of memory on CUDA:0"), std::string::npos) << m;
        EXPECT_NE(m.find("in use"), std::string::npos) << m;
        EXPECT_NE(m.find("cached"), std::string::npos) << m;
    }
    // The device still works afterwards.
    EXPECT_EQ(Tensor::full(Shape{2}, 1.0, DataType::f32, gpu).to_vector<float>(),
              std::vector<float>(2, 1.0f));
}

TEST_F(CudaTest, OpsRunOnTheGpuAndCrossDeviceInputsAreRefused) {
    Tensor a = Tensor::arange(Shape{2, 3}, DataType::f32).to(gpu);
    Tensor b = Tensor::ones(Shape{3}, DataType::f32, gpu);
    Tensor c = plus(a, b);
    EXPECT_TRUE(c.device().is_cuda());
    EXPECT_EQ(c.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_THROW(plus(a, Tensor::ones(Shape{3})), DeviceError);
}

// With deterministic algorithms forced, two identical convolution training steps give bit-identical
// results (cuDNN's non-deterministic weight-gradient algorithms are skipped; ctk's own kernels use no
// atomics).
TEST_F(CudaTest, DeterministicModeIsBitReproducible) {
    cuda::set_deterministic(true);
    Generator gen(5);
    Tensor x = Tensor::empty(Shape{16, 8, 12, 12}, DataType::f32),
           w = Tensor::empty(Shape{8, 8, 3, 3}, DataType::f32);
    gen.uniform(x, -1, 1);
    gen.uniform(w, -1, 1);
    x = x.to(gpu);
    w = w.to(gpu);
    ConvAttrs a;
    a.pad_lo = {1, 1};
    a.pad_hi = {1, 1};
    auto step = [&] {
        Tensor y = convolution(x, w, Tensor(), a);
        Tensor dw = convolution_backward_weights(x, y, w.shape(), a, true).dw;
        Tensor s =
            reduce_sum(batch_norm_training(y, Tensor::ones(Shape{8}, DataType::f32, gpu),
                                           Tensor::zeros(Shape{8}, DataType::f32, gpu), BatchNormAttrs{})
                           .y,
                       {});
        return std::make_pair(dw.to_vector<float>(), s.item());
    };
    auto first = step(), second = step();
    cuda::set_deterministic(false);
    EXPECT_EQ(first.first, second.first);
    EXPECT_EQ(first.second, second.second);
}

TEST(CudaPinned, FallsBackToOrdinaryMemoryWithoutAGpu) {
    if (cuda::is_available()) GTEST_SKIP() << "a GPU is present";
    Tensor p = cuda::pinned_empty(Shape{4}, DataType::f32);
    EXPECT_TRUE(p.device().is_cpu());
    EXPECT_FALSE(cuda::is_pinned(p));
}

TEST_F(CudaTest, PinnedBlocksAreNotReusedUnderAQueuedCopy) {
    const int64_t n = int64_t(1) << 22;  // 16 MiB: the copy takes long enough to still be queued
    Tensor first = cuda::pinned_empty(Shape{n}, DataType::f32);
    EXPECT_TRUE(cuda::is_pinned(first));
    EXPECT_TRUE(first.device().is_cpu());
    first.fill(1.0);
    // Keep the stream busy, then queue the copy and drop the host tensor at once.
    Tensor busy = Tensor::ones(Shape{4096, 4096}, DataType::f32, gpu);
    for (int i = 0; i < 4; ++i) busy = matmul(busy, busy);
    Tensor on_gpu = cuda::to_device_async(first, gpu);
    first = Tensor();
    Tensor second = cuda::pinned_empty(Shape{n}, DataType::f32);  // must not be the block still being read
    second.fill(2.0);
    cuda::synchronize(gpu);
    EXPECT_EQ(reduce_sum(on_gpu, {}).item(), static_cast<double>(n));
}

TEST_F(CudaTest, UploadsFromPageableMemoryReturnBeforeTheStreamReachesThem) {
    // Work queued ahead keeps the stream busy; an upload of a small pageable tensor (a mask, an index
    // table) goes through a pinned staging copy, so it returns at once and its source may change.
    Tensor busy = Tensor::ones(Shape{4096, 4096}, DataType::f32, gpu);
    for (int i = 0; i < 16; ++i) busy = matmul(busy, busy);
    cuda::Event queued(gpu);
    queued.record();
    for (int64_t n : {int64_t(3), int64_t(1000), int64_t(300000)}) {
        Tensor src = Tensor::arange(Shape{n});
        const std::vector<float> want = src.to_vector<float>();
        Tensor on_gpu = src.to(gpu);
        src.fill(-1.0);  // the caller may write its buffer as soon as the upload returns
        EXPECT_FALSE(queued.ready()) << n << " elements: the upload waited for the stream";
        cuda::synchronize(gpu);
        EXPECT_EQ(on_gpu.to(Device::cpu()).to_vector<float>(), want) << n << " elements";
        for (int i = 0; i < 16; ++i) busy = matmul(busy, busy);
        queued.record();
    }
    cuda::synchronize(gpu);
}

TEST_F(CudaTest, ToHostAsyncLandsInPinnedMemoryWhenItsEventPasses) {
    Tensor x = Tensor::arange(Shape{3, 5}).to(gpu).slice(1, 0, 5, 2);  // strided: packed first
    cuda::Event done(gpu);
    Tensor host = cuda::to_host_async(x, done);
    // Work queued after the copy does not hold the host back once the copy's event has passed.
    Tensor busy = Tensor::ones(Shape{4096, 4096}, DataType::f32, gpu);
    for (int i = 0; i < 8; ++i) busy = matmul(busy, busy);
    done.synchronize();
    EXPECT_TRUE(cuda::is_pinned(host));
    EXPECT_EQ(host.shape(), (Shape{3, 3}));
    EXPECT_EQ(host.contiguous().to_vector<float>(), x.to(Device::cpu()).contiguous().to_vector<float>());
    cuda::Event event(gpu);
    EXPECT_THROW(cuda::to_host_async(Tensor::ones(Shape{2}), event), DeviceError);  // a CPU tensor
    cuda::synchronize(gpu);
}

TEST_F(CudaTest, EventsOrderAndTimeTheStream) {
    cuda::Event start(gpu), stop(gpu);
    start.record();
    Tensor a = Tensor::ones(Shape{2048, 2048}, DataType::f32, gpu);
    Tensor b = matmul(a, a);
    stop.record();
    stop.synchronize();
    EXPECT_TRUE(stop.ready());
    EXPECT_GT(start.elapsed_ms(stop), 0.0f);
    EXPECT_EQ(b.at({0, 0}), 2048.0);
}

TEST_F(CudaTest, FillWritesEveryDtypeAndLayoutAsTheCpuDoes) {
    for (DataType dt : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i32,
                        DataType::i64, DataType::u8}) {
        for (double v : {0.0, -0.0, 0.1, 3.0, 200.0}) {
            Tensor cpu = Tensor::empty(Shape{5, 7}, dt);
            cpu.fill(v);
            Tensor g = Tensor::full(Shape{5, 7}, 9.0, dt, gpu);
            g.fill(v);
            EXPECT_EQ(g.to(Device::cpu()).to(DataType::f64).to_vector<double>(),
                      cpu.to(DataType::f64).to_vector<double>())
                << dtype_name(dt) << " " << v;
        }
        // A strided view: only its elements change.
        Tensor g = Tensor::zeros(Shape{4, 6}, dt, gpu);
        g.slice(1, 1, 6, 2).fill(1.0);
        Tensor expect = Tensor::zeros(Shape{4, 6}, dt);
        expect.slice(1, 1, 6, 2).fill(1.0);
        EXPECT_EQ(g.to(Device::cpu()).to(DataType::f64).to_vector<double>(),
                  expect.to(DataType::f64).to_vector<double>())
            << dtype_name(dt);
    }
}

TEST_F(CudaTest, GraphReplaysWorkOnRefilledInputs) {
    Tensor x = Tensor::arange(Shape{1000}).to(gpu);
    Tensor y;
    std::string why;
    auto graph = cuda::Graph::capture(
        gpu,
        [&] {
            Tensor doubled = binary(OpKind::element_times, x, Tensor::full(Shape{}, 2.0, DataType::f32, gpu));
            y = binary(OpKind::plus, doubled, Tensor::ones(Shape{}, DataType::f32, gpu));
        },
        &why);
    ASSERT_TRUE(graph) << why;
    EXPECT_GT(graph->num_nodes(), 0);
    EXPECT_GT(allocator_for(gpu).stats().bytes_in_graph_pools, 0);  // `doubled`, freed into the pool
    graph->replay();
    EXPECT_EQ(y.at({999}), 2.0 * 999 + 1);
    x.fill(-1.0);  // in place: the recording reads it
    graph->replay();
    EXPECT_EQ(y.to_vector<float>(), std::vector<float>(1000, -1.0f));
    // Eager work in between takes no block of the graph's.
    Tensor other = Tensor::full(Shape{1000}, 5.0, DataType::f32, gpu);
    graph->replay();
    EXPECT_EQ(y.at({0}), -1.0);
    EXPECT_EQ(other.at({0}), 5.0);
    graph.reset();
    EXPECT_EQ(allocator_for(gpu).stats().bytes_in_graph_pools, 0);
    EXPECT_EQ(y.at({3}), -1.0);  // results outlive their graph
}

TEST_F(CudaTest, GraphHoldsBlocksFreedDuringTheCapture) {
    Tensor old = Tensor::full(Shape{4096}, 7.0, DataType::f32, gpu);
    void* address = old.raw_data();
    Tensor y;
    std::string why;
    auto graph = cuda::Graph::capture(
        gpu,
        [&] {
            y = binary(OpKind::plus, old, old);
            old = Tensor();  // the recording still reads it at every replay
        },
        &why);
    ASSERT_TRUE(graph) << why;
    Tensor eager = Tensor::empty(Shape{4096}, DataType::f32, gpu);  // same size class
    EXPECT_NE(eager.raw_data(), address);
    graph->replay();
    EXPECT_EQ(y.at({0}), 14.0);
}

TEST_F(CudaTest, AnotherGraphsBlockFreedDuringACaptureIsHeldUntilBothGraphsAreGone) {
    Tensor a = Tensor::full(Shape{4096}, 1.0, DataType::f32, gpu);
    Tensor first_out, second_out;
    std::string why;
    auto first = cuda::Graph::capture(
        gpu, [&] { first_out = binary(OpKind::plus, a, a); }, &why);
    ASSERT_TRUE(first) << why;
    first->replay();
    void* address = first_out.raw_data();
    auto second = cuda::Graph::capture(
        gpu,
        [&] {
            second_out = binary(OpKind::plus, first_out, first_out);
            first_out = Tensor();  // the first graph's block, freed while the second records it
        },
        &why);
    ASSERT_TRUE(second) << why;
    first.reset();  // the second graph still reads the block at every replay
    Tensor eager = Tensor::empty(Shape{4096}, DataType::f32, gpu);  // same size class
    EXPECT_NE(eager.raw_data(), address);
    second->replay();
    EXPECT_EQ(second_out.at({0}), 4.0);
    second.reset();
    EXPECT_EQ(allocator_for(gpu).stats().bytes_in_graph_pools, 0);
}

TEST_F(CudaTest, ASecondCaptureOnTheDeviceIsRefusedWithTheReason) {
    Tensor x = Tensor::ones(Shape{8}, DataType::f32, gpu), y;
    std::string outer_why, inner_why;
    std::unique_ptr<cuda::Graph> inner;
    auto outer = cuda::Graph::capture(
        gpu,
        [&] {
            inner = cuda::Graph::capture(
                gpu, [] {}, &inner_why);
            y = binary(OpKind::plus, x, x);
        },
        &outer_why);
    EXPECT_FALSE(inner);
    EXPECT_NE(inner_why.find("already recording"), std::string::npos) << inner_why;
    ASSERT_TRUE(outer) << outer_why;  // the refusal left the outer recording alone
    outer->replay();
    EXPECT_EQ(y.at({0}), 2.0);
}

TEST_F(CudaTest, PinnedMemoryIsNotTakenWhileRecording) {
    std::string why;
    EXPECT_FALSE(cuda::Graph::capture(
        gpu, [] { (void)cuda::pinned_empty(Shape{4}, DataType::f32); }, &why));
    EXPECT_NE(why.find("pinned host memory"), std::string::npos) << why;
    EXPECT_TRUE(cuda::is_pinned(cuda::pinned_empty(Shape{4}, DataType::f32)));  // fine outside
}

TEST_F(CudaTest, WorkThatCannotBeRecordedFailsWithTheReason) {
    Tensor x = Tensor::ones(Shape{8}, DataType::f32, gpu);
    std::string why;
    EXPECT_FALSE(cuda::Graph::capture(
        gpu, [&] { (void)reduce_sum(x, {}).item(); }, &why));
    EXPECT_FALSE(why.empty());
    why.clear();
    EXPECT_FALSE(cuda::Graph::capture(
        gpu, [&] { x.copy_from(Tensor::zeros(Shape{8})); }, &why));
    EXPECT_NE(why.find("cannot be recorded in a CUDA Graph"), std::string::npos) << why;
    why.clear();
    EXPECT_FALSE(cuda::Graph::capture(
        gpu, [&] { CTK_THROW(ValueError, "from the work"); }, &why));
    EXPECT_NE(why.find("from the work"), std::string::npos) << why;
    // The stream and the allocator work as before.
    EXPECT_EQ(allocator_for(gpu).stats().bytes_in_graph_pools, 0);
    EXPECT_EQ(binary(OpKind::plus, x, x).to_vector<float>(), std::vector<float>(8, 2.0f));
}

TEST_F(CudaTest, OneHotValueBuildsItsRowsOnTheGpu) {
    // The indices were checked when the value was made: the rows are built without reading them back
    // (so a CUDA Graph can record it), -1 giving a zero row.
    Value v = Value::one_hot(Tensor::from_vector<int64_t>({2, -1, 0}, {3}), 4).to(gpu);
    std::string why;
    Tensor rows;
    auto graph = cuda::Graph::capture(
        gpu, [&] { rows = v.data(); }, &why);
    ASSERT_TRUE(graph) << why;
    graph->replay();
    EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0, 0}));
}
