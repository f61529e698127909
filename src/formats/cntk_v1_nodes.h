// CNTK v1 model files, the graph side shared by cntk_v1_model.cpp (the graph builder, the core node
// types) and cntk_v1_nodes.cpp (CNTK 2.x's own nodes and the legacy ones): how a node's error is
// reported and how its axes translate.
#pragma once

#include <string>
#include <vector>

#include "ctk/graph/function.h"
#include "formats/cntk_v1_file.h"

namespace ctk::detail::cntk_v1 {

// A node the file describes inconsistently (IOError), or one ctk does not map (NotImplementedError);
// both name the file, the node and its type.
[[noreturn]] void corrupt(const Network& net, const Node& n, const std::string& what);
[[noreturn]] void unsupported(const Network& net, const Node& n, const std::string& what);
void check_arity(const Network& net, const Node& n, size_t lo, size_t hi);

// CNTK's TensorShapes are column-major; ctk's shapes are row-major (as CNTK's Python API shows them).
inline Dims row_major(const ColDims& d) {
    return Dims(d.rbegin(), d.rend());
}
// The values of a (known) shape.
inline int64_t numel(const Dims& d) {
    int64_t n = 1;
    for (int64_t v : d) n *= v;
    return n;
}
// A v1 axis (1-based, column-major, over the sample) as ctk's static axis (0-based, row-major).
int row_major_axis(const Network& net, const Node& n, const Variable& x, int32_t v1_axis);

// The node types mapped in cntk_v1_nodes.cpp, given every node converted so far (`vars`, by node
// index: a node's inputs and their ancestors are there); null when `n` is none of them.
FunctionPtr convert_added_node(const Network& net, const Node& n, const std::vector<Variable>& vars);

}  // namespace ctk::detail::cntk_v1
