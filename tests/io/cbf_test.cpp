// CBF: CNTK's own CBF files (tests/data/cntk/cbf) read whole; CTF -> convert_ctf_to_cbf -> reader gives
// the CTF reader's minibatches (dense, sparse, one-hot, sequences of different lengths per stream, small
// chunks so that sweeps cross chunks); ctf2bin's chunking bug reproduced on request; renamed streams;
// and truncated or corrupt files refused with errors naming the file.
#include <gtest/gtest.h>

#include <filesystem>

#include <cstring>
#include <map>

#include "ctk/io.h"
#include "ctk/io/cbf.h"
#include "io/io_test_util.h"

namespace ctk {
namespace {

using test::error_of;
using test::TempDir;

std::string cntk_file(const std::string& name) {
    return std::string(CTK_TEST_DATA_DIR) + "/cntk/cbf/" + name;
}

TEST(CbfDeserializer, ReadsCntksFiles) {
    struct Expected {
        const char* file;
        int64_t dim;
        bool sparse;
        int64_t sequences, samples;
    };
    for (const Expected& e :
         {Expected{"10x10_dense.bin", 5, false, 10, 100}, Expected{"10x10_sparse.bin", 100, true, 10, 100},
          Expected{"50x20_jagged_sequences_dense.bin", 3, false, 50, 508},
          Expected{"50x20_jagged_sequences_sparse.bin", 100, true, 50, 564}}) {
        SCOPED_TRACE(e.file);
        auto d = cbf_deserializer(cntk_file(e.file));
        ASSERT_EQ(d->streams().size(), 1u);
        EXPECT_EQ(d->streams()[0].name, "features");
        EXPECT_EQ(d->streams()[0].sample_shape, (Dims{e.dim}));
        EXPECT_EQ(d->streams()[0].is_sparse, e.sparse);
        int64_t sequences = 0, samples = 0;
        for (int64_t c = 0; c < d->num_chunks(); ++c) {
            const auto chunk = d->read_chunk(c);
            sequences += static_cast<int64_t>(chunk.size());
            for (const auto& seq : chunk) {
                const SequenceData& s = seq[0];
                samples += s.one_hot_indices.defined() ? s.one_hot_indices.numel() : s.data.dim(0);
                if (s.one_hot_indices.defined()) {
                    for (int64_t i : s.one_hot_indices.to_vector<int64_t>()) ASSERT_LT(i, e.dim);
                }
            }
        }
        EXPECT_EQ(sequences, e.sequences);
        EXPECT_EQ(samples, e.samples);
    }
    // The jagged dense file holds float64 values (read as float32): its first sample.
    const auto first = cbf_deserializer(cntk_file("50x20_jagged_sequences_dense.bin"))->read_chunk(0)[0][0];
    ASSERT_EQ(first.data.dim(0), 5);
    const std::vector<float> v = first.data.to_vector<float>();
    EXPECT_FLOAT_EQ(v[0], 0.718365f);
    EXPECT_FLOAT_EQ(v[1], 1439.25f);
    EXPECT_FLOAT_EQ(v[2], -144.038f);
    // Through a MinibatchSource, a whole sweep of the jagged file.
    MinibatchSourceConfig c;
    c.deserializers = {
        cbf_deserializer(cntk_file("50x20_jagged_sequences_dense.bin"), {{"x", "features", {}, false}})};
    c.max_sweeps = 1;
    MinibatchSource src(c);
    EXPECT_EQ(src.stream_info("x").sample_shape, (Dims{3}));
    int64_t total = 0;
    for (auto mb = src.next_minibatch(64); !mb.empty(); mb = src.next_minibatch(64))
        total += mb.at("x").num_samples;
    EXPECT_EQ(total, 508);
}

// A CTF file: sequences of 1..4 samples; a dense stream (dim 3), a sparse one-hot stream (dim 7) and a
// sparse stream with real values (dim 6) whose lengths differ from the others'.
std::string ctf_text(int sequences) {
    std::string t;
    for (int s = 0; s < sequences; ++s) {
        const int len = 1 + (s * 3) % 4;
        for (int i = 0; i < len; ++i) {
            t += std::to_string(s) + " |a " + std::to_string(s) + " " + std::to_string(i) + " " +
                 std::to_string(-s * i) + " |b " + std::to_string((s + i) % 7) + ":1";
            if (i < 2) t += " |c " + std::to_string(i) + ":" + std::to_string(0.5 * s) + " 5:-2";
            t += "\n";
        }
    }
    return t;
}

const std::vector<CbfStream> kStreams = {{"a", "a", false, 3}, {"b", "b", true, 7}, {"c", "c", true, 6}};

std::vector<std::map<std::string, std::vector<float>>> minibatches(const DeserializerPtr& d, int64_t size) {
    MinibatchSourceConfig c;
    c.deserializers = {d};
    c.randomize = false;
    c.max_sweeps = 2;
    MinibatchSource src(c);
    std::vector<std::map<std::string, std::vector<float>>> out;
    for (auto mb = src.next_minibatch(size); !mb.empty(); mb = src.next_minibatch(size)) {
        out.emplace_back();
        for (auto& [name, data] : mb) out.back()[name] = data.data.data().to_vector<float>();
    }
    return out;
}

TEST(CbfDeserializer, GivesWhatTheCtfReaderGives) {
    TempDir dir;
    test::write_file(dir.file("in.ctf"), ctf_text(23));
    std::vector<StreamDef> defs;
    for (const CbfStream& s : kStreams)
        defs.push_back(StreamDef{s.name, s.field, {s.dim}, s.is_sparse, false});
    const auto expected = minibatches(ctf_deserializer(dir.file("in.ctf"), defs), 9);
    for (int64_t chunk : {int64_t(40), int64_t(300), int64_t(32) << 20}) {
        SCOPED_TRACE(chunk);
        EXPECT_EQ(convert_ctf_to_cbf(dir.file("in.ctf"), dir.file("out.bin"), kStreams, chunk), 23);
        auto cbf = cbf_deserializer(dir.file("out.bin"));
        if (chunk == 40) {
            EXPECT_GT(cbf->num_chunks(), 3);
        }
        EXPECT_TRUE(cbf->streams()[1].is_sparse);
        EXPECT_EQ(minibatches(cbf, 9), expected);
    }
    // The file is written chunk by chunk through a temporary: a conversion that fails part way (a bad
    // line after the first chunks) leaves neither a half file nor the temporary.
    test::write_file(dir.file("bad.ctf"), ctf_text(23) + "|a 1 oops 3\n");
    EXPECT_THROW(convert_ctf_to_cbf(dir.file("bad.ctf"), dir.file("bad.bin"), kStreams, 40), IOError);
    EXPECT_FALSE(std::filesystem::exists(dir.file("bad.bin")));
    EXPECT_FALSE(std::filesystem::exists(dir.file("bad.bin.tmp")));
    // The streams found by reading the file are the declared ones.
    const auto inferred = infer_ctf_streams(dir.file("in.ctf"));
    ASSERT_EQ(inferred.size(), 3u);
    for (size_t i = 0; i < 3; ++i) {
        EXPECT_EQ(inferred[i].name, kStreams[i].name);
        EXPECT_EQ(inferred[i].is_sparse, kStreams[i].is_sparse);
        EXPECT_EQ(inferred[i].dim, kStreams[i].dim);
    }
}

TEST(CbfDeserializer, LegacyChunkingIsCntksCtf2bin) {
    TempDir dir;
    std::string t;
    for (int s = 0; s < 20; ++s) t += std::to_string(s) + " |x " + std::to_string(s) + " 1 2\n";
    test::write_file(dir.file("in.ctf"), t);
    const std::vector<CbfStream> x = {{"x", "x", false, 3}};
    // Each sequence is 12 bytes: with 40-byte chunks, four sequences a chunk; ctf2bin's estimate never
    // reset, so after its first chunk every chunk held one sequence.
    convert_ctf_to_cbf(dir.file("in.ctf"), dir.file("fixed.bin"), x, 40);
    convert_ctf_to_cbf(dir.file("in.ctf"), dir.file("legacy.bin"), x, 40, true);
    auto fixed = cbf_deserializer(dir.file("fixed.bin")), legacy = cbf_deserializer(dir.file("legacy.bin"));
    EXPECT_EQ(fixed->num_chunks(), 5);
    ASSERT_EQ(legacy->num_chunks(), 17);
    EXPECT_EQ(legacy->chunk_num_sequences(0), 4);
    for (int64_t c = 1; c < 17; ++c) EXPECT_EQ(legacy->chunk_num_sequences(c), 1);
}

TEST(CbfDeserializer, RenamesStreamsAsCntk) {
    TempDir dir;
    test::write_file(dir.file("in.ctf"), ctf_text(3));
    convert_ctf_to_cbf(dir.file("in.ctf"), dir.file("out.bin"), kStreams);
    auto d = cbf_deserializer(dir.file("out.bin"), {StreamDef{"labels", "b", {}, false, false}});
    EXPECT_EQ(d->streams()[0].name, "a");
    EXPECT_EQ(d->streams()[1].name, "labels");
    EXPECT_NE(error_of<ValueError>([&] {
                  cbf_deserializer(dir.file("out.bin"), {StreamDef{"y", "z", {}, false, false}});
              }).find("has no stream 'z'; its streams are 'a', 'b', 'c'"),
              std::string::npos);
}

TEST(CbfDeserializer, BrokenFilesNameTheFile) {
    TempDir dir;
    test::write_file(dir.file("in.ctf"), ctf_text(5));
    convert_ctf_to_cbf(dir.file("in.ctf"), dir.file("good.bin"), kStreams);
    const std::string good = test::read_bytes(dir.file("good.bin"));
    auto load_all = [&](const std::string& bytes) {
        test::write_file(dir.file("bad.bin"), bytes);
        auto d = cbf_deserializer(dir.file("bad.bin"));
        for (int64_t c = 0; c < d->num_chunks(); ++c) d->read_chunk(c);
    };
    std::string bad = good;
    bad[0] = 'x';
    EXPECT_NE(error_of<IOError>([&] { load_all(bad); }).find("is not a CNTK binary format file"),
              std::string::npos);
    bad = good;
    bad[8] = 2;
    EXPECT_NE(error_of<IOError>([&] { load_all(bad); }).find("version 2"), std::string::npos);
    EXPECT_NE(error_of<IOError>([&] { load_all(good.substr(0, good.size() - 3)); }).find("bad.bin"),
              std::string::npos);
    // A dense sample count far beyond the chunk: refused before anything is allocated for it.
    bad = good;
    const uint32_t huge = 0x7fffffff;
    std::memcpy(&bad[12 + 4 * 5], &huge, 4);
    EXPECT_NE(error_of<IOError>([&] { load_all(bad); }).find("chunk 0 of CBF file"), std::string::npos);
    EXPECT_NE(error_of<IOError>([&] { cbf_deserializer(dir.file("missing.bin")); }).find("missing.bin"),
              std::string::npos);
}

TEST(CbfDeserializer, AHugeSparseDimIsRefusedBeforeItIsHeldDensely) {
    // Entries that are not one-hot are held densely: a header announcing a huge dim (the dim is the file's)
    // for three samples would ask for gigabytes. The file names the stream and the limit instead.
    TempDir dir;
    test::write_file(dir.file("in.ctf"), "0 |s 1:2 3:0.5\n0 |s 0:1.5\n0 |s 2:3\n");
    convert_ctf_to_cbf(dir.file("in.ctf"), dir.file("ok.bin"), {{"s", "s", true, 4}});
    std::string bytes = test::read_bytes(dir.file("ok.bin"));
    std::string entry("\x01\x01\x00\x00\x00s\x00\x04\x00\x00\x00", 11);  // sparse, name "s", f32, dim 4
    const size_t at = bytes.rfind(entry);
    ASSERT_NE(at, std::string::npos);
    const uint32_t huge = uint32_t(1) << 28;
    std::memcpy(&bytes[at + 7], &huge, 4);
    test::write_file(dir.file("huge.bin"), bytes);
    auto d = cbf_deserializer(dir.file("huge.bin"));
    const std::string e = error_of<IOError>([&] { d->read_chunk(0); });
    EXPECT_NE(e.find("stream 's'"), std::string::npos) << e;
    EXPECT_NE(e.find("holds densely"), std::string::npos) << e;
    // The same file at its own dim reads.
    auto ok = cbf_deserializer(dir.file("ok.bin"));
    EXPECT_EQ(ok->read_chunk(0).size(), 1u);
}

}  // namespace
}  // namespace ctk
