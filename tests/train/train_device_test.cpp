// Training on another device than the CPU: a ConvNet with dropout and batch normalization trained with
// Adam, with a checkpoint saved and restored halfway, on the default device. train_device_test runs it
// on the logical device CPU:1 and expects the CPU's bits (every tensor must follow the parameters);
// train_gpu_test (CTK_TRAIN_TEST_GPU, label gpu) runs it on each GPU and expects the CPU's losses and
// parameters within float tolerances.
#include <gtest/gtest.h>

#include <filesystem>

#include "ctk/core/cuda.h"
#include "train/small_convnet.h"

namespace ctk {
namespace {

namespace fs = std::filesystem;

struct ScopedDefaultDevice {
    Device saved = default_device();
    explicit ScopedDefaultDevice(Device d) { EXPECT_TRUE(try_set_default_device(d)) << d.to_string(); }
    ~ScopedDefaultDevice() { try_set_default_device(saved); }
};

struct Run {
    std::vector<double> losses;
    std::vector<std::vector<double>> params;
    Device param_device;
};

Run train_on(Device device, const fs::path& dir) {
    ScopedDefaultDevice on(device);
    set_fixed_random_seed(11);
    const testing::SmallConvNet n = testing::small_convnet();
    auto learner =
        adam(n.z->parameters(), learning_parameter_schedule_per_sample(0.01), momentum_schedule(0.9));
    auto trainer = std::make_shared<Trainer>(n.z, n.loss, n.metric, std::vector<LearnerPtr>{learner});

    Run r;
    for (int step = 0; step < 6; ++step) {
        EXPECT_TRUE(trainer->train_minibatch(testing::row_band_minibatch(n, step)));
        r.losses.push_back(trainer->previous_minibatch_loss_average());
        if (step == 2) {  // a checkpoint taken on the device restores on it
            const std::string ckp = (dir / ("run_" + device.to_string())).string();
            trainer->save_checkpoint(ckp);
            trainer->restore_from_checkpoint(ckp);
        }
    }
    for (const Variable& p : n.z->parameters()) {
        r.params.push_back(p.value().to(DataType::f64).to_vector<double>());
        r.param_device = p.value().device();
    }
    return r;
}

fs::path temp_dir() {
    fs::path d = fs::temp_directory_path() / ("ctk_train_device_test_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
}

void expect_same_run(Device device, double tol) {
    const fs::path dir = temp_dir();
    const Run cpu = train_on(Device::cpu(), dir);
    const Run other = train_on(device, dir);
    EXPECT_EQ(other.param_device, device);
    ASSERT_EQ(cpu.losses.size(), other.losses.size());
    for (size_t i = 0; i < cpu.losses.size(); ++i)
        EXPECT_NEAR(other.losses[i], cpu.losses[i], tol * std::max(1.0, std::abs(cpu.losses[i])))
            << "step " << i;
    ASSERT_EQ(cpu.params.size(), other.params.size());
    for (size_t p = 0; p < cpu.params.size(); ++p)
        for (size_t i = 0; i < cpu.params[p].size(); ++i)
            ASSERT_NEAR(other.params[p][i], cpu.params[p][i], tol * std::max(1.0, std::abs(cpu.params[p][i])))
                << "parameter " << p << " element " << i;
    fs::remove_all(dir);
}

}  // namespace

#ifndef CTK_TRAIN_TEST_GPU
TEST(TrainOnDevice, ConvNetOnAnotherDeviceGivesTheCpuBits) {
    expect_same_run(Device::cpu(1), 0.0);
}

TEST(TrainOnDevice, UnavailableDeviceIsRefusedAndLeavesTheDefault) {
    const Device before = default_device();
    EXPECT_FALSE(try_set_default_device(Device::cuda(cuda::device_count())));
    EXPECT_FALSE(try_set_default_device(Device::cpu(-1)));
    EXPECT_EQ(default_device(), before);
    Variable x = input_variable({2});
    FunctionPtr f = plus(x, x);
    try {
        f->eval({{x, Value(Tensor::ones(Shape{1, 2}))}}, {}, Device::cuda(cuda::device_count()));
        FAIL() << "no error";
    } catch (const DeviceError& e) {
        EXPECT_NE(std::string(e.what()).find("not available"), std::string::npos) << e.what();
    }
}
#else
TEST(TrainOnGpu, ConvNetMatchesTheCpuRun) {
    if (!cuda::is_available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
    // cuDNN and cuBLASLt sum in other orders than oneDNN: six Adam steps stay within 1e-3.
    for (int d = 0; d < cuda::device_count(); ++d) expect_same_run(Device::cuda(d), 1e-3);
}
#endif

}  // namespace ctk
