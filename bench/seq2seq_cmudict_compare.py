#!/usr/bin/env python3
"""ctk against PyTorch on CNTK's Sequence2Sequence example (grapheme-to-phoneme with attention on the CMU
pronouncing dictionary), in one run, same data, threads and number of training samples.

ctk's side is the model of examples/SequenceToSequence/CMUDict/Python/Sequence2Sequence.py (CNTK's
example's, with CNTK's API): a shared Embedding, a self-stabilized encoder of stacked Recurrence(LSTM),
a decoder whose first LSTM reads additive attention (AttentionModel, a window of the encoder's last
--span states) over its own past state, a second LSTM, Dense over the 69 symbols; fsadagrad at the
example's first rate with per-sample clipping; the greedy decoder as UnfoldFrom. PyTorch's twin has the same layers and sizes (nn.Embedding, nn.LSTM,
nn.LSTMCell with the same attention, nn.Linear; Adam, which fsadagrad resembles; no stabilizers:
PyTorch has none), trained on the same minibatches (whole words, about --minibatch tokens each).

Prints training samples/s (label tokens, as CNTK's log counts them) of each side and the ratio
(ctk / torch), then each side's phoneme error rate (edit distance over reference phonemes) and word
error rate of greedy decoding on the first --test_words words of the test file, after the same number
of training samples.

    build/cli/ctk data cmudict /tmp/cmudict
    PYTHONPATH=build/python /usr/bin/python3 bench/seq2seq_cmudict_compare.py --data /tmp/cmudict \
        [--samples 200000] [--threads 2] [--hidden 512] [--test_words 1000]
"""
import argparse
import os
import sys
import time

import numpy as np
import torch

import cntk as C

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'examples', 'SequenceToSequence',
                                'CMUDict', 'Python'))
import Sequence2Sequence as example  # noqa: E402 (the example's model, from the path above)

TRAIN, TEST, MAPPING = example.TRAIN, example.TEST, example.MAPPING
START, END = '<s>', '</s>'


def read_ctf(path, limit=None):
    """(letters, phonemes) index lists per word, each with <s> ... </s>, from CNTK's CTF layout."""
    words, current, last_id = [], None, None
    with open(path) as f:
        for line in f:
            fields = line.rstrip('\n').split('\t')
            if fields[0] != last_id:
                if limit is not None and len(words) == limit:
                    break
                last_id, current = fields[0], ([], [])
                words.append(current)
            for field in fields[1:]:
                if field.startswith('|S0 '):
                    current[0].append(int(field[4:].split(':')[0]))
                elif field.startswith('|S1 '):
                    current[1].append(int(field[4:].split(':')[0]))
    return words


def minibatches(words, tokens, rng):
    """Whole words, shuffled, grouped until the longer stream of a group reaches `tokens` (CNTK counts a
    minibatch of sequences by its longest stream)."""
    order = rng.permutation(len(words))
    group, size = [], 0
    for i in order:
        n = max(len(words[i][0]), len(words[i][1]))
        if group and size + n > tokens:
            yield group
            group, size = [], 0
        group.append(words[i])
        size += n
    if group:
        yield group


def error_rates(decoded, words, end):
    """Phoneme error rate and word error rate of decoded phoneme lists (without <s>, up to </s>)."""
    edits = total = wrong = 0
    for out, (_, ref) in zip(decoded, words):
        ref = ref[1:-1]
        out = out[:out.index(end)] if end in out else out
        edits += example.edit_distance(out, ref)
        total += len(ref)
        wrong += out != ref
    return edits / total, wrong / len(words)


# ---- ctk: the example's model (examples/SequenceToSequence/CMUDict/Python) ----

