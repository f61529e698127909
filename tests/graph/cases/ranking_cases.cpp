// Graph harness cases: ranking (in progress).
#include "graph/graph_harness.h"

namespace ctk::test {

std::vector<GraphCase> ranking_graph_cases() {
    return {};
}

}  // namespace ctk::test
