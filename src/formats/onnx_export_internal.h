// Internal to ONNX export (src/formats/onnx_export*.cpp): the Exporter that walks a ctk graph and writes
// ONNX nodes; onnx_export.cpp holds the op table, onnx_export_loop.cpp recurrent loops as Scan.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "ctk/core/error.h"
#include "ctk/graph/graph_ops.h"
#include "ctk/kernels/tensor_ops.h"
#include "formats/onnx_common.h"

namespace ctk::detail::onnx_io::exporter {

using TP = onnx::TensorProto;

class Exporter {
public:
    Exporter(onnx::GraphProto& g, int64_t opset) : opset_(opset), top_g_(&g), g_(&g), names_(&top_names_) {
        scopes_.emplace_back();
    }

    // A value seen from a block scope: (variable, scope), scope -1 for inputs, parameters and constants.
    using Key = std::pair<const void*, int>;

    // The ONNX name of variable v seen from block scope `scope` (0: the top level). While a loop body is
    // under export (loop_ set), values outside the loop come from the enclosing graph: sequences as scan
    // inputs, the rest (parameters, per-sample values) by their outer name.
    std::string value(const Variable& v, int scope) {
        if (v.is_placeholder()) {
            auto& map = scopes_[static_cast<size_t>(scope)];
            auto it = map.find(v.impl());
            CTK_CHECK(it != map.end(), NotImplementedError, "save_onnx_model: unbound placeholder ",
                      v.to_string(), " cannot be exported");
            return value(it->second.first, it->second.second);
        }
        const int key_scope = v.is_output() ? scope : -1;
        const Key key{v.impl(), key_scope};
        if (auto it = names_->find(key); it != names_->end()) return it->second;
        std::string name;
        const FunctionPtr f = v.is_output() ? v.owner() : nullptr;
        const bool leaf = f == nullptr || !f->is_block();
        if (loop_ && leaf && !loop_->members.count(key)) {
            name = from_outside(v, scope);
        } else if (v.is_input()) {
            name = unique(v.name().empty() ? v.uid() : v.name());
            add_value_info(*g_->add_input(), name, v, false);
        } else if (v.is_parameter() || v.is_constant()) {
            name = unique(v.name().empty() ? v.uid() : v.name());
            tensor_to_proto(v.value(), name, *g_->add_initializer());
        } else {
            CTK_CHECK(f != nullptr, NotImplementedError, "save_onnx_model: ", v.to_string(), " has no owner");
            if (f->is_block()) {
                const int inner = block_scope(f, scope);
                name = value(f->block_root()->outputs().at(static_cast<size_t>(v.output_index())), inner);
            } else if (auto it = loop_of_.find(key); !loop_ && it != loop_of_.end()) {
                name = loop_output(*loops_[it->second], key, v);
            } else if (std::string s = loop_ ? "" : final_state(*f, scope); !s.empty()) {
                name = s;
            } else {
                export_primitive(*f, scope);
                auto it2 = names_->find(key);
                CTK_CHECK(it2 != names_->end(), NotImplementedError, "save_onnx_model: ", f->to_string(),
                          " produced no ONNX value for ", v.to_string());
                return it2->second;
            }
        }
        (*names_)[key] = name;
        return name;
    }

    // ONNX type of v; `frame`: as one frame of a sequence, inside a loop body ([batch, sample...]).
    void add_value_info(onnx::ValueInfoProto& info, const std::string& name, const Variable& v, bool frame) {
        info.set_name(name);
        auto* tt = info.mutable_type()->mutable_tensor_type();
        tt->set_elem_type(onnx_of_dtype(v.dtype()));
        auto* shape = tt->mutable_shape();
        for (const Axis& a : v.dynamic_axes())
            if (!frame || a.is_batch()) shape->add_dim()->set_dim_param(a.is_batch() ? "batch" : "sequence");
        int free = 0;
        for (int64_t d : v.shape()) {
            if (d >= 0)
                shape->add_dim()->set_dim_value(d);
            else
                shape->add_dim()->set_dim_param("free" + std::to_string(free++));
        }
    }

    // Finds the recurrent loops upstream of `outputs` (onnx_export_loop.cpp): every strongly connected
    // part of the graph that holds a past_value or future_value, exported later as one Scan.
    void find_loops(const std::vector<Variable>& outputs);
    // Drops the scan_output_* attributes of Scans without scan outputs (onnx's checker refuses an
    // empty list); called once every output is exported.
    void finish_loops();

private:
    int64_t opset_;  // the ai.onnx opset written
    onnx::GraphProto* top_g_;
    onnx::GraphProto* g_;  // the graph nodes go to: the model's, or a loop body's
    std::map<Key, std::string> top_names_;
    std::map<Key, std::string>* names_;  // top_names_, or the names of the loop body under export
    std::vector<std::unordered_map<const void*, std::pair<Variable, int>>> scopes_;
    std::map<std::pair<const Function*, int>, int> block_scopes_;
    std::map<std::string, int> used_;
    int counter_ = 0;

