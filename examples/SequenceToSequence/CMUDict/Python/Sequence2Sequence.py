#!/usr/bin/env python3
"""Grapheme-to-phoneme translation on the CMU pronouncing dictionary, the model of CNTK's
Examples/SequenceToSequence/CMUDict/Python/Sequence2Sequence.py written with CNTK's API: an encoder of
stacked LSTMs over a word's letters, a decoder of stacked LSTMs whose first layer reads additive
attention over the encoder's states (or, with --no_attention, starts from the encoder's final state),
trained with teacher forcing and decoded greedily. Prints CNTK's training log, then the test set's
string (word) error rate, phoneme error rate and the teacher-forced phoneme classification error.

Data: `ctk data cmudict OUT_DIR` writes Debian's festlex-cmu dictionary in the example's layout
(cmudict-0.7b.train-dev-20-21.ctf, cmudict-0.7b.test.ctf, cmudict-0.7b.mapping).

    PYTHONPATH=build/python python3 Sequence2Sequence.py --datadir DIR [--epochs 30] [--epoch_size 908241]
        [--model_dir DIR] [--test_words N]
"""
import argparse
import os

import numpy as np

import cntk as C
from cntk.layers import (LSTM, Delay, Dense, Embedding, Fold, For, Label, Recurrence, RecurrenceFrom, Sequential,
                         Stabilizer, UnfoldFrom, default_options)
from cntk.layers.models.attention import AttentionModel
from cntk.layers.typing import SequenceOver, SparseTensor, Tensor, Signature

TRAIN, TEST, MAPPING = 'cmudict-0.7b.train-dev-20-21.ctf', 'cmudict-0.7b.test.ctf', 'cmudict-0.7b.mapping'
# The letters and the phonemes run along different sequence axes.
INPUT_AXIS, LABEL_AXIS = C.Axis('inputAxis'), C.Axis('labelAxis')


class Sizes:
    def __init__(self, embed=200, hidden=512, layers=2, attention=128, span=20, use_attention=True):
        self.embed, self.hidden, self.layers = embed, hidden, layers
        self.attention, self.span, self.use_attention = attention, span, use_attention


def read_vocabulary(path):
    """The symbols, one per line: a symbol's index is its line."""
    with open(path) as f:
        return [line.strip() for line in f]


def create_reader(path, vocab_size, is_training):
    streams = C.io.StreamDefs(features=C.io.StreamDef(field='S0', shape=vocab_size, is_sparse=True),
                              labels=C.io.StreamDef(field='S1', shape=vocab_size, is_sparse=True))
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, streams), randomize=is_training,
                                max_sweeps=C.io.INFINITELY_REPEAT if is_training else 1)


def create_model(vocab_size, sizes):
    """decode(history, input) -> unnormalised log-probabilities of the next phoneme, one per history item."""
    embed = Embedding(sizes.embed, name='embed')  # shared by letters and phonemes (one vocabulary)
    with default_options(enable_self_stabilization=True, go_backwards=not sizes.use_attention):
        # The attention decoder reads every encoder state; the plain one starts from the final state of
        # an encoder run backwards (the word's first letter last).
        last = Recurrence if sizes.use_attention else Fold
        encode = Sequential([
            embed, Stabilizer(),
            For(range(sizes.layers - 1), lambda: Recurrence(LSTM(sizes.hidden))),
            last(LSTM(sizes.hidden), return_full_state=True),
            (Label('encoded_h'), Label('encoded_c'))])
    with default_options(enable_self_stabilization=True):
        stab_in, stab_out = Stabilizer(), Stabilizer()
        cells = [LSTM(sizes.hidden) for _ in range(sizes.layers)]
        project = Dense(vocab_size, name='out_proj')
        if sizes.use_attention:
            attention = AttentionModel(sizes.attention, sizes.span, -3, name='attention_model')

    @C.Function
    def decode(history, input):
        encoded = encode(input)
        r = stab_in(embed(history))
        for i, cell in enumerate(cells):
            if not sizes.use_attention:
                r = RecurrenceFrom(cell)(*(encoded.outputs + (r,)))
            elif i == 0:
                @C.Function
                def attending_cell(dh, dc, x):
                    return cell(dh, dc, C.splice(x, attention(encoded.outputs[0], dh)))
                r = Recurrence(attending_cell)(r)
            else:
                r = Recurrence(cell)(r)
        return Label('out_proj_out')(project(stab_out(r)))
    return decode


