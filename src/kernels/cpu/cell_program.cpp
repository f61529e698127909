// The fused recurrent loop on the CPU (ctk/kernels/cell_program.h). Values live as packed rows: frame t's
// rows are first_[t] .. first_[t] + active_[t], the longest sequences first, so a frame's matrix product is
// one GEMM over contiguous rows of only the sequences that reach it. Every computed node keeps its rows
// for backward (an LSTM cell about 20 x hidden floats per row); input nodes are read where they lie.
// The element-wise formulas are the CPU kernels' (elementwise.cpp), so the fused and the general path
// agree to rounding.
#include <cmath>
#include <cstring>

#include "ctk/core/error.h"
#include "ctk/core/parallel.h"
#include "ctk/kernels/cell_program.h"
#include "kernels/cntk_math.h"
#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/vector_math.h"
#include "kernels/elementwise_math.h"

namespace ctk::cell {

namespace {

bool is_input(Kind k) {
    return k == Kind::frame_input || k == Kind::sequence_input || k == Kind::fixed_input;
}

template <typename T>
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda, const T* b, int64_t ldb,
          T beta, T* c, int64_t ldc) {
    cpu::gemm(ta, tb, m, n, k, T(1), a, lda, b, ldb, beta, c, ldc);
}

template <typename T, typename F>
void map1(T* y, const T* x, int64_t n, F f) {
    for (int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
}

template <typename T>
void unary_forward(OpKind op, T* y, const T* x, int64_t n) {
    if constexpr (std::is_same_v<T, float>) {  // as the element-wise kernels compute them
        if (op == OpKind::exp) return cpu::vmath::exp(y, x, n);
        if (op == OpKind::tanh) return cpu::vmath::tanh(y, x, n);
        if (op == OpKind::sigmoid) return cpu::vmath::sigmoid(y, x, n);
    }
    switch (op) {
        case OpKind::negate:
            return map1(y, x, n, [](T v) { return -v; });
        case OpKind::square:
            return map1(y, x, n, [](T v) { return v * v; });
        case OpKind::exp:
            return map1(y, x, n, [](T v) { return std::exp(v); });
        case OpKind::log:
            return map1(y, x, n, [](T v) { return cntk_math::log_of(v); });
        case OpKind::tanh:
            return map1(y, x, n, [](T v) { return std::tanh(v); });
        case OpKind::sigmoid:
            return map1(y, x, n, [](T v) { return elementwise_math::sigmoid_of(v); });
        case OpKind::relu:
            return map1(y, x, n, [](T v) { return v < T(0) ? T(0) : v; });
        case OpKind::softplus:
            return map1(y, x, n, [](T v) { return std::max(v, T(0)) + std::log1p(std::exp(-std::abs(v))); });
        default:
            CTK_THROW(NotImplementedError, "cell program: ", op_name(op), " is not a fused unary op");
    }
}

// gx += d op / dx * g, from x or from y = op(x) (each rule reads only the one it names: the other
// operand may not have been kept).
template <typename T, typename F>
void grad_from(T* gx, const T* v, const T* g, int64_t n, F f) {
    for (int64_t i = 0; i < n; ++i) gx[i] += f(v[i], g[i]);
}

template <typename T>
void unary_backward(OpKind op, T* gx, const T* x, const T* y, const T* g, int64_t n) {
    switch (op) {
        case OpKind::negate:
            for (int64_t i = 0; i < n; ++i) gx[i] -= g[i];
            return;
        case OpKind::square:
            return grad_from(gx, x, g, n, [](T v, T d) { return T(2) * v * d; });
        case OpKind::exp:
            return grad_from(gx, y, g, n, [](T w, T d) { return w * d; });
        case OpKind::log:
            return grad_from(gx, x, g, n, [](T v, T d) { return cntk_math::log_grad(v, d); });
        case OpKind::tanh:
            return grad_from(gx, y, g, n, [](T w, T d) { return (T(1) - w * w) * d; });
        case OpKind::sigmoid:
            return grad_from(gx, y, g, n, [](T w, T d) { return w * (T(1) - w) * d; });
        case OpKind::relu:
            return grad_from(gx, y, g, n, [](T w, T d) { return w > T(0) ? d : T(0); });
        case OpKind::softplus:
            return grad_from(gx, x, g, n, [](T v, T d) { return elementwise_math::sigmoid_of(v) * d; });
        default:
            CTK_THROW(NotImplementedError, "cell program: ", op_name(op), " is not a fused unary op");
    }
}

// y = op(a, b) with a of width n or 1 (sa = 0) and b likewise.
template <typename T, typename F>
void map2(T* y, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n, F f) {
    if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], b[i]);
    } else if (sa == 1) {
        const T bv = b[0];
        for (int64_t i = 0; i < n; ++i) y[i] = f(a[i], bv);
    } else if (sb == 1) {
        const T av = a[0];
        for (int64_t i = 0; i < n; ++i) y[i] = f(av, b[i]);
    } else {
        const T v = f(a[0], b[0]);
        for (int64_t i = 0; i < n; ++i) y[i] = v;
    }
}

