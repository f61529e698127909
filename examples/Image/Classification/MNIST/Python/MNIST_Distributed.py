# SimpleMNIST's MLP (-network mlp) or ConvNet_MNIST's network (-network convnet) trained by several
# workers, written the way CNTK's distributed examples are (ConvNet_CIFAR10_DataAug_Distributed.py,
# TrainResNet_CIFAR10_Distributed.py): the same flags, the data-parallel learner (32-bit or quantized,
# -q) or block momentum (-b), training_session with checkpoints and a final test, and
# Communicator.finalize() at the end. Only CNTK's API is used.
# Usage: mpiexec -n 2 python3 MNIST_Distributed.py -datadir DIR [-network convnet] [-n EPOCHS] [-q 1] [-b 3200]
# (DIR holds Train-28x28_cntk_text.txt and Test-28x28_cntk_text.txt: `ctk data mnist`).
import argparse
import os

import numpy as np
import cntk as C
from cntk import Trainer
from cntk.io import MinibatchSource, CTFDeserializer, StreamDef, StreamDefs, INFINITELY_REPEAT
from cntk.layers import Dense, Sequential
from cntk.learners import momentum_sgd, learning_parameter_schedule_per_sample, momentum_schedule
from cntk.logging import ProgressPrinter
from cntk.train.distributed import (Communicator, data_parallel_distributed_learner,
                                    block_momentum_distributed_learner)
from cntk.train.training_session import CheckpointConfig, TestConfig, training_session

input_dim = 784
num_classes = 10


def create_reader(path, is_training):
    if not os.path.exists(path):
        raise RuntimeError("File '%s' does not exist: write the MNIST CTF files with `ctk data mnist`" % path)
    return MinibatchSource(CTFDeserializer(path, StreamDefs(
        features=StreamDef(field='features', shape=input_dim),
        labels=StreamDef(field='labels', shape=num_classes))),
        randomize=is_training, max_sweeps=INFINITELY_REPEAT if is_training else 1)


def create_network(kind):
    label = C.input_variable(num_classes, np.float32)
    if kind == 'mlp':
        feature = C.input_variable(input_dim, np.float32)
        scaled = C.element_times(C.constant(0.00390625), feature)
        z = Sequential([Dense(200, activation=C.relu), Dense(num_classes)])(scaled)
    else:  # ConvNet_MNIST's network
        feature = C.input_variable((1, 28, 28), np.float32)
        scaled = C.element_times(C.constant(0.00390625), feature)
        with C.layers.default_options(activation=C.relu, pad=False):
            conv1 = C.layers.Convolution2D((5, 5), 32, pad=True)(scaled)
            pool1 = C.layers.MaxPooling((3, 3), (2, 2))(conv1)
            conv2 = C.layers.Convolution2D((3, 3), 48)(pool1)
            pool2 = C.layers.MaxPooling((3, 3), (2, 2))(conv2)
            conv3 = C.layers.Convolution2D((3, 3), 64)(pool2)
            f4 = C.layers.Dense(96)(conv3)
            drop4 = C.layers.Dropout(0.5)(f4)
            z = C.layers.Dense(num_classes, activation=None)(drop4)
    return {'feature': feature, 'label': label, 'output': z,
            'ce': C.cross_entropy_with_softmax(z, label), 'pe': C.classification_error(z, label)}


