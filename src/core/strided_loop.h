// Internal: iterate N strided operands over one shape, with dims coalesced and the innermost dim handed
// to a callback as a 1-D run. Used by copies and by the element-wise and reduction kernels.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "ctk/core/parallel.h"
#include "ctk/core/shape.h"

namespace ctk::detail {

template <int N>
struct StridedPlan {
    Dims shape;                        // coalesced, innermost last; never empty (at least {1})
    std::array<Dims, N> byte_strides;  // per operand, same rank as shape
    int64_t inner() const { return shape.back(); }
    int64_t outer() const {
        int64_t n = 1;
        for (size_t i = 0; i + 1 < shape.size(); ++i) n *= shape[i];
        return n;
    }
};

// Visits the dims in the memory order of operand 0 (the output, for every caller: largest stride first,
// ties in their own order), drops size-1 dims and merges dims that are contiguous with respect to each
// other in every operand. The order matters for outputs in a permuted dense layout (channels-last
// activations, ctk/core/tensor.h): their operands then coalesce into one run instead of one per pixel.
template <int N>
StridedPlan<N> make_strided_plan(const Dims& shape, const std::array<Dims, N>& byte_strides) {
    StridedPlan<N> plan;
    std::vector<size_t> order(shape.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto magnitude = [&](size_t d) {
        return byte_strides[0][d] < 0 ? -byte_strides[0][d] : byte_strides[0][d];
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return magnitude(a) > magnitude(b); });
    for (size_t i : order) {
        if (shape[i] == 1) continue;
        bool merge = !plan.shape.empty();
        for (int k = 0; k < N && merge; ++k)
            merge = plan.byte_strides[k].back() == byte_strides[k][i] * shape[i];
        if (merge) {
            plan.shape.back() *= shape[i];
            for (int k = 0; k < N; ++k) plan.byte_strides[k].back() = byte_strides[k][i];
        } else {
            plan.shape.push_back(shape[i]);
            for (int k = 0; k < N; ++k) plan.byte_strides[k].push_back(byte_strides[k][i]);
        }
    }
    if (plan.shape.empty()) {
        plan.shape.push_back(1);
        for (int k = 0; k < N; ++k) plan.byte_strides[k].push_back(0);
    }
    return plan;
}

// Calls inner(ptrs, n, inner_strides) for every innermost run of outer rows [row_begin, row_end).
template <int N, typename Inner>
void run_strided_rows(const StridedPlan<N>& plan, std::array<char*, N> base, int64_t row_begin,
                      int64_t row_end, Inner&& inner) {
    const int outer_rank = static_cast<int>(plan.shape.size()) - 1;
    std::array<int64_t, N> inner_strides;
    for (int k = 0; k < N; ++k) inner_strides[k] = plan.byte_strides[k].back();
    std::vector<int64_t> idx(static_cast<size_t>(outer_rank), 0);
    // position at row_begin
    int64_t rem = row_begin;
    for (int d = outer_rank - 1; d >= 0; --d) {
        idx[d] = rem % plan.shape[d];
        rem /= plan.shape[d];
    }
    std::array<char*, N> ptr;
    for (int k = 0; k < N; ++k) {
        ptr[k] = base[k];
        for (int d = 0; d < outer_rank; ++d) ptr[k] += idx[d] * plan.byte_strides[k][d];
    }
    for (int64_t row = row_begin; row < row_end; ++row) {
        inner(ptr, plan.inner(), inner_strides);
        for (int d = outer_rank - 1; d >= 0; --d) {  // odometer increment
            for (int k = 0; k < N; ++k) ptr[k] += plan.byte_strides[k][d];
            if (++idx[d] < plan.shape[d]) break;
            for (int k = 0; k < N; ++k) ptr[k] -= plan.byte_strides[k][d] * plan.shape[d];
            idx[d] = 0;
        }
    }
}

// Runs the plan, in parallel over outer rows when the work is large enough. Rows longer than two grains
// with too few of them to share out (a contiguous tensor is one row after coalescing) are cut into
// grain-sized pieces, so that element-wise work on contiguous data uses every thread too. Callbacks
// see ordinary runs either way (a piece of a row is a run with the row's strides).
template <int N, typename Inner>
void run_strided(const StridedPlan<N>& plan, std::array<char*, N> base, Inner&& inner,
                 int64_t grain_elements = 32768) {
    const int64_t rows = plan.outer(), inner_n = plan.inner();
    if (inner_n >= 2 * grain_elements && rows < 2 * static_cast<int64_t>(num_threads()) &&
        num_threads() > 1) {
        const int64_t pieces = (inner_n + grain_elements - 1) / grain_elements;
        const int64_t piece_len = (inner_n + pieces - 1) / pieces;
        std::array<int64_t, N> inner_strides;
        for (int k = 0; k < N; ++k) inner_strides[k] = plan.byte_strides[k].back();
        parallel_for(0, rows * pieces, 1, [&](int64_t b, int64_t e) {
            for (int64_t t = b; t < e; ++t) {
                const int64_t row = t / pieces, begin = (t % pieces) * piece_len;
                const int64_t n = std::min(piece_len, inner_n - begin);
                // The row's start: decompose `row` over the outer dims.
                std::array<char*, N> ptr = base;
                int64_t rem = row;
                for (int d = static_cast<int>(plan.shape.size()) - 2; d >= 0; --d) {
                    const int64_t i = rem % plan.shape[static_cast<size_t>(d)];
                    rem /= plan.shape[static_cast<size_t>(d)];
                    for (int k = 0; k < N; ++k) ptr[k] += i * plan.byte_strides[k][static_cast<size_t>(d)];
                }
                for (int k = 0; k < N; ++k) ptr[k] += begin * inner_strides[k];
                inner(ptr, n, inner_strides);
            }
        });
        return;
    }
    const int64_t grain_rows = std::max<int64_t>(1, grain_elements / std::max<int64_t>(inner_n, 1));
    parallel_for(0, rows, grain_rows,
                 [&](int64_t b, int64_t e) { run_strided_rows<N>(plan, base, b, e, inner); });
}

}  // namespace ctk::detail
