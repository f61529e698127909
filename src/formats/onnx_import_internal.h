// Internal to ONNX import (src/formats/onnx_import*.cpp): the Importer that walks a graph, the per-node
// context handed to each op handler, and helpers the handler files share. Not a public header.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctk/core/error.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/kernels/tensor_ops.h"
#include "formats/onnx_common.h"

namespace ctk::detail::onnx_io::importer {

using TP = onnx::TensorProto;

// One entry of a shape computed at run time by Shape: a dynamic axis's size or a static dim.
struct SymDim {
    int axis = -1;  // >= 0: the size of dynamic axis `axis`
    int64_t value = 0;
};
using SymShape = std::vector<SymDim>;

class Importer;
struct NodeCtx {
    Importer& im;
    const onnx::NodeProto& node;
    std::string where;
    std::string name;  // for the ctk Functions made
};
using Handler = std::function<std::vector<Variable>(NodeCtx&)>;

class Importer {
public:
    Importer(const onnx::ModelProto& m, const std::string& source, const std::map<std::string, Tensor>& fixed)
        : model_(m), source_(source), fixed_inputs_(fixed) {}
    FunctionPtr run();
    // Imports g's nodes in order into values_ (the graph's inputs and initializers already bound).
    void import_nodes(const onnx::GraphProto& g, const std::string& where);
    void shape_node(NodeCtx& c);
    // onnx_import_scan.cpp: Scan as a ctk recurrent loop, and Expand to a run-time [batch, ...] shape
    // (the initial states of ctk's export of a loop).
    std::vector<Variable> scan_node(NodeCtx& c);
    void expand_to_batch(NodeCtx& c);
    SymShape concat_shapes(NodeCtx& c);
    SymShape slice_shape(NodeCtx& c);

    // ---- operands ----
    bool has_input(const NodeCtx& c, int i) const {
        return i < c.node.input_size() && !c.node.input(i).empty();
    }
    Variable in(const NodeCtx& c, int i) {
        CTK_CHECK(has_input(c, i), IOError, c.where, ": input ", i, " is missing");
        return value(c.node.input(i), c.where);
    }
    Variable value(const std::string& name, const std::string& where) {
        if (auto it = values_.find(name); it != values_.end()) return it->second;
        if (auto it = inits_.find(name); it != inits_.end()) {
            Tensor t = tensor_from_proto(*it->second, where);
            Variable v =
                is_floating(t.dtype()) && t.numel() > 1 ? parameter_from(t, name) : constant(t, name);
            values_[name] = v;
            return v;
        }
        CTK_CHECK(!sym_shapes_.count(name), NotImplementedError, where, ": the run-time shape '", name,
                  "' of a batched value is used as data (ctk reads it only as a Reshape target)");
        CTK_CHECK(!batch_broadcast_.count(name), NotImplementedError, where, ": '", name,
                  "', a value expanded to a run-time batch dim, is read only as a Scan's initial state");
        if (parent_) return parent_->value(name, where);  // a Scan body reads the enclosing graph
        CTK_THROW(IOError, where, ": value '", name, "' is not defined before its use");
    }
    // A Shape result that holds dynamic dims, when operand i is one.
    const SymShape* sym_shape(const NodeCtx& c, int i) const {
        if (!has_input(c, i)) return nullptr;
        auto it = sym_shapes_.find(c.node.input(i));
        return it == sym_shapes_.end() ? nullptr : &it->second;
    }
    bool merged(const Variable& v) const { return merged_.count(v.impl()) != 0; }
    // A constant operand read as data (shape-like inputs: Reshape's shape, Slice's starts, ...).
    std::optional<Tensor> const_named(const std::string& name, const std::string& where) {
        if (auto it = consts_.find(name); it != consts_.end()) return it->second;
        if (auto it = inits_.find(name); it != inits_.end()) {
            Tensor t = tensor_from_proto(*it->second, where);
            consts_[name] = t;
            return t;
        }
        if (values_.count(name) || !parent_) return std::nullopt;
        return parent_->const_named(name, where);
    }
    std::optional<Tensor> const_value(const NodeCtx& c, int i) {
        if (!has_input(c, i)) return std::nullopt;
        const std::string& name = c.node.input(i);
        if (auto t = const_named(name, c.where)) return t;
        CTK_THROW(NotImplementedError, c.where, ": input ", i, " ('", name,
                  "') must be a constant (an initializer or a Constant node) for ctk");
    }
    Dims const_ints(const NodeCtx& c, int i) {
        auto t = const_value(c, i);
        CTK_CHECK(t.has_value(), IOError, c.where, ": input ", i, " is missing");
        return t->to_vector<int64_t>();
    }
    void set_const(const std::string& name, const Tensor& t) { consts_[name] = t; }