template <typename T>
void binary_forward(OpKind op, T* y, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n) {
    switch (op) {
        case OpKind::plus:
            return map2(y, a, sa, b, sb, n, [](T u, T v) { return u + v; });
        case OpKind::minus:
            return map2(y, a, sa, b, sb, n, [](T u, T v) { return u - v; });
        case OpKind::element_times:
            return map2(y, a, sa, b, sb, n, [](T u, T v) { return u * v; });
        default:
            CTK_THROW(NotImplementedError, "cell program: ", op_name(op), " is not a fused binary op");
    }
}

// ga += d/da, gb += d/db (either null: not wanted); a broadcast operand (stride 0) takes the sum.
template <typename T>
void binary_backward(OpKind op, const T* g, int64_t n, const T* a, int64_t sa, T* ga, const T* b, int64_t sb,
                     T* gb) {
    auto add_to = [&](T* dst, int64_t stride, auto term) {
        if (dst == nullptr) return;
        if (stride == 1) {
            for (int64_t i = 0; i < n; ++i) dst[i] += term(i);
        } else {
            T sum = 0;
            for (int64_t i = 0; i < n; ++i) sum += term(i);
            dst[0] += sum;
        }
    };
    switch (op) {
        case OpKind::plus:
            add_to(ga, sa, [&](int64_t i) { return g[i]; });
            add_to(gb, sb, [&](int64_t i) { return g[i]; });
            return;
        case OpKind::minus:
            add_to(ga, sa, [&](int64_t i) { return g[i]; });
            add_to(gb, sb, [&](int64_t i) { return -g[i]; });
            return;
        case OpKind::element_times:
            add_to(ga, sa, [&](int64_t i) { return g[i] * b[i * sb]; });
            add_to(gb, sb, [&](int64_t i) { return g[i] * a[i * sa]; });
            return;
        default:
            CTK_THROW(NotImplementedError, "cell program: ", op_name(op), " is not a fused binary op");
    }
}

// Rows per parallel chunk so that a chunk has some thousands of elements of work.
int64_t grain_for(int64_t row_elements) {
    return std::max<int64_t>(1, 4096 / std::max<int64_t>(row_elements, 1));
}

}  // namespace

bool supports_unary(OpKind op) {
    switch (op) {
        case OpKind::negate:
        case OpKind::square:
        case OpKind::exp:
        case OpKind::log:
        case OpKind::tanh:
        case OpKind::sigmoid:
        case OpKind::relu:
        case OpKind::softplus:
            return true;
        default:
            return false;
    }
}

bool supports_binary(OpKind op) {
    return op == OpKind::plus || op == OpKind::minus || op == OpKind::element_times;
}

