// Evaluation cost per call from C++ (the baseline of bench/csharp_overhead.py): a model loaded from a file
// evaluated on a batch made from host data every call, as an application serving requests does.
// Usage: ctk_eval_overhead --make-model PATH          (writes the MLP 784-200-10 the benchmark uses)
//        ctk_eval_overhead --model PATH --batch N --min-time SECONDS [--threads N]
// prints {"us_per_call": ..., "calls": ...}
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ctk/ctk.h"

using namespace ctk;

int main(int argc, char** argv) {
    std::string model_path, make_path;
    int64_t batch = 1, threads = 1;
    double min_time = 2.0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const std::string a = argv[i];
        if (a == "--model")
            model_path = argv[i + 1];
        else if (a == "--make-model")
            make_path = argv[i + 1];
        else if (a == "--batch")
            batch = std::atoll(argv[i + 1]);
        else if (a == "--min-time")
            min_time = std::atof(argv[i + 1]);
        else if (a == "--threads")
            threads = std::atoll(argv[i + 1]);
    }
    try {
        if (!make_path.empty()) {
            set_fixed_random_seed(1);
            Variable x = input_variable({784}, DataType::f32, false, false, default_batch_axes(), "features");
            FunctionPtr h =
                relu(plus(times(x, parameter({784, 200})), parameter({200}, constant_initializer(0.1))));
            FunctionPtr z =
                plus(times(h, parameter({200, 10})), parameter({10}, constant_initializer(0.0)), "z");
            save_model(z, make_path);
            return 0;
        }
        set_num_threads(static_cast<int>(threads));
        FunctionPtr model = load_model(model_path);
        const Variable x = model->arguments().at(0);
        const Variable z = model->output();
        std::vector<float> data(static_cast<size_t>(batch * 784));
        for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(i % 255);
        auto call = [&] {
            Tensor t = Tensor::from_vector(data, Shape({batch, 784}));
            ValueMap out = model->eval({{x, Value(t)}}, {z});
            volatile float first = out.at(z).data().data<float>()[0];
            (void)first;
        };
        for (int i = 0; i < 20; ++i) call();
        int64_t calls = 0;
        const auto start = std::chrono::steady_clock::now();
        double elapsed = 0;
        while (elapsed < min_time) {
            for (int i = 0; i < 50; ++i) call();
            calls += 50;
            elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        }
        std::printf("{\"us_per_call\": %.3f, \"calls\": %lld}\n", 1e6 * elapsed / static_cast<double>(calls),
                    static_cast<long long>(calls));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ctk_eval_overhead: %s\n", e.what());
        return 1;
    }
}
