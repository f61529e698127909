// Tensor views, copies (strided, broadcasting, converting) and element access.
#include "ctk/core/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>

#include "core/strided_loop.h"

#if CTK_HAVE_CUDA
#include "core/cuda/copy.h"
#endif

namespace ctk {

double load_as_double(const void* p, DataType dtype) {
    switch (dtype) {
        case DataType::f32:
            return *static_cast<const float*>(p);
        case DataType::f64:
            return *static_cast<const double*>(p);
        case DataType::f16:
            return static_cast<float>(*static_cast<const Half*>(p));
        case DataType::bf16:
            return static_cast<float>(*static_cast<const BFloat16*>(p));
        case DataType::i32:
            return *static_cast<const int32_t*>(p);
        case DataType::i64:
            return static_cast<double>(*static_cast<const int64_t*>(p));
        case DataType::u8:
            return *static_cast<const uint8_t*>(p);
    }
    return 0;
}

void store_from_double(void* p, DataType dtype, double v) {
    switch (dtype) {
        case DataType::f32:
            *static_cast<float*>(p) = static_cast<float>(v);
            break;
        case DataType::f64:
            *static_cast<double*>(p) = v;
            break;
        case DataType::f16:
            *static_cast<Half*>(p) = Half::from_double(v);
            break;
        case DataType::bf16:
            *static_cast<BFloat16*>(p) = BFloat16::from_double(v);
            break;
        case DataType::i32:
            *static_cast<int32_t*>(p) = static_cast<int32_t>(v);
            break;
        case DataType::i64:
            *static_cast<int64_t*>(p) = static_cast<int64_t>(v);
            break;
        case DataType::u8:
            *static_cast<uint8_t*>(p) = static_cast<uint8_t>(v);
            break;
    }
}

namespace {

// Converts one element type to another; 16-bit floats go through float, but a double (or a 64-bit
// integer) becomes one correctly rounded, as on a GPU.
template <typename To, typename From>
inline To convert(From v) {
    if constexpr (std::is_same_v<To, From>) {
        return v;
    } else if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
        return convert<To>(static_cast<float>(v));
    } else if constexpr (std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) {
        if constexpr (std::is_same_v<From, double> || std::is_same_v<From, int64_t>)
            return To::from_double(static_cast<double>(v));
        else
            return To(static_cast<float>(v));
    } else {
        return static_cast<To>(v);
    }
}

template <typename To, typename From>
void copy_typed(const detail::StridedPlan<2>& plan, char* dst, const char* src) {
    detail::run_strided<2>(plan, {dst, const_cast<char*>(src)},
                           [](std::array<char*, 2> p, int64_t n, std::array<int64_t, 2> s) {
                               if (s[0] == sizeof(To) && s[1] == sizeof(From)) {
                                   To* d = reinterpret_cast<To*>(p[0]);
                                   const From* a = reinterpret_cast<const From*>(p[1]);
                                   if constexpr (std::is_same_v<To, From>) {
                                       std::memcpy(d, a, static_cast<size_t>(n) * sizeof(To));
                                   } else {
                                       for (int64_t i = 0; i < n; ++i) d[i] = convert<To>(a[i]);
                                   }
                               } else {
                                   for (int64_t i = 0; i < n; ++i)
                                       *reinterpret_cast<To*>(p[0] + i * s[0]) =
                                           convert<To>(*reinterpret_cast<const From*>(p[1] + i * s[1]));
                               }
                           });
}

Dims byte_strides(const Tensor& t) {
    Dims s = t.strides();
    for (auto& x : s) x *= static_cast<int64_t>(t.element_size());
    return s;
}

}  // namespace

Device Tensor::device() const {
    return storage_ ? storage_->device() : Device::cpu();
}

void* Tensor::raw_data() const {
    CTK_CHECK(defined(), ValueError, "use of an undefined tensor");
    return static_cast<char*>(storage_->data()) + offset_ * static_cast<int64_t>(element_size());
}

bool Tensor::is_contiguous() const {
    int64_t expected = 1;
    for (int i = rank() - 1; i >= 0; --i) {
        if (shape_[i] != 1 && strides_[static_cast<size_t>(i)] != expected) return false;
        expected *= shape_[i];
    }
    return true;
}