std::string check(const Program& p) {
    const int n = static_cast<int>(p.nodes.size());
    auto ref_ok = [&](const Ref& r, int i, bool any_order) {
        return r.value >= 0 && r.value < n && (any_order || r.value < i) && r.offset >= 0 && r.width >= 1 &&
               r.offset + r.width <= p.nodes[static_cast<size_t>(r.value)].width;
    };
    for (int i = 0; i < n; ++i) {
        const Node& d = p.nodes[static_cast<size_t>(i)];
        const std::string at = "node " + std::to_string(i) + ": ";
        if (d.width < 1) return at + "no width";
        switch (d.kind) {
            case Kind::frame_input:
            case Kind::sequence_input:
            case Kind::fixed_input:
                break;
            case Kind::delay:
                if (!ref_ok(d.a, i, true) || is_input(p.nodes[static_cast<size_t>(d.a.value)].kind) ||
                    d.a.width != d.width)
                    return at + "a delay must read a computed node of its width";
                if (!ref_ok(d.b, i, false) || !is_input(p.nodes[static_cast<size_t>(d.b.value)].kind) ||
                    p.nodes[static_cast<size_t>(d.b.value)].kind == Kind::frame_input ||
                    (d.b.width != d.width && d.b.width != 1))
                    return at + "a delay's initial state must be a sequence or fixed input of its width or 1";
                if (d.offset < 1) return at + "a delay's offset must be >= 1";
                break;
            case Kind::unary:
                if (!supports_unary(d.op) || !ref_ok(d.a, i, false) || d.a.width != d.width)
                    return at + "unsupported unary op or operand width";
                break;
            case Kind::binary:
                if (!supports_binary(d.op) || !ref_ok(d.a, i, false) || !ref_ok(d.b, i, false) ||
                    (d.a.width != d.width && d.a.width != 1) || (d.b.width != d.width && d.b.width != 1))
                    return at + "unsupported binary op or operand widths";
                break;
            case Kind::matmul: {
                if (!ref_ok(d.a, i, false) || is_input(p.nodes[static_cast<size_t>(d.a.value)].kind))
                    return at + "a matmul's left operand must be computed in the loop";
                if (d.b.value < 0 || d.b.value >= n ||
                    p.nodes[static_cast<size_t>(d.b.value)].kind != Kind::fixed_input ||
                    p.nodes[static_cast<size_t>(d.b.value)].width != d.a.width * d.width || d.b.offset != 0)
                    return at + "a matmul's matrix must be a fixed input of [k, width]";
                break;
            }
        }
    }
    return {};
}

namespace {

// Which computed nodes' values backward reads (beyond delays' sources and matmuls' operands).
std::vector<bool> read_by_backward(const Program& p) {
    std::vector<bool> reads(p.nodes.size(), false);
    for (size_t i = 0; i < p.nodes.size(); ++i) {
        const Node& d = p.nodes[i];
        if (d.kind == Kind::unary) {
            if (d.op == OpKind::sigmoid || d.op == OpKind::tanh || d.op == OpKind::exp ||
                d.op == OpKind::relu)
                reads[i] = true;  // from y
            else if (d.op != OpKind::negate)
                reads[static_cast<size_t>(d.a.value)] = true;  // from x
        } else if (d.kind == Kind::binary && d.op == OpKind::element_times) {
            reads[static_cast<size_t>(d.a.value)] = reads[static_cast<size_t>(d.b.value)] = true;
        }
    }
    return reads;
}

}  // namespace

