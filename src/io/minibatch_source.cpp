// MinibatchSource: walks sweeps in block-randomized order (sweep_order.h), cuts minibatches of whole
// sequences, splits them among partitions, and pads each stream to [sequences, T, sample...].
// Its position (sweep, position in the sweep, samples delivered) is all a checkpoint needs, because
// each sweep's order is a pure function of the seed and the sweep index.
#include <algorithm>
#include <cstring>
#include <future>
#include <map>
#include <set>
#include <unordered_map>

#include "ctk/core/cuda.h"
#include "ctk/core/error.h"
#include "ctk/io.h"
#include "io/chunk_loader.h"
#include "io/io_common.h"
#include "io/sweep_order.h"
#include "io/task_pool.h"

namespace ctk {

Value MinibatchData::as_batch(const std::string& stream_name) const {
    if (data.is_one_hot()) {
        const Tensor& idx = data.one_hot_indices();
        CTK_CHECK(idx.rank() == 2 && idx.dim(1) == 1, ValueError, "as_batch: stream '", stream_name,
                  "' has sequences of up to ", idx.rank() == 2 ? idx.dim(1) : 0,
                  " samples; a variable without a sequence axis needs one sample per sequence");
        return data.one_hot_reshaped({idx.dim(0)});  // no re-check: GPU indices stay on the GPU
    }
    const Tensor& t = data.data();
    CTK_CHECK(t.defined() && t.rank() >= 2, ValueError, "as_batch: stream '", stream_name,
              "' holds no [sequences, T, sample...] data");
    CTK_CHECK(t.dim(1) == 1, ValueError, "as_batch: stream '", stream_name, "' has sequences of up to ",
              t.dim(1), " samples; a variable without a sequence axis needs one sample per sequence");
    Dims dims{t.dim(0)};
    dims.insert(dims.end(), t.shape().dims().begin() + 2, t.shape().dims().end());
    return Value(t.reshape(dims));
}

namespace {
constexpr int64_t kStateVersion = 1;

int64_t sequence_length(const SequenceData& d) {
    return d.one_hot_indices.defined() ? d.one_hot_indices.dim(0) : d.data.dim(0);
}

// Where the source stands: everything a minibatch depends on besides the request and the engines.
struct Cursor {
    int64_t sweep = 0;
    int64_t position = 0;  // of the next sequence in this sweep's order
    int64_t samples_delivered = 0;
    bool operator==(const Cursor&) const = default;
};

struct Request {
    int64_t size = 0, partitions = 1, index = 0;
    Device device;
    bool operator==(const Request& o) const {
        return size == o.size && partitions == o.partitions && index == o.index && device == o.device;
    }
};

// The transform engines: [deserializer][position in the minibatch][engine].
using Engines = std::vector<std::vector<std::vector<TransformEngine>>>;

// A minibatch cut and assembled in host memory (pinned for a GPU), with the state it leads to.
struct Prepared {
    Request request;
    Cursor from, to;
    std::unordered_map<std::string, MinibatchData> data;
    Engines engines;  // the engines of the positions it used, after their draws
    std::exception_ptr error;
};
}  // namespace

struct MinibatchSource::Impl {
    MinibatchSourceConfig config;
    std::vector<StreamInformation> infos;
    int mb_stream = -1;  // the stream with defines_mb_size, if any
    std::vector<int64_t> sequences_per_chunk;
    int64_t num_sequences = 0;
    int64_t window_chunks = 1;
    // Per deserializer: its first stream, its stream count, and its transform engines' seeds.
    struct Part {
        DeserializerPtr deserializer;
        size_t first_stream = 0, num_streams = 0;
        std::vector<uint32_t> seeds;
    };
    std::vector<Part> parts;
    bool transforms = false;

    Cursor cursor;
    Engines engines;  // committed: those of every position used so far

    // The orders of the last two sweeps used (a minibatch may run from one sweep into the next).
    std::map<int64_t, std::shared_ptr<const detail::SweepOrder>> orders;

