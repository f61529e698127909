// CNTK v1 model files, the network's framing as CNTK's ComputationNetwork::Read lays it out: the version,
// the node list (each node's payload read by cntk_v1_payloads.cpp), the input relation and the root
// groups. The whole file is read once; every read is checked against its end.
#include "formats/cntk_v1_file.h"

#include "ctk/core/dictionary.h"
#include "formats/cntk_v1_bytes.h"

namespace ctk::detail::cntk_v1 {
namespace {

std::vector<size_t> read_group(ByteReader& r, const Network& net, const char* what) {
    const size_t at = r.pos();
    const uint64_t count = r.u64(what);
    if (count > r.left() / 2) r.fail(detail::concat("count ", count, " of ", what, " exceeds the file"), at);
    std::vector<size_t> out;
    for (uint64_t i = 0; i < count; ++i) {
        const size_t name_at = r.pos();
        const std::string name = r.wstring(what);
        auto it = net.by_name.find(name);
        if (it == net.by_name.end())
            r.fail(detail::concat(what, " names unknown node '", name, "'"), name_at);
        out.push_back(it->second);
    }
    return out;
}

}  // namespace

DataType precision_dtype(const std::string& precision) {
    if (precision == "double") return DataType::f64;
    if (precision == "half") return DataType::f16;
    return DataType::f32;
}

Network read_network(const std::string& path) {
    ByteReader r(read_file(path), path);
    Network net;
    net.path = path;

    r.marker("BCN");
    uint64_t version = 1;  // a file without BVersion is version 1
    const size_t version_at = r.pos();
    if (r.try_marker("BVersion")) {
        version = r.u64("model version");
        r.marker("EVersion");
    }
    if (version < kMinVersion || version > kMaxVersion)
        CTK_THROW(NotImplementedError, "CNTK v1 model '", path, "': model version ", version,
                  " (byte offset ", version_at, ") is outside the versions ctk reads (", kMinVersion, " to ",
                  kMaxVersion, ")");
    net.version = version;

    const size_t count_at = r.pos();
    const uint64_t num_nodes = r.u64("node count");
    // Each node needs at least a precision tag, an op name and a node name (6 bytes of terminators).
    if (num_nodes > r.left() / 6)
        r.fail(detail::concat("node count ", num_nodes, " exceeds the file"), count_at);
    r.marker("BNodeList");
    net.nodes.reserve(num_nodes);
    for (uint64_t i = 0; i < num_nodes; ++i) {
        Node n;
        n.offset = r.pos();
        n.precision = r.wstring("node precision");
        n.op = r.wstring("node operation");
        // Version 31's Cast node has a two-type tag, its output's type first ("double,float").
        if (const size_t comma = n.precision.find(','); comma != std::string::npos && n.op == "Cast") {
            n.output_precision = n.precision.substr(0, comma);
            n.precision = n.precision.substr(comma + 1);
        }
        auto known = [](const std::string& p) { return p == "float" || p == "double" || p == "half"; };
        if (!known(n.precision))
            r.fail(detail::concat("unknown precision tag '", n.precision, "'"), n.offset);
        if (n.op == "Cast" && !known(n.output_precision))
            r.fail(detail::concat("Cast node without an output type"), n.offset);
        const size_t name_at = r.pos();
        n.name = r.wstring("node name");
        if (net.by_name.count(n.name)) r.fail(detail::concat("duplicate node name '", n.name, "'"), name_at);
        read_payload(r, n, version);
        net.by_name.emplace(n.name, net.nodes.size());
        net.nodes.push_back(std::move(n));
    }
    r.marker("ENodeList");

    r.marker("BRelation");
    std::vector<bool> related(net.nodes.size(), false);
    for (uint64_t i = 0; i < num_nodes; ++i) {
        const size_t at = r.pos();
        const std::string name = r.wstring("relation node name");
        auto it = net.by_name.find(name);
        if (it == net.by_name.end()) r.fail(detail::concat("relation names unknown node '", name, "'"), at);
        if (related[it->second])
            r.fail(detail::concat("node '", name, "' appears twice in the relation"), at);
        related[it->second] = true;
        const size_t count_pos = r.pos();
        const uint64_t children = r.u64("input count");
        if (children > r.left() / 2)
            r.fail(detail::concat("input count ", children, " of node '", name, "' exceeds the file"),
                   count_pos);
        std::vector<size_t> inputs;
        for (uint64_t j = 0; j < children; ++j) {
            const size_t child_at = r.pos();
            const std::string child = r.wstring("input name");
            auto c = net.by_name.find(child);
            if (c == net.by_name.end())
                r.fail(detail::concat("node '", name, "' has unknown input '", child, "'"), child_at);
            inputs.push_back(c->second);
        }
        net.nodes[it->second].inputs = std::move(inputs);
    }
    r.marker("ERelation");

    // The node groups, with the optional sections and legacy spellings CNTK's reader accepts.
    r.marker("BRootNodes");
    if (r.try_marker("BFeatureNodes")) {
        net.features = read_group(r, net, "feature nodes");
        r.marker("EFeatureNodes");
    }
    if (r.try_marker("BLabelNodes")) net.labels = read_group(r, net, "label nodes");
    r.marker("ELabelNodes");
    if (r.try_marker("BCriterionNodes") || r.try_marker("BCriteriaNodes")) {
        net.criteria = read_group(r, net, "criterion nodes");
        if (!r.try_marker("ECriteriaNodes")) r.marker("ECriterionNodes");
    }
    if (r.try_marker("BNodesReqMultiSeqHandling")) {
        read_group(r, net, "defunct multi-sequence nodes");
        r.marker("ENodesReqMultiSeqHandling");
    }
    if (r.try_marker("BEvalNodes")) {
        net.evaluation = read_group(r, net, "evaluation nodes");
        r.marker("EEvalNodes");
    }
    if (r.try_marker("BOutputNodes")) {
        net.outputs = read_group(r, net, "output nodes");
        r.marker("EOutputNodes");
    }
    if (r.try_marker("BPairNodes")) {
        const size_t at = r.pos();
        if (r.u64("pair node count") != 0) r.fail("pair nodes are not supported (CNTK dropped them too)", at);
        r.marker("EPairNodes");
    }
    r.marker("ERootNodes");
    r.marker("ECN");
    return net;
}

}  // namespace ctk::detail::cntk_v1