    // A recurrent loop (onnx_export_loop.cpp): its values, the Scan node and body once exported.
    struct Loop {
        std::set<Key> members;                         // the values computed per frame in the body
        std::vector<std::pair<Variable, int>> delays;  // the past_value / future_value outputs (states)
        std::vector<Key> next;                         // their inputs: the states' values after a step
        std::map<Key, std::string> names;              // body names
        std::vector<std::string> scan_inputs;          // outer names of the scanned sequences
        std::map<std::string, std::string> scan_input_names;  // outer name -> body name
        onnx::NodeProto* scan = nullptr;
        onnx::GraphProto* body = nullptr;
        onnx::GraphProto body_draft;  // the body while it is built, moved into the Scan node after
        bool backward = false;
        bool exporting = false;
    };
    std::vector<std::unique_ptr<Loop>> loops_;
    std::map<Key, size_t> loop_of_;  // member value -> its loop
    Loop* loop_ = nullptr;           // the loop whose body is under export

    // Frames of a sequence inside a loop body have only the batch dim: the number of leading ONNX dims
    // that v's dynamic axes take where it is used.
    int dyn_rank(const Variable& v) const {
        return v.dynamic_rank() - (loop_ != nullptr && v.has_sequence_axis() ? 1 : 0);
    }
    // (variable, scope) after placeholders and block outputs are followed to what they stand for.
    std::pair<Variable, int> resolve(Variable v, int scope);
    std::string from_outside(const Variable& v, int scope);
    std::string loop_output(Loop& loop, const Key& key, const Variable& v);
    void export_loop(Loop& loop);
    // sequence::last (first) of a forward (backward) loop's state: the Scan's final state output; ""
    // for anything else.
    std::string final_state(const Function& f, int scope);

    std::string unique(const std::string& base) {
        std::string b = base.empty() ? "v" : base;
        int& n = used_[b];
        std::string name = n == 0 ? b : b + "_" + std::to_string(n);
        ++n;
        while (n > 1 && used_.count(name)) name = b + "_" + std::to_string(n++);
        used_[name] += 0;
        return name;
    }
    std::string fresh(const std::string& base) { return unique(base + "_" + std::to_string(counter_++)); }

    int block_scope(const FunctionPtr& f, int scope) {
        auto key = std::make_pair(f.get(), scope);
        if (auto it = block_scopes_.find(key); it != block_scopes_.end()) return it->second;
        std::unordered_map<const void*, std::pair<Variable, int>> map;
        for (const auto& [inside, outside] : f->block_arguments_mapping())
            map[inside.impl()] = {outside, scope};
        scopes_.push_back(std::move(map));
        const int id = static_cast<int>(scopes_.size()) - 1;
        block_scopes_[key] = id;
        return id;
    }

