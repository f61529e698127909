// CNTK Binary Format, version 1 (CNTK's CNTKBinaryReader and Scripts/ctf2bin.py). All integers little
// endian:
//   u64 magic "cntk_bin", u32 version = 1; the chunks back to back; then the header: u64 magic,
//   u32 chunks, u32 streams, per stream (u8 storage 0 dense / 1 sparse, u32 name length, the name,
//   u8 element type 0 float32 / 1 float64, u32 sample dim), per chunk (i64 offset, u32 sequences,
//   u32 samples); and last the i64 offset of the header.
//   A chunk: u32 samples per sequence (its longest stream), then per stream, per sequence: dense: u32 n
//   and n x dim values; sparse: u32 n, i32 nnz, nnz values, nnz i32 row indices, n i32 counts per sample.
// The reader checks every count against the bytes that hold it before it allocates, so a truncated or
// corrupt file is an IOError naming the file and the chunk, never a crash or an unbounded allocation.
#include "ctk/io/cbf.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "ctk/core/atomic_file.h"
#include "ctk/core/dictionary.h"
#include "ctk/core/error.h"

namespace ctk {
namespace {

// Sparse entries that are not one-hot are held densely: at most this many values (256 MiB of float32)
// for the sequences of one chunk, whose dims come from the file (the bound the model readers put on
// values built from a file's sizes).
constexpr uint64_t kMaxDenseSparseValues = uint64_t(1) << 26;

constexpr uint64_t kMagic = 0x636e746b5f62696eULL;  // "cntk_bin" read as a big-endian string
constexpr uint32_t kVersion = 1;

// Bounds-checked little-endian reads over a byte range; `where` names the range in errors.
class Bytes {
public:
    Bytes(const uint8_t* p, size_t n, std::string where) : p_(p), end_(p + n), where_(std::move(where)) {}
    template <typename T>
    T get() {
        T v;
        std::memcpy(&v, take(sizeof(T)), sizeof(T));
        return v;
    }
    const uint8_t* take(size_t n) {
        CTK_CHECK(n <= size_t(end_ - p_), IOError, where_, " is truncated: ", n, " more bytes needed, ",
                  end_ - p_, " left");
        const uint8_t* at = p_;
        p_ += n;
        return at;
    }
    size_t left() const { return size_t(end_ - p_); }
    const std::string& where() const { return where_; }

private:
    const uint8_t *p_, *end_;
    std::string where_;
};

std::vector<uint8_t> read_range(const std::string& path, int64_t offset, int64_t size) {
    std::vector<uint8_t> bytes(static_cast<size_t>(size));
    FILE* f = std::fopen(path.c_str(), "rb");
    CTK_CHECK(f != nullptr, IOError, "cannot open CBF file '", path, "'");
    const bool ok = std::fseek(f, static_cast<long>(offset), SEEK_SET) == 0 &&
                    std::fread(bytes.data(), 1, bytes.size(), f) == bytes.size();
    std::fclose(f);
    CTK_CHECK(ok, IOError, "CBF file '", path, "': cannot read ", size, " bytes at offset ", offset);
    return bytes;
}

struct CbfStreamHeader {
    bool sparse = false;
    std::string name;
    bool f64 = false;
    int64_t dim = 0;
};

struct CbfChunk {
    int64_t offset = 0, size = 0, sequences = 0, samples = 0;
    int64_t first_sequence = 0;  // the running number of its first sequence (CNTK's sequence keys)
};

class CbfDeserializer final : public Deserializer {
public:
    CbfDeserializer(std::string path, const std::vector<StreamDef>& renames) : path_(std::move(path)) {
        std::ifstream in(path_, std::ios::binary | std::ios::ate);
        CTK_CHECK(in, IOError, "cannot open CBF file '", path_, "'");
        const int64_t size = static_cast<int64_t>(in.tellg());
        CTK_CHECK(size >= 12 + 16 + 8, IOError, "'", path_, "' is not a CNTK binary format file (", size,
                  " bytes)");
        {
            const std::vector<uint8_t> prefix = read_range(path_, 0, 12);
            Bytes b(prefix.data(), prefix.size(), "the start of '" + path_ + "'");
            CTK_CHECK(b.get<uint64_t>() == kMagic, IOError, "'", path_, "' is not a CNTK binary format file");
            const uint32_t version = b.get<uint32_t>();
            CTK_CHECK(version == kVersion, IOError, "CBF file '", path_, "' was written for version ",
                      version, "; ctk reads version 1");
        }
        const std::vector<uint8_t> tail = read_range(path_, size - 8, 8);
        int64_t header = 0;
        std::memcpy(&header, tail.data(), 8);
        CTK_CHECK(header >= 12 && header <= size - 8 - 16, IOError, "CBF file '", path_,
                  "': the header offset ", header, " is outside the file");
        const std::vector<uint8_t> hb = read_range(path_, header, size - 8 - header);
        Bytes b(hb.data(), hb.size(), "the header of CBF file '" + path_ + "'");
        CTK_CHECK(b.get<uint64_t>() == kMagic, IOError, "CBF file '", path_, "': no header at offset ",
                  header);
        const uint32_t num_chunks = b.get<uint32_t>(), num_streams = b.get<uint32_t>();
        CTK_CHECK(num_streams > 0, IOError, "CBF file '", path_, "' declares no streams");
        // Each stream header takes at least 10 bytes, each chunk header 16: counts beyond the header's
        // size are corrupt, and are refused before anything is allocated for them.
        CTK_CHECK(uint64_t(num_streams) * 10 + uint64_t(num_chunks) * 16 <= b.left(), IOError, "CBF file '",
                  path_, "': the header announces ", num_streams, " streams and ", num_chunks,
                  " chunks, more than it holds");
        std::set<std::string> names;
        for (uint32_t i = 0; i < num_streams; ++i) {
            CbfStreamHeader s;
            const uint8_t storage = b.get<uint8_t>();
            CTK_CHECK(storage <= 1, IOError, "CBF file '", path_, "': stream ", i,
                      " has the unknown storage ", int(storage));
            s.sparse = storage == 1;
            const uint32_t length = b.get<uint32_t>();
            const uint8_t* name = b.take(length);
            s.name.assign(reinterpret_cast<const char*>(name), length);
            const uint8_t type = b.get<uint8_t>();
            CTK_CHECK(type <= 1, IOError, "CBF file '", path_, "': stream '", s.name,
                      "' has the unknown element type ", int(type));
            s.f64 = type == 1;
            s.dim = b.get<uint32_t>();
            CTK_CHECK(s.dim > 0 && s.dim <= (int64_t(1) << 31), IOError, "CBF file '", path_, "': stream '",
                      s.name, "' has sample dim ", s.dim);
            CTK_CHECK(names.insert(s.name).second, IOError, "CBF file '", path_, "' has two streams named '",
                      s.name, "'");
            streams_.push_back(s);
        }
        for (uint32_t c = 0; c < num_chunks; ++c) {
            CbfChunk k;
            k.offset = b.get<int64_t>();
            k.sequences = b.get<uint32_t>();
            k.samples = b.get<uint32_t>();
            chunks_.push_back(k);
        }
        for (size_t c = 0; c < chunks_.size(); ++c) {
            if (c > 0) chunks_[c].first_sequence = chunks_[c - 1].first_sequence + chunks_[c - 1].sequences;
            const int64_t end = c + 1 < chunks_.size() ? chunks_[c + 1].offset : header;
            chunks_[c].size = end - chunks_[c].offset;
            CTK_CHECK(chunks_[c].offset >= 12 && chunks_[c].size >= 4 * chunks_[c].sequences && end <= header,
                      IOError, "CBF file '", path_, "': chunk ", c, " (offset ", chunks_[c].offset,
                      ") is outside the data or too small for its ", chunks_[c].sequences, " sequences");
        }
        // CNTK's renaming: StreamDef{name, field} exposes the file's stream `field` as `name`. A file that
        // already calls the stream `name` (ctf2bin wrote the header's first column) needs no renaming.
        for (const StreamDef& r : renames) {
            auto named = [&](const std::string& n) {
                return std::find_if(streams_.begin(), streams_.end(),
                                    [&](const CbfStreamHeader& s) { return s.name == n; });
            };
            const std::string field = r.field.empty() || named(r.field) == streams_.end() ? r.name : r.field;
            auto it = named(field);
            if (it == streams_.end()) {
                std::string known;
                for (const CbfStreamHeader& s : streams_)
                    known += (known.empty() ? "'" : ", '") + s.name + "'";
                CTK_THROW(ValueError, "cbf_deserializer('", path_, "'): the file has no stream '",
                          r.field.empty() ? r.name : r.field, "'; its streams are ", known);
            }
            exposed_[size_t(it - streams_.begin())] = r.name.empty() ? field : r.name;
        }
        for (size_t i = 0; i < streams_.size(); ++i) {
            StreamInformation info;
            auto e = exposed_.find(i);
            info.name = e == exposed_.end() ? streams_[i].name : e->second;
            info.id = int(i);
            info.sample_shape = {streams_[i].dim};
            info.is_sparse = streams_[i].sparse;
            infos_.push_back(info);
        }
    }

