// CNTK's TrainResNet_CIFAR10 example (Examples/Image/Classification/ResNet/Python/TrainResNet_CIFAR10.py
// with resnet_models.py) in C++: ResNet-20 or ResNet-110 read through the image reader with CNTK's
// augmentation (a random square crop of 0.8 of the side, a bilinear scale back to 32x32, the mean file),
// the same learner, schedule, minibatch sizes and log lines. The data are CNTK's CIFAR-10 layout
// (train_map.txt, test_map.txt, CIFAR-10_mean.xml and the PNG files), which `ctk data cifar10` writes from
// CIFAR-10's binary batches and `ctk data images --layout cifar` from an IDX image set (Debian's
// Fashion-MNIST).
#include <cmath>
#include <cstdio>

#include "ctk/ctk.h"
#include "ctk/io/image.h"
#include "example_args.h"

using namespace ctk;

static const char* kUsage =
    "usage: TrainResNet_CIFAR10 [--data DIR] [--network resnet20|resnet110] [--epochs N] [--epoch-size N]\n"
    "                           [--test-size N] [--seed N] [--log FILE]\n"
    "  --data DIR        CNTK's CIFAR-10 layout (default data/cifar10, or $CTK_DATA_DIR)\n"
    "  --network NAME    resnet20 (default) or resnet110\n"
    "  --epochs N        epochs (default 160, as CNTK's example)\n"
    "  --epoch-size N    samples per epoch (default 50000)\n"
    "  --test-size N     test samples (default 10000)\n"
    "  --seed N          fix the initialisation and the reader's order and augmentation\n"
    "  --log FILE        write the progress log to FILE instead of stdout\n";

