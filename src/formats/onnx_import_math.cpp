// ONNX import, element-wise math and normalizations written with ctk's ops: Erf, Round (half to even),
// Acosh, Celu, Shrink, BitShift, CastLike, MeanVarianceNormalization, InstanceNormalization, LRN, and
// the linear quantization ops (QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear), whose integer
// results ctk holds in floating dtypes (exact below 2^24 in f32, 2^53 in f64).
#include <cmath>

#include "formats/onnx_import_internal.h"

namespace ctk::detail::onnx_io::importer {

namespace {

Variable scalar(double v, DataType d) {
    return constant(v, d);
}

// ONNX's Round: halves go to the even neighbour (ctk's round, CNTK's, takes them up).
Variable round_half_even(const Variable& x) {
    const DataType d = x.dtype();
    Variable r = round(x);
    Variable tie = equal(minus(r, x), scalar(0.5, d));
    Variable odd = minus(r, element_times(scalar(2.0, d), floor(element_times(r, scalar(0.5, d)))));
    return minus(r, element_times(tie, odd));
}

// The ONNX element type of operand i: its declaration when it is a graph input or an initializer (ctk
// feeds integer inputs as f64), else the type of its ctk dtype.
int64_t onnx_type_of(NodeCtx& c, int i) {
    const std::string& name = c.node.input(i);
    if (auto it = c.im.onnx_types_.find(name); it != c.im.onnx_types_.end()) return it->second;
    for (const auto& vi : c.im.model_.graph().input())
        if (vi.name() == name && vi.type().has_tensor_type()) return vi.type().tensor_type().elem_type();
    if (auto it = c.im.inits_.find(name); it != c.im.inits_.end()) return it->second->data_type();
    return onnx_of_dtype(c.im.in(c, i).dtype());
}

// Reduction axes of a normalization as ctk static axes.
std::vector<Axis> static_axes(const NodeCtx& c, const Variable& x, const Dims& onnx_axes) {
    std::vector<Axis> out;
    for (int64_t a : onnx_axes) out.emplace_back(static_axis(c, x, a));
    return out;
}

// A per-channel vector [C] shaped to broadcast along ONNX axis `axis` of x: [C, 1, ...].
Variable along_axis(const NodeCtx& c, const Variable& v, const Variable& x, int64_t axis) {
    if (v.rank() == 0) return v;
    const int a = static_axis(c, x, axis);
    Dims s{v.shape().at(0)};
    for (int i = a + 1; i < x.rank(); ++i) s.push_back(1);
    return reshape(v, s);
}

// Linear quantization: saturate(round(x / scale) + zero_point) into the zero point's integer type.
Variable quantize(const Variable& x, const Variable& scale, const Variable& zero_point, int64_t type) {
    const double lo = type == TP::INT8 ? -128.0 : 0.0, hi = type == TP::INT8 ? 127.0 : 255.0;
    Variable q = plus(round_half_even(element_divide(x, scale)), zero_point);
    return clip(q, lo, hi);
}

std::vector<Variable> quantize_node(NodeCtx& c) {
    // In x's float type, as ONNX computes x / y_scale (f64 rounds differently near halves).
    Variable x = as_float(c.im.in(c, 0));
    const DataType f = x.dtype();
    const int64_t axis = attr_i(c, "axis", 1);
    Variable scale = cast(as_float(c.im.in(c, 1)), f);
    int64_t type = TP::UINT8;
    Variable zp = scalar(0.0, f);
    if (c.im.has_input(c, 2)) {
        type = onnx_type_of(c, 2);
        zp = cast(as_float(c.im.in(c, 2)), f);
    }
    if (type != TP::UINT8 && type != TP::INT8) unsupported(c, "a zero point that is not uint8 or int8");
    c.im.onnx_types_[c.node.output(0)] = type;
    Variable y = quantize(x, along_axis(c, scale, x, axis), along_axis(c, zp, x, axis), type);
    return {back_to(alias(y, c.name), dtype_of_onnx(static_cast<int32_t>(type), c.where))};
}

std::vector<Variable> dequantize_node(NodeCtx& c) {
    Variable x = cast(as_float(c.im.in(c, 0)), DataType::f64);
    const int64_t axis = attr_i(c, "axis", 1);
    Variable scale_in = c.im.in(c, 1);
    Variable scale = cast(as_float(scale_in), DataType::f64);
    Variable zp = c.im.has_input(c, 2) ? Variable(cast(as_float(c.im.in(c, 2)), DataType::f64))
                                       : scalar(0.0, DataType::f64);
    Variable y = element_times(minus(x, along_axis(c, zp, x, axis)), along_axis(c, scale, x, axis));
    const DataType out = is_floating(scale_in.dtype()) ? scale_in.dtype() : DataType::f32;
    return {cast(y, out, c.name)};
}

// y_scale = (max(0, max x) - min(0, min x)) / 255, zero point = saturate(round(-min / y_scale)), y as
// QuantizeLinear with them (uint8).
std::vector<Variable> dynamic_quantize_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    if (dyn_of(c, x) != 0) unsupported(c, "a batched operand");
    // In x's float type, as ONNX computes it (x / y_scale rounds differently in f64 near halves).
    Variable xf = as_float(x);
    const DataType d = xf.dtype();
    Variable hi = element_max(reduce_max(xf, {Axis::all_static_axes()}, false), scalar(0.0, d));
    Variable lo = element_min(reduce_min(xf, {Axis::all_static_axes()}, false), scalar(0.0, d));
    Variable scale = element_divide(minus(hi, lo), scalar(255.0, d));
    Variable zp = clip(round_half_even(negate(element_divide(lo, scale))), 0.0, 255.0);
    Variable y = quantize(xf, scale, zp, TP::UINT8);
    for (int i : {0, 2})
        if (i < c.node.output_size()) c.im.onnx_types_[c.node.output(i)] = TP::UINT8;
    return {alias(y, c.name), alias(scale, ""), alias(zp, "")};
}

std::vector<Variable> mvn_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    const auto axes = static_axes(c, x, attr_ints(c, "axes").value_or(Dims{0, 2, 3}));
    const DataType d = x.dtype();
    Variable centered = minus(x, reduce_mean(x, axes, true));
    Variable sd = sqrt(reduce_mean(square(centered), axes, true));
    return {element_divide(centered, plus(sd, scalar(1e-9, d)), c.name)};
}

