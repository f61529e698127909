// CPU matrix products: f32/f64 through the routed GEMM (gemm.h: OpenBLAS or oneDNN's sgemm) per batch
// item, strided views becoming leading dimensions or flipped transposes, so no copies when BLAS can
// express them; bf16 through oneDNN's matmul (f32 accumulation; oneDNN 2.6 has no f16 matmul for this
// CPU). Many small products run in parallel over the batch, each GEMM call then single-threaded (both
// libraries see the OpenMP region).
#include <cstring>
#include <map>
#include <mutex>

#include "kernels/cpu/cpu_common.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/onednn_common.h"

namespace ctk::cpu {

namespace {

// A matrix operand as BLAS sees it: row-major with a leading dimension, possibly transposed.
struct BlasMatrix {
    bool trans;
    int64_t ld;
    bool ok;  // false: the strides cannot be expressed, copy first
};

BlasMatrix blas_view(int64_t rows, int64_t cols, int64_t s_row, int64_t s_col, bool trans) {
    if (cols == 1) s_col = 1;  // strides of size-1 axes are arbitrary
    if (rows == 1) s_row = std::max<int64_t>(cols, 1);
    if (s_col == 1 && s_row >= std::max<int64_t>(cols, 1)) return {trans, s_row, true};
    if (s_row == 1 && s_col >= std::max<int64_t>(rows, 1)) return {!trans, s_col, true};
    return {trans, 0, false};
}

template <typename T>
void blas_matmul_kernel(const KernelCall& call) {
    const auto& attrs = call.attr<MatmulAttrs>();
    Tensor a = call.inputs[0], b = call.inputs[1];
    const Tensor& out = call.outputs[0];
    const int r = out.rank();
    const int64_t m = out.dim(-2), n = out.dim(-1), k = attrs.trans_a ? a.dim(-2) : a.dim(-1);
    if (out.numel() == 0) return;
    if (k == 0) {
        std::memset(out.raw_data(), 0, static_cast<size_t>(out.numel()) * sizeof(T));
        return;
    }
    auto view_of = [&](Tensor& t, bool trans) {
        BlasMatrix v = blas_view(t.dim(-2), t.dim(-1), t.strides()[static_cast<size_t>(r - 2)],
                                 t.strides()[static_cast<size_t>(r - 1)], trans);
        if (!v.ok) {
            t = t.contiguous();
            v = blas_view(t.dim(-2), t.dim(-1), t.strides()[static_cast<size_t>(r - 2)],
                          t.strides()[static_cast<size_t>(r - 1)], trans);
        }
        return v;
    };
    BlasMatrix va = view_of(a, attrs.trans_a), vb = view_of(b, attrs.trans_b);
    const int64_t batch = out.numel() / (m * n);
    auto run = [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            int64_t oa = 0, ob = 0, rem = i;
            for (int d = r - 3; d >= 0; --d) {  // batch index -> element offsets (batch strides may be 0)
                int64_t idx = rem % out.shape()[d];
                rem /= out.shape()[d];
                oa += idx * a.strides()[static_cast<size_t>(d)];
                ob += idx * b.strides()[static_cast<size_t>(d)];
            }
            gemm(va.trans, vb.trans, m, n, k, T(1), a.data<T>() + oa, va.ld, b.data<T>() + ob, vb.ld, T(0),
                 out.data<T>() + i * m * n, n);
        }
    };
    // Small products: one per thread; large ones: let BLAS thread each product.
    if (batch > 1 && m * n * k < (int64_t(1) << 21))
        parallel_for(0, batch, 1, run);
    else
        run(0, batch);
}

// oneDNN matmul for 16-bit floats, with primitives cached by their descriptors.
void onednn_matmul_kernel(const KernelCall& call) {
    const auto& attrs = call.attr<MatmulAttrs>();
    Tensor a = call.inputs[0], b = call.inputs[1];
    Tensor out = call.outputs[0];
    if (out.numel() == 0) return;
    // Collapse the batch axes into one: oneDNN wants [batch, rows, cols] with plain strides.
    const int64_t m = out.dim(-2), n = out.dim(-1), k = attrs.trans_a ? a.dim(-2) : a.dim(-1);
    const int64_t batch = out.numel() / (m * n);
    a = a.contiguous().reshape({batch, a.dim(-2), a.dim(-1)});
    b = b.contiguous().reshape({batch, b.dim(-2), b.dim(-1)});
    if (k == 0) {
        out.fill(0.0);
        return;
    }
    using dims = dnnl::memory::dims;
    auto dt = onednn::data_type(out.dtype());
    dnnl::memory::desc a_md(dims{batch, m, k}, dt, attrs.trans_a ? dims{m * k, 1, m} : dims{m * k, k, 1});
    dnnl::memory::desc b_md(dims{batch, k, n}, dt, attrs.trans_b ? dims{k * n, 1, k} : dims{k * n, n, 1});
    dnnl::memory::desc c_md(dims{batch, m, n}, dt, dims{m * n, n, 1});
    static std::mutex mutex;
    static std::map<std::vector<int64_t>, dnnl::matmul> cache;
    std::vector<int64_t> key = {static_cast<int64_t>(dt), batch, m, n, k, attrs.trans_a, attrs.trans_b};
    dnnl::matmul prim;
    try {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = cache.find(key);
        if (it == cache.end()) {
            if (cache.size() > 256) cache.clear();
            dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), onednn::engine());
            it = cache.emplace(key, dnnl::matmul(pd)).first;
        }
        prim = it->second;
    } catch (const dnnl::error& e) {
        CTK_THROW(NotImplementedError, "matmul: oneDNN has no ", dtype_name(out.dtype()),
                  " matmul on this CPU (", e.what(), ")");
    }
    dnnl::memory am(a_md, onednn::engine(), a.raw_data()), bm(b_md, onednn::engine(), b.raw_data()),
        cm(c_md, onednn::engine(), out.raw_data());
    prim.execute(onednn::stream(), {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    onednn::stream().wait();
}

}  // namespace

void register_matmul(KernelTable& t) {
    t.add(OpKind::matmul, DeviceType::cpu, DataType::f32, blas_matmul_kernel<float>);
    t.add(OpKind::matmul, DeviceType::cpu, DataType::f64, blas_matmul_kernel<double>);
    t.add(OpKind::matmul, DeviceType::cpu, DataType::bf16, onednn::bf16_kernel<onednn_matmul_kernel>());
    // oneDNN 2.6 has no f16 on these CPUs; mixed-precision f16 models still run (in f32, rounded).
    t.add(OpKind::matmul, DeviceType::cpu, DataType::f16, onednn::via_f32<blas_matmul_kernel<float>>);
}

}  // namespace ctk::cpu
