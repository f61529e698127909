// CUDA convolutions through cuDNN 9 (forward, backward data, backward weights; 1-D to 3-D, dilation,
// groups). cuDNN pads both sides alike, so an asymmetric pad (CNTK's auto-padding of even kernels)
// becomes: pad both sides by pad_lo, extend x by the rest at the end with zeros, and keep the leading
// output cells (cuDNN's extra trailing cells are never read; their gradient is zero). The algorithm is
// chosen once per problem by timing cuDNN's candidates (cudnnFind...Ex) within the workspace limit,
// deterministic ones only when asked, and cached.
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/cuda/copy.h"
#include "core/cuda/cuda_check.h"
#include "ctk/core/cuda.h"
#include "kernels/cuda/cudnn_common.h"

namespace ctk::cuda {

cudnnHandle_t cudnn_handle(Device device, cudaStream_t stream) {
    static std::mutex mutex;
    static std::map<int, cudnnHandle_t>* handles = new std::map<int, cudnnHandle_t>();  // never destroyed
    cudnnHandle_t h;
    {
        std::lock_guard<std::mutex> lock(mutex);
        auto it = handles->find(device.index);
        if (it == handles->end()) {
            detail::set_device(device.index);
            CTK_CUDNN_CHECK(dnn().Create(&h));
            it = handles->emplace(device.index, h).first;
        }
        h = it->second;
    }
    detail::set_device(device.index);
    CTK_CUDNN_CHECK(dnn().SetStream(h, stream));
    return h;
}

cudnnDataType_t cudnn_type(DataType dtype) {
    switch (dtype) {
        case DataType::f32:
            return CUDNN_DATA_FLOAT;
        case DataType::f64:
            return CUDNN_DATA_DOUBLE;
        case DataType::f16:
            return CUDNN_DATA_HALF;
        case DataType::bf16:
            return CUDNN_DATA_BFLOAT16;
        default:
            CTK_THROW(TypeError, "cuDNN has no kernels for dtype ", dtype_name(dtype));
    }
}

size_t cudnn_workspace_limit() {
    static const size_t limit = [] {
        if (const char* env = std::getenv("CTK_CUDNN_WORKSPACE_MB")) {
            char* end = nullptr;
            unsigned long long mb = std::strtoull(env, &end, 10);
            if (end != env && *end == '\0') return static_cast<size_t>(mb) << 20;
        }
        return size_t(1024) << 20;
    }();
    return limit;
}

TensorDesc::TensorDesc(DataType dtype, const Dims& dims) {
    CTK_CUDNN_CHECK(dnn().CreateTensorDescriptor(&h));
    std::vector<int> d(dims.begin(), dims.end()), s(dims.size());
    int64_t stride = 1;
    for (size_t i = dims.size(); i-- > 0;) {
        s[i] = static_cast<int>(stride);
        stride *= dims[i];
    }
    CTK_CUDNN_CHECK(
        dnn().SetTensorNdDescriptor(h, cudnn_type(dtype), static_cast<int>(d.size()), d.data(), s.data()));
}

namespace {

struct FilterDesc {
    cudnnFilterDescriptor_t h = nullptr;
    FilterDesc(DataType dtype, const Dims& dims) {
        CTK_CUDNN_CHECK(dnn().CreateFilterDescriptor(&h));
        std::vector<int> d(dims.begin(), dims.end());
        CTK_CUDNN_CHECK(dnn().SetFilterNdDescriptor(h, cudnn_type(dtype), CUDNN_TENSOR_NCHW,
                                                    static_cast<int>(d.size()), d.data()));
    }
    ~FilterDesc() { dnn().DestroyFilterDescriptor(h); }
    FilterDesc(const FilterDesc&) = delete;
    FilterDesc& operator=(const FilterDesc&) = delete;
};

struct ConvDesc {
    cudnnConvolutionDescriptor_t h = nullptr;
    ConvDesc() { CTK_CUDNN_CHECK(dnn().CreateConvolutionDescriptor(&h)); }
    ~ConvDesc() { dnn().DestroyConvolutionDescriptor(h); }
    ConvDesc(const ConvDesc&) = delete;
    ConvDesc& operator=(const ConvDesc&) = delete;
};

// One convolution as cuDNN sees it: at least 2 spatial axes (1-D gets a unit axis), symmetric pads.
struct Problem {
    DataType dtype;
    Dims x, w, y;         // cuDNN's shapes: x extended at the end, y uncropped
    Dims x_user, y_user;  // the caller's shapes (with the unit axis for 1-D)
    std::vector<int> pad, stride, dilation;
    int64_t groups = 1;
    bool extended = false, cropped = false;  // x needs the zero extension / y the cropping
};

Problem make_problem(const Shape& x, const Shape& w, const Shape& y, const ConvAttrs& a, DataType dtype) {
    Problem p;
    p.dtype = dtype;
    p.groups = a.groups;
    p.x_user = x.dims();
    p.w = w.dims();
    p.y_user = y.dims();
    Dims lo = a.pad_lo, hi = a.pad_hi, st = a.strides, dil = a.dilation;
    if (x.rank() == 3) {  // 1-D: a unit axis at the end, with no padding, stride or dilation
        p.x_user.push_back(1);
        p.w.push_back(1);
        p.y_user.push_back(1);
        lo.push_back(0);
        hi.push_back(0);
        st.push_back(1);
        dil.push_back(1);
    }
    p.x = p.x_user;
    p.y = p.y_user;
    const size_t spatial = p.x.size() - 2;
    for (size_t i = 0; i < spatial; ++i) {
        const int64_t extra = std::max<int64_t>(0, hi[i] - lo[i]);
        p.x[i + 2] += extra;
        p.extended |= extra > 0;
        p.pad.push_back(static_cast<int>(lo[i]));
        p.stride.push_back(static_cast<int>(st[i]));
        p.dilation.push_back(static_cast<int>(dil[i]));
        const int64_t extent = (p.w[i + 2] - 1) * dil[i] + 1;
        p.y[i + 2] = (p.x[i + 2] + 2 * lo[i] - extent) / st[i] + 1;
        p.cropped |= p.y[i + 2] != p.y_user[i + 2];
    }
    return p;
}

void set_conv(const ConvDesc& c, const Problem& p, cudnnMathType_t math) {
    const cudnnDataType_t compute = p.dtype == DataType::f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    CTK_CUDNN_CHECK(dnn().SetConvolutionNdDescriptor(c.h, static_cast<int>(p.pad.size()), p.pad.data(),
                                                     p.stride.data(), p.dilation.data(),
                                                     CUDNN_CROSS_CORRELATION, compute));
    CTK_CUDNN_CHECK(dnn().SetConvolutionGroupCount(c.h, static_cast<int>(p.groups)));
    CTK_CUDNN_CHECK(dnn().SetConvolutionMathType(c.h, math));
}

// f32 stays exact (no TF32) unless allowed; 16-bit types use tensor cores.
cudnnMathType_t allowed_math(DataType dtype) {
    if (dtype == DataType::f16 || dtype == DataType::bf16) return CUDNN_TENSOR_OP_MATH;
    if (dtype == DataType::f32 && allow_tf32()) return CUDNN_DEFAULT_MATH;
    return CUDNN_FMA_MATH;
}

std::string key_of(const Problem& p, Device device) {
    // x as given and as extended: two problems may extend to the same cuDNN shape from different ones
    // (their plans differ in what they crop and extend).
    std::string k = std::to_string(device.index) + "|" + dtype_name(p.dtype) + "|" +
                    dims_to_string(p.x_user) + dims_to_string(p.x) + dims_to_string(p.w) +
                    dims_to_string(p.y_user) + "|g" + std::to_string(p.groups) + "|";
    for (size_t i = 0; i < p.pad.size(); ++i)
        k += std::to_string(p.pad[i]) + "," + std::to_string(p.stride[i]) + "," +
             std::to_string(p.dilation[i]) + ";";
    return k;
}

struct Choice {
    int algo = 0;
    size_t workspace = 0;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
};

enum Pass { kForward = 0, kBackwardData = 1, kBackwardFilter = 2 };
constexpr const char* kPassNames[] = {"forward", "backward data", "backward weights"};

// Everything about one convolution problem that does not change from call to call: the descriptors
// and, per pass and per (deterministic, tf32) setting, the chosen algorithm. Built on first use and
// kept, so a training step after the first makes no descriptor calls and no algorithm search.
struct Plan {
    Problem p;
    TensorDesc x, y, bias;
    FilterDesc w;
    ConvDesc conv;
    std::map<int, Choice> choices;  // key: pass * 4 + deterministic * 2 + tf32
    std::mutex mutex;               // the descriptor's math type is set per call
    explicit Plan(const Problem& problem)
        : p(problem), x(p.dtype, p.x), y(p.dtype, p.y), bias(p.dtype, bias_dims(p)), w(p.dtype, p.w) {
        set_conv(conv, p, allowed_math(p.dtype));
    }
    static Dims bias_dims(const Problem& p) {
        Dims d(p.y.size(), 1);
        d[1] = p.y[1];
        return d;
    }
};

Plan& plan_for(const Problem& p, Device device) {
    static std::mutex mutex;
    static auto* plans = new std::map<std::string, std::unique_ptr<Plan>>();  // never destroyed
    const std::string key = key_of(p, device);
    std::lock_guard<std::mutex> lock(mutex);
    auto& slot = (*plans)[key];
    if (!slot) slot = std::make_unique<Plan>(p);
    return *slot;
}

// Picks the fastest candidate that ran, fits the workspace limit and, when asked, is deterministic.
template <typename Perf>
Choice pick(Pass pass, const Problem& p, const Perf* perf, int n, size_t limit) {
    for (int i = 0; i < n; ++i) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > limit) continue;
        if (deterministic() && perf[i].determinism != CUDNN_DETERMINISTIC) continue;
        return Choice{static_cast<int>(perf[i].algo), perf[i].memory, perf[i].mathType};
    }
    CTK_THROW(DeviceError, "convolution (", kPassNames[pass], "): cuDNN found no ",
              deterministic() ? "deterministic " : "", "algorithm for x ", dims_to_string(p.x), " and w ",
              dims_to_string(p.w), " (", dtype_name(p.dtype), ") within a workspace of ", limit >> 20,
              " MiB");
}

