// ONNX's own node conformance tests (Debian's libonnx-testdata; skipped when absent): every test model
// is imported and evaluated on its test data, and the tests that pass are checked against the list in
// onnx_node_tests_pass.txt, so that a regression fails. Operands that set shapes and are graph inputs in
// a test are fixed at load time (load_onnx_model's fixed_inputs), as ctk's graphs have static shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "ctk/formats/model.h"
#include "formats/onnx_tensor_file.h"

namespace ctk {
namespace {

namespace fs = std::filesystem;

struct NodeResult {
    enum Kind { passed, failed, unsupported } kind;
    std::string message;
};

// ONNX's node test data stores bfloat16 tensors as UINT16 bit patterns (NumPy has no bfloat16; see
// onnx/backend/test/case/node/cast.py), which ctk reads as integers: reinterpret them as bfloat16.
Tensor bf16_from_bits(const Tensor& bits) {
    const std::vector<double> v = bits.to_vector<double>();
    Tensor out = Tensor::empty(bits.shape(), DataType::bf16);
    auto* p = static_cast<uint16_t*>(out.raw_data());
    for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<uint16_t>(v[i]);
    return out;
}

// The graph input an import error names as an operand that must be constant ("input 1 ('k') must be a
// constant"), or "".
std::string must_be_constant(const std::string& message) {
    const std::string tail = "') must be a constant";
    const size_t end = message.find(tail);
    if (end == std::string::npos) return "";
    const size_t begin = message.rfind("('", end);
    return begin == std::string::npos ? "" : message.substr(begin + 2, end - begin - 2);
}

// An unsupported test's reason without the file's path and the node's name, so that alike reasons group:
// "load_onnx_model '...': node 3 'y' (Op): why" -> "(Op): why".
std::string reason_of(const std::string& message) {
    std::string why = message;
    if (why.rfind("load_onnx_model '", 0) == 0) {
        const size_t end = why.find("': ", 17);
        if (end != std::string::npos) why = why.substr(end + 3);
    }
    if (why.rfind("node ", 0) == 0) {
        const size_t open = why.find(" (");
        if (open != std::string::npos) why = why.substr(open + 1);
    }
    return why;
}

NodeResult run_node_test(const fs::path& dir, bool& fixed_any) {
    const fs::path data = dir / "test_data_set_0";
    std::vector<OnnxTensorFile> inputs, outputs;
    FunctionPtr model;
    std::string data_error;
    try {
        for (int i = 0; fs::exists(data / ("input_" + std::to_string(i) + ".pb")); ++i)
            inputs.push_back(load_onnx_tensor_file((data / ("input_" + std::to_string(i) + ".pb")).string()));
        for (int i = 0; fs::exists(data / ("output_" + std::to_string(i) + ".pb")); ++i)
            outputs.push_back(
                load_onnx_tensor_file((data / ("output_" + std::to_string(i) + ".pb")).string()));
    } catch (const std::exception& e) {  // sequences and optionals: the model says why, below
        data_error = e.what();
    }
    // An input that sets a shape (Reshape's target, Slice's starts, ...) is fixed to the test's value at
    // load time, as load_onnx_model offers: ctk's graphs have static shapes.
    std::map<std::string, Tensor> fixed;
    for (;;) {
        try {
            model = load_onnx_model((dir / "model.onnx").string(), fixed);
            break;
        } catch (const NotImplementedError& e) {
            const std::string name = must_be_constant(e.what());
            if (name.empty()) return {NodeResult::unsupported, e.what()};
            const auto it = std::find_if(inputs.begin(), inputs.end(),
                                         [&](const OnnxTensorFile& t) { return t.name == name; });
            if (it != inputs.end() && !fixed.count(name)) {
                fixed.emplace(name, it->value);
                continue;
            }
            // A value computed from inputs (a window's size cast to float, ...): fix the shape-like
            // inputs, the integer scalars and vectors.
            size_t before = fixed.size();
            for (const OnnxTensorFile& t : inputs)
                if (!is_floating(t.value.dtype()) && t.value.rank() <= 1) fixed.emplace(t.name, t.value);
            if (fixed.size() == before) return {NodeResult::unsupported, e.what()};
        } catch (const std::exception& e) {
            return {NodeResult::failed, std::string("import: ") + e.what()};
        }
    }
    if (!data_error.empty()) return {NodeResult::failed, "test data: " + data_error};
    fixed_any = !fixed.empty();
    try {
        const std::vector<Variable> args = model->arguments();
        ValueMap feed;
        for (size_t i = 0; i < inputs.size(); ++i) {
            const Variable* target = nullptr;
            for (const Variable& a : args)
                if (a.name() == inputs[i].name) target = &a;
            if (!target) continue;  // an input the outputs do not depend on, or a fixed one
            Tensor t = inputs[i].value;
            if (target->dtype() == DataType::bf16 && !is_floating(t.dtype())) t = bf16_from_bits(t);
            if (t.dtype() != target->dtype()) t = t.to(target->dtype());
            feed.emplace(*target, Value(t));
        }
        if (feed.size() != args.size()) return {NodeResult::failed, "inputs do not match the arguments"};
        ValueMap got = model->eval(feed);
        const auto outs = model->outputs();
        if (outs.size() != outputs.size()) return {NodeResult::failed, "output count differs"};
        for (size_t i = 0; i < outs.size(); ++i) {
            Tensor g = got.at(outs[i]).data(), e = outputs[i].value;
            // The float -> bfloat16 test data truncates; ctk rounds to nearest even (as onnxruntime
            // does), so bfloat16 results may differ by one unit in the last place (2^-7 relative).
            double rel = 1e-4;
            if (g.dtype() == DataType::bf16 && !is_floating(e.dtype())) {
                e = bf16_from_bits(e);
                rel = 1.0 / 128;
            }
            if (g.shape() != e.shape())
                return {NodeResult::failed, "output " + std::to_string(i) + " shape " +
                                                g.shape().to_string() + " != expected " +
                                                e.shape().to_string()};
            auto gv = g.to_vector<double>(), ev = e.to_vector<double>();
            for (size_t k = 0; k < gv.size(); ++k) {
                const bool both_nan = std::isnan(gv[k]) && std::isnan(ev[k]);
                if (!both_nan && !(std::abs(gv[k] - ev[k]) <= 1e-4 + rel * std::abs(ev[k])) && gv[k] != ev[k])
                    return {NodeResult::failed, "output " + std::to_string(i) + " element " +
                                                    std::to_string(k) + ": " + std::to_string(gv[k]) +
                                                    " != " + std::to_string(ev[k])};
            }
        }
    } catch (const NotImplementedError& e) {
        return {NodeResult::unsupported, e.what()};
    } catch (const std::exception& e) {
        return {NodeResult::failed, std::string("eval: ") + e.what()};
    }
    return {NodeResult::passed, ""};
}

TEST(OnnxConformance, NodeTests) {
    const fs::path root = fs::path(CTK_ONNX_TESTDATA) / "node";
    if (!fs::exists(root))
        GTEST_SKIP() << "ONNX node tests not found at " << root << " (apt install libonnx-testdata)";
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(root))
        if (fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    std::set<std::string> expected;
    {
        std::ifstream in(fs::path(__FILE__).parent_path() / "onnx_node_tests_pass.txt");
        for (std::string line; std::getline(in, line);)
            if (!line.empty() && line[0] != '#') expected.insert(line);
    }
    const auto start = std::chrono::steady_clock::now();
    int counts[3] = {0, 0, 0}, with_fixed_inputs = 0;
    std::vector<std::string> passed, failures, regressions, newly;
    std::map<std::string, int> unsupported_why;
    for (const fs::path& d : dirs) {
        const std::string name = d.filename().string();
        bool fixed_any = false;
        NodeResult r = run_node_test(d, fixed_any);
        ++counts[r.kind];
        if (r.kind == NodeResult::passed && fixed_any) ++with_fixed_inputs;
        if (r.kind == NodeResult::passed) {
            passed.push_back(name);
            if (!expected.count(name)) newly.push_back(name);
        } else {
            if (expected.count(name)) regressions.push_back(name + ": " + r.message);
            if (r.kind == NodeResult::failed) failures.push_back(name + ": " + r.message);
            if (r.kind == NodeResult::unsupported) {
                // The reason without the file's path and the node's name, so that alike reasons group.
                const std::string why = reason_of(r.message);
                ++unsupported_why[why.substr(0, 100)];
            }
        }
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << "ONNX node tests: " << dirs.size() << " total, " << counts[0] << " passed, " << counts[1]
              << " failed, " << counts[2] << " unsupported (" << secs << " s); " << with_fixed_inputs
              << " of the passing ones with shape-setting inputs fixed at load time\n";
    std::cout << "failures:\n";
    for (const auto& f : failures) std::cout << "  " << f.substr(0, 300) << "\n";
    std::cout << "unsupported, by reason:\n";
    for (const auto& [why, n] : unsupported_why) std::cout << "  " << n << "x " << why << "\n";
    for (const auto& n : newly) std::cout << "newly passing: " << n << "\n";
    if (const char* out = std::getenv("CTK_ONNX_WRITE_PASS_LIST")) {
        std::ofstream o(out);
        for (const auto& p : passed) o << p << "\n";
    }
    for (const auto& r : regressions) ADD_FAILURE() << "node test listed as passing no longer passes: " << r;
}

}  // namespace
}  // namespace ctk
