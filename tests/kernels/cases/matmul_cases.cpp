// Op-harness cases for matmul: transposes, broadcast batches, strided operands, degenerate sizes, 16-bit.
// The backward of matmul is two matmuls (dA = dY B^T, dB = A^T dY), checked here by the f64 gradient check.
#include "kernels/op_harness.h"

namespace ctk::test {

namespace {

Tensor matmul_ref(const Tensor& a, const Tensor& b, bool ta, bool tb) {
    Tensor A = ta ? a.transpose(-1, -2) : a, B = tb ? b.transpose(-1, -2) : b;
    Dims ab(A.shape().dims().begin(), A.shape().dims().end() - 2), bb(B.shape().dims().begin(), B.shape().dims().end() - 2);
    Dims batch = broadcast_shapes(Shape(ab), Shape(bb), "ref").dims();
    int64_t m = A.dim(-2), k = A.dim(-1), n = B.dim(-1);
    Dims od = batch;
    od.push_back(m);
    od.push_back(n);
    Tensor out = Tensor::empty(Shape(od), DataType::f64);
    for_each_index(Shape(od), [&](const Dims& i) {
        double s = 0;
        for (int64_t kk = 0; kk < k; ++kk) {
            Dims ia(i.begin(), i.end() - 2), ib = ia;
            ia.push_back(i[i.size() - 2]);
            ia.push_back(kk);
            ib.push_back(kk);
            ib.push_back(i.back());
            s += at_broadcast(A, ia) * at_broadcast(B, ib);
        }
        out.set(i, s);
    });
    return out;
}

}  // namespace

std::vector<OpCase> matmul_cases() {
    std::vector<OpCase> cases;
    struct Geometry {
        Shape a, b;
        bool ta, tb;
        const char* tag;
    };
    for (const auto& g : {Geometry{{5, 7}, {7, 3}, false, false, "nn"}, Geometry{{7, 5}, {7, 3}, true, false, "tn"},
                          Geometry{{5, 7}, {3, 7}, false, true, "nt"}, Geometry{{7, 5}, {3, 7}, true, true, "tt"},
                          Geometry{{2, 3, 4, 5}, {5, 6}, false, false, "batch_broadcast_b"},
                          Geometry{{4, 5}, {3, 1, 5, 2}, false, false, "batch_broadcast_a"},
                          Geometry{{2, 1, 4, 5}, {3, 5, 2}, false, false, "batch_both"},
                          Geometry{{1, 6}, {6, 1}, false, false, "dot"}, Geometry{{3, 0}, {0, 4}, false, false, "k0"},
                          Geometry{{0, 3}, {3, 4}, false, false, "m0"}, Geometry{{64, 48}, {48, 40}, false, false, "medium"},
                          Geometry{{16, 8, 9}, {16, 9, 8}, false, false, "many_small"}}) {
        OpCase c;
        c.name = std::string("matmul/") + g.tag;
        c.ops = {OpKind::matmul};
        c.inputs = {InputSpec::uniform(g.a), InputSpec::uniform(g.b)};
        bool ta = g.ta, tb = g.tb;
        c.forward = [=](const Tensors& in) { return Tensors{matmul(in[0], in[1], ta, tb)}; };
        c.reference = [=](const Tensors& in) { return Tensors{matmul_ref(in[0], in[1], ta, tb)}; };
        c.backward = [=](const Tensors& in, const Tensors& dy) {
            // dA = dY B^T (or its transpose), dB = A^T dY, summed over broadcast batch axes.
            Tensor A = in[0], B = in[1];
            Tensor da = ta ? matmul(B, dy[0], tb, true) : matmul(dy[0], B, false, !tb);
            Tensor db = tb ? matmul(dy[0], A, true, ta) : matmul(A, dy[0], !ta, false);
            return Tensors{sum_to_shape(da, A.shape()), sum_to_shape(db, B.shape())};
        };
        c.dtypes = {DataType::f32, DataType::f64, DataType::bf16};
        c.rtol_f32 = 1e-5;
        c.atol_f32 = 1e-5;
        c.grad_eps = 1e-4;  // the loss sums many terms: a larger step keeps rounding below the tolerance
        cases.push_back(c);
    }
    return cases;
}

}  // namespace ctk::test
