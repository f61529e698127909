// CNTK v2 model files: a ctk graph to CNTK's serialized CompositeFunction Dictionary and back.
//
// The file is CNTK's: a Dictionary {version, type "CompositeFunction", uid, root, inputs (every leaf
// Variable, block placeholders included), primitive_functions (each PrimitiveFunction before its users,
// a block's inner functions before the block), state}. The Saver walks the graph and writes each
// Function by its row (cntk_v2_rows*.cpp): as one CNTK primitive, or as the composite CNTK's own API built
// for ops CNTK had no primitive for; the Loader rebuilds the graph in file order with load_op and closes
// recurrent loops.
#include <unordered_map>
#include <unordered_set>

#include "ctk/formats/model.h"
#include "ctk/graph/graph_ops.h"
#include "formats/cntk_v2_internal.h"

namespace ctk {

namespace formats {
namespace {

using namespace v2;

class Saver {
public:
    proto::Dictionary save(const FunctionPtr& model) {
        proto::Dictionary top;
        top.set_version(1);
        const std::string root = root_uid(*model, model->outputs());
        put(top, "version", dv_size_t(kCompositeFunctionVersion));
        put(top, "type", dv_string("CompositeFunction"));
        put(top, "uid", dv_string("CompositeFunction_" + model->uid()));
        if (!model->name().empty()) put(top, "name", dv_string(model->name()));
        put(top, "root", dv_string(root));
        put(top, "inputs", dv_vector(std::move(leaves_)));
        put(top, "primitive_functions", dv_vector(std::move(functions_)));
        proto::Dictionary state;
        state.set_version(1);
        put(top, "state", dv_dictionary(std::move(state)));
        return top;
    }

private:
    static std::string variable_uid(const Variable& v) {
        if (v.is_output()) return v.owner()->uid() + "_Output_" + std::to_string(v.output_index());
        return v.uid();
    }

    // The uid of a primitive whose outputs are `outputs`: their owner when it is one Function with exactly
    // these outputs, otherwise a Combine written for them.
    std::string root_uid(const Function& f, const std::vector<Variable>& outputs) {
        if (!f.is_composite()) {
            emit(f);
            return f.uid();
        }
        if (!outputs.empty() && outputs[0].is_output()) {
            FunctionPtr owner = outputs[0].owner();
            const auto owned = owner->outputs();
            bool same = owned.size() == outputs.size();
            for (size_t i = 0; same && i < outputs.size(); ++i) same = owned[i] == outputs[i];
            if (same) {
                emit(*owner);
                return owner->uid();
            }
        }
        std::vector<proto::DictionaryValue> inputs;
        for (const Variable& v : outputs) {
            visit_variable(v);
            inputs.push_back(dv_string(variable_uid(v)));
        }
        const std::string uid = "Combine_" + f.uid();
        proto::Dictionary d;
        d.set_version(1);
        put(d, "version", dv_size_t(kPrimitiveFunctionVersion));
        put(d, "type", dv_string("PrimitiveFunction"));
        put(d, "uid", dv_string(uid));
        put(d, "op", dv_size_t(kCombine));
        put(d, "inputs", dv_vector(std::move(inputs)));
        proto::Dictionary attrs;
        attrs.set_version(1);
        put(d, "attributes", dv_dictionary(std::move(attrs)));
        functions_.push_back(dv_dictionary(std::move(d)));
        return uid;
    }

    void visit_variable(const Variable& v) {
        if (v.is_output()) {
            emit(*v.owner());
            return;
        }
        if (!seen_leaves_.insert(v.impl()).second) return;
        leaves_.push_back(dv_dictionary(variable_dict(v)));
    }

    static proto::Dictionary variable_dict(const Variable& v) {
        proto::Dictionary d;
        d.set_version(1);
        put(d, "version", dv_size_t(kVariableVersion));
        put(d, "type", dv_string("Variable"));
        put(d, "uid", dv_string(v.uid()));
        put(d, "kind", dv_size_t(static_cast<uint64_t>(v.kind())));
        put(d, "data_type", dv_size_t(cntk_dtype(v.dtype())));
        std::vector<proto::DictionaryValue> axes;
        const auto& dyn = v.dynamic_axes();
        for (auto it = dyn.rbegin(); it != dyn.rend(); ++it) axes.push_back(dv_axis(*it));
        put(d, "dynamic_axis", dv_vector(std::move(axes)));
        put(d, "is_sparse", dv_bool(v.is_sparse()));
        if (!v.name().empty()) put(d, "name", dv_string(v.name()));
        put(d, "needs_gradient", dv_bool(v.needs_gradient()));
        put(d, "shape", v.shape_known() ? dv_shape(v.shape()) : dv_unknown_shape());
        if (v.is_parameter() || v.is_constant()) {
            if (v.has_inferred_dims())
                throw ShapeError("save_model: " + v.to_string() +
                                 " still has inferred dims; evaluate the model once (or give the dims) "
                                 "before saving it");
            put(d, "value", dv_tensor(v.value()));
        }
        return d;
    }