    // Below opset 7: refuses a node whose op is defined differently at the model's opset than at 7.
    void check_old_op(const NodeCtx& c) const;
    void fold_constants(const NodeCtx& c, const std::vector<Variable>& outs);
    void fix_input(const onnx::ValueInfoProto& vi, const Tensor& value, const std::string& where);

    const onnx::ModelProto& model_;
    std::string source_;
    const std::map<std::string, Tensor>& fixed_inputs_;  // graph inputs read as constants
    std::unordered_map<std::string, Variable> values_;
    std::unordered_map<std::string, Tensor> consts_;
    std::unordered_map<std::string, const onnx::TensorProto*> inits_;
    std::set<const void*> integer_inputs_;  // graph inputs of integer ONNX types, fed as f64
    // The ONNX element type of values computed by casts and quantization (ctk holds integers in f64).
    std::unordered_map<std::string, int64_t> onnx_types_;
    std::unordered_map<std::string, SymShape> sym_shapes_;
    std::set<const void*> merged_;  // values whose ONNX form is [batch * sequence, sample...]
    // Static values Expand-ed to [batch, sample...] by a run-time shape: only a Scan's initial state.
    // Kept unexpanded (past_value broadcasts a static initial state itself), with the sample the Expand
    // asked for, which the Scan checks against its state before anything of that size exists.
    std::unordered_map<std::string, Variable> batch_broadcast_;
    std::unordered_map<std::string, Dims> broadcast_samples_;
    Importer* parent_ = nullptr;  // the graph enclosing a Scan body
    int64_t opset_ = 0;           // the model's ai.onnx opset: some ops read attributes before a version
    bool frame_ = false;          // a Scan body: a sequence value stands for one frame, [batch, sample...]
};

// ---- helpers shared by the handler files (onnx_import_ops.cpp, onnx_import_nn.cpp) ----
const onnx::AttributeProto* find_attr(const NodeCtx& c, const char* key);
int64_t attr_i(const NodeCtx& c, const char* key, int64_t fallback);
double attr_f(const NodeCtx& c, const char* key, double fallback);
std::string attr_s(const NodeCtx& c, const char* key, const std::string& fallback);
std::optional<Dims> attr_ints(const NodeCtx& c, const char* key);
[[noreturn]] void unsupported(const NodeCtx& c, const std::string& why);
// An operand that ONNX moved from an attribute to input i at opset `since` (ReduceSum's and Squeeze's
// axes, Slice's starts, Pad's pads, TopK's k, ...): the attribute `key` in older models. nullopt: absent.
std::optional<Dims> ints_input_or_attr(NodeCtx& c, int i, const char* key, int64_t since);
// The number of ONNX dims that a value's dynamic axes take, and its ONNX rank. Inside a Scan body a
// frame of a sequence ([#, *] in ctk) is [batch, sample...] in ONNX: the sequence axis takes no dim.
int dyn_of(const NodeCtx& c, const Variable& v);
int onnx_rank(const NodeCtx& c, const Variable& v);
// ONNX axis (negative from the end) -> ctk static axis; the batch axis is refused.
int static_axis(const NodeCtx& c, const Variable& v, int64_t axis, int extra_rank = 0);
// Values the importer builds from the file's shapes and attributes rather than from its bytes (an
// Expand's zeros, ConstantOfShape, Range, windows, interpolation and index tables) hold at most
// kMaxBuiltElements values, so that a small file cannot make ctk allocate gigabytes: check_built_size
// throws ValueError naming the node before anything is allocated.
inline constexpr int64_t kMaxBuiltElements = int64_t(1) << 26;
void check_built_size(const NodeCtx& c, int64_t elements, const std::string& what);
// Zeros of `dims` that an Expand broadcasts against (checked as above).
Variable expand_zeros(const NodeCtx& c, const Dims& dims, DataType dtype);
// The number of elements of dims (ShapeError naming `where` when the product overflows), and their
// row-major strides.
inline int64_t element_count(const Dims& dims, const std::string& where) {
    int64_t n = 1;
    for (int64_t d : dims) n = checked_mul(n, d, where);
    return n;
}
inline Dims row_major_strides(const Dims& dims) {
    Dims s(dims.size(), 1);
    for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
    return s;
}
// Integer operands of arithmetic go through f64 (exact below 2^53) and come back.
Variable as_float(const Variable& v);
// ctk casts only to floating dtypes, so integer results stay in f64 (their values are exact).
Variable back_to(const Variable& y, DataType dtype);

// Cast to ONNX element type `to` (Cast, CastLike): integer types truncate toward zero and stay floating.
Variable cast_to_onnx_type(const NodeCtx& c, const Variable& x, int64_t to);
// x padded by repeating its edge values (ONNX's Pad mode "edge"); pads per static axis.
Variable edge_pad(const Variable& x, const std::vector<std::pair<int64_t, int64_t>>& pads);
// x reversed along static axis `axis` (a gather of the indices n-1 .. 0).
Variable reverse_axis(const Variable& x, int axis);

// Handlers of onnx_import_nn.cpp: Conv, ConvTranspose, MaxPool/AveragePool (max or average, the
// Global forms included), BatchNormalization.
std::vector<Variable> conv_node(NodeCtx& c);
std::vector<Variable> conv_transpose_node(NodeCtx& c);
std::vector<Variable> pool_node(NodeCtx& c, bool is_max);
std::vector<Variable> batch_norm_node(NodeCtx& c);
std::vector<Variable> global_pool_node(NodeCtx& c, bool is_max);

// Handlers of onnx_import_losses.cpp: NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss,
// LayerNormalization, Mod, Trilu.
std::vector<Variable> nll_loss_node(NodeCtx& c);
std::vector<Variable> softmax_cross_entropy_loss_node(NodeCtx& c);
std::vector<Variable> layer_norm_node(NodeCtx& c);
std::vector<Variable> mod_node(NodeCtx& c);
std::vector<Variable> trilu_node(NodeCtx& c);

// Handlers of onnx_import_tensor.cpp (Pad, TopK, OneHot, Expand, Dropout, GatherElements, GatherND, the
// scatters, Compress, Tile, Split, CumSum, DepthToSpace/SpaceToDepth, Size, ConstantOfShape, Range, EyeLike,
// the signal windows) and of onnx_import_math.cpp (Erf, Round, Acosh, Celu, Shrink, BitShift, CastLike,
// normalizations, quantization, ...) and onnx_import_resize.cpp (Resize, Upsample), added to the table.
void add_tensor_handlers(std::map<std::string, Handler>& h);
void add_math_handlers(std::map<std::string, Handler>& h);
void add_einsum_handler(std::map<std::string, Handler>& h);  // onnx_import_einsum.cpp
void add_resize_handlers(std::map<std::string, Handler>& h);

// Every op handler by ONNX op type (onnx_import_ops.cpp); Constant, Shape and the run-time-shape forms
// of Concat and Slice are handled by the Importer itself.
std::map<std::string, Handler> make_handlers();

}  // namespace ctk::detail::onnx_io::importer
