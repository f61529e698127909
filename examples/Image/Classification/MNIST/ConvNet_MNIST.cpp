// CNTK's ConvNet_MNIST example (Examples/Image/Classification/ConvNet/Python/ConvNet_MNIST.py) in C++:
// the same network, learner schedules, minibatch sizes and log lines, trained on the CTF files that
// `ctk data mnist` writes (Fashion-MNIST on Debian). Usage: ConvNet_MNIST [--data DIR] [--epochs N]
#include <cstdio>

#include "ctk/ctk.h"
#include "mnist_common.h"

using namespace ctk;

static const char* kUsage =
    "usage: ConvNet_MNIST [--data DIR] [--epochs N] [--log FILE]\n"
    "  --data DIR    folder with Train-28x28_cntk_text.txt and Test-28x28_cntk_text.txt (default\n"
    "                data/fashion-mnist, or $CTK_DATA_DIR)\n"
    "  --epochs N    epochs of 60000 samples (default 40, as CNTK's example)\n"
    "  --epoch-size N  samples per epoch (default 60000)\n"
    "  --seed N      fix the initialisation, dropout and reader seeds\n"
    "  --log FILE    write the progress log to FILE instead of stdout\n";

double convnet_mnist(const mnist::Args& args, int64_t epoch_size = 60000, int64_t minibatch_size = 64) {
    const int64_t max_epochs = args.epochs > 0 ? args.epochs : 40;
    const int64_t image_height = 28, image_width = 28, num_channels = 1;
    const int64_t input_dim = image_height * image_width * num_channels, num_output_classes = 10;

    // Input variables denoting the features and label data.
    Variable input_var = input_variable({num_channels, image_height, image_width}, DataType::f32);
    Variable label_var = input_variable({num_output_classes}, DataType::f32);

    // The feed-forward classification model.
    FunctionPtr scaled_input = element_times(constant(0.00390625), input_var);
    FunctionPtr z;
    {
        using namespace layers;
        default_options options(
            {.activation = ActivationFn([](const Variable& x) { return relu(x); }), .pad = false});
        ConvolutionOptions same;
        same.pad = true;
        FunctionPtr conv1 = call(Convolution2D({5, 5}, 32, same), scaled_input);
        FunctionPtr pool1 = call(MaxPooling({3, 3}, {2, 2}), conv1);
        FunctionPtr conv2 = call(Convolution2D({3, 3}, 48), pool1);
        FunctionPtr pool2 = call(MaxPooling({3, 3}, {2, 2}), conv2);
        FunctionPtr conv3 = call(Convolution2D({3, 3}, 64), pool2);
        FunctionPtr f4 = call(Dense({96}), conv3);
        FunctionPtr drop4 = call(Dropout(0.5), f4);
        z = call(Dense({num_output_classes}, ActivationFn()), drop4);
    }
    FunctionPtr ce = cross_entropy_with_softmax(z, label_var);
    FunctionPtr pe = classification_error(z, label_var);

    auto reader_train = mnist::create_reader(mnist::data_file(args, "Train-28x28_cntk_text.txt"), true,
                                             input_dim, num_output_classes, args.seed);

    // Learning parameters: per-sample rates 0.001 (10 epochs), 0.0005 (10), then 0.0001; no momentum for
    // 5 epochs, then a per-sample momentum of 0.9990239141819757 (a time constant of 1024 samples).
    std::vector<double> lr_per_sample(10, 0.001);
    lr_per_sample.insert(lr_per_sample.end(), 10, 0.0005);
    lr_per_sample.push_back(0.0001);
    auto lr_schedule = learning_parameter_schedule_per_sample(lr_per_sample, epoch_size);
    std::vector<double> mms(5, 0.0);
    mms.push_back(0.9990239141819757);
    auto mm_schedule = momentum_schedule(mms, 1, epoch_size);

    auto learner = momentum_sgd(z->parameters(), lr_schedule, mm_schedule);
    auto progress_printer = std::make_shared<ProgressPrinter>(
        ProgressPrinterOptions{.tag = "Training", .log_to_file = args.log_file, .num_epochs = max_epochs});
    Trainer trainer(z, ce, pe, {learner}, {progress_printer});

    StreamMap input_map{{input_var, "features"}, {label_var, "labels"}};
    log_number_of_parameters(z);
    std::puts("");

    // Minibatches of images, epoch by epoch.
    for (int64_t epoch = 0; epoch < max_epochs; ++epoch) {
        int64_t sample_count = 0;
        while (sample_count < epoch_size) {
            auto data = reader_train->next_minibatch(std::min(minibatch_size, epoch_size - sample_count));
            trainer.train_minibatch(data, input_map);
            sample_count += data.at("labels").num_samples;
        }
        trainer.summarize_training_progress();
    }

    // The test data, in minibatches of 1024.
    auto reader_test = mnist::create_reader(mnist::data_file(args, "Test-28x28_cntk_text.txt"), false,
                                            input_dim, num_output_classes);
    const int64_t test_epoch_size = 10000, test_minibatch_size = 1024;
    double metric_numer = 0;
    int64_t metric_denom = 0, sample_count = 0, minibatch_index = 0;
    while (sample_count < test_epoch_size) {
        const int64_t current_minibatch = std::min(test_minibatch_size, test_epoch_size - sample_count);
        auto data = reader_test->next_minibatch(current_minibatch);
        if (data.empty()) break;
        // CNTK's script weighs each minibatch by the size it asked for; the size delivered is exact
        // also when the data end first.
        const int64_t delivered = data.at("labels").num_samples;
        metric_numer += trainer.test_minibatch(data, input_map) * static_cast<double>(delivered);
        metric_denom += delivered;
        sample_count += delivered;
        ++minibatch_index;
    }
    std::puts("");
    std::printf("Final Results: Minibatch[1-%lld]: errs = %0.2f%% * %lld\n",
                static_cast<long long>(minibatch_index + 1),
                metric_numer * 100.0 / static_cast<double>(metric_denom),
                static_cast<long long>(metric_denom));
    std::puts("");
    return metric_numer / static_cast<double>(metric_denom);
}

int main(int argc, char** argv) {
    try {
        const mnist::Args args = mnist::parse_args(argc, argv, kUsage);
        const double error = convnet_mnist(args, args.epoch_size);
        std::printf("Error: %f\n", error);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "ConvNet_MNIST: %s\n", e.what());
        return 1;
    }
}
