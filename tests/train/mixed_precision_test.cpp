// Mixed precision: autocast's rewrite (which ops compute in 16 bits, parameters shared and f32,
// gradients back in f32, blocks and recurrent loops), dynamic loss scaling, and Trainer runs in bf16
// and f16 against the f32 run. mixed_precision_gpu_test (CTK_MIXED_TEST_GPU, label gpu) trains the
// same ConvNet on each GPU and compares with the CPU's mixed-precision run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <unordered_set>

#include "ctk/core/cuda.h"
#include "ctk/core/rng.h"
#include "ctk/graph/mixed_precision.h"
#include "ctk/layers.h"
#include "ctk/train.h"
#include "train/small_convnet.h"

namespace ctk {
namespace {

namespace fs = std::filesystem;

[[maybe_unused]] std::vector<double> values_of(const Value& v) {
    return v.data().to(DataType::f64).to(Device::cpu()).contiguous().to_vector<double>();
}

[[maybe_unused]] double max_abs(const std::vector<double>& v) {
    double m = 0;
    for (double x : v) m = std::max(m, std::abs(x));
    return m;
}

// Every primitive upstream of f (blocks inlined by autocast, so none remain in its result).
[[maybe_unused]] void for_each_primitive(const FunctionPtr& f,
                                         const std::function<void(const FunctionPtr&)>& visit) {
    std::unordered_set<const void*> seen;
    std::vector<Variable> todo = f->outputs();
    while (!todo.empty()) {
        Variable v = todo.back();
        todo.pop_back();
        FunctionPtr g = v.owner();
        if (!g || !seen.insert(g.get()).second) continue;
        if (g->is_block()) {
            for (const Variable& o : g->block_root()->outputs()) todo.push_back(o);
        } else if (!g->is_composite()) {
            visit(g);
        }
        for (const Variable& in : g->inputs()) todo.push_back(in);
    }
}

struct Mlp {
    Variable x = input_variable({6}, DataType::f32, false, false, default_batch_axes(), "x");
    Variable y = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "y");
    FunctionPtr z, loss;
    Mlp() {
        set_fixed_random_seed(3);
        using namespace layers;
        auto relu_fn = ActivationFn([](const Variable& v) { return relu(v); });
        z = call(Sequential({Dense({8}, relu_fn), Dense({3})}), x);
        loss = cross_entropy_with_softmax(z, y);
    }
    ValueMap batch() const {
        Tensor xs = Tensor::empty(Shape{5, 6});
        Generator(7).uniform(xs, -1.0, 1.0);
        Tensor ys = Tensor::zeros(Shape{5, 3});
        for (int64_t i = 0; i < 5; ++i) ys.set({i, i % 3}, 1.0);
        return {{x, Value(xs)}, {y, Value(ys)}};
    }
};

#ifndef CTK_MIXED_TEST_GPU
TEST(Autocast, ProductsComputeIn16BitsAndLossesInF32) {
    Mlp m;
    for (DataType low : {DataType::bf16, DataType::f16}) {
        AutocastGraph a = autocast(combine({m.loss->output(), m.z->output()}), low);
        int products = 0, losses = 0, casts = 0;
        for_each_primitive(a.function, [&](const FunctionPtr& g) {
            EXPECT_FALSE(g->is_block());
            if (g->op() == PrimitiveOp::times) {
                ++products;
                EXPECT_EQ(g->output().dtype(), low);
                for (const Variable& in : g->inputs()) EXPECT_EQ(in.dtype(), low) << in.to_string();
            }
            if (g->op() == PrimitiveOp::cross_entropy_with_softmax) {
                ++losses;
                for (const Variable& in : g->inputs()) EXPECT_EQ(in.dtype(), DataType::f32) << in.to_string();
            }
            if (g->op() == PrimitiveOp::plus || g->op() == PrimitiveOp::relu) {
                EXPECT_EQ(g->output().dtype(), low) << "bias and activation follow the product";
            }
            casts += g->op() == PrimitiveOp::cast;
        });
        EXPECT_EQ(products, 2);
        EXPECT_EQ(losses, 1);
        // x down once, W1 b1 W2 b2 down once each, z up once (for the loss and for the output).
        EXPECT_EQ(casts, 6);
        // The outputs keep their dtypes; the parameters are the model's own f32 master weights.
        for (const Variable& o : a.function->outputs()) EXPECT_EQ(o.dtype(), DataType::f32);
        auto params = a.function->parameters();
        ASSERT_EQ(params.size(), m.z->parameters().size());
        for (const Variable& p : params) {
            EXPECT_EQ(p.dtype(), DataType::f32);
            bool shared = false;
            for (const Variable& q : m.z->parameters()) shared = shared || q.impl() == p.impl();
            EXPECT_TRUE(shared) << p.to_string();
        }
        EXPECT_EQ(a.map.at(m.z->output()).dtype(), low);
        EXPECT_EQ(a.map.at(m.loss->output()).dtype(), DataType::f32);
    }
}

TEST(Autocast, ValuesAndGradientsMatchF32WithinTheFormatsPrecision) {
    Mlp m;
    const ValueMap args = m.batch();
    const auto params = m.z->parameters();
    ValueMap want = m.loss->grad(args, params);
    const double want_loss = max_abs(values_of(m.loss->eval(args).begin()->second));
    for (auto [low, tol] : {std::pair{DataType::bf16, 3e-2}, std::pair{DataType::f16, 4e-3}}) {
        AutocastGraph a = autocast(m.loss, low);
        const double loss = max_abs(values_of(a.function->eval(args).begin()->second));
        EXPECT_NEAR(loss, want_loss, tol * want_loss) << dtype_name(low);
        ValueMap got = a.function->grad(args, params);
        for (const Variable& p : params) {
            EXPECT_EQ(got.at(p).data().dtype(), DataType::f32) << "gradients reach the f32 masters in f32";
            const auto g = values_of(got.at(p)), w = values_of(want.at(p));
            const double scale = std::max(max_abs(w), 1e-3);
            for (size_t i = 0; i < g.size(); ++i)
                ASSERT_NEAR(g[i], w[i], 2 * tol * scale)
                    << dtype_name(low) << " " << p.to_string() << " " << i;
        }
    }
}

TEST(Autocast, RecurrentLoopsAndSparseProducts) {
    set_fixed_random_seed(5);
    Variable x = sequence_input_variable({4}, DataType::f32, false, false, Axis::default_dynamic_axis(), "x");
    using namespace layers;
    FunctionPtr h = call(Recurrence(RNNStep({5})), x);
    Value seqs = Value::from_sequences({Tensor::full(Shape{3, 4}, 0.5), Tensor::full(Shape{2, 4}, -0.25)});
    const auto want = values_of(h->eval({{x, seqs}}).begin()->second);
    AutocastGraph a = autocast(h, DataType::bf16);
    const auto got = values_of(a.function->eval({{x, seqs}}).begin()->second);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 3e-2) << i;
    ValueMap grads = a.function->grad({{x, seqs}}, h->parameters());
    for (const Variable& p : h->parameters()) EXPECT_EQ(grads.at(p).data().dtype(), DataType::f32);

