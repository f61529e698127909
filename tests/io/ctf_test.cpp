// The CTF deserializer: the grammar (ids, comments, sparse, tabs, CRLF, free stream order), chunking, and
// errors that name file:line:column.
#include <gtest/gtest.h>

#include "ctk/io.h"
#include "io/io_test_util.h"

namespace ctk {
namespace {

using test::error_of;
using test::read_all;
using test::TempDir;
using test::write_file;

std::vector<StreamDef> two_streams() {
    return {StreamDef{"features", "x", {3}, false, false}, StreamDef{"labels", "y", {4}, true, false}};
}

TEST(CtfDeserializer, DenseSparseCommentsTabsCrlfAndFreeOrder) {
    TempDir dir;
    const std::string path = dir.file("a.ctf");
    write_file(path,
               "|x 1 2.5 -3 |y 2:1\n"
               "|y 0:0.5 3:-1e-2\t|x\t+4 5E1 .25 |# a comment |# with an escaped bar\r\n"
               "\n"
               "|# a comment-only line\n"
               "|x 7 8 9 |y |#trailing\n"
               "|z 1 2 3 |x 0 0 1e3 |y 1:2");  // no final newline; |z is not declared and is skipped
    auto d = ctf_deserializer(path, two_streams());
    ASSERT_EQ(d->streams().size(), 2u);
    EXPECT_EQ(d->streams()[0].name, "features");
    EXPECT_TRUE(d->streams()[1].is_sparse);
    auto all = read_all(*d);
    ASSERT_EQ(all.size(), 4u);  // each line is a sequence (the first line has no id)
    EXPECT_EQ(all[0][0].data.to_vector<float>(), (std::vector<float>{1, 2.5f, -3}));
    // A sparse sample with a single 1 comes as its index; anything else as dense rows.
    EXPECT_FALSE(all[0][1].data.defined());
    EXPECT_EQ(all[0][1].one_hot_indices.to_vector<int64_t>(), (std::vector<int64_t>{2}));
    EXPECT_EQ(all[1][0].data.to_vector<float>(), (std::vector<float>{4, 50, 0.25f}));
    EXPECT_EQ(all[1][1].data.to_vector<float>(), (std::vector<float>{0.5f, 0, 0, -0.01f}));
    EXPECT_FALSE(all[1][1].one_hot_indices.defined());
    EXPECT_EQ(all[2][1].one_hot_indices.to_vector<int64_t>(), (std::vector<int64_t>{-1}));  // empty: all zero
    EXPECT_EQ(all[3][1].data.to_vector<float>(), (std::vector<float>{0, 2, 0, 0}));  // a 2 is not one-hot
    EXPECT_EQ(all[3][0].data.to_vector<float>(), (std::vector<float>{0, 0, 1000}));
    EXPECT_EQ(all[3][0].data.shape(), (Shape{1, 3}));
}

TEST(CtfDeserializer, SequenceIdsGroupConsecutiveLines) {
    TempDir dir;
    const std::string path = dir.file("seq.ctf");
    write_file(path,
               "0 |x 1 1 1 |y 0:1\n"
               "0 |x 2 2 2\n"
               "0\t|x 3 3 3\n"
               "7 |x 4 4 4 |y 1:1\n"
               "|x 5 5 5\n"  // no id: continues sequence 7, as CNTK's indexer does
               "3 |y 3:1 |x 6 6 6\n");
    auto d = ctf_deserializer(path, two_streams());
    auto all = read_all(*d);
    ASSERT_EQ(all.size(), 3u);
    EXPECT_EQ(all[0][0].data.shape(), (Shape{3, 3}));
    EXPECT_EQ(all[0][1].one_hot_indices.shape(), (Shape{1}));  // streams of one sequence may differ in length
    EXPECT_EQ(all[0][0].data.to_vector<float>(), (std::vector<float>{1, 1, 1, 2, 2, 2, 3, 3, 3}));
    EXPECT_EQ(all[1][0].data.shape(), (Shape{2, 3}));
    EXPECT_EQ(all[2][1].one_hot_indices.to_vector<int64_t>(), (std::vector<int64_t>{3}));
    EXPECT_EQ(d->chunk_num_samples(0), 6);
}

TEST(CtfDeserializer, ShapedStreamKeepsItsShape) {
    TempDir dir;
    const std::string path = dir.file("img.ctf");
    write_file(path, "|img 1 2 3 4 5 6\n");
    auto d = ctf_deserializer(path, {StreamDef{"", "img", {1, 2, 3}, false, false}});
    EXPECT_EQ(d->streams()[0].name, "img");  // name defaults to the field
    EXPECT_EQ(read_all(*d)[0][0].data.shape(), (Shape{1, 1, 2, 3}));
}

TEST(CtfDeserializer, ChunksSplitAtSequenceBoundaries) {
    TempDir dir;
    const std::string path = dir.file("big.ctf");
    std::string text;
    int64_t lines = 0;
    for (int s = 0; s < 50; ++s)
        for (int l = 0; l <= s % 3; ++l, ++lines)
            text += std::to_string(s) + " |x " + std::to_string(s) + " 0 " + std::to_string(l) + "\n";
    write_file(path, text);
    auto d = ctf_deserializer(path, {StreamDef{"x", "x", {3}, false, false}}, 100);
    EXPECT_GT(d->num_chunks(), 5);
    auto all = read_all(*d);
    ASSERT_EQ(all.size(), 50u);
    int64_t samples = 0;
    for (int64_t c = 0; c < d->num_chunks(); ++c) samples += d->chunk_num_samples(c);
    EXPECT_EQ(samples, lines);
    for (int s = 0; s < 50; ++s) {
        ASSERT_EQ(all[size_t(s)][0].data.dim(0), s % 3 + 1);
        EXPECT_EQ(all[size_t(s)][0].data.at({0, 0}), s);
        EXPECT_EQ(all[size_t(s)][0].data.at({s % 3, 2}), s % 3);
    }
}

TEST(CtfDeserializer, MalformedNumberNamesFileLineAndColumn) {
    TempDir dir;
    const std::string path = dir.file("bad.ctf");
    write_file(path, "|x 1 2 3 |y 0:1\n|x 1 2 3 |y 1:1\n|x 1 2.5.1 3 |y 0:1\n");
    auto d = ctf_deserializer(path, two_streams());
    const std::string msg = error_of<IOError>([&] { read_all(*d); });
    EXPECT_NE(msg.find(path + ":3:6:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("2.5.1"), std::string::npos) << msg;
    for (const char* bad : {"|x 1 abc 3", "|x 1 1e 3", "|x 1 - 3", "|x 1 2x 3"}) {
        write_file(path, std::string(bad) + " |y 0:1\n");
        auto d2 = ctf_deserializer(path, two_streams());
        const std::string m = error_of<IOError>([&] { read_all(*d2); });
        EXPECT_NE(m.find(path + ":1:6:"), std::string::npos) << bad << " -> " << m;
    }
}

// Bytes that are not UTF-8 are quoted escaped, so the message stays text (Python showed an empty
// OSError() before) and keeps its file:line:column.
TEST(CtfDeserializer, BytesThatAreNotUtf8AreQuotedEscaped) {
    TempDir dir;
    const std::string path = dir.file("bad.ctf");
    for (const char* bad : {"|x 1 \xff 3", "|x 1 2\xc3 3"}) {
        write_file(path, std::string(bad) + " |y 0:1\n");
        auto d = ctf_deserializer(path, two_streams());
        std::string m;
        try {
            read_all(*d);
        } catch (const IOError& e) {
            m = e.what();
        } catch (const ValueError& e) {
            m = e.what();
        }
        EXPECT_NE(m.find(path + ":1:"), std::string::npos) << m;
        EXPECT_NE(m.find("\\x"), std::string::npos) << m;
        EXPECT_EQ(escape_invalid_utf8(m), m) << m;
    }
}

TEST(CtfDeserializer, WrongDenseDimensionIsAnError) {
    TempDir dir;
    const std::string path = dir.file("dim.ctf");
    write_file(path, "|x 1 2 |y 0:1\n");
    std::string msg = error_of<IOError>([&] { read_all(*ctf_deserializer(path, two_streams())); });
    EXPECT_NE(msg.find(path + ":1:1:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("has 2 values; its dim is 3"), std::string::npos) << msg;
    write_file(path, "|y 0:1 |x 1 2 3 4\n");
    msg = error_of<IOError>([&] { read_all(*ctf_deserializer(path, two_streams())); });
    EXPECT_NE(msg.find(path + ":1:17:"), std::string::npos) << msg;
}

TEST(CtfDeserializer, SparseIndexOutOfRange) {
    TempDir dir;
    const std::string path = dir.file("sparse.ctf");
    write_file(path, "|x 1 2 3 |y 0:1\n|x 1 2 3 |y 1:1 4:1\n");
    const std::string msg = error_of<IOError>([&] { read_all(*ctf_deserializer(path, two_streams())); });
    EXPECT_NE(msg.find(path + ":2:17:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("sparse index 4"), std::string::npos) << msg;
    write_file(path, "|x 1 2 3 |y 1\n");
    EXPECT_NE(
        error_of<IOError>([&] { read_all(*ctf_deserializer(path, two_streams())); }).find("index:value"),
        std::string::npos);
}

TEST(CtfDeserializer, UndeclaredInputsAreSkippedButAMissingDeclaredInputIsAnError) {
    TempDir dir;
    const std::string path = dir.file("names.ctf");
    // CNTK skips inputs the reader was not configured with (TextParser: "Skipping unknown input").
    write_file(path, "|extra 1 2 |x 1 2 3 |y 0:1\n");
    EXPECT_EQ(read_all(*ctf_deserializer(path, two_streams())).size(), 1u);
    // A misspelt input leaves a declared one empty: CNTK's "Input is empty" error, naming both.
    write_file(path, "|x 1 2 3 |y 0:1\n|xx 1 2 3 |y 0:1\n");
    const std::string msg = error_of<IOError>([&] { read_all(*ctf_deserializer(path, two_streams())); });
    EXPECT_NE(msg.find(path + ":2:1:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("no input 'x'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'xx'"), std::string::npos) << msg;
}

TEST(CtfDeserializer, ASequenceLongerThanItsStreamsMaximumIsAnError) {
    TempDir dir;
    const std::string path = dir.file("long.ctf");
    write_file(path, "0 |x 1 2 3 |y 0:1\n0 |x 1 2 3\n1 |x 1 2 3 |y 1:1\n1 |x 4 5 6\n1 |x 7 8 9\n");
    std::vector<StreamDef> defs = two_streams();
    defs[0].max_sequence_length = 2;
    const std::string msg = error_of<IOError>([&] { read_all(*ctf_deserializer(path, defs)); });
    EXPECT_NE(msg.find(path + ":3:1:"), std::string::npos) << msg;  // where sequence 1 starts
    EXPECT_NE(msg.find("3 samples of input 'x', more than its max_sequence_length of 2"), std::string::npos)
        << msg;
    defs[0].max_sequence_length = 3;
    EXPECT_EQ(read_all(*ctf_deserializer(path, defs)).size(), 2u);
}

TEST(CtfDeserializer, StructuralErrors) {
    TempDir dir;
    const std::string path = dir.file("s.ctf");
    write_file(path, "|x 1 2 3 |x 1 2 3 |y 0:1\n");
    EXPECT_NE(error_of<IOError>([&] { read_all(*ctf_deserializer(path, two_streams())); }).find("twice"),
              std::string::npos);
    write_file(path, "1 |x 1 2 3 |y 0:1\n2 |x 1 2 3 |y 0:1\n1 |x 1 2 3 |y 0:1\n");
    const std::string msg = error_of<IOError>([&] { ctf_deserializer(path, two_streams()); });
    EXPECT_NE(msg.find(path + ":3:1:"), std::string::npos) << msg;
    EXPECT_NE(msg.find("consecutive"), std::string::npos) << msg;
    write_file(path, "|x 1 2 3 y 0:1\n");
    EXPECT_NE(
        error_of<IOError>([&] { read_all(*ctf_deserializer(path, two_streams())); }).find(path + ":1:10:"),
        std::string::npos);
    write_file(path, "\n|# only a comment\n");
    EXPECT_NE(error_of<IOError>([&] { ctf_deserializer(path, two_streams()); }).find("no data"),
              std::string::npos);
}

TEST(CtfDeserializer, MissingFileAndBadDefinitions) {
    TempDir dir;
    const std::string missing = dir.file("nope.ctf");
    EXPECT_NE(error_of<IOError>([&] { ctf_deserializer(missing, two_streams()); }).find(missing),
              std::string::npos);
    write_file(dir.file("ok.ctf"), "|x 1 2 3\n");
    EXPECT_THROW(ctf_deserializer(dir.file("ok.ctf"), {}), ValueError);
    EXPECT_THROW(ctf_deserializer(dir.file("ok.ctf"), {StreamDef{"a", "x", {3}}, StreamDef{"a", "y", {3}}}),
                 ValueError);
    EXPECT_THROW(ctf_deserializer(dir.file("ok.ctf"), {StreamDef{"a", "x", {0}}}), ValueError);
}

}  // namespace
}  // namespace ctk