// Scaling factors: double for f64 data, float otherwise (cuDNN's rule).
struct Scale {
    double d;
    float f;
    explicit Scale(double v) : d(v), f(static_cast<float>(v)) {}
    const void* for_type(DataType t) const { return t == DataType::f64 ? static_cast<const void*>(&d) : &f; }
};

// A zero tensor of `big` dims whose leading cells hold `t` (the extension of x, or of dy).
Tensor embed(const Tensor& t, const Dims& big) {
    Tensor z = Tensor::zeros(Shape(big), t.dtype(), t.device());
    Tensor region = z;
    for (int i = 2; i < t.rank(); ++i) region = region.slice(i, 0, t.dim(i));
    detail::copy_on_device(t, region);
    return z;
}

// The leading cells of `big` with the dims of `shape`.
Tensor crop(const Tensor& big, const Dims& dims) {
    Tensor v = big;
    for (int i = 2; i < big.rank(); ++i) v = v.slice(i, 0, dims[static_cast<size_t>(i)]);
    return v;
}

Tensor workspace(size_t bytes, Device device) {
    return Tensor::empty(Shape{static_cast<int64_t>(std::max<size_t>(bytes, 1))}, DataType::u8, device);
}

// The algorithm cuDNN's heuristics rank first among those that fit (deterministic ones only, when asked).
// The heuristics answer the same in every run; deterministic mode uses them.
Choice heuristic_choice(Pass pass, const Plan& plan, cudnnHandle_t h) {
    const Problem& p = plan.p;
    int n = 0;
    if (pass == kForward) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        CTK_CUDNN_CHECK(dnn().GetConvolutionForwardAlgorithm_v7(h, plan.x.h, plan.w.h, plan.conv.h, plan.y.h,
                                                                CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf));
        return pick(pass, p, perf, n, cudnn_workspace_limit());
    }
    if (pass == kBackwardData) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        CTK_CUDNN_CHECK(dnn().GetConvolutionBackwardDataAlgorithm_v7(
            h, plan.w.h, plan.y.h, plan.conv.h, plan.x.h, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf));
        return pick(pass, p, perf, n, cudnn_workspace_limit());
    }
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    CTK_CUDNN_CHECK(dnn().GetConvolutionBackwardFilterAlgorithm_v7(
        h, plan.x.h, plan.y.h, plan.conv.h, plan.w.h, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf));
    return pick(pass, p, perf, n, cudnn_workspace_limit());
}