def create_criterion(decode, vocab_size, start):
    @C.Function
    @Signature(input=SequenceOver[INPUT_AXIS][Tensor[vocab_size]], labels=SequenceOver[LABEL_AXIS][Tensor[vocab_size]])
    def criterion(input, labels):
        targets = C.sequence.slice(labels, 1, 0)  # the labels start with <s>: predict what follows it
        z = decode(Delay(initial_state=start)(targets), input)
        return C.cross_entropy_with_softmax(z, targets), C.classification_error(z, targets)
    return criterion


def create_greedy_decoder(decode, vocab_size, start, end_index):
    """The decoder fed its own best guess, from <s> until it says </s> (at most 1.5 x the word's length)."""
    @C.Function
    @Signature(SequenceOver[INPUT_AXIS][Tensor[vocab_size]])
    def greedy(input):
        unfold = UnfoldFrom(lambda history: decode(history, input) >> C.hardmax,
                            until_predicate=lambda w: w[..., end_index], length_increase=1.5)
        return unfold(initial_state=start, dynamic_axes_like=input)
    return greedy


def symbols_of(sequences, vocab):
    return [[vocab[int(np.argmax(item))] for item in np.asarray(s).reshape(len(s), -1)] for s in sequences]


def dense_of(vocab_size):
    """The reader's one-hot sequences as dense arrays (to print them)."""
    @C.Function
    @Signature(SequenceOver[INPUT_AXIS][SparseTensor[vocab_size]])
    def dense(x):
        return C.times(x, C.Constant(np.eye(vocab_size, dtype=np.float32)))
    return dense


def train(train_reader, decode, vocab, max_epochs, epoch_size, minibatch_size=72, model_dir=None,
          model_name='model', show_every=100, example_reader=None):
    V = len(vocab)
    start = C.Constant(np.eye(V, dtype=np.float32)[vocab.index('<s>')])
    criterion = create_criterion(decode, V, start)
    greedy = create_greedy_decoder(decode, V, start, vocab.index('</s>'))
    # CNTK's example: fsadagrad, the rate halved after 2 epochs and again after 5, clipping per sample.
    lr = C.learning_parameter_schedule_per_sample([0.001] * 2 + [0.0005] * 3 + [0.00025], epoch_size=epoch_size)
    learner = C.fsadagrad(decode.parameters, lr=lr, momentum=C.momentum_schedule(0.93664),
                          gradient_clipping_threshold_per_sample=2.3, gradient_clipping_with_truncation=True)
    trainer = C.Trainer(None, criterion, learner)
    C.logging.log_number_of_parameters(decode)
    print()
    progress = C.logging.ProgressPrinter(freq=30, tag='Training')
    dense = dense_of(V)
    total, minibatches = 0, 0
    for epoch in range(max_epochs):
        while total < (epoch + 1) * epoch_size:
            mb = train_reader.next_minibatch(minibatch_size)
            trainer.train_minibatch({criterion.arguments[0]: mb[train_reader.streams.features],
                                     criterion.arguments[1]: mb[train_reader.streams.labels]})
            total += mb[train_reader.streams.labels].num_samples
            progress.update_with_trainer(trainer, with_metric=True)
            if example_reader is not None and minibatches % show_every == 0:
                example = example_reader.next_minibatch(1)
                letters = example[example_reader.streams.features]
                print(' '.join(symbols_of(dense(letters), vocab)[0]), '->',
                      ' '.join(symbols_of(greedy(letters), vocab)[0]))
            minibatches += 1
        progress.epoch_summary(with_metric=True)
        if model_dir:
            os.makedirs(model_dir, exist_ok=True)
            path = os.path.join(model_dir, '%s.cmf.%d' % (model_name, epoch + 1))
            decode.save(path)
            print("Saved model to '%s'" % path)
    return criterion, greedy