std::vector<Variable> instance_norm_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0), scale = c.im.in(c, 1), bias = c.im.in(c, 2);
    const int r = onnx_rank(c, x);
    CTK_CHECK(r >= 3, ShapeError, c.where, ": the input must be [N, C, spatial...]");
    Dims spatial;
    for (int i = 2; i < r; ++i) spatial.push_back(i);
    const auto axes = static_axes(c, x, spatial);
    const DataType d = x.dtype();
    const double eps = attr_f(c, "epsilon", 1e-5);
    Variable centered = minus(x, reduce_mean(x, axes, true));
    Variable var = reduce_mean(square(centered), axes, true);
    Variable y = element_divide(centered, sqrt(plus(var, scalar(eps, d))));
    y = plus(element_times(y, along_axis(c, scale, x, 1)), along_axis(c, bias, x, 1));
    return {alias(y, c.name)};
}

// LRN: x / (bias + alpha / size * sum of x^2 over a channel window)^beta, the window
// [c - floor((size-1)/2), c + ceil((size-1)/2)]: the window sum is a band matrix product along C.
std::vector<Variable> lrn_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    const int64_t size = attr_i(c, "size", 0);
    CTK_CHECK(size >= 1, ValueError, c.where, ": size must be positive");
    const double alpha = attr_f(c, "alpha", 1e-4), beta = attr_f(c, "beta", 0.75),
                 bias = attr_f(c, "bias", 1.0);
    const int a = static_axis(c, x, 1);
    const int64_t C = x.shape()[static_cast<size_t>(a)];
    const int64_t before = (size - 1) / 2, after = size - 1 - before;
    check_built_size(c, checked_mul(C, C, c.where), "the channel band matrix");
    std::vector<double> band(static_cast<size_t>(C * C), 0.0);
    for (int64_t i = 0; i < C; ++i)      // input channel
        for (int64_t j = 0; j < C; ++j)  // output channel
            if (i >= j - before && i <= j + after) band[static_cast<size_t>(i * C + j)] = 1.0;
    const DataType d = x.dtype();
    Variable m = constant(Tensor::from_vector(band, Shape{C, C}).to(d));
    const int r = x.rank();
    std::vector<int> perm, back(static_cast<size_t>(r));
    for (int i = 0; i < r; ++i)
        if (i != a) perm.push_back(i);
    perm.push_back(a);
    for (int i = 0; i < r; ++i) back[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
    Variable sums = transpose(times(transpose(square(x), perm), m), back);
    Variable denom =
        pow(plus(scalar(bias, d), element_times(scalar(alpha / static_cast<double>(size), d), sums)),
            scalar(beta, d));
    return {element_divide(x, denom, c.name)};
}

