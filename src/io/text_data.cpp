// Text data sets in the layouts CNTK's sequence examples read. The CMU pronouncing dictionary as
// Examples/SequenceToSequence/CMUDict/Data held it (a 69-symbol mapping file, and CTF files of letter
// sequences S0 and phoneme sequences S1, each between <s> and </s>), made from the copy Debian ships in
// Festival's lexicon format (festlex-cmu's cmudict-0.4.out: `("word" pos (((ph ones) stress) ...))`).
// And a plain-text corpus from the fortune databases (for the character language model).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctk/core/error.h"
#include "ctk/io.h"
#include "io/io_common.h"

namespace ctk {
namespace {

// CNTK's cmudict-0.7b.mapping, line for line: the index of a symbol is its line.
const std::vector<std::string>& cmudict_symbols() {
    static const std::vector<std::string> symbols = [] {
        std::vector<std::string> s{"'", "</s>", "<s/>", "<s>"};
        for (char c = 'A'; c <= 'Z'; ++c) s.emplace_back(1, c);
        for (const char* p : {"AA", "AE", "AH", "AO", "AW", "AY", "B",  "CH", "D", "DH", "EH", "ER", "EY",
                              "F",  "G",  "HH", "IH", "IY", "JH", "K",  "L",  "M", "N",  "NG", "OW", "OY",
                              "P",  "R",  "S",  "SH", "T",  "TH", "UH", "UW", "V", "W",  "Y",  "Z",  "ZH"})
            s.push_back(std::string("~") + p);
        return s;
    }();
    return symbols;
}

struct Entry {
    std::string word;                   // upper case
    std::vector<std::string> phonemes;  // CMU's 39, without stress
};

// One line of Festival's lexicon: ("word" pos (((p h) 1) ((o n) 0) ...)). Throws naming file and line.
Entry parse_festival_line(const std::string& line, const std::string& where) {
    auto bad = [&](const char* what) { return IOError(where + ": " + what + " in '" + line + "'"); };
    if (line.size() < 4 || line[0] != '(' || line[1] != '"') throw bad("expected (\"word\" pos (syllables))");
    const size_t close = line.find('"', 2);
    if (close == std::string::npos || close == 2) throw bad("expected a quoted word");
    Entry e;
    for (size_t i = 2; i < close; ++i)
        e.word += static_cast<char>(std::toupper(static_cast<unsigned char>(line[i])));
    // The syllables: the text after the part of speech, from its first '('.
    const size_t open = line.find('(', close);
    if (open == std::string::npos) throw bad("no syllables");
    int depth = 0;
    std::string token;
    bool closed = false;
    size_t i = open;
    for (; i < line.size() && !closed; ++i) {
        const char c = line[i];
        if (c == '(') {
            ++depth;
        } else if (c == ')' || c == ' ') {
            // A phone ends a token at depth 3 (inside a syllable's phone list); digits at depth 2 are stress.
            if (!token.empty() && depth == 3) {
                std::string p;
                for (char ch : token) p += static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
                if (p == "AX") p = "AH";  // Festival's schwa is CMU's unstressed AH
                e.phonemes.push_back("~" + p);
            } else if (!token.empty() &&
                       (depth != 2 || token.find_first_not_of("012") != std::string::npos)) {
                throw bad("unexpected token");
            }
            token.clear();
            if (c == ')' && --depth == 0) closed = true;
        } else if (std::isalnum(static_cast<unsigned char>(c))) {
            token += c;
        } else {
            throw bad("unexpected character");
        }
    }
    if (!closed || e.phonemes.empty()) throw bad("unbalanced or empty syllables");
    const size_t rest = line.find_first_not_of(' ', i);
    if (rest == std::string::npos || line[rest] != ')' ||
        line.find_first_not_of(' ', rest + 1) != std::string::npos)
        throw bad("expected ')' closing the entry");
    return e;
}

// Sequence `id` of two symbol streams, CNTK's layout: one line per position, the shorter stream's field
// left empty on its trailing lines.
void append_sequence(std::string& out, int64_t id, const std::vector<int>& s0, const std::vector<int>& s1) {
    const auto& symbols = cmudict_symbols();
    const size_t n = std::max(s0.size(), s1.size());
    for (size_t i = 0; i < n; ++i) {
        out += std::to_string(id);
        for (const std::vector<int>* s : {&s0, &s1}) {
            out += '\t';
            if (i < s->size()) {
                const int k = (*s)[i];
                out += (s == &s0 ? "|S0 " : "|S1 ") + std::to_string(k) + ":1 |# " +
                       symbols[static_cast<size_t>(k)];
            }
        }
        out += '\n';
    }
}

}  // namespace

CmudictCounts convert_cmudict_to_ctf(const std::string& dict_path, const std::string& out_dir) {
    std::ifstream in(dict_path);
    CTK_CHECK(in.good(), IOError, "cannot open the dictionary '", dict_path, "'");
    const auto& symbols = cmudict_symbols();
    std::unordered_map<std::string, int> index;
    for (size_t i = 0; i < symbols.size(); ++i) index.emplace(symbols[i], static_cast<int>(i));
    CmudictCounts counts;
    std::vector<Entry> entries;
    std::set<std::pair<std::string, std::vector<std::string>>> seen;
    std::string line;
    for (int64_t line_no = 1; std::getline(in, line); ++line_no) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty() || line[0] != '(') {
            // Festival's header line (MNCL) and blank lines; anything else is not a lexicon.
            CTK_CHECK(line.empty() || line == "MNCL", IOError, dict_path, ":", line_no,
                      ": expected a lexicon entry (\"word\" pos (syllables)), got '", line, "'");
            continue;
        }
        Entry e = parse_festival_line(line, dict_path + ":" + std::to_string(line_no));
        const bool spellable =
            std::all_of(e.word.begin(), e.word.end(), [&](char c) { return index.count(std::string(1, c)); });
        if (!spellable) {
            ++counts.skipped;  // letters outside CNTK's mapping (none in Debian's copy)
            continue;
        }
        for (const std::string& p : e.phonemes)
            CTK_CHECK(index.count(p), IOError, dict_path, ":", line_no, ": unknown phone '", p.substr(1),
                      "' in '", line, "'");
        if (seen.insert({e.word, e.phonemes}).second)
            entries.push_back(std::move(e));  // a pos variant repeats
    }
    CTK_CHECK(!entries.empty(), IOError, dict_path, ": no dictionary entries");
    detail::make_dir(out_dir);
    std::string mapping;
    for (const std::string& s : symbols) mapping += s + "\n";
    write_file_atomically(out_dir + "/cmudict-0.7b.mapping", mapping);
    // A fixed split: every tenth entry (in the dictionary's order) is held out for testing.
    std::string train, test, tiny;
    const int start = index.at("<s>"), end = index.at("</s>");
    for (size_t i = 0; i < entries.size(); ++i) {
        std::vector<int> letters{start}, phones{start};
        for (char c : entries[i].word) letters.push_back(index.at(std::string(1, c)));
        for (const std::string& p : entries[i].phonemes) phones.push_back(index.at(p));
        letters.push_back(end);
        phones.push_back(end);
        if (i % 10 == 9) {
            if (counts.test == 0) append_sequence(tiny, 0, letters, phones);
            append_sequence(test, counts.test++, letters, phones);
        } else {
            append_sequence(train, counts.train++, letters, phones);
        }
    }
    write_file_atomically(out_dir + "/cmudict-0.7b.train-dev-20-21.ctf", train);
    write_file_atomically(out_dir + "/cmudict-0.7b.test.ctf", test);
    write_file_atomically(out_dir + "/tiny.ctf", tiny);
    return counts;
}

