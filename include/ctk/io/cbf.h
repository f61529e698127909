// CNTK Binary Format (CBF, version 1): CNTK's CNTKBinaryReader files, and a converter from CNTK text
// format that writes them. See docs/training.md ("Readers") for the layout and what differs from CNTK.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ctk/io/minibatch_source.h"

namespace ctk {

// The deserializer over a CBF file. Every stream of the file is exposed with its name and shape (its
// sample dim), dense or sparse as the file says; `streams` renames them as CNTK's CBFDeserializer did:
// StreamDef{name, field} exposes the file's stream `field` as `name` (its shape and is_sparse are
// ignored: the file decides). float64 streams are read as float32 (CNTK refused them). Sparse samples
// with a single 1 come as one-hot indices, as from the CTF reader. Errors name the file and the chunk.
DeserializerPtr cbf_deserializer(const std::string& path, const std::vector<StreamDef>& streams = {});

// One stream of a conversion (a line of CNTK's ctf2bin header file: name, alias in the CTF file,
// dense or sparse, sample dim).
struct CbfStream {
    std::string name;
    std::string field;
    bool is_sparse = false;
    int64_t dim = 0;
};

// The streams of a CTF file, found by reading it: every input name, sparse when its values are
// `index:value`, and its dim (the values per sample, or the largest index + 1).
std::vector<CbfStream> infer_ctf_streams(const std::string& ctf_path);

// Writes the CTF file `ctf_path` as CBF to `cbf_path` (atomically), in chunks of about
// `chunk_size_bytes` of data each. legacy_chunking reproduces CNTK's ctf2bin.py, whose size estimate
// was never reset: every chunk after the first holds a single sequence. Returns the number of sequences.
int64_t convert_ctf_to_cbf(const std::string& ctf_path, const std::string& cbf_path,
                           const std::vector<CbfStream>& streams, int64_t chunk_size_bytes = 32 << 20,
                           bool legacy_chunking = false);

}  // namespace ctk
