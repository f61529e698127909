// ONNX import of Scan as a ctk recurrent loop, for Scans of ctk's form (onnx_export_loop.cpp): scanned
// inputs [batch, sequence, sample...] over axis 1, one direction. Each state becomes past_value
// (future_value for a reversed Scan) of a placeholder, closed with replace_placeholders; the executor then
// runs the body per sequence, so sequences of unequal lengths keep their own lengths (ONNX's Scan runs
// every sequence over the padded frames).
#include "formats/onnx_import_internal.h"

namespace ctk::detail::onnx_io::importer {

// Expand(x, Concat(Shape(s, 0, 1), sample)): ctk's export of a loop's initial state, x broadcast to
// [batch, sample...]. A batched x stays what it is (broadcast to the sample); a static x is kept static
// and may only be a Scan's initial state, which ctk's past_value broadcasts over the batch itself.
void Importer::expand_to_batch(NodeCtx& c) {
    const SymShape& s = *sym_shape(c, 1);
    Variable x = in(c, 0);
    CTK_CHECK(c.node.output_size() == 1, IOError, c.where, ": needs one output");
    if (s.empty() || s[0].axis != 0 || dyn_of(c, x) > 1)
        unsupported(c, "an Expand to a run-time shape other than [batch, static dims...]");
    Dims sample;
    for (size_t i = 1; i < s.size(); ++i) {
        if (s[i].axis >= 0)
            unsupported(c, "an Expand to a run-time shape other than [batch, static dims...]");
        sample.push_back(s[i].value);
    }
    Shape out = broadcast_shapes(Shape(x.shape()), Shape(sample), "Expand");
    if (dyn_of(c, x) == 0 && static_cast<int>(x.shape().size()) == static_cast<int>(sample.size()) + 1) {
        // x already has the leading dim: it must be 1 (one state for every sequence)
        if (x.shape().front() != 1) unsupported(c, "an Expand of a static leading dim other than 1");
        x = reshape(x, Dims(x.shape().begin() + 1, x.shape().end()));
        out = broadcast_shapes(Shape(x.shape()), Shape(sample), "Expand");
    }
    if (dyn_of(c, x) == 0) {
        // Not built here: a corrupt target (2^62, or a mere 134 million) would allocate it whole before
        // the Scan could say that the state has another shape.
        batch_broadcast_[c.node.output(0)] = x;
        broadcast_samples_[c.node.output(0)] = out.dims();
        return;
    }
    values_[c.node.output(0)] =
        Dims(out.dims()) == x.shape() ? x : Variable(plus(x, expand_zeros(c, out.dims(), x.dtype())));
}

std::vector<Variable> Importer::scan_node(NodeCtx& c) {
    // Scan before opset 9 had a sequence_lens input and a batch axis in its body: another op.
    if (opset_ < 9) unsupported(c, "Scan of opset 8 (sequence_lens and a batch axis in the body)");
    const onnx::AttributeProto* body_attr = find_attr(c, "body");
    CTK_CHECK(body_attr != nullptr && body_attr->has_g(), IOError, c.where, ": needs a body graph");
    const onnx::GraphProto& body = body_attr->g();
    const int total = c.node.input_size();
    const auto m = static_cast<int>(attr_i(c, "num_scan_inputs", -1));
    CTK_CHECK(m >= 0 && m <= total, IOError, c.where, ": num_scan_inputs ", m, " for ", total, " operands");
    const int n = total - m;
    CTK_CHECK(body.input_size() == total, IOError, c.where, ": the body has ", body.input_size(),
              " inputs for ", total, " operands");
    CTK_CHECK(body.output_size() >= n && c.node.output_size() <= body.output_size(), IOError, c.where,
              ": the body has ", body.output_size(), " outputs for ", n, " states and ", c.node.output_size(),
              " results");
    const int k = body.output_size() - n;
    auto list = [&](const char* key, int count) {
        const Dims d = attr_ints(c, key).value_or(Dims(static_cast<size_t>(count), 0));
        CTK_CHECK(static_cast<int>(d.size()) == count, IOError, c.where, ": ", key, " has ", d.size(),
                  " entries for ", count);
        return d;
    };
    const Dims in_axes = list("scan_input_axes", m), in_dirs = list("scan_input_directions", m);
    const Dims out_axes = list("scan_output_axes", k), out_dirs = list("scan_output_directions", k);
    if (m == 0) unsupported(c, "a Scan without scanned inputs");
    const bool backward = in_dirs[0] == 1;
    const char* form =
        "a Scan other than ctk's form (scan axis 1 of [batch, sequence, ...] inputs and outputs, one "
        "direction for all)";
    for (int i = 0; i < m; ++i)
        if (in_dirs[static_cast<size_t>(i)] != (backward ? 1 : 0)) unsupported(c, form);
    for (int i = 0; i < k; ++i)
        if (out_axes[static_cast<size_t>(i)] != 1 || out_dirs[static_cast<size_t>(i)] != (backward ? 1 : 0))
            unsupported(c, form);
    std::vector<Variable> xs;
    for (int i = n; i < total; ++i) {
        Variable x = in(c, i);
        const int64_t axis = in_axes[static_cast<size_t>(i - n)];
        if (axis != 1 && axis != 1 - onnx_rank(c, x)) unsupported(c, form);
        if (dyn_of(c, x) != 2 || !x.has_batch_axis() || !x.has_sequence_axis() || merged(x))
            unsupported(c, "a scanned input without ctk's batch and sequence axes");
        xs.push_back(x);
    }
    static const std::map<std::string, Tensor> no_fixed_inputs;
    Importer sub(model_, source_, no_fixed_inputs);
    sub.parent_ = this;
    sub.opset_ = opset_;
    sub.frame_ = true;
    for (const auto& t : body.initializer()) sub.inits_[t.name()] = &t;
    std::vector<Variable> holders;
    for (int j = 0; j < n; ++j) {
        const std::string& name = c.node.input(j);
        Variable init;
        if (auto it = batch_broadcast_.find(name); it != batch_broadcast_.end()) {
            init = it->second;
        } else {
            init = in(c, j);
            if (dyn_of(c, init) != 1 || !init.has_batch_axis())
                unsupported(c,
                            "an initial state without ctk's batch axis (static states need an Expand to "
                            "the batch dim)");
        }
        const auto& vi = body.input(j);
        Dims sample;
        if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape()) {
            const auto& sh = vi.type().tensor_type().shape();
            for (int d = 1; d < sh.dim_size(); ++d) {
                if (!sh.dim(d).has_dim_value()) unsupported(c, "a state with free dims");
                sample.push_back(sh.dim(d).dim_value());
            }
        } else {
            auto it = broadcast_samples_.find(name);
            sample = it != broadcast_samples_.end() ? it->second : init.shape();
        }
        if (auto it = broadcast_samples_.find(name); it != broadcast_samples_.end())
            CTK_CHECK(it->second == sample, ShapeError, c.where, ": initial state ", j, " is expanded to ",
                      dims_to_string(it->second), " but the state is ", dims_to_string(sample));
        const Variable p = placeholder(sample, default_sequence_axes(), vi.name());
        const Variable delayed = backward ? Variable(sequence::future_value(p, init, 1, c.name))
                                          : Variable(sequence::past_value(p, init, 1, c.name));
        sub.values_[vi.name()] = delayed;
        holders.push_back(p);
    }
    for (int i = 0; i < m; ++i) sub.values_[body.input(n + i).name()] = xs[static_cast<size_t>(i)];
    const std::string where = c.where + ": body";
    sub.import_nodes(body, where);
    auto body_value = [&](int i) {
        const std::string& name = body.output(i).name();
        Variable v = sub.value(name, where);
        if (dyn_of(c, v) != 2 || !v.has_sequence_axis() || sub.merged(v))
            unsupported(c, "a body output '" + name + "' that is not computed per frame");
        return v;
    };
    std::vector<Variable> next;
    VariableMap map;
    for (int j = 0; j < n; ++j) {
        Variable v = body_value(j);
        // ctk holds a loop's back edge weakly: an Identity that only the back edge reads would be freed
        // (ctk's export ends each state with one), so the state is the value the Identity copies.
        while (v.is_output() && v.owner() && !v.owner()->is_block() && v.owner()->op() == PrimitiveOp::pass)
            v = v.owner()->inputs()[0];
        const Variable& p = holders[static_cast<size_t>(j)];
        CTK_CHECK(v.shape() == p.shape(), ShapeError, where, ": state ", j, " is ", dims_to_string(p.shape()),
                  " in and ", dims_to_string(v.shape()), " out");
        map.emplace(p, v);
        next.push_back(v);
    }
    std::vector<Variable> outs;
    // The final states: the last step is each sequence's last frame (first for a reversed Scan).
    for (const Variable& v : next) outs.push_back(backward ? sequence::first(v) : sequence::last(v));
    for (int i = 0; i < k; ++i) {
        Variable v = body_value(n + i);
        outs.push_back(v.is_output() ? v : Variable(alias(v, body.output(n + i).name())));
    }
    // Closed over every result: a state that is only a delayed input (CNTK's Delay: the next state is
    // the frame itself) is read by the scan outputs alone, not upstream of the next states.
    std::vector<Variable> reached = next;
    reached.insert(reached.end(), outs.begin(), outs.end());
    if (!map.empty()) combine(reached)->replace_placeholders(map);
    return outs;
}

}  // namespace ctk::detail::onnx_io::importer
