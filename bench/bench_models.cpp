// ctk_bench's model cases (see bench_models.h).
#include "bench_models.h"

#include <algorithm>
#include <fstream>
#include <memory>

namespace bench {

namespace {

bool is_resnet(Model m) {
    return m == Model::resnet20 || m == Model::resnet50;
}

// The network of a model case, and its weight layers' parameters under the names of the torch twin's
// state_dict ("conv1.weight", "0.bias", ...), so that compare.py can load ctk's weights into torch.
struct ModelGraph {
    ctk::Variable x, labels;
    ctk::FunctionPtr z, ce, pe;
    std::vector<std::pair<std::string, ctk::Variable>> params;
    std::vector<double> macs;  // ResNets: multiply-adds per sample of each weight layer, in build order
};

// ResNets as CNTK's examples and torchvision build them: convolutions without bias, each followed by
// batch normalization (per channel); ResNet-20 of basic blocks (16, 32, 64 channels, 3 blocks per
// stage, 1x1 projection shortcuts where the shape changes), ResNet-50 of bottleneck blocks (3, 4, 6, 3;
// stride on the 3x3, as torchvision). Global average pooling, then a dense classifier.
ModelGraph build_resnet(Model m) {
    using namespace ctk::layers;
    ModelGraph g;
    const bool r20 = m == Model::resnet20;
    const int64_t image = r20 ? 32 : 224, classes = r20 ? 10 : 1000;
    g.x = ctk::input_variable({3, image, image}, ctk::DataType::f32);
    g.labels = ctk::input_variable({classes}, ctk::DataType::f32);
    int index = 0;
    int64_t channels = 3, hw = image;
    auto conv_bn = [&](const ctk::Variable& x, int64_t k, int64_t out, int64_t stride, bool relu_after) {
        ConvolutionOptions o;
        o.pad = k > 1;
        o.bias = false;
        o.strides = {stride};
        o.init = ctk::he_normal();
        ctk::FunctionPtr conv = Convolution2D({k, k}, out, o);
        const int64_t out_hw = (hw + stride - 1) / stride;
        g.macs.push_back(static_cast<double>(out_hw * out_hw * out * channels * k * k));
        ctk::FunctionPtr h = call(conv, x);
        for (const ctk::Variable& p : conv->parameters())
            g.params.emplace_back("p" + std::to_string(index++), p);
        ctk::FunctionPtr bn = BatchNormalization(1, 1.0, 4096.0);
        h = call(bn, h);
        for (const ctk::Variable& p : bn->parameters())
            g.params.emplace_back("p" + std::to_string(index++), p);
        return relu_after ? ctk::relu(h) : h;
    };
    // A residual block from `x` (channels, hw): body convolutions, shortcut, sum, relu.
    auto block = [&](const ctk::Variable& x, int64_t mid, int64_t out, int64_t stride) {
        const int64_t c_in = channels, hw_in = hw, hw_out = (hw_in + stride - 1) / stride;
        ctk::FunctionPtr h;
        if (r20) {
            h = conv_bn(x, 3, out, stride, true);
            channels = out, hw = hw_out;
            h = conv_bn(h, 3, out, 1, false);
        } else {
            h = conv_bn(x, 1, mid, 1, true);
            channels = mid;
            h = conv_bn(h, 3, mid, stride, true);
            hw = hw_out;
            h = conv_bn(h, 1, out, 1, false);
        }
        ctk::Variable shortcut = x;
        if (stride != 1 || c_in != out) {
            channels = c_in, hw = hw_in;
            shortcut = conv_bn(x, 1, out, stride, false);
        }
        channels = out, hw = hw_out;
        return ctk::relu(ctk::plus(h, shortcut));
    };
    ctk::FunctionPtr h;
    if (r20) {
        h = conv_bn(g.x, 3, 16, 1, true);
        channels = 16;
        const int64_t widths[] = {16, 32, 64};
        for (int stage = 0; stage < 3; ++stage)
            for (int b = 0; b < 3; ++b) h = block(h, 0, widths[stage], stage > 0 && b == 0 ? 2 : 1);
    } else {
        h = conv_bn(g.x, 7, 64, 2, true);
        channels = 64, hw = 112;
        h = call(MaxPooling({3, 3}, {2, 2}, true), h);
        hw = 56;
        const int64_t mids[] = {64, 128, 256, 512}, blocks[] = {3, 4, 6, 3};
        for (int stage = 0; stage < 4; ++stage)
            for (int64_t b = 0; b < blocks[stage]; ++b)
                h = block(h, mids[stage], 4 * mids[stage], stage > 0 && b == 0 ? 2 : 1);
    }
    h = call(GlobalAveragePooling(), h);
    ctk::FunctionPtr dense = Dense({classes});
    g.z = call(dense, h);
    g.macs.push_back(static_cast<double>(channels * classes));
    for (const ctk::Variable& p : dense->parameters())
        g.params.emplace_back("p" + std::to_string(index++), p);
    g.ce = ctk::cross_entropy_with_softmax(g.z, g.labels);
    g.pe = ctk::classification_error(g.z, g.labels);
    return g;
}

ModelGraph build_model(Model m) {
    if (is_resnet(m)) return build_resnet(m);
    using namespace ctk::layers;
    ModelGraph g;
    std::vector<std::pair<std::string, ctk::FunctionPtr>> layers;  // torch module name, layer
    auto apply = [&](const char* torch_name, const ctk::FunctionPtr& layer, const ctk::Variable& x) {
        layers.emplace_back(torch_name, layer);
        return call(layer, x);
    };
    const ActivationFn relu([](const ctk::Variable& v) { return ctk::relu(v); });
    g.labels = ctk::input_variable({10}, ctk::DataType::f32);
    if (m == Model::mlp) {
        // performance.md's MLP, as torch's nn.Sequential(Linear, ReLU, Linear, ReLU, Linear): 0, 2, 4.
        g.x = ctk::input_variable({784}, ctk::DataType::f32);
        ctk::FunctionPtr h = apply("0", Dense({200}, relu), g.x);
        h = apply("2", Dense({200}, relu), h);
        g.z = apply("4", Dense({10}), h);
    } else {
        // examples/Image/Classification/MNIST/ConvNet_MNIST.cpp, layer for layer.
        g.x = ctk::input_variable({1, 28, 28}, ctk::DataType::f32);
        ctk::FunctionPtr scaled_input = ctk::element_times(ctk::constant(0.00390625), g.x);
        default_options options({.activation = relu, .pad = false});
        ConvolutionOptions same;
        same.pad = true;
        ctk::FunctionPtr h = apply("conv1", Convolution2D({5, 5}, 32, same), scaled_input);
        h = call(MaxPooling({3, 3}, {2, 2}), h);
        h = apply("conv2", Convolution2D({3, 3}, 48), h);
        h = call(MaxPooling({3, 3}, {2, 2}), h);
        h = apply("conv3", Convolution2D({3, 3}, 64), h);
        h = apply("fc1", Dense({96}), h);
        h = call(Dropout(0.5), h);
        g.z = apply("fc2", Dense({10}, ActivationFn()), h);
    }
    g.ce = ctk::cross_entropy_with_softmax(g.z, g.labels);
    g.pe = ctk::classification_error(g.z, g.labels);
    for (const auto& [name, layer] : layers)
        for (const ctk::Variable& p : layer->parameters())
            g.params.emplace_back(name + (p.name() == "W" ? ".weight" : ".bias"), p);
    return g;
}

// kModelBatches minibatches of random inputs (pixel values in [0, 256) for the ConvNet, which scales
// them by 1/256; [0, 1) for the MLP and the ResNets) and random one-hot labels, already on `device`
// (torch's side keeps its batches on the device too).
std::vector<ctk::ValueMap> model_batches(const ModelCase& c, const ModelGraph& g, ctk::Generator& gen,
                                         ctk::Device device) {
    std::vector<ctk::ValueMap> batches;
    const int64_t classes = g.labels.shape()[0];
    for (int k = 0; k < kModelBatches; ++k) {
        ctk::Dims x_dims{c.batch};
        for (int64_t d : g.x.shape()) x_dims.push_back(d);
        ctk::Tensor x = ctk::Tensor::empty(ctk::Shape(x_dims), ctk::DataType::f32);
        gen.uniform(x, 0.0, c.model == Model::convnet ? 256.0 : 1.0);
        ctk::Tensor u = ctk::Tensor::empty({c.batch}, ctk::DataType::f32);
        gen.uniform(u, 0.0, static_cast<double>(classes));
        ctk::Tensor y = ctk::Tensor::zeros({c.batch, classes}, ctk::DataType::f32);
        for (int64_t i = 0; i < c.batch; ++i)
            y.data<float>()[i * classes +
                            std::min<int64_t>(classes - 1, static_cast<int64_t>(u.data<float>()[i]))] = 1.0f;
        batches.push_back({{g.x, ctk::Value(x.to(device))}, {g.labels, ctk::Value(y.to(device))}});
    }
    return batches;
}

}  // namespace

// With dump_dir, writes for compare.py's check: the initial parameters (and params.txt naming them with
// their shapes; the ResNets: params.txt only), minibatch 0, z and the summed loss on it in inference
// mode, and, for training, the parameters after one train_minibatch step on minibatch 0 and that step's
// summed loss.
std::function<void()> make_model_iteration(const ModelCase& c, const std::string& dump_dir,
                                           ctk::Device device, ctk::DataType dtype,
                                           std::shared_ptr<ctk::Trainer>* trainer_out,
                                           const LearnerWrap& wrap_learner) {
    CTK_CHECK(dtype == ctk::DataType::f32 || (dtype == ctk::DataType::bf16 && c.train),
              ctk::NotImplementedError,
              "ctk_bench: model cases train in f32 or in mixed precision (bf16); inference runs in f32");
    ctk::Generator gen(1234);
    ModelGraph g = build_model(c.model);
    std::vector<ctk::ValueMap> batches = model_batches(c, g, gen, device);
    ctk::ValueMap features{{g.x, batches[0].at(g.x)}};
    ctk::Tensor z = g.z->eval(features, {}, device).begin()->second.data();
    expect_shape(z, {c.batch, g.labels.shape()[0]}, "z");
    if (!dump_dir.empty()) {
        std::ofstream manifest(dump_dir + "/params.txt");
        for (const auto& [name, p] : g.params) {
            const ctk::Tensor value = p.value().to(ctk::Device::cpu());
            if (!is_resnet(c.model)) dump_tensor(dump_dir, name.c_str(), value);
            manifest << name;
            for (int64_t d : value.shape().dims()) manifest << " " << d;
            manifest << "\n";
        }
        if (is_resnet(c.model)) return [] {};  // compare.py checks the ResNets' parameter shapes only
        dump_tensor(dump_dir, "x", batches[0].at(g.x).data());
        dump_tensor(dump_dir, "labels", batches[0].at(g.labels).data());
        dump_tensor(dump_dir, "z", z);
        ctk::Tensor ce = g.ce->eval(batches[0], {}, device).begin()->second.data();
        dump_tensor(dump_dir, "loss", ctk::reduce_sum(ce));
    }
    if (!c.train) {
        auto inputs = std::make_shared<std::vector<ctk::ValueMap>>();
        for (const ctk::ValueMap& b : batches) inputs->push_back({{g.x, b.at(g.x)}});
        auto next = std::make_shared<size_t>(0);
        return [z = g.z, inputs, next, device] {
            (void)z->eval((*inputs)[(*next)++ % inputs->size()], {}, device);
            if (device.is_cuda()) ctk::cuda::synchronize(device);
        };
    }
    ctk::LearnerPtr learner =
        ctk::momentum_sgd(g.z->parameters(), ctk::learning_parameter_schedule_per_sample(kLrPerSample),
                          ctk::momentum_schedule(kMomentum));
    if (wrap_learner) learner = wrap_learner(learner);
    auto trainer = std::make_shared<ctk::Trainer>(
        g.z, g.ce, g.pe, std::vector<ctk::LearnerPtr>{learner}, std::vector<ctk::ProgressWriterPtr>{},
        dtype == ctk::DataType::bf16 ? ctk::MixedPrecision::bf16() : ctk::MixedPrecision{});
    if (trainer_out) *trainer_out = trainer;
    if (!dump_dir.empty()) {
        trainer->train_minibatch(batches[0], false, device);
        for (const auto& [name, p] : g.params) dump_tensor(dump_dir, ("after." + name).c_str(), p.value());
        ctk::Tensor loss = ctk::Tensor::zeros({1}, ctk::DataType::f32);
        loss.data<float>()[0] =
            static_cast<float>(trainer->previous_minibatch_loss_average() *
                               static_cast<double>(trainer->previous_minibatch_sample_count()));
        dump_tensor(dump_dir, "train_loss", loss);
    }
    auto shared_batches = std::make_shared<std::vector<ctk::ValueMap>>(std::move(batches));
    auto next = std::make_shared<size_t>(0);
    // The trainer reads the loss and metric back every step, which waits for the device.
    return [trainer, shared_batches, next, device] {
        trainer->train_minibatch((*shared_batches)[(*next)++ % shared_batches->size()], false, device);
    };
}

const char* model_name(Model m) {
    switch (m) {
        case Model::mlp:
            return "mlp";
        case Model::convnet:
            return "convnet";
        case Model::resnet20:
            return "resnet20";
        case Model::resnet50:
            return "resnet50";
    }
    return "?";
}

std::vector<double> model_layer_macs(Model m) {
    if (m == Model::mlp) return {784.0 * 200, 200.0 * 200, 200.0 * 10};
    if (is_resnet(m)) return build_resnet(m).macs;
    // conv1 5x5 1->32 at 28x28 (same); pool -> 13x13; conv2 3x3 32->48 -> 11x11; pool -> 5x5;
    // conv3 3x3 48->64 -> 3x3; dense 576 -> 96 -> 10.
    return {28.0 * 28 * 32 * 25, 11.0 * 11 * 48 * 32 * 9, 3.0 * 3 * 64 * 48 * 9, 576.0 * 96, 96.0 * 10};
}

void expect_shape(const ctk::Tensor& t, const ctk::Shape& want, const char* what) {
    CTK_CHECK(t.shape() == want, ctk::ShapeError, "ctk_bench: ", what, " has shape ", t.shape().to_string(),
              ", expected ", want.to_string());
}

void dump_tensor(const std::string& dir, const char* name, const ctk::Tensor& t) {
    ctk::Tensor c = t.to(ctk::Device::cpu()).contiguous().to(ctk::DataType::f32);
    std::string path = dir + "/" + name + ".f32";
    std::ofstream out(path, std::ios::binary);
    out.write(static_cast<const char*>(c.raw_data()),
              static_cast<std::streamsize>(c.numel() * c.element_size()));
    CTK_CHECK(out.good(), ctk::IOError, "ctk_bench: cannot write ", path);
}

}  // namespace bench