def edit_distance(a, b):
    row = list(range(len(b) + 1))
    for i, x in enumerate(a, 1):
        prev, row[0] = row[0], i
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (x != y))
    return row[-1]


def evaluate_decoding(reader, greedy, vocab, max_words=None):
    """Greedy decoding of the test words: the string error rate (a word is wrong unless every phoneme
    is right, CNTK's figure) and the phoneme error rate (edit distance over the reference phonemes)."""
    words = wrong = edits = phonemes = 0
    dense = dense_of(len(vocab))
    while max_words is None or words < max_words:
        mb = reader.next_minibatch(1024)  # (a minibatch's size counts samples, not words)
        if not mb:
            break
        outputs = symbols_of(greedy(mb[reader.streams.features]), vocab)
        labels = symbols_of(dense(mb[reader.streams.labels]), vocab)
        if max_words is not None:
            labels = labels[:max_words - words]
        for out, label in zip(outputs, labels):
            want = label[1:label.index('</s>')] if '</s>' in label else label[1:]
            got = out[:out.index('</s>')] if '</s>' in out else out
            wrong += got != want
            edits += edit_distance(got, want)
            phonemes += len(want)
            words += 1
    print('string error rate of {:.1f}% in {} samples'.format(100.0 * wrong / max(words, 1), words))
    print('phoneme error rate of {:.1f}% in {} phonemes'.format(100.0 * edits / max(phonemes, 1), phonemes))
    return wrong / max(words, 1), edits / max(phonemes, 1)


def evaluate_metric(reader, criterion):
    """The teacher-forced phoneme classification error, as in training."""
    evaluator = C.eval.Evaluator(criterion.outputs[1])
    errors = samples = 0.0
    while True:
        mb = reader.next_minibatch(1024)
        if not mb:
            break
        n = mb[reader.streams.labels].num_samples - mb[reader.streams.labels].num_sequences
        errors += evaluator.test_minibatch({criterion.arguments[0]: mb[reader.streams.features],
                                            criterion.arguments[1]: mb[reader.streams.labels]}) * n
        samples += n
    print('error rate of {:.1f}% in {} samples'.format(100.0 * errors / max(samples, 1), int(samples)))
    return errors / max(samples, 1)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser(description='Sequence-to-sequence grapheme-to-phoneme on CMUdict')
    p.add_argument('--datadir', default=os.path.join(here, '..', 'Data'))
    p.add_argument('--epochs', type=int, default=30)
    p.add_argument('--epoch_size', type=int, default=908241, help='phonemes per epoch')
    p.add_argument('--minibatch_size', type=int, default=72)
    p.add_argument('--model_dir', default=None, help='where each epoch\'s model is saved')
    p.add_argument('--test_words', type=int, default=None, help='decode only the first N test words')
    p.add_argument('--hidden', type=int, default=512)
    p.add_argument('--embed', type=int, default=200)
    p.add_argument('--layers', type=int, default=2)
    p.add_argument('--no_attention', action='store_true')
    args = p.parse_args()
    C.set_fixed_random_seed(1)
    vocab = read_vocabulary(os.path.join(args.datadir, MAPPING))
    decode = create_model(len(vocab), Sizes(args.embed, args.hidden, args.layers,
                                            use_attention=not args.no_attention))
    criterion, greedy = train(create_reader(os.path.join(args.datadir, TRAIN), len(vocab), True), decode, vocab,
                              args.epochs, args.epoch_size, args.minibatch_size, args.model_dir,
                              'model_att_%s' % (not args.no_attention), example_reader=create_reader(os.path.join(args.datadir, 'tiny.ctf'), len(vocab),
                                                           True))
    test = os.path.join(args.datadir, TEST)
    evaluate_decoding(create_reader(test, len(vocab), False), greedy, vocab, args.test_words)
    evaluate_metric(create_reader(test, len(vocab), False), criterion)


if __name__ == '__main__':
    main()