size_t checked_nbytes(const Dims& dims, DataType dtype, std::string_view what) {
    const int64_t n = checked_numel(dims, what);
    const auto item = static_cast<int64_t>(size_of(dtype));
    int64_t bytes = 0;
    CTK_CHECK(!__builtin_mul_overflow(n, item, &bytes), ValueError, what, ": shape ", dims_to_string(dims),
              " of ", dtype_name(dtype), " needs ", n, " x ", item,
              " bytes, more than a 64-bit address space holds");
    return static_cast<size_t>(bytes);
}

Tensor Tensor::empty(const Shape& shape, DataType dtype, Device device) {
    Tensor t;
    t.storage_ = std::make_shared<Storage>(checked_nbytes(shape.dims(), dtype, "tensor"), device);
    t.shape_ = shape;
    t.strides_ = shape.contiguous_strides();
    t.dtype_ = dtype;
    return t;
}

Dims channels_last_strides(const Shape& shape) {
    CTK_CHECK(shape.rank() >= 3, ShapeError, "channels-last layout: shape ", shape.to_string(),
              " has no spatial axis (rank >= 3 needed)");
    const int r = shape.rank();
    Dims strides(static_cast<size_t>(r));
    int64_t s = 1;
    strides[1] = s;
    s *= std::max<int64_t>(shape[1], 1);
    for (int i = r - 1; i >= 2; --i) {
        strides[static_cast<size_t>(i)] = s;
        s *= std::max<int64_t>(shape[i], 1);
    }
    strides[0] = s;
    return strides;
}

bool is_channels_last(const Tensor& t) {
    if (!t.defined() || t.rank() < 3 || t.is_contiguous()) return false;
    const Dims want = channels_last_strides(t.shape());
    for (int i = 0; i < t.rank(); ++i)
        if (t.dim(i) != 1 && t.strides()[static_cast<size_t>(i)] != want[static_cast<size_t>(i)])
            return false;
    return true;
}

Tensor empty_channels_last(const Shape& shape, DataType dtype, Device device) {
    return Tensor::empty(Shape{shape.numel()}, dtype, device)
        .as_strided(shape, channels_last_strides(shape), 0);
}

Tensor empty_in_layout_of(const Tensor& like, const Shape& shape, DataType dtype) {
    if (like.rank() == shape.rank() && is_channels_last(like))
        return empty_channels_last(shape, dtype, like.device());
    return Tensor::empty(shape, dtype, like.device());
}

Tensor Tensor::full(const Shape& shape, double value, DataType dtype, Device device) {
    Tensor t = empty(shape, dtype, device);
    t.fill(value);
    return t;
}
Tensor Tensor::zeros(const Shape& shape, DataType dtype, Device device) {
    Tensor t = empty(shape, dtype, device);
    if (!device.is_cpu()) {
        t.fill(0.0);
        return t;
    }
    std::memset(t.raw_data(), 0, static_cast<size_t>(t.numel()) * t.element_size());
    return t;
}
Tensor Tensor::ones(const Shape& shape, DataType dtype, Device device) {
    return full(shape, 1.0, dtype, device);
}
Tensor Tensor::scalar(double value, DataType dtype) {
    return full(Shape{}, value, dtype);
}

Tensor Tensor::arange(const Shape& shape, DataType dtype) {
    Tensor t = empty(shape, dtype);
    char* p = static_cast<char*>(t.raw_data());
    for (int64_t i = 0; i < t.numel(); ++i)
        store_from_double(p + i * static_cast<int64_t>(t.element_size()), dtype, static_cast<double>(i));
    return t;
}

Tensor Tensor::wrap(void* data, size_t bytes, const Shape& shape, const Dims& strides, DataType dtype,
                    Device device, std::shared_ptr<void> keep_alive) {
    Tensor t;
    t.storage_ = std::make_shared<Storage>(data, bytes, device, std::move(keep_alive));
    t.shape_ = shape;
    t.strides_ = strides;
    t.dtype_ = dtype;
    CTK_CHECK(static_cast<int>(strides.size()) == shape.rank(), ShapeError, "wrap: ", strides.size(),
              " strides given for shape ", shape.to_string());
    CTK_CHECK(reinterpret_cast<uintptr_t>(data) % size_of(dtype) == 0, ValueError,
              "wrap: data pointer is not aligned to the ", size_of(dtype), "-byte elements of ",
              dtype_name(dtype));
    t.check_view_in_bounds("wrap");
    return t;
}