// The fastest algorithm that fits, timed by cuDNN on the pass's own buffers.
Choice timed_choice(Pass pass, const Plan& plan, cudnnHandle_t h, const Tensor& a, const Tensor& b,
                    const Tensor& out) {
    const Problem& p = plan.p;
    // The search's workspace: the limit, or less when the GPU is too full for it (the search then weighs
    // only the algorithms that fit in what could be had).
    size_t limit = cudnn_workspace_limit();
    Tensor ws;
    for (;;) {
        try {
            ws = workspace(limit, out.device());
            break;
        } catch (const OutOfMemoryError&) {
            if (limit <= (size_t(16) << 20)) throw;
            limit /= 4;
        }
    }
    int n = 0;
    if (pass == kForward) {
        cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
        CTK_CUDNN_CHECK(dnn().FindConvolutionForwardAlgorithmEx(
            h, plan.x.h, a.raw_data(), plan.w.h, b.raw_data(), plan.conv.h, plan.y.h, out.raw_data(),
            CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, perf, ws.raw_data(), limit));
        return pick(pass, p, perf, n, limit);
    }
    if (pass == kBackwardData) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
        CTK_CUDNN_CHECK(dnn().FindConvolutionBackwardDataAlgorithmEx(
            h, plan.w.h, b.raw_data(), plan.y.h, a.raw_data(), plan.conv.h, plan.x.h, out.raw_data(),
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, perf, ws.raw_data(), limit));
        return pick(pass, p, perf, n, limit);
    }
    cudnnConvolutionBwdFilterAlgoPerf_t perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    CTK_CUDNN_CHECK(dnn().FindConvolutionBackwardFilterAlgorithmEx(
        h, plan.x.h, a.raw_data(), plan.y.h, b.raw_data(), plan.conv.h, plan.w.h, out.raw_data(),
        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, perf, ws.raw_data(), limit));
    return pick(pass, p, perf, n, limit);
}

