// The CPU allocator: alignment, statistics, and its cache of freed blocks.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "ctk/core/cuda.h"
#include "ctk/core/device.h"
#include "ctk/core/error.h"
#include "ctk/core/launcher.h"
#include "ctk/core/tensor.h"
#include "ctk/kernels/tensor_ops.h"

using namespace ctk;

TEST(Storage, AlignedAndCounted) {
    Allocator& a = cpu_allocator();
    AllocatorStats before = a.stats();
    {
        Tensor t = Tensor::empty(Shape{3, 5}, DataType::f64);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw_data()) % kCpuAlignment, 0u);
        AllocatorStats during = a.stats();
        EXPECT_EQ(during.bytes_in_use - before.bytes_in_use, 3 * 5 * 8);
        EXPECT_EQ(during.num_allocations - before.num_allocations, 1);
        EXPECT_GE(during.peak_bytes_in_use, during.bytes_in_use);
    }
    AllocatorStats after = a.stats();
    EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
    EXPECT_EQ(after.num_frees - before.num_frees, 1);
}

TEST(Storage, PeakReset) {
    Allocator& a = cpu_allocator();
    { Tensor big = Tensor::empty(Shape{1 << 20}); }
    AllocatorStats s = a.stats();
    EXPECT_GE(s.peak_bytes_in_use - s.bytes_in_use, 4 << 20);
    a.reset_peak();
    EXPECT_EQ(a.stats().peak_bytes_in_use, a.stats().bytes_in_use);
}

TEST(Storage, UnavailableDevice) {
    EXPECT_THROW(Tensor::empty(Shape{2}, DataType::f32, Device::cuda(0)), DeviceError);
}

TEST(Storage, HugeAllocationFailsCleanly) {
    EXPECT_THROW(Tensor::empty(Shape{int64_t(1) << 50}), OutOfMemoryError);
}

// The cache of freed blocks. Each test sets its own limit and restores the process's afterwards.
class CpuCache : public ::testing::Test {
protected:
    void SetUp() override {
        saved_limit_ = cpu_allocator().cache_limit();
        cpu_allocator().set_cache_limit(size_t(64) << 20);
        cpu_allocator().empty_cache();
    }
    void TearDown() override {
        cpu_allocator().empty_cache();
        cpu_allocator().set_cache_limit(saved_limit_);
    }
    size_t saved_limit_ = 0;
};

TEST_F(CpuCache, FreedLargeBlockIsReused) {
    Allocator& a = cpu_allocator();
    const void* first = nullptr;
    {
        Tensor t = Tensor::empty(Shape{1 << 18});  // 1 MiB
        first = t.raw_data();
    }
    AllocatorStats freed = a.stats();
    EXPECT_EQ(freed.bytes_cached, 1 << 20);
    Tensor again = Tensor::empty(Shape{1 << 18});
    EXPECT_EQ(again.raw_data(), first);
    AllocatorStats reused = a.stats();
    EXPECT_EQ(reused.num_cache_hits - freed.num_cache_hits, 1);
    EXPECT_EQ(reused.bytes_cached, 0);
    EXPECT_EQ(reused.bytes_in_use - freed.bytes_in_use, 1 << 20);  // callers' bytes, not the block's
}

TEST_F(CpuCache, NearbySizesShareAClass) {
    // 1 MiB + 4 bytes and 1 MiB + 100 KiB both round up to the 1.125 MiB class.
    const void* first = nullptr;
    {
        Tensor t = Tensor::empty(Shape{(1 << 18) + 1});
        first = t.raw_data();
        EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % kCpuAlignment, 0u);
    }
    EXPECT_EQ(cpu_allocator().stats().bytes_cached, (1 << 20) + (1 << 17));
    Tensor again = Tensor::empty(Shape{(1 << 18) + 25600});
    EXPECT_EQ(again.raw_data(), first);
    // A request of the next class up does not take the smaller block.
    Tensor bigger = Tensor::empty(Shape{(1 << 18) + 40000});
    EXPECT_NE(bigger.raw_data(), first);
}

TEST_F(CpuCache, SmallBlocksAreCachedByExactLineCount) {
    const void* first = nullptr;
    {
        Tensor t = Tensor::empty(Shape{1000});  // 4000 bytes: 63 cache lines
        first = t.raw_data();
    }
    EXPECT_EQ(cpu_allocator().stats().bytes_cached, 63 * 64);
    Tensor other = Tensor::empty(Shape{1024});  // 64 lines: a different block
    EXPECT_NE(other.raw_data(), first);
    Tensor again = Tensor::empty(Shape{995});  // 3980 bytes: 63 lines again
    EXPECT_EQ(again.raw_data(), first);
}

