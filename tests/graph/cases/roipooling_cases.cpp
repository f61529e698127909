// Graph harness cases: roipooling (in progress).
#include "graph/graph_harness.h"

namespace ctk::test {

std::vector<GraphCase> roipooling_graph_cases() {
    return {};
}

}  // namespace ctk::test