namespace {

const int64_t kImageSize = 32, kChannels = 3, kClasses = 10;

// CNTK's create_reader: the augmentation (crop) only when training.
std::shared_ptr<MinibatchSource> create_reader(const std::string& map_file, const std::string& mean_file,
                                               bool train, int64_t seed) {
    ImageDeserializerConfig image;
    image.map_file = map_file;
    image.num_classes = kClasses;
    if (train) {
        ImageCrop crop;
        crop.crop_type = "randomside";
        crop.side_ratio_min = crop.side_ratio_max = 0.8;
        crop.jitter_type = "uniratio";
        image.transforms.emplace_back(crop);
    }
    ImageScale scale;
    scale.width = scale.height = kImageSize;
    scale.channels = kChannels;
    scale.interpolations = "linear";
    image.transforms.emplace_back(scale);
    image.transforms.emplace_back(ImageMean{mean_file});
    MinibatchSourceConfig c;
    c.deserializers = {image_deserializer(image)};
    c.randomize = train;  // CNTK's script randomized both readers; the test order does not change the error
    if (seed >= 0) c.randomization_seed = static_cast<uint64_t>(seed);
    return std::make_shared<MinibatchSource>(c);
}

// resnet_models.py: convolution (He-normal, no bias, padded) and spatial batch normalization.
FunctionPtr conv_bn(const Variable& input, const Dims& filter, int64_t filters,
                    const Dims& strides = {1, 1}) {
    layers::ConvolutionOptions o;
    o.init = he_normal();
    o.pad = true;
    o.strides = strides;
    o.bias = false;
    FunctionPtr c = layers::call(layers::Convolution(filter, filters, o), input);
    return layers::call(layers::BatchNormalization(1, 1.0, 4096, 0.0, std::nullopt, "", true), c);
}

FunctionPtr conv_bn_relu(const Variable& input, const Dims& filter, int64_t filters,
                         const Dims& strides = {1, 1}) {
    return relu(conv_bn(input, filter, filters, strides));
}

FunctionPtr resnet_basic(const Variable& input, int64_t filters) {
    FunctionPtr c1 = conv_bn_relu(input, {3, 3}, filters);
    FunctionPtr c2 = conv_bn(c1, {3, 3}, filters);
    return relu(plus(c2, input));
}

FunctionPtr resnet_basic_inc(const Variable& input, int64_t filters) {
    FunctionPtr c1 = conv_bn_relu(input, {3, 3}, filters, {2, 2});
    FunctionPtr c2 = conv_bn(c1, {3, 3}, filters);
    FunctionPtr shortcut = conv_bn(input, {1, 1}, filters, {2, 2});
    return relu(plus(c2, shortcut));
}

FunctionPtr resnet_basic_stack(FunctionPtr input, int64_t layers, int64_t filters) {
    for (int64_t i = 0; i < layers; ++i) input = resnet_basic(input, filters);
    return input;
}

// create_cifar10_model: 16, 32 and 64 maps of `stack` basic blocks each, global average pooling, a
// normal(0.01) dense layer.
FunctionPtr create_cifar10_model(const Variable& input, int64_t stack) {
    FunctionPtr conv = conv_bn_relu(input, {3, 3}, 16);
    FunctionPtr r1 = resnet_basic_stack(conv, stack, 16);
    FunctionPtr r2 = resnet_basic_stack(resnet_basic_inc(r1, 32), stack - 1, 32);
    FunctionPtr r3 = resnet_basic_stack(resnet_basic_inc(r2, 64), stack - 1, 64);
    FunctionPtr pool =
        layers::call(layers::AveragePooling({8, 8}, {1}, std::nullopt, "final_avg_pooling"), r3);
    return layers::call(layers::Dense({kClasses}, std::nullopt, normal(0.01)), pool);
}

double train_and_evaluate(const examples::Args& args) {
    const std::string network = args.options.count("network") ? args.options.at("network") : "resnet20";
    const int64_t max_epochs = args.epochs > 0 ? args.epochs : 160;
    const int64_t epoch_size = args.epoch_size > 0 ? args.epoch_size : 50000;
    const int64_t test_size =
        args.options.count("test-size") ? std::atoll(args.options.at("test-size").c_str()) : 10000;
    const char* how =
        "ctk data cifar10 DIR_WITH_CIFAR10_BATCHES  (or: ctk data images --layout cifar IDX_DIR)";
    const std::string mean = examples::data_file(args, "CIFAR-10_mean.xml", how);
    auto reader_train = create_reader(examples::data_file(args, "train_map.txt", how), mean, true, args.seed);
    auto reader_test = create_reader(examples::data_file(args, "test_map.txt", how), mean, false, args.seed);

    Variable input_var = input_variable({kChannels, kImageSize, kImageSize}, DataType::f32, false, false,
                                        default_batch_axes(), "features");
    Variable label_var = input_variable({kClasses}, DataType::f32);
    FunctionPtr z;
    std::vector<double> lr_per_mb;
    if (network == "resnet20") {
        z = create_cifar10_model(input_var, 3);
        lr_per_mb.assign(80, 1.0);
    } else if (network == "resnet110") {
        z = create_cifar10_model(input_var, 18);
        lr_per_mb.assign(1, 0.1);
        lr_per_mb.insert(lr_per_mb.end(), 80, 1.0);
    } else {
        throw ValueError("unknown network '" + network + "' (resnet20 or resnet110)");
    }
    lr_per_mb.insert(lr_per_mb.end(), 40, 0.1);
    lr_per_mb.push_back(0.01);
    FunctionPtr ce = cross_entropy_with_softmax(z, label_var);
    FunctionPtr pe = classification_error(z, label_var);

    // The script's learning parameters: per-sample rates lr / 128, momentum 0.9 per minibatch of 128 as a
    // time constant, L2 1e-4 (batch normalization's scale and bias excluded: disable_regularization).
    const int64_t minibatch_size = 128;
    std::vector<double> lr_per_sample;
    for (double lr : lr_per_mb) lr_per_sample.push_back(lr / static_cast<double>(minibatch_size));
    const double momentum_time_constant = -static_cast<double>(minibatch_size) / std::log(0.9);
    LearnerOptions options;
    options.l2_regularization_weight = 0.0001;
    auto learner = momentum_sgd(
        z->parameters(), learning_parameter_schedule_per_sample(lr_per_sample, epoch_size),
        momentum_as_time_constant_schedule(momentum_time_constant), default_unit_gain_value(), options);
    auto printer = std::make_shared<ProgressPrinter>(
        ProgressPrinterOptions{.tag = "Training", .log_to_file = args.log_file, .num_epochs = max_epochs});
    Trainer trainer(z, ce, pe, {learner}, {printer});
    const StreamMap input_map{{input_var, "features"}, {label_var, "labels"}};
    log_number_of_parameters(z);
    std::puts("");

    for (int64_t epoch = 0; epoch < max_epochs; ++epoch) {
        int64_t sample_count = 0;
        while (sample_count < epoch_size) {
            auto data = reader_train->next_minibatch(std::min(minibatch_size, epoch_size - sample_count));
            trainer.train_minibatch(data, input_map);
            sample_count += trainer.previous_minibatch_sample_count();
        }
        trainer.summarize_training_progress();
    }

    // The test set in minibatches of 16, each weighed by the size asked for, as the script does.
    const int64_t test_minibatch_size = 16;
    double metric_numer = 0;
    int64_t metric_denom = 0, sample_count = 0;
    while (sample_count < test_size) {
        const int64_t current = std::min(test_minibatch_size, test_size - sample_count);
        auto data = reader_test->next_minibatch(current);
        metric_numer += trainer.test_minibatch(data, input_map) * static_cast<double>(current);
        metric_denom += current;
        sample_count += data.at("labels").num_samples;
    }
    std::puts("");
    trainer.summarize_test_progress();
    std::puts("");
    return metric_numer / static_cast<double>(metric_denom);
}

}  // namespace

int main(int argc, char** argv) {
    try {
        const examples::Args args =
            examples::parse_args(argc, argv, kUsage, "data/cifar10", {"network", "test-size"});
        const double error = train_and_evaluate(args);
        std::printf("Error: %f\n", error);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "TrainResNet_CIFAR10: %s\n", e.what());
        return 1;
    }
}