Run::Run(const Program& program, std::vector<Tensor> inputs, std::vector<int64_t> lengths, int64_t frames,
         bool for_backward)
    : program_(program),
      inputs_(std::move(inputs)),
      lengths_(std::move(lengths)),
      frames_(frames),
      for_backward_(for_backward) {
    const std::string bad = check(program_);
    CTK_CHECK(bad.empty(), ValueError, "cell program: ", bad);
    CTK_CHECK(inputs_.size() == program_.nodes.size(), ValueError, "cell program: ", inputs_.size(),
              " input tensors for ", program_.nodes.size(), " nodes");
    const int64_t n = static_cast<int64_t>(lengths_.size());
    bool have_dtype = false;
    for (size_t i = 0; i < program_.nodes.size(); ++i) {
        const Node& d = program_.nodes[i];
        if (!is_input(d.kind)) continue;
        Tensor& t = inputs_[i];
        CTK_CHECK(t.defined() && t.device().is_cpu(), ValueError, "cell program: input node ", i,
                  " needs a CPU tensor");
        if (!have_dtype) dtype_ = t.dtype(), device_ = t.device(), have_dtype = true;
        CTK_CHECK(t.dtype() == dtype_ && (dtype_ == DataType::f32 || dtype_ == DataType::f64), ValueError,
                  "cell program: inputs must all be f32 or all f64");
        CTK_CHECK(t.device() == device_, ValueError, "cell program: inputs must all be on one device");
        const int64_t expect = d.kind == Kind::frame_input      ? n * frames_ * d.width
                               : d.kind == Kind::sequence_input ? n * d.width
                                                                : d.width;
        CTK_CHECK(t.numel() == expect, ShapeError, "cell program: input node ", i, " has ", t.numel(),
                  " elements, expected ", expect);
        t = t.contiguous();
    }
    // Longest sequences first (stable), then each frame's active prefix.
    order_.resize(static_cast<size_t>(n));
    for (int64_t s = 0; s < n; ++s) {
        order_[static_cast<size_t>(s)] = s;
        CTK_CHECK(lengths_[static_cast<size_t>(s)] >= 0 && lengths_[static_cast<size_t>(s)] <= frames_,
                  ValueError, "cell program: sequence ", s, " has length ", lengths_[static_cast<size_t>(s)],
                  " of ", frames_, " frames");
    }
    std::stable_sort(order_.begin(), order_.end(), [&](int64_t a, int64_t b) {
        return lengths_[static_cast<size_t>(a)] > lengths_[static_cast<size_t>(b)];
    });
    active_.assign(static_cast<size_t>(frames_), 0);
    first_.assign(static_cast<size_t>(frames_), 0);
    for (int64_t t = 0; t < frames_; ++t) {
        int64_t k = 0;
        while (k < n && lengths_[static_cast<size_t>(order_[static_cast<size_t>(k)])] > t) ++k;
        active_[static_cast<size_t>(t)] = k;
        first_[static_cast<size_t>(t)] = rows_;
        rows_ += k;
    }
    // Which values outlive their frame.
    const size_t count = program_.nodes.size();
    kept_.assign(count, false);
    const std::vector<bool> reads =
        for_backward_ ? read_by_backward(program_) : std::vector<bool>(count, false);
    for (size_t i = 0; i < count; ++i) {
        const Node& d = program_.nodes[i];
        if (is_input(d.kind)) continue;
        kept_[i] = kept_[i] || d.output || reads[i];
        if (d.kind == Kind::delay) kept_[static_cast<size_t>(d.a.value)] = true;
        if (d.kind == Kind::matmul && for_backward_) kept_[static_cast<size_t>(d.a.value)] = true;
    }
    values_.resize(count);
    for (size_t i = 0; i < count; ++i)
        if (!is_input(program_.nodes[i].kind))
            values_[i] = Tensor::empty(Shape{kept_[i] ? rows_ : n, program_.nodes[i].width}, dtype_, device_);
    if (dtype_ == DataType::f64)
        forward<double>();
    else
        forward<float>();
    // The one-frame values are done with.
    for (size_t i = 0; i < count; ++i)
        if (!kept_[i]) values_[i] = Tensor();
}

int64_t Run::kept_bytes() const {
    int64_t b = 0;
    for (const Tensor& t : values_)
        if (t.defined()) b += t.numel() * static_cast<int64_t>(t.element_size());
    return b;
}

