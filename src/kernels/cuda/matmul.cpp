// CUDA matrix products through cuBLASLt, for f32, f64, f16 and bf16 (16-bit with f32 accumulation).
// cuBLASLt is column-major: the row-major C = op(A) op(B) is computed as the column-major
// C^T = op(B)^T op(A)^T, which needs no copies. Each operand's last two axes may be row- or
// column-major in memory (a transposed view), and its batch axes must fold into one stride; otherwise
// the operand is made contiguous first. The algorithm is chosen once per problem and cached.
#include <cublasLt.h>

#include <map>
#include <mutex>
#include <optional>
#include <tuple>

#include "core/cuda/allocator.h"
#include "core/cuda/cuda_check.h"
#include "ctk/core/cuda.h"
#include "ctk/core/shared_library.h"
#include "kernels/cuda/cuda_common.h"

namespace ctk::cuda {

namespace {

// cuBLASLt is opened on first use, not linked: the library's start-up code touches about 100 MB and
// takes 70 ms, which every ctk process (and every test process) would otherwise pay, GPU or not.
struct CublasLt {
    decltype(&cublasLtGetStatusName) GetStatusName;
    decltype(&cublasLtGetStatusString) GetStatusString;
    decltype(&cublasLtCreate) Create;
    decltype(&cublasLtMatmul) Matmul;
    decltype(&cublasLtMatmulAlgoGetHeuristic) MatmulAlgoGetHeuristic;
    decltype(&cublasLtMatmulDescCreate) MatmulDescCreate;
    decltype(&cublasLtMatmulDescDestroy) MatmulDescDestroy;
    decltype(&cublasLtMatmulDescSetAttribute) MatmulDescSetAttribute;
    decltype(&cublasLtMatmulPreferenceCreate) MatmulPreferenceCreate;
    decltype(&cublasLtMatmulPreferenceDestroy) MatmulPreferenceDestroy;
    decltype(&cublasLtMatmulPreferenceSetAttribute) MatmulPreferenceSetAttribute;
    decltype(&cublasLtMatrixLayoutCreate) MatrixLayoutCreate;
    decltype(&cublasLtMatrixLayoutDestroy) MatrixLayoutDestroy;
    decltype(&cublasLtMatrixLayoutSetAttribute) MatrixLayoutSetAttribute;
};

const CublasLt& lt() {
    static const CublasLt table = [] {
        const SharedLibrary lib("libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR), "matmul",
                                "the CUDA toolkit's cuBLASLt");
        CublasLt t;
        lib.bind(t.GetStatusName, "cublasLtGetStatusName");
        lib.bind(t.GetStatusString, "cublasLtGetStatusString");
        lib.bind(t.Create, "cublasLtCreate");
        lib.bind(t.Matmul, "cublasLtMatmul");
        lib.bind(t.MatmulAlgoGetHeuristic, "cublasLtMatmulAlgoGetHeuristic");
        lib.bind(t.MatmulDescCreate, "cublasLtMatmulDescCreate");
        lib.bind(t.MatmulDescDestroy, "cublasLtMatmulDescDestroy");
        lib.bind(t.MatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
        lib.bind(t.MatmulPreferenceCreate, "cublasLtMatmulPreferenceCreate");
        lib.bind(t.MatmulPreferenceDestroy, "cublasLtMatmulPreferenceDestroy");
        lib.bind(t.MatmulPreferenceSetAttribute, "cublasLtMatmulPreferenceSetAttribute");
        lib.bind(t.MatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
        lib.bind(t.MatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
        lib.bind(t.MatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
        return t;
    }();
    return table;
}

#define CTK_CUBLAS_CHECK(call)                                                                 \
    do {                                                                                       \
        cublasStatus_t st_ = (call);                                                           \
        CTK_CHECK(st_ == CUBLAS_STATUS_SUCCESS, DeviceError, "cuBLASLt: ", #call,              \
                  " failed: ", lt().GetStatusName(st_), " (", lt().GetStatusString(st_), ")"); \
    } while (0)

constexpr size_t kWorkspaceBytes = size_t(32) << 20;  // what cuBLAS recommends for Hopper

struct DeviceState {
    cublasLtHandle_t handle = nullptr;
    Tensor workspace;
};

DeviceState& state(Device device) {
    static std::mutex mutex;
    static std::map<int, DeviceState>* states = new std::map<int, DeviceState>();  // never destroyed
    std::lock_guard<std::mutex> lock(mutex);
    DeviceState& s = (*states)[device.index];
    if (!s.handle) {
        detail::set_device(device.index);
        CTK_CUBLAS_CHECK(lt().Create(&s.handle));
        // Kept for the process: never from a CUDA Graph's pool, even when first needed while one records.
        detail::OutsideCapturePool outside;
        s.workspace = Tensor::empty(Shape{static_cast<int64_t>(kWorkspaceBytes)}, DataType::u8, device);
    }
    return s;
}

// A stored operand as cuBLASLt sees it: column-major [rows, cols] with ld, plus whether to transpose.
struct LtOperand {
    Tensor t;
    bool trans = false;
    int64_t rows = 0, cols = 0, ld = 0;
    int64_t batch_stride = 0;
};

// Batch axes fold into one stride when each outer stride equals the next one times its size.
bool fold_batch(const Tensor& t, int64_t& stride) {
    const int r = t.rank();
    stride = 0;
    int64_t expect = -1;
    for (int i = r - 3; i >= 0; --i) {
        if (t.dim(i) == 1) continue;
        int64_t s = t.strides()[static_cast<size_t>(i)];
        if (expect < 0) {
            stride = s;
        } else if (s != expect) {
            return false;
        }
        expect = s * t.dim(i);
    }
    return true;
}

// `op_trans`: the user's transpose flag. Returns the operand for the column-major product C^T.
LtOperand lt_operand(const Tensor& x, bool op_trans, int64_t batch) {
    const int r = x.rank();
    auto make = [&](const Tensor& t) -> std::optional<LtOperand> {
        int64_t rows = t.dim(r - 2), cols = t.dim(r - 1);
        int64_t s_row = t.strides()[static_cast<size_t>(r - 2)],
                s_col = t.strides()[static_cast<size_t>(r - 1)];
        if (cols == 1) s_col = 1;
        if (rows == 1) s_row = std::max<int64_t>(cols, 1);
        LtOperand o;
        o.t = t;
        if (!fold_batch(t, o.batch_stride)) return std::nullopt;
        if (batch > 1 && o.batch_stride == 0) return std::nullopt;  // broadcast batch: copied (see below)
        if (s_col == 1 && s_row >= std::max<int64_t>(cols, 1)) {
            // Row-major X = N^T with N the column-major [cols, rows]; op(X)^T = op_trans ? N^T : N.
            o.rows = cols;
            o.cols = rows;
            o.ld = s_row;
            o.trans = op_trans;
        } else if (s_row == 1 && s_col >= std::max<int64_t>(rows, 1)) {
            // Column-major X is N itself; op(X)^T = op_trans ? N : N^T.
            o.rows = rows;
            o.cols = cols;
            o.ld = s_col;
            o.trans = !op_trans;
        } else {
            return std::nullopt;
        }
        return o;
    };
    if (auto o = make(x)) return *o;
    auto packed = make(x.contiguous());
    CTK_CHECK(packed.has_value(), DeviceError, "matmul on the GPU: an operand of shape ",
              x.shape().to_string(), " has no cuBLASLt layout (its batch dims must be materialised first)");
    return *packed;
}

cudaDataType_t lt_type(DataType d) {
    switch (d) {
        case DataType::f32:
            return CUDA_R_32F;
        case DataType::f64:
            return CUDA_R_64F;
        case DataType::f16:
            return CUDA_R_16F;
        case DataType::bf16:
            return CUDA_R_16BF;
        default:
            CTK_THROW(TypeError, "matmul: no CUDA matrix product for dtype ", dtype_name(d));
    }
}

struct Layout {
    cublasLtMatrixLayout_t h = nullptr;
    Layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
        CTK_CUBLAS_CHECK(
            lt().MatrixLayoutCreate(&h, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld));
        int32_t count = static_cast<int32_t>(batch);
        CTK_CUBLAS_CHECK(
            lt().MatrixLayoutSetAttribute(h, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)));
        CTK_CUBLAS_CHECK(lt().MatrixLayoutSetAttribute(h, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                       &stride, sizeof(stride)));
    }
    ~Layout() { lt().MatrixLayoutDestroy(h); }
    Layout(const Layout&) = delete;
    Layout& operator=(const Layout&) = delete;
};

// Device, dtype, tf32, m, n, k, batch, then per operand (ld, transposed, batch stride, pointer alignment).
using AlgoKey = std::tuple<int, int, bool, int64_t, int64_t, int64_t, int64_t, int64_t, bool, int64_t,
                           uint32_t, int64_t, bool, int64_t, uint32_t, uint32_t>;

// The largest power of two (up to 256) that divides the address: cuBLASLt's heuristic otherwise
// assumes 256-byte alignment, which views at an offset do not have.
uint32_t alignment_of(const void* p) {
    auto a = reinterpret_cast<uintptr_t>(p);
    uint32_t al = 256;
    while (al > 1 && a % al != 0) al /= 2;
    return al;
}

void matmul_kernel(const KernelCall& call) {
    const auto& attrs = call.attr<MatmulAttrs>();
    const Tensor& out = call.outputs[0];
    const int r = out.rank();
    const int64_t m = out.dim(r - 2), n = out.dim(r - 1);
    if (out.numel() == 0) return;
    int64_t batch = 1;
    for (int i = 0; i < r - 2; ++i) batch *= out.dim(i);
    const Tensor& a_in = call.inputs[0];
    const int64_t k = attrs.trans_a ? a_in.dim(-2) : a_in.dim(-1);
    if (k == 0) {
        Tensor(out).fill(0.0);
        return;
    }
    // C^T = op(B)^T op(A)^T: cuBLASLt's "A" is our B and its "B" is our A.
    LtOperand lb = lt_operand(call.inputs[1], attrs.trans_b, batch);
    LtOperand la = lt_operand(a_in, attrs.trans_a, batch);
    Tensor c = out.is_contiguous() ? out : Tensor::empty(out.shape(), out.dtype(), out.device());

    const DataType dt = out.dtype();
    const cudaDataType_t type = lt_type(dt);
    const bool f64 = dt == DataType::f64;
    const cublasComputeType_t compute =
        f64 ? CUBLAS_COMPUTE_64F
            : (dt == DataType::f32 && allow_tf32() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F);
    const cudaDataType_t scale_type = f64 ? CUDA_R_64F : CUDA_R_32F;

    DeviceState& st = state(out.device());
    cublasLtMatmulDesc_t desc = nullptr;
    CTK_CUBLAS_CHECK(lt().MatmulDescCreate(&desc, compute, scale_type));
    cublasOperation_t op_l = lb.trans ? CUBLAS_OP_T : CUBLAS_OP_N,
                      op_r = la.trans ? CUBLAS_OP_T : CUBLAS_OP_N;
    lt().MatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_l, sizeof(op_l));
    lt().MatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_r, sizeof(op_r));
    Layout L(type, lb.rows, lb.cols, lb.ld, batch, lb.batch_stride);
    Layout R(type, la.rows, la.cols, la.ld, batch, la.batch_stride);
    Layout C(type, n, m, n, batch, m * n);

    // The heuristic's choice for this problem, asked once.
    static std::mutex mutex;
    static std::map<AlgoKey, cublasLtMatmulAlgo_t>* algos = new std::map<AlgoKey, cublasLtMatmulAlgo_t>();
    const uint32_t al_l = alignment_of(lb.t.raw_data()), al_r = alignment_of(la.t.raw_data()),
                   al_c = alignment_of(c.raw_data());
    AlgoKey key{out.device().index,
                static_cast<int>(dt),
                compute == CUBLAS_COMPUTE_32F_FAST_TF32,
                m,
                n,
                k,
                batch,
                lb.ld,
                lb.trans,
                lb.batch_stride,
                al_l,
                la.ld,
                la.trans,
                la.batch_stride,
                al_r,
                al_c};
    cublasLtMatmulAlgo_t algo;
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = algos->find(key);
        if (it == algos->end()) {
            cublasLtMatmulPreference_t pref = nullptr;
            CTK_CUBLAS_CHECK(lt().MatmulPreferenceCreate(&pref));
            size_t ws = kWorkspaceBytes;
            lt().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                              sizeof(ws));
            lt().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al_l,
                                              sizeof(al_l));
            lt().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al_r,
                                              sizeof(al_r));
            lt().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al_c,
                                              sizeof(al_c));
            lt().MatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al_c,
                                              sizeof(al_c));
            cublasLtMatmulHeuristicResult_t result{};
            int found = 0;
            cublasStatus_t hs =
                lt().MatmulAlgoGetHeuristic(st.handle, desc, L.h, R.h, C.h, C.h, pref, 1, &result, &found);
            lt().MatmulPreferenceDestroy(pref);
            if (hs != CUBLAS_STATUS_SUCCESS || found == 0) {
                lt().MatmulDescDestroy(desc);
                CTK_THROW(DeviceError, "matmul: cuBLASLt has no algorithm for ", dtype_name(dt), " [", m,
                          " x ", k, "] x [", k, " x ", n, "], batch ", batch);
            }
            it = algos->emplace(key, result.algo).first;
        }
        algo = it->second;
    }
    const double one_d = 1.0, zero_d = 0.0;
    const float one_f = 1.0f, zero_f = 0.0f;
    const void* alpha = f64 ? static_cast<const void*>(&one_d) : static_cast<const void*>(&one_f);
    const void* beta = f64 ? static_cast<const void*>(&zero_d) : static_cast<const void*>(&zero_f);
    cublasStatus_t s =
        lt().Matmul(st.handle, desc, alpha, lb.t.raw_data(), L.h, la.t.raw_data(), R.h, beta, c.raw_data(),
                    C.h, c.raw_data(), C.h, &algo, st.workspace.raw_data(), kWorkspaceBytes, stream_of(call));
    lt().MatmulDescDestroy(desc);
    CTK_CHECK(s == CUBLAS_STATUS_SUCCESS, DeviceError,
              "matmul: cublasLtMatmul failed: ", lt().GetStatusName(s));
    if (!c.shares_storage(out)) Tensor(out).copy_from(c);
}

}  // namespace

void register_matmul(KernelTable& t) {
    for (DataType d : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16})
        t.add(OpKind::matmul, DeviceType::cuda, d, matmul_kernel);
}

}  // namespace ctk::cuda