    // Declared last: destroyed first, so no reader task outlives what it uses.
    std::unique_ptr<detail::TaskPool> pool;
    std::unique_ptr<detail::ChunkLoader> loader;
    std::future<Prepared> pending;  // the next minibatch, prepared ahead for the last request

    std::shared_ptr<const detail::SweepOrder> order_for(int64_t s) {
        auto it = orders.find(s);
        if (it != orders.end()) return it->second;
        if (orders.size() >= 2) orders.erase(orders.begin());
        return orders[s] = std::make_shared<const detail::SweepOrder>(detail::make_sweep_order(
                   sequences_per_chunk, config.randomize, window_chunks, config.randomization_seed, s));
    }

    bool exhausted(const Cursor& c) const {
        return c.samples_delivered >= config.max_samples || c.sweep >= config.max_sweeps;
    }

    void drop_pending() {
        if (pending.valid()) pending.wait(), pending = {};
    }

    // The engine k of deserializer d at position j, as committed (or fresh: mt19937(seed + j)).
    TransformEngine engine(size_t d, size_t j, size_t k) const {
        if (d < engines.size() && j < engines[d].size()) return engines[d][j][k];
        return TransformEngine(parts[d].seeds[k] + static_cast<uint32_t>(j));
    }

    Prepared prepare(const Cursor& from, const Request& request);
    void commit(Prepared& p);
};

MinibatchSource::MinibatchSource(MinibatchSourceConfig config) : impl_(std::make_unique<Impl>()) {
    Impl& m = *impl_;
    CTK_CHECK(!config.deserializers.empty(), ValueError, "MinibatchSource: no deserializers given");
    for (const DeserializerPtr& d : config.deserializers)
        CTK_CHECK(d != nullptr, ValueError, "MinibatchSource: a deserializer is null");
    if (config.max_samples == kFullDataSweep) {
        CTK_CHECK(config.max_sweeps == kInfinitelyRepeat, ValueError,
                  "MinibatchSource: max_samples=FULL_DATA_SWEEP and max_sweeps cannot both be set");
        config.max_samples = kInfinitelyRepeat;
        config.max_sweeps = 1;
    }
    CTK_CHECK(config.max_samples == kInfinitelyRepeat || config.max_sweeps == kInfinitelyRepeat, ValueError,
              "MinibatchSource: max_samples (", config.max_samples, ") and max_sweeps (", config.max_sweeps,
              ") cannot both be set");
    CTK_CHECK(config.max_samples >= 0 && config.max_sweeps >= 0, ValueError,
              "MinibatchSource: max_samples and max_sweeps must not be negative");
    CTK_CHECK(config.randomization_window_in_samples >= 0, ValueError,
              "MinibatchSource: randomization_window_in_samples is negative");
    CTK_CHECK(config.randomization_window_in_chunks >= 0, ValueError,
              "MinibatchSource: randomization_window_in_chunks is ", config.randomization_window_in_chunks,
              "; it must not be negative");
    // CNTK: a window of nothing is no randomization.
    if (config.randomization_window_in_samples == 0 && config.randomization_window_in_chunks == 0)
        config.randomize = false;
    CTK_CHECK(config.num_reader_threads >= 0, ValueError, "MinibatchSource: num_reader_threads is ",
              config.num_reader_threads, "; it must not be negative");

    const Deserializer& first = *config.deserializers[0];
    const int64_t num_chunks = first.num_chunks();
    // Deserializers chunked alike are joined chunk by chunk; otherwise by sequence key, the first one's
    // chunks being the source's (CNTK's composition).
    bool alike = true;
    for (const DeserializerPtr& d : config.deserializers) {
        alike = alike && d->num_chunks() == num_chunks;
        for (int64_t c = 0; alike && c < num_chunks; ++c)
            alike = d->chunk_num_sequences(c) == first.chunk_num_sequences(c);
    }
    std::vector<std::shared_ptr<const detail::KeyIndex>> key_indexes;
    if (!alike) {
        CTK_CHECK(static_cast<int64_t>(first.sequence_keys(0).size()) == first.chunk_num_sequences(0),
                  ValueError, "MinibatchSource: ", first.description(), " is chunked unlike ",
                  config.deserializers[1]->description(), " and has no sequence keys to join them by");
        key_indexes.push_back(nullptr);
        for (size_t d = 1; d < config.deserializers.size(); ++d)
            key_indexes.push_back(detail::build_key_index(*config.deserializers[d]));
    }
    std::set<std::string> names;
    for (const DeserializerPtr& d : config.deserializers) {
        Impl::Part part{d, m.infos.size(), d->streams().size(), {}};
        if (d->transforms_sequences()) {
            part.seeds = d->transform_engine_seeds();
            m.transforms = true;
        }
        m.parts.push_back(part);
        for (const StreamInformation& s : d->streams()) {
            CTK_CHECK(names.insert(s.name).second, ValueError, "MinibatchSource: stream name '", s.name,
                      "' is used by two deserializers");
            m.infos.push_back(s);
            m.infos.back().id = static_cast<int>(m.infos.size()) - 1;
            if (s.defines_mb_size) {
                CTK_CHECK(m.mb_stream < 0, ValueError,
                          "MinibatchSource: only one stream may define the minibatch size; both '",
                          m.infos[size_t(std::max(m.mb_stream, 0))].name, "' and '", s.name, "' do");
                m.mb_stream = m.infos.back().id;
            }
        }
    }
    int64_t total_samples = 0;
    for (int64_t c = 0; c < num_chunks; ++c) {
        m.sequences_per_chunk.push_back(first.chunk_num_sequences(c));
        m.num_sequences += first.chunk_num_sequences(c);
        total_samples += first.chunk_num_samples(c);
    }
    CTK_CHECK(m.num_sequences > 0, ValueError, "MinibatchSource: ", first.description(),
              " holds no sequences");
    if (config.randomization_window_in_samples > 0) {
        // CNTK's sample-based window, turned into chunks of the average size.
        const double per_chunk = double(total_samples) / double(num_chunks);
        m.window_chunks =
            std::max<int64_t>(1, int64_t(double(config.randomization_window_in_samples) / per_chunk + 0.5));
    } else {
        m.window_chunks = std::max<int64_t>(1, config.randomization_window_in_chunks);
    }
    if (config.multithreaded_deserializer)
        m.pool = std::make_unique<detail::TaskPool>(
            config.num_reader_threads > 0 ? config.num_reader_threads : detail::default_reader_threads());
    m.loader =
        std::make_unique<detail::ChunkLoader>(config.deserializers, m.pool.get(), std::move(key_indexes));
    m.config = std::move(config);
}

MinibatchSource::MinibatchSource() = default;

MinibatchSource::~MinibatchSource() {
    if (impl_) impl_->drop_pending();
}

MinibatchSource::Impl& MinibatchSource::impl(const char* method) const {
    CTK_CHECK(impl_ != nullptr, NotImplementedError, "MinibatchSource::", method,
              ": a minibatch source made without deserializers must implement it");
    return *impl_;
}

const std::vector<StreamInformation>& MinibatchSource::stream_infos() const {
    return impl("stream_infos").infos;
}

const StreamInformation& MinibatchSource::stream_info(const std::string& name) const {
    for (const StreamInformation& s : stream_infos())
        if (s.name == name) return s;
    std::string known;
    for (const StreamInformation& s : stream_infos()) known += (known.empty() ? "'" : ", '") + s.name + "'";
    CTK_THROW(ValueError, "MinibatchSource: no stream named '", name, "'; the streams are ", known);
}

Prepared MinibatchSource::Impl::prepare(const Cursor& from, const Request& request) {
    Prepared out;
    out.request = request;
    out.from = from;
    out.to = from;
    if (exhausted(from)) return out;

    std::shared_ptr<const detail::SweepOrder> ord = order_for(from.sweep);
    const int64_t limit = std::min(request.size, config.max_samples - from.samples_delivered);
    const size_t num_streams = infos.size();

    // Ask the reader threads for this minibatch's chunks first: they read them while the cut waits.
    if (pool) {
        const int64_t ahead = std::min(ord->size(), from.position + std::max<int64_t>(limit, 1));
        for (int64_t p = from.position, last = -1; p < ahead; ++p)
            if (ord->chunk[size_t(p)] != last) loader->prefetch(last = ord->chunk[size_t(p)]);
    }

    // Cut the global minibatch: whole sequences while the counted samples stay within the limit. As in CNTK,
    // a minibatch runs on into the next sweep (it then reports the sweep's end), unless max_sweeps ends the
    // data there.
    std::unordered_map<int64_t, detail::ChunkPtr> chunks;
    struct Taken {
        int64_t position;  // in its sweep
        const std::vector<SequenceData>* sequence;
    };
    std::vector<Taken> taken;
    std::vector<int64_t> totals(num_streams, 0), next(num_streams);
    int64_t counted = 0, sweep = from.sweep, p = from.position;
    int64_t taken_at_sweep_start = -1;  // unknown for the sweep the minibatch starts inside
    bool sweep_end = false;
    // At least one sequence, and one per partition while this sweep has them, so no worker gets nothing.
    const int64_t min_count = std::max<int64_t>(1, std::min(request.partitions, ord->size() - from.position));
    while (true) {
        if (p == ord->size()) {
            sweep_end = true;
            ++sweep;
            p = 0;
            // A whole sweep of skipped sequences (unreadable images) would never fill the minibatch.
            const auto now_taken = static_cast<int64_t>(taken.size());
            if (sweep >= config.max_sweeps || taken_at_sweep_start == now_taken) break;
            taken_at_sweep_start = now_taken;
            ord = order_for(sweep);
        }
        const int64_t c = ord->chunk[size_t(p)];
        auto it = chunks.find(c);
        if (it == chunks.end()) it = chunks.emplace(c, loader->get(c)).first;
        const std::vector<SequenceData>& seq = (*it->second)[size_t(ord->index[size_t(p)])];
        if (std::any_of(seq.begin(), seq.end(), [](const SequenceData& d) { return d.skip; })) {
            ++p;
            continue;
        }
        int64_t measure = 0;
        for (size_t s = 0; s < num_streams; ++s) {
            next[s] = totals[s] + sequence_length(seq[s]);
            measure = std::max(measure, next[s]);
        }
        if (mb_stream >= 0) measure = next[size_t(mb_stream)];
        if (static_cast<int64_t>(taken.size()) >= min_count && measure > limit) break;
        taken.push_back({p, &seq});
        totals = next;
        counted = measure;
        ++p;
    }
    if (p == ord->size() && sweep < config.max_sweeps) {  // the minibatch ended exactly at a sweep's end
        sweep_end = true;
        ++sweep;
        p = 0;
    }

    // This partition's share: the sequences whose position in the sweep is partition_index modulo the
    // count, copied so that transforms can replace their data.
    std::vector<std::vector<SequenceData>> mine;
    for (const Taken& t : taken)
        if (t.position % request.partitions == request.index) mine.push_back(*t.sequence);
    const size_t n = mine.size();

    if (transforms) {
        out.engines.resize(parts.size());
        for (size_t d = 0; d < parts.size(); ++d) {
            if (!parts[d].deserializer->transforms_sequences()) continue;
            out.engines[d].resize(n);
            for (size_t j = 0; j < n; ++j)
                for (size_t k = 0; k < parts[d].seeds.size(); ++k)
                    out.engines[d][j].push_back(engine(d, j, k));
        }
        auto run = [&](int64_t j) {
            for (size_t d = 0; d < parts.size(); ++d) {
                const Part& part = parts[d];
                if (!part.deserializer->transforms_sequences()) continue;
                // The sequence's own chunk and index in this deserializer (they differ from the source's
                // when it is joined by key).
                SequenceData* streams = mine[size_t(j)].data() + part.first_stream;
                if (streams->skip) continue;
                part.deserializer->transform(streams->chunk, streams->index,
                                             std::span<SequenceData>(streams, part.num_streams),
                                             std::span<TransformEngine>(out.engines[d][size_t(j)]));
            }
        };
        if (pool && n > 1)
            pool->parallel_for(static_cast<int64_t>(n), run);
        else
            for (size_t j = 0; j < n; ++j) run(static_cast<int64_t>(j));
    }

    const bool staged = request.device.is_cuda();
    for (size_t s = 0; s < num_streams; ++s) {
        const StreamInformation& info = infos[s];
        std::vector<int64_t> lengths;
        int64_t max_len = mine.empty() ? 1 : 0, frames = 0;
        bool one_hot = !mine.empty() && info.sample_shape.size() == 1;
        for (const auto& seq : mine) {
            lengths.push_back(sequence_length(seq[s]));
            max_len = std::max(max_len, lengths.back());
            frames += lengths.back();
            one_hot = one_hot && seq[s].one_hot_indices.defined();
        }
        MinibatchData mb;
        mb.num_sequences = static_cast<int64_t>(n);
        mb.num_samples = frames;
        mb.sweep_end = sweep_end;
        if (one_hot) {  // every sequence in index form: the minibatch stays one-hot
            Tensor idx = Tensor::full(Shape{static_cast<int64_t>(n), max_len}, -1.0, DataType::i64);
            for (size_t i = 0; i < n; ++i)
                idx.select(0, static_cast<int64_t>(i))
                    .slice(0, 0, lengths[i])
                    .copy_from(mine[i][s].one_hot_indices);
            mb.data = Value::one_hot(idx, info.sample_shape[0], DataType::f32,
                                     std::make_shared<SequenceLayout>(lengths));
            out.data.emplace(info.name, std::move(mb));
            continue;
        }
        Dims dims{static_cast<int64_t>(n), max_len};
        dims.insert(dims.end(), info.sample_shape.begin(), info.sample_shape.end());
        // Staged in pinned memory for a GPU, so the upload is asynchronous.
        Tensor data = staged ? cuda::pinned_empty(Shape(dims), DataType::f32) : Tensor::empty(Shape(dims));
        int64_t sample = 1;
        for (int64_t d : info.sample_shape) sample *= d;
        float* dst = data.data<float>();
        std::fill(dst, dst + data.numel(), 0.0f);
        for (size_t i = 0; i < n; ++i) {
            const SequenceData& sd = mine[i][s];
            if (sd.one_hot_indices.defined()) {  // a one-hot sequence among dense ones: its rows
                const int64_t* q = sd.one_hot_indices.data<int64_t>();
                for (int64_t t = 0; t < lengths[i]; ++t) {
                    CTK_CHECK(q[t] < sample, IndexError, "MinibatchSource: stream '", info.name,
                              "' delivered the one-hot index ", q[t], " for a sample of ", sample, " values");
                    if (q[t] >= 0) dst[(int64_t(i) * max_len + t) * sample + q[t]] = 1.0f;
                }
                continue;
            }
            Tensor src = sd.data.to(DataType::f32).contiguous();
            CTK_CHECK(src.numel() == lengths[i] * sample, ShapeError, "MinibatchSource: stream '", info.name,
                      "' delivered a sequence of shape ", src.shape().to_string(), "; its sample shape is ",
                      dims_to_string(info.sample_shape));
            std::memcpy(dst + int64_t(i) * max_len * sample, src.data<float>(),
                        static_cast<size_t>(src.numel()) * sizeof(float));
        }
        mb.data = Value(data, std::make_shared<SequenceLayout>(lengths));
        out.data.emplace(info.name, std::move(mb));
    }

    out.to.samples_delivered += counted;
    out.to.sweep = sweep;
    out.to.position = p;

    // Drop chunks the sweep no longer reads, then queue the ones of the minibatch after this one.
    if (!exhausted(out.to)) {
        std::shared_ptr<const detail::SweepOrder> now = order_for(out.to.sweep);
        const int64_t pos = out.to.position;
        loader->evict([&](int64_t c) { return now->last_use[size_t(c)] < pos; });
        if (pool) {
            const int64_t span = std::max<int64_t>(static_cast<int64_t>(taken.size()), 1);
            const int64_t ahead = std::min(now->size(), pos + 2 * span + 1);
            for (int64_t q = pos, last = -1; q < ahead; ++q)
                if (now->chunk[size_t(q)] != last) loader->prefetch(last = now->chunk[size_t(q)]);
        }
    }
    return out;
}

void MinibatchSource::Impl::commit(Prepared& p) {
    cursor = p.to;
    for (size_t d = 0; d < p.engines.size(); ++d) {
        if (engines.size() <= d) engines.resize(d + 1);
        auto& committed = engines[d];
        for (size_t j = 0; j < p.engines[d].size(); ++j) {
            if (committed.size() <= j) committed.resize(j + 1);
            committed[j] = std::move(p.engines[d][j]);
        }
    }
}

std::unordered_map<std::string, MinibatchData> MinibatchSource::next_minibatch(
    int64_t minibatch_size_in_samples, int64_t num_partitions, int64_t partition_index, Device device) {
    Impl& m = impl("next_minibatch");
    CTK_CHECK(device_available(device), DeviceError, "next_minibatch: device ", device.to_string(),
              " is not available");
    CTK_CHECK(minibatch_size_in_samples > 0, ValueError, "next_minibatch: minibatch_size_in_samples is ",
              minibatch_size_in_samples, "; it must be positive");
    CTK_CHECK(num_partitions >= 1 && partition_index >= 0 && partition_index < num_partitions, ValueError,
              "next_minibatch: partition_index ", partition_index,
              " is not in [0, num_partitions=", num_partitions, ")");
    const Request request{minibatch_size_in_samples, num_partitions, partition_index, device};

    // The minibatch prepared ahead is used when it was prepared for this request from here; otherwise
    // (the size or the worker changed) it is dropped, and nothing it did is kept.
    Prepared p;
    bool have = false;
    if (m.pending.valid()) {
        p = m.pending.get();
        have = p.request == request && p.from == m.cursor;
    }
    if (!have) p = m.prepare(m.cursor, request);
    if (p.error) std::rethrow_exception(p.error);
    if (p.data.empty() && m.exhausted(m.cursor)) return {};
    m.commit(p);

    // Hand the data over: a GPU gets it by asynchronous copies on the device's ctk stream.
    std::unordered_map<std::string, MinibatchData> result = std::move(p.data);
    if (device.is_cuda())
        for (auto& [name, mb] : result)
            mb.data = mb.data.is_one_hot()
                          ? mb.data.to(device)
                          : Value(cuda::to_device_async(mb.data.data(), device), mb.data.layout());

    // Prepare the next one while the caller trains on this one.
    if (m.pool && !m.exhausted(m.cursor)) {
        const Cursor from = m.cursor;
        m.pending = std::async(std::launch::async, [&m, from, request] {
            try {
                return m.prepare(from, request);
            } catch (...) {
                Prepared failed;
                failed.request = request;
                failed.from = from;
                failed.error = std::current_exception();
                return failed;
            }
        });
    }
    return result;
}

int64_t MinibatchSource::total_samples_delivered() const {
    return impl("total_samples_delivered").cursor.samples_delivered;
}

int64_t MinibatchSource::sweeps_completed() const {
    return impl("sweeps_completed").cursor.sweep;
}

bool MinibatchSource::repeats_forever() const {
    const Impl& m = impl("repeats_forever");
    return m.config.max_samples == kInfinitelyRepeat && m.config.max_sweeps == kInfinitelyRepeat;
}

Dictionary MinibatchSource::checkpoint_state() const {
    const Impl& m = impl("checkpoint_state");
    Dictionary d;
    d.set("version", kStateVersion);
    d.set("sweep", m.cursor.sweep);
    d.set("position_in_sweep", m.cursor.position);
    d.set("samples_delivered", m.cursor.samples_delivered);
    d.set("num_sequences", m.num_sequences);
    d.set("randomization_seed", static_cast<int64_t>(m.config.randomization_seed));
    if (m.transforms) {
        // The transform engines as their draw counts: [deserializer][position][engine].
        DictionaryValue::List parts;
        for (const auto& positions : m.engines) {
            DictionaryValue::List ps;
            for (const auto& engines : positions) {
                DictionaryValue::List draws;
                for (const TransformEngine& e : engines) draws.emplace_back(static_cast<int64_t>(e.draws()));
                ps.emplace_back(std::move(draws));
            }
            parts.emplace_back(std::move(ps));
        }
        d.set("transform_engine_draws", std::move(parts));
    }
    return d;
}

void MinibatchSource::restore_from_checkpoint(const Dictionary& state) {
    Impl& m = impl("restore_from_checkpoint");
    m.drop_pending();
    CTK_CHECK(state.at("version").as_int() == kStateVersion, ValueError,
              "MinibatchSource::restore_from_checkpoint: state version ", state.at("version").as_int(),
              " is not supported (expected ", kStateVersion, ")");
    const int64_t n = state.at("num_sequences").as_int();
    CTK_CHECK(n == m.num_sequences, ValueError,
              "MinibatchSource::restore_from_checkpoint: the state was saved by a "
              "source of ",
              n, " sequences; this one has ", m.num_sequences);
    const int64_t sweep = state.at("sweep").as_int();
    const int64_t position = state.at("position_in_sweep").as_int();
    const int64_t samples = state.at("samples_delivered").as_int();
    CTK_CHECK(sweep >= 0 && position >= 0 && position < m.num_sequences && samples >= 0, ValueError,
              "MinibatchSource::restore_from_checkpoint: invalid position (sweep ", sweep, ", position ",
              position, ", samples ", samples, ")");
    Engines engines;
    if (m.transforms && state.contains("transform_engine_draws")) {
        const auto& parts = state.at("transform_engine_draws").as_list();
        CTK_CHECK(parts.size() <= m.parts.size(), ValueError,
                  "MinibatchSource::restore_from_checkpoint: the state holds transform engines of ",
                  parts.size(), " deserializers; this source has ", m.parts.size());
        for (size_t d = 0; d < parts.size(); ++d) {
            engines.emplace_back();
            const auto& positions = parts[d].as_list();
            for (size_t j = 0; j < positions.size(); ++j) {
                const auto& draws = positions[j].as_list();
                CTK_CHECK(draws.size() == m.parts[d].seeds.size(), ValueError,
                          "MinibatchSource::restore_from_checkpoint: the state holds ", draws.size(),
                          " transform engines for ", m.parts[d].deserializer->description(), ", which has ",
                          m.parts[d].seeds.size());
                engines.back().emplace_back();
                for (size_t k = 0; k < draws.size(); ++k) {
                    TransformEngine e;
                    e.restore(m.parts[d].seeds[k] + static_cast<uint32_t>(j),
                              static_cast<uint64_t>(draws[k].as_int()));
                    engines.back().back().push_back(e);
                }
            }
        }
    }
    // The seed in the state wins: a resumed run must see the order the saved one would have seen.
    m.config.randomization_seed = static_cast<uint64_t>(state.at("randomization_seed").as_int());
    m.cursor = {sweep, position, samples};
    m.engines = std::move(engines);
    m.orders.clear();
    m.loader->evict([](int64_t) { return true; });
}

}  // namespace ctk
