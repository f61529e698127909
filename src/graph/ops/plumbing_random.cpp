// Graph plumbing (stop_gradient, alias, assign), dropout and random values. Random ops draw from a Philox
// stream of their own (the Function's seed and a counter that advances per call), so runs are
// reproducible. assign's write to its ref is deferred to the end of the evaluation (CommitContext).
#include "ctk/graph/graph_ops.h"
#include "graph/ops/ops_common.h"

namespace ctk {

namespace detail {

std::vector<OutputSpec> infer_identity(InferContext& c) {
    const Variable& x = c.inputs[0];
    return {{x.shape(), x.dtype(), x.dynamic_axes()}};
}
void forward_identity(ForwardContext& c) {
    c.outputs.push_back(c.inputs[0]);
}
void backward_identity(BackwardContext& c) {
    c.input_grads[0] = c.output_grads[0];
}

namespace {

// ---- assign(ref, input): CNTK's AssignNode. The output is a copy of input's value; ref takes that copy
// once the whole evaluation is over (after forward, or after backward when one follows), so every op of
// the evaluation reads ref's old value. The gradient passes to input unchanged; ref gets none. ----
std::vector<OutputSpec> infer_assign(InferContext& c) {
    const Variable& ref = c.inputs[0];
    const Variable& x = c.inputs[1];
    CTK_CHECK(ref.is_parameter() || ref.is_constant() || ref.is_placeholder(), ValueError, c.where,
              ": ref must be a Parameter or Constant, got ", ref.to_string());
    CTK_CHECK(ref.dynamic_axes().empty() && x.dynamic_axes().empty(), ValueError, c.where,
              ": neither ref nor input may have dynamic axes, got ref ", ref.to_string(), " and input ",
              x.to_string());
    CTK_CHECK(ref.dtype() == x.dtype(), TypeError, c.where, ": ref ", ref.to_string(), " is ",
              dtype_name(ref.dtype()), " but input ", x.to_string(), " is ", dtype_name(x.dtype()));
    // An inferred dim of ref takes input's (as element-wise ops infer parameter dims); nothing broadcasts.
    Dims& ref_shape = ref.impl()->shape;
    bool same = ref_shape.size() == x.shape().size();
    for (size_t i = 0; same && i < ref_shape.size(); ++i) {
        const int64_t r = ref_shape[i], d = x.shape()[i];
        if (r == kInferredDim && d >= 0) ref_shape[i] = d;
        same = ref_shape[i] == d || r == kInferredDim || d == kInferredDim;
    }
    CTK_CHECK(same, ShapeError, c.where, ": ref ", ref.to_string(), " and input ", x.to_string(),
              " must have the same shape (assign does not broadcast)");
    for (int64_t d : x.shape())
        CTK_CHECK(d != kFreeDim, ShapeError, c.where, ": input ", x.to_string(),
                  " has a free dim; assign needs a known shape");
    return {{x.shape(), x.dtype(), {}}};
}
void forward_assign(ForwardContext& c) {
    // A copy: a later op of this evaluation (another assign, or ref's own readers) must not see it change,
    // and assign(a, b) with assign(b, a) swaps.
    Tensor snapshot = c.inputs[1].data().clone();
    c.saved.push_back(snapshot);
    c.outputs.push_back(Value(snapshot));
}
void backward_assign(BackwardContext& c) {
    if (c.needs[1]) c.input_grads[1] = c.output_grads[0];
}
void commit_assign(const CommitContext& c) {
    const Variable& ref = c.input_vars[0];
    CTK_CHECK(ref.is_parameter() || ref.is_constant(), ValueError, c.where,
              ": ref must be a Parameter or Constant, got ", ref.to_string());
    CTK_CHECK(!c.saved.empty(), Error, c.where, ": forward kept no value to assign");
    ref.set_value(c.saved[0]);
}

void forward_dropout(ForwardContext& c) {
    const double rate = c.attrs.get<double>("dropoutRate");
    if (!c.training || rate == 0.0) {
        c.outputs.push_back(c.inputs[0]);
        return;
    }
    Generator gen(static_cast<uint64_t>(c.attrs.get<int64_t>("rngSeed")), c.rng_offset);
    DropoutResult r = dropout(c.inputs[0].data(), rate, gen);
    c.rng_offset = gen.offset();
    c.outputs.push_back(Value(r.y));
    c.saved.push_back(r.mask);
}
void backward_dropout(BackwardContext& c) {
    c.input_grads[0] = c.saved.empty() ? c.output_grads[0] : element_times(c.output_grads[0], c.saved[0]);
}

// ---- random_distribution: attrs rvType (uniform, normal, bernoulli, gumbel), two parameters, a shape
// (or the shape of the one operand), a seed ----
std::vector<OutputSpec> infer_random(InferContext& c) {
    if (c.inputs.empty())
        return {
            {c.attrs.get<Dims>("newShape"), static_cast<DataType>(c.attrs.get<int64_t>("newDataType")), {}}};
    const Variable& x = c.inputs[0];
    return {{x.shape(), x.dtype(), x.dynamic_axes()}};
}
void forward_random(ForwardContext& c) {
    Tensor out;
    if (c.inputs.empty()) {
        out = Tensor::empty(Shape(c.attrs.get<Dims>("newShape")),
                            static_cast<DataType>(c.attrs.get<int64_t>("newDataType")));
    } else {
        out = Tensor::empty(c.inputs[0].data().shape(), c.inputs[0].data().dtype());
    }
    // Drawn on the CPU (Philox, the same numbers on every device), then moved to the compute device.
    const std::string& kind = c.attrs.get<std::string>("rvType");
    const double a = c.attrs.get<double>("arg0"), b = c.attrs.get<double>("arg1");
    Generator gen(static_cast<uint64_t>(c.attrs.get<int64_t>("rngSeed")), c.rng_offset);
    if (kind == "uniform") {
        gen.uniform(out, a, b);
    } else if (kind == "normal") {
        gen.normal(out, a, b);
    } else if (kind == "bernoulli") {
        gen.bernoulli(out, a);
    } else {  // gumbel: loc - scale * log(-log(U)), U in (0, 1)
        gen.uniform(out, 1e-12, 1.0);
        out = minus(scalar_like(a, out), element_times(scalar_like(b, out), ctk::log(negate(ctk::log(out)))));
    }
    c.rng_offset = gen.offset();
    c.outputs.push_back(Value(out.to(c.device)));
}

}  // namespace

void register_plumbing_ops(OpTable& t) {
    t.add(PrimitiveOp::stop_gradient, OpDef{"StopGradient", 1, 1, infer_identity, forward_identity, nullptr});
    t.add(PrimitiveOp::pass, OpDef{"Pass", 1, 1, infer_identity, forward_identity, backward_identity});
    t.backward_reads(PrimitiveOp::pass, kReadsNothing);
    // Not frame-local: a recurrent loop runs it per frame, and ref would take every frame's value.
    t.add(PrimitiveOp::assign,
          OpDef{"Assign", 2, 2, infer_assign, forward_assign, backward_assign, false, commit_assign});
    t.autocast({PrimitiveOp::stop_gradient, PrimitiveOp::pass}, Autocast::follow);
}

void register_random_ops(OpTable& t) {
    t.add(PrimitiveOp::dropout, OpDef{"Dropout", 1, 1, infer_identity, forward_dropout, backward_dropout});
    t.backward_reads(PrimitiveOp::dropout, kReadsNothing);  // its mask is saved
    t.add(PrimitiveOp::random_distribution,
          OpDef{"RandomDistribution", 0, 1, infer_random, forward_random, nullptr});
    t.refuse_capture(PrimitiveOp::dropout, kRandomStreamRecorded);
    t.refuse_capture(PrimitiveOp::random_distribution, kRandomStreamRecorded);
    t.autocast({PrimitiveOp::dropout}, Autocast::follow);
}

}  // namespace detail

FunctionPtr stop_gradient(const Variable& x, const std::string& name) {
    return detail::FunctionAccess::make_primitive(PrimitiveOp::stop_gradient, {x}, {}, name);
}

FunctionPtr alias(const Variable& x, const std::string& name) {
    return detail::FunctionAccess::make_primitive(PrimitiveOp::pass, {x}, {}, name);
}

FunctionPtr assign(const Variable& ref, const Variable& input, const std::string& name) {
    return detail::FunctionAccess::make_primitive(PrimitiveOp::assign, {ref, input}, {}, name);
}

FunctionPtr dropout(const Variable& x, double dropout_rate, uint64_t seed, const std::string& name) {
    CTK_CHECK(dropout_rate >= 0.0 && dropout_rate < 1.0, ValueError, "dropout '", name, "': rate ",
              dropout_rate, " must be in [0, 1)");
    const uint64_t s = seed == kSentinelSeed ? next_worker_random_seed() : seed;
    return detail::FunctionAccess::make_primitive(
        PrimitiveOp::dropout, {x},
        Attributes{{"dropoutRate", dropout_rate}, {"rngSeed", static_cast<int64_t>(s)}}, name);
}

namespace {
FunctionPtr draw(std::vector<Variable> like, const Dims& shape, DataType dtype, const char* kind, double a,
                 double b, uint64_t seed, const std::string& name) {
    CTK_CHECK(is_floating(dtype), TypeError, kind, " '", name, "': dtype ", dtype_name(dtype),
              " is not floating-point");
    for (int64_t d : shape)
        CTK_CHECK(d >= 0, ShapeError, kind, " '", name, "': shape ", dims_to_string(shape),
                  " must be fully known");
    const uint64_t s = seed == kSentinelSeed ? next_worker_random_seed() : seed;
    return detail::FunctionAccess::make_primitive(PrimitiveOp::random_distribution, std::move(like),
                                                  Attributes{{"rvType", std::string(kind)},
                                                             {"arg0", a},
                                                             {"arg1", b},
                                                             {"newShape", shape},
                                                             {"newDataType", int64_t(dtype)},
                                                             {"rngSeed", static_cast<int64_t>(s)}},
                                                  name);
}
}  // namespace

FunctionPtr uniform_random(const Dims& shape, DataType dtype, double low, double high, uint64_t seed,
                           const std::string& name) {
    CTK_CHECK(low < high, ValueError, "uniform '", name, "': low ", low, " must be below high ", high);
    return draw({}, shape, dtype, "uniform", low, high, seed, name);
}
FunctionPtr normal_random(const Dims& shape, DataType dtype, double mean, double scale, uint64_t seed,
                          const std::string& name) {
    return draw({}, shape, dtype, "normal", mean, scale, seed, name);
}
FunctionPtr bernoulli_random(const Dims& shape, DataType dtype, double mean, uint64_t seed,
                             const std::string& name) {
    CTK_CHECK(mean >= 0 && mean <= 1, ValueError, "bernoulli '", name, "': mean ", mean,
              " is not a probability");
    return draw({}, shape, dtype, "bernoulli", mean, 0.0, seed, name);
}
FunctionPtr gumbel_random(const Dims& shape, DataType dtype, double loc, double scale, uint64_t seed,
                          const std::string& name) {
    return draw({}, shape, dtype, "gumbel", loc, scale, seed, name);
}
FunctionPtr uniform_random_like(const Variable& x, double low, double high, uint64_t seed,
                                const std::string& name) {
    return draw({x}, {}, DataType::f32, "uniform", low, high, seed, name);
}
FunctionPtr normal_random_like(const Variable& x, double mean, double scale, uint64_t seed,
                               const std::string& name) {
    return draw({x}, {}, DataType::f32, "normal", mean, scale, seed, name);
}
FunctionPtr bernoulli_random_like(const Variable& x, double mean, uint64_t seed, const std::string& name) {
    return draw({x}, {}, DataType::f32, "bernoulli", mean, 0.0, seed, name);
}
FunctionPtr gumbel_random_like(const Variable& x, double loc, double scale, uint64_t seed,
                               const std::string& name) {
    return draw({x}, {}, DataType::f32, "gumbel", loc, scale, seed, name);
}

}  // namespace ctk
