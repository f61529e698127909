#!/usr/bin/env python3
"""ctk against PyTorch training an LSTM language model, in one run, same shapes and threads: a model
written with CNTK's API (Embedding 128, Recurrence(LSTM 256), Dense over the vocabulary, cross entropy
with softmax and classification error over one-hot labels, SGD) against its PyTorch twin (nn.Embedding,
nn.LSTM, nn.Linear, cross entropy on class indices and the argmax error, SGD). Vocabulary 10,000, batch
32 sequences of 35 tokens. Timed interleaved (ctk, torch, ctk, ...) over --rounds rounds; prints the
median training tokens/s of each side and the ratio (ctk / torch: above 1 means ctk is faster), per
thread count.

    PYTHONPATH=build/python /usr/bin/python3 bench/lstm_lm_compare.py [--threads 1 2] [--rounds 5]

Both sides use the same OpenBLAS; to give both a CPU that OpenBLAS does not recognise its right kernels,
set OPENBLAS_CORETYPE before starting (see docs/benchmarks.md). CTK_FUSED_RECURRENCE=0 times ctk's
general frame-by-frame path instead of its fused recurrent kernel.
"""
import argparse
import statistics
import time

import numpy as np
import torch

import cntk as C

VOCAB, EMBED, HIDDEN, FRAMES, BATCH = 10000, 128, 256, 35, 32


def token_batches(count, seed=0):
    rng = np.random.default_rng(seed)
    # Zipf-like tokens (a language's shape), next-token targets.
    return [rng.zipf(1.3, size=(BATCH, FRAMES + 1)) % VOCAB for _ in range(count)]


def ctk_trainer(batches):
    x = C.sequence.input_variable(VOCAB, is_sparse=True, name='x')
    y = C.sequence.input_variable(VOCAB, is_sparse=True, name='y')
    with C.layers.default_options(initial_state=0.1):
        z = C.layers.Sequential([C.layers.Embedding(EMBED), C.layers.Recurrence(C.layers.LSTM(HIDDEN)),
                                 C.layers.Dense(VOCAB)])(x)
    loss = C.cross_entropy_with_softmax(z, y)
    err = C.classification_error(z, y)
    learner = C.sgd(z.parameters, lr=C.learning_parameter_schedule_per_sample(0.01))
    trainer = C.Trainer(z, (loss, err), [learner])
    data = [({x: C.Value.one_hot(b[:, :-1].tolist(), VOCAB), y: C.Value.one_hot(b[:, 1:].tolist(), VOCAB)})
            for b in batches]
    state = {'i': 0}

    def step():
        trainer.train_minibatch(data[state['i'] % len(data)])
        state['i'] += 1
    return step


class TorchLM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, EMBED)
        self.lstm = torch.nn.LSTM(EMBED, HIDDEN, batch_first=True)
        self.out = torch.nn.Linear(HIDDEN, VOCAB)

    def forward(self, tokens):
        return self.out(self.lstm(self.embed(tokens))[0])


def torch_trainer(batches):
    model = TorchLM()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.from_numpy(b[:, :-1]).long(), torch.from_numpy(b[:, 1:]).long()) for b in batches]
    state = {'i': 0}

    def step():
        inp, target = data[state['i'] % len(data)]
        state['i'] += 1
        opt.zero_grad()
        logits = model(inp).reshape(-1, VOCAB)
        loss = torch.nn.functional.cross_entropy(logits, target.reshape(-1), reduction='sum')
        loss.backward()
        opt.step()
        (logits.argmax(1) != target.reshape(-1)).sum().item()  # the metric CNTK's trainer computes
    return step


def tokens_per_second(step, steps):
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return steps * BATCH * FRAMES / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--threads', type=int, nargs='+', default=[1, 2])
    parser.add_argument('--rounds', type=int, default=5)
    parser.add_argument('--steps', type=int, default=5, help='training steps per timed round')
    args = parser.parse_args()
    batches = token_batches(4)
    print('%-8s %14s %14s %8s' % ('threads', 'ctk tokens/s', 'torch tokens/s', 'ratio'))
    for threads in args.threads:
        C.set_num_threads(threads)
        torch.set_num_threads(threads)
        ctk_step, torch_step = ctk_trainer(batches), torch_trainer(batches)
        for _ in range(2):  # warm-up: plans compiled, memory planned, caches filled
            ctk_step()
            torch_step()
        ctk_rates, torch_rates = [], []
        for _ in range(args.rounds):
            ctk_rates.append(tokens_per_second(ctk_step, args.steps))
            torch_rates.append(tokens_per_second(torch_step, args.steps))
        c, t = statistics.median(ctk_rates), statistics.median(torch_rates)
        print('%-8d %14.0f %14.0f %8.2f' % (threads, c, t, c / t), flush=True)


if __name__ == '__main__':
    main()
