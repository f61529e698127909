// CNTK's readers: deserializers (CTF text, MNIST IDX, CIFAR-10 binary) feeding a MinibatchSource that
// randomizes chunks and sequences within a window, counts sweeps and samples, prefetches the next
// minibatch on a worker thread, and saves and restores its position in checkpoints.
// See docs/training.md. Every error names the file, and for text the line and column.
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctk/core/dictionary.h"
#include "ctk/graph/value.h"

namespace ctk {

inline constexpr int64_t kInfinitelyRepeat = std::numeric_limits<int64_t>::max();   // INFINITELY_REPEAT
inline constexpr int64_t kFullDataSweep = std::numeric_limits<int64_t>::max() - 2;  // FULL_DATA_SWEEP
inline constexpr int64_t kDefaultRandomizationWindowInChunks = 128;                 // 4 GB / 32 MB

// One stream of a deserializer (CNTK's StreamDef): `field` is the name in the file (CTF's |name), `name`
// the key the stream is known by (defaults to field); `shape` the sample shape (a dim for CTF).
struct StreamDef {
    std::string name;
    std::string field;
    Dims shape;
    bool is_sparse = false;
    bool defines_mb_size = false;
    // The longest sequence this stream may have (0: no limit); a longer one in a CTF file is an error
    // that names the file and the line where the sequence starts (CNTK's StreamDef max_sequence_length).
    int64_t max_sequence_length = 0;
};

struct StreamInformation {
    std::string name;
    int id = 0;
    Dims sample_shape;
    DataType dtype = DataType::f32;
    bool is_sparse = false;  // declared sparse: one-hot samples come in index form, others as dense rows
    bool defines_mb_size = false;
};

// One stream's part of a minibatch. `data` is [num_sequences, T, sample...] with the sequence layout;
// T (the longest sequence) is 1 for non-sequence data.
struct MinibatchData {
    Value data;
    int64_t num_sequences = 0;
    int64_t num_samples = 0;
    bool sweep_end = false;  // this minibatch reached the end of a sweep over the data
    // The data as a Value for a variable without a sequence axis: [num_sequences, sample...]. Throws
    // ValueError naming the stream when some sequence is longer than one sample.
    Value as_batch(const std::string& stream_name = "") const;
};

// One sequence of one stream as read from a file: [length, sample...] on the CPU. A sparse stream whose
// samples each hold a single 1 comes as one_hot_indices [length] (int64) instead, `data` undefined, so
// that a large vocabulary never becomes dense rows (the minibatch is then a one-hot Value).
struct SequenceData {
    Tensor data;
    Tensor one_hot_indices;
    // The sequence could not be read and the deserializer was told to skip such (CNTK's max_errors):
    // the source leaves it out of the minibatch.
    bool skip = false;
    // Where the source found it: its deserializer's chunk and index in that chunk (set by the source).
    int64_t chunk = -1, index = -1;
};

// The random engine of a per-sequence transform: CNTK's mt19937, counting its draws so that a
// checkpoint restores it exactly as (seed, draws).
class TransformEngine {
public:
    using result_type = std::mt19937::result_type;
    explicit TransformEngine(uint32_t seed = 0) : engine_(seed), seed_(seed) {}
    static constexpr result_type min() { return std::mt19937::min(); }
    static constexpr result_type max() { return std::mt19937::max(); }
    result_type operator()() {
        ++draws_;
        return engine_();
    }
    uint32_t seed() const { return seed_; }
    uint64_t draws() const { return draws_; }
    void restore(uint32_t seed, uint64_t draws) {
        engine_.seed(seed);
        engine_.discard(draws);
        seed_ = seed;
        draws_ = draws;
    }

private:
    std::mt19937 engine_;
    uint32_t seed_;
    uint64_t draws_ = 0;
};

// A deserializer exposes its data as chunks of sequences; each sequence has one SequenceData per stream.
class Deserializer {
public:
    virtual ~Deserializer() = default;
    virtual const std::vector<StreamInformation>& streams() const = 0;
    virtual int64_t num_chunks() const = 0;
    // Sequences and samples per chunk (known after indexing, before reading the chunk's data).
    virtual int64_t chunk_num_sequences(int64_t chunk) const = 0;
    virtual int64_t chunk_num_samples(int64_t chunk) const = 0;
    // Parses chunk `chunk`: result[sequence][stream]. Thread-safe (called by prefetch workers).
    virtual std::vector<std::vector<SequenceData>> read_chunk(int64_t chunk) const = 0;
    virtual std::string description() const = 0;  // "CTF file 'train.txt'"
    // CNTK's sequence keys, by which deserializers of different chunking are joined (the same key: the
    // same sample): the keys of chunk `chunk`'s sequences (a map file's key column or line number, a CTF
    // sequence id or ordinal, ...). Empty when the deserializer has none: it is then joined chunk by
    // chunk only.
    virtual std::vector<std::string> sequence_keys(int64_t /*chunk*/) const { return {}; }