TEST_F(CpuCache, LimitBoundsTheCache) {
    Allocator& a = cpu_allocator();
    a.set_cache_limit(size_t(3) << 20);
    {
        Tensor t1 = Tensor::empty(Shape{1 << 19});  // 2 MiB
        Tensor t2 = Tensor::empty(Shape{1 << 19});  // 2 MiB: would exceed 3 MiB, goes back to the system
    }
    EXPECT_EQ(a.stats().bytes_cached, 2 << 20);
    a.set_cache_limit(size_t(1) << 20);  // below what is cached: empties it
    EXPECT_EQ(a.stats().bytes_cached, 0);
    a.set_cache_limit(0);
    { Tensor t = Tensor::empty(Shape{1 << 19}); }
    EXPECT_EQ(a.stats().bytes_cached, 0);
}

TEST_F(CpuCache, EmptyCacheReleasesEverything) {
    { Tensor t = Tensor::empty(Shape{1 << 20}); }
    EXPECT_GT(cpu_allocator().stats().bytes_cached, 0);
    cpu_allocator().empty_cache();
    EXPECT_EQ(cpu_allocator().stats().bytes_cached, 0);
}

TEST_F(CpuCache, FailedRequestEmptiesTheCacheAndSaysSo) {
    { Tensor t = Tensor::empty(Shape{1 << 20}); }
    ASSERT_GT(cpu_allocator().stats().bytes_cached, 0);
    try {
        Tensor::empty(Shape{int64_t(1) << 50});
        FAIL() << "expected OutOfMemoryError";
    } catch (const OutOfMemoryError& e) {
        EXPECT_NE(std::string(e.what()).find("4503599627370496 bytes"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find(", 0 bytes cached"), std::string::npos) << e.what();
    }
    EXPECT_EQ(cpu_allocator().stats().bytes_cached, 0);
}

TEST_F(CpuCache, ThreadsShareItSafely) {
    Allocator& a = cpu_allocator();
    AllocatorStats before = a.stats();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([t] {
            for (int i = 0; i < 200; ++i) {
                // Sizes from 192 KiB to 1.5 MiB: some cached, some not, several classes.
                Tensor x = Tensor::empty(Shape{(48 << 10) * (1 + (i + t) % 8)});
                static_cast<float*>(x.raw_data())[x.numel() - 1] = 1.0f;  // touch the whole block's end
            }
        });
    }
    for (auto& th : threads) th.join();
    AllocatorStats after = a.stats();
    EXPECT_EQ(after.bytes_in_use, before.bytes_in_use);
    EXPECT_EQ(after.num_allocations - before.num_allocations, 800);
    EXPECT_EQ(after.num_frees - before.num_frees, 800);
    EXPECT_GT(after.num_cache_hits - before.num_cache_hits, 0);
    EXPECT_LE(after.bytes_cached, int64_t(64) << 20);
}

// CTK_CPU_CACHE_MB is read once, when the allocator is first used, so the test runs this binary again
// with the variable set; in that child run the same test checks the limit it sees.
TEST(CpuCacheEnvironment, LimitComesFromCtkCpuCacheMb) {
#if defined(__SANITIZE_ADDRESS__)
    GTEST_SKIP() << "ASan builds never cache";
#else
    if (const char* mode = std::getenv("CTK_TEST_CACHE_CHILD")) {
        size_t want = std::string(mode) == "valid" ? size_t(7) << 20 : size_t(2) << 30;
        EXPECT_EQ(cpu_allocator().cache_limit(), want);
        return;
    }
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const std::string run = "'" + self + "' --gtest_filter=CpuCacheEnvironment.* > /dev/null 2>&1";
    EXPECT_EQ(std::system(("CTK_TEST_CACHE_CHILD=valid CTK_CPU_CACHE_MB=7 " + run).c_str()), 0);
    // A malformed value keeps the default (and says so on stderr).
    EXPECT_EQ(std::system(("CTK_TEST_CACHE_CHILD=malformed CTK_CPU_CACHE_MB=7x " + run).c_str()), 0);
    // The check can fail: a wrong expectation makes the child fail.
    EXPECT_NE(std::system(("CTK_TEST_CACHE_CHILD=valid CTK_CPU_CACHE_MB=8 " + run).c_str()), 0);
#endif
}

