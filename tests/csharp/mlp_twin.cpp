// The C++ twin of tests/csharp/api_test.cs: the same MLP (784-200-10, sigmoid, inputs with CNTK's C#
// default sequence axis), seed, reader and learner through the C++ API, one epoch of Fashion-MNIST. It
// writes every minibatch's loss and the trained parameters as text, which the C# test compares with its
// own numbers bit for bit. Usage: mlp_twin <folder with train-*-idx?-ubyte[.gz]> <out file> [samples]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "ctk/ctk.h"

using namespace ctk;

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: mlp_twin DATA_DIR OUT_FILE [SAMPLES]\n");
        return 2;
    }
    try {
        const std::string dir = argv[1];
        const int64_t samples = argc > 3 ? std::atoll(argv[3]) : 60000;
        reset_random_seed(1);
        Variable x = sequence_input_variable({784}, DataType::f32, false, false, Axis::default_dynamic_axis(),
                                             "features");
        Variable y = sequence_input_variable({10}, DataType::f32, false, false, Axis::default_dynamic_axis(),
                                             "labels");
        Variable w1 = parameter({784, 200}, glorot_uniform(), DataType::f32, "W1");
        Variable b1 = parameter({200}, constant_initializer(0.0), DataType::f32, "b1");
        Variable w2 = parameter({200, 10}, glorot_uniform(), DataType::f32, "W2");
        Variable b2 = parameter({10}, constant_initializer(0.0), DataType::f32, "b2");
        FunctionPtr scaled = element_times(constant(0.00390625, DataType::f32), x);
        FunctionPtr h = sigmoid(plus(times(scaled, w1), b1));
        FunctionPtr z = plus(times(h, w2), b2, "z");
        FunctionPtr ce = cross_entropy_with_softmax(z, y);
        FunctionPtr err = classification_error(z, y);
        Trainer trainer(z, ce, err, {sgd(z->parameters(), learning_parameter_schedule_per_sample(0.003125))});

        MinibatchSourceConfig config;
        config.deserializers = {
            mnist_idx_deserializer(dir + "/train-images-idx3-ubyte", dir + "/train-labels-idx1-ubyte")};
        config.randomize = false;
        config.max_samples = samples;
        MinibatchSource source(config);
        const StreamMap map{{x, "features"}, {y, "labels"}};
        std::ofstream out(argv[2]);
        out.precision(17);  // round-trips doubles (and floats) exactly
        while (true) {
            auto mb = source.next_minibatch(64);
            if (mb.empty()) break;
            trainer.train_minibatch(mb, map);
            out << "loss " << trainer.previous_minibatch_loss_average() << "\n";
        }
        for (const Variable& p : {w1, b1, w2, b2}) {
            out << "param " << p.name();
            for (float v : p.value().to_vector<float>()) out << " " << v;
            out << "\n";
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mlp_twin: %s\n", e.what());
        return 1;
    }
}
