// Graph harness cases: every element-wise op, broadcasting a parameter against a batch, a constant
// without dynamic axes, and a masked sequence.
#include "graph/graph_harness.h"

namespace ctk::test {

namespace {

struct Domain {
    double lo, hi;
    bool differentiable;
};
Domain unary_domain(OpKind op) {
    switch (op) {
        case OpKind::log:
        case OpKind::sqrt:
        case OpKind::reciprocal:
            return {0.2, 2.0, true};
        case OpKind::asin:
        case OpKind::acos:
        case OpKind::atanh:
            return {-0.8, 0.8, true};
        case OpKind::floor:
        case OpKind::ceil:
        case OpKind::round:
        case OpKind::element_not:
            return {-2.0, 2.0, false};
        default:
            return {-1.5, 1.5, true};
    }
}

}  // namespace

std::vector<GraphCase> elementwise_graph_cases() {
    std::vector<GraphCase> cases;
#define CTK_UNARY_CASE(op_, attrs)                                                   \
    {                                                                                \
        const Domain d = unary_domain(OpKind::op_);                                  \
        GraphCase c;                                                                 \
        c.name = "unary/" #op_;                                                      \
        c.ops = {PrimitiveOp::op_};                                                  \
        c.slots = {Slot::input({3, 4}, d.lo, d.hi)};                                 \
        c.gradient = d.differentiable;                                               \
        c.build = [](const std::vector<Variable>& v) { return ctk::op_(v[0]); };     \
        c.reference = [](const std::vector<Tensor>& in) { return ctk::op_(in[0]); }; \
        cases.push_back(c);                                                          \
    }
    CTK_UNARY_OPS(CTK_UNARY_CASE)
#undef CTK_UNARY_CASE

    {
        GraphCase c;
        c.name = "unary/elu_alpha";
        c.ops = {PrimitiveOp::elu};
        c.slots = {Slot::input({5})};
        c.build = [](const std::vector<Variable>& v) { return ctk::elu(v[0], 0.5); };
        c.reference = [](const std::vector<Tensor>& in) { return ctk::elu(in[0], 0.5); };
        cases.push_back(c);
    }

#define CTK_BINARY_CASE(op_, attrs)                                                                     \
    {                                                                                                   \
        GraphCase c;                                                                                    \
        c.name = "binary/" #op_;                                                                        \
        c.ops = {PrimitiveOp::op_};                                                                     \
        const bool positive = OpKind::op_ == OpKind::pow || OpKind::op_ == OpKind::element_divide;      \
        const bool logic = OpKind::op_ >= OpKind::equal && OpKind::op_ <= OpKind::element_xor;          \
        c.slots = {Slot::input({3, 4}, positive ? 0.5 : -1.0, positive ? 2.0 : 1.0),                    \
                   Slot::param({4}, positive ? 0.5 : -1.0, positive ? 2.0 : 1.0)};                      \
        if (logic) c.slots = {Slot::input({3, 4}, -2, 2).ints(), Slot::param({4}, -2, 2).ints()};       \
        c.gradient = !logic;                                                                            \
        c.build = [](const std::vector<Variable>& v) { return ctk::op_(v[0], v[1]); };                  \
        c.reference = [](const std::vector<Tensor>& in) {                                               \
            return OpKind::op_ == OpKind::param_relu ? ctk::op_(in[1], in[0]) : ctk::op_(in[0], in[1]); \
        };                                                                                              \
        cases.push_back(c);                                                                             \
    }
    CTK_BINARY_OPS(CTK_BINARY_CASE)
#undef CTK_BINARY_CASE

    {  // a parameter of higher static rank than the input: static axes align from the right
        GraphCase c;
        c.name = "binary/plus_rank_broadcast";
        c.ops = {PrimitiveOp::plus};
        c.slots = {Slot::input({3}), Slot::param({2, 3})};
        c.build = [](const std::vector<Variable>& v) { return ctk::plus(v[0], v[1]); };
        c.reference = [](const std::vector<Tensor>& in) { return ctk::plus(in[0].expand_dims(1), in[1]); };
        cases.push_back(c);
    }
    {  // two inputs with the batch axis, and a masked sequence
        GraphCase c;
        c.name = "binary/times_two_sequences";
        c.ops = {PrimitiveOp::element_times};
        c.slots = {Slot::sequence({4}, {3, 1, 2}), Slot::sequence({4}, {3, 1, 2})};
        c.build = [](const std::vector<Variable>& v) { return ctk::element_times(v[0], v[1]); };
        c.reference = [](const std::vector<Tensor>& in) { return ctk::element_times(in[0], in[1]); };
        cases.push_back(c);
    }
    {
        GraphCase c;
        c.name = "select/broadcast";
        c.ops = {PrimitiveOp::element_select};
        c.slots = {Slot::input({2, 3}, -1, 2).ints(), Slot::input({2, 3}), Slot::param({3})};
        c.build = [](const std::vector<Variable>& v) { return element_select(v[0], v[1], v[2]); };
        c.reference = [](const std::vector<Tensor>& in) { return ctk::element_select(in[0], in[1], in[2]); };
        cases.push_back(c);
    }
    {
        GraphCase c;
        c.name = "sum/three";
        c.ops = {PrimitiveOp::plus};
        c.slots = {Slot::input({3}), Slot::input({3}), Slot::param({3})};
        c.build = [](const std::vector<Variable>& v) { return ctk::sum({v[0], v[1], v[2]}); };
        c.reference = [](const std::vector<Tensor>& in) { return ctk::plus(ctk::plus(in[0], in[1]), in[2]); };
        cases.push_back(c);
    }
    return cases;
}

}  // namespace ctk::test
