// Golden end-to-end tests: an MLP and a small ConvNet trained by 20 plain SGD steps through ctk's graph
// (float64) match the losses, the first step's parameter gradients and the final parameters that
// PyTorch produced for the same data (tests/graph/golden/make_*_golden.py write the .txt files).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "ctk/ctk.h"

using namespace ctk;

namespace {

std::map<std::string, Tensor> load_golden(const std::string& path) {
    std::ifstream in(path);
    EXPECT_TRUE(in.good()) << "cannot open " << path;
    std::map<std::string, Tensor> out;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream s(line);
        std::string name, tok;
        s >> name;
        Dims dims;
        while (s >> tok && tok != ":") dims.push_back(std::stoll(tok));
        std::vector<double> values;
        double v;
        while (s >> v) values.push_back(v);
        out[name] = Tensor::from_vector(values, Shape(dims));
    }
    return out;
}

double max_rel_error(const Tensor& got, const Tensor& want) {
    auto g = got.to_vector<double>(), w = want.to_vector<double>();
    EXPECT_EQ(g.size(), w.size());
    double worst = 0;
    for (size_t i = 0; i < g.size() && i < w.size(); ++i)
        worst = std::max(worst, std::fabs(g[i] - w[i]) / std::max(1e-3, std::fabs(w[i])));
    return worst;
}

// Runs 20 SGD steps of `loss` over the golden data and compares with PyTorch's numbers.
void replay(std::map<std::string, Tensor>& golden, const FunctionPtr& loss, const Variable& x,
            const Variable& y, const std::vector<Variable>& params, const std::vector<std::string>& names,
            double lr) {
    const Tensor& xs = golden["x"];
    const Tensor& ys = golden["y"];
    for (int64_t step = 0; step < 20; ++step) {
        ValueMap args{{x, Value(xs.select(0, step).contiguous())},
                      {y, Value(ys.select(0, step).contiguous())}};
        ValueMap outs{{loss->output(), Value()}};
        auto state = loss->forward(args, outs, {loss->output()}, true);
        const double l = outs.at(loss->output()).data().item();
        EXPECT_LT(std::fabs(l - golden["loss"].at({step})) / golden["loss"].at({step}), 1e-10)
            << "step " << step;
        ValueMap grads =
            loss->backward(*state, {{loss->output(), Value(Tensor::ones(Shape{}, DataType::f64))}}, params);
        if (step == 0) {
            for (size_t i = 0; i < params.size(); ++i) {
                EXPECT_LT(max_rel_error(grads.at(params[i]).data(), golden["d" + names[i] + "_step0"]), 1e-10)
                    << "d" << names[i];
            }
        }
        for (const Variable& p : params)
            p.set_value(
                minus(p.value(), element_times(grads.at(p).data(), Tensor::scalar(lr, DataType::f64))));
    }
    for (size_t i = 0; i < params.size(); ++i)
        EXPECT_LT(max_rel_error(params[i].value(), golden[names[i] + "_final"]), 1e-9) << names[i];
}

}  // namespace

TEST(GoldenMlp, TwentySgdStepsMatchPyTorch) {
    auto golden = load_golden(std::string(CTK_TEST_DATA_DIR) + "/graph/golden/mlp_sgd_golden.txt");
    ASSERT_EQ(golden.count("loss"), 1u);
    const DataType f64 = DataType::f64;
    Variable x = input_variable({6}, f64), y = input_variable({3}, f64);
    Variable w1 = parameter_from(golden["w1"], "w1"), b1 = parameter_from(golden["b1"], "b1");
    Variable w2 = parameter_from(golden["w2"], "w2"), b2 = parameter_from(golden["b2"], "b2");
    FunctionPtr z = plus(times(tanh(plus(times(x, w1), b1)), w2), b2);
    // CNTK's Trainer sums the per-sample losses over the minibatch.
    FunctionPtr loss = reduce_sum(cross_entropy_with_softmax(z, y), {Axis::all_axes()});
    replay(golden, loss, x, y, {w1, b1, w2, b2}, {"w1", "b1", "w2", "b2"}, 0.1);
}

TEST(GoldenConvNet, TwentySgdStepsMatchPyTorch) {
    auto golden = load_golden(std::string(CTK_TEST_DATA_DIR) + "/graph/golden/convnet_sgd_golden.txt");
    ASSERT_EQ(golden.count("loss"), 1u);
    const DataType f64 = DataType::f64;
    Variable x = input_variable({2, 6, 6}, f64), y = input_variable({5}, f64);
    Variable wc = parameter_from(golden["wc"], "wc"), bc = parameter_from(golden["bc"], "bc");
    Variable wd = parameter_from(golden["wd"], "wd"), bd = parameter_from(golden["bd"], "bd");
    FunctionPtr h = relu(plus(convolution(wc, x), bc));  // CNTK's auto padding: same size for 3x3
    FunctionPtr p = pooling(h, PoolingType::max, {2, 2}, {2, 2});
    FunctionPtr z = plus(times(p, wd), bd);  // W [4, 3, 3, 5] contracts the whole pooled map
    FunctionPtr loss = reduce_sum(cross_entropy_with_softmax(z, y), {Axis::all_axes()});
    replay(golden, loss, x, y, {wc, bc, wd, bd}, {"wc", "bc", "wd", "bd"}, 0.05);
}
