"""Smoke tests of the sequence examples (examples/SequenceToSequence, Text/CharacterLM,
LanguageUnderstanding): each runs as a user runs it, on a tiny data set written by `ctk data` from
small files in the real formats (Festival's lexicon, fortune files, generated ATIS-like queries), with
tiny layers, and must print CNTK's log lines, save its models and report its figures."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
EXAMPLES = os.path.join(ROOT, 'examples')
CLI = os.environ.get('CTK_CLI') or os.path.join(ROOT, 'build', 'cli', 'ctk')

pytestmark = pytest.mark.skipif(not os.path.exists(CLI), reason='the ctk command is not built')


def run(*args, timeout=300):
    done = subprocess.run(list(args), capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, PYTHONWARNINGS='ignore'))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def example(*parts):
    return [sys.executable, os.path.join(EXAMPLES, *parts)]


def festival_lexicon(path, words=80):
    # Made-up words whose letters each say one phoneme, in Festival's lexicon format (Debian's
    # festlex-cmu): "(word" pos "((syllable phonemes) stress) ...)".
    sounds = {'b': 'b', 'd': 'd', 'k': 'k', 'm': 'm', 'n': 'n', 's': 's', 't': 't', 'a': 'aa', 'e': 'eh',
              'i': 'iy', 'o': 'ow', 'u': 'uw'}
    letters = sorted(sounds)
    with open(path, 'w') as f:
        f.write('MNCL\n')
        for i in range(words):
            word = letters[i % 12] + letters[i // 12 % 12] + letters[(5 * i + 3) % 12] + letters[i % 7] * (i % 2)
            f.write('("%s" nil (((%s) 1)))\n' % (word, ' '.join(sounds[c] for c in word)))


def test_sequence2sequence_trains_saves_and_decodes(tmp_path):
    festival_lexicon(tmp_path / 'dict.out')
    run(CLI, 'data', 'cmudict', str(tmp_path / 'dict.out'), str(tmp_path / 'data'))
    out = run(*example('SequenceToSequence', 'CMUDict', 'Python', 'Sequence2Sequence.py'),
              '--datadir', str(tmp_path / 'data'), '--epochs', '2', '--epoch_size', '150', '--hidden', '16',
              '--embed', '8', '--test_words', '4', '--model_dir', str(tmp_path / 'models'))
    assert 'Training ' in out and ' parameters in 29 parameter tensors.' in out
    assert 'Finished Epoch[2]: [Training] loss = ' in out
    assert '->' in out  # the example word decoded while training
    assert 'string error rate of ' in out and 'in 4 samples' in out
    assert 'phoneme error rate of ' in out
    assert os.path.exists(tmp_path / 'models' / 'model_att_True.cmf.2')
    # Without attention: the encoder's final state starts the decoder.
    out = run(*example('SequenceToSequence', 'CMUDict', 'Python', 'Sequence2Sequence.py'),
              '--datadir', str(tmp_path / 'data'), '--epochs', '1', '--epoch_size', '60', '--hidden', '8',
              '--embed', '4', '--test_words', '2', '--no_attention')
    assert 'Finished Epoch[1]' in out and 'string error rate of ' in out


def test_char_rnn_trains_and_samples_text(tmp_path):
    (tmp_path / 'fortunes').mkdir()
    quotes = ['The early bird gets the worm.', 'A penny saved is a penny earned.',
              'Time flies like an arrow; fruit flies like a banana.', 'To be or not to be.']
    (tmp_path / 'fortunes' / 'sayings').write_text('\n%\n'.join(quotes * 5) + '\n%\n')
    run(CLI, 'data', 'fortunes', str(tmp_path / 'fortunes'), str(tmp_path / 'fortunes.txt'))
    out = run(*example('Text', 'CharacterLM', 'Python', 'char_rnn.py'), '--text', str(tmp_path / 'fortunes.txt'),
              '--epochs', '2', '--minibatches_per_epoch', '4', '--hidden', '16', '--streams', '4', '--length', '20',
              '--sample_length', '60', '--model_dir', str(tmp_path / 'models'))
    assert 'unique.' in out and 'Finished Epoch[2]' in out
    assert os.path.exists(tmp_path / 'models' / 'char_rnn_epoch2.dnn')
    sample = out.rstrip('\n').split("Saved model to '%s'\n" % (tmp_path / 'models' / 'char_rnn_epoch2.dnn'))[-1]
    assert sample.startswith('T') and len(sample) >= 60


def test_language_understanding_trains_tags_and_tests(tmp_path):
    run(CLI, 'data', 'atis', str(tmp_path / 'atis'))
    out = run(*example('LanguageUnderstanding', 'ATIS', 'Python', 'LanguageUnderstanding.py'),
              '--datadir', str(tmp_path / 'atis'), '--epochs', '1', '--epoch_size', '700',
              '--model', str(tmp_path / 'lu.model'))
    assert 'Finished Epoch[1 of 1]: [Training] loss = ' in out
    assert 'epoch 1: BOS/' in out and 'seattle/' in out
    assert 'Finished Evaluation [1]: Minibatch[' in out
    assert os.path.exists(tmp_path / 'lu.model')
