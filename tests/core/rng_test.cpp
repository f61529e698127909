// Philox: the published known-answer vector, distribution moments, and independence from threads.
#include <gtest/gtest.h>

#include <cmath>

#include "ctk/core/parallel.h"
#include "ctk/core/rng.h"

using namespace ctk;

TEST(Philox, KnownAnswer) {
    // Philox4x32-10 test vector from the Random123 distribution (counter 0, key 0).
    auto r = philox4x32({0, 0, 0, 0}, {0, 0});
    EXPECT_EQ(r[0], 0x6627e8d5u);
    EXPECT_EQ(r[1], 0xe169c58du);
    EXPECT_EQ(r[2], 0xbc57ac4cu);
    EXPECT_EQ(r[3], 0x9b00dbd8u);
}

namespace {
std::pair<double, double> moments(const Tensor& t) {
    auto v = t.to_vector<double>();
    double mean = 0, var = 0;
    for (double x : v) mean += x;
    mean /= static_cast<double>(v.size());
    for (double x : v) var += (x - mean) * (x - mean);
    return {mean, var / static_cast<double>(v.size())};
}
}  // namespace

TEST(Generator, Distributions) {
    Generator g(42);
    Tensor u = Tensor::empty(Shape{200000});
    g.uniform(u, -1, 3);
    auto [um, uv] = moments(u);
    EXPECT_NEAR(um, 1.0, 0.02);
    EXPECT_NEAR(uv, 16.0 / 12.0, 0.02);
    for (float x : u.to_vector<float>()) ASSERT_TRUE(x >= -1 && x < 3);

    Tensor n = Tensor::empty(Shape{200000}, DataType::f64);
    g.normal(n, 2.0, 0.5);
    auto [nm, nv] = moments(n);
    EXPECT_NEAR(nm, 2.0, 0.01);
    EXPECT_NEAR(nv, 0.25, 0.005);

    Tensor tn = Tensor::empty(Shape{100000});
    g.truncated_normal(tn, 0.0, 1.0, 2.0);
    auto [tm, tv] = moments(tn);
    for (float x : tn.to_vector<float>()) ASSERT_LE(std::fabs(x), 2.0f);
    EXPECT_NEAR(tm, 0.0, 0.02);
    EXPECT_NEAR(tv, 0.7737, 0.02);  // variance of N(0,1) truncated to [-2, 2]

    Tensor b = Tensor::empty(Shape{100000});
    g.bernoulli(b, 0.3);
    EXPECT_NEAR(moments(b).first, 0.3, 0.01);
    EXPECT_THROW(g.bernoulli(b, 1.5), ValueError);
    Tensor i = Tensor::empty(Shape{4}, DataType::i32);
    EXPECT_THROW(g.uniform(i), TypeError);
}

TEST(Generator, DependsOnlyOnSeedAndOffset) {
    Tensor a = Tensor::empty(Shape{100001});
    Tensor b = Tensor::empty(Shape{100001});
    int saved = num_threads();
    set_num_threads(1);
    Generator g1(7);
    g1.normal(a);
    set_num_threads(2);
    Generator g2(7);
    g2.normal(b);
    set_num_threads(saved);
    EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
    EXPECT_EQ(g1.offset(), 100001u);

    // Drawing [0, 10) then [10, 20) equals drawing [0, 20) at once; a restored offset resumes.
    Generator whole(3), parts(3);
    Tensor w = Tensor::empty(Shape{20}), p1 = Tensor::empty(Shape{10}), p2 = Tensor::empty(Shape{10});
    whole.uniform(w);
    parts.uniform(p1);
    Generator resumed(3, parts.offset());
    resumed.uniform(p2);
    auto wv = w.to_vector<float>();
    auto v1 = p1.to_vector<float>(), v2 = p2.to_vector<float>();
    v1.insert(v1.end(), v2.begin(), v2.end());
    EXPECT_EQ(wv, v1);

    // A strided target gets the same values as a contiguous one, in row-major order.
    Tensor big = Tensor::zeros(Shape{4, 6});
    Tensor view = big.slice(1, 0, 6, 2);
    Generator(5).uniform(view);
    Tensor flat = Tensor::empty(Shape{4, 3});
    Generator(5).uniform(flat);
    EXPECT_EQ(view.to_vector<float>(), flat.to_vector<float>());
}