    // ---- CNTK's composites for ctk ops CNTK had no primitive for, so that CNTK can read the file ----
    std::string ref(const Variable& v) {
        visit_variable(v);
        return variable_uid(v);
    }
    std::string scalar(double value, DataType dtype) {
        Variable c = constant(value, dtype);
        keep_.push_back(c);
        return ref(c);
    }
    // One CNTK primitive of an expansion; the last takes `f`'s uid and name, so users of f's output find
    // it. Returns the uid of its output.
    std::string primitive(const Function& f, int& counter, bool last, uint64_t op,
                          const std::vector<std::string>& in, proto::Dictionary attrs = proto::Dictionary()) {
        const std::string uid = last ? f.uid() : f.uid() + "_cntk" + std::to_string(counter++);
        proto::Dictionary d;
        d.set_version(1);
        attrs.set_version(1);
        put(d, "version", dv_size_t(kPrimitiveFunctionVersion));
        put(d, "type", dv_string("PrimitiveFunction"));
        put(d, "uid", dv_string(uid));
        if (last && !f.name().empty()) put(d, "name", dv_string(f.name()));
        put(d, "op", dv_size_t(op));
        put(d, "attributes", dv_dictionary(std::move(attrs)));
        std::vector<proto::DictionaryValue> uids;
        for (const std::string& i : in) uids.push_back(dv_string(i));
        put(d, "inputs", dv_vector(std::move(uids)));
        functions_.push_back(dv_dictionary(std::move(d)));
        return uid + "_Output_0";
    }

    // Writes `f` as the composite CNTK's own API built for it (its row's save_composite); false when its
    // row writes it as one primitive.
    bool expand(const Function& f) {
        const Row* row = row_for(f.op());
        if (row == nullptr || row->save_composite == nullptr) return false;
        class Writer final : public CompositeWriter {
        public:
            Writer(Saver& saver, const Function& f) : saver_(saver), f_(f) {}
            std::string operand(const Variable& v) override { return saver_.ref(v); }
            std::string scalar(double value) override {
                return saver_.scalar(value, f_.outputs().front().dtype());
            }
            std::string primitive(bool last, uint64_t cntk_op, const std::vector<std::string>& inputs,
                                  proto::Dictionary attributes) override {
                return saver_.primitive(f_, counter_, last, cntk_op, inputs, std::move(attributes));
            }

        private:
            Saver& saver_;
            const Function& f_;
            int counter_ = 0;
        };
        Writer writer(*this, f);
        return row->save_composite(f, writer);
    }

