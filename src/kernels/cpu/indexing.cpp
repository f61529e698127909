// CPU indexing and layout kernels: gather, scatter_add, permute (tiled transpose), concat, pad, one_hot,
// top_k. Index operands arrive as contiguous int64 tensors already checked against their axis by the op
// API. Kernels that only move data are written per element size, so dtypes of one size share code.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_common.h"
#include "kernels/gather_layout.h"
#include "kernels/pad_source.h"

namespace ctk::cpu {

namespace {

constexpr int64_t kGrainElements = 32768;  // elements per thread below which threads do not pay

int64_t product(const Shape& shape, int begin, int end) {
    int64_t n = 1;
    for (int d = begin; d < end; ++d) n *= shape[d];
    return n;
}

// ---- gather ----

// Iterates over the output, data and indices advancing as gather_strides says.
template <typename U>
void gather_kernel(const KernelCall& call) {
    const Tensor &data = call.inputs[0], &idx = call.inputs[1];
    const Tensor& out = call.outputs[0];
    const int axis = call.attr<AxisAttrs>().axis;
    const Dims data_strides = byte_strides(data), idx_strides = byte_strides(idx);
    const auto [ds, is] = detail::gather_strides(data_strides, idx_strides, axis);
    const int64_t axis_bytes = data_strides[static_cast<size_t>(axis)];
    constexpr int64_t e = sizeof(U);
    auto plan = detail::make_strided_plan<3>(out.shape().dims(), {byte_strides(out), ds, is});
    detail::run_strided<3>(
        plan, {bytes(out), bytes(data), bytes(idx)},
        [&](std::array<char*, 3> p, int64_t n, std::array<int64_t, 3> s) {
            if (s[2] == 0) {  // one index for the whole run: copy a strip of data
                const char* src = p[1] + *reinterpret_cast<const int64_t*>(p[2]) * axis_bytes;
                if (s[0] == e && s[1] == e) {
                    std::memcpy(p[0], src, static_cast<size_t>(n * e));
                } else {
                    for (int64_t i = 0; i < n; ++i)
                        *reinterpret_cast<U*>(p[0] + i * s[0]) = *reinterpret_cast<const U*>(src + i * s[1]);
                }
            } else {  // the run walks the indices (gather along the last axis)
                for (int64_t i = 0; i < n; ++i) {
                    const int64_t k = *reinterpret_cast<const int64_t*>(p[2] + i * s[2]);
                    *reinterpret_cast<U*>(p[0] + i * s[0]) =
                        *reinterpret_cast<const U*>(p[1] + i * s[1] + k * axis_bytes);
                }
            }
        });
}

// ---- scatter_add ----

// out = target, then out[outer, idx[j], inner] += updates[outer, j, inner]. Threads split the outer rows
// and strips of the inner block, never the indices: each output element is summed by one thread in index
// order, so duplicates accumulate without races and the result does not depend on the thread count.
template <typename T>
void scatter_add_kernel(const KernelCall& call) {
    const Tensor &target = call.inputs[0], &idx = call.inputs[1];
    const Tensor updates = call.inputs[2].contiguous();
    Tensor out = call.outputs[0];
    const int axis = call.attr<AxisAttrs>().axis;
    out.copy_from(target);
    const Shape& shape = out.shape();
    const int64_t outer = product(shape, 0, axis), size = shape[axis];
    const int64_t inner = product(shape, axis + 1, shape.rank()), n = idx.numel();
    if (n == 0) return;
    constexpr int64_t kStrip = 256;  // elements: long enough to vectorise, short enough to split rows
    const int64_t strips = (inner + kStrip - 1) / kStrip;
    const int64_t grain = std::max<int64_t>(1, kGrainElements / (n * std::min(inner, kStrip)));
    const int64_t* k = idx.data<int64_t>();
    T* o = out.data<T>();
    const T* u = updates.data<T>();
    parallel_for(0, outer * strips, grain, [&](int64_t b, int64_t e) {
        for (int64_t task = b; task < e; ++task) {
            const int64_t row = task / strips, i0 = (task % strips) * kStrip,
                          i1 = std::min(inner, i0 + kStrip);
            T* out_row = o + row * size * inner;
            const T* upd_row = u + row * n * inner;
            for (int64_t j = 0; j < n; ++j) {
                T* dst = out_row + k[j] * inner;
                const T* src = upd_row + j * inner;
                for (int64_t i = i0; i < i1; ++i) dst[i] = store<T>(load(dst[i]) + load(src[i]));
            }
        }
    });
}

// ---- permute ----

// Copies src into dst (contiguous, same shape). Where src's fastest axis is not dst's fastest axis (a
// transpose), reading along dst's rows would touch a new cache line per element; square tiles keep both
// the lines read and the lines written in L1.
template <typename U>
void copy_to_contiguous(const Tensor& dst, const Tensor& src) {
    constexpr int64_t e = sizeof(U);
    auto plan = detail::make_strided_plan<2>(dst.shape().dims(), {byte_strides(dst), byte_strides(src)});
    const int rank = static_cast<int>(plan.shape.size()), last = rank - 1;
    const Dims &dst_strides = plan.byte_strides[0], &src_strides = plan.byte_strides[1];
    int fast = last;  // the axis along which src moves least, when that is not dst's fastest axis
    for (int d = 0; d < last; ++d) {
        const int64_t s = std::abs(src_strides[static_cast<size_t>(d)]);
        if (s != 0 && s < std::abs(src_strides[static_cast<size_t>(fast)])) fast = d;
    }
    if (fast == last || std::abs(src_strides[static_cast<size_t>(last)]) == e) {
        detail::run_strided<2>(plan, {bytes(dst), bytes(src)},
                               [](std::array<char*, 2> p, int64_t n, std::array<int64_t, 2> s) {
                                   if (s[1] == e) {
                                       std::memcpy(p[0], p[1], static_cast<size_t>(n * e));
                                   } else {
                                       U* o = reinterpret_cast<U*>(p[0]);
                                       for (int64_t i = 0; i < n; ++i)
                                           o[i] = *reinterpret_cast<const U*>(p[1] + i * s[1]);
                                   }
                               });
        return;
    }
    // 16 elements (at least one 64-byte line) per tile side measured fastest for f32 on 4000^2 and 4096^2.
    constexpr int64_t kTile = std::max<int64_t>(16, 64 / e);
    const int64_t rows = plan.shape[static_cast<size_t>(fast)], cols = plan.shape[static_cast<size_t>(last)];
    const int64_t dst_row = dst_strides[static_cast<size_t>(fast)];
    const int64_t src_row = src_strides[static_cast<size_t>(fast)],
                  src_col = src_strides[static_cast<size_t>(last)];
    std::vector<int> batch;  // every other axis, slowest first
    int64_t batches = 1;
    for (int d = 0; d < last; ++d) {
        if (d == fast) continue;
        batch.push_back(d);
        batches *= plan.shape[static_cast<size_t>(d)];
    }
    const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
    char* dst_base = bytes(dst);
    const char* src_base = bytes(src);
    parallel_for(
        0, batches * row_tiles * col_tiles, kGrainElements / (kTile * kTile), [&](int64_t b, int64_t e_) {
            for (int64_t task = b; task < e_; ++task) {
                int64_t rest = task;
                const int64_t c0 = (rest % col_tiles) * kTile;
                rest /= col_tiles;
                const int64_t r0 = (rest % row_tiles) * kTile;
                rest /= row_tiles;
                int64_t dst_off = 0, src_off = 0;
                for (size_t k = batch.size(); k-- > 0;) {
                    const size_t d = static_cast<size_t>(batch[k]);
                    const int64_t i = rest % plan.shape[d];
                    rest /= plan.shape[d];
                    dst_off += i * dst_strides[d];
                    src_off += i * src_strides[d];
                }
                const int64_t r1 = std::min(rows, r0 + kTile), c1 = std::min(cols, c0 + kTile);
                for (int64_t r = r0; r < r1; ++r) {
                    U* o = reinterpret_cast<U*>(dst_base + dst_off + r * dst_row);  // dst's last stride is e
                    const char* s = src_base + src_off + r * src_row;
                    for (int64_t c = c0; c < c1; ++c) o[c] = *reinterpret_cast<const U*>(s + c * src_col);
                }
            }
        });
}

template <typename U>
void permute_kernel(const KernelCall& call) {
    copy_to_contiguous<U>(call.outputs[0], call.inputs[0].permute(call.attr<PermuteAttrs>().order));
}

// ---- concat ----

// Each piece is one strided copy into its slice of the output (coalesced rows, memcpy, threaded).
void concat_kernel(const KernelCall& call) {
    const int axis = call.attr<AxisAttrs>().axis;
    const Tensor& out = call.outputs[0];
    int64_t at = 0;
    for (const Tensor& x : call.inputs) {
        const int64_t n = x.dim(axis);
        if (x.numel() > 0) out.slice(axis, at, at + n).copy_from(x);
        at += n;
    }
}

// ---- pad ----

using detail::pad_source;  // kernels/pad_source.h

// Works row by row over the output's last axis: the other axes map to one source row (or to the fill),
// then the row is the left edge, the interior (one memcpy when x's rows are contiguous), the right edge.
template <typename U>
void pad_kernel(const KernelCall& call) {
    const auto& attrs = call.attr<PadAttrs>();
    const Tensor& x = call.inputs[0];
    const Tensor& out = call.outputs[0];
    U fill;
    store_from_double(&fill, out.dtype(), attrs.value);
    const int rank = out.rank();
    U* o_base = static_cast<U*>(out.raw_data());
    const U* x_base = static_cast<const U*>(x.raw_data());
    if (rank == 0) {
        *o_base = *x_base;
        return;
    }
    const int last = rank - 1;
    const int64_t width = out.dim(last), n = x.dim(last), lo = attrs.lo[static_cast<size_t>(last)];
    const int64_t x_step = x.strides()[static_cast<size_t>(last)];
    const int64_t rows = out.numel() / width;
    const PadMode mode = attrs.mode;
    parallel_for(0, rows, std::max<int64_t>(1, kGrainElements / width), [&](int64_t b, int64_t e) {
        Dims pos(static_cast<size_t>(last));  // the output row's index on the outer axes
        for (int64_t d = last - 1, rem = b; d >= 0; --d) {
            pos[static_cast<size_t>(d)] = rem % out.dim(static_cast<int>(d));
            rem /= out.dim(static_cast<int>(d));
        }
        for (int64_t row = b; row < e; ++row) {
            U* o = o_base + row * width;
            int64_t offset = 0;
            bool inside = true;
            for (int d = 0; d < last && inside; ++d) {
                const size_t du = static_cast<size_t>(d);
                const int64_t src = pad_source(pos[du] - attrs.lo[du], x.dim(d), mode);
                inside = src >= 0;
                offset += src * x.strides()[du];
            }
            if (!inside || n == 0) {  // n == 0 only in constant mode: mirrored pads of an empty axis are 0
                std::fill(o, o + width, fill);
            } else {
                const U* s = x_base + offset;
                for (int64_t j = 0; j < lo; ++j) {
                    const int64_t src = pad_source(j - lo, n, mode);
                    o[j] = src < 0 ? fill : s[src * x_step];
                }
                if (x_step == 1) {
                    std::memcpy(o + lo, s, static_cast<size_t>(n) * sizeof(U));
                } else {
                    for (int64_t j = 0; j < n; ++j) o[lo + j] = s[j * x_step];
                }
                for (int64_t j = lo + n; j < width; ++j) {
                    const int64_t src = pad_source(j - lo, n, mode);
                    o[j] = src < 0 ? fill : s[src * x_step];
                }
            }
            for (int d = last - 1; d >= 0; --d) {  // odometer step to the next row
                if (++pos[static_cast<size_t>(d)] < out.dim(d)) break;
                pos[static_cast<size_t>(d)] = 0;
            }
        }
    });
}

// ---- one_hot ----

// out viewed as [outer, classes, inner] with the indices as [outer, inner]: zero, then one 1 per index.
// An index of -1 (Value::one_hot's all-zero row, through detail::one_hot_of_checked) sets nothing; the op
// API lets no other out-of-range index through.
template <typename T>
void one_hot_kernel(const KernelCall& call) {
    const auto& attrs = call.attr<OneHotAttrs>();
    const Tensor& idx = call.inputs[0];
    const Tensor& out = call.outputs[0];
    const int64_t classes = attrs.num_classes;
    const int64_t inner = product(idx.shape(), attrs.axis, idx.rank()),
                  outer = product(idx.shape(), 0, attrs.axis);
    const int64_t* k = idx.data<int64_t>();
    T* o = out.data<T>();
    const T one = store<T>(compute_t<T>(1)), zero = store<T>(compute_t<T>(0));
    parallel_for(0, outer, std::max<int64_t>(1, kGrainElements / (classes * inner)),
                 [&](int64_t b, int64_t e) {
                     std::fill(o + b * classes * inner, o + e * classes * inner, zero);
                     for (int64_t r = b; r < e; ++r)
                         for (int64_t i = 0; i < inner; ++i)
                             if (const int64_t c = k[r * inner + i]; c >= 0)  // -1: an all-zero row
                                 o[(r * classes + c) * inner + i] = one;
                 });
}

// ---- top_k ----

// The order top_k reports: larger first, NaN above everything (as argmax treats NaN), and equal values
// (NaNs among themselves, +0 and -0) by lower index first. A strict total order, so results are unique.
template <typename C>
inline bool ranks_before(const std::pair<C, int64_t>& a, const std::pair<C, int64_t>& b) {
    if constexpr (std::is_floating_point_v<C>) {
        const bool a_nan = a.first != a.first, b_nan = b.first != b.first;
        if (a_nan || b_nan) return a_nan && b_nan ? a.second < b.second : a_nan;
    }
    if (a.first != b.first) return a.first > b.first;
    return a.second < b.second;
}

// Small k (the common case: top-5 of a class axis) keeps a sorted list of the best k seen so far and
// rejects most elements with one comparison against its last entry: O(n) per line. Larger k copies the
// line out, partitions it around the k-th element and sorts the first k: O(n + k log k). Scanning in
// index order means an equal value met later never displaces an earlier one, matching the tie rule.
// Lines are independent and split over threads.
template <typename T>
void top_k_kernel(const KernelCall& call) {
    using C = compute_t<T>;
    using Entry = std::pair<C, int64_t>;
    constexpr int64_t kSmallK = 32;
    const auto& attrs = call.attr<TopKAttrs>();
    const Tensor x = call.inputs[0].contiguous();
    const Tensor &values = call.outputs[0], &indices = call.outputs[1];
    const int axis = attrs.axis;
    const int64_t k = attrs.k, n = x.dim(axis);
    const int64_t inner = product(x.shape(), axis + 1, x.rank()), outer = product(x.shape(), 0, axis);
    const T* xp = x.data<T>();
    T* vp = values.data<T>();
    int64_t* ip = indices.data<int64_t>();
    auto before = [](const Entry& a, const Entry& b) { return ranks_before(a, b); };
    parallel_for(0, outer * inner, std::max<int64_t>(1, kGrainElements / n), [&](int64_t b, int64_t e) {
        std::vector<Entry> line(static_cast<size_t>(k <= kSmallK ? k : n));
        for (int64_t t = b; t < e; ++t) {
            const int64_t r = t / inner, i = t % inner;
            const T* src = xp + r * n * inner + i;
            if (k <= kSmallK) {
                int64_t filled = 0;
                for (int64_t j = 0; j < n; ++j) {
                    const Entry cand{load(src[j * inner]), j};
                    if (filled == k && !before(cand, line[static_cast<size_t>(k - 1)])) continue;
                    int64_t at = filled < k ? filled++ : k - 1;  // drop the last entry when full
                    for (; at > 0 && before(cand, line[static_cast<size_t>(at - 1)]); --at)
                        line[static_cast<size_t>(at)] = line[static_cast<size_t>(at - 1)];
                    line[static_cast<size_t>(at)] = cand;
                }
            } else {
                for (int64_t j = 0; j < n; ++j) line[static_cast<size_t>(j)] = {load(src[j * inner]), j};
                const auto kth = line.begin() + (k - 1);
                if (k < n) std::nth_element(line.begin(), kth, line.end(), before);
                std::sort(line.begin(), kth + 1, before);
            }
            for (int64_t j = 0; j < k; ++j) {
                const int64_t at = (r * k + j) * inner + i, from = line[static_cast<size_t>(j)].second;
                vp[at] = src[from * inner];  // the element itself: no round trip through C
                ip[at] = from;
            }
        }
    });
}

// ---- registration ----

constexpr DataType kAllTypes[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16,
                                  DataType::i32, DataType::i64, DataType::u8};

// Registers a data-movement kernel for every dtype, picking the instantiation by element size.
void add_by_size(KernelTable& t, OpKind op, KernelFn b1, KernelFn b2, KernelFn b4, KernelFn b8) {
    for (DataType d : kAllTypes) {
        const size_t size = size_of(d);
        t.add(op, DeviceType::cpu, d, size == 1 ? b1 : size == 2 ? b2 : size == 4 ? b4 : b8);
    }
}

template <typename T>
void add_arithmetic(KernelTable& t) {
    constexpr DataType d = dtype_v<T>;
    t.add(OpKind::scatter_add, DeviceType::cpu, d, scatter_add_kernel<T>);
    t.add(OpKind::top_k, DeviceType::cpu, d, top_k_kernel<T>);
    if constexpr (!std::is_integral_v<T>) t.add(OpKind::one_hot, DeviceType::cpu, d, one_hot_kernel<T>);
}

}  // namespace

void register_indexing(KernelTable& t) {
    add_by_size(t, OpKind::gather, gather_kernel<uint8_t>, gather_kernel<uint16_t>, gather_kernel<uint32_t>,
                gather_kernel<uint64_t>);
    add_by_size(t, OpKind::permute, permute_kernel<uint8_t>, permute_kernel<uint16_t>,
                permute_kernel<uint32_t>, permute_kernel<uint64_t>);
    add_by_size(t, OpKind::pad, pad_kernel<uint8_t>, pad_kernel<uint16_t>, pad_kernel<uint32_t>,
                pad_kernel<uint64_t>);
    add_by_size(t, OpKind::concat, concat_kernel, concat_kernel, concat_kernel, concat_kernel);
    add_arithmetic<float>(t);
    add_arithmetic<double>(t);
    add_arithmetic<Half>(t);
    add_arithmetic<BFloat16>(t);
    add_arithmetic<int32_t>(t);
    add_arithmetic<int64_t>(t);
}

}  // namespace ctk::cpu
