// Variables and their factories (declared in ctk/graph/variable.h).
#include <atomic>

#include "ctk/graph/function.h"
#include "graph/graph_internal.h"

namespace ctk {

const char* variable_kind_name(VariableKind kind) {
    switch (kind) {
        case VariableKind::input:
            return "Input";
        case VariableKind::output:
            return "Output";
        case VariableKind::parameter:
            return "Parameter";
        case VariableKind::constant:
            return "Constant";
        case VariableKind::placeholder:
            return "Placeholder";
    }
    return "?";
}

namespace detail {

std::string new_uid(const char* prefix) {
    static std::atomic<int64_t> counter{0};
    return prefix + std::to_string(counter++);
}

std::shared_ptr<VariableData> make_variable_data(VariableKind kind, Dims shape, DataType dtype,
                                                 std::vector<Axis> dynamic_axes, const std::string& name) {
    for (int64_t d : shape)
        CTK_CHECK(d >= 0 || d == kInferredDim || d == kFreeDim, ShapeError, variable_kind_name(kind), " '",
                  name, "': dim ", d, " in shape ", static_shape_string(shape),
                  " is invalid (use a size, kInferredDim (-1) or kFreeDim (-3))");
    // Refused here, naming the variable, rather than when its value or a batch is allocated (inferred
    // and free dims count as 1).
    Dims known = shape;
    for (int64_t& d : known)
        if (d < 0) d = 1;
    checked_nbytes(known, dtype, std::string(variable_kind_name(kind)) + " '" + name + "'");
    int sequence_axes = 0;
    for (size_t i = 0; i < dynamic_axes.size(); ++i) {
        const Axis& a = dynamic_axes[i];
        CTK_CHECK(a.is_dynamic(), ValueError, variable_kind_name(kind), " '", name, "': ", a.to_string(),
                  " is not a dynamic axis");
        CTK_CHECK(a.is_batch() == (i == 0), ValueError, variable_kind_name(kind), " '", name,
                  "': dynamic axes must be the batch axis, optionally followed by one sequence axis; got ",
                  dynamic_axes_string(dynamic_axes));
        sequence_axes += a.is_sequence();
    }
    CTK_CHECK(sequence_axes <= 1, ValueError, variable_kind_name(kind), " '", name,
              "': at most one sequence axis is supported; got ", dynamic_axes_string(dynamic_axes));
    auto d = std::make_shared<VariableData>();
    d->kind = kind;
    d->shape = std::move(shape);
    d->dtype = dtype;
    d->dynamic_axes = std::move(dynamic_axes);
    d->name = name;
    d->uid = new_uid(variable_kind_name(kind));
    return d;
}

std::string dynamic_axes_string(const std::vector<Axis>& axes) {
    std::string s = "[";
    for (size_t i = 0; i < axes.size(); ++i) {
        if (i) s += ", ";
        s += axes[i].is_batch()
                 ? "#"
                 : (axes[i].name() == Axis::default_dynamic_axis().name() ? "*" : axes[i].name());
    }
    return s + "]";
}

std::string static_shape_string(const Dims& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) {
        if (i) s += " x ";
        s += std::to_string(shape[i]);
    }
    return s + "]";
}

}  // namespace detail

FunctionPtr Variable::owner() const {
    if (owner_ || !data_) return owner_;
    return data_->owner.lock();
}

Variable::Variable(const FunctionPtr& function) {
    CTK_CHECK(function != nullptr, ValueError, "Variable: null Function");
    *this = function->output();
}

#define CTK_VAR_IMPL()                                                           \
    const detail::VariableData& d = *[this] {                                    \
        CTK_CHECK(data_ != nullptr, ValueError, "use of an undefined Variable"); \
        return data_.get();                                                      \
    }()

