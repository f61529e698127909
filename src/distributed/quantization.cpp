// CNTK's ColumnQuantizer and ValueQuantizer (Source/Math in CNTK 2.5), rewritten from their formulas:
// sums run in the gradient's own type, in row order, as CNTK's CPU code summed them.
#include "distributed/quantization.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ctk/core/error.h"

namespace ctk::distributed::detail {

MatrixView cntk_matrix_view(const Shape& shape) {
    MatrixView m;
    if (shape.rank() == 0) return m;
    m.rows = shape.dims().back();
    m.cols = m.rows > 0 ? shape.numel() / m.rows : 0;
    return m;
}

bool cntk_columns_requested() {
    const char* v = std::getenv("CTK_QUANTIZATION_COLUMNS");
    if (!v || !*v || std::strcmp(v, "ctk") == 0) return false;
    CTK_CHECK(std::strcmp(v, "cntk") == 0, ValueError,
              "CTK_QUANTIZATION_COLUMNS must be 'ctk' or 'cntk', not '", v, "'");
    return true;
}

MatrixView matrix_view(const Shape& shape) {
    MatrixView m = cntk_matrix_view(shape);
    const int64_t numel = shape.numel();
    if (m.rows >= kShortColumn || (shape.rank() <= 2 && numel < kFoldedColumn) || cntk_columns_requested())
        return m;
    // Each column's range costs two values on the wire: columns of a convolution kernel's 3 or 5 values
    // (CNTK's view) would cost more than they save. Fold inner dims into columns of >= kFoldedColumn.
    m.rows = 1;
    for (auto d = shape.dims().rbegin(); d != shape.dims().rend() && m.rows < kFoldedColumn; ++d)
        m.rows *= *d;
    m.cols = m.rows > 0 ? numel / m.rows : 0;
    return m;
}

Stripe stripe_of(int64_t cols, int64_t workers, int64_t worker) {
    const int64_t per = cols / workers, extra = cols % workers;
    return Stripe{per * worker + std::min(extra, worker), per + (worker < extra ? 1 : 0)};
}

namespace {

int64_t words_per_column(int64_t rows, int bits) {
    return (rows * bits + 31) / 32;
}

// One column's quantizer: its range and the factors between values and codes.
template <typename T>
struct ValueQuantizer {
    T lower{}, upper{}, qfactor{}, ufactor{};
    uint32_t top = 0;  // the largest code
    ValueQuantizer(T lo, T hi, int bits) : lower(lo), upper(hi) {
        const uint64_t range_end = uint64_t(1) << bits;
        top = static_cast<uint32_t>(range_end - 1);
        const T used = static_cast<T>(range_end - (bits > 1 ? 1 : 0));
        if (upper - lower >= static_cast<T>(1e-36)) {
            qfactor = used / (upper - lower);
            ufactor = (upper - lower) / used;
        }
    }
    uint32_t quantize(T v, int bits) const {
        if (bits == 1) return v >= T(0) ? 1u : 0u;
        if (v <= lower) return 0;
        if (v >= upper) return top;
        return static_cast<uint32_t>((v - lower) * qfactor);  // truncation, as CNTK's cast
    }
    T dequantize(uint32_t q) const { return (static_cast<T>(q) + T(0.5)) * ufactor + lower; }
};

// CNTK's ComputeRangeStatColjSubset for one column of v = value + residual.
template <typename T>
void column_range(const T* value, const T* residual, int64_t rows, int bits, T& lower, T& upper) {
    if (bits == 1) {  // zeroThresholdFor1Bit, the setting CNTK's Python API always used
        T sum0 = 0, sum1 = 0;
        int64_t n0 = 0, n1 = 0;
        for (int64_t i = 0; i < rows; ++i) {
            const T v = value[i] + residual[i];
            if (v < T(0)) {
                sum0 += v;
                ++n0;
            } else {
                sum1 += v;
                ++n1;
            }
        }
        const T m0 = sum0 / static_cast<T>(std::max<int64_t>(n0, 1));
        const T m1 = sum1 / static_cast<T>(std::max<int64_t>(n1, 1));
        const T mid = T(0.5) * (m0 + m1);
        const T radius = T(2) * (m1 - mid);
        lower = mid - radius;
        upper = mid + radius;
        return;
    }
    T squares = 0;
    for (int64_t i = 0; i < rows; ++i) {
        const T v = value[i] + residual[i];
        squares += v * v;
    }
    const T stddev = std::sqrt(squares / static_cast<T>(rows));
    lower = T(-4) * stddev;
    upper = T(4) * stddev;
}

}  // namespace

template <typename T>
int64_t quantized_column_bytes(int64_t rows, int bits) {
    return 2 * static_cast<int64_t>(sizeof(T)) + words_per_column(rows, bits) * 4;
}

template <typename T>
void quantize_columns(const T* value, T* residual, int64_t rows, int64_t cols, int bits, std::string& out) {
    const int64_t words = words_per_column(rows, bits);
    std::vector<uint32_t> packed(static_cast<size_t>(words));
    for (int64_t c = 0; c < cols; ++c) {
        const T* v = value + c * rows;
        T* r = residual + c * rows;
        T lower, upper;
        column_range(v, r, rows, bits, lower, upper);
        const ValueQuantizer<T> q(lower, upper, bits);
        std::fill(packed.begin(), packed.end(), 0u);
        for (int64_t i = 0; i < rows; ++i) {
            const T x = v[i] + r[i];
            const uint32_t code = q.quantize(x, bits);
            r[i] = x - q.dequantize(code);
            const int64_t bit = i * bits;
            packed[static_cast<size_t>(bit / 32)] |= code << (bit % 32);
        }
        out.append(reinterpret_cast<const char*>(&lower), sizeof(T));
        out.append(reinterpret_cast<const char*>(&upper), sizeof(T));
        out.append(reinterpret_cast<const char*>(packed.data()), packed.size() * 4);
    }
}

template <typename T>
void dequantize_columns(const char*& in, const char* end, T* out, int64_t rows, int64_t cols, int bits,
                        bool add) {
    const int64_t words = words_per_column(rows, bits);
    const uint32_t mask = bits == 32 ? ~0u : (1u << bits) - 1u;
    std::vector<uint32_t> packed(static_cast<size_t>(words));
    for (int64_t c = 0; c < cols; ++c) {
        CTK_CHECK(end - in >= quantized_column_bytes<T>(rows, bits), IOError,
                  "quantized gradient: a message from another worker ends in the middle of a column");
        T lower, upper;
        std::memcpy(&lower, in, sizeof(T));
        std::memcpy(&upper, in + sizeof(T), sizeof(T));
        std::memcpy(packed.data(), in + 2 * sizeof(T), packed.size() * 4);
        in += quantized_column_bytes<T>(rows, bits);
        const ValueQuantizer<T> q(lower, upper, bits);
        T* o = out + c * rows;
        for (int64_t i = 0; i < rows; ++i) {
            const int64_t bit = i * bits;
            const T v = q.dequantize((packed[static_cast<size_t>(bit / 32)] >> (bit % 32)) & mask);
            o[i] = add ? o[i] + v : v;
        }
    }
}

template int64_t quantized_column_bytes<float>(int64_t, int);
template int64_t quantized_column_bytes<double>(int64_t, int);
template void quantize_columns<float>(const float*, float*, int64_t, int64_t, int, std::string&);
template void quantize_columns<double>(const double*, double*, int64_t, int64_t, int, std::string&);
template void dequantize_columns<float>(const char*&, const char*, float*, int64_t, int64_t, int, bool);
template void dequantize_columns<double>(const char*&, const char*, double*, int64_t, int64_t, int, bool);

}  // namespace ctk::distributed::detail