    // A product with a sparse operand stays in f32.
    Variable ids = input_variable({10}, DataType::f32, false, true, default_batch_axes(), "ids");
    FunctionPtr e = call(Embedding({4}), ids);
    AutocastGraph b = autocast(e, DataType::bf16);
    for_each_primitive(b.function, [&](const FunctionPtr& g) {
        if (g->op() == PrimitiveOp::times) {
            EXPECT_EQ(g->output().dtype(), DataType::f32);
        }
    });
}

TEST(Autocast, BatchNormalizationNormalizes16BitDataWithF32Statistics) {
    set_fixed_random_seed(5);
    const testing::SmallConvNet n = testing::small_convnet();
    FunctionPtr original_bn;
    for_each_primitive(n.loss, [&](const FunctionPtr& g) {
        if (g->op() == PrimitiveOp::batch_normalization) original_bn = g;
    });
    ASSERT_NE(original_bn, nullptr);
    const auto stats = original_bn->inputs();  // x, scale, bias, running mean, running variance, count
    const ValueMap args = testing::row_band_minibatch(n, 0);
    auto running_after_training_forward = [&](const FunctionPtr& f) {
        std::vector<Tensor> before;
        for (size_t i = 3; i <= 5; ++i) before.push_back(stats[i].value().clone());
        ValueMap outs{{f->output(), Value()}};
        f->forward(args, outs, {}, true, Device::cpu());
        std::vector<std::vector<double>> after;
        for (size_t i = 3; i <= 5; ++i) {
            after.push_back(stats[i].value().to(DataType::f64).to_vector<double>());
            stats[i].value().copy_from(before[i - 3]);  // the next run starts from the same state
        }
        return after;
    };
    const auto want = running_after_training_forward(n.loss);
    for (DataType low : {DataType::bf16, DataType::f16}) {
        AutocastGraph a = autocast(n.loss, low);
        int norms = 0;
        for_each_primitive(a.function, [&](const FunctionPtr& g) {
            if (g->op() != PrimitiveOp::batch_normalization) return;
            ++norms;
            const auto in = g->inputs();
            EXPECT_EQ(in[0].dtype(), low);
            EXPECT_NE(in[0].owner()->op(), PrimitiveOp::cast) << "the activation reaches it in 16 bits";
            EXPECT_EQ(g->output().dtype(), low);
            for (size_t i = 1; i < in.size(); ++i)
                EXPECT_EQ(in[i].impl(), stats[i].impl())
                    << "scale, bias and running statistics are the model's";
        });
        EXPECT_EQ(norms, 1);
        const auto got = running_after_training_forward(a.function);
        for (size_t k = 0; k < got.size(); ++k) {
            ASSERT_EQ(got[k].size(), want[k].size());
            for (size_t i = 0; i < got[k].size(); ++i)
                EXPECT_NEAR(got[k][i], want[k][i], 2e-2 * std::max(1.0, std::abs(want[k][i])))
                    << dtype_name(low) << " running statistic " << k << "[" << i << "]";
        }
        EXPECT_EQ(stats[3].dtype(), DataType::f32);
    }
}

