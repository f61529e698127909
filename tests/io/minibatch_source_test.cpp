// MinibatchSource: block randomization (every sequence once per sweep, a new order each sweep, the same
// order for the same seed), file order without randomization, minibatch cuts, max_samples/max_sweeps,
// partitions, checkpoint restore, threaded == unthreaded, and errors raised on the prefetch worker.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <numeric>
#include <set>

#include "ctk/core/cuda.h"
#include "ctk/io.h"
#include "io/io_test_util.h"

namespace ctk {
namespace {

using test::error_of;
using test::TempDir;

// Sequences numbered 0..n-1 in chunks of the given sizes. Stream "id" holds the number in every frame,
// stream "x" two values per frame; sequence i has length lengths(i).
class FakeDeserializer final : public Deserializer {
public:
    FakeDeserializer(std::vector<int64_t> chunk_sizes, int64_t max_len = 1, int64_t fail_chunk = -1)
        : sizes_(std::move(chunk_sizes)), max_len_(max_len), fail_chunk_(fail_chunk) {
        int64_t first = 0;
        for (int64_t s : sizes_) first_.push_back(first), first += s;
        infos_.push_back({"id", 0, {1}, DataType::f32, false, false});
        infos_.push_back({"x", 1, {2}, DataType::f32, false, false});
    }
    const std::vector<StreamInformation>& streams() const override { return infos_; }
    int64_t num_chunks() const override { return static_cast<int64_t>(sizes_.size()); }
    int64_t chunk_num_sequences(int64_t c) const override { return sizes_[size_t(c)]; }
    int64_t chunk_num_samples(int64_t c) const override {
        int64_t n = 0;
        for (int64_t i = 0; i < sizes_[size_t(c)]; ++i) n += length(first_[size_t(c)] + i);
        return n;
    }
    std::string description() const override { return "fake"; }
    std::vector<std::vector<SequenceData>> read_chunk(int64_t c) const override {
        ++reads;
        if (c == fail_chunk_) throw IOError("fake: chunk " + std::to_string(c) + " is unreadable");
        std::vector<std::vector<SequenceData>> out;
        for (int64_t i = 0; i < sizes_[size_t(c)]; ++i) {
            const int64_t id = first_[size_t(c)] + i, len = length(id);
            Tensor ids = Tensor::full(Shape{len, 1}, double(id));
            Tensor x = Tensor::arange(Shape{len, 2});
            out.push_back({SequenceData{ids, {}}, SequenceData{x, {}}});
        }
        return out;
    }
    int64_t length(int64_t id) const { return 1 + (id * 7) % max_len_; }
    mutable std::atomic<int> reads{0};

private:
    std::vector<int64_t> sizes_, first_;
    int64_t max_len_, fail_chunk_;
    std::vector<StreamInformation> infos_;
};

std::vector<int64_t> ids_of(const std::unordered_map<std::string, MinibatchData>& mb) {
    std::vector<int64_t> ids;
    const Value& v = mb.at("id").data;
    for (int64_t i = 0; i < v.data().dim(0); ++i) ids.push_back(static_cast<int64_t>(v.data().at({i, 0, 0})));
    return ids;
}

MinibatchSourceConfig config_for(DeserializerPtr d, bool randomize = true, uint64_t seed = 0,
                                 int64_t window = 3) {
    MinibatchSourceConfig c;
    c.deserializers = {std::move(d)};
    c.randomize = randomize;
    c.randomization_seed = seed;
    c.randomization_window_in_chunks = window;
    return c;
}

// The ids of one sweep of `d`, read in minibatches of `mb` samples (the last one asks for what is left
// of the sweep, as CNTK's scripts ask for what is left of an epoch: a minibatch runs on into the next
// sweep otherwise).
std::vector<int64_t> read_sweep(MinibatchSource& src, int64_t mb, const Deserializer& d) {
    int64_t left = 0;
    for (int64_t c = 0; c < d.num_chunks(); ++c) left += d.chunk_num_samples(c);
    std::vector<int64_t> ids;
    while (left > 0) {
        auto batch = src.next_minibatch(std::min(mb, left));
        EXPECT_FALSE(batch.empty());
        if (batch.empty()) break;
        auto got = ids_of(batch);
        ids.insert(ids.end(), got.begin(), got.end());
        left -= batch.at("id").num_samples;
        EXPECT_EQ(batch.at("id").sweep_end, left == 0);
    }
    return ids;
}

std::vector<int64_t> iota_n(int64_t n) {
    std::vector<int64_t> v(static_cast<size_t>(n));
    std::iota(v.begin(), v.end(), int64_t{0});
    return v;
}

TEST(MinibatchSource, EverySequenceOncePerSweepInANewOrderEachSweep) {
    auto d = std::make_shared<FakeDeserializer>(std::vector<int64_t>{37, 37, 20, 37, 37, 5, 37, 37, 37, 30});
    MinibatchSource src(config_for(d));
    const int64_t n = 37 * 7 + 20 + 5 + 30;
    std::vector<std::vector<int64_t>> sweeps;
    for (int s = 0; s < 3; ++s) {
        sweeps.push_back(read_sweep(src, 16, *d));
        EXPECT_EQ(src.sweeps_completed(), s + 1);
        std::vector<int64_t> sorted = sweeps.back();
        std::sort(sorted.begin(), sorted.end());
        EXPECT_EQ(sorted, iota_n(n));
        EXPECT_NE(sweeps.back(), iota_n(n));
    }
    EXPECT_NE(sweeps[0], sweeps[1]);
    EXPECT_NE(sweeps[1], sweeps[2]);
    EXPECT_EQ(src.total_samples_delivered(), 3 * n);

    // Same seed, same order; another seed, another order.
    MinibatchSource again(config_for(d));
    EXPECT_EQ(read_sweep(again, 100, *d), sweeps[0]);
    MinibatchSource other(config_for(d, true, 5));
    EXPECT_NE(read_sweep(other, 16, *d), sweeps[0]);
}

TEST(MinibatchSource, WindowOfOneChunkKeepsEachChunkTogether) {
    auto d = std::make_shared<FakeDeserializer>(std::vector<int64_t>{10, 10, 10, 10, 10});
    MinibatchSource src(config_for(d, true, 1, 1));
    const auto ids = read_sweep(src, 7, *d);
    ASSERT_EQ(ids.size(), 50u);
    for (size_t block = 0; block < 5; ++block) {
        std::set<int64_t> chunks;
        for (size_t i = 0; i < 10; ++i) chunks.insert(ids[block * 10 + i] / 10);
        EXPECT_EQ(chunks.size(), 1u) << "block " << block;
    }
    EXPECT_NE(ids, iota_n(50));
}

TEST(MinibatchSource, NoRandomizationGivesFileOrder) {
    auto d = std::make_shared<FakeDeserializer>(std::vector<int64_t>{4, 3, 5});
    MinibatchSource src(config_for(d, false));
    EXPECT_EQ(read_sweep(src, 5, *d), iota_n(12));
    EXPECT_EQ(read_sweep(src, 3, *d), iota_n(12));
    // CNTK's window of 0 chunks is no randomization too.
    MinibatchSourceConfig c = config_for(d, true, 0, 0);
    MinibatchSource zero(c);
    EXPECT_EQ(read_sweep(zero, 5, *d), iota_n(12));
}

TEST(MinibatchSource, AMinibatchRunsOnIntoTheNextSweep) {
    // CNTK's: 12 samples in minibatches of 5 are 0-4, 5-9, then 10 11 0 1 2 (reporting the sweep's end),
    // then 3-7; with max_sweeps the data ends at the last sweep's end instead.
    auto d = std::make_shared<FakeDeserializer>(std::vector<int64_t>{4, 3, 5});
    MinibatchSource src(config_for(d, false));
    std::vector<std::vector<int64_t>> got;
    std::vector<bool> ends;
    for (int i = 0; i < 4; ++i) {
        auto mb = src.next_minibatch(5);
        got.push_back(ids_of(mb));
        ends.push_back(mb.at("id").sweep_end);
    }
    EXPECT_EQ(got, (std::vector<std::vector<int64_t>>{
                       {0, 1, 2, 3, 4}, {5, 6, 7, 8, 9}, {10, 11, 0, 1, 2}, {3, 4, 5, 6, 7}}));
    EXPECT_EQ(ends, (std::vector<bool>{false, false, true, false}));
    EXPECT_EQ(src.sweeps_completed(), 1);
    EXPECT_EQ(src.total_samples_delivered(), 20);
    // A minibatch larger than a sweep spans several (CNTK's test_large_minibatch).
    MinibatchSource large(config_for(d, false));
    auto mb = large.next_minibatch(30);
    EXPECT_EQ(mb.at("id").num_samples, 30);
    EXPECT_TRUE(mb.at("id").sweep_end);
    EXPECT_EQ(large.sweeps_completed(), 2);
    MinibatchSourceConfig c = config_for(d, false);
    c.max_sweeps = 1;
    MinibatchSource once(c);
    EXPECT_EQ(once.next_minibatch(30).at("id").num_samples, 12);
    EXPECT_TRUE(once.next_minibatch(30).empty());
}

TEST(MinibatchSource, MinibatchesAreWholeSequencesWithinTheSize) {
    auto d = std::make_shared<FakeDeserializer>(std::vector<int64_t>{30, 30}, 5);
    MinibatchSource src(config_for(d, false));
    int64_t delivered = 0;
    for (;;) {
        auto mb = src.next_minibatch(9);
        const MinibatchData& id = mb.at("id");
        const auto& layout = *id.data.layout();
        EXPECT_LE(id.num_samples, 9);
        EXPECT_EQ(id.num_samples, layout.num_frames());
        const auto ids = ids_of(mb);
        for (size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(layout.lengths()[i], d->length(ids[i]));
        // The next sequence would not have fit (unless the sweep ended).
        if (!id.sweep_end) {
            EXPECT_GT(id.num_samples + d->length(ids.back() + 1), 9);
        }
        // Padding is zero.
        const Tensor& x = mb.at("x").data.data();
        EXPECT_EQ(x.dim(1), layout.max_length());
        for (size_t i = 0; i < ids.size(); ++i)
            for (int64_t t = layout.lengths()[i]; t < layout.max_length(); ++t)
                EXPECT_EQ(x.at({int64_t(i), t, 1}), 0.0);
        delivered += id.num_samples;
        if (id.sweep_end) break;
    }
    EXPECT_EQ(delivered, src.total_samples_delivered());
    // A sequence longer than the minibatch still comes, alone.
    MinibatchSource one(config_for(d, false));
    auto mb = one.next_minibatch(1);
    EXPECT_EQ(mb.at("id").num_sequences, 1);
}

TEST(MinibatchSource, MaxSamplesAndMaxSweeps) {
    auto d = std::make_shared<FakeDeserializer>(std::vector<int64_t>{10, 10});
    MinibatchSourceConfig c = config_for(d);
    c.max_samples = 25;
    MinibatchSource src(c);
    int64_t total = 0, batches = 0;
    for (auto mb = src.next_minibatch(7); !mb.empty(); mb = src.next_minibatch(7), ++batches)
        total += mb.at("id").num_samples;
    EXPECT_EQ(total, 25);
    EXPECT_EQ(src.total_samples_delivered(), 25);
    EXPECT_TRUE(src.next_minibatch(7).empty());

    c = config_for(d);
    c.max_sweeps = 2;
    MinibatchSource sweeps(c);
    int ends = 0;
    for (auto mb = sweeps.next_minibatch(6); !mb.empty(); mb = sweeps.next_minibatch(6))
        ends += mb.at("x").sweep_end;
    EXPECT_EQ(ends, 2);
    EXPECT_EQ(sweeps.sweeps_completed(), 2);
    EXPECT_EQ(sweeps.total_samples_delivered(), 40);

    c.max_samples = 5;
    EXPECT_THROW(MinibatchSource{c}, ValueError);
    c.max_sweeps = kInfinitelyRepeat;
    c.max_samples = kFullDataSweep;
    MinibatchSource full(c);
    EXPECT_EQ(read_sweep(full, 100, *d).size(), 20u);
    EXPECT_TRUE(full.next_minibatch(100).empty());
}

TEST(MinibatchSource, PartitionsAreDisjointAndCover) {
    auto d = std::make_shared<FakeDeserializer>(std::vector<int64_t>{13, 17, 11}, 3);
    const int64_t k = 3;
    std::vector<std::vector<int64_t>> parts(k);
    std::vector<int64_t> delivered(k);
    for (int64_t w = 0; w < k; ++w) {
        MinibatchSource src(config_for(d, true, 9));
        int64_t sweep = 0;
        for (int64_t c = 0; c < d->num_chunks(); ++c) sweep += d->chunk_num_samples(c);
        for (;;) {  // one sweep (asking for no more than is left of it: a minibatch runs on otherwise)
            auto mb = src.next_minibatch(std::min<int64_t>(12, sweep - src.total_samples_delivered()), k, w);
            auto ids = ids_of(mb);
            if (!mb.at("id").sweep_end) {
                EXPECT_FALSE(ids.empty());
            }
            parts[size_t(w)].insert(parts[size_t(w)].end(), ids.begin(), ids.end());
            if (mb.at("id").sweep_end) break;
        }
        delivered[size_t(w)] = src.total_samples_delivered();
    }
    std::vector<int64_t> all;
    for (const auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(all, iota_n(41));             // disjoint and covering
    EXPECT_EQ(delivered[0], delivered[1]);  // the global count, the same on every worker
    EXPECT_EQ(delivered[1], delivered[2]);
    EXPECT_GT(parts[0].size(), 10u);
    EXPECT_THROW(MinibatchSource(config_for(d)).next_minibatch(4, 2, 2), ValueError);
}

TEST(MinibatchSource, CheckpointRestoreDeliversTheSameMinibatches) {
    auto d = std::make_shared<FakeDeserializer>(std::vector<int64_t>{9, 9, 9, 9}, 4);
    for (int threaded = 0; threaded < 2; ++threaded) {
        MinibatchSourceConfig c = config_for(d, true, 3, 2);
        c.multithreaded_deserializer = threaded;
        MinibatchSource src(c);
        for (int i = 0; i < 11; ++i) src.next_minibatch(7);  // into the second sweep
        // (Through a checkpoint file: TrainingSession's checkpoint tests.)
        const Dictionary state = src.checkpoint_state();
        std::vector<std::vector<float>> expected;
        for (int i = 0; i < 15; ++i)
            expected.push_back(src.next_minibatch(7).at("x").data.data().to_vector<float>());
        const int64_t samples = src.total_samples_delivered();

        MinibatchSource restored(c);
        restored.next_minibatch(3);  // a position that the restore must replace
        restored.restore_from_checkpoint(state);
        for (int i = 0; i < 15; ++i) {
            auto mb = restored.next_minibatch(7);
            EXPECT_EQ(mb.at("x").data.data().to_vector<float>(), expected[size_t(i)]) << "minibatch " << i;
        }
        EXPECT_EQ(restored.total_samples_delivered(), samples);
        EXPECT_EQ(restored.sweeps_completed(), src.sweeps_completed());
    }
}

TEST(MinibatchSource, ThreadedAndUnthreadedAgree) {
    TempDir dir;
    std::string text;
    for (int s = 0; s < 300; ++s)
        for (int l = 0; l <= s % 4; ++l)
            text += std::to_string(s) + " |a " + std::to_string(s) + " " + std::to_string(l) + " |b " +
                    std::to_string(s % 5) + ":1\n";
    test::write_file(dir.file("t.ctf"), text);
    std::vector<StreamDef> defs{{"a", "a", {2}, false, false}, {"b", "b", {5}, true, false}};
    std::vector<std::vector<std::vector<float>>> runs;
    for (int threaded = 0; threaded < 2; ++threaded) {
        MinibatchSourceConfig c = config_for(ctf_deserializer(dir.file("t.ctf"), defs, 500), true, 11, 4);
        c.multithreaded_deserializer = threaded;
        c.max_sweeps = 3;
        MinibatchSource src(c);
        runs.emplace_back();
        for (auto mb = src.next_minibatch(20); !mb.empty(); mb = src.next_minibatch(20)) {
            runs.back().push_back(mb.at("a").data.data().to_vector<float>());
            runs.back().push_back(mb.at("b").data.data().to_vector<float>());
        }
        EXPECT_EQ(src.sweeps_completed(), 3);
    }
    EXPECT_GT(runs[0].size(), 50u);
    EXPECT_EQ(runs[0], runs[1]);
}

// Minibatches for a GPU (dense ones staged in pinned memory and uploaded asynchronously, one-hot ones
// moved) hold what the CPU's hold; a device that is not there is refused by name.
TEST(MinibatchSource, DataOnTheRequestedDevice) {
    TempDir dir;
    std::string text;
    for (int s = 0; s < 40; ++s)
        for (int l = 0; l <= s % 3; ++l)
            text += std::to_string(s) + " |a " + std::to_string(s) + " " + std::to_string(l) + " |b " +
                    std::to_string(s % 5) + ":1\n";
    test::write_file(dir.file("t.ctf"), text);
    const std::vector<StreamDef> defs{{"a", "a", {2}, false, false}, {"b", "b", {5}, true, false}};
    auto source = [&] {
        MinibatchSourceConfig c = config_for(ctf_deserializer(dir.file("t.ctf"), defs, 200), true, 5, 2);
        c.max_sweeps = 2;
        return std::make_unique<MinibatchSource>(c);
    };
    std::vector<std::vector<float>> on_cpu;
    auto cpu = source();
    for (auto mb = cpu->next_minibatch(16, 1, 0, Device::cpu()); !mb.empty();
         mb = cpu->next_minibatch(16, 1, 0, Device::cpu())) {
        for (const char* stream : {"a", "b"}) {
            EXPECT_TRUE(mb.at(stream).data.device().is_cpu());
            on_cpu.push_back(mb.at(stream).data.data().to_vector<float>());
        }
    }
    EXPECT_GT(on_cpu.size(), 10u);
    if (!cuda::is_available()) {
        const std::string msg =
            error_of<DeviceError>([&] { source()->next_minibatch(16, 1, 0, Device::cuda(0)); });
        EXPECT_NE(msg.find("next_minibatch"), std::string::npos) << msg;
        EXPECT_NE(msg.find(Device::cuda(0).to_string()), std::string::npos) << msg;
        return;
    }
    for (int g = 0; g < cuda::device_count(); ++g) {
        std::vector<std::vector<float>> on_gpu;
        auto src = source();
        for (auto mb = src->next_minibatch(16, 1, 0, Device::cuda(g)); !mb.empty();
             mb = src->next_minibatch(16, 1, 0, Device::cuda(g))) {
            for (const char* stream : {"a", "b"}) {
                EXPECT_EQ(mb.at(stream).data.device(), Device::cuda(g));
                on_gpu.push_back(mb.at(stream).data.data().to(Device::cpu()).to_vector<float>());
            }
        }
        EXPECT_EQ(on_gpu, on_cpu) << Device::cuda(g).to_string();
    }
}

TEST(MinibatchSource, ErrorsOnTheWorkerReachTheCaller) {
    for (int threaded = 0; threaded < 2; ++threaded) {
        auto d = std::make_shared<FakeDeserializer>(std::vector<int64_t>{5, 5, 5, 5}, 1, 2);
        MinibatchSourceConfig c = config_for(d, false);
        c.multithreaded_deserializer = threaded;
        MinibatchSource src(c);
        const std::string msg = error_of<IOError>([&] {
            for (int i = 0; i < 10; ++i) src.next_minibatch(3);
        });
        EXPECT_NE(msg.find("chunk 2 is unreadable"), std::string::npos) << msg;
    }
}

TEST(MinibatchSource, StreamsAsBatchAndLookups) {
    auto d = std::make_shared<FakeDeserializer>(std::vector<int64_t>{6}, 3);
    MinibatchSource src(config_for(d, false));
    EXPECT_EQ(src.stream_infos().size(), 2u);
    EXPECT_EQ(src.stream_info("x").sample_shape, (Dims{2}));
    const std::string msg = error_of<ValueError>([&] { src.stream_info("features"); });
    EXPECT_NE(msg.find("'features'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'id', 'x'"), std::string::npos) << msg;

    auto mb = src.next_minibatch(12);  // lengths 1, 2, 3, 1, 2, 3: one sweep
    EXPECT_EQ(mb.at("x").data.data().shape(), (Shape{6, 3, 2}));
    const std::string e = error_of<ValueError>([&] { mb.at("x").as_batch("x"); });
    EXPECT_NE(e.find("'x'"), std::string::npos) << e;

    auto flat = std::make_shared<FakeDeserializer>(std::vector<int64_t>{4});
    MinibatchSource one(config_for(flat, false));
    Value v = one.next_minibatch(3).at("x").as_batch("x");
    EXPECT_EQ(v.data().shape(), (Shape{3, 2}));
    EXPECT_FALSE(v.has_layout());
}

TEST(MinibatchSource, EndToEndOnMnistIdx) {
    TempDir dir;
    std::vector<uint8_t> pixels(30 * 4), labels(30);
    for (size_t i = 0; i < 30; ++i) {
        labels[i] = static_cast<uint8_t>(i % 10);
        for (size_t k = 0; k < 4; ++k) pixels[i * 4 + k] = static_cast<uint8_t>(i);
    }
    test::write_gz(dir.file("img.gz"), test::idx_images(30, 2, 2, pixels));
    test::write_gz(dir.file("lab.gz"), test::idx_labels(labels));
    MinibatchSourceConfig c =
        config_for(mnist_idx_deserializer(dir.file("img.gz"), dir.file("lab.gz")), true, 2);
    MinibatchSource src(c);
    std::set<int> seen;
    for (;;) {
        auto mb = src.next_minibatch(8);
        const Tensor f = mb.at("features").as_batch("features").data();
        const Tensor l = mb.at("labels").as_batch("labels").data();
        for (int64_t i = 0; i < f.dim(0); ++i) {
            const int id = static_cast<int>(f.at({i, 3}));
            seen.insert(id);
            EXPECT_EQ(l.at({i, id % 10}), 1.0);
        }
        if (mb.at("labels").sweep_end) break;
    }
    EXPECT_EQ(seen.size(), 30u);
}

}  // namespace
}  // namespace ctk