namespace {

// Where a node's row of (frame t, packed row r) lies.
template <typename T>
struct RowAt {
    const Program& p;
    const std::vector<Tensor>& inputs;
    const std::vector<Tensor>& values;
    const std::vector<bool>& kept;
    const std::vector<int64_t>& order;
    const std::vector<int64_t>& first;
    int64_t frames;
    T* operator()(int v, int64_t t, int64_t r) const {
        const Node& d = p.nodes[static_cast<size_t>(v)];
        switch (d.kind) {
            case Kind::frame_input:
                return inputs[static_cast<size_t>(v)].data<T>() +
                       (order[static_cast<size_t>(r)] * frames + t) * d.width;
            case Kind::sequence_input:
                return inputs[static_cast<size_t>(v)].data<T>() + order[static_cast<size_t>(r)] * d.width;
            case Kind::fixed_input:
                return inputs[static_cast<size_t>(v)].data<T>();
            default: {
                const Tensor& value = values[static_cast<size_t>(v)];
                if (!value.defined())
                    return nullptr;  // a one-frame value after forward (backward never reads it)
                return value.data<T>() +
                       ((kept[static_cast<size_t>(v)] ? first[static_cast<size_t>(t)] : 0) + r) * d.width;
            }
        }
    }
    T* at(const Ref& ref, int64_t t, int64_t r) const {
        T* p = (*this)(ref.value, t, r);
        return p == nullptr ? nullptr : p + ref.offset;
    }
};

// The runs of element-wise nodes between matmuls: [begin, end), and each matmul as [i, i).
std::vector<std::pair<int, int>> segments(const Program& p) {
    std::vector<std::pair<int, int>> out;
    int begin = -1;
    for (int i = 0; i <= static_cast<int>(p.nodes.size()); ++i) {
        const bool ends =
            i == static_cast<int>(p.nodes.size()) || p.nodes[static_cast<size_t>(i)].kind == Kind::matmul;
        const bool elementwise = !ends && !is_input(p.nodes[static_cast<size_t>(i)].kind);
        if (elementwise && begin < 0) begin = i;
        if (ends && begin >= 0) out.emplace_back(begin, i), begin = -1;
        if (ends && i < static_cast<int>(p.nodes.size())) out.emplace_back(i, i);
    }
    return out;
}

int64_t segment_work(const Program& p, int begin, int end) {
    int64_t work = 0;
    for (int i = begin; i < end; ++i) work += p.nodes[static_cast<size_t>(i)].width;
    return work;
}

}  // namespace

template <typename T>
void Run::forward() {
    const RowAt<T> row{program_, inputs_, values_, kept_, order_, first_, frames_};
    const auto segs = segments(program_);
    for (int64_t step = 0; step < frames_; ++step) {
        const int64_t t = program_.backward_in_time ? frames_ - 1 - step : step;
        const int64_t n = active_[static_cast<size_t>(t)];
        if (n == 0) continue;
        for (const auto& seg : segs) {
            // Plain copies, not a structured binding: clang before 16 cannot capture one in the lambda below.
            const auto begin = seg.first, end = seg.second;
            if (begin == end) {  // a matmul over the frame's rows
                const Node& d = program_.nodes[static_cast<size_t>(begin)];
                const Node& src = program_.nodes[static_cast<size_t>(d.a.value)];
                gemm<T>(false, d.transpose_b, n, d.width, d.a.width, row.at(d.a, t, 0), src.width,
                        inputs_[static_cast<size_t>(d.b.value)].data<T>(),
                        d.transpose_b ? d.a.width : d.width, T(0), row(begin, t, 0), d.width);
                continue;
            }
            parallel_for(0, n, grain_for(segment_work(program_, begin, end)), [&](int64_t r0, int64_t r1) {
                for (int64_t r = r0; r < r1; ++r)
                    for (int i = begin; i < end; ++i) {
                        const Node& d = program_.nodes[static_cast<size_t>(i)];
                        T* y = row(i, t, r);
                        switch (d.kind) {
                            case Kind::delay: {
                                const int64_t s = delay_source(d, t);
                                const bool inside = source_exists(s, r);
                                if (inside) {
                                    std::memcpy(y, row.at(d.a, s, r),
                                                static_cast<size_t>(d.width) * sizeof(T));
                                } else {
                                    const T* init = row.at(d.b, t, r);
                                    for (int64_t k = 0; k < d.width; ++k) y[k] = init[d.b.width == 1 ? 0 : k];
                                }
                                break;
                            }
                            case Kind::unary:
                                unary_forward<T>(d.op, y, row.at(d.a, t, r), d.width);
                                break;
                            case Kind::binary:
                                binary_forward<T>(d.op, y, row.at(d.a, t, r), d.a.width == 1 ? 0 : 1,
                                                  row.at(d.b, t, r), d.b.width == 1 ? 0 : 1, d.width);
                                break;
                            default:
                                break;
                        }
                    }
            });
        }
    }
}