TEST(Autocast, RefusesOtherComputeTypes) {
    Mlp m;
    EXPECT_THROW(autocast(m.loss, DataType::f32), ValueError);
    EXPECT_THROW(autocast(m.loss, DataType::i32), ValueError);
    EXPECT_THROW(Trainer(m.z, m.loss, nullptr, {sgd(m.z->parameters(), learning_parameter_schedule(0.1))}, {},
                         MixedPrecision{DataType::f64, false, {}}),
                 ValueError);
}

TEST(MixedPrecisionSetting, ComesFromTheEnvironmentUnlessGiven) {
    Mlp m;
    auto make = [&](std::optional<MixedPrecision> mp) {
        return Trainer(m.z, m.loss, nullptr, {sgd(m.z->parameters(), learning_parameter_schedule(0.1))}, {},
                       mp);
    };
    ::unsetenv("CTK_MIXED_PRECISION");
    EXPECT_FALSE(make(std::nullopt).mixed_precision().enabled());
    ::setenv("CTK_MIXED_PRECISION", "bf16", 1);
    EXPECT_EQ(make(std::nullopt).mixed_precision().compute, DataType::bf16);
    EXPECT_FALSE(make(MixedPrecision{}).mixed_precision().enabled()) << "an explicit setting wins";
    ::setenv("CTK_MIXED_PRECISION", "float16", 1);
    EXPECT_EQ(make(std::nullopt).loss_scale(), 1024.0);
    ::setenv("CTK_MIXED_PRECISION", "fp8", 1);
    try {
        make(std::nullopt);
        ADD_FAILURE() << "no error";
    } catch (const ValueError& e) {
        EXPECT_NE(std::string(e.what()).find("CTK_MIXED_PRECISION"), std::string::npos) << e.what();
    }
    ::unsetenv("CTK_MIXED_PRECISION");
}

