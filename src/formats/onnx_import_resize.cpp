// ONNX import of Resize (opsets 10-17) and Upsample (7-9). Every mode ONNX defines (nearest with its
// four rounding rules, linear, cubic) and every coordinate transformation interpolates each axis on its
// own, so an axis resized from I to O points is a product with a constant [I, O] weight matrix built
// here: out[o] = sum_i W[i][o] in[i], W's column o holding the neighbours' coefficients at the source
// position of o (edges repeated, or dropped and the rest renormalized with exclude_outside). The graph
// then differentiates through the products like any other. A source position outside the cropped region
// of tf_crop_and_resize gives extrapolation_value.
#include <cmath>

#include "formats/onnx_import_internal.h"

namespace ctk::detail::onnx_io::importer {

namespace {

struct ResizeSpec {
    std::string mode = "nearest";
    std::string transform = "half_pixel";
    std::string nearest = "round_prefer_floor";
    double cubic_a = -0.75;
    bool exclude_outside = false;
};

// Coefficients of the neighbours of a source position with fraction `ratio` (1 at whole positions).
std::vector<double> coefficients(const ResizeSpec& s, double ratio) {
    if (s.mode == "linear") return {1 - ratio, ratio};
    if (s.mode == "cubic") {
        const double a = s.cubic_a, r = ratio, q = 1 - ratio;
        return {((a * (r + 1) - 5 * a) * (r + 1) + 8 * a) * (r + 1) - 4 * a,
                ((a + 2) * r - (a + 3)) * r * r + 1, ((a + 2) * q - (a + 3)) * q * q + 1,
                ((a * (q + 1) - 5 * a) * (q + 1) + 8 * a) * (q + 1) - 4 * a};
    }
    if (ratio == 1.0) return {0, 1};
    if (s.nearest == "round_prefer_ceil") return {ratio < 0.5 ? 1.0 : 0.0, ratio >= 0.5 ? 1.0 : 0.0};
    if (s.nearest == "floor") return {1, 0};
    if (s.nearest == "ceil") return {0, 1};
    return {ratio <= 0.5 ? 1.0 : 0.0, ratio > 0.5 ? 1.0 : 0.0};  // round_prefer_floor
}

// The [in, out] weights of one axis; `inside[o]` is false where tf_crop_and_resize extrapolates.
std::vector<double> axis_weights(const ResizeSpec& s, int64_t in, int64_t out, double scale, double roi_lo,
                                 double roi_hi, std::vector<bool>& inside) {
    std::vector<double> w(static_cast<size_t>(in * out), 0.0);
    inside.assign(static_cast<size_t>(out), true);
    const double I = static_cast<double>(in), O = scale * I;  // ONNX's output width, from the scale
    for (int64_t o = 0; o < out; ++o) {
        const double x = static_cast<double>(o);
        double src = 0;
        const std::string& t = s.transform;
        if (t == "align_corners") {
            src = O == 1 ? 0 : x * (I - 1) / (O - 1);
        } else if (t == "asymmetric") {
            src = x / scale;
        } else if (t == "tf_crop_and_resize") {
            src = O == 1 ? (roi_hi - roi_lo) * (I - 1) / 2 : x * (roi_hi - roi_lo) * (I - 1) / (O - 1);
            src += roi_lo * (I - 1);
            if (src < 0 || src > I - 1) {
                inside[static_cast<size_t>(o)] = false;
                continue;
            }
        } else if (t == "pytorch_half_pixel") {
            src = O == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
        } else if (t == "tf_half_pixel_for_nearest" || t == "tf_half_pixel_for_nn") {  // both names occur
            src = (x + 0.5) / scale;
        } else {  // half_pixel (the names were checked by resize_node)
            src = (x + 0.5) / scale - 0.5;
        }
        const double whole = std::floor(src);
        const double ratio = src == whole ? 1.0 : src - whole;
        std::vector<double> k = coefficients(s, ratio);
        const auto n = static_cast<int64_t>(k.size());
        // The n neighbours: whole positions around src (at whole src the one below comes first).
        const int64_t first = static_cast<int64_t>(whole) - (src == whole ? n / 2 : n / 2 - 1);
        if (s.exclude_outside) {
            double sum = 0;
            for (int64_t j = 0; j < n; ++j) {
                const int64_t i = first + j;
                if (i < 0 || i >= in) k[static_cast<size_t>(j)] = 0;
                sum += k[static_cast<size_t>(j)];
            }
            if (sum != 0)
                for (double& v : k) v /= sum;
        }
        for (int64_t j = 0; j < n; ++j) {
            const int64_t i = std::clamp<int64_t>(first + j, 0, in - 1);
            w[static_cast<size_t>(i * out + o)] += k[static_cast<size_t>(j)];
        }
    }
    return w;
}

// x with static axis `axis` resized by the weights [in, out].
Variable resize_axis(const Variable& x, int axis, const std::vector<double>& w, int64_t in, int64_t out) {
    Variable m = constant(Tensor::from_vector(w, Shape{in, out}).to(x.dtype()));
    const int r = x.rank();
    if (axis == r - 1) return times(x, m);
    std::vector<int> perm, back(static_cast<size_t>(r));
    for (int i = 0; i < r; ++i)
        if (i != axis) perm.push_back(i);
    perm.push_back(axis);
    for (int i = 0; i < r; ++i) back[static_cast<size_t>(perm[static_cast<size_t>(i)])] = i;
    return transpose(times(transpose(x, perm), m), back);
}

std::vector<Variable> resize(NodeCtx& c, const ResizeSpec& s, std::vector<double> scales, Dims sizes,
                             const std::vector<double>& roi) {
    Variable x = c.im.in(c, 0);
    const int r = onnx_rank(c, x), dyn = dyn_of(c, x);
    const bool crop = s.transform == "tf_crop_and_resize";
    CTK_CHECK(scales.empty() || static_cast<int>(scales.size()) == r, ValueError, c.where, ": ",
              scales.size(), " scales for rank ", r);
    CTK_CHECK(sizes.empty() || static_cast<int>(sizes.size()) == r, ValueError, c.where, ": ", sizes.size(),
              " sizes for rank ", r);
    CTK_CHECK(!scales.empty() || !sizes.empty(), ValueError, c.where, ": neither scales nor sizes is given");
    CTK_CHECK(!crop || static_cast<int>(roi.size()) == 2 * r, ValueError, c.where,
              ": tf_crop_and_resize needs a roi of 2 x rank values");
    const DataType d = x.dtype();
    Variable y = as_float(x);
    std::vector<std::vector<bool>> inside(static_cast<size_t>(r));
    Dims out_dims;
    bool extrapolates = false;
    for (int a = 0; a < r; ++a) {
        const double lo = crop ? roi[static_cast<size_t>(a)] : 0,
                     hi = crop ? roi[static_cast<size_t>(a + r)] : 1;
        if (a < dyn) {
            const bool same =
                sizes.empty() ? scales[static_cast<size_t>(a)] == 1 : sizes[static_cast<size_t>(a)] == 0;
            if (!same || (crop && (lo != 0 || hi != 1))) unsupported(c, "resizing the batch dimension");
            continue;
        }
        const int64_t in = y.shape()[static_cast<size_t>(a - dyn)];
        int64_t out = 0;
        double scale = 0;
        if (!sizes.empty()) {
            out = sizes[static_cast<size_t>(a)];
            scale = static_cast<double>(out) / static_cast<double>(in);
        } else {
            scale = scales[static_cast<size_t>(a)];
            const double want = std::floor(static_cast<double>(in) * (hi - lo) * scale);
            CTK_CHECK(std::isfinite(want) && want >= 1 && want <= double(int64_t(1) << 24), ValueError,
                      c.where, ": axis ", a, " resized from ", in, " by ", scale, " to ", want, " points");
            out = static_cast<int64_t>(want);
        }
        CTK_CHECK(scale > 0 && out >= 1 && out <= (int64_t(1) << 24), ValueError, c.where, ": axis ", a,
                  " resized from ", in, " to ", out);
        out_dims.push_back(out);
        check_built_size(c, checked_mul(in, out, c.where), "the interpolation matrix");
        std::vector<double> w = axis_weights(s, in, out, scale, lo, hi, inside[static_cast<size_t>(a)]);
        for (bool v : inside[static_cast<size_t>(a)]) extrapolates = extrapolates || !v;
        if (in == out && !crop && scale == 1.0) {
            bool identity = true;
            for (int64_t i = 0; i < in && identity; ++i)
                for (int64_t o = 0; o < out; ++o)
                    identity = identity && w[static_cast<size_t>(i * out + o)] == (i == o ? 1.0 : 0.0);
            if (identity) continue;
        }
        y = resize_axis(y, a - dyn, w, in, out);
    }
    const double ext = attr_f(c, "extrapolation_value", 0.0);
    if (extrapolates && ext != 0) {
        // Outputs whose source lies outside the crop along any axis hold 0 so far: add the value there.
        const int64_t total = element_count(out_dims, c.where);
        check_built_size(c, total, "the extrapolation values");
        std::vector<double> fill(static_cast<size_t>(total), 0.0);
        for (int64_t k = 0; k < total; ++k) {
            int64_t rest = k;
            bool in_all = true;
            for (int a = r - 1; a >= dyn; --a) {
                const int64_t n = out_dims[static_cast<size_t>(a - dyn)];
                in_all = in_all && inside[static_cast<size_t>(a)][static_cast<size_t>(rest % n)];
                rest /= n;
            }
            if (!in_all) fill[static_cast<size_t>(k)] = ext;
        }
        y = plus(y, constant(Tensor::from_vector(fill, Shape(out_dims)).to(y.dtype())));
    }
    return {back_to(alias(y, c.name), d)};
}

std::vector<double> doubles(const std::optional<Tensor>& t) {
    return t ? t->to_vector<double>() : std::vector<double>{};
}

std::vector<Variable> resize_node(NodeCtx& c) {
    ResizeSpec s;
    s.mode = attr_s(c, "mode", "nearest");
    if (s.mode != "nearest" && s.mode != "linear" && s.mode != "cubic")
        CTK_THROW(ValueError, c.where, ": mode '", s.mode, "' is not an ONNX Resize mode");
    if (c.im.opset_ < 11) {  // Resize-10: Upsample's rules, (X, scales)
        s.transform = "asymmetric";
        s.nearest = "floor";
        return resize(c, s, doubles(c.im.const_value(c, 1)), {}, {});
    }
    s.transform = attr_s(c, "coordinate_transformation_mode", "half_pixel");
    static const std::set<std::string> transforms = {
        "half_pixel",         "pytorch_half_pixel",        "align_corners",       "asymmetric",
        "tf_crop_and_resize", "tf_half_pixel_for_nearest", "tf_half_pixel_for_nn"};
    CTK_CHECK(transforms.count(s.transform), ValueError, c.where, ": coordinate_transformation_mode '",
              s.transform, "' is not one ONNX defines");
    s.nearest = attr_s(c, "nearest_mode", "round_prefer_floor");
    s.cubic_a = attr_f(c, "cubic_coeff_a", -0.75);
    s.exclude_outside = attr_i(c, "exclude_outside", 0) != 0;
    const std::vector<double> roi =
        s.transform == "tf_crop_and_resize" ? doubles(c.im.const_value(c, 1)) : std::vector<double>{};
    const std::vector<double> scales = doubles(c.im.const_value(c, 2));
    Dims sizes;
    if (c.im.has_input(c, 3)) sizes = c.im.const_ints(c, 3);
    if (!sizes.empty()) return resize(c, s, {}, sizes, roi);
    return resize(c, s, scales, {}, roi);
}

std::vector<Variable> upsample_node(NodeCtx& c) {
    ResizeSpec s;
    s.mode = attr_s(c, "mode", "nearest");
    if (s.mode != "nearest" && s.mode != "linear") CTK_THROW(ValueError, c.where, ": mode '", s.mode, "'");
    s.transform = "asymmetric";
    s.nearest = "floor";
    std::vector<double> scales;
    if (c.im.opset_ < 9) {
        const auto* a = find_attr(c, "scales");
        CTK_CHECK(a != nullptr, IOError, c.where, ": scales are missing");
        scales.assign(a->floats().begin(), a->floats().end());
    } else {
        scales = doubles(c.im.const_value(c, 1));
    }
    return resize(c, s, scales, {}, {});
}

}  // namespace

void add_resize_handlers(std::map<std::string, Handler>& h) {
    h["Resize"] = resize_node;
    h["Upsample"] = upsample_node;
}

}  // namespace ctk::detail::onnx_io::importer