def ctk_side(args, vocab, train_words, test_words):
    V = len(vocab)
    start = C.Constant(np.eye(V, dtype=np.float32)[vocab.index(START)])
    decode = example.create_model(V, example.Sizes(args.embed, args.hidden, args.layers, args.attention,
                                                   args.span))
    criterion = example.create_criterion(decode, V, start)
    greedy = example.create_greedy_decoder(decode, V, start, vocab.index(END))
    lr = C.learning_parameter_schedule_per_sample(0.001)
    clipping = dict(gradient_clipping_threshold_per_sample=2.3, gradient_clipping_with_truncation=True)
    if args.ctk_learner == 'adam':
        # PyTorch's side's optimizer and step: a rate per sample, as CNTK applies it (a rate without a
        # reference minibatch size is divided by the minibatch's sample count, which Adam's normalised
        # step would then carry).
        learner = C.adam(decode.parameters, lr=lr, momentum=0.9, variance_momentum=0.999, epsilon=1e-8,
                         **clipping)
    else:  # CNTK's example's
        learner = C.fsadagrad(decode.parameters, lr=lr, momentum=C.momentum_schedule(0.93664), **clipping)
    trainer = C.Trainer(None, criterion, learner)
    eye = np.eye(V, dtype=np.float32)

    def train_step(group):
        trainer.train_minibatch({criterion.arguments[0]: [eye[w[0]] for w in group],
                                 criterion.arguments[1]: [eye[w[1]] for w in group]})
        return trainer.previous_minibatch_loss_average * trainer.previous_minibatch_sample_count

    def decode_words(words):
        out = []
        for i in range(0, len(words), 256):
            seqs = greedy([eye[w[0]] for w in words[i:i + 256]])
            out += [[int(np.argmax(v)) for v in np.asarray(s).reshape(len(s), -1)] for s in seqs]
        return out
    return train_step, decode_words


# ---- PyTorch's twin ----

class TorchSeq2Seq(torch.nn.Module):
    def __init__(self, V, args):
        super().__init__()
        H, A = args.hidden, args.attention
        self.span = args.span
        self.embed = torch.nn.Embedding(V, args.embed)
        self.encoder = torch.nn.LSTM(args.embed, H, num_layers=args.layers, batch_first=True)
        self.att_enc = torch.nn.Linear(H, A, bias=False)
        self.att_dec = torch.nn.Linear(H, A, bias=False)
        self.att_score = torch.nn.Linear(A, 1, bias=False)
        self.cell = torch.nn.LSTMCell(args.embed + H, H)
        self.upper = torch.nn.LSTM(H, H, num_layers=args.layers - 1, batch_first=True) if args.layers > 1 else None
        self.out = torch.nn.Linear(H, V)

    def encode(self, letters):
        lengths = torch.tensor([len(s) for s in letters])
        x = torch.nn.utils.rnn.pad_sequence([torch.tensor(s) for s in letters], batch_first=True)
        packed = torch.nn.utils.rnn.pack_padded_sequence(self.embed(x), lengths, batch_first=True,
                                                         enforce_sorted=False)
        states, _ = torch.nn.utils.rnn.pad_packed_sequence(self.encoder(packed)[0], batch_first=True)
        # The window of the last `span` states, the last first (as the attention above).
        index = lengths[:, None] - 1 - torch.arange(self.span)[None]
        valid = index >= 0
        items = states.gather(1, index.clamp(min=0)[..., None].expand(-1, -1, states.shape[-1]))
        items = items * valid[..., None]
        return items, valid, self.att_enc(items)

    def attend(self, h, items, valid, keys):
        scores = self.att_score(torch.tanh(keys + self.att_dec(h)[:, None])).squeeze(-1)
        weights = torch.softmax(scores + (valid.float() - 1) * 50, dim=1)
        return (weights[..., None] * items).sum(1)

    def step(self, token, state, memory):
        h, c, upper = state
        h, c = self.cell(torch.cat([self.embed(token), self.attend(h, *memory)], 1), (h, c))
        r = h[:, None]
        if self.upper is not None:
            r, upper = self.upper(r, upper)
        return self.out(r[:, 0]), (h, c, upper)

    def initial(self, n):
        z = torch.zeros(n, self.cell.hidden_size)
        return z, z, None

    def forward(self, letters, history):
        memory = self.encode(letters)
        state, logits = self.initial(len(letters)), []
        for t in range(history.shape[1]):
            y, state = self.step(history[:, t], state, memory)
            logits.append(y)
        return torch.stack(logits, 1)