TEST(LossScaler, BacksOffOnOverflowAndGrowsAfterTheInterval) {
    LossScaler s(LossScaling{1024.0, 2.0, 0.5, 3});
    EXPECT_EQ(s.scale(), 1024.0);
    s.update(false);
    EXPECT_EQ(s.scale(), 512.0);
    EXPECT_EQ(s.skipped_steps(), 1);
    s.update(true);
    s.update(true);
    EXPECT_EQ(s.scale(), 512.0);
    s.update(false);  // an overflow restarts the count
    s.update(true);
    s.update(true);
    EXPECT_EQ(s.scale(), 256.0);
    s.update(true);
    EXPECT_EQ(s.scale(), 512.0);
    LossScaler t;
    t.restore(s.state());
    EXPECT_EQ(t.scale(), 512.0);
    EXPECT_EQ(t.skipped_steps(), 2);
    EXPECT_THROW(LossScaler(LossScaling{0.0}), ValueError);
    EXPECT_THROW(LossScaler(LossScaling{8.0, 2.0, 1.5}), ValueError);
    EXPECT_THROW(LossScaler(LossScaling{8.0, 2.0, 0.5, 0}), ValueError);
    EXPECT_THROW(t.restore(Dictionary{{"scale", -1.0}, {"goodSteps", int64_t(0)}}), ValueError);
}

#endif  // CTK_MIXED_TEST_GPU

// ---- training ----

struct TrainingRun {
    std::vector<double> losses;
    double first_scale = 1, last_scale = 1;
    int64_t skipped = 0;
};

// A ConvNet (convolution, batch normalization, pooling, dropout, dense) learning a row-band pattern
// with momentum SGD, 24 steps, a checkpoint saved and restored at step 12.
TrainingRun train(MixedPrecision mp, Device device, const fs::path& dir) {
    set_fixed_random_seed(11);
    const testing::SmallConvNet n = testing::small_convnet();
    const FunctionPtr &z = n.z, &loss = n.loss, &metric = n.metric;
    auto learner =
        momentum_sgd(z->parameters(), learning_parameter_schedule_per_sample(0.02), momentum_schedule(0.9));
    auto trainer = std::make_shared<Trainer>(z, loss, metric, std::vector<LearnerPtr>{learner},
                                             std::vector<ProgressWriterPtr>{}, mp);
    TrainingRun r;
    r.first_scale = trainer->loss_scale();
    for (int step = 0; step < 24; ++step) {
        ValueMap fetched{{z->output(), Value()}};
        trainer->train_minibatch(testing::row_band_minibatch(n, step), fetched, false, device);
        EXPECT_EQ(fetched.at(z->output()).data().dtype(), DataType::f32)
            << "fetched outputs keep the model's dtype";
        r.losses.push_back(trainer->previous_minibatch_loss_average());
        if (step == 12) {
            const std::string ckp = (dir / ("mixed_" + std::string(dtype_name(mp.compute)))).string();
            const double scale = trainer->loss_scale();
            trainer->save_checkpoint(ckp);
            auto again = std::make_shared<Trainer>(z, loss, metric, std::vector<LearnerPtr>{learner},
                                                   std::vector<ProgressWriterPtr>{}, mp);
            again->restore_from_checkpoint(ckp);
            EXPECT_EQ(again->loss_scale(), scale) << "the loss scale is part of the checkpoint";
            trainer = again;
        }
    }
    for (const Variable& p : z->parameters()) EXPECT_EQ(p.value().dtype(), DataType::f32);
    r.last_scale = trainer->loss_scale();
    r.skipped = trainer->skipped_steps();
    return r;
}

fs::path temp_dir() {
    fs::path d = fs::temp_directory_path() / ("ctk_mixed_precision_test_" + std::to_string(::getpid()));
    fs::create_directories(d);
    return d;
}

[[maybe_unused]] double mean_of_last(const std::vector<double>& v, size_t n) {
    double s = 0;
    for (size_t i = v.size() - n; i < v.size(); ++i) s += v[i];
    return s / static_cast<double>(n);
}

}  // namespace

