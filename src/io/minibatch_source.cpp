// MinibatchSource: walks sweeps in block-randomized order (sweep_order.h), cuts minibatches of whole
// sequences, splits them among partitions, and pads each stream to [sequences, T, sample...].
// Its position (sweep, position in the sweep, samples delivered) is all a checkpoint needs, because
// each sweep's order is a pure function of the seed and the sweep index.
#include <algorithm>
#include <cstring>
#include <set>
#include <unordered_map>

#include "ctk/cuda.h"
#include "ctk/error.h"
#include "ctk/io.h"
#include "io/chunk_loader.h"
#include "io/io_common.h"
#include "io/sweep_order.h"

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
}

struct MinibatchSource::Impl {
    MinibatchSourceConfig config;
    std::vector<StreamInformation> infos;
    int mb_stream = -1;  // the stream with defines_mb_size, if any
    std::vector<int64_t> sequences_per_chunk;
    int64_t num_sequences = 0;
    int64_t window_chunks = 1;
    std::unique_ptr<detail::ChunkLoader> loader;

    // Position.
    int64_t sweep = 0;
    int64_t position = 0;  // of the next sequence in this sweep's order
    int64_t samples_delivered = 0;

    detail::SweepOrder order;
    int64_t order_sweep = -1;

    const detail::SweepOrder& order_for(int64_t s) {
        if (order_sweep != s) {
            order = detail::make_sweep_order(sequences_per_chunk, config.randomize, window_chunks,
                                             config.randomization_seed, s);
            order_sweep = s;
        }
        return order;
    }

    bool exhausted() const { return samples_delivered >= config.max_samples || sweep >= config.max_sweeps; }
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
    CTK_CHECK(config.randomization_window_in_samples > 0 || config.randomization_window_in_chunks >= 1,
              ValueError, "MinibatchSource: randomization_window_in_chunks is ",
              config.randomization_window_in_chunks, "; it must be at least 1");

    const Deserializer& first = *config.deserializers[0];
    const int64_t num_chunks = first.num_chunks();
    std::set<std::string> names;
    for (const DeserializerPtr& d : config.deserializers) {
        CTK_CHECK(d->num_chunks() == num_chunks, ValueError, "MinibatchSource: ", d->description(), " has ",
                  d->num_chunks(), " chunks but ", first.description(), " has ", num_chunks,
                  "; deserializers are joined chunk by chunk and must agree");
        for (int64_t c = 0; c < num_chunks; ++c)
            CTK_CHECK(d->chunk_num_sequences(c) == first.chunk_num_sequences(c), ValueError,
                      "MinibatchSource: ", d->description(), " has ", d->chunk_num_sequences(c),
                      " sequences in chunk ", c, " but ", first.description(), " has ",
                      first.chunk_num_sequences(c));
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
        m.window_chunks = config.randomization_window_in_chunks;
    }
    m.loader = std::make_unique<detail::ChunkLoader>(config.deserializers, config.multithreaded_deserializer);
    m.config = std::move(config);
}

MinibatchSource::~MinibatchSource() = default;

const std::vector<StreamInformation>& MinibatchSource::stream_infos() const {
    return impl_->infos;
}

const StreamInformation& MinibatchSource::stream_info(const std::string& name) const {
    for (const StreamInformation& s : impl_->infos)
        if (s.name == name) return s;
    std::string known;
    for (const StreamInformation& s : impl_->infos) known += (known.empty() ? "'" : ", '") + s.name + "'";
    CTK_THROW(ValueError, "MinibatchSource: no stream named '", name, "'; the streams are ", known);
}

namespace {
int64_t sequence_length(const SequenceData& d) {
    return d.one_hot_indices.defined() ? d.one_hot_indices.dim(0) : d.data.dim(0);
}
}  // namespace

