// ONNX import: one ctk op group per ONNX node, for the ops whose semantics ctk's ops express exactly.
// A graph input whose leading dim is symbolic becomes a ctk input with the batch axis (two leading dims
// named "batch" and "sequence", ctk's export, give the batch and sequence axes), so ONNX axis k of a
// value with D dynamic axes is ctk static axis k - D. Between a Reshape that merges the batch and
// sequence dims into one and the Reshape that splits them again (ctk's export of per-frame ops such as
// Conv on sequences), values are "merged": ctk keeps both axes and only per-frame ops may use them.
// Initializers become parameters (constants when they are integers or feed shape-like operands). Unsupported
// ops throw NotImplementedError naming the op type and the node.
#include <onnx/defs/schema.h>

#include <algorithm>

#include "formats/onnx_import_internal.h"

namespace ctk::detail::onnx_io {
namespace importer {

// Shape: a constant for static dims; dims of dynamic axes make a run-time shape (SymShape) that only
// Slice, Concat and Reshape's target may use.
void Importer::shape_node(NodeCtx& c) {
    CTK_CHECK(c.node.output_size() == 1, IOError, c.where, ": needs one output");
    Variable x = in(c, 0);
    if (merged(x)) unsupported(c, "the shape of a value whose batch and sequence dims are merged");
    const int r = onnx_rank(c, x), dyn = dyn_of(c, x);
    int64_t start = attr_i(c, "start", 0), end = attr_i(c, "end", r);
    if (start < 0) start += r;
    if (end < 0) end += r;
    start = std::clamp<int64_t>(start, 0, r);
    end = std::clamp<int64_t>(end, 0, r);
    SymShape s;
    bool dynamic = false;
    for (int64_t i = start; i < end; ++i) {
        if (i < dyn) {
            s.push_back({static_cast<int>(i), 0});
            dynamic = true;
            continue;
        }
        const int64_t d = x.shape()[static_cast<size_t>(i - dyn)];
        if (d < 0) unsupported(c, "the shape of a free dim");
        s.push_back({-1, d});
    }
    const std::string& out = c.node.output(0);
    if (dynamic) {
        sym_shapes_[out] = s;
        return;
    }
    std::vector<int64_t> dims;
    for (const SymDim& d : s) dims.push_back(d.value);
    Tensor t = Tensor::from_vector(dims, Shape{static_cast<int64_t>(dims.size())});
    set_const(out, t);
    values_[out] = constant(t, out);
}

SymShape Importer::concat_shapes(NodeCtx& c) {
    const int64_t axis = attr_i(c, "axis", 0);
    if (axis != 0 && axis != -1) unsupported(c, "Concat of shapes along an axis other than 0");
    SymShape s;
    for (int i = 0; i < c.node.input_size(); ++i) {
        if (!has_input(c, i)) continue;
        if (const SymShape* p = sym_shape(c, i)) {
            s.insert(s.end(), p->begin(), p->end());
            continue;
        }
        auto t = const_value(c, i);
        CTK_CHECK(t->rank() == 1, ValueError, c.where, ": a shape operand must be one-dimensional");
        for (int64_t v : t->to_vector<int64_t>()) s.push_back({-1, v});
    }
    return s;
}

SymShape Importer::slice_shape(NodeCtx& c) {
    const SymShape* p = sym_shape(c, 0);
    if (!p) unsupported(c, "a run-time shape as starts, ends or steps");
    const Dims starts = const_ints(c, 1), ends = const_ints(c, 2);
    const Dims axes = has_input(c, 3) ? const_ints(c, 3) : Dims{0};
    const Dims steps = has_input(c, 4) ? const_ints(c, 4) : Dims{1};
    if (starts.size() != 1 || ends.size() != 1 || axes.size() != 1 || (axes[0] != 0 && axes[0] != -1) ||
        steps.size() != 1 || steps[0] != 1)
        unsupported(c, "a Slice of a run-time shape other than one range with step 1");
    const auto n = static_cast<int64_t>(p->size());
    int64_t lo = starts[0] < 0 ? starts[0] + n : starts[0], hi = ends[0] < 0 ? ends[0] + n : ends[0];
    lo = std::clamp<int64_t>(lo, 0, n);
    hi = std::clamp<int64_t>(hi, lo, n);
    return SymShape(p->begin() + lo, p->begin() + hi);
}

// A node whose operands are all constants (Constant nodes, Shape results of static values, fixed
// inputs, integer initializers, earlier folds) gets its small results evaluated now, so that shape
// arithmetic (Size, Sub, Concat, ... feeding a Reshape or ConstantOfShape) gives the constants those
// operands must be. Floating initializers are parameters and are never folded into constants.
void Importer::fold_constants(const NodeCtx& c, const std::vector<Variable>& outs) {
    constexpr int64_t kMaxFolded = 1 << 16;
    for (int i = 0; i < c.node.input_size(); ++i) {
        if (!has_input(c, i)) continue;
        const std::string& name = c.node.input(i);
        if (consts_.count(name)) continue;
        auto it = inits_.find(name);
        if (it == inits_.end() || is_floating(dtype_of_onnx(it->second->data_type(), c.where))) return;
    }
    for (int i = 0; i < c.node.output_size() && static_cast<size_t>(i) < outs.size(); ++i) {
        const std::string& name = c.node.output(i);
        const Variable& v = outs[static_cast<size_t>(i)];
        if (name.empty() || consts_.count(name) || v.dynamic_rank() != 0) continue;
        int64_t n = 1;
        for (int64_t d : v.shape()) n = d < 0 ? kMaxFolded + 1 : n * d;
        if (n > kMaxFolded) continue;
        if (v.is_constant()) {
            consts_[name] = v.value();
        } else if (v.is_output()) {
            consts_[name] = v.owner()->eval({}, {v}).at(v).data();
        }
    }
}

void Importer::check_old_op(const NodeCtx& c) const {
    const std::string& op = c.node.op_type();
    const auto* now = onnx::OpSchemaRegistry::Schema(op, static_cast<int>(opset_), "");
    const auto* at7 = onnx::OpSchemaRegistry::Schema(op, 7, "");
    CTK_CHECK(now != nullptr, NotImplementedError, c.where, ": ONNX op ", op, " does not exist at opset ",
              opset_);
    CTK_CHECK(at7 != nullptr && at7->since_version() == now->since_version(), NotImplementedError, c.where,
              ": ONNX op ", op, " at opset ", opset_, " is version ", now->since_version(),
              ", which differs from its opset-7 form (ctk reads opset-7 ops and later)");
}

void Importer::import_nodes(const onnx::GraphProto& g, const std::string& where) {
    static const std::map<std::string, Handler> handlers = make_handlers();
    int index = 0;
    for (const auto& n : g.node()) {
        NodeCtx c{*this, n, "", n.name().empty() ? (n.output_size() ? n.output(0) : "") : n.name()};
        c.where = where + ": node " + std::to_string(index++) + " '" + c.name + "' (" + n.op_type() + ")";
        CTK_CHECK(n.domain().empty() || n.domain() == "ai.onnx", NotImplementedError, c.where, ": domain '",
                  n.domain(), "' is not supported");
        if (opset_ < 7) check_old_op(c);
        if (n.op_type() == "Constant") {
            CTK_CHECK(n.output_size() == 1, IOError, c.where, ": needs one output");
            const auto* a = n.attribute_size() == 1 ? &n.attribute(0) : nullptr;
            CTK_CHECK(a != nullptr, IOError, c.where, ": needs one attribute");
            Tensor t;
            if (a->name() == "value") {
                t = tensor_from_proto(a->t(), c.where);
            } else if (a->name() == "value_float") {
                t = Tensor::full(Shape{}, a->f(), DataType::f32);
            } else if (a->name() == "value_int") {
                t = Tensor::full(Shape{}, static_cast<double>(a->i()), DataType::i64);
                t.data<int64_t>()[0] = a->i();
            } else if (a->name() == "value_floats") {
                t = Tensor::from_vector(std::vector<float>(a->floats().begin(), a->floats().end()),
                                        Shape{a->floats_size()});
            } else if (a->name() == "value_ints") {
                t = Tensor::from_vector(std::vector<int64_t>(a->ints().begin(), a->ints().end()),
                                        Shape{a->ints_size()});
            } else {
                unsupported(c, "Constant with attribute '" + a->name() + "'");
            }
            set_const(n.output(0), t);
            values_[n.output(0)] = constant(t, n.output(0));
            continue;
        }
        if (n.op_type() == "Shape") {
            shape_node(c);
            continue;
        }
        if (n.op_type() == "Expand" && sym_shape(c, 1)) {
            expand_to_batch(c);
            continue;
        }
        if ((n.op_type() == "Concat" || n.op_type() == "Slice") && n.input_size() > 0) {
            bool sym = false;
            for (int i = 0; i < n.input_size(); ++i) sym = sym || sym_shape(c, i) != nullptr;
            if (sym) {
                CTK_CHECK(n.output_size() == 1, IOError, c.where, ": needs one output");
                sym_shapes_[n.output(0)] = n.op_type() == "Concat" ? concat_shapes(c) : slice_shape(c);
                continue;
            }
        }
        // A merged value ([batch * sequence, sample...]) may only meet ops that treat every frame alike.
        bool any_merged = false;
        for (int i = 0; i < n.input_size(); ++i) {
            if (!has_input(c, i) || sym_shape(c, i) || consts_.count(n.input(i)) ||
                batch_broadcast_.count(n.input(i)))
                continue;
            any_merged = any_merged || merged(value(n.input(i), c.where));
        }
        if (any_merged) {
            static const std::set<std::string> per_frame = {"Conv",
                                                            "ConvTranspose",
                                                            "MaxPool",
                                                            "AveragePool",
                                                            "GlobalMaxPool",
                                                            "GlobalAveragePool",
                                                            "BatchNormalization",
                                                            "Reshape",
                                                            "Identity",
                                                            "Dropout",
                                                            "Relu",
                                                            "Sigmoid",
                                                            "Tanh",
                                                            "Exp",
                                                            "Log",
                                                            "Sqrt",
                                                            "Abs",
                                                            "Neg",
                                                            "Floor",
                                                            "Ceil",
                                                            "Reciprocal",
                                                            "Elu",
                                                            "LeakyRelu",
                                                            "Selu",
                                                            "HardSigmoid",
                                                            "Softplus",
                                                            "Softsign",
                                                            "Clip",
                                                            "Add",
                                                            "Sub",
                                                            "Mul",
                                                            "Div",
                                                            "Max",
                                                            "Min",
                                                            "Sum",
                                                            "Mean",
                                                            "Pow",
                                                            "PRelu"};
            CTK_CHECK(per_frame.count(n.op_type()), NotImplementedError, c.where,
                      ": an operand whose batch and sequence dims are merged into one (ctk reads it only in "
                      "ops that treat every frame alike)");
            for (int i = 0; i < n.input_size(); ++i) {
                if (!has_input(c, i) || sym_shape(c, i) || consts_.count(n.input(i)) ||
                    batch_broadcast_.count(n.input(i)))
                    continue;
                Variable v = value(n.input(i), c.where);
                CTK_CHECK(dyn_of(c, v) == 0 || merged(v), NotImplementedError, c.where,
                          ": operands with merged and separate batch and sequence dims");
            }
        }
        std::vector<Variable> outs;
        if (n.op_type() == "Scan") {
            outs = scan_node(c);
        } else {
            auto h = handlers.find(n.op_type());
            CTK_CHECK(h != handlers.end(), NotImplementedError, c.where, ": ONNX op ", n.op_type(),
                      " is not supported by ctk");
            outs = h->second(c);
        }
        for (int i = 0; i < n.output_size(); ++i) {
            if (n.output(i).empty()) continue;
            CTK_CHECK(static_cast<size_t>(i) < outs.size(), NotImplementedError, c.where, ": output ", i,
                      " is not supported");
            values_[n.output(i)] = outs[static_cast<size_t>(i)];
            if (any_merged && n.op_type() != "Reshape") merged_.insert(outs[static_cast<size_t>(i)].impl());
        }
        fold_constants(c, outs);
    }
}

// A graph input given a value at load time: a constant of the input's declared element type, its shape
// checked against the declared dims.
void Importer::fix_input(const onnx::ValueInfoProto& vi, const Tensor& value, const std::string& where) {
    const std::string at = where + ": fixed input '" + vi.name() + "'";
    Tensor t = value;
    if (vi.type().has_tensor_type()) {
        const auto& tt = vi.type().tensor_type();
        const DataType d = dtype_of_onnx(tt.elem_type(), at);
        if (t.dtype() != d) t = t.to(d);
        if (tt.has_shape()) {
            bool fits = tt.shape().dim_size() == t.rank();
            for (int i = 0; fits && i < tt.shape().dim_size(); ++i)
                fits = !tt.shape().dim(i).has_dim_value() || tt.shape().dim(i).dim_value() == t.shape()[i];
            CTK_CHECK(fits, ValueError, at, " has shape ", t.shape().to_string(),
                      ", which the input's declared dims do not allow");
        }
    }
    set_const(vi.name(), t);
    values_[vi.name()] = constant(t, vi.name());
}

FunctionPtr Importer::run() {
    const std::string& where = source_;
    CTK_CHECK(model_.has_graph(), IOError, where, ": the file holds no graph");
    int64_t opset = -1;
    for (const auto& o : model_.opset_import()) {
        if (o.domain().empty() || o.domain() == "ai.onnx") {
            opset = o.version();
        } else {
            CTK_THROW(NotImplementedError, where, ": operator set domain '", o.domain(),
                      "' is not supported (ctk reads ai.onnx only)");
        }
    }
    CTK_CHECK(opset >= 0, IOError, where, ": the model imports no ai.onnx operator set");
    CTK_CHECK(opset >= kMinImportOpset && opset <= kMaxImportOpset, NotImplementedError, where,
              ": ai.onnx opset ", opset, " is not supported (ctk reads opsets ", kMinImportOpset, " to ",
              kMaxImportOpset, ")");
    opset_ = opset;
    const onnx::GraphProto& g = model_.graph();
    for (const auto& t : g.initializer()) inits_[t.name()] = &t;
    for (const auto& t : g.sparse_initializer()) {
        (void)t;
        CTK_THROW(NotImplementedError, where, ": sparse initializers are not supported");
    }
    for (const auto& [name, value] : fixed_inputs_) {
        bool found = false;
        for (const auto& vi : g.input()) found = found || (vi.name() == name && !inits_.count(name));
        CTK_CHECK(found, ValueError, where, ": '", name, "' is given a fixed value but is no graph input");
    }
    for (const auto& vi : g.input()) {
        if (inits_.count(vi.name())) continue;
        if (auto f = fixed_inputs_.find(vi.name()); f != fixed_inputs_.end()) {
            fix_input(vi, f->second, where);
            continue;
        }
        CTK_CHECK(vi.type().has_tensor_type(), NotImplementedError, where, ": input '", vi.name(),
                  "' is not a tensor");
        const auto& tt = vi.type().tensor_type();
        // ctk inputs are floating: integer inputs are fed as f64 (exact below 2^53).
        DataType d = dtype_of_onnx(tt.elem_type(), where + ": input '" + vi.name() + "'");
        const bool integer = !is_floating(d);
        if (integer) d = DataType::f64;
        CTK_CHECK(tt.has_shape(), NotImplementedError, where, ": input '", vi.name(), "' has no shape");
        Dims dims;
        bool batch = false;
        // ctk's export names the dims of the batch and sequence axes "batch" and "sequence".
        const auto& sh = tt.shape();
        const bool sequence = sh.dim_size() >= 2 && sh.dim(0).dim_param() == "batch" &&
                              sh.dim(1).dim_param() == "sequence" && !sh.dim(0).has_dim_value() &&
                              !sh.dim(1).has_dim_value();
        for (int i = sequence ? 2 : 0; i < tt.shape().dim_size(); ++i) {
            const auto& dim = tt.shape().dim(i);
            const bool known = dim.has_dim_value();
            if (i == 0 && !known) {
                batch = true;
                continue;
            }
            CTK_CHECK(!known || dim.dim_value() >= 0, IOError, where, ": input '", vi.name(), "' has dim ",
                      dim.dim_value());
            dims.push_back(known ? dim.dim_value() : kFreeDim);
        }
        values_[vi.name()] = input_variable(dims, d, false, false,
                                            sequence ? default_sequence_axes()
                                            : batch  ? default_batch_axes()
                                                     : std::vector<Axis>{},
                                            vi.name());
        if (integer) integer_inputs_.insert(values_[vi.name()].impl());
    }
    import_nodes(g, where);
    std::vector<Variable> outputs;
    for (const auto& vi : g.output()) {
        Variable v = value(vi.name(), where + ": graph output");
        CTK_CHECK(!merged(v), NotImplementedError, where, ": graph output '", vi.name(),
                  "' has its batch and sequence dims merged into one");
        if (!v.is_output()) v = alias(v, vi.name());
        outputs.push_back(v);
    }
    CTK_CHECK(!outputs.empty(), IOError, where, ": the graph has no outputs");
    return combine(outputs, g.name());
}

}  // namespace importer

FunctionPtr import_model(const onnx::ModelProto& model, const std::string& source,
                         const std::map<std::string, Tensor>& fixed_inputs) {
    return importer::Importer(model, source, fixed_inputs).run();
}

}  // namespace ctk::detail::onnx_io