void Tensor::check_view_in_bounds(const char* op) const {
    if (numel() == 0) return;
    int64_t lo = offset_, hi = offset_;
    for (int i = 0; i < rank(); ++i) {
        int64_t span = (shape_[i] - 1) * strides_[static_cast<size_t>(i)];
        (span < 0 ? lo : hi) += span;
    }
    int64_t capacity = static_cast<int64_t>(storage_->bytes() / element_size());
    CTK_CHECK(lo >= 0 && hi < capacity, IndexError, op, ": view of shape ", shape_.to_string(),
              " with strides ", dims_to_string(strides_), " and offset ", offset_, " reaches elements [", lo,
              ", ", hi, "] outside its storage of ", capacity, " elements");
}

Tensor Tensor::as_strided(const Shape& shape, const Dims& strides, int64_t offset) const {
    CTK_CHECK(static_cast<int>(strides.size()) == shape.rank(), ShapeError, "as_strided: ", strides.size(),
              " strides given for shape ", shape.to_string());
    Tensor t = *this;
    t.shape_ = shape;
    t.strides_ = strides;
    t.offset_ = offset;
    t.check_view_in_bounds("as_strided");
    return t;
}

Tensor Tensor::slice(int axis, int64_t begin, int64_t end, int64_t step) const {
    int a = shape_.normalize_axis(axis, "slice axis");
    int64_t n = shape_[a];
    CTK_CHECK(step > 0, ValueError, "slice: step must be positive, got ", step);
    if (begin < 0) begin += n;
    if (end < 0) end += n;
    begin = std::clamp<int64_t>(begin, 0, n);
    end = std::clamp<int64_t>(end, begin, n);
    Tensor t = *this;
    t.offset_ += begin * strides_[static_cast<size_t>(a)];
    t.shape_[a] = (end - begin + step - 1) / step;
    t.strides_[static_cast<size_t>(a)] *= step;
    return t;
}

Tensor Tensor::select(int axis, int64_t index) const {
    int a = shape_.normalize_axis(axis, "select axis");
    int64_t n = shape_[a];
    CTK_CHECK(index >= -n && index < n, IndexError, "select: index ", index, " out of range for axis ", a,
              " of shape ", shape_.to_string());
    if (index < 0) index += n;
    Tensor t = *this;
    t.offset_ += index * strides_[static_cast<size_t>(a)];
    Dims dims = shape_.dims();
    dims.erase(dims.begin() + a);
    t.strides_.erase(t.strides_.begin() + a);
    t.shape_ = Shape(dims);
    return t;
}

Tensor Tensor::permute(const std::vector<int>& order) const {
    CTK_CHECK(static_cast<int>(order.size()) == rank(), ShapeError, "permute: order of length ", order.size(),
              " for a tensor of shape ", shape_.to_string());
    std::vector<bool> seen(order.size(), false);
    Dims dims(order.size()), strides(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
        int a = shape_.normalize_axis(order[i], "permute axis");
        CTK_CHECK(!seen[static_cast<size_t>(a)], ValueError, "permute: axis ", a, " appears twice");
        seen[static_cast<size_t>(a)] = true;
        dims[i] = shape_[a];
        strides[i] = strides_[static_cast<size_t>(a)];
    }
    Tensor t = *this;
    t.shape_ = Shape(dims);
    t.strides_ = strides;
    return t;
}

Tensor Tensor::transpose(int axis0, int axis1) const {
    std::vector<int> order(static_cast<size_t>(rank()));
    std::iota(order.begin(), order.end(), 0);
    std::swap(order[static_cast<size_t>(shape_.normalize_axis(axis0))],
              order[static_cast<size_t>(shape_.normalize_axis(axis1))]);
    return permute(order);
}