std::unordered_map<std::string, MinibatchData> MinibatchSource::next_minibatch(
    int64_t minibatch_size_in_samples, int64_t num_partitions, int64_t partition_index, Device device) {
    Impl& m = *impl_;
    CTK_CHECK(device_available(device), DeviceError, "next_minibatch: device ", device.to_string(),
              " is not available");
    CTK_CHECK(minibatch_size_in_samples > 0, ValueError, "next_minibatch: minibatch_size_in_samples is ",
              minibatch_size_in_samples, "; it must be positive");
    CTK_CHECK(num_partitions >= 1 && partition_index >= 0 && partition_index < num_partitions, ValueError,
              "next_minibatch: partition_index ", partition_index,
              " is not in [0, num_partitions=", num_partitions, ")");
    if (m.exhausted()) return {};

    const detail::SweepOrder& order = m.order_for(m.sweep);
    const int64_t limit = std::min(minibatch_size_in_samples, m.config.max_samples - m.samples_delivered);
    // At least one sequence, and one per partition while the sweep has them, so no worker gets nothing.
    const int64_t min_count = std::min(num_partitions, order.size() - m.position);
    const size_t num_streams = m.infos.size();

    // Cut the global minibatch: whole sequences while the counted samples stay within the limit.
    std::unordered_map<int64_t, detail::ChunkPtr> chunks;
    std::vector<const std::vector<SequenceData>*> taken;
    std::vector<int64_t> totals(num_streams, 0), next(num_streams);
    int64_t counted = 0;
    for (int64_t p = m.position; p < order.size(); ++p) {
        const int64_t c = order.chunk[size_t(p)];
        auto it = chunks.find(c);
        if (it == chunks.end()) it = chunks.emplace(c, m.loader->get(c)).first;
        const std::vector<SequenceData>& seq = (*it->second)[size_t(order.index[size_t(p)])];
        int64_t measure = 0;
        for (size_t s = 0; s < num_streams; ++s) {
            next[s] = totals[s] + sequence_length(seq[s]);
            measure = std::max(measure, next[s]);
        }
        if (m.mb_stream >= 0) measure = next[size_t(m.mb_stream)];
        if (static_cast<int64_t>(taken.size()) >= std::max<int64_t>(1, min_count) && measure > limit) break;
        taken.push_back(&seq);
        totals = next;
        counted = measure;
    }
    const int64_t start = m.position;
    const int64_t count = static_cast<int64_t>(taken.size());

    // This partition's share: sequences whose position in the sweep is partition_index modulo the count.
    std::vector<const std::vector<SequenceData>*> mine;
    for (int64_t i = 0; i < count; ++i)
        if ((start + i) % num_partitions == partition_index) mine.push_back(taken[size_t(i)]);

    std::unordered_map<std::string, MinibatchData> result;
    const bool sweep_end = start + count == order.size();
    for (size_t s = 0; s < num_streams; ++s) {
        const StreamInformation& info = m.infos[s];
        std::vector<int64_t> lengths;
        int64_t max_len = mine.empty() ? 1 : 0, frames = 0;
        bool one_hot = !mine.empty() && info.sample_shape.size() == 1;
        for (const auto* seq : mine) {
            lengths.push_back(sequence_length((*seq)[s]));
            max_len = std::max(max_len, lengths.back());
            frames += lengths.back();
            one_hot = one_hot && (*seq)[s].one_hot_indices.defined();
        }
        MinibatchData mb;
        mb.num_sequences = static_cast<int64_t>(mine.size());
        mb.num_samples = frames;
        mb.sweep_end = sweep_end;
        if (one_hot) {  // every sequence in index form: the minibatch stays one-hot
            Tensor idx = Tensor::full(Shape{static_cast<int64_t>(mine.size()), max_len}, -1.0, DataType::i64);
            for (size_t i = 0; i < mine.size(); ++i)
                idx.select(0, static_cast<int64_t>(i))
                    .slice(0, 0, lengths[i])
                    .copy_from((*mine[i])[s].one_hot_indices);
            mb.data = Value::one_hot(idx, info.sample_shape[0], DataType::f32,
                                     std::make_shared<SequenceLayout>(lengths))
                          .to(device);
            result.emplace(info.name, std::move(mb));
            continue;
        }
        Dims dims{static_cast<int64_t>(mine.size()), max_len};
        dims.insert(dims.end(), info.sample_shape.begin(), info.sample_shape.end());
        // Staged in pinned memory for a GPU, so the upload below is asynchronous.
        const bool staged = device.is_cuda();
        Tensor data = staged ? cuda::pinned_empty(Shape(dims), DataType::f32) : Tensor::empty(Shape(dims));
        data.fill(0.0);
        int64_t sample = 1;
        for (int64_t d : info.sample_shape) sample *= d;
        float* out = data.data<float>();
        for (size_t i = 0; i < mine.size(); ++i) {
            const SequenceData& sd = (*mine[i])[s];
            if (sd.one_hot_indices.defined()) {  // a one-hot sequence among dense ones: its rows
                const int64_t* p = sd.one_hot_indices.data<int64_t>();
                for (int64_t t = 0; t < lengths[i]; ++t) {
                    CTK_CHECK(p[t] < sample, IndexError, "MinibatchSource: stream '", info.name,
                              "' delivered the one-hot index ", p[t], " for a sample of ", sample, " values");
                    if (p[t] >= 0) out[(int64_t(i) * max_len + t) * sample + p[t]] = 1.0f;
                }
                continue;
            }
            Tensor src = sd.data.to(DataType::f32).contiguous();
            CTK_CHECK(src.numel() == lengths[i] * sample, ShapeError, "MinibatchSource: stream '", info.name,
                      "' delivered a sequence of shape ", src.shape().to_string(), "; its sample shape is ",
                      dims_to_string(info.sample_shape));
            std::memcpy(out + int64_t(i) * max_len * sample, src.data<float>(),
                        static_cast<size_t>(src.numel()) * sizeof(float));
        }
        mb.data = Value(staged ? cuda::to_device_async(data, device) : data,
                        std::make_shared<SequenceLayout>(lengths));
        result.emplace(info.name, std::move(mb));
    }

    // Advance.
    m.samples_delivered += counted;
    m.position += count;
    if (sweep_end) {
        ++m.sweep;
        m.position = 0;
    }

    // Drop chunks this sweep no longer reads, then ask the worker for the ones coming next.
    const detail::SweepOrder& now = m.order_for(m.sweep);
    const int64_t pos = m.position;
    if (!sweep_end) m.loader->evict([&](int64_t c) { return now.last_use[size_t(c)] < pos; });
    if (m.config.multithreaded_deserializer && !m.exhausted()) {
        const int64_t ahead = std::min(now.size(), pos + 2 * count + 1);
        int64_t last = -1;
        for (int64_t p = pos; p < ahead; ++p) {
            const int64_t c = now.chunk[size_t(p)];
            if (c != last) m.loader->prefetch(c);
            last = c;
        }
    }
    return result;
}

