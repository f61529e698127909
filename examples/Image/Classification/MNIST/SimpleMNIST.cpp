// CNTK's SimpleMNIST example (Examples/Image/Classification/MLP/Python/SimpleMNIST.py) in C++: one
// hidden layer of 200 ReLUs, adadelta, minibatches of 64, trained with training_session for 10 sweeps.
// Usage: SimpleMNIST [--data DIR] [--epochs N]
#include <cstdio>

#include "ctk/ctk.h"
#include "mnist_common.h"

using namespace ctk;

static const char* kUsage =
    "usage: SimpleMNIST [--data DIR] [--epochs N] [--log FILE]\n"
    "  --data DIR    folder with Train-28x28_cntk_text.txt and Test-28x28_cntk_text.txt (default\n"
    "                data/fashion-mnist, or $CTK_DATA_DIR)\n"
    "  --epochs N    sweeps over the 60000 training samples (default 10, as CNTK's example)\n"
    "  --epoch-size N  samples per sweep (default 60000)\n"
    "  --seed N      fix the initialisation, dropout and reader seeds\n"
    "  --log FILE    write the progress log to FILE instead of stdout\n";

double simple_mnist(const mnist::Args& args) {
    const int64_t input_dim = 784, num_output_classes = 10, num_hidden_layers = 1, hidden_layers_dim = 200;

    Variable feature = input_variable({input_dim}, DataType::f32);
    Variable label = input_variable({num_output_classes}, DataType::f32);

    FunctionPtr scaled_input = element_times(constant(0.00390625), feature);
    FunctionPtr z;
    {
        using namespace layers;
        auto hidden = For(static_cast<int>(num_hidden_layers), [&](int) {
            return Dense({hidden_layers_dim}, ActivationFn([](const Variable& x) { return relu(x); }));
        });
        hidden.push_back(Dense({num_output_classes}));
        z = call(Sequential(hidden), scaled_input);
    }
    FunctionPtr ce = cross_entropy_with_softmax(z, label);
    FunctionPtr pe = classification_error(z, label);

    auto reader_train = mnist::create_reader(mnist::data_file(args, "Train-28x28_cntk_text.txt"), true,
                                             input_dim, num_output_classes, args.seed);
    StreamMap input_map{{feature, "features"}, {label, "labels"}};

    const int64_t minibatch_size = 64, num_samples_per_sweep = args.epoch_size;
    const int64_t num_sweeps_to_train_with = args.epochs > 0 ? args.epochs : 10;
    auto progress_printer = std::make_shared<ProgressPrinter>(ProgressPrinterOptions{
        .tag = "Training", .log_to_file = args.log_file, .num_epochs = num_sweeps_to_train_with});

    auto lr = learning_parameter_schedule_per_sample(1.0);
    auto trainer =
        std::make_shared<Trainer>(z, ce, pe, std::vector<LearnerPtr>{adadelta(z->parameters(), lr)},
                                  std::vector<ProgressWriterPtr>{progress_printer});
    TrainingSession(trainer, reader_train, minibatch_size, input_map,
                    {num_samples_per_sweep, DataUnit::sample},
                    num_samples_per_sweep * num_sweeps_to_train_with)
        .train();

    // The test data: 9 minibatches of 1024 (CNTK's example leaves the last 784 samples out).
    auto reader_test = mnist::create_reader(mnist::data_file(args, "Test-28x28_cntk_text.txt"), false,
                                            input_dim, num_output_classes);
    const int64_t test_minibatch_size = 1024, num_samples = 10000;
    const int64_t num_minibatches_to_test = num_samples / test_minibatch_size;
    double test_result = 0.0;
    for (int64_t i = 0; i < num_minibatches_to_test; ++i) {
        auto mb = reader_test->next_minibatch(test_minibatch_size);
        if (mb.empty()) return i ? test_result / static_cast<double>(i) : 0.0;
        test_result += trainer->test_minibatch(mb, input_map);
    }
    return test_result / static_cast<double>(num_minibatches_to_test);
}

int main(int argc, char** argv) {
    try {
        const mnist::Args args = mnist::parse_args(argc, argv, kUsage);
        const double error = simple_mnist(args);
        std::printf("Error: %f\n", error);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "SimpleMNIST: %s\n", e.what());
        return 1;
    }
}