VariableKind Variable::kind() const {
    CTK_VAR_IMPL();
    return d.kind;
}
const Dims& Variable::shape() const {
    CTK_VAR_IMPL();
    return d.shape;
}
bool Variable::shape_known() const {
    CTK_VAR_IMPL();
    return d.shape_known;
}
bool Variable::has_inferred_dims() const {
    for (int64_t dim : shape())
        if (dim == kInferredDim) return true;
    return !shape_known();
}
DataType Variable::dtype() const {
    CTK_VAR_IMPL();
    return d.dtype;
}
const std::vector<Axis>& Variable::dynamic_axes() const {
    CTK_VAR_IMPL();
    return d.dynamic_axes;
}
bool Variable::has_batch_axis() const {
    return !dynamic_axes().empty();
}
bool Variable::has_sequence_axis() const {
    return dynamic_axes().size() == 2;
}
const std::string& Variable::name() const {
    CTK_VAR_IMPL();
    return d.name;
}
const std::string& Variable::uid() const {
    CTK_VAR_IMPL();
    return d.uid;
}
bool Variable::needs_gradient() const {
    CTK_VAR_IMPL();
    return d.needs_gradient;
}
bool Variable::is_sparse() const {
    CTK_VAR_IMPL();
    return d.is_sparse;
}
bool Variable::regularization_enabled() const {
    CTK_VAR_IMPL();
    return d.regularized;
}
void Variable::set_regularization_enabled(bool enabled) const {
    CTK_CHECK(data_ != nullptr, ValueError, "use of an undefined Variable");
    data_->regularized = enabled;
}
int Variable::output_index() const {
    CTK_VAR_IMPL();
    return d.output_index;
}
#undef CTK_VAR_IMPL

Tensor Variable::value() const {
    CTK_CHECK(is_parameter() || is_constant(), ValueError, to_string(),
              " has no value: only parameters and constants do");
    detail::VariableData& d = *data_;
    if (!d.value.defined()) {
        CTK_CHECK(!has_inferred_dims(), ShapeError, to_string(),
                  " has no value yet: its shape still has inferred dims (use it in a graph first)");
        checked_nbytes(d.shape, d.dtype, to_string());
        // Drawn on the CPU whatever the device, so that a seed gives the same weights everywhere.
        Tensor v = Tensor::empty(Shape(d.shape), d.dtype == DataType::f64 ? DataType::f64 : DataType::f32);
        d.init.fill(v);
        d.value = v.to(d.dtype).to(default_device());
    }
    return d.value;
}

namespace detail {
Tensor value_on(const Variable& v, Device device) {
    Tensor value = v.value();
    if (value.device() != device) v.impl()->value = value = value.to(device);
    return value;
}
}  // namespace detail

void Variable::set_value(const Tensor& v) const {
    Tensor current = value();
    CTK_CHECK(v.shape() == current.shape(), ShapeError, "set_value on ", to_string(), ": value of shape ",
              v.shape().to_string(), " does not match");
    current.copy_from(v.to(current.device()));
}

std::string Variable::to_string() const {
    if (!data_) return "Variable(undefined)";
    const detail::VariableData& d = *data_;
    std::string shape = d.shape_known ? detail::static_shape_string(d.shape) : "[???]";
    return std::string(variable_kind_name(d.kind)) + "('" + (d.name.empty() ? d.uid : d.name) + "', " +
           detail::dynamic_axes_string(d.dynamic_axes) + ", " + shape + ")";
}

// ---- factories ----

std::vector<Axis> default_batch_axes() {
    return {Axis::default_batch_axis()};
}
std::vector<Axis> default_sequence_axes() {
    return {Axis::default_batch_axis(), Axis::default_dynamic_axis()};
}

