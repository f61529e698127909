#!/usr/bin/env python3
"""A character-level language model, the model of CNTK's Examples/Text/CharacterLM/char_rnn.py written
with CNTK's API: stacked self-stabilized LSTMs over one-hot characters and a Dense layer predicting the
next character. Trains on a text file, printing CNTK's training log, saves the model after each epoch,
then samples text from it one character at a time (each call continues the previous one's sequence, as
CNTK's sample() did).

Data: `ctk data fortunes OUT.txt` writes Debian's fortunes databases as one text (CNTK's example read
tiny Shakespeare, which Debian does not ship).

    PYTHONPATH=build/python python3 char_rnn.py --text FILE [--epochs 5] [--minibatches_per_epoch N]
        [--model_dir DIR] [--sample_length 300]
"""
import argparse
import os

import numpy as np

import cntk as C
from cntk.layers import LSTM, Dense, For, Recurrence, Sequential, Stabilizer


def read_text(path):
    with open(path, encoding='utf-8', errors='replace') as f:
        text = f.read()
    if len(text) < 2:
        raise ValueError('%s: a character model needs at least two characters of text' % path)
    chars = sorted(set(text))
    print('data has %d characters, %d unique.' % (len(text), len(chars)))
    return text, chars


def create_model(vocab_size, hidden=256, layers=2):
    return Sequential([For(range(layers), lambda: Sequential([Stabilizer(), Recurrence(LSTM(hidden))])),
                       Dense(vocab_size)])


def minibatch(text, index, offsets, length, vocab_size):
    """Sequences of `length` characters starting at `offsets`, and the characters that follow them."""
    eye = np.eye(vocab_size, dtype=np.float32)
    xs = [eye[[index[c] for c in text[o:o + length]]] for o in offsets]
    ys = [eye[[index[c] for c in text[o + 1:o + length + 1]]] for o in offsets]
    return xs, ys


def sample(model, chars, prime='T', length=300, temperature=1.0, rng=None):
    """Text from the model: the prime, then one character at a time drawn from its softmax (sharpened
    by temperature > 1, as CNTK's example did), each step continuing the sequence of the last."""
    rng = rng or np.random.default_rng(0)
    index = {c: i for i, c in enumerate(chars)}
    eye = np.eye(len(chars), dtype=np.float32)
    x = model.arguments[0]
    prime = [c for c in prime if c in index] or [chars[0]]
    out, scores = list(prime), None
    for k, c in enumerate(prime):
        scores = np.asarray(model.eval({x: ([eye[[index[c]]]], [k == 0])})).reshape(-1)
    for _ in range(length - len(prime)):
        p = np.exp(temperature * (scores - scores.max()))
        p /= p.sum()
        i = int(rng.choice(len(chars), p=p))
        out.append(chars[i])
        scores = np.asarray(model.eval({x: ([eye[[i]]], [False])})).reshape(-1)
    return ''.join(out)


def train(text, chars, epochs, minibatches_per_epoch, length=100, streams=32, hidden=256, layers=2,
          model_dir=None):
    V = len(chars)
    index = {c: i for i, c in enumerate(chars)}
    axis = C.Axis('inputAxis')
    x = C.sequence.input_variable(V, sequence_axis=axis, name='features')
    y = C.sequence.input_variable(V, sequence_axis=axis, name='labels')
    z = create_model(V, hidden, layers)(x)
    loss, error = C.cross_entropy_with_softmax(z, y), C.classification_error(z, y)
    learner = C.momentum_sgd(z.parameters, lr=C.learning_parameter_schedule_per_sample(0.001),
                             momentum=C.momentum_schedule(0.9131),
                             gradient_clipping_threshold_per_sample=5.0, gradient_clipping_with_truncation=True)
    progress = C.logging.ProgressPrinter(freq=100, tag='Training')
    trainer = C.Trainer(z, (loss, error), learner, progress)
    C.logging.log_number_of_parameters(z)
    length = min(length, len(text) - 1)
    rng = np.random.default_rng(1)
    print('Running %d epochs with %d minibatches per epoch' % (epochs, minibatches_per_epoch))
    for epoch in range(epochs):
        for _ in range(minibatches_per_epoch):
            # Sequences from random places of the text: each minibatch is `streams` fresh sequences.
            offsets = rng.integers(0, len(text) - length, size=streams)
            xs, ys = minibatch(text, index, offsets, length, V)
            trainer.train_minibatch({x: xs, y: ys})
        trainer.summarize_training_progress()
        if model_dir:
            os.makedirs(model_dir, exist_ok=True)
            path = os.path.join(model_dir, 'char_rnn_epoch%d.dnn' % (epoch + 1))
            z.save(path)
            print("Saved model to '%s'" % path)
    return z


def main():
    p = argparse.ArgumentParser(description='Character-level LSTM language model')
    p.add_argument('--text', required=True, help='a UTF-8 text file (e.g. from `ctk data fortunes`)')
    p.add_argument('--epochs', type=int, default=5)
    p.add_argument('--minibatches_per_epoch', type=int, default=None,
                   help='default: one pass over the text in sequences of --length characters')
    p.add_argument('--length', type=int, default=100, help='characters per sequence')
    p.add_argument('--streams', type=int, default=32, help='sequences per minibatch')
    p.add_argument('--hidden', type=int, default=256)
    p.add_argument('--layers', type=int, default=2)
    p.add_argument('--model_dir', default=None)
    p.add_argument('--sample_length', type=int, default=300)
    p.add_argument('--temperature', type=float, default=1.0)
    args = p.parse_args()
    C.set_fixed_random_seed(1)
    text, chars = read_text(args.text)
    per_epoch = args.minibatches_per_epoch or max(1, len(text) // (args.length * args.streams))
    z = train(text, chars, args.epochs, per_epoch, args.length, args.streams, args.hidden, args.layers,
              args.model_dir)
    print(sample(z, chars, 'T', args.sample_length, args.temperature))


if __name__ == '__main__':
    main()