Tensor Run::output(int node) const {
    const Node& d = program_.nodes.at(static_cast<size_t>(node));
    CTK_CHECK(!is_input(d.kind) && kept_[static_cast<size_t>(node)], ValueError, "cell program: node ", node,
              " is not an output");
    const int64_t n = static_cast<int64_t>(lengths_.size());
    Tensor out = Tensor::zeros(Shape{n, frames_, d.width}, dtype_, device_);
    const size_t bytes = static_cast<size_t>(d.width) * out.element_size();
    const char* src = static_cast<const char*>(values_[static_cast<size_t>(node)].raw_data());
    char* dst = static_cast<char*>(out.raw_data());
    for (int64_t t = 0; t < frames_; ++t)
        for (int64_t r = 0; r < active_[static_cast<size_t>(t)]; ++r)
            std::memcpy(dst + static_cast<size_t>(order_[static_cast<size_t>(r)] * frames_ + t) * bytes,
                        src + static_cast<size_t>(first_[static_cast<size_t>(t)] + r) * bytes, bytes);
    return out;
}

std::vector<Tensor> Run::backward(const std::vector<Tensor>& output_grads,
                                  const std::vector<bool>& needs) const {
    CTK_CHECK(for_backward_, ValueError, "cell program: this run kept nothing for backward");
    CTK_CHECK(output_grads.size() == program_.nodes.size() && needs.size() == program_.nodes.size(),
              ValueError, "cell program: backward needs one gradient and one flag per node");
    return dtype_ == DataType::f64 ? backward_impl<double>(output_grads, needs)
                                   : backward_impl<float>(output_grads, needs);
}