    // Writes `f` after everything it uses (post-order). A Function met again while it is being written
    // is the far end of a recurrent loop: its uid is referenced before it is written, as CNTK does.
    void emit(const Function& f) {
        if (done_.count(&f) || active_.count(&f)) return;
        active_.insert(&f);
        if (f.is_composite()) {
            for (const Variable& v : f.outputs()) visit_variable(v);
            active_.erase(&f);
            done_.insert(&f);
            return;
        }
        if (f.is_primitive() && expand(f)) {
            active_.erase(&f);
            done_.insert(&f);
            return;
        }
        proto::Dictionary d;
        d.set_version(1);
        put(d, "version", dv_size_t(kPrimitiveFunctionVersion));
        put(d, "type", dv_string("PrimitiveFunction"));
        put(d, "uid", dv_string(f.uid()));
        if (!f.name().empty()) put(d, "name", dv_string(f.name()));
        std::vector<Variable> inputs;
        if (auto callbacks = user_function_callbacks(f)) {
            // CNTK's UDFUtils::Serialize: the common entries, the type and the function's own state.
            CTK_CHECK(callbacks->serialize != nullptr, NotImplementedError, "save_model: '", f.name(),
                      "' is a user function (", f.op_name(),
                      ") without a serialize callback: its state cannot be written");
            put(d, "type", dv_string("UserDefinedFunction"));
            put(d, "user_defined_state", dv_dictionary(to_cntk_proto(callbacks->serialize())));
            inputs = f.inputs();
        } else if (f.is_block()) {
            const FunctionPtr& inner = f.block_root();
            const std::string inner_root = root_uid(*inner, inner->outputs());
            proto::Dictionary composite;
            composite.set_version(1);
            put(composite, "version", dv_size_t(kCompositeFunctionVersion));
            put(composite, "type", dv_string("CompositeFunction"));
            put(composite, "root", dv_string(inner_root));
            put(composite, "uid", dv_string("CompositeFunction_" + inner->uid()));
            put(d, "block_function_composite", dv_dictionary(std::move(composite)));
            put(d, "block_function_op_name", dv_string(f.op_name()));
            std::vector<proto::DictionaryValue> keys, values;
            for (const auto& [placeholder, operand] : f.block_arguments_mapping()) {
                visit_variable(placeholder);
                keys.push_back(dv_string(variable_uid(placeholder)));
                values.push_back(dv_string(variable_uid(operand)));
            }
            put(d, "block_function_composite_arguments_map_keys", dv_vector(std::move(keys)));
            put(d, "block_function_composite_arguments_map_values", dv_vector(std::move(values)));
            put(d, "op", dv_size_t(kBlock));
            proto::Dictionary attrs;
            attrs.set_version(1);
            put(d, "attributes", dv_dictionary(std::move(attrs)));
            inputs = f.inputs();
        } else {
            SavedOp s = save_op(f);
            if (s.op != kCtkExtensionOp && f.attributes().has(kUnknownAttributesKey)) {
                proto::Dictionary unknown;
                const std::string bytes =
                    from_hex(f.attributes().get<std::string>(kUnknownAttributesKey), f.uid());
                if (!unknown.ParseFromString(bytes))
                    throw IOError(f.uid() + ": malformed " + kUnknownAttributesKey);
                for (const auto& [k, v] : unknown.data())
                    if (!s.attributes.data().count(k)) (*s.attributes.mutable_data())[k] = v;
            }
            put(d, "op", dv_size_t(s.op));
            put(d, "attributes", dv_dictionary(std::move(s.attributes)));
            inputs = std::move(s.inputs);
        }
        std::vector<proto::DictionaryValue> uids;
        for (const Variable& v : inputs) {
            visit_variable(v);
            uids.push_back(dv_string(variable_uid(v)));
        }
        put(d, "inputs", dv_vector(std::move(uids)));
        functions_.push_back(dv_dictionary(std::move(d)));
        active_.erase(&f);
        done_.insert(&f);
    }

    std::vector<proto::DictionaryValue> leaves_, functions_;
    std::vector<Variable> keep_;  // the constants expansions add, alive until the file is written
    std::unordered_set<const void*> seen_leaves_;
    std::unordered_set<const Function*> done_, active_;
};

class Loader {
public:
    Loader(std::string source, const UserFunctionDeserializer& user_functions)
        : source_(std::move(source)), user_functions_(user_functions) {}