int64_t convert_fortunes_to_text(const std::string& in_dir, const std::string& out_path) {
    std::error_code ec;
    std::vector<std::filesystem::path> files;
    for (const auto& f : std::filesystem::directory_iterator(in_dir, ec))
        if (f.is_regular_file() && !f.path().has_extension()) files.push_back(f.path());  // not .dat, .u8
    CTK_CHECK(!ec, IOError, "cannot list '", in_dir, "': ", ec.message());
    std::sort(files.begin(), files.end());
    CTK_CHECK(!files.empty(), IOError, "'", in_dir,
              "' holds no fortune files (text files without an extension)");
    std::string text;
    int64_t quotes = 0;
    for (const auto& path : files) {
        std::ifstream in(path);
        CTK_CHECK(in.good(), IOError, "cannot open '", path.string(), "'");
        std::string line, quote;
        auto flush = [&] {
            if (quote.find_first_not_of(" \t\n") != std::string::npos) {
                text += quote + "\n";  // quotes separated by a blank line
                ++quotes;
            }
            quote.clear();
        };
        while (std::getline(in, line)) {
            if (line == "%")
                flush();
            else
                quote += line + "\n";
        }
        flush();
    }
    const auto parent = std::filesystem::path(out_path).parent_path();
    if (!parent.empty()) detail::make_dir(parent.string());
    write_file_atomically(out_path, text);
    return quotes;
}

