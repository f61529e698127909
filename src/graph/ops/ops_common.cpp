// Shared helpers of the op families (declared in ops/ops_common.h).
#include "graph/ops/ops_common.h"

namespace ctk::detail {

int normalize_static_axis(int axis, int rank, const std::string& where) {
    const int a = axis < 0 ? axis + rank : axis;
    CTK_CHECK(a >= 0 && a < rank, ValueError, where, ": static axis ", axis,
              " is out of range for a sample of rank ", rank);
    return a;
}

int normalize_static_axis(const Axis& axis, int rank, const std::string& where) {
    CTK_CHECK(axis.is_static(), ValueError, where, ": ", axis.to_string(), " is not a static axis");
    return normalize_static_axis(axis.static_index(), rank, where);
}

std::vector<Axis> merge_dynamic_axes(const std::vector<Variable>& inputs, const std::string& where) {
    const Variable* first = nullptr;
    for (const Variable& v : inputs) {
        if (v.dynamic_axes().empty()) continue;
        if (!first) {
            first = &v;
            continue;
        }
        CTK_CHECK(v.dynamic_axes() == first->dynamic_axes(), ShapeError, where,
                  ": operands have different dynamic axes (", first->to_string(), " and ", v.to_string(),
                  "); use broadcast_as or reconcile_dynamic_axes");
    }
    return first ? first->dynamic_axes() : std::vector<Axis>{};
}

namespace {
// The operands with each Constant whose type differs from the one type of the other floating-point
// operands converted to it; nullopt when there is nothing to convert.
std::optional<std::vector<Variable>> constants_converted(const std::vector<Variable>& inputs) {
    std::optional<DataType> target;
    for (const Variable& v : inputs) {
        if (v.is_constant() || !is_floating(v.dtype())) continue;
        if (target && *target != v.dtype()) return std::nullopt;  // the graph itself mixes types
        target = v.dtype();
    }
    if (!target) return std::nullopt;
    std::vector<Variable> out = inputs;
    bool changed = false;
    for (Variable& v : out) {
        if (!v.is_constant() || v.dtype() == *target) continue;
        v = constant(v.value().to(*target), v.name());
        changed = true;
    }
    if (!changed) return std::nullopt;
    return out;
}
}  // namespace

FunctionPtr make_op(PrimitiveOp op, std::vector<Variable> inputs, Attributes attrs, const std::string& name) {
    try {
        return FunctionAccess::make_primitive(op, inputs, attrs, name);
    } catch (const TypeError&) {
        const auto converted = constants_converted(inputs);
        if (!converted) throw;
        try {
            return FunctionAccess::make_primitive(op, *converted, std::move(attrs), name);
        } catch (const Error&) {
        }
        throw;
    }
}

DataType common_dtype(const std::vector<Variable>& inputs, const std::string& where) {
    DataType d = inputs.at(0).dtype();
    for (const Variable& v : inputs)
        CTK_CHECK(v.dtype() == d, TypeError, where, ": operands have different dtypes (",
                  inputs[0].to_string(), " is ", dtype_name(d), ", ", v.to_string(), " is ",
                  dtype_name(v.dtype()), ")");
    return d;
}

Dims broadcast_static(std::vector<Variable>& inputs, const std::string& where) {
    size_t rank = 0;
    for (const Variable& v : inputs) rank = std::max(rank, v.shape().size());
    Dims out(rank, 1);
    // First pass: the known dims; second: resolve inferred dims of parameters against them.
    for (const Variable& v : inputs) {
        const Dims& s = v.shape();
        for (size_t i = 0; i < s.size(); ++i) {
            int64_t& o = out[rank - s.size() + i];
            const int64_t d = s[i];
            if (d == 1 || d == kInferredDim) continue;
            if (o == 1 || o == kInferredDim || o == kFreeDim) {
                o = d;
            } else if (d != kFreeDim && d != o) {
                std::string shapes;
                for (const Variable& w : inputs) shapes.append(" ").append(w.to_string());
                CTK_THROW(ShapeError, where, ": operand shapes do not broadcast:", shapes);
            }
        }
    }
    for (Variable& v : inputs) {
        Dims& s = v.impl()->shape;
        for (size_t i = 0; i < s.size(); ++i)
            if (s[i] == kInferredDim) {
                const int64_t o = out[rank - s.size() + i];
                CTK_CHECK(v.is_parameter() || v.is_constant() || v.is_placeholder(), ShapeError, where,
                          ": cannot infer dim ", i, " of ", v.to_string());
                if (o > 0) s[i] = o;
            }
    }
    for (int64_t& o : out)
        if (o == kInferredDim) o = kInferredDim;
    return out;
}

int64_t product(const Dims& d, size_t begin, size_t end) {
    int64_t p = 1;
    for (size_t i = begin; i < end; ++i)
        CTK_CHECK(!__builtin_mul_overflow(p, d[i], &p), ValueError, "dims ", dims_to_string(d),
                  " hold more elements than a 64-bit count can hold");
    return p;
}

Tensor align(const Tensor& data, int dyn, int out_dyn, int out_static) {
    const int stat = data.rank() - dyn;
    if (dyn == out_dyn && stat == out_static) return data;
    Dims dims;
    for (int i = 0; i < out_dyn; ++i) dims.push_back(dyn == out_dyn ? data.dim(i) : 1);
    for (int i = stat; i < out_static; ++i) dims.push_back(1);
    for (int i = 0; i < stat; ++i) dims.push_back(data.dim(dyn + i));
    return data.reshape(dims);
}

Tensor reduce_to_operand(const Tensor& dy, const Tensor& operand_data, int dyn, int out_dyn, int out_static) {
    Tensor aligned = align(operand_data, dyn, out_dyn, out_static);
    Tensor g = aligned.shape() == dy.shape() ? dy : sum_to_shape(dy, aligned.shape());
    return g.reshape(operand_data.shape().dims());
}

Tensor fold_dynamic(const Tensor& data, int dyn) {
    Dims dims{1};
    for (int i = 0; i < dyn; ++i) dims[0] *= data.dim(i);
    for (int i = dyn; i < data.rank(); ++i) dims.push_back(data.dim(i));
    return data.reshape(dims);
}

Tensor unfold_dynamic(const Tensor& data, const Tensor& like, int dyn) {
    Dims dims(like.shape().dims().begin(), like.shape().dims().begin() + dyn);
    for (int i = 1; i < data.rank(); ++i) dims.push_back(data.dim(i));
    return data.reshape(dims);
}

const SequenceLayout& layout_of(const Value& v, std::shared_ptr<const SequenceLayout>& holder) {
    if (v.has_layout()) return *v.layout();
    holder = std::make_shared<SequenceLayout>(
        std::vector<int64_t>(static_cast<size_t>(v.data().dim(0)), v.data().dim(1)));
    return *holder;
}

std::vector<int64_t> real_frame_rows(const Value& v, int dyn) {
    std::vector<int64_t> rows;
    if (dyn == 2) {
        std::shared_ptr<const SequenceLayout> h;
        const SequenceLayout& l = layout_of(v, h);
        for (int64_t s = 0; s < l.num_sequences(); ++s)
            for (int64_t t = 0; t < l.lengths()[static_cast<size_t>(s)]; ++t)
                rows.push_back(s * l.max_length() + t);
        return rows;
    }
    const int64_t frames = dyn == 0 ? 1 : v.data().dim(0);
    for (int64_t i = 0; i < frames; ++i) rows.push_back(i);
    return rows;
}

FunctionPtr make_block_op(const std::string& op_name, const std::vector<Variable>& operands,
                          const std::function<Variable(const std::vector<Variable>&)>& body,
                          const std::string& name) {
    std::vector<Variable> inner;
    std::vector<std::pair<Variable, Variable>> bind;
    for (const Variable& v : operands) {
        Variable p = placeholder(v.shape(), v.dynamic_axes(), v.name());
        p.impl()->dtype = v.dtype();  // typed, so the body infers at once
        inner.push_back(p);
        bind.emplace_back(p, v);
    }
    return as_block(as_function(body(inner)), bind, op_name, name);
}

}  // namespace ctk::detail