    onnx::NodeProto* node(const std::string& op, const std::vector<std::string>& ins,
                          const std::vector<std::string>& outs) {
        onnx::NodeProto* n = g_->add_node();
        n->set_op_type(op);
        n->set_name(outs.empty() ? op : outs[0]);
        for (const auto& i : ins) n->add_input(i);
        for (const auto& o : outs) n->add_output(o);
        return n;
    }
    // A one-output node with a fresh output name; returns the name.
    // Dims [start, end) of x's shape: Shape's start and end attributes came with opset 15; a Slice of
    // the whole shape before that.
    std::string shape_range(const std::string& x, int64_t start, int64_t end, const std::string& base) {
        onnx::NodeProto* n = nullptr;
        std::string s = emit("Shape", {x}, base, &n);
        if (opset_ >= 15) {
            attr_i(n, "start", start);
            attr_i(n, "end", end);
            return s;
        }
        return emit("Slice", {s, const_i64({start}), const_i64({end})}, base);
    }
    std::string emit(const std::string& op, const std::vector<std::string>& ins, const std::string& base,
                     onnx::NodeProto** out = nullptr) {
        std::string o = fresh(base);
        onnx::NodeProto* n = node(op, ins, {o});
        if (out) *out = n;
        return o;
    }
    static void attr_i(onnx::NodeProto* n, const char* key, int64_t v) {
        auto* a = n->add_attribute();
        a->set_name(key);
        a->set_type(onnx::AttributeProto::INT);
        a->set_i(v);
    }
    static void attr_f(onnx::NodeProto* n, const char* key, double v) {
        auto* a = n->add_attribute();
        a->set_name(key);
        a->set_type(onnx::AttributeProto::FLOAT);
        a->set_f(static_cast<float>(v));
    }
    static void attr_ints(onnx::NodeProto* n, const char* key, const Dims& v) {
        auto* a = n->add_attribute();
        a->set_name(key);
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t x : v) a->add_ints(x);
    }
    std::string const_i64(const Dims& v) {
        std::string name = fresh("const");
        Tensor t = Tensor::empty(Shape{static_cast<int64_t>(v.size())}, DataType::i64);
        std::copy(v.begin(), v.end(), t.data<int64_t>());
        tensor_to_proto(t, name, *g_->add_initializer());
        return name;
    }
    std::string const_scalar(double v, DataType dtype) {
        std::string name = fresh("const");
        tensor_to_proto(Tensor::full(Shape{}, v, dtype), name, *g_->add_initializer());
        return name;
    }
    std::string cast(const std::string& x, DataType to, const std::string& base) {
        onnx::NodeProto* n;
        std::string o = emit("Cast", {x}, base, &n);
        attr_i(n, "to", onnx_of_dtype(to));
        return o;
    }
    std::string to_bool(const std::string& x, const std::string& base) {
        onnx::NodeProto* n;
        std::string o = emit("Cast", {x}, base, &n);
        attr_i(n, "to", TP::BOOL);
        return o;
    }
    // [0 x dyn] + dims: a Reshape target that keeps the dynamic dims.
    std::string reshape(const std::string& x, int dyn, const Dims& dims, const std::string& base) {
        Dims t(static_cast<size_t>(dyn), 0);
        int free = 0;
        for (int64_t d : dims) {
            CTK_CHECK(d >= 0 || free++ == 0, NotImplementedError, "save_onnx_model: ", base,
                      ": a reshape to a shape with several free dims ", dims_to_string(dims));
            t.push_back(d >= 0 ? d : -1);
        }
        return emit("Reshape", {x, const_i64(t)}, base);
    }
    // [batch, sequence, sample...] -> [batch * sequence, sample...] for an op that treats every frame
    // alike (ONNX's Conv, pooling and BatchNormalization take one leading N dim). Reshape's -1 keeps the
    // two symbolic dims symbolic.
    std::string merge_frames(const std::string& x, const Dims& sample, const std::string& base) {
        Dims t{-1};
        t.insert(t.end(), sample.begin(), sample.end());
        return emit("Reshape", {x, const_i64(t)}, base);
    }
    // The inverse: [batch * sequence, sample...] -> [batch, sequence, sample...], the two leading dims
    // read at run time from `like`, the value the frames came from.
    std::string split_frames(const std::string& y, const std::string& like, const Dims& sample,
                             const std::string& base) {
        onnx::NodeProto* n;
        std::string lead = shape_range(like, 0, 2, base);
        std::string target = emit("Concat", {lead, const_i64(sample)}, base, &n);
        attr_i(n, "axis", 0);
        return emit("Reshape", {y, target}, base);
    }
    // ctk static axis `axis` of a rank-`rank` operand as an ONNX axis after `dyn` dynamic dims.
    static int64_t onnx_axis(const Function& f, const Axis& axis, int rank, int dyn) {
        if (!axis.is_static()) unsupported(f, "an axis that is not static");
        const int a = axis.static_index() < 0 ? axis.static_index() + rank : axis.static_index();
        CTK_CHECK(a >= 0 && a < rank, ValueError, "save_onnx_model: axis ", axis.to_string(),
                  " out of range for rank ", rank);
        return dyn + a;
    }

    // Operand i of an element-wise op, unsqueezed so that NumPy broadcasting in ONNX matches ctk's
    // (ctk aligns static axes after the dynamic ones).
    std::string aligned(const Variable& v, const std::string& name, int out_static, const std::string& base) {
        if (dyn_rank(v) == 0 || v.rank() >= out_static) return name;
        Dims axes;
        for (int i = 0; i < out_static - v.rank(); ++i) axes.push_back(dyn_rank(v) + i);
        return emit("Unsqueeze", {name, const_i64(axes)}, base);
    }

    [[noreturn]] static void unsupported(const Function& f, const std::string& why) {
        CTK_THROW(NotImplementedError, "save_onnx_model: op ", primitive_op_name(f.op()), " (Function '",
                  f.name().empty() ? f.uid() : f.name(), "') has no ONNX form", why.empty() ? "" : ": ", why);
    }

    void export_primitive(const Function& f, int scope);
    void export_loss(const Function& f, const std::vector<std::string>& in, const std::string& base,
                     std::string& out);
    void export_conv_like(const Function& f, const std::vector<std::string>& in, const std::string& base,
                          std::string& out);
};

}  // namespace ctk::detail::onnx_io::exporter