// Gradients: a delay's source and a matmul's output keep rows for every frame (the first is added to
// from later frames, the second makes the matrix's gradient at the end); frame and sequence inputs'
// gradients go straight into their results; everything else lives for one frame, fixed inputs' rows
// summed into their result after each frame (in row order: the same sums for any thread count).
template <typename T>
std::vector<Tensor> Run::backward_impl(const std::vector<Tensor>& output_grads,
                                       const std::vector<bool>& needs) const {
    const size_t count = program_.nodes.size();
    const int64_t n_seq = static_cast<int64_t>(lengths_.size());
    // Which nodes need a gradient: the marked inputs and every computed node upstream of one.
    std::vector<bool> wanted(count, false);
    for (size_t i = 0; i < count; ++i) wanted[i] = is_input(program_.nodes[i].kind) && needs[i];
    for (bool changed = true; changed;) {
        changed = false;
        for (size_t i = 0; i < count; ++i) {
            const Node& d = program_.nodes[i];
            if (wanted[i] || is_input(d.kind)) continue;
            bool w = wanted[static_cast<size_t>(d.a.value)];
            if (d.kind == Kind::binary || d.kind == Kind::delay)
                w = w || wanted[static_cast<size_t>(d.b.value)];
            if (d.kind == Kind::matmul) w = w || needs[static_cast<size_t>(d.b.value)];
            if (w) wanted[i] = changed = true;
        }
    }
    std::vector<bool> all_frames(count, false), elementwise_use(count, false);
    for (size_t i = 0; i < count; ++i) {
        const Node& d = program_.nodes[i];
        if (d.kind == Kind::delay) all_frames[static_cast<size_t>(d.a.value)] = true;
        if (d.kind == Kind::matmul) all_frames[i] = true;
        if (d.kind != Kind::matmul && !is_input(d.kind)) {
            elementwise_use[static_cast<size_t>(d.a.value)] = true;
            if (d.kind != Kind::unary) elementwise_use[static_cast<size_t>(d.b.value)] = true;
        }
    }
    std::vector<Tensor> out(count), grads(count);
    for (size_t i = 0; i < count; ++i) {
        const Node& d = program_.nodes[i];
        if (is_input(d.kind)) {
            if (!needs[i]) continue;
            out[i] = Tensor::zeros(inputs_[i].shape(), dtype_, device_);
            if (d.kind == Kind::fixed_input && elementwise_use[i])
                grads[i] = Tensor::empty(Shape{n_seq, d.width}, dtype_, device_);
        } else if (wanted[i]) {
            grads[i] = all_frames[i] ? Tensor::zeros(Shape{rows_, d.width}, dtype_, device_)
                                     : Tensor::empty(Shape{n_seq, d.width}, dtype_, device_);
        }
    }
    // The outputs' gradients, packed; those of one-frame nodes are copied in at their frame.
    std::vector<Tensor> seeds(count);
    for (size_t i = 0; i < count; ++i) {
        if (!grads[i].defined() || is_input(program_.nodes[i].kind) || !output_grads[i].defined()) continue;
        const Tensor og = output_grads[i].to(dtype_).to(device_).contiguous();
        const int64_t w = program_.nodes[i].width;
        CTK_CHECK(og.numel() == n_seq * frames_ * w, ShapeError, "cell program: the gradient of node ", i,
                  " has ", og.numel(), " elements, expected ", n_seq * frames_ * w);
        if (!all_frames[i]) {
            seeds[i] = og;
            continue;
        }
        const T* src = og.data<T>();
        T* dst = grads[i].data<T>();
        for (int64_t t = 0; t < frames_; ++t)
            for (int64_t r = 0; r < active_[static_cast<size_t>(t)]; ++r)
                std::memcpy(dst + (first_[static_cast<size_t>(t)] + r) * w,
                            src + (order_[static_cast<size_t>(r)] * frames_ + t) * w,
                            static_cast<size_t>(w) * sizeof(T));
    }
    const RowAt<T> val{program_, inputs_, values_, kept_, order_, first_, frames_};
    auto grad_row = [&](int v, int64_t t, int64_t r) -> T* {
        const Node& d = program_.nodes[static_cast<size_t>(v)];
        switch (d.kind) {
            case Kind::frame_input:
                return out[static_cast<size_t>(v)].defined()
                           ? out[static_cast<size_t>(v)].data<T>() +
                                 (order_[static_cast<size_t>(r)] * frames_ + t) * d.width
                           : nullptr;
            case Kind::sequence_input:
                return out[static_cast<size_t>(v)].defined()
                           ? out[static_cast<size_t>(v)].data<T>() + order_[static_cast<size_t>(r)] * d.width
                           : nullptr;
            default: {
                const Tensor& g = grads[static_cast<size_t>(v)];
                if (!g.defined()) return nullptr;
                return g.data<T>() +
                       ((all_frames[static_cast<size_t>(v)] ? first_[static_cast<size_t>(t)] : 0) + r) *
                           d.width;
            }
        }
    };
    auto grad_at = [&](const Ref& ref, int64_t t, int64_t r) -> T* {
        T* p = grad_row(ref.value, t, r);
        return p == nullptr ? nullptr : p + ref.offset;
    };
    const auto segs = segments(program_);
    for (int64_t step = frames_ - 1; step >= 0; --step) {
        const int64_t t = program_.backward_in_time ? frames_ - 1 - step : step;
        const int64_t n = active_[static_cast<size_t>(t)];
        if (n == 0) continue;
        // This frame's one-frame gradients start at zero, or at the output's gradient.
        for (size_t i = 0; i < count; ++i) {
            if (!grads[i].defined() || all_frames[i]) continue;
            const int64_t w = program_.nodes[i].width;
            T* g = grads[i].data<T>();
            if (seeds[i].defined()) {
                const T* src = seeds[i].data<T>();
                for (int64_t r = 0; r < n; ++r)
                    std::memcpy(g + r * w, src + (order_[static_cast<size_t>(r)] * frames_ + t) * w,
                                static_cast<size_t>(w) * sizeof(T));
            } else {
                std::memset(static_cast<void*>(g), 0, static_cast<size_t>(n * w) * sizeof(T));
            }
        }
        for (auto seg = segs.rbegin(); seg != segs.rend(); ++seg) {
            const auto begin = seg->first, end = seg->second;  // captured below: see forward()
            if (begin == end) {  // d a += d y times the matrix's transpose; the matrix's gradient comes last
                const Node& d = program_.nodes[static_cast<size_t>(begin)];
                T* da = grad_at(d.a, t, 0);
                if (da == nullptr || !grads[static_cast<size_t>(begin)].defined()) continue;
                gemm<T>(false, !d.transpose_b, n, d.a.width, d.width, grad_row(begin, t, 0), d.width,
                        inputs_[static_cast<size_t>(d.b.value)].data<T>(),
                        d.transpose_b ? d.a.width : d.width, T(1), da,
                        program_.nodes[static_cast<size_t>(d.a.value)].width);
                continue;
            }
            parallel_for(0, n, grain_for(segment_work(program_, begin, end)), [&](int64_t r0, int64_t r1) {
                for (int64_t r = r0; r < r1; ++r)
                    for (int i = end - 1; i >= begin; --i) {
                        const Node& d = program_.nodes[static_cast<size_t>(i)];
                        const T* g = grad_row(i, t, r);
                        if (g == nullptr) continue;
                        switch (d.kind) {
                            case Kind::delay: {
                                const int64_t s = delay_source(d, t);
                                const bool inside = source_exists(s, r);
                                T* dst = inside ? grad_at(d.a, s, r) : grad_at(d.b, t, r);
                                if (dst == nullptr) break;
                                if (inside || d.b.width == d.width) {
                                    for (int64_t k = 0; k < d.width; ++k) dst[k] += g[k];
                                } else {
                                    T sum = 0;
                                    for (int64_t k = 0; k < d.width; ++k) sum += g[k];
                                    dst[0] += sum;
                                }
                                break;
                            }
                            case Kind::unary: {
                                T* gx = grad_at(d.a, t, r);
                                if (gx != nullptr)
                                    unary_backward<T>(d.op, gx, val.at(d.a, t, r), val(i, t, r), g, d.width);
                                break;
                            }
                            case Kind::binary:
                                binary_backward<T>(d.op, g, d.width, val.at(d.a, t, r),
                                                   d.a.width == 1 ? 0 : 1, grad_at(d.a, t, r),
                                                   val.at(d.b, t, r), d.b.width == 1 ? 0 : 1,
                                                   grad_at(d.b, t, r));
                                break;
                            default:
                                break;
                        }
                    }
            });
        }
        // Fixed inputs: this frame's rows summed into the result, in row order.
        for (size_t i = 0; i < count; ++i) {
            if (program_.nodes[i].kind != Kind::fixed_input || !grads[i].defined()) continue;
            const int64_t w = program_.nodes[i].width;
            const T* g = grads[i].data<T>();
            T* dst = out[i].data<T>();
            parallel_for(0, w, 256, [&](int64_t c0, int64_t c1) {
                for (int64_t r = 0; r < n; ++r)
                    for (int64_t c = c0; c < c1; ++c) dst[c] += g[r * w + c];
            });
        }
    }
    // A matrix's gradient: its left operands' rows of all frames times their gradients, one GEMM each.
    for (size_t m = 0; m < count; ++m) {
        const Node& u = program_.nodes[m];
        if (u.kind != Kind::matmul || !needs[static_cast<size_t>(u.b.value)] || !grads[m].defined() ||
            rows_ == 0)
            continue;
        T* dst = out[static_cast<size_t>(u.b.value)].data<T>();
        const T* a = values_[static_cast<size_t>(u.a.value)].data<T>() + u.a.offset;
        const int64_t lda = program_.nodes[static_cast<size_t>(u.a.value)].width;
        if (u.transpose_b)  // [width, k] += dy^T a
            gemm<T>(true, false, u.width, u.a.width, rows_, grads[m].data<T>(), u.width, a, lda, T(1), dst,
                    u.a.width);
        else  // [k, width] += a^T dy
            gemm<T>(true, false, u.a.width, u.width, rows_, a, lda, grads[m].data<T>(), u.width, T(1), dst,
                    u.width);
    }
    return out;
}

}  // namespace ctk::cell