def create_trainer(network, kind, epoch_size, num_epochs, minibatch_size, num_quantization_bits, block_size,
                   warm_up, progress_printer):
    if kind == 'mlp':
        lr = learning_parameter_schedule_per_sample([0.01] * 2 + [0.005], epoch_size=epoch_size)
        mm = momentum_schedule(0.9, minibatch_size=minibatch_size)
        local_learner = momentum_sgd(network['output'].parameters, lr, mm, l2_regularization_weight=1e-4)
    else:  # ConvNet_MNIST's schedules
        lr = learning_parameter_schedule_per_sample([0.001] * 10 + [0.0005] * 10 + [0.0001], epoch_size=epoch_size)
        mm = C.learners.momentum_schedule_per_sample([0] * 5 + [0.9990239141819757], epoch_size=epoch_size)
        local_learner = momentum_sgd(network['output'].parameters, lr, mm)
    if block_size is not None:
        learner = block_momentum_distributed_learner(local_learner, block_size=block_size)
    else:
        learner = data_parallel_distributed_learner(local_learner, num_quantization_bits=num_quantization_bits,
                                                    distributed_after=warm_up)
    return Trainer(network['output'], (network['ce'], network['pe']), learner, progress_printer)


def train_and_test(network, trainer, train_source, test_source, minibatch_size, epoch_size, num_epochs,
                   restore, model_path):
    input_map = {network['feature']: train_source.streams.features,
                 network['label']: train_source.streams.labels}
    training_session(
        trainer=trainer, mb_source=train_source, model_inputs_to_streams=input_map, mb_size=minibatch_size,
        progress_frequency=epoch_size, max_samples=epoch_size * num_epochs,
        checkpoint_config=CheckpointConfig(frequency=epoch_size, filename=model_path, restore=restore),
        test_config=TestConfig(test_source, minibatch_size=1024)).train()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('-datadir', '--datadir', help='Data directory', required=False, default='data/fashion-mnist')
    parser.add_argument('-network', '--network', help='mlp (SimpleMNIST) or convnet (ConvNet_MNIST)',
                        choices=['mlp', 'convnet'], default='mlp')
    parser.add_argument('-outputdir', '--outputdir', help='Output directory for checkpoints and models',
                        required=False, default=None)
    parser.add_argument('-n', '--num_epochs', help='Total number of epochs to train', type=int, required=False,
                        default=5)
    parser.add_argument('-m', '--minibatch_size', help='Minibatch size', type=int, required=False, default=64)
    parser.add_argument('-e', '--epoch_size', help='Epoch size', type=int, required=False, default=60000)
    parser.add_argument('-q', '--quantized_bits', help='Number of quantized bits used for gradient aggregation',
                        type=int, required=False, default=32)
    parser.add_argument('-a', '--distributed_after', help='Number of samples to train with before running '
                        'distributed', type=int, required=False, default=0)
    parser.add_argument('-b', '--block_samples', type=int, help='Number of samples per block for block momentum '
                        '(BM) distributed learner (if 0 BM learner is not used)', required=False, default=None)
    parser.add_argument('-r', '--restart', help='Indicating whether to restart from scratch (instead of restart '
                        'from checkpoint file by default)', action='store_true')
    args = vars(parser.parse_args())

    if args['block_samples'] is not None and args['quantized_bits'] != 32:
        raise RuntimeError("Block momentum cannot be used with quantization, please remove quantized_bits option.")
    model_path = os.path.join(args['outputdir'] or '.', 'MNIST_Distributed_%s.model' % args['network'])

    network = create_network(args['network'])
    progress_printer = ProgressPrinter(tag='Training', num_epochs=args['num_epochs'], rank=Communicator.rank(),
                                       distributed_freq=1 if args['block_samples'] is not None else None)
    trainer = create_trainer(network, args['network'], args['epoch_size'], args['num_epochs'], args['minibatch_size'],
                             args['quantized_bits'], args['block_samples'], args['distributed_after'],
                             progress_printer)
    train_source = create_reader(os.path.join(args['datadir'], 'Train-28x28_cntk_text.txt'), True)
    test_source = create_reader(os.path.join(args['datadir'], 'Test-28x28_cntk_text.txt'), False)
    train_and_test(network, trainer, train_source, test_source, args['minibatch_size'], args['epoch_size'],
                   args['num_epochs'], not args['restart'], model_path)


if __name__ == '__main__':
    main()
    # Only a worker whose training ended well finalizes (one that raised has stopped the job already).
    Communicator.finalize()
