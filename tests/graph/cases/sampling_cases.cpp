// Graph harness cases: sampling (in progress).
#include "graph/graph_harness.h"

namespace ctk::test {

std::vector<GraphCase> sampling_graph_cases() {
    return {};
}

}  // namespace ctk::test