int64_t MinibatchSource::total_samples_delivered() const {
    return impl_->samples_delivered;
}

int64_t MinibatchSource::sweeps_completed() const {
    return impl_->sweep;
}

bool MinibatchSource::repeats_forever() const {
    return impl_->config.max_samples == kInfinitelyRepeat && impl_->config.max_sweeps == kInfinitelyRepeat;
}

Dictionary MinibatchSource::checkpoint_state() const {
    const Impl& m = *impl_;
    Dictionary d;
    d.set("version", kStateVersion);
    d.set("sweep", m.sweep);
    d.set("position_in_sweep", m.position);
    d.set("samples_delivered", m.samples_delivered);
    d.set("num_sequences", m.num_sequences);
    d.set("randomization_seed", static_cast<int64_t>(m.config.randomization_seed));
    return d;
}

void MinibatchSource::restore_from_checkpoint(const Dictionary& state) {
    Impl& m = *impl_;
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
    // The seed in the state wins: a resumed run must see the order the saved one would have seen.
    m.config.randomization_seed = static_cast<uint64_t>(state.at("randomization_seed").as_int());
    m.sweep = sweep;
    m.position = position;
    m.samples_delivered = samples;
    m.order_sweep = -1;
    m.loader->evict([](int64_t) { return true; });
}

}  // namespace ctk