    const std::vector<StreamInformation>& streams() const override { return infos_; }
    int64_t num_chunks() const override { return static_cast<int64_t>(chunks_.size()); }
    int64_t chunk_num_sequences(int64_t chunk) const override { return at(chunk).sequences; }
    int64_t chunk_num_samples(int64_t chunk) const override { return at(chunk).samples; }
    std::string description() const override { return "CBF file '" + path_ + "'"; }
    std::vector<std::string> sequence_keys(int64_t chunk) const override {  // CNTK's: a running number
        const CbfChunk& k = at(chunk);
        std::vector<std::string> keys;
        for (int64_t s = 0; s < k.sequences; ++s) keys.push_back(std::to_string(k.first_sequence + s));
        return keys;
    }

    std::vector<std::vector<SequenceData>> read_chunk(int64_t chunk) const override {
        const CbfChunk& k = at(chunk);
        const std::vector<uint8_t> bytes = read_range(path_, k.offset, k.size);
        Bytes b(bytes.data(), bytes.size(),
                "chunk " + std::to_string(chunk) + " of CBF file '" + path_ + "'");
        const size_t n = static_cast<size_t>(k.sequences);
        b.take(4 * n);  // the samples per sequence: the sizes below decide
        std::vector<std::vector<SequenceData>> out(n, std::vector<SequenceData>(streams_.size()));
        uint64_t dense_budget = kMaxDenseSparseValues;
        for (size_t i = 0; i < streams_.size(); ++i)
            for (size_t s = 0; s < n; ++s)
                out[s][i] = streams_[i].sparse ? sparse(b, streams_[i], dense_budget) : dense(b, streams_[i]);
        CTK_CHECK(b.left() == 0, IOError, b.where(), " has ", b.left(), " bytes past its last sequence");
        return out;
    }

private:
    const CbfChunk& at(int64_t chunk) const {
        CTK_CHECK(chunk >= 0 && chunk < num_chunks(), IndexError, description(), ": chunk ", chunk,
                  " out of range (", num_chunks(), " chunks)");
        return chunks_[size_t(chunk)];
    }

