// TensorBoardProgressWriter: CNTK's progress values as a TensorBoard event file.
//
// The file is TensorFlow's record format: each record is its length (uint64, little-endian), the masked
// CRC-32C of those 8 bytes, the data, and the masked CRC-32C of the data; each record's data is a
// serialized tensorflow.Event. The two messages involved (Event: wall_time = 1, step = 2,
// file_version = 3, summary = 5; Summary.Value: tag = 1, simple_value = 2) are encoded here by hand:
// Debian ships no TensorFlow protos, and these few fields are all a scalar log needs. CRC-32C
// (Castagnoli) is written here too; zlib has only the IEEE polynomial.
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "ctk/core/error.h"
#include "ctk/train/progress.h"

namespace ctk {

namespace {

const std::array<uint32_t, 256>& crc32c_table() {
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t{};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reversed 0x1EDC6F41
            t[i] = c;
        }
        return t;
    }();
    return table;
}

void put_varint(std::string& out, uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}
template <typename T>
void put_fixed(std::string& out, T v) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));  // little-endian hosts only, as the rest of ctk
    out.append(bytes, sizeof(T));
}
void put_bytes_field(std::string& out, int field, const std::string& bytes) {
    put_varint(out, (static_cast<uint64_t>(field) << 3) | 2);
    put_varint(out, bytes.size());
    out += bytes;
}

double wall_time() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// An Event with wall_time, step and one more field (already encoded).
std::string event(int64_t step, const std::string& field) {
    std::string e;
    put_varint(e, (1 << 3) | 1);  // wall_time: double
    put_fixed(e, wall_time());
    put_varint(e, 2 << 3);  // step: int64
    put_varint(e, static_cast<uint64_t>(step));
    return e + field;
}

}  // namespace

uint32_t crc32c(const std::string& bytes) {
    const auto& t = crc32c_table();
    uint32_t c = 0xFFFFFFFFu;
    for (unsigned char b : bytes) c = t[(c ^ b) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

namespace {
uint32_t masked_crc(const std::string& bytes) {
    const uint32_t c = crc32c(bytes);
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}
}  // namespace

TensorBoardProgressWriter::TensorBoardProgressWriter(std::optional<int64_t> freq, const std::string& log_dir,
                                                     std::optional<int> rank, FunctionPtr model)
    : ProgressWriter(freq.value_or(kNever), 0, kNever, 0), model_(std::move(model)) {
    CTK_CHECK(!freq || *freq > 0, ValueError, "TensorBoardProgressWriter: freq must be positive, got ",
              *freq);
    if (rank && *rank != 0) return;  // only worker 0 writes, as CNTK
    std::error_code ec;
    std::filesystem::create_directories(log_dir, ec);
    char host[256] = "localhost";
    ::gethostname(host, sizeof(host) - 1);
    const auto seconds = static_cast<long long>(wall_time());
    path_ = (std::filesystem::path(log_dir) / ("events.out.tfevents." + std::to_string(seconds) + "." + host))
                .string();
    file_ = std::fopen(path_.c_str(), "wb");
    CTK_CHECK(file_ != nullptr, IOError, "TensorBoardProgressWriter: cannot create '", path_, "'");
    std::string version;
    put_bytes_field(version, 3, "brain.Event:2");
    write_record(event(0, version));
}

TensorBoardProgressWriter::~TensorBoardProgressWriter() {
    if (file_) std::fclose(file_);
}

void TensorBoardProgressWriter::write_record(const std::string& data) {
    std::string header;
    put_fixed<uint64_t>(header, data.size());
    std::string record = header;
    put_fixed<uint32_t>(record, masked_crc(header));
    record += data;
    put_fixed<uint32_t>(record, masked_crc(data));
    CTK_CHECK(std::fwrite(record.data(), 1, record.size(), file_) == record.size(), IOError,
              "TensorBoardProgressWriter: cannot write '", path_, "'");
}

void TensorBoardProgressWriter::write_value(const std::string& name, double value, int64_t step) {
    CTK_CHECK(!closed_, Error, "Attempting to use a closed TensorBoardProgressWriter");
    if (!file_) return;
    std::string v;
    put_bytes_field(v, 1, name);
    put_varint(v, (2 << 3) | 5);  // simple_value: float
    put_fixed(v, static_cast<float>(value));
    std::string summary;
    put_bytes_field(summary, 1, v);
    std::string field;
    put_bytes_field(field, 5, summary);
    write_record(event(step, field));
}

void TensorBoardProgressWriter::flush() {
    CTK_CHECK(!closed_, Error, "Attempting to use a closed TensorBoardProgressWriter");
    if (file_) std::fflush(file_);
}

void TensorBoardProgressWriter::close() {
    CTK_CHECK(!closed_, Error, "Attempting to use a closed TensorBoardProgressWriter");
    if (file_) std::fclose(file_);
    file_ = nullptr;
    closed_ = true;
}

namespace {
double average(ProgressWriter::Sums sums, ProgressWriter::Range samples) {
    const int64_t n = samples.second - samples.first;
    return n > 0 ? (sums.second - sums.first) / static_cast<double>(n) : 0.0;
}
}  // namespace

void TensorBoardProgressWriter::on_write_training_update(Range samples, Range, Sums loss,
                                                         std::optional<Sums> metric) {
    write_value("minibatch/avg_loss", average(loss, samples), total_training_updates());
    write_value("minibatch/avg_metric", metric ? average(*metric, samples) : 0.0, total_training_updates());
}

void TensorBoardProgressWriter::on_write_test_update(Range, Range, Sums) {
    throw NotImplementedError(
        "TensorBoardProgressWriter does not support recording per-minibatch cross-validation results");
}

void TensorBoardProgressWriter::on_write_training_summary(int64_t samples, int64_t, int64_t summaries,
                                                          double loss, std::optional<double> metric,
                                                          int64_t) {
    const double n = samples > 0 ? static_cast<double>(samples) : 1.0;
    write_value("summary/avg_loss", samples > 0 ? loss / n : 0.0, summaries);
    write_value("summary/avg_metric", samples > 0 && metric ? *metric / n : 0.0, summaries);
}

void TensorBoardProgressWriter::on_write_test_summary(int64_t samples, int64_t, int64_t summaries,
                                                      double metric, int64_t) {
    const double avg = samples > 0 ? metric / static_cast<double>(samples) : 0.0;
    // As CNTK: against training minibatches when there were any, so the two graphs line up.
    if (total_training_updates() != 0)
        write_value("minibatch/test_avg_metric", avg, total_training_updates());
    else
        write_value("summary/test_avg_metric", avg, summaries);
}

void TensorBoardProgressWriter::write(const std::string&, double) {}

}  // namespace ctk