Tensor Tensor::broadcast_to(const Shape& shape) const {
    CTK_CHECK(shape.rank() >= rank(), ShapeError, "broadcast_to: cannot broadcast shape ", shape_.to_string(),
              " to lower-rank shape ", shape.to_string());
    Dims strides(static_cast<size_t>(shape.rank()), 0);
    for (int i = 0; i < rank(); ++i) {
        int j = shape.rank() - rank() + i;
        if (shape_[i] == shape[j]) {
            strides[static_cast<size_t>(j)] = strides_[static_cast<size_t>(i)];
        } else {
            CTK_CHECK(shape_[i] == 1, ShapeError, "broadcast_to: cannot broadcast shape ", shape_.to_string(),
                      " to ", shape.to_string());
        }
    }
    Tensor t = *this;
    t.shape_ = shape;
    t.strides_ = strides;
    return t;
}

Tensor Tensor::expand_dims(int axis) const {
    int r = rank() + 1;
    CTK_CHECK(axis >= -r && axis < r, ValueError, "expand_dims: axis ", axis, " out of range for rank ",
              rank());
    if (axis < 0) axis += r;
    Dims dims = shape_.dims();
    dims.insert(dims.begin() + axis, 1);
    Tensor t = *this;
    int64_t stride = axis < rank() ? strides_[static_cast<size_t>(axis)] * shape_[axis] : 1;
    t.strides_.insert(t.strides_.begin() + axis, stride);
    t.shape_ = Shape(dims);
    return t;
}

Tensor Tensor::squeeze(int axis) const {
    int a = shape_.normalize_axis(axis, "squeeze axis");
    CTK_CHECK(shape_[a] == 1, ShapeError, "squeeze: axis ", a, " of shape ", shape_.to_string(), " has size ",
              shape_[a], ", not 1");
    return select(a, 0);
}

namespace {
Dims resolve_dims(const Dims& dims, int64_t numel, const Shape& from) {
    Dims out = dims;
    int infer = -1;
    int64_t known = 1;
    for (size_t i = 0; i < out.size(); ++i) {
        if (out[i] == -1) {
            CTK_CHECK(infer < 0, ShapeError, "reshape: more than one -1 in ", dims_to_string(dims));
            infer = static_cast<int>(i);
        } else {
            CTK_CHECK(out[i] >= 0, ShapeError, "reshape: negative dimension in ", dims_to_string(dims));
            known *= out[i];
        }
    }
    if (infer >= 0) {
        CTK_CHECK(known != 0 && numel % known == 0, ShapeError, "reshape: cannot infer -1 in ",
                  dims_to_string(dims), " for ", numel, " elements of shape ", from.to_string());
        out[static_cast<size_t>(infer)] = numel / known;
        known *= out[static_cast<size_t>(infer)];
    }
    CTK_CHECK(known == numel, ShapeError, "reshape: shape ", from.to_string(), " (", numel,
              " elements) cannot become ", dims_to_string(dims));
    return out;
}
}  // namespace

Tensor Tensor::view(const Dims& dims) const {
    Dims target = resolve_dims(dims, numel(), shape_);
    Tensor t = *this;
    t.shape_ = Shape(target);
    if (numel() == 0) {
        t.strides_ = t.shape_.contiguous_strides();
        return t;
    }
    // Drop size-1 source dims, then walk source and target in chunks of equal element count; inside a
    // chunk the source dims must be contiguous with respect to each other for a view to exist.
    Dims sd, ss;
    for (int i = 0; i < rank(); ++i) {
        if (shape_[i] == 1) continue;
        sd.push_back(shape_[i]);
        ss.push_back(strides_[static_cast<size_t>(i)]);
    }
    Dims new_strides(target.size(), 1);
    size_t i = 0, j = 0;
    while (j < target.size()) {
        if (target[j] == 1) {
            ++j;
            continue;
        }
        size_t i_end = i, j_end = j;
        int64_t p0 = sd[i], p1 = target[j];
        while (p0 != p1) {
            if (p0 < p1)
                p0 *= sd[++i_end];
            else
                p1 *= target[++j_end];
        }
        for (size_t k = i; k < i_end; ++k)
            CTK_CHECK(ss[k] == ss[k + 1] * sd[k + 1], ShapeError, "view: shape ", shape_.to_string(),
                      " with strides ", dims_to_string(strides_), " cannot be viewed as ",
                      dims_to_string(target), " without a copy (use reshape)");
        int64_t s = ss[i_end];
        for (size_t k = j_end + 1; k-- > j;) {
            new_strides[k] = s;
            s *= target[k];
        }
        i = i_end + 1;
        j = j_end + 1;
    }
    t.strides_ = new_strides;
    return t;
}