    // `count` values of the stream's element type as floats.
    static void values(Bytes& b, const CbfStreamHeader& s, size_t count, float* out) {
        const size_t width = s.f64 ? 8 : 4;
        CTK_CHECK(count <= b.left() / width, IOError, b.where(), " is truncated: stream '", s.name,
                  "' needs ", count, " values, ", b.left(), " bytes are left");
        const uint8_t* p = b.take(count * width);
        if (!s.f64) {
            std::memcpy(out, p, count * 4);
            return;
        }
        for (size_t k = 0; k < count; ++k) {
            double v;
            std::memcpy(&v, p + 8 * k, 8);
            out[k] = static_cast<float>(v);
        }
    }

    static SequenceData dense(Bytes& b, const CbfStreamHeader& s) {
        const uint32_t n = b.get<uint32_t>();
        const uint64_t count = uint64_t(n) * uint64_t(s.dim);
        CTK_CHECK(count <= b.left() / (s.f64 ? 8 : 4), IOError, b.where(), " is truncated: stream '", s.name,
                  "' needs ", n, " samples of ", s.dim, " values");
        SequenceData out;
        out.data = Tensor::empty(Shape{int64_t(n), s.dim});
        values(b, s, size_t(count), out.data.data<float>());
        return out;
    }

    // CSC with samples as columns: the values, their rows, the entries per sample. A sequence whose
    // samples each hold at most one entry of value 1 (or 0) comes as one-hot indices (-1: none).
    static SequenceData sparse(Bytes& b, const CbfStreamHeader& s, uint64_t& dense_budget) {
        const uint32_t n = b.get<uint32_t>();
        const int32_t nnz = b.get<int32_t>();
        CTK_CHECK(nnz >= 0 && uint64_t(nnz) * ((s.f64 ? 8 : 4) + 4) + uint64_t(n) * 4 <= b.left(), IOError,
                  b.where(), ": stream '", s.name, "' announces ", nnz, " entries in ", n,
                  " samples, more than the chunk holds");
        std::vector<float> value(static_cast<size_t>(nnz));
        values(b, s, value.size(), value.data());
        std::vector<int32_t> row(static_cast<size_t>(nnz)), per_sample(n);
        if (nnz > 0) std::memcpy(row.data(), b.take(4 * size_t(nnz)), 4 * size_t(nnz));
        if (n > 0) std::memcpy(per_sample.data(), b.take(4 * size_t(n)), 4 * size_t(n));
        int64_t total = 0;
        bool one_hot = true;
        for (int32_t c : per_sample) {
            CTK_CHECK(c >= 0, IOError, b.where(), ": stream '", s.name, "' has a sample with ", c,
                      " entries");
            total += c;
            one_hot = one_hot && c <= 1;
        }
        CTK_CHECK(total == nnz, IOError, b.where(), ": stream '", s.name, "' has ", nnz,
                  " entries but its samples count ", total);
        for (int32_t r : row)
            CTK_CHECK(r >= 0 && r < s.dim, IOError, b.where(), ": stream '", s.name, "' has the row index ",
                      r, " outside its dim ", s.dim);
        for (float v : value) one_hot = one_hot && (v == 1.0f || v == 0.0f);
        SequenceData out;
        if (one_hot) {
            out.one_hot_indices = Tensor::empty(Shape{int64_t(n)}, DataType::i64);
            int64_t* p = out.one_hot_indices.data<int64_t>();
            for (size_t i = 0, k = 0; i < n; k += size_t(per_sample[i++]))
                p[i] = per_sample[i] == 1 && value[k] == 1.0f ? row[k] : -1;
            return out;
        }
        // The dim comes from the file: a few entries in a huge dim must not make the reader allocate
        // gigabytes (libFuzzer found a 6 KB file asking for 2.5 GB here), nor its sequences together.
        CTK_CHECK(uint64_t(n) * uint64_t(s.dim) <= dense_budget, IOError, b.where(), ": stream '", s.name,
                  "' has ", n, " samples of dim ", s.dim,
                  " with entries other than one-hot ones: more than the ", kMaxDenseSparseValues,
                  " values ctk holds densely for one chunk");
        dense_budget -= uint64_t(n) * uint64_t(s.dim);
        out.data = Tensor::zeros(Shape{int64_t(n), s.dim});
        float* d = out.data.data<float>();
        for (size_t i = 0, k = 0; i < n; ++i)
            for (int32_t e = 0; e < per_sample[i]; ++e, ++k) d[i * size_t(s.dim) + size_t(row[k])] = value[k];
        return out;
    }