    FunctionPtr load(const proto::Dictionary& top) {
        DictReader r{top, source_};
        const std::string& type = r.string("type");
        if (type != "CompositeFunction")
            throw IOError(source_ + ": the file holds a '" + type + "', not a model (CompositeFunction)");
        int i = 0;
        for (const auto& v : r.vector("inputs")) {
            const std::string where = source_ + ": inputs[" + std::to_string(i++) + "]";
            if (v.value_type() != proto::DictionaryValue::Dictionary)
                throw IOError(where + " is a " + dv_type_name(v.value_type()) + ", not a Variable");
            load_variable(DictReader{v.dictionary_value(), where});
        }
        i = 0;
        for (const auto& v : r.vector("primitive_functions")) {
            const std::string where = source_ + ": primitive_functions[" + std::to_string(i++) + "]";
            if (v.value_type() != proto::DictionaryValue::Dictionary)
                throw IOError(where + " is a " + dv_type_name(v.value_type()) + ", not a Function");
            load_function(DictReader{v.dictionary_value(), where});
        }
        FunctionPtr root = function(r.string("root"), source_ + ": root");
        // Close recurrent loops: a placeholder stood for each output used before it was built.
        if (!forward_.empty()) {
            VariableMap map;
            for (auto& [uid, placeholder] : forward_) {
                auto it = variables_.find(uid);
                if (it == variables_.end())
                    throw IOError(source_ + ": no Variable with uid '" + uid + "' exists in the file");
                map.emplace(placeholder, it->second);
            }
            root->replace_placeholders(map);
        }
        const std::string name = top.data().count("name") ? r.string("name") : std::string();
        return combine(root->outputs(), name);
    }

private:
    void load_variable(const DictReader& r) {
        const std::string& uid = r.string("uid");
        const int64_t kind = r.integer("kind");
        const DataType dtype = ctk_dtype(static_cast<uint64_t>(r.integer("data_type", 1)), r.where);
        const std::string name = r.has("name") ? r.string("name") : std::string();
        std::vector<Axis> dyn;
        if (r.has("dynamic_axis")) {
            for (const auto& item : r.vector("dynamic_axis")) {
                if (item.value_type() != proto::DictionaryValue::Axis)
                    r.wrong("dynamic_axis", "a Vector of Axis", item);
                dyn.insert(dyn.begin(), axis_from_proto(item.axis_value(), r.where));
            }
        }
        const auto& shape_proto = r.shape_proto("shape");
        const bool unknown_shape =
            shape_proto.shape_dim_size() == 1 && shape_proto.shape_dim(0) == kUnknownShapeDim;
        const Dims shape = unknown_shape ? Dims{} : r.shape("shape");
        Variable v;
        switch (kind) {
            case 0:
                v = input_variable(shape, dtype, r.boolean("needs_gradient", false),
                                   r.boolean("is_sparse", false), dyn, name);
                break;
            case 2:
            case 3: {
                Tensor value = tensor_from_proto(
                    [&]() -> const proto::NDArrayView& {
                        const auto& val = r.at("value");
                        if (val.value_type() != proto::DictionaryValue::NDArrayView)
                            r.wrong("value", "NDArrayView", val);
                        return val.nd_array_view_value();
                    }(),
                    r.where + "/value");
                if (value.shape().dims() != shape)
                    throw IOError(r.where + ": value of shape " + value.shape().to_string() +
                                  " for a variable of shape " + Shape(shape).to_string());
                if (value.dtype() != dtype) value = value.to(dtype);
                v = kind == 2 ? parameter_from(value, name) : constant(value, name);
                break;
            }
            case 4:
                v = unknown_shape ? placeholder(name) : placeholder(shape, dyn, name);
                break;
            default:
                throw IOError(r.where + ": variable kind " + std::to_string(kind) +
                              " cannot be a graph input");
        }
        if (!variables_.emplace(uid, v).second) throw IOError(r.where + ": duplicate uid '" + uid + "'");
        restore_uid(v, uid);  // as CNTK: a loaded variable keeps its uid (unnamed inputs are known by it)
    }

    // A block's body is complete once its root is read: the loops inside it (an LSTM's past_value of
    // its own output) close there, before the block maps its operands, or the placeholders that stood
    // for the far ends would count as unmapped operands of the block.
    void close_loops(const FunctionPtr& body) {
        VariableMap map;
        for (const auto& [uid, placeholder] : forward_) {
            auto it = variables_.find(uid);
            if (it != variables_.end()) map.emplace(placeholder, it->second);
        }
        if (!map.empty()) body->replace_placeholders(map);
    }

    Variable variable(const std::string& uid, const std::string& where) {
        auto it = variables_.find(uid);
        if (it != variables_.end()) return it->second;
        // An output used before its Function is built: the far end of a recurrent loop.
        if (uid.find("_Output_") == std::string::npos)
            throw IOError(where + ": no Variable with uid '" + uid + "' precedes its use");
        auto f = forward_.find(uid);
        if (f != forward_.end()) return f->second;
        Variable p = placeholder(uid);
        forward_.emplace(uid, p);
        return p;
    }

    FunctionPtr function(const std::string& uid, const std::string& where) {
        auto it = functions_.find(uid);
        if (it == functions_.end()) throw IOError(where + ": no Function with uid '" + uid + "'");
        return it->second;
    }