    // CNTK's per-sequence transforms (the image readers' crop, scale, mean, colour). When
    // transforms_sequences(), the source calls transform() on every sequence of a worker's minibatch
    // once it is cut, in parallel over the sequences, with `rng` the engines of the sequence's position
    // in that minibatch (CNTK keyed augmentation by that position): engine k of position j starts as
    // mt19937(transform_engine_seeds()[k] + j) and lives for the whole run. `sequence` holds this
    // deserializer's streams of sequence `index` of chunk `chunk`, as read_chunk gave them; transform
    // replaces them with the transformed data.
    virtual bool transforms_sequences() const { return false; }
    virtual std::vector<uint32_t> transform_engine_seeds() const { return {}; }
    virtual void transform(int64_t /*chunk*/, int64_t /*index*/, std::span<SequenceData> /*sequence*/,
                           std::span<TransformEngine> /*rng*/) const {}
};
using DeserializerPtr = std::shared_ptr<Deserializer>;

// CNTK Text Format. Streams name their `field` (the |name in the file) and dim (shape {dim}); sparse
// streams read index:value pairs. chunk_size_bytes: CNTK's chunkSizeInBytes (32 MB).
DeserializerPtr ctf_deserializer(const std::string& path, const std::vector<StreamDef>& streams,
                                 int64_t chunk_size_bytes = 32 << 20);
// MNIST IDX files (idx3-ubyte images, idx1-ubyte labels), plain or gzipped; a missing path is retried
// with ".gz" appended. Streams "features" (pixels as floats 0..255, shape {rows * cols}) and "labels"
// (one-hot, shape {num_classes}). Throws IOError naming the file on a wrong magic, a truncated file or
// image and label counts that differ.
DeserializerPtr mnist_idx_deserializer(const std::string& images_path, const std::string& labels_path,
                                       int64_t num_classes = 10);
// CIFAR-10 binary batches (data_batch_*.bin, test_batch.bin): streams "features" ([3, 32, 32] floats
// 0..255) and "labels" (one-hot 10).
DeserializerPtr cifar10_binary_deserializer(const std::vector<std::string>& paths);

struct MinibatchSourceConfig {
    std::vector<DeserializerPtr> deserializers;
    int64_t max_samples = kInfinitelyRepeat;
    int64_t max_sweeps = kInfinitelyRepeat;
    bool randomize = true;
    // 0 (with no window in samples): no randomization, as CNTK.
    int64_t randomization_window_in_chunks = kDefaultRandomizationWindowInChunks;
    int64_t randomization_window_in_samples = 0;  // when set, overrides the window in chunks
    uint64_t randomization_seed = 0;
    // Read ahead on worker threads: the chunks, and the next minibatch for the same request while the
    // caller trains on this one (transforms included), so the reader's work hides behind the step.
    bool multithreaded_deserializer = true;
    int num_reader_threads = 0;  // 0: CTK_READER_THREADS, else the machine's cores (at most 16)
};

// CNTK's composite minibatch source over deserializers. Its methods are virtual so that a source
// which delivers minibatches itself (CNTK's UserMinibatchSource, written in Python) can stand wherever
// a MinibatchSource is taken (training_session, cross-validation, test); such a source is made with the
// protected default constructor and overrides stream_infos, next_minibatch and the position methods.
class MinibatchSource {
public:
    explicit MinibatchSource(MinibatchSourceConfig config);
    virtual ~MinibatchSource();
    MinibatchSource(const MinibatchSource&) = delete;
    MinibatchSource& operator=(const MinibatchSource&) = delete;

    virtual const std::vector<StreamInformation>& stream_infos() const;
    // Throws ValueError listing the known streams when `name` is not one of them.
    const StreamInformation& stream_info(const std::string& name) const;

    // The next minibatch of about `minibatch_size_in_samples` samples (counted on the stream with
    // defines_mb_size, else the one with most samples; whole sequences only, at least one), keyed by
    // stream name; empty when max_samples / max_sweeps is reached. As CNTK's, a minibatch runs on from
    // the end of one sweep into the next (its sweep_end is then set). With several partitions each worker
    // gets the sequences whose index modulo num_partitions is partition_index. The data is placed on
    // `device` (CNTK's default: the default device). For a GPU, dense data is assembled in pinned host
    // memory and copied asynchronously on the device's ctk stream: the call returns while the copy runs,
    // and the step's kernels, queued after it, see the data.
    virtual std::unordered_map<std::string, MinibatchData> next_minibatch(int64_t minibatch_size_in_samples,
                                                                          int64_t num_partitions = 1,
                                                                          int64_t partition_index = 0,
                                                                          Device device = default_device());

    virtual int64_t total_samples_delivered() const;
    virtual int64_t sweeps_completed() const;
    // True when neither max_samples nor max_sweeps bounds the source (it never runs dry).
    virtual bool repeats_forever() const;

    // Position (samples, sweep, position within the sweep) so a restored source delivers exactly the
    // minibatches an uninterrupted one would.
    virtual Dictionary checkpoint_state() const;
    virtual void restore_from_checkpoint(const Dictionary& state);

protected:
    MinibatchSource();  // for sources that deliver minibatches themselves (above)

private:
    struct Impl;
    Impl& impl(const char* method) const;  // throws for a source made without deserializers
    std::unique_ptr<Impl> impl_;
};

}  // namespace ctk