// An integer operand less its zero point (optional input zi), in f64 (exact for 8-bit operands).
Variable less_zero_point(NodeCtx& c, int i, int zi) {
    Variable v = cast(as_float(c.im.in(c, i)), DataType::f64);
    if (!c.im.has_input(c, zi)) return v;
    Variable zp = cast(as_float(c.im.in(c, zi)), DataType::f64);
    if (zp.rank() == 1 && zp.shape()[0] > 1 && i == 0) zp = reshape(zp, {zp.shape()[0], 1});  // per row of A
    return minus(v, zp);
}

Variable matrix_product(NodeCtx& c, const Variable& a, const Variable& b) {
    if (dyn_of(c, b) != 0 || b.rank() != 2 || onnx_rank(c, a) != 2)
        unsupported(c, "operands that are not matrices");
    return times(a, b);
}

// ReverseSequence: the first sequence_lens[b] steps of each batch entry reversed along time_axis, as a
// flat gather with the source of every element computed here.
std::vector<Variable> reverse_sequence_node(NodeCtx& c) {
    Variable x = c.im.in(c, 0);
    if (dyn_of(c, x) != 0) unsupported(c, "a batched operand");
    auto lens = c.im.const_value(c, 1);
    CTK_CHECK(lens.has_value(), IOError, c.where, ": sequence_lens is missing");
    const Dims& s = x.shape();
    const int r = x.rank();
    const int64_t ba = attr_i(c, "batch_axis", 1), ta = attr_i(c, "time_axis", 0);
    CTK_CHECK(r >= 2 && ((ba == 0 && ta == 1) || (ba == 1 && ta == 0)), ValueError, c.where,
              ": batch_axis and time_axis must be 0 and 1");
    const std::vector<double> len = lens->to_vector<double>();
    CTK_CHECK(static_cast<int64_t>(len.size()) == s[static_cast<size_t>(ba)], ShapeError, c.where,
              ": sequence_lens must hold one length per batch entry");
    const Dims stride = row_major_strides(s);
    const int64_t total = element_count(s, c.where);
    check_built_size(c, total, "the reversal index");
    std::vector<double> source(static_cast<size_t>(total));
    for (int64_t k = 0; k < total; ++k) {
        const int64_t t = k / stride[static_cast<size_t>(ta)] % s[static_cast<size_t>(ta)];
        const int64_t b = k / stride[static_cast<size_t>(ba)] % s[static_cast<size_t>(ba)];
        const auto n = static_cast<int64_t>(len[static_cast<size_t>(b)]);
        CTK_CHECK(n >= 0 && n <= s[static_cast<size_t>(ta)], ValueError, c.where, ": sequence length ", n,
                  " is out of range");
        const int64_t from = t < n ? n - 1 - t : t;
        source[static_cast<size_t>(k)] =
            static_cast<double>(k + (from - t) * stride[static_cast<size_t>(ta)]);
    }
    Variable flat = reshape(x, {total});
    Variable idx = constant(Tensor::from_vector(source, Shape{total}));
    return {reshape(gather(flat, idx), s, std::nullopt, std::nullopt, c.name)};
}

}  // namespace

