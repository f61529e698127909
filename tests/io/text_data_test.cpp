// convert_cmudict_to_ctf on a small lexicon in Festival's format (Debian's festlex-cmu) and
// convert_fortunes_to_text on small fortune files: CNTK's CMUDict layout (mapping, CTF lines, the split,
// tiny.ctf) read back through the CTF reader; repeated pronunciations written once; malformed lines
// named by file and line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "ctk/io.h"
#include "io/io_test_util.h"

namespace ctk {
namespace {

using test::TempDir;

std::string read_text(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::string lexicon(int words) {
    std::string s = "MNCL\n";
    s += "(\"a\" dt (((ax) 0)))\n";
    s += "(\"a\" n (((ey) 1)))\n";
    s += "(\"a\" nil (((ey) 1)))\n";  // the same pronunciation again: written once
    s += "(\"abad\" nil (((ax) 0) ((b aa d) 1)))\n";
    for (int i = 0; i < words; ++i) s += "(\"zed\" nil (((z eh d) 1)))\n";
    s += "(\"o'neil\" nil (((ow) 0) ((n iy l) 1)))\n";
    return s;
}

TEST(TextData, CmudictInCntksLayout) {
    TempDir dir;
    test::write_file(dir.file("dict.out"), lexicon(0));
    const CmudictCounts c = convert_cmudict_to_ctf(dir.file("dict.out"), dir.file("out"));
    EXPECT_EQ(c.train + c.test, 4);  // a (ax), a (ey), abad, o'neil
    EXPECT_EQ(c.skipped, 0);
    const std::string mapping = read_text(dir.file("out/cmudict-0.7b.mapping"));
    EXPECT_EQ(mapping.substr(0, 20), "'\n</s>\n<s/>\n<s>\nA\nB\n");
    EXPECT_NE(mapping.find("\nZ\n~AA\n~AE\n"), std::string::npos);
    EXPECT_EQ(std::count(mapping.begin(), mapping.end(), '\n'), 69);
    const std::string train = read_text(dir.file("out/cmudict-0.7b.train-dev-20-21.ctf"));
    // "abad": <s> A B A D </s> against <s> ~AH ~B ~AA ~D </s> (Festival's schwa ax is CMU's AH).
    EXPECT_NE(train.find("2\t|S0 3:1 |# <s>\t|S1 3:1 |# <s>\n"
                         "2\t|S0 4:1 |# A\t|S1 32:1 |# ~AH\n"
                         "2\t|S0 5:1 |# B\t|S1 36:1 |# ~B\n"
                         "2\t|S0 4:1 |# A\t|S1 30:1 |# ~AA\n"
                         "2\t|S0 7:1 |# D\t|S1 38:1 |# ~D\n"
                         "2\t|S0 1:1 |# </s>\t|S1 1:1 |# </s>\n"),
              std::string::npos)
        << train;
    // o'neil: the apostrophe is symbol 0; the shorter phoneme stream leaves its trailing fields empty.
    EXPECT_NE(train.find("3\t|S0 0:1 |# '\t|S1 52:1 |# ~N\n"), std::string::npos) << train;
    EXPECT_NE(train.find("3\t|S0 1:1 |# </s>\t\n"), std::string::npos) << train;
    // Read back: letters and phonemes as one-hot sequences of their own lengths.
    auto d = ctf_deserializer(
        dir.file("out/cmudict-0.7b.train-dev-20-21.ctf"),
        {StreamDef{"features", "S0", {69}, true, false}, StreamDef{"labels", "S1", {69}, true, false}});
    auto all = test::read_all(*d);
    ASSERT_EQ(all.size(), 4u);
    EXPECT_EQ(all[3][0].one_hot_indices.to_vector<int64_t>(),
              (std::vector<int64_t>{3, 18, 0, 17, 8, 12, 15, 1}));  // <s> O ' N E I L </s>
    EXPECT_EQ(all[3][1].one_hot_indices.numel(), 6);                // <s> ~OW ~N ~IY ~L </s>
}

TEST(TextData, CmudictSplitsEveryTenthWordForTesting) {
    TempDir dir;
    std::string s = "MNCL\n";
    for (int i = 0; i < 25; ++i) {
        std::string w;
        for (int k = i; k >= 0; k -= 26) w += static_cast<char>('a' + k % 26);
        s += "(\"" + w + "b\" nil (((b iy) 1)))\n";
    }
    test::write_file(dir.file("dict.out"), s);
    const CmudictCounts c = convert_cmudict_to_ctf(dir.file("dict.out"), dir.file("out"));
    EXPECT_EQ(c.train, 23);
    EXPECT_EQ(c.test, 2);  // entries 9 and 19
    EXPECT_EQ(read_text(dir.file("out/tiny.ctf")).substr(0, 32), "0\t|S0 3:1 |# <s>\t|S1 3:1 |# <s>\n");
    EXPECT_NE(read_text(dir.file("out/tiny.ctf")).find("|S0 13:1 |# J"), std::string::npos);  // "jb"
}

TEST(TextData, CmudictErrorsNameTheFileAndLine) {
    TempDir dir;
    auto error_of = [&](const std::string& text) {
        test::write_file(dir.file("bad.out"), text);
        try {
            convert_cmudict_to_ctf(dir.file("bad.out"), dir.file("out"));
        } catch (const IOError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    EXPECT_NE(error_of("MNCL\n(\"a\" nil (((ax) 0)))\n(\"b\" nil (((b iy) 1))\n").find("bad.out:3"),
              std::string::npos);
    EXPECT_NE(error_of("MNCL\n(\"a\" nil (((qq) 0)))\n").find("bad.out:2: unknown phone 'QQ'"),
              std::string::npos);
    EXPECT_NE(error_of("MNCL\nhello\n").find("bad.out:2: expected a lexicon entry"), std::string::npos);
    EXPECT_NE(error_of("MNCL\n(\"a\" nil ())\n").find("bad.out:2"), std::string::npos);
    EXPECT_NE(error_of("MNCL\n").find("no dictionary entries"), std::string::npos);
    EXPECT_THROW(convert_cmudict_to_ctf(dir.file("none.out"), dir.file("out")), IOError);
}

TEST(TextData, FortunesBecomeOneCorpus) {
    TempDir dir;
    std::filesystem::create_directories(dir.file("fortunes"));
    test::write_file(dir.file("fortunes/b"), "Second file.\n%\n");
    test::write_file(dir.file("fortunes/a"), "One.\n%\nTwo lines\nof wit.\n%\n");
    test::write_file(dir.file("fortunes/a.dat"), "binary index, skipped");
    EXPECT_EQ(convert_fortunes_to_text(dir.file("fortunes"), dir.file("corpus/fortunes.txt")), 3);
    EXPECT_EQ(read_text(dir.file("corpus/fortunes.txt")), "One.\n\nTwo lines\nof wit.\n\nSecond file.\n\n");
    EXPECT_THROW(convert_fortunes_to_text(dir.file("corpus"), dir.file("x.txt")),
                 IOError);  // no fortune files
}

TEST(TextData, AtisLikeDataInCntksLayout) {
    TempDir dir;
    const AtisCounts c = generate_atis_like(dir.file("atis"), 30, 5, 7);
    EXPECT_EQ(c.train, 30);
    EXPECT_EQ(c.test, 5);
    const std::string words = read_text(dir.file("atis/BrainScript/query.wl"));
    EXPECT_EQ(std::count(words.begin(), words.end(), '\n'), 943);
    EXPECT_EQ(words.substr(0, 4), "BOS\n");
    const std::string slots = read_text(dir.file("atis/BrainScript/slots.wl"));
    EXPECT_EQ(std::count(slots.begin(), slots.end(), '\n'), 129);
    EXPECT_NE(slots.find("B-fromloc.city_name\n"), std::string::npos);
    EXPECT_EQ(generate_atis_like(dir.file("again"), 30, 5, 7).train, 30);  // deterministic for a seed
    EXPECT_EQ(read_text(dir.file("again/Data/atis.train.ctf")),
              read_text(dir.file("atis/Data/atis.train.ctf")));
    // Read back as CNTK's LanguageUnderstanding.py declares the streams.
    auto d = ctf_deserializer(
        dir.file("atis/Data/atis.train.ctf"),
        {StreamDef{"query", "S0", {943}, true, false}, StreamDef{"intent", "S1", {26}, true, false},
         StreamDef{"slots", "S2", {129}, true, false}});
    auto all = test::read_all(*d);
    ASSERT_EQ(all.size(), 30u);
    for (const auto& s : all) {
        EXPECT_EQ(s[0].one_hot_indices.numel(), s[2].one_hot_indices.numel());  // a slot per word
        EXPECT_EQ(s[1].one_hot_indices.numel(), 1);                             // one intent
        EXPECT_EQ(s[0].one_hot_indices.to_vector<int64_t>().front(), 0);        // BOS
    }
    EXPECT_THROW(generate_atis_like(dir.file("x"), 0, 5), ValueError);
}

}  // namespace
}  // namespace ctk
