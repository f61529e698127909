// CNTK's gradient quantizer (1-bit SGD, Seide et al., Interspeech 2014, and its 2-16 bit variants), on
// the host. A gradient is CNTK's column-major matrix: rows = its innermost (last Python) dim, column j
// the j-th contiguous run of `rows` elements; every statistic is per column. Hand-written: no library
// quantizes this way, and the exact formulas (docs/distributed.md) are what CNTK's users trained with.
#pragma once

#include <cstdint>
#include <string>

#include "ctk/core/shape.h"

namespace ctk::distributed::detail {

struct MatrixView {
    int64_t rows = 1, cols = 1;
};
// CNTK's matrix view of a gradient of `shape`: rows = its innermost dim (a scalar is 1 x 1).
MatrixView cntk_matrix_view(const Shape& shape);
// The view ctk quantizes with: CNTK's where its columns hold at least kShortColumn values, and for
// small matrices and vectors (rank <= 2, fewer than kFoldedColumn values: CNTK's own test vectors);
// otherwise (convolution kernels, thin output layers) inner dims folded into columns of at least
// kFoldedColumn values, or the whole tensor. CTK_QUANTIZATION_COLUMNS=cntk keeps CNTK's view always.
inline constexpr int64_t kShortColumn = 128, kFoldedColumn = 256;
MatrixView matrix_view(const Shape& shape);

// The columns [begin, begin + count) that worker `worker` of `workers` owns out of `cols` (CNTK's
// stripes: the first cols % workers workers own one more; a worker may own none).
struct Stripe {
    int64_t begin = 0, count = 0;
};
Stripe stripe_of(int64_t cols, int64_t workers, int64_t worker);

// Bytes one quantized column takes on the wire: its range (two T) and its codes, packed.
template <typename T>
int64_t quantized_column_bytes(int64_t rows, int bits);

// Quantizes `cols` columns of `rows` values: v = value + residual, then each column's codes with CNTK's
// range rule (1 bit: the means of the negative and the non-negative values; more: +-4 standard
// deviations around 0), appended to `out`; residual becomes v - dequantized(v) (error feedback).
// Column c of value and residual starts at c * rows.
template <typename T>
void quantize_columns(const T* value, T* residual, int64_t rows, int64_t cols, int bits, std::string& out);

// Reads `cols` quantized columns from `in` (advanced past them) and writes (add: adds) their values to
// `out` (column c at c * rows). Throws IOError when `in` ends too soon.
template <typename T>
void dequantize_columns(const char*& in, const char* end, T* out, int64_t rows, int64_t cols, int bits,
                        bool add);

}  // namespace ctk::distributed::detail