    std::string path_;
    std::vector<CbfStreamHeader> streams_;
    std::vector<CbfChunk> chunks_;
    std::map<size_t, std::string> exposed_;
    std::vector<StreamInformation> infos_;
};

// ---- writing ----

template <typename T>
void put(std::string& out, T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

// One stream of one sequence as CBF wants it: the samples' values (dense) or their entries (sparse).
struct Entries {
    uint32_t samples = 0;
    std::vector<float> values;
    std::vector<int32_t> rows, per_sample;
};

Entries entries_of(const SequenceData& d, const CbfStream& s) {
    Entries e;
    if (d.one_hot_indices.defined()) {
        const Tensor idx = d.one_hot_indices.contiguous();
        e.samples = static_cast<uint32_t>(idx.numel());
        for (int64_t i = 0; i < idx.numel(); ++i) {
            const int64_t r = idx.data<int64_t>()[i];
            if (!s.is_sparse) {
                e.values.resize(e.values.size() + size_t(s.dim), 0.0f);
                if (r >= 0) e.values[e.values.size() - size_t(s.dim) + size_t(r)] = 1.0f;
                continue;
            }
            e.per_sample.push_back(r >= 0 ? 1 : 0);
            if (r >= 0) e.values.push_back(1.0f), e.rows.push_back(static_cast<int32_t>(r));
        }
        return e;
    }
    const Tensor t = d.data.to(DataType::f32).contiguous();
    e.samples = static_cast<uint32_t>(t.dim(0));
    const float* p = t.data<float>();
    if (!s.is_sparse) {
        e.values.assign(p, p + t.numel());
        return e;
    }
    for (uint32_t i = 0; i < e.samples; ++i) {
        int32_t count = 0;
        for (int64_t r = 0; r < s.dim; ++r)
            if (const float v = p[i * size_t(s.dim) + size_t(r)]; v != 0.0f)
                e.values.push_back(v), e.rows.push_back(static_cast<int32_t>(r)), ++count;
        e.per_sample.push_back(count);
    }
    return e;
}

}  // namespace

DeserializerPtr cbf_deserializer(const std::string& path, const std::vector<StreamDef>& streams) {
    return std::make_shared<CbfDeserializer>(path, streams);
}

std::vector<CbfStream> infer_ctf_streams(const std::string& ctf_path) {
    std::ifstream in(ctf_path);
    CTK_CHECK(in, IOError, "cannot open CTF file '", ctf_path, "'");
    std::vector<CbfStream> out;
    std::map<std::string, size_t> index;
    std::string line;
    int64_t line_no = 0;
    while (std::getline(in, line)) {
        ++line_no;
        size_t p = line.find('|');
        while (p != std::string::npos) {
            const size_t end = line.find('|', p + 1);
            const std::string part =
                line.substr(p + 1, end == std::string::npos ? std::string::npos : end - p - 1);
            p = end;
            if (part.empty() || part[0] == '#') continue;
            const size_t name_end = part.find_first_of(" \t");
            const std::string name = part.substr(0, name_end);
            auto it = index.find(name);
            if (it == index.end()) {
                it = index.emplace(name, out.size()).first;
                out.push_back({name, name, false, 0});
            }
            CbfStream& s = out[it->second];
            int64_t count = 0;
            size_t q = name_end;
            while (q != std::string::npos && q < part.size()) {
                const size_t start = part.find_first_not_of(" \t\r", q);
                if (start == std::string::npos) break;
                const size_t stop = part.find_first_of(" \t\r", start);
                const std::string token =
                    part.substr(start, stop == std::string::npos ? std::string::npos : stop - start);
                q = stop;
                const size_t colon = token.find(':');
                if (colon != std::string::npos) {
                    s.is_sparse = true;
                    char* e = nullptr;
                    const long long i = std::strtoll(token.c_str(), &e, 10);
                    CTK_CHECK(e == token.c_str() + colon && i >= 0, IOError, ctf_path, ":", line_no,
                              ": input '", name, "' has the sparse entry '", token, "'");
                    s.dim = std::max<int64_t>(s.dim, i + 1);
                } else {
                    ++count;
                }
            }
            if (!s.is_sparse) s.dim = std::max(s.dim, count);
        }
    }
    CTK_CHECK(!out.empty(), IOError, "CTF file '", ctf_path, "' has no inputs");
    for (const CbfStream& s : out)
        CTK_CHECK(s.dim > 0, IOError, "CTF file '", ctf_path, "': input '", s.name, "' has no values");
    return out;
}

int64_t convert_ctf_to_cbf(const std::string& ctf_path, const std::string& cbf_path,
                           const std::vector<CbfStream>& streams, int64_t chunk_size_bytes,
                           bool legacy_chunking) {
    CTK_CHECK(!streams.empty(), ValueError, "convert_ctf_to_cbf: no streams given");
    CTK_CHECK(chunk_size_bytes > 0, ValueError, "convert_ctf_to_cbf: chunk_size_bytes is ", chunk_size_bytes);
    std::vector<StreamDef> defs;
    for (const CbfStream& s : streams)
        defs.push_back(StreamDef{s.name, s.field, {s.dim}, s.is_sparse, false});
    const DeserializerPtr ctf = ctf_deserializer(ctf_path, defs);

    // Written chunk by chunk into cbf_path.tmp, renamed over cbf_path once complete (a CTF file of
    // gigabytes never sits in memory, and a failed conversion leaves no half file under the name).
    AtomicFile file(cbf_path);
    std::string out;
    put(out, kMagic);
    put(out, kVersion);
    std::vector<CbfChunk> chunks;
    std::vector<std::vector<Entries>> pending;  // [sequence][stream]
    auto flush = [&] {
        if (pending.empty()) return;
        CbfChunk k;
        k.offset = file.size() + static_cast<int64_t>(out.size());
        k.sequences = static_cast<int64_t>(pending.size());
        for (const auto& seq : pending) {
            uint32_t longest = 0;
            for (const Entries& e : seq) longest = std::max(longest, e.samples);
            put(out, longest);
            k.samples += longest;
        }
        for (size_t i = 0; i < streams.size(); ++i)
            for (const auto& seq : pending) {
                const Entries& e = seq[i];
                put(out, e.samples);
                if (streams[i].is_sparse) put(out, static_cast<int32_t>(e.values.size()));
                out.append(reinterpret_cast<const char*>(e.values.data()), e.values.size() * sizeof(float));
                if (!streams[i].is_sparse) continue;
                out.append(reinterpret_cast<const char*>(e.rows.data()), e.rows.size() * sizeof(int32_t));
                out.append(reinterpret_cast<const char*>(e.per_sample.data()),
                           e.per_sample.size() * sizeof(int32_t));
            }
        chunks.push_back(k);
        pending.clear();
        file.write(out);
        out.clear();
    };
    int64_t estimate = 0, sequences = 0;
    for (int64_t c = 0; c < ctf->num_chunks(); ++c)
        for (const std::vector<SequenceData>& seq : ctf->read_chunk(c)) {
            // CNTK's ctf2bin checked its estimate when a sequence started; its estimate was never reset.
            if (estimate >= chunk_size_bytes) {
                flush();
                if (!legacy_chunking) estimate = 0;
            }
            std::vector<Entries> row;
            for (size_t i = 0; i < streams.size(); ++i) {
                row.push_back(entries_of(seq[i], streams[i]));
                const Entries& e = row.back();
                estimate += streams[i].is_sparse ? int64_t(8 * e.values.size() + 4 * e.samples)
                                                 : int64_t(4 * e.values.size());
            }
            pending.push_back(std::move(row));
            ++sequences;
        }
    flush();

    const int64_t header = file.size() + static_cast<int64_t>(out.size());
    put(out, kMagic);
    put(out, static_cast<uint32_t>(chunks.size()));
    put(out, static_cast<uint32_t>(streams.size()));
    for (const CbfStream& s : streams) {
        put(out, static_cast<uint8_t>(s.is_sparse ? 1 : 0));
        put(out, static_cast<uint32_t>(s.name.size()));
        out += s.name;
        put(out, static_cast<uint8_t>(0));  // float32
        put(out, static_cast<uint32_t>(s.dim));
    }
    for (const CbfChunk& k : chunks) {
        put(out, k.offset);
        put(out, static_cast<uint32_t>(k.sequences));
        put(out, static_cast<uint32_t>(k.samples));
    }
    put(out, header);
    file.write(out);
    file.commit();
    return sequences;
}

}  // namespace ctk
