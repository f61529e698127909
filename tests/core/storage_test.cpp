// The CPU allocator's alignment and statistics.
#include <gtest/gtest.h>

#include "ctk/error.h"
#include "ctk/tensor.h"

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