def torch_side(args, vocab, train_words, test_words):
    model = TorchSeq2Seq(len(vocab), args)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001)
    start, end = vocab.index(START), vocab.index(END)

    def train_step(group):
        history = torch.nn.utils.rnn.pad_sequence([torch.tensor(w[1][:-1]) for w in group], batch_first=True,
                                                  padding_value=start)
        targets = torch.nn.utils.rnn.pad_sequence([torch.tensor(w[1][1:]) for w in group], batch_first=True,
                                                  padding_value=-1)
        logits = model([w[0] for w in group], history)
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
                                                 ignore_index=-1, reduction='sum')
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_value_(model.parameters(), 2.3 * int((targets >= 0).sum()))
        optimizer.step()
        return float(loss)

    @torch.no_grad()
    def decode_words(words):
        out = []
        for i in range(0, len(words), 256):
            group = words[i:i + 256]
            memory = model.encode([w[0] for w in group])
            state = model.initial(len(group))
            token = torch.full((len(group),), start)
            steps = []
            for _ in range(int(1.5 * max(len(w[0]) for w in group))):
                y, state = model.step(token, state, memory)
                token = y.argmax(1)
                steps.append(token)
            out += torch.stack(steps, 1).tolist()
        return out
    return train_step, decode_words


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    p.add_argument('--data', required=True, help='the folder `ctk data cmudict` wrote')
    p.add_argument('--samples', type=int, default=200000, help='training label tokens per side')
    p.add_argument('--minibatch', type=int, default=72)
    p.add_argument('--threads', type=int, default=2)
    p.add_argument('--embed', type=int, default=200)
    p.add_argument('--hidden', type=int, default=512)
    p.add_argument('--attention', type=int, default=128)
    p.add_argument('--span', type=int, default=20)
    p.add_argument('--layers', type=int, default=2)
    p.add_argument('--test_words', type=int, default=1000)
    p.add_argument('--sides', nargs='+', default=['ctk', 'torch'])
    p.add_argument('--ctk_learner', choices=['fsadagrad', 'adam'], default='fsadagrad',
                   help="ctk's optimizer: the example's fsadagrad, or PyTorch's side's Adam")
    p.add_argument('--report', type=int, default=20000, help='print the mean training loss every N samples')
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    C.set_num_threads(args.threads)
    vocab = [w.strip() for w in open(os.path.join(args.data, MAPPING))]
    train_words = read_ctf(os.path.join(args.data, TRAIN))
    test_words = read_ctf(os.path.join(args.data, TEST), limit=args.test_words)
    end = vocab.index(END)
    print('%d training words, %d test words, vocabulary %d, threads %d' %
          (len(train_words), len(test_words), len(vocab), args.threads))
    results = {}
    for side in args.sides:
        torch.manual_seed(1)
        C.set_fixed_random_seed(1)
        train_step, decode_words = (ctk_side if side == 'ctk' else torch_side)(args, vocab, train_words, test_words)
        rng, seen, busy, loss_sum, loss_count = np.random.default_rng(1), 0, 0.0, 0.0, 0
        while seen < args.samples:
            for group in minibatches(train_words, args.minibatch, rng):
                t0 = time.perf_counter()
                loss_sum += train_step(group)
                busy += time.perf_counter() - t0
                count = sum(len(w[1]) - 1 for w in group)
                seen, loss_count = seen + count, loss_count + count
                if seen // args.report != (seen - count) // args.report:
                    print('%-5s %7d samples: loss %.3f per phoneme' % (side, seen, loss_sum / loss_count),
                          flush=True)
                    loss_sum, loss_count = 0.0, 0
                if seen >= args.samples:
                    break
        t0 = time.perf_counter()
        per, wer = error_rates(decode_words(test_words), test_words, end)
        results[side] = seen / busy
        print('%-5s %8.1f samples/s training (%d samples, %.0f s); greedy decoding of %d words (%.0f s): '
              'phoneme error rate %.1f%%, word error rate %.1f%%' %
              (side, seen / busy, seen, busy, len(test_words), time.perf_counter() - t0, 100 * per, 100 * wer))
    if len(results) == 2:
        print('ratio ctk / torch: %.2fx training samples/s' % (results['ctk'] / results['torch']))


if __name__ == '__main__':
    main()