TEST(Devices, NamesDefaultAndParsing) {
    using ctk::Device;
    EXPECT_EQ(Device::cpu().to_string(), "CPU");
    EXPECT_EQ(Device::cpu(1).to_string(), "CPU:1");
    EXPECT_EQ(Device::cuda(2).to_string(), "CUDA:2");
    EXPECT_NE(Device::cpu(), Device::cpu(1));
    EXPECT_TRUE(ctk::device_available(Device::cpu(1)));
    EXPECT_FALSE(ctk::device_available(Device::cpu(-1)));
    EXPECT_EQ(ctk::all_devices().front(), Device::cpu());
    EXPECT_EQ(ctk::all_devices().size(), static_cast<size_t>(1 + ctk::cuda::device_count()));
    EXPECT_EQ(ctk::parse_device("cpu"), Device::cpu());
    EXPECT_EQ(ctk::parse_device("auto"), ctk::cuda::device_count() ? Device::cuda(0) : Device::cpu());
    EXPECT_THROW(ctk::parse_device("gpu:x"), ctk::ValueError);
    EXPECT_THROW(ctk::parse_device("GPU"), ctk::ValueError);
    try {
        ctk::parse_device("gpu:99", "--device");
        FAIL() << "no error";
    } catch (const ctk::DeviceError& e) {
        EXPECT_NE(std::string(e.what()).find("--device 'gpu:99': there is no GPU 99"), std::string::npos)
            << e.what();
    }
    // Logical CPU devices share host memory; copies between them are plain copies.
    ctk::Tensor a = ctk::Tensor::ones(ctk::Shape{3}).to(Device::cpu(1));
    EXPECT_EQ(a.device(), Device::cpu(1));
    EXPECT_EQ(a.to(Device::cpu()).to_vector<float>(), std::vector<float>(3, 1.0f));
    // Mixing devices in one op is refused, naming both.
    try {
        ctk::plus(a, ctk::Tensor::ones(ctk::Shape{3}));
        FAIL() << "no error";
    } catch (const ctk::DeviceError& e) {
        EXPECT_NE(std::string(e.what()).find("CPU:1"), std::string::npos) << e.what();
    }
}

// The workers of a job on one machine spread over its GPUs; the launcher's variables say which worker
// this is (OpenMPI's, else PMI's, with MPICH's local rank).
TEST(Device, EachWorkerOfAJobTakesItsOwnGpu) {
    EXPECT_EQ(ctk::gpu_of_worker(0, 4), 0);
    EXPECT_EQ(ctk::gpu_of_worker(3, 4), 3);
    EXPECT_EQ(ctk::gpu_of_worker(5, 4), 1);  // more workers than GPUs: they share, in turn
    EXPECT_EQ(ctk::gpu_of_worker(2, 0), 0);
    const char* names[] = {
        "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "PMI_RANK", "PMI_SIZE",
        "MPI_LOCALRANKID"};
    std::vector<std::pair<std::string, std::string>> saved;
    for (const char* n : names)
        if (const char* v = std::getenv(n)) saved.emplace_back(n, v);
    for (const char* n : names) unsetenv(n);
    ctk::LaunchedWorker w = ctk::launched_worker();
    EXPECT_FALSE(w.by_launcher);
    EXPECT_EQ(w.rank, 0);
    EXPECT_EQ(w.count, 1);
    EXPECT_EQ(w.local_rank, 0);
    setenv("OMPI_COMM_WORLD_RANK", "5", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "8", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
    w = ctk::launched_worker();
    EXPECT_TRUE(w.by_launcher);
    EXPECT_EQ(w.rank, 5);
    EXPECT_EQ(w.count, 8);
    EXPECT_EQ(w.local_rank, 1);
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
    EXPECT_EQ(ctk::launched_worker().local_rank, 5);  // no local rank announced: the rank
    for (const char* n : names) unsetenv(n);
    setenv("PMI_RANK", "2", 1);
    setenv("PMI_SIZE", "4", 1);
    setenv("MPI_LOCALRANKID", "0", 1);
    w = ctk::launched_worker();
    EXPECT_EQ(w.rank, 2);
    EXPECT_EQ(w.local_rank, 0);
    setenv("PMI_RANK", "4", 1);
    EXPECT_THROW(ctk::launched_worker(), ctk::ValueError);  // worker 4 of 4
    setenv("PMI_RANK", "x", 1);
    EXPECT_THROW(ctk::launched_worker(), ctk::ValueError);
    for (const char* n : names) unsetenv(n);
    for (const auto& [n, v] : saved) setenv(n.c_str(), v.c_str(), 1);
}

// Byte counts are checked before anything is asked of an allocator: 2^62 float32 elements wrapped to 0
// bytes before, and an empty block was then written.
TEST(Storage, ByteCountsThatPass64BitsAreErrors) {
    const int64_t n62 = int64_t(1) << 62;
    EXPECT_EQ(checked_nbytes({n62}, DataType::u8, "t"), size_t(1) << 62);
    EXPECT_EQ(checked_nbytes({n62 / 2}, DataType::f16, "t"), size_t(1) << 62);
    for (const Dims& dims : {Dims{n62}, Dims{n62 / 2, 2}, Dims{INT64_MAX}}) {
        try {
            checked_nbytes(dims, DataType::f32, "constant 'c'");
            FAIL() << "expected ValueError for " << dims_to_string(dims);
        } catch (const ValueError& e) {
            EXPECT_NE(std::string(e.what()).find("constant 'c'"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("float32"), std::string::npos) << e.what();
        }
    }
    EXPECT_THROW(Tensor::empty(Shape{n62}), ValueError);
    EXPECT_THROW(Tensor::zeros(Shape{INT64_MAX}, DataType::f64), ValueError);
}
