#!/usr/bin/env python3
"""Slot tagging of flight queries, the model of CNTK's
Examples/LanguageUnderstanding/ATIS/Python/LanguageUnderstanding.py written with CNTK's API: an
Embedding of the query's words, a Recurrence(LSTM) (or, with --bidirectional, one forward and one
backward, spliced), and a Dense layer giving each word's slot label. Trained with CNTK's
Function.train loop and fsadagrad, printing CNTK's log; after each epoch it tags a sample query; then
it reports the test set's tagging error.

Data: ATIS itself is licensed by the LDC and not in Debian. `ctk data atis OUT_DIR` generates flight
queries in its CTF layout and vocabularies (OUT_DIR/Data/atis.{train,test}.ctf: S0 words of 943,
S1 intents of 26, S2 slot labels of 129; OUT_DIR/BrainScript/{query,slots}.wl); a generated grammar
is easy to learn, so its figures say the example runs, not how well it tags ATIS.

    PYTHONPATH=build/python python3 LanguageUnderstanding.py --datadir OUT_DIR [--epochs 8]
        [--epoch_size 36000] [--bidirectional]
"""
import argparse
import os

import numpy as np

import cntk as C
from cntk.layers import LSTM, Dense, Embedding, Recurrence, Sequential
from cntk.layers.typing import Sequence, SparseTensor

VOCAB, INTENTS, LABELS = 943, 26, 129


def create_reader(path, is_training):
    return C.io.MinibatchSource(C.io.CTFDeserializer(path, C.io.StreamDefs(
        query=C.io.StreamDef(field='S0', shape=VOCAB, is_sparse=True),
        intent=C.io.StreamDef(field='S1', shape=INTENTS, is_sparse=True),
        slot_labels=C.io.StreamDef(field='S2', shape=LABELS, is_sparse=True))),
        randomize=is_training, max_sweeps=C.io.INFINITELY_REPEAT if is_training else 1)


def create_model(embed=150, hidden=300, bidirectional=False):
    recurrence = (Sequential([(Recurrence(LSTM(hidden // 2)), Recurrence(LSTM(hidden // 2), go_backwards=True)),
                              C.splice])
                  if bidirectional else Recurrence(LSTM(hidden)))
    return Sequential([Embedding(embed, name='embed'), recurrence, Dense(LABELS, name='out_projection')])


def create_criterion(model):
    query = C.sequence.input_variable(VOCAB, is_sparse=True, name='query')
    labels = C.sequence.input_variable(LABELS, is_sparse=True, name='labels')
    z = model(query)
    return C.combine([C.cross_entropy_with_softmax(z, labels), C.classification_error(z, labels)])


def tag(model, words, query_words, slot_words):
    """The slot label of each word of a query (words outside the vocabulary are skipped)."""
    index = {w: i for i, w in enumerate(query_words)}
    ids = [index[w] for w in ['BOS'] + words + ['EOS'] if w in index]
    scores = np.asarray(model(C.Value.one_hot([ids], VOCAB))[0])
    return [(query_words[i], slot_words[int(np.argmax(s))]) for i, s in zip(ids, scores)]


def read_words(path):
    with open(path) as f:
        return [line.rstrip('\n') for line in f]


def train(reader, model, max_epochs, epoch_size=36000, minibatch_size=70, peek=None):
    model.update_signature(Sequence[SparseTensor[VOCAB]])  # a query: a sequence of one-hot words
    criterion = create_criterion(model)
    # CNTK's example: fsadagrad, a per-sample rate of 0.003 for 2 epochs, 0.0015 for 12, then 0.0003.
    lr = C.learning_parameter_schedule_per_sample([0.003] * 2 + [0.0015] * 12 + [0.0003], epoch_size=epoch_size)
    learner = C.fsadagrad(criterion.parameters, lr=lr, momentum=C.momentum_schedule(0.9, minibatch_size),
                          gradient_clipping_threshold_per_sample=15, gradient_clipping_with_truncation=True)
    progress = C.logging.ProgressPrinter(tag='Training', num_epochs=max_epochs)
    callbacks = [progress]
    if peek is not None:
        callbacks.append(C.logging.TrainingSummaryProgressCallback(epoch_size, lambda epoch, *_: peek(epoch + 1)))
    C.logging.log_number_of_parameters(model)
    criterion.train(reader, streams=(reader.streams.query, reader.streams.slot_labels),
                    minibatch_size=minibatch_size, max_epochs=max_epochs, epoch_size=epoch_size,
                    parameter_learners=[learner], callbacks=callbacks)
    return criterion


def evaluate(reader, criterion):
    progress = C.logging.ProgressPrinter(tag='Evaluation', num_epochs=0)
    return criterion.test(reader, streams=(reader.streams.query, reader.streams.slot_labels),
                          minibatch_size=1000, callbacks=[progress]).metric


def main():
    p = argparse.ArgumentParser(description='ATIS slot tagging')
    p.add_argument('--datadir', required=True, help='the folder `ctk data atis` wrote')
    p.add_argument('--epochs', type=int, default=8)
    p.add_argument('--epoch_size', type=int, default=36000, help='words per epoch')
    p.add_argument('--bidirectional', action='store_true')
    p.add_argument('--model', default=None, help='save the trained model here')
    args = p.parse_args()
    C.set_fixed_random_seed(1)
    model = create_model(bidirectional=args.bidirectional)
    query_words = read_words(os.path.join(args.datadir, 'BrainScript', 'query.wl'))
    slot_words = read_words(os.path.join(args.datadir, 'BrainScript', 'slots.wl'))
    sample = 'i want to fly from new york to seattle on monday'.split()

    def peek(epoch):
        print('epoch %d:' % epoch, ' '.join('%s/%s' % pair for pair in tag(model, sample, query_words, slot_words)))
    criterion = train(create_reader(os.path.join(args.datadir, 'Data', 'atis.train.ctf'), True), model,
                      args.epochs, args.epoch_size, peek=peek)
    evaluate(create_reader(os.path.join(args.datadir, 'Data', 'atis.test.ctf'), False), criterion)
    if args.model:
        model.save(args.model)


if __name__ == '__main__':
    main()