#ifndef CTK_MIXED_TEST_GPU
TEST(MixedPrecisionTraining, Bf16AndF16ReachTheF32Loss) {
    const fs::path dir = temp_dir();
    const TrainingRun f32 = train({}, Device::cpu(), dir);
    const TrainingRun bf16 = train(MixedPrecision::bf16(), Device::cpu(), dir);
    const TrainingRun f16 = train(MixedPrecision::f16(), Device::cpu(), dir);
    // The model learns: the last steps' loss is well below the first's (ln 3 at the start).
    EXPECT_LT(mean_of_last(f32.losses, 4), 0.5 * f32.losses[0]);
    for (const TrainingRun* r : {&bf16, &f16}) {
        ASSERT_EQ(r->losses.size(), f32.losses.size());
        EXPECT_NEAR(r->losses[0], f32.losses[0], 0.03 * f32.losses[0]);
        EXPECT_NEAR(mean_of_last(r->losses, 4), mean_of_last(f32.losses, 4), 0.1 * f32.losses[0]);
    }
    EXPECT_EQ(bf16.first_scale, 1.0) << "bf16 needs no loss scaling";
    EXPECT_EQ(f16.first_scale, 1024.0);
    // Batch normalization's backward can make the f16 weight gradients (minibatch sums) overflow at
    // 2^10: the first steps back the scale off, as dynamic loss scaling does in any framework.
    EXPECT_LE(f16.skipped, 3);
    EXPECT_EQ(f16.last_scale, std::ldexp(1024.0, -static_cast<int>(f16.skipped)));
    fs::remove_all(dir);
}

TEST(MixedPrecisionTraining, OverflowingF16StepsAreSkippedAndTheScaleBacksOff) {
    set_fixed_random_seed(2);
    Mlp m;
    auto learner = sgd(m.z->parameters(), learning_parameter_schedule(0.1));
    // 2^120 overflows f16 (max 65504) in the first backward op: every step until the scale comes down
    // to what f16 holds is skipped, leaving the parameters untouched.
    Trainer t(m.z, m.loss, nullptr, {learner}, {}, MixedPrecision::f16(LossScaling{std::ldexp(1.0, 120)}));
    std::vector<std::vector<double>> before;
    for (const Variable& p : m.z->parameters())
        before.push_back(p.value().to(DataType::f64).to_vector<double>());
    EXPECT_FALSE(t.train_minibatch(m.batch()));
    EXPECT_EQ(t.skipped_steps(), 1);
    EXPECT_EQ(t.loss_scale(), std::ldexp(1.0, 119));
    EXPECT_TRUE(std::isfinite(t.previous_minibatch_loss_average())) << "the reported loss is unscaled";
    size_t i = 0;
    for (const Variable& p : m.z->parameters())
        EXPECT_EQ(p.value().to(DataType::f64).to_vector<double>(), before[i++])
            << "a skipped step changes nothing";
    int steps = 1;
    while (!t.train_minibatch(m.batch()) && steps < 200) ++steps;
    EXPECT_LT(steps, 200);
    EXPECT_LE(t.loss_scale(), 65504.0);
    EXPECT_EQ(t.skipped_steps(), steps);
}
#else
TEST(MixedPrecisionGpu, ConvNetTrainsLikeTheCpu) {
    if (!cuda::is_available()) GTEST_SKIP() << "no GPU: " << cuda::unavailable_reason();
    const fs::path dir = temp_dir();
    for (MixedPrecision mp : {MixedPrecision::bf16(), MixedPrecision::f16()}) {
        const TrainingRun cpu = train(mp, Device::cpu(), dir);
        for (int d = 0; d < cuda::device_count(); ++d) {
            const TrainingRun gpu = train(mp, Device::cuda(d), dir);
            // Tensor cores round differently from the CPU's f32 round trip: compare losses, not bits.
            for (size_t i = 0; i < cpu.losses.size(); ++i)
                EXPECT_NEAR(gpu.losses[i], cpu.losses[i], 0.05 * std::max(1.0, cpu.losses[i]))
                    << dtype_name(mp.compute) << " step " << i;
            EXPECT_NEAR(static_cast<double>(gpu.skipped), static_cast<double>(cpu.skipped), 1.0);
        }
    }
    fs::remove_all(dir);
}
#endif

}  // namespace ctk