namespace {

// A flight-query grammar in ATIS's shape, for generate_atis_like (ATIS itself is licensed by the LDC
// and not in Debian). Multi-word values carry B-/I- slot tags as ATIS's do.
struct AtisGrammar {
    std::vector<std::string> cities{"boston",         "new york",     "san francisco", "denver",
                                    "atlanta",        "pittsburgh",   "dallas",        "seattle",
                                    "washington",     "philadelphia", "baltimore",     "oakland",
                                    "salt lake city", "los angeles",  "miami",         "chicago"};
    std::vector<std::string> days{"monday", "tuesday",  "wednesday", "thursday",
                                  "friday", "saturday", "sunday"};
    std::vector<std::string> periods{"morning", "afternoon", "evening", "night"};
    std::vector<std::string> airlines{"delta", "united", "american airlines", "us air", "continental"};
    std::vector<std::string> classes{"first class", "coach", "business class"};
};

struct Tagged {
    std::vector<std::string> words, slots;
    std::string intent;
    void add(const std::string& phrase, const std::string& slot) {
        std::istringstream in(phrase);
        std::string w;
        for (bool first = true; in >> w; first = false) {
            words.push_back(w);
            slots.push_back(slot == "O" ? "O" : (first ? "B-" : "I-") + slot);
        }
    }
};

template <typename Rng>
Tagged atis_sentence(const AtisGrammar& g, Rng& rng) {
    auto pick = [&](const std::vector<std::string>& v) { return v[rng() % v.size()]; };
    Tagged t;
    t.add("BOS", "O");
    const unsigned kind = rng() % 4;
    t.intent = kind == 0 ? "airfare" : kind == 1 ? "airline" : "flight";
    t.add(kind == 0   ? "what is the fare"
          : kind == 1 ? "which airlines fly"
          : kind == 2 ? "show me flights"
                      : "i would like a flight",
          "O");
    t.add("from", "O");
    const std::string from = pick(g.cities);
    std::string to = pick(g.cities);
    while (to == from) to = pick(g.cities);
    t.add(from, "fromloc.city_name");
    t.add("to", "O");
    t.add(to, "toloc.city_name");
    if (rng() % 2) {
        t.add("on", "O");
        t.add(pick(g.days), "depart_date.day_name");
    }
    if (rng() % 3 == 0) {
        t.add("in the", "O");
        t.add(pick(g.periods), "depart_time.period_of_day");
    }
    if (kind != 1 && rng() % 3 == 0) {
        t.add("on", "O");
        t.add(pick(g.airlines), "airline_name");
    }
    if (kind == 0 && rng() % 2) {
        t.add("in", "O");
        t.add(pick(g.classes), "class_type");
    }
    t.add("EOS", "O");
    return t;
}

// The names of a list padded with `prefix`k to `size` entries, in first-seen order.
std::vector<std::string> padded(std::vector<std::string> names, size_t size, const std::string& prefix) {
    for (size_t k = 0; names.size() < size; ++k) names.push_back(prefix + std::to_string(k));
    return names;
}

}  // namespace

AtisCounts generate_atis_like(const std::string& out_dir, int64_t train_sentences, int64_t test_sentences,
                              uint32_t seed) {
    CTK_CHECK(train_sentences > 0 && test_sentences > 0, ValueError,
              "generate_atis_like: sentence counts must be > 0");
    const AtisGrammar g;
    std::mt19937 rng(seed);
    std::vector<Tagged> sentences;
    for (int64_t i = 0; i < train_sentences + test_sentences; ++i) sentences.push_back(atis_sentence(g, rng));
    // The vocabularies in first-seen order, padded to ATIS's sizes (943 words, 129 slots, 26 intents).
    std::vector<std::string> words, slots{"O"}, intents;
    std::unordered_map<std::string, int> word_id, slot_id{{"O", 0}}, intent_id;
    auto intern = [](const std::string& s, std::vector<std::string>& names,
                     std::unordered_map<std::string, int>& ids) {
        auto it = ids.find(s);
        if (it != ids.end()) return it->second;
        ids.emplace(s, static_cast<int>(names.size()));
        names.push_back(s);
        return static_cast<int>(names.size()) - 1;
    };
    for (const Tagged& t : sentences) {
        for (const std::string& w : t.words) intern(w, words, word_id);
        for (const std::string& s : t.slots) intern(s, slots, slot_id);
        intern(t.intent, intents, intent_id);
    }
    words = padded(words, 943, "word");
    slots = padded(slots, 129, "B-slot");
    intents = padded(intents, 26, "intent");
    auto write_list = [&](const std::string& path, const std::vector<std::string>& names) {
        std::string text;
        for (const std::string& n : names) text += n + "\n";
        write_file_atomically(path, text);
    };
    detail::make_dir(out_dir + "/Data");
    detail::make_dir(out_dir + "/BrainScript");
    write_list(out_dir + "/BrainScript/query.wl", words);
    write_list(out_dir + "/BrainScript/slots.wl", slots);
    write_list(out_dir + "/BrainScript/intent.wl", intents);
    // ATIS's CTF layout: a line per word, the intent on the sentence's first line only.
    auto write_ctf = [&](const std::string& path, size_t begin, size_t end) {
        std::string out;
        for (size_t i = begin; i < end; ++i) {
            const Tagged& t = sentences[i];
            for (size_t k = 0; k < t.words.size(); ++k) {
                out += std::to_string(i - begin) + "\t|S0 " + std::to_string(word_id.at(t.words[k])) +
                       ":1\t|# " + t.words[k];
                if (k == 0) out += "\t|S1 " + std::to_string(intent_id.at(t.intent)) + ":1\t|# " + t.intent;
                out += "\t|S2 " + std::to_string(slot_id.at(t.slots[k])) + ":1\t|# " + t.slots[k] + "\n";
            }
        }
        write_file_atomically(path, out);
    };
    write_ctf(out_dir + "/Data/atis.train.ctf", 0, static_cast<size_t>(train_sentences));
    write_ctf(out_dir + "/Data/atis.test.ctf", static_cast<size_t>(train_sentences), sentences.size());
    return {train_sentences, test_sentences};
}

}  // namespace ctk
