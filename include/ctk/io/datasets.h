// Data sets in the layouts CNTK's examples read, written from what Debian ships (`ctk data`): MNIST and
// CIFAR-10 as CNTK text format, the CMU pronouncing dictionary, the fortune databases, and an ATIS-like
// set. The `ctk data` commands are described in the README.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace ctk {

// The CNTK MNIST text files from IDX files: `Train-28x28_cntk_text.txt` and `Test-28x28_cntk_text.txt`
// in out_dir, lines "|labels 0 0 1 ... |features 0 0 ... 255" (one-hot labels first, as CNTK's
// install_mnist.py writes them). Reads train-images-idx3-ubyte / t10k-images-idx3-ubyte (and labels)
// from in_dir, gzipped (.gz) or not. Returns the number of (train, test) samples written.
std::pair<int64_t, int64_t> convert_mnist_to_ctf(const std::string& in_dir, const std::string& out_dir);
// The CNTK CIFAR-10 text files from CIFAR-10's binary batches: `Train_cntk_text.txt` (data_batch_1.bin
// .. data_batch_5.bin) and `Test_cntk_text.txt` (test_batch.bin) in out_dir, lines "|labels <10 one-hot>
// |features <3072 integers>" (the red, green and blue planes), the layout ConvNet_CIFAR10.py reads.
// Files may be gzipped (.gz). Returns the number of (train, test) samples written.
std::pair<int64_t, int64_t> convert_cifar10_to_ctf(const std::string& in_dir, const std::string& out_dir);
// The CMU pronouncing dictionary in the layout of CNTK's Examples/SequenceToSequence/CMUDict/Data, from
// Debian's copy in Festival's lexicon format (festlex-cmu: /usr/share/festival/dicts/cmu/cmudict-0.4.out):
// out_dir/cmudict-0.7b.mapping (CNTK's 69 symbols: ', </s>, <s/>, <s>, A-Z, ~AA .. ~ZH, one a line),
// cmudict-0.7b.train-dev-20-21.ctf and cmudict-0.7b.test.ctf (every tenth entry, in the dictionary's
// order; lines "id\t|S0 k:1 |# A\t|S1 k:1 |# ~AH", letters and phonemes each between <s> and </s>,
// phonemes without stress, Festival's schwa ax as AH), and tiny.ctf (the first test word). Pronunciations
// repeated for another part of speech are written once. A malformed line is an IOError naming the file
// and line.
struct CmudictCounts {
    int64_t train = 0, test = 0, skipped = 0;  // skipped: words with letters outside the mapping
};
CmudictCounts convert_cmudict_to_ctf(const std::string& dict_path, const std::string& out_dir);
// The fortune databases in in_dir (Debian's fortunes: /usr/share/games/fortunes; the text files without
// an extension) as one text file, the quotes in file-name order, each followed by a blank line. Returns
// the number of quotes.
int64_t convert_fortunes_to_text(const std::string& in_dir, const std::string& out_path);
// A data set in the layout of CNTK's Examples/LanguageUnderstanding/ATIS (ATIS itself is licensed by the
// LDC and not shipped by Debian): flight queries from a small grammar with ATIS's slot tags (B-/I-
// fromloc.city_name, toloc.city_name, depart_date.day_name, ...) and intents, written as
// out_dir/Data/atis.train.ctf and atis.test.ctf (a line per word: "id\t|S0 word:1 [|S1 intent:1]
// |S2 slot:1", the intent on a sentence's first line) and out_dir/BrainScript/query.wl, slots.wl and
// intent.wl, padded to ATIS's 943 words, 129 slots and 26 intents. Deterministic for a seed.
struct AtisCounts {
    int64_t train = 0, test = 0;
};
AtisCounts generate_atis_like(const std::string& out_dir, int64_t train_sentences = 4978,
                              int64_t test_sentences = 893, uint32_t seed = 1);

}  // namespace ctk