// Runs one pass: chooses (once) and then uses the algorithm. `a` and `b` are the pass's two inputs and
// `out` its output, in cuDNN's order for that pass.
void run_pass(Pass pass, Plan& plan, cudnnHandle_t h, const Tensor& a, const Tensor& b, const Tensor& out) {
    const Problem& p = plan.p;
    const DataType dt = p.dtype;
    const Device device = out.device();
    std::lock_guard<std::mutex> lock(plan.mutex);
    const int slot = pass * 4 + (deterministic() ? 2 : 0) + (allow_tf32() ? 1 : 0);
    auto it = plan.choices.find(slot);
    if (it == plan.choices.end()) {
        CTK_CUDNN_CHECK(dnn().SetConvolutionMathType(plan.conv.h, allowed_math(dt)));
        // Timing noise could pick another algorithm in another run (other bits): deterministic mode asks
        // the heuristics instead.
        Choice c = deterministic() ? heuristic_choice(pass, plan, h) : timed_choice(pass, plan, h, a, b, out);
        // f32 stays exact unless TF32 is allowed, whatever math type cuDNN reports for the choice.
        if (dt == DataType::f32 && !allow_tf32()) c.math = CUDNN_FMA_MATH;
        it = plan.choices.emplace(slot, c).first;
    }
    const Choice c = it->second;
    CTK_CUDNN_CHECK(dnn().SetConvolutionMathType(plan.conv.h, c.math));
    Tensor ws = workspace(c.workspace, device);
    const Scale one(1.0), zero(0.0);
    if (pass == kForward) {
        CTK_CUDNN_CHECK(dnn().ConvolutionForward(
            h, one.for_type(dt), plan.x.h, a.raw_data(), plan.w.h, b.raw_data(), plan.conv.h,
            static_cast<cudnnConvolutionFwdAlgo_t>(c.algo), ws.raw_data(), c.workspace, zero.for_type(dt),
            plan.y.h, out.raw_data()));
    } else if (pass == kBackwardData) {
        CTK_CUDNN_CHECK(dnn().ConvolutionBackwardData(
            h, one.for_type(dt), plan.w.h, b.raw_data(), plan.y.h, a.raw_data(), plan.conv.h,
            static_cast<cudnnConvolutionBwdDataAlgo_t>(c.algo), ws.raw_data(), c.workspace, zero.for_type(dt),
            plan.x.h, out.raw_data()));
    } else {
        CTK_CUDNN_CHECK(dnn().ConvolutionBackwardFilter(
            h, one.for_type(dt), plan.x.h, a.raw_data(), plan.y.h, b.raw_data(), plan.conv.h,
            static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.algo), ws.raw_data(), c.workspace,
            zero.for_type(dt), plan.w.h, out.raw_data()));
    }
}