Tensor Tensor::reshape(const Dims& dims) const {
    try {
        return view(dims);
    } catch (const ShapeError&) {
        Dims target = resolve_dims(dims, numel(), shape_);  // rethrows real size mismatches
        return contiguous().view(target);
    }
}

Tensor Tensor::contiguous() const {
    if (is_contiguous()) return *this;
    return clone();
}

Tensor Tensor::clone() const {
    Tensor t = empty(shape_, dtype_, device());
    t.copy_from(*this);
    return t;
}

Tensor Tensor::to(Device device) const {
    if (device == this->device()) return *this;
    Tensor t = empty(shape_, dtype_, device);
    t.copy_from(*this);
    return t;
}

Tensor Tensor::to(DataType dtype) const {
    if (dtype == dtype_) return *this;
    Tensor t = empty(shape_, dtype, device());
    t.copy_from(*this);
    return t;
}

void Tensor::copy_from(const Tensor& src) {
    CTK_CHECK(defined() && src.defined(), ValueError, "copy_from: undefined tensor");
    if (!device().is_cpu() || !src.device().is_cpu()) {
#if CTK_HAVE_CUDA
        CTK_CHECK(src.broadcast_to(shape_).numel() == numel(), ShapeError, "copy_from: shape mismatch");
        return cuda::detail::copy_tensor(src, *this);
#else
        CTK_THROW(DeviceError, "copy_from: copies between ", src.device().to_string(), " and ",
                  device().to_string(), " are not available in this build");
#endif
    }
    Tensor s = src.broadcast_to(shape_);
    if (numel() == 0) return;
    auto plan = detail::make_strided_plan<2>(shape_.dims(), {byte_strides(*this), byte_strides(s)});
    char* d = static_cast<char*>(raw_data());
    const char* a = static_cast<const char*>(s.raw_data());
    visit_dtype(dtype_, [&](auto to) {
        using To = decltype(to);
        visit_dtype(s.dtype(), [&](auto from) { copy_typed<To, decltype(from)>(plan, d, a); });
    });
}

void Tensor::fill(double value) {
    if (numel() == 0) return;
#if CTK_HAVE_CUDA
    if (device().is_cuda()) return cuda::detail::fill(*this, value);
#endif
    Tensor one = empty(Shape{}, dtype_);
    store_from_double(one.raw_data(), dtype_, value);
    copy_from(one);
}

int64_t Tensor::element_offset(const Dims& index) const {
    CTK_CHECK(static_cast<int>(index.size()) == rank(), IndexError, "index ", dims_to_string(index),
              " does not match shape ", shape_.to_string());
    int64_t off = offset_;
    for (int i = 0; i < rank(); ++i) {
        int64_t k = index[static_cast<size_t>(i)];
        CTK_CHECK(k >= 0 && k < shape_[i], IndexError, "index ", dims_to_string(index),
                  " out of range for shape ", shape_.to_string());
        off += k * strides_[static_cast<size_t>(i)];
    }
    return off;
}

double Tensor::at(const Dims& index) const {
    if (!device().is_cpu()) return as_strided(Shape{}, {}, element_offset(index)).to(Device::cpu()).item();
    return load_as_double(
        static_cast<char*>(storage_->data()) + element_offset(index) * static_cast<int64_t>(element_size()),
        dtype_);
}

void Tensor::set(const Dims& index, double value) {
    if (!device().is_cpu()) return as_strided(Shape{}, {}, element_offset(index)).fill(value);
    store_from_double(
        static_cast<char*>(storage_->data()) + element_offset(index) * static_cast<int64_t>(element_size()),
        dtype_, value);
}

double Tensor::item() const {
    CTK_CHECK(numel() == 1, ShapeError, "item: tensor of shape ", shape_.to_string(), " has ", numel(),
              " elements, not 1");
    if (!device().is_cpu()) return to(Device::cpu()).item();
    return load_as_double(raw_data(), dtype_);
}

std::string Tensor::to_string() const {
    if (!defined()) return "Tensor(undefined)";
    return detail::concat("Tensor(", dtype_name(dtype_), ", ", shape_.to_string(), ", ", device().to_string(),
                          ")");
}

}  // namespace ctk