    void load_function(const DictReader& r) {
        const std::string& uid = r.string("uid");
        const std::string name = r.has("name") ? r.string("name") : std::string();
        const std::string where = r.where + " ('" + uid + "')";
        std::vector<Variable> inputs;
        for (const std::string& in : r.strings("inputs")) inputs.push_back(variable(in, where));
        FunctionPtr f;
        if (r.has("type") && r.string("type") == "UserDefinedFunction") {
            f = load_user_function(r, where, uid, name, std::move(inputs));
        } else if (const uint64_t op = static_cast<uint64_t>(r.integer("op")); op == kBlock) {
            DictReader composite{r.dictionary("block_function_composite"),
                                 where + "/block_function_composite"};
            FunctionPtr inner = function(composite.string("root"), composite.where);
            const auto keys = r.strings("block_function_composite_arguments_map_keys");
            const auto values = r.strings("block_function_composite_arguments_map_values");
            if (keys.size() != values.size())
                throw IOError(where + ": " + std::to_string(keys.size()) + " block argument keys but " +
                              std::to_string(values.size()) + " values");
            std::vector<std::pair<Variable, Variable>> mapping;
            for (size_t i = 0; i < keys.size(); ++i)
                mapping.emplace_back(variable(keys[i], where), variable(values[i], where));
            FunctionPtr body = combine(inner->outputs());
            close_loops(body);
            f = as_block(body, mapping, r.string("block_function_op_name"), name);
        } else if (op == kCombine) {
            f = combine(inputs, name);
        } else {
            DictReader attrs{r.dictionary("attributes"), where};
            try {
                f = load_op(op, std::move(inputs), attrs, name);
            } catch (const IOError&) {
                throw;
            } catch (const NotImplementedError&) {
                throw;
            } catch (const Error& e) {
                throw IOError(where + ": " + e.what());
            }
        }
        if (!functions_.emplace(uid, f).second) throw IOError(where + ": duplicate uid '" + uid + "'");
        const auto outs = f->outputs();
        for (size_t i = 0; i < outs.size(); ++i) variables_[uid + "_Output_" + std::to_string(i)] = outs[i];
    }

    // CNTK's UDFUtils::Deserialize: the saved state goes to the deserializer, which gives back the
    // Function whose outputs stand for the saved function's outputs.
    FunctionPtr load_user_function(const DictReader& r, const std::string& where, const std::string& uid,
                                   const std::string& name, std::vector<Variable> inputs) {
        SavedUserFunction saved{
            uid, name, std::move(inputs),
            from_cntk_proto(r.dictionary("user_defined_state"), where + "/user_defined_state")};
        if (!user_functions_) {
            std::string what;
            if (saved.state.contains("module") && saved.state.contains("class") &&
                saved.state.at("module").is<std::string>() && saved.state.at("class").is<std::string>())
                what = " (" + saved.state.at("module").as_string() + "." +
                       saved.state.at("class").as_string() + ")";
            throw NotImplementedError(where + ": '" + name + "' is a user function" + what +
                                      "; loading it needs a deserializer that rebuilds it from its state");
        }
        FunctionPtr f = user_functions_(saved);
        if (!f) throw ValueError(where + ": the user function deserializer returned no Function");
        return f;
    }

    std::string source_;
    const UserFunctionDeserializer& user_functions_;
    std::unordered_map<std::string, Variable> variables_;
    std::unordered_map<std::string, FunctionPtr> functions_;
    std::unordered_map<std::string, Variable> forward_;
};

}  // namespace

proto::Dictionary cntk_v2_model_dictionary(const FunctionPtr& model) {
    return Saver().save(model);
}

FunctionPtr cntk_v2_model_from_dictionary(const proto::Dictionary& d, const std::string& source,
                                          const UserFunctionDeserializer& user_functions) {
    return Loader(source, user_functions).load(d);
}

}  // namespace formats

FunctionPtr load_cntk_v2_model(const std::string& path, const UserFunctionDeserializer& user_functions) {
    return formats::cntk_v2_model_from_dictionary(formats::read_cntk_dictionary_file(path), "'" + path + "'",
                                                  user_functions);
}

std::string serialize_cntk_v2_model(const FunctionPtr& model) {
    if (!model) throw ValueError("serialize_cntk_v2_model: null Function");
    return formats::serialize_cntk_dictionary(formats::cntk_v2_model_dictionary(model));
}

FunctionPtr deserialize_cntk_v2_model(const std::string& bytes, const std::string& source,
                                      const UserFunctionDeserializer& user_functions) {
    return formats::cntk_v2_model_from_dictionary(formats::parse_cntk_dictionary(bytes, source), source,
                                                  user_functions);
}

Dictionary cntk_v2_attributes(const Function& f) {
    CTK_CHECK(f.is_primitive(), ValueError, "attributes: '", f.name(), "' is a ",
              f.is_block() ? "block" : "composite", "; its primitives have attributes");
    return formats::from_cntk_proto(formats::save_op(f).attributes, "'" + f.uid() + "' attributes");
}

void save_cntk_v2_model(const FunctionPtr& model, const std::string& path) {
    if (!model) throw ValueError("save_model: null Function");
    formats::write_cntk_dictionary_file(formats::cntk_v2_model_dictionary(model), path);
}

}  // namespace ctk
