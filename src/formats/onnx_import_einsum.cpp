// ONNX import of Einsum, written with ctk's ops: a label repeated within an operand takes its diagonal
// (an identity mask, then a sum over the second copy); the operands are then transposed to one label
// order (the output's labels first), given dims of 1 for the labels they lack, multiplied with
// broadcasting, and summed over the labels the output drops. Ellipses broadcast as NumPy's do.
#include <algorithm>
#include <cctype>
#include <map>

#include "formats/onnx_import_internal.h"

namespace ctk::detail::onnx_io::importer {
namespace {

// A label: a letter, or (from 1000) one dim of the ellipsis, numbered so that the ellipses of operands
// of different ranks line up from the right.
using Label = int;
constexpr Label kEllipsis = 1000;

struct Term {
    std::vector<Label> labels;
    bool has_ellipsis = false;
};

Term parse_term(const NodeCtx& c, const std::string& text, int rank, int ellipsis_rank) {
    Term t;
    size_t letters = 0;
    for (size_t i = 0; i < text.size(); ++i) {
        if (text.compare(i, 3, "...") == 0) {
            if (t.has_ellipsis) unsupported(c, "an equation term with two ellipses");
            t.has_ellipsis = true;
            const int dims = rank < 0 ? ellipsis_rank : rank - static_cast<int>(text.size() - 3);
            if (dims < 0 || dims > ellipsis_rank) unsupported(c, "an ellipsis that does not fit its operand");
            for (int k = ellipsis_rank - dims; k < ellipsis_rank; ++k) t.labels.push_back(kEllipsis + k);
            i += 2;
            continue;
        }
        const char ch = text[i];
        if (!std::isalpha(static_cast<unsigned char>(ch)))
            unsupported(c, std::string("the character '") + ch + "' in the equation");
        t.labels.push_back(ch);
        ++letters;
    }
    if (rank >= 0 && !t.has_ellipsis && static_cast<int>(letters) != rank)
        unsupported(c, "a term of " + std::to_string(letters) + " labels for an operand of rank " +
                           std::to_string(rank));
    return t;
}

// x with the dims of labels p < q (one label repeated) replaced by their diagonal, at p.
Variable diagonal(const NodeCtx& c, const Variable& x, int p, int q) {
    const int64_t n = x.shape()[static_cast<size_t>(p)];
    if (x.shape()[static_cast<size_t>(q)] != n)
        unsupported(c, "a repeated label over dims of different sizes");
    check_built_size(c, n * n, "an Einsum diagonal mask");
    Dims mask_dims(static_cast<size_t>(x.rank()), 1);
    mask_dims[static_cast<size_t>(p)] = mask_dims[static_cast<size_t>(q)] = n;
    std::vector<double> eye(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i) eye[static_cast<size_t>(i * n + i)] = 1.0;
    const Variable mask = constant(Tensor::from_vector(eye, Shape(mask_dims)).to(x.dtype()));
    return reduce_sum(element_times(x, mask), {Axis(q)}, false);
}

std::vector<Variable> einsum_node(NodeCtx& c) {
    std::string eq;
    for (char ch : attr_s(c, "equation", "")) {
        if (ch != ' ') eq += ch;
    }
    const size_t arrow = eq.find("->");
    const std::string inputs_text = eq.substr(0, arrow);
    std::vector<std::string> terms;
    for (size_t start = 0;;) {
        const size_t comma = inputs_text.find(',', start);
        terms.push_back(inputs_text.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    const int n = c.node.input_size();
    if (static_cast<int>(terms.size()) != n)
        unsupported(c, "an equation whose terms do not match the inputs");
    std::vector<Variable> xs;
    int ellipsis_rank = 0;
    for (int i = 0; i < n; ++i) {
        xs.push_back(c.im.in(c, i));
        if (!xs.back().dynamic_axes().empty() || !xs.back().shape_known())
            unsupported(c, "an operand with dynamic axes (ctk's Einsum takes static tensors)");
        const size_t letters = terms[static_cast<size_t>(i)].size();
        if (terms[static_cast<size_t>(i)].find("...") != std::string::npos)
            ellipsis_rank = std::max(ellipsis_rank, xs.back().rank() - static_cast<int>(letters - 3));
    }
    // The operands' labels, each repeated label reduced to its diagonal.
    std::vector<std::vector<Label>> labels;
    std::map<Label, int> count;
    for (int i = 0; i < n; ++i) {
        Term t =
            parse_term(c, terms[static_cast<size_t>(i)], xs[static_cast<size_t>(i)].rank(), ellipsis_rank);
        Variable& x = xs[static_cast<size_t>(i)];
        for (bool again = true; again;) {
            again = false;
            for (size_t p = 0; p < t.labels.size() && !again; ++p)
                for (size_t q = p + 1; q < t.labels.size() && !again; ++q)
                    if (t.labels[p] == t.labels[q]) {
                        x = diagonal(c, x, static_cast<int>(p), static_cast<int>(q));
                        t.labels.erase(t.labels.begin() + static_cast<long>(q));
                        again = true;
                    }
        }
        for (Label l : t.labels) ++count[l];
        labels.push_back(t.labels);
    }
    // The output's labels: as written, or (implicit form) the ellipsis then the letters used once, sorted.
    std::vector<Label> out;
    if (arrow != std::string::npos) {
        out = parse_term(c, eq.substr(arrow + 2), -1, ellipsis_rank).labels;
    } else {
        for (const auto& [l, k] : count)
            if (l >= kEllipsis) out.push_back(l);
        for (const auto& [l, k] : count)
            if (l < kEllipsis && k == 1) out.push_back(l);
    }
    std::vector<Label> order = out;
    for (const auto& [l, k] : count) {
        (void)k;
        if (std::find(order.begin(), order.end(), l) == order.end()) order.push_back(l);
    }
    for (Label l : out)
        if (!count.count(l)) unsupported(c, "an output label that no input has");
    // Each operand in that order, with dims of 1 for its missing labels, multiplied with broadcasting.
    Variable product;
    for (int i = 0; i < n; ++i) {
        const std::vector<Label>& own = labels[static_cast<size_t>(i)];
        std::vector<int> perm;
        Dims dims;
        for (Label l : order) {
            auto it = std::find(own.begin(), own.end(), l);
            if (it == own.end()) {
                dims.push_back(1);
                continue;
            }
            const auto axis = static_cast<size_t>(it - own.begin());
            perm.push_back(static_cast<int>(axis));
            dims.push_back(xs[static_cast<size_t>(i)].shape()[axis]);
        }
        Variable x = xs[static_cast<size_t>(i)];
        if (!std::is_sorted(perm.begin(), perm.end())) x = transpose(x, perm);
        if (x.rank() != static_cast<int>(dims.size()) && !dims.empty()) x = reshape(x, dims);
        product = i == 0 ? x : Variable(element_times(product, x));
    }
    std::vector<Axis> summed;
    for (size_t a = out.size(); a < order.size(); ++a) summed.emplace_back(static_cast<int>(a));
    if (summed.empty()) return {alias(product, c.name)};
    return {reduce_sum(product, summed, false, c.name)};
}

}  // namespace

void add_einsum_handler(std::map<std::string, Handler>& h) {
    h["Einsum"] = einsum_node;
}

}  // namespace ctk::detail::onnx_io::importer
