// User functions from C++: shape declarations and their errors, forward's contract, clones sharing the
// callbacks, and model files holding them (with their state) or refusing them (without a serialize). (Forward
// and gradients: the graph harness case user_function/host_callbacks; the Python UserFunction:
// tests/python/test_user_function.py.)
#include <gtest/gtest.h>

#include <filesystem>

#include "ctk/ctk.h"
#include "graph/graph_test_util.h"

namespace ctk {
namespace {

std::shared_ptr<UserFunctionCallbacks> doubling(int outputs_made = 1, Dims declared = {}) {
    auto cb = std::make_shared<UserFunctionCallbacks>();
    cb->infer_outputs = [declared](const std::vector<Variable>& in) {
        return std::vector<UserFunctionOutput>{
            {declared.empty() ? in[0].shape() : declared, in[0].dtype(), in[0].dynamic_axes()}};
    };
    cb->forward = [outputs_made](const std::vector<Value>& in, std::vector<Value>& out, bool) {
        for (int i = 0; i < outputs_made; ++i)
            out.push_back(Value(element_times(in[0].data(), Tensor::scalar(2.0, in[0].dtype()))));
        return std::shared_ptr<void>();
    };
    return cb;
}

TEST(UserFunction, EvaluatesClonesAndNamesItsOp) {
    Variable x = input_variable({3});
    auto cb = doubling();
    FunctionPtr f = user_function("Doubling", {x}, cb, "twice");
    EXPECT_EQ(f->op_name(), "Doubling");
    EXPECT_EQ(f->name(), "twice");
    const Tensor data = Tensor::from_vector<float>({1, 2, 3}, Shape{1, 3});
    EXPECT_EQ(f->eval({{x, Value(data)}}).begin()->second.data().to_vector<float>(),
              (std::vector<float>{2, 4, 6}));
    FunctionPtr g = f->clone();
    EXPECT_EQ(user_function_callbacks(*g), user_function_callbacks(*f));
    EXPECT_EQ(user_function_callbacks(*g).get(), cb.get());
    EXPECT_EQ(user_function_callbacks(*plus(x, x)), nullptr);
    // No backward: no gradient flows (zero).
    ValueMap grads = plus(f, x)->grad({{x, Value(data)}}, {x});
    EXPECT_EQ(grads.at(x).data().to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(UserFunction, ErrorsNameTheFunction) {
    Variable x = input_variable({3});
    EXPECT_NE(test::error_of([&] {
                  user_function("Bad", {x}, doubling(1, {kInferredDim}), "bad");
              }).find("user function outputs need known (or free) dims"),
              std::string::npos);
    EXPECT_NE(
        test::error_of([&] { user_function("Bad", {x}, nullptr, "bad"); }).find("infer_outputs and forward"),
        std::string::npos);
    FunctionPtr two = user_function("Two", {x}, doubling(2), "two");
    const Tensor data = Tensor::ones(Shape{1, 3});
    EXPECT_NE(test::error_of([&] {
                  two->eval({{x, Value(data)}});
              }).find("forward produced 2 outputs"),
              std::string::npos);
    FunctionPtr f = user_function("Doubling", {x}, doubling(), "twice");
    const std::string path =
        (std::filesystem::temp_directory_path() / "ctk_user_function_test.model").string();
    EXPECT_NE(test::error_of([&] { save_model(f, path); }).find("'twice' is a user function (Doubling)"),
              std::string::npos);
    EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(UserFunction, IsSavedWithItsStateAndRebuiltByADeserializer) {
    Variable x = input_variable({3}, DataType::f32, false, false, default_batch_axes(), "x");
    Variable p = parameter_from(Tensor::from_vector<float>({1, 2, 3}, Shape{3}), "p");
    auto cb = doubling();
    cb->serialize = [] { return Dictionary{{"factor", int64_t{2}}, {"note", "doubles"}}; };
    FunctionPtr f = user_function("Doubling", {x}, cb, "twice");
    FunctionPtr model = plus(f, p);
    const std::string path =
        (std::filesystem::temp_directory_path() / "ctk_user_function_saved.model").string();
    save_model(model, path);

    // Without a deserializer the file names the function it cannot rebuild.
    EXPECT_NE(test::error_of([&] { load_model(path); }).find("'twice' is a user function"),
              std::string::npos);

    std::vector<SavedUserFunction> seen;
    FunctionPtr loaded = load_model(path, std::nullopt, [&](const SavedUserFunction& saved) {
        seen.push_back(saved);
        return user_function("Doubling", saved.inputs, doubling(), saved.name);
    });
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].name, "twice");
    EXPECT_EQ(seen[0].uid, f->uid());
    EXPECT_EQ(seen[0].state, (Dictionary{{"factor", int64_t{2}}, {"note", "doubles"}}));
    ASSERT_EQ(seen[0].inputs.size(), 1u);
    EXPECT_EQ(seen[0].inputs[0].name(), "x");
    const Tensor data = Tensor::from_vector<float>({1, 2, 3, 4, 5, 6}, Shape{2, 3});
    const std::vector<float> expected{3, 6, 9, 9, 12, 15};
    EXPECT_EQ(model->eval({{x, Value(data)}}).begin()->second.data().to_vector<float>(), expected);
    ASSERT_EQ(loaded->arguments().size(), 1u);
    EXPECT_EQ(loaded->eval({{loaded->arguments()[0], Value(data)}}).begin()->second.data().to_vector<float>(),
              expected);
    ASSERT_NE(loaded->find_by_name("twice"), nullptr);
    EXPECT_EQ(loaded->find_by_name("twice")->op_name(), "Doubling");

    // A checkpoint of the graph in memory: its own user functions' callbacks, found by uid.
    FunctionPtr again = load_model(path, std::nullopt, live_user_functions(model));
    EXPECT_EQ(user_function_callbacks(*again->find_by_name("twice")), user_function_callbacks(*f));
    EXPECT_NE(test::error_of([&] {
                  load_model(path, std::nullopt, live_user_functions(plus(x, x)));
              }).find("the user function 'twice'"),
              std::string::npos);
    // A deserializer that gives nothing back is an error, not a crash.
    EXPECT_NE(test::error_of([&] {
                  load_model(path, std::nullopt, [](const SavedUserFunction&) { return FunctionPtr(); });
              }).find("returned no Function"),
              std::string::npos);
    std::filesystem::remove(path);
}

}  // namespace
}  // namespace ctk