void forward(const KernelCall& call) {
    const Tensor &x_in = call.inputs[0], &w_in = call.inputs[1];
    const Tensor b = call.inputs.size() > 2 ? call.inputs[2] : Tensor();
    const Tensor& y_out = call.outputs[0];
    const DataType dt = y_out.dtype();
    Plan& plan = plan_for(make_problem(x_in.shape(), w_in.shape(), y_out.shape(), call.attr<ConvAttrs>(), dt),
                          y_out.device());
    const Problem& p = plan.p;
    Tensor x = x_in.contiguous().view(p.x_user);
    if (p.extended) x = embed(x, p.x);
    Tensor w = w_in.contiguous().view(p.w);
    Tensor y = (p.cropped || !y_out.is_contiguous()) ? Tensor::empty(Shape(p.y), dt, y_out.device())
                                                     : y_out.view(p.y);
    cudnnHandle_t h = cudnn_handle(y_out.device(), stream_of(call));
    run_pass(kForward, plan, h, x, w, y);
    if (b.defined()) {
        const Scale one(1.0);
        Tensor bc = b.contiguous();
        CTK_CUDNN_CHECK(dnn().AddTensor(h, one.for_type(dt), plan.bias.h, bc.raw_data(), one.for_type(dt),
                                        plan.y.h, y.raw_data()));
    }
    if (!y.shares_storage(y_out)) detail::copy_on_device(crop(y, p.y_user).view(y_out.shape().dims()), y_out);
}

void backward_data(const KernelCall& call) {
    const Tensor &dy_in = call.inputs[0], &w_in = call.inputs[1];
    const Tensor& dx_out = call.outputs[0];
    const DataType dt = dx_out.dtype();
    Plan& plan =
        plan_for(make_problem(dx_out.shape(), w_in.shape(), dy_in.shape(), call.attr<ConvAttrs>(), dt),
                 dx_out.device());
    const Problem& p = plan.p;
    Tensor dy = dy_in.contiguous().view(p.y_user);
    if (p.cropped) dy = embed(dy, p.y);
    Tensor w = w_in.contiguous().view(p.w);
    Tensor dx = (p.extended || !dx_out.is_contiguous()) ? Tensor::empty(Shape(p.x), dt, dx_out.device())
                                                        : dx_out.view(p.x);
    run_pass(kBackwardData, plan, cudnn_handle(dx_out.device(), stream_of(call)), dy, w, dx);
    if (!dx.shares_storage(dx_out))
        detail::copy_on_device(crop(dx, p.x_user).view(dx_out.shape().dims()), dx_out);
}

void backward_weights(const KernelCall& call) {
    const Tensor &x_in = call.inputs[0], &dy_in = call.inputs[1];
    const Tensor& dw_out = call.outputs[0];
    const Tensor db_out = call.outputs.size() > 1 ? call.outputs[1] : Tensor();
    const DataType dt = dw_out.dtype();
    Plan& plan =
        plan_for(make_problem(x_in.shape(), dw_out.shape(), dy_in.shape(), call.attr<ConvAttrs>(), dt),
                 dw_out.device());
    const Problem& p = plan.p;
    Tensor x = x_in.contiguous().view(p.x_user);
    if (p.extended) x = embed(x, p.x);
    Tensor dy = dy_in.contiguous().view(p.y_user);
    if (p.cropped) dy = embed(dy, p.y);
    Tensor dw = dw_out.is_contiguous() ? dw_out.view(p.w) : Tensor::empty(Shape(p.w), dt, dw_out.device());
    cudnnHandle_t h = cudnn_handle(dw_out.device(), stream_of(call));
    run_pass(kBackwardFilter, plan, h, x, dy, dw);
    if (!dw.shares_storage(dw_out)) detail::copy_on_device(dw.view(dw_out.shape().dims()), dw_out);
    if (db_out.defined()) {
        // The bias gradient sums dy over batch and space; cuDNN's extra cells of dy are zero.
        const Scale one(1.0), zero(0.0);
        Tensor db = db_out.is_contiguous() ? db_out : Tensor::empty(db_out.shape(), dt, db_out.device());
        CTK_CUDNN_CHECK(dnn().ConvolutionBackwardBias(h, one.for_type(dt), plan.y.h, dy.raw_data(),
                                                      zero.for_type(dt), plan.bias.h, db.raw_data()));
        if (!db.shares_storage(db_out)) detail::copy_on_device(db, db_out);
    }
}

}  // namespace

void register_convolution(KernelTable& t) {
    for (DataType d : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16}) {
        t.add(OpKind::convolution, DeviceType::cuda, d, forward);
        t.add(OpKind::convolution_backward_data, DeviceType::cuda, d, backward_data);
        t.add(OpKind::convolution_backward_weights, DeviceType::cuda, d, backward_weights);
    }
}

}  // namespace ctk::cuda