void add_math_handlers(std::map<std::string, Handler>& h) {
    h["Erf"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const DataType d = x.dtype();
        return {back_to(erf(as_float(x), c.name), d)};
    };
    h["Round"] = [](NodeCtx& c) -> std::vector<Variable> {
        return {alias(round_half_even(c.im.in(c, 0)), c.name)};
    };
    h["Acosh"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const DataType d = x.dtype();
        return {log(plus(x, sqrt(minus(square(x), scalar(1.0, d)))), c.name)};
    };
    h["Celu"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const DataType d = x.dtype();
        const double alpha = attr_f(c, "alpha", 1.0);
        Variable neg =
            element_times(scalar(alpha, d), minus(exp(element_divide(x, scalar(alpha, d))), scalar(1.0, d)));
        return {plus(relu(x), element_min(neg, scalar(0.0, d)), c.name)};
    };
    h["Shrink"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0);
        const DataType d = x.dtype();
        Variable xf = as_float(x);
        const DataType f = xf.dtype();
        const double lambd = attr_f(c, "lambd", 0.5), bias = attr_f(c, "bias", 0.0);
        Variable y = element_select(
            less(xf, scalar(-lambd, f)), plus(xf, scalar(bias, f)),
            element_select(greater(xf, scalar(lambd, f)), minus(xf, scalar(bias, f)), scalar(0.0, f)));
        return {back_to(alias(y, c.name), d)};
    };
    h["BitShift"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable x = c.im.in(c, 0), s = c.im.in(c, 1);
        const DataType d = x.dtype();
        Variable xf = cast(as_float(x), DataType::f64), sf = cast(as_float(s), DataType::f64);
        Variable factor = pow(scalar(2.0, DataType::f64), sf);
        const std::string dir = attr_s(c, "direction", "");
        Variable y;
        if (dir == "LEFT")
            y = element_times(xf, factor);
        else if (dir == "RIGHT")
            y = floor(element_divide(xf, factor));
        else
            CTK_THROW(ValueError, c.where, ": direction must be LEFT or RIGHT, not '", dir, "'");
        return {back_to(alias(y, c.name), d)};
    };
    h["CastLike"] = [](NodeCtx& c) -> std::vector<Variable> {
        const int64_t to = onnx_type_of(c, 1);
        c.im.onnx_types_[c.node.output(0)] = to;
        return {cast_to_onnx_type(c, c.im.in(c, 0), to)};
    };
    h["MatMulInteger"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable y = matrix_product(c, less_zero_point(c, 0, 2), less_zero_point(c, 1, 3));
        c.im.onnx_types_[c.node.output(0)] = TP::INT32;
        return {alias(y, c.name)};
    };
    // QLinearMatMul: the exact integer product of the operands less their zero points, scaled by
    // a_scale b_scale / y_scale (in f32, as ONNX) and quantized with y's zero point.
    h["QLinearMatMul"] = [](NodeCtx& c) -> std::vector<Variable> {
        Variable acc = matrix_product(c, less_zero_point(c, 0, 2), less_zero_point(c, 3, 5));
        auto f32 = [&](int i) { return cast(as_float(c.im.in(c, i)), DataType::f32); };
        Variable ratio = element_divide(element_times(f32(1), f32(4)), f32(6));
        Variable scaled = element_times(cast(acc, DataType::f32), ratio);
        const int64_t type = onnx_type_of(c, 7);
        Variable y =
            quantize(scaled, scalar(1.0, DataType::f32), cast(as_float(c.im.in(c, 7)), DataType::f32), type);
        c.im.onnx_types_[c.node.output(0)] = type;
        return {alias(y, c.name)};
    };
    h["ReverseSequence"] = reverse_sequence_node;
    h["MeanVarianceNormalization"] = mvn_node;
    h["InstanceNormalization"] = instance_norm_node;
    h["LRN"] = lrn_node;
    h["QuantizeLinear"] = quantize_node;
    h["DequantizeLinear"] = dequantize_node;
    h["DynamicQuantizeLinear"] = dynamic_quantize_node;
}

}  // namespace ctk::detail::onnx_io::importer