Variable input_variable(const Dims& given_shape, DataType dtype, bool needs_gradient, bool is_sparse,
                        std::vector<Axis> dynamic_axes, const std::string& name) {
    // CNTK ran an input with an inferred dim (-1) on whatever size its data has there: a free dim.
    Dims shape = given_shape;
    for (int64_t& dim : shape)
        if (dim == kInferredDim) dim = kFreeDim;
    CTK_CHECK(is_floating(dtype), TypeError, "input_variable '", name, "': dtype ", dtype_name(dtype),
              " is not floating-point");
    auto d = detail::make_variable_data(VariableKind::input, shape, dtype, std::move(dynamic_axes), name);
    d->needs_gradient = needs_gradient;
    d->is_sparse = is_sparse;
    return Variable(d, nullptr);
}

Variable sequence_input_variable(const Dims& shape, DataType dtype, bool needs_gradient, bool is_sparse,
                                 const Axis& sequence_axis, const std::string& name) {
    CTK_CHECK(sequence_axis.is_sequence(), ValueError, "sequence_input_variable '", name,
              "': ", sequence_axis.to_string(), " is not a sequence axis");
    return input_variable(shape, dtype, needs_gradient, is_sparse,
                          {Axis::default_batch_axis(), sequence_axis}, name);
}

Variable parameter(const Dims& shape, const Initializer& init, DataType dtype, const std::string& name) {
    CTK_CHECK(is_floating(dtype), TypeError, "parameter '", name, "': dtype ", dtype_name(dtype),
              " is not floating-point");
    for (int64_t dim : shape)
        CTK_CHECK(dim != kFreeDim, ShapeError, "parameter '", name, "': shape ",
                  detail::static_shape_string(shape),
                  " has a free dim; parameters need known or inferred (-1) dims");
    auto d = detail::make_variable_data(VariableKind::parameter, shape, dtype, {}, name);
    d->needs_gradient = true;
    d->init = init;
    if (d->init.seed == kSentinelSeed && d->init.kind != Initializer::Kind::constant &&
        d->init.kind != Initializer::Kind::bilinear && d->init.kind != Initializer::Kind::values)
        d->init.seed = next_random_seed();  // drawn now, so the value depends on creation order only
    return Variable(d, nullptr);
}

Variable parameter_from(const Tensor& value, const std::string& name) {
    auto d =
        detail::make_variable_data(VariableKind::parameter, value.shape().dims(), value.dtype(), {}, name);
    d->needs_gradient = true;
    d->value = value.clone();
    return Variable(d, nullptr);
}

Variable constant(const Tensor& value, const std::string& name) {
    auto d =
        detail::make_variable_data(VariableKind::constant, value.shape().dims(), value.dtype(), {}, name);
    d->value = value.clone();
    return Variable(d, nullptr);
}

Variable constant(double value, DataType dtype, const std::string& name) {
    return constant(Tensor::full(Shape{}, value, dtype), name);
}

Variable constant(const Dims& shape, double value, DataType dtype, const std::string& name) {
    bool inferred = false;
    for (int64_t dim : shape) inferred = inferred || dim == kInferredDim;
    if (!inferred) checked_nbytes(shape, dtype, "constant '" + name + "'");
    if (!inferred) return constant(Tensor::full(Shape(shape), value, dtype), name);
    // Inferred dims (CNTK's Constant(0, shape=(INFERRED,))): the value is filled in once the shape is known.
    for (int64_t dim : shape)
        CTK_CHECK(dim >= 0 || dim == kInferredDim, ShapeError, "constant '", name, "': shape ",
                  detail::static_shape_string(shape), " has a free or negative dim");
    auto d = detail::make_variable_data(VariableKind::constant, shape, dtype, {}, name);
    d->init = constant_initializer(value);
    return Variable(d, nullptr);
}

Variable placeholder(const std::string& name) {
    auto d = detail::make_variable_data(VariableKind::placeholder, {}, DataType::f32, {}, name);
    d->shape_known = false;
    return Variable(d, nullptr);
}

Variable placeholder(const Dims& shape, std::vector<Axis> dynamic_axes, const std::string& name) {
    return Variable(detail::make_variable_data(VariableKind::placeholder, shape, DataType::f32,
                                               std::move(dynamic_axes), name),
                    nullptr);
}

}  // namespace ctk
