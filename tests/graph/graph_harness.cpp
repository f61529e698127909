// The graph op harness runner (see graph_harness.h).
#include "graph/graph_harness.h"

#include "graph/executor.h"

#include <cctype>
#include <cmath>
#include <sstream>

namespace ctk::test {

namespace {

Tensor random_data(const Slot& s, uint64_t seed) {
    if (s.fixed.defined()) return s.fixed.to(DataType::f64).clone();
    Dims dims;
    if (s.kind == Slot::Kind::input) dims.push_back(s.batch);
    if (s.kind == Slot::Kind::sequence) {
        dims.push_back(s.batch);
        int64_t t = 0;
        for (int64_t l : s.lengths) t = std::max(t, l);
        dims.push_back(t);
    }
    dims.insert(dims.end(), s.shape.begin(), s.shape.end());
    Tensor x = Tensor::empty(Shape(dims), DataType::f64);
    Generator gen(seed);
    gen.uniform(x, s.lo, s.hi);
    if (s.integer) x = floor(x);
    return x;
}

struct Built {
    FunctionPtr f;
    std::vector<Variable> vars;
    std::vector<Tensor> data;  // f64
    Variable out;
    std::vector<uint64_t> random_start;  // the random streams' positions before the first evaluation
};

Built build(const GraphCase& c, DataType dtype) {
    Built b;
    for (size_t i = 0; i < c.slots.size(); ++i) {
        const Slot& s = c.slots[i];
        Tensor d = random_data(s, 1000 + i);
        b.data.push_back(d);
        switch (s.kind) {
            case Slot::Kind::input:
                b.vars.push_back(input_variable(s.shape, dtype, s.differentiable, false, default_batch_axes(),
                                                "x" + std::to_string(i)));
                break;
            case Slot::Kind::sequence:
                b.vars.push_back(sequence_input_variable(s.shape, dtype, s.differentiable, false,
                                                         Axis::default_dynamic_axis(),
                                                         "s" + std::to_string(i)));
                break;
            case Slot::Kind::parameter:
                b.vars.push_back(parameter_from(d.to(dtype), "p" + std::to_string(i)));
                break;
            case Slot::Kind::constant:
                b.vars.push_back(constant(d.to(dtype), "c" + std::to_string(i)));
                break;
        }
    }
    b.f = c.build(b.vars);
    b.out = b.f->outputs().at(static_cast<size_t>(c.output));
    b.random_start = b.f->random_stream_positions();
    return b;
}

ValueMap arguments(const GraphCase& c, const Built& b, DataType dtype, const std::vector<Tensor>& data) {
    ValueMap args;
    for (size_t i = 0; i < c.slots.size(); ++i) {
        const Slot& s = c.slots[i];
        if (s.kind == Slot::Kind::input) args.emplace(b.vars[i], Value(data[i].to(dtype)));
        if (s.kind == Slot::Kind::sequence)
            args.emplace(b.vars[i], Value(data[i].to(dtype), std::make_shared<SequenceLayout>(s.lengths)));
        if (s.kind == Slot::Kind::parameter || s.kind == Slot::Kind::constant) b.vars[i].set_value(data[i]);
    }
    return args;
}

// The output's padded frames replaced by zeros (so that comparisons and sums see real frames only).
Tensor real_frames(const Value& v) {
    return v.masked_data(0.0).to(DataType::f64);
}

Value run(const GraphCase& c, Built& b, DataType dtype, const std::vector<Tensor>& data,
          Device device = Device::cpu()) {
    if (c.replay_random) b.f->set_random_stream_positions(b.random_start);
    ValueMap outs{{b.out, Value()}};
    b.f->forward(arguments(c, b, dtype, data), outs, {}, c.training, device);
    return outs.at(b.out);
}

std::string compare_tensors(const Tensor& got, const Tensor& want, double rtol, double atol) {
    if (got.shape() != want.shape())
        return "shape " + got.shape().to_string() + " != expected " + want.shape().to_string();
    auto a = got.to_vector<double>(), e = want.to_vector<double>();
    for (size_t i = 0; i < a.size(); ++i) {
        const bool ok =
            (std::isnan(a[i]) && std::isnan(e[i])) || std::fabs(a[i] - e[i]) <= atol + rtol * std::fabs(e[i]);
        if (!ok) {
            std::ostringstream m;
            m.precision(12);
            m << "element " << i << ": got " << a[i] << ", expected " << e[i];
            return m.str();
        }
    }
    return "";
}

}  // namespace

Tensor per_sample(const Tensor& data, int dyn, const std::function<Tensor(const Tensor&)>& fn) {
    Dims lead(data.shape().dims().begin(), data.shape().dims().begin() + dyn);
    int64_t n = 1;
    for (int64_t d : lead) n *= d;
    Dims rest(data.shape().dims().begin() + dyn, data.shape().dims().end());
    Dims flat{n};
    flat.insert(flat.end(), rest.begin(), rest.end());
    Tensor x = data.reshape(flat);
    std::vector<Tensor> outs;
    for (int64_t i = 0; i < n; ++i) outs.push_back(fn(x.select(0, i)).expand_dims(0));
    Tensor y = concat(outs, 0);
    Dims out = lead;
    out.insert(out.end(), y.shape().dims().begin() + 1, y.shape().dims().end());
    return y.reshape(out);
}

std::string check_graph_forward(const GraphCase& c, DataType dtype) {
    try {
        Built b = build(c, dtype);
        Value got = run(c, b, dtype, b.data);
        Tensor want = c.reference(b.data);
        Value want_v(want, got.layout());
        const bool f64 = dtype == DataType::f64;
        std::string m = compare_tensors(real_frames(got), real_frames(want_v), f64 ? 1e-10 : c.rtol_f32,
                                        f64 ? 1e-12 : c.atol_f32);
        return m.empty() ? "" : c.name + " (" + dtype_name(dtype) + "): " + m;
    } catch (const std::exception& e) {
        return c.name + " (" + dtype_name(dtype) + "): threw " + e.what();
    }
}

std::string check_graph_gradient(const GraphCase& c) {
    try {
        Built b = build(c, DataType::f64);
        std::vector<Tensor> data = b.data;
        Value y0 = run(c, b, DataType::f64, data);
        // R: fixed random weights on the output, zero at padded frames.
        Tensor r = Tensor::empty(y0.data().shape(), DataType::f64);
        Generator(7).uniform(r, -1.0, 1.0);
        r = Value(r, y0.layout()).masked_data(0.0);
        auto objective = [&](const std::vector<Tensor>& d) {
            Value y = run(c, b, DataType::f64, d);
            return reduce_sum(element_times(real_frames(y), r)).item();
        };
        std::vector<Variable> wrt;
        for (size_t i = 0; i < c.slots.size(); ++i)
            if (c.slots[i].differentiable) wrt.push_back(b.vars[i]);
        if (wrt.empty()) return "";
        ValueMap outs{{b.out, Value()}};
        // Every value no backward rule declares it reads becomes NaN before backward runs: an op that
        // reads more than its OpDef::backward_reads says fails here rather than in a training step.
        struct Poison {
            Poison() { detail::set_poison_unread_values(true); }
            ~Poison() { detail::set_poison_unread_values(false); }
        } poison;
        if (c.replay_random) b.f->set_random_stream_positions(b.random_start);
        auto state = b.f->forward(arguments(c, b, DataType::f64, data), outs, {b.out}, c.training);
        ValueMap grads = b.f->backward(*state, {{b.out, Value(r, outs.at(b.out).layout())}}, wrt);
        for (size_t i = 0; i < c.slots.size(); ++i) {
            const Slot& s = c.slots[i];
            if (!s.differentiable) continue;
            Tensor analytic = grads.at(b.vars[i]).data().contiguous();
            Tensor numeric = Tensor::zeros(data[i].shape(), DataType::f64);
            Tensor& x = data[i];
            const int64_t n = x.numel();
            double* p = x.data<double>();
            const int64_t frame = s.kind == Slot::Kind::sequence ? x.numel() / (x.dim(0) * x.dim(1)) : 0;
            for (int64_t k = 0; k < n; ++k) {
                if (s.kind == Slot::Kind::sequence) {  // padded frames: the gradient must be exactly zero
                    const int64_t seq = k / (frame * x.dim(1)), t = (k / frame) % x.dim(1);
                    if (t >= s.lengths[static_cast<size_t>(seq)]) {
                        if (analytic.data<double>()[k] != 0.0)
                            return c.name + ": nonzero gradient at a padded frame of input " +
                                   std::to_string(i);
                        continue;
                    }
                }
                const double orig = p[k];
                p[k] = orig + c.grad_eps;
                const double up = objective(data);
                p[k] = orig - c.grad_eps;
                const double down = objective(data);
                p[k] = orig;
                numeric.data<double>()[k] = (up - down) / (2 * c.grad_eps);
            }
            std::string m = compare_tensors(analytic, numeric, c.grad_tol, c.grad_tol);
            if (!m.empty()) return c.name + ": gradient of slot " + std::to_string(i) + ": " + m;
        }
        return "";
    } catch (const std::exception& e) {
        return c.name + " (gradient): threw " + e.what();
    }
}

std::string check_graph_on_device(const GraphCase& c, DataType dtype, Device device, double tol_scale) {
    const std::string label = c.name + " (" + dtype_name(dtype) + " on " + device.to_string() + ")";
    try {
        Built b = build(c, dtype);
        std::vector<Variable> wrt;
        if (c.gradient)
            for (size_t i = 0; i < c.slots.size(); ++i)
                if (c.slots[i].differentiable) wrt.push_back(b.vars[i]);
        Tensor r;
        // The same evaluation (random streams rewound) on the CPU, then on `device`.
        auto evaluate = [&](Device dev, std::vector<Tensor>& results) {
            b.f->set_random_stream_positions(b.random_start);
            ValueMap outs{{b.out, Value()}};
            std::vector<Variable> retain;
            if (!wrt.empty()) retain.push_back(b.out);
            auto state = b.f->forward(arguments(c, b, dtype, b.data), outs, retain, c.training, dev);
            const Value& y = outs.at(b.out);
            if (y.device() != dev) return "the output is on " + y.device().to_string();
            results.push_back(real_frames(y));
            if (wrt.empty()) return std::string();
            if (!r.defined()) {
                r = Tensor::empty(y.data().shape(), dtype);
                Generator(7).uniform(r, -1.0, 1.0);
            }
            ValueMap grads = b.f->backward(*state, {{b.out, Value(r, y.layout())}}, wrt);
            for (const Variable& v : wrt) {
                const Value& g = grads.at(v);
                if (g.device() != dev)
                    return "the gradient of " + v.name() + " is on " + g.device().to_string();
                results.push_back(g.data().to(DataType::f64));
            }
            return std::string();
        };
        std::vector<Tensor> on_cpu, on_device;
        std::string m = evaluate(Device::cpu(), on_cpu);
        if (m.empty()) m = evaluate(device, on_device);
        const bool f64 = dtype == DataType::f64;
        const double rtol = tol_scale * (f64 ? 1e-10 : c.rtol_f32),
                     atol = tol_scale * (f64 ? 1e-12 : c.atol_f32);
        for (size_t i = 0; m.empty() && i < on_cpu.size(); ++i) {
            m = compare_tensors(on_device[i], on_cpu[i], rtol, atol);
            if (!m.empty()) m = (i == 0 ? "output: " : "gradient " + std::to_string(i - 1) + ": ") + m;
        }
        return m.empty() ? "" : label + ": " + m;
    } catch (const std::exception& e) {
        return label + ": threw " + e.what();
    }
}

FunctionPtr build_case_graph(const GraphCase& c, DataType dtype) {
    Built b = build(c, dtype);
    arguments(c, b, dtype, b.data);  // parameters and constants take the case's data
    return b.f;
}

std::string check_graph_round_trip(const GraphCase& c,
                                   const std::function<FunctionPtr(const FunctionPtr&)>& convert) {
    try {
        Built b = build(c, DataType::f32);
        const ValueMap args = arguments(c, b, DataType::f32, b.data);
        const FunctionPtr back = convert(b.f);
        // The converted graph's inputs by name (the harness names them x<i> and s<i>).
        ValueMap converted_args;
        for (const Variable& a : back->arguments()) {
            bool found = false;
            for (const auto& [var, value] : args)
                if (var.name() == a.name()) {
                    converted_args.emplace(a, value);
                    found = true;
                }
            if (!found)
                return c.name + ": the converted graph has an input '" + a.name() + "' the original lacks";
        }
        if (back->outputs().size() != b.f->outputs().size())
            return c.name + ": the converted graph has " + std::to_string(back->outputs().size()) +
                   " outputs, the original " + std::to_string(b.f->outputs().size());
        const Variable out = back->outputs().at(static_cast<size_t>(c.output));
        if (c.replay_random) b.f->set_random_stream_positions(b.random_start);
        ValueMap want{{b.out, Value()}}, got{{out, Value()}};
        b.f->forward(args, want, {}, c.training, Device::cpu());
        back->forward(converted_args, got, {}, c.training, Device::cpu());
        const std::string m =
            compare_tensors(real_frames(got.at(out)), real_frames(want.at(b.out)), c.rtol_f32, c.atol_f32);
        return m.empty() ? "" : c.name + ": " + m;
    } catch (const std::exception& e) {
        return c.name + ": threw " + e.what();
    }
}

GraphCase make_case(std::string name, std::vector<PrimitiveOp> ops, std::vector<Slot> slots,
                    std::function<FunctionPtr(const std::vector<Variable>&)> build,
                    std::function<Tensor(const std::vector<Tensor>&)> reference) {
    GraphCase c;
    c.name = std::move(name);
    c.ops = std::move(ops);
    c.slots = std::move(slots);
    c.build = std::move(build);
    c.reference = std::move(reference);
    return c;
}

const std::vector<GraphCase>& cached_graph_cases() {
    static const std::vector<GraphCase> all = all_graph_cases();
    return all;
}

std::string graph_case_test_name(size_t index) {
    std::string n = cached_graph_cases().at(index).name;
    for (char& ch : n)
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    return n;
}

std::vector<GraphCase> all_graph_cases() {
    std::vector<GraphCase> all;
    for (auto* family : {elementwise_graph_cases, structure_graph_cases, conv_graph_cases,
                         sequence_graph_cases, sampling_graph_cases, ranking_graph_cases,
                         roipooling_graph_cases, image_graph_cases, misc_graph_cases})
        for (auto& c : family()) all.push_back(std::move(c));
    return all;
}

}  // namespace ctk::test
