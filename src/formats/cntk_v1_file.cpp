// CNTK v1 model files, the byte layer: UTF-16LE strings and markers, little-endian scalars, TensorShapes,
// dense matrices, and each known node type's payload, as CNTK's ComputationNetwork::Read and the nodes'
// Load() methods lay them out. The whole file is read once; every read is checked against its end.
#include "formats/cntk_v1_file.h"

#include <cstring>
#include <limits>
#include <set>

#include "ctk/dictionary.h"
#include "ctk/error.h"

namespace ctk::detail::cntk_v1 {
namespace {

// Sanity bounds that no real model comes near; they keep a corrupt count from driving a huge loop.
constexpr size_t kMaxStringUnits = 1 << 16;  // UTF-16 code units in a name or marker
constexpr uint32_t kMaxRank = 64;            // TensorShape rank
constexpr uint64_t kMaxBoolList = 64;        // sharing / autoPad lists

class ByteReader {
public:
    ByteReader(std::string data, std::string path) : data_(std::move(data)), path_(std::move(path)) {}

    size_t pos() const { return pos_; }
    size_t left() const { return data_.size() - pos_; }
    const std::string& path() const { return path_; }

    [[noreturn]] void fail(const std::string& what, size_t at) const {
        CTK_THROW(IOError, "CNTK v1 model '", path_, "': ", what, " at byte offset ", at);
    }
    [[noreturn]] void fail(const std::string& what) const { fail(what, pos_); }

    void need(uint64_t bytes, const char* what) const {
        if (bytes > left())
            fail(detail::concat("truncated file: ", what, " needs ", bytes, " bytes, ", left(), " left"));
    }
    template <typename T>
    T scalar(const char* what) {
        need(sizeof(T), what);
        T v;
        std::memcpy(&v, data_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    uint64_t u64(const char* what) { return scalar<uint64_t>(what); }
    uint32_t u32(const char* what) { return scalar<uint32_t>(what); }
    int32_t i32(const char* what) { return scalar<int32_t>(what); }
    double f64(const char* what) { return scalar<double>(what); }
    float f32(const char* what) { return scalar<float>(what); }
    bool boolean(const char* what) {
        const auto b = scalar<uint8_t>(what);
        if (b > 1) fail(detail::concat("bad bool ", int(b), " for ", what), pos_ - 1);
        return b != 0;
    }
    const char* bytes(uint64_t n, const char* what) {
        need(n, what);
        const char* p = data_.data() + pos_;
        pos_ += n;
        return p;
    }

    // A NUL-terminated UTF-16LE string (CNTK's File << std::wstring), as UTF-8.
    std::string wstring(const char* what) {
        const size_t start = pos_;
        std::u16string units;
        for (;;) {
            if (left() < 2) fail(detail::concat("truncated file: unterminated string (", what, ")"), start);
            uint16_t c;
            std::memcpy(&c, data_.data() + pos_, 2);
            pos_ += 2;
            if (c == 0) break;
            if (units.size() >= kMaxStringUnits)
                fail(detail::concat("string longer than ", kMaxStringUnits, " characters (", what, ")"),
                     start);
            units.push_back(static_cast<char16_t>(c));
        }
        return to_utf8(units);
    }
    void marker(const char* expected) {
        const size_t at = pos_;
        const std::string got = wstring("marker");
        if (got != expected) fail(detail::concat("expected marker '", expected, "', found '", got, "'"), at);
    }
    // True (and consumed) when the next string is `expected`; otherwise the position is unchanged.
    bool try_marker(const char* expected) {
        const size_t at = pos_;
        try {
            if (wstring("marker") == expected) return true;
        } catch (const IOError&) {
        }
        pos_ = at;
        return false;
    }

    // TensorShape::Load: uint32 rank, then uint32 dims. With `accept_legacy`, a zero second word means
    // the old size_t W, H, C layout.
    ColDims tensor_shape(const char* what, bool accept_legacy = false) {
        const size_t at = pos_;
        const uint32_t rank = u32(what);
        if (rank > kMaxRank) fail(detail::concat("tensor rank ", rank, " too large (", what, ")"), at);
        if (rank == 0) return {};
        const uint32_t dim0 = u32(what);
        if (accept_legacy && dim0 == 0) {
            ColDims d(3);
            d[1] = rank;
            d[2] = checked_dim(u64(what), what);
            d[0] = checked_dim(u64(what), what);
            return d;
        }
        need(uint64_t(rank - 1) * 4, what);
        ColDims d{dim0};
        for (uint32_t i = 1; i < rank; ++i) d.push_back(u32(what));
        return d;
    }
    std::vector<bool> bool_list(const char* what) {
        const size_t at = pos_;
        const uint64_t n = u64(what);
        if (n > kMaxBoolList) fail(detail::concat("list of ", n, " flags too long (", what, ")"), at);
        need(n, what);
        std::vector<bool> v;
        for (uint64_t i = 0; i < n; ++i) v.push_back(boolean(what));
        return v;
    }

private:
    int64_t checked_dim(uint64_t d, const char* what) {
        if (d > std::numeric_limits<uint32_t>::max())
            fail(detail::concat("dimension ", d, " too large (", what, ")"));
        return static_cast<int64_t>(d);
    }
    static void append_utf8(std::string& out, uint32_t cp) {
        if (cp < 0x80) {
            out += static_cast<char>(cp);
        } else if (cp < 0x800) {
            out += static_cast<char>(0xC0 | (cp >> 6));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
            out += static_cast<char>(0xE0 | (cp >> 12));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        } else {
            out += static_cast<char>(0xF0 | (cp >> 18));
            out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
            out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
            out += static_cast<char>(0x80 | (cp & 0x3F));
        }
    }
    // Windows wrote wchar_t as UTF-16; a lone surrogate becomes U+FFFD, the replacement character (as
    // its own code point it would be bytes that are not UTF-8, which Python refuses as a name).
    static std::string to_utf8(const std::u16string& s) {
        std::string out;
        for (size_t i = 0; i < s.size(); ++i) {
            uint32_t c = s[i];
            if (c >= 0xD800 && c < 0xDC00 && i + 1 < s.size() && s[i + 1] >= 0xDC00 && s[i + 1] < 0xE000) {
                c = 0x10000 + ((c - 0xD800) << 10) + (s[i + 1] - 0xDC00);
                ++i;
            } else if (c >= 0xD800 && c < 0xE000) {
                c = 0xFFFD;
            }
            append_utf8(out, c);
        }
        return out;
    }

    std::string data_;
    std::string path_;
    size_t pos_ = 0;
};

// Shapes from the file feed ctk's shape arithmetic: no zero dims, and a bounded element count so that
// no product downstream can overflow.
constexpr int64_t kMaxElements = int64_t(1) << 40;
constexpr int64_t kMaxGeometryDim = (int64_t(1) << 31) - 1;

int64_t product(const ColDims& d);

void check_shape(ByteReader& r, const ColDims& d, const Node& n, const char* what, size_t at) {
    for (int64_t v : d)
        if (v <= 0) r.fail(detail::concat(what, " of node '", n.name, "' has a zero dimension"), at);
    const int64_t total = product(d);
    if (total < 0 || total > kMaxElements)
        r.fail(detail::concat(what, " of node '", n.name, "' has too many elements"), at);
}
void check_geometry(ByteReader& r, const ColDims& d, const Node& n, const char* what, size_t at,
                    bool zero_ok = false) {
    for (int64_t v : d)
        if (v > kMaxGeometryDim || (v == 0 && !zero_ok))
            r.fail(detail::concat(what, " of node '", n.name, "' has a bad value ", v), at);
}

int64_t product(const ColDims& d) {
    int64_t n = 1;
    for (int64_t v : d) {
        if (v != 0 && n > std::numeric_limits<int64_t>::max() / v) return -1;
        n *= v;
    }
    return n;
}

// Matrix<ElemType>::Read of a dense matrix: 'd', BMAT, element size, name, format, rows, cols, the values
// column by column, EMAT.
void read_matrix(ByteReader& r, Node& n) {
    const size_t at = r.pos();
    const auto kind = r.scalar<uint8_t>("matrix kind");
    if (kind == 's')
        CTK_THROW(NotImplementedError, "CNTK v1 model '", r.path(), "': node '", n.name, "' (", n.op,
                  ") holds a sparse matrix, which ctk does not read");
    if (kind != 'd') r.fail(detail::concat("bad matrix kind ", int(kind), " in node '", n.name, "'"), at);
    r.marker("BMAT");
    const size_t size_at = r.pos();
    const uint64_t element_size = r.u64("matrix element size");
    const uint64_t want = n.precision == "double" ? 8 : 4;
    if (element_size != want)
        r.fail(detail::concat("matrix element size ", element_size, " does not match precision '",
                              n.precision, "' of node '", n.name, "'"),
               size_at);
    r.wstring("matrix name");
    r.i32("matrix format");
    const size_t dims_at = r.pos();
    const uint64_t rows = r.u64("matrix rows"), cols = r.u64("matrix cols");
    // Refuse before allocating: the values must fit in what is left of the file.
    if (rows > r.left() || cols > r.left() || (rows != 0 && cols > r.left() / rows) ||
        rows * cols > r.left() / element_size)
        r.fail(detail::concat("matrix of ", rows, " x ", cols, " values in node '", n.name,
                              "' is larger than the rest of the file"),
               dims_at);
    const uint64_t count = rows * cols;
    const DataType dtype = element_size == 8 ? DataType::f64 : DataType::f32;
    Tensor t = Tensor::empty(Shape{static_cast<int64_t>(count)}, dtype);
    const char* src = r.bytes(count * element_size, "matrix values");
    if (count > 0) std::memcpy(t.raw_data(), src, count * element_size);
    r.marker("EMAT");
    n.value = t;
    n.rows = static_cast<int64_t>(rows);
    n.cols = static_cast<int64_t>(cols);
}

// Node types whose Load() reads nothing beyond the base node (which itself reads nothing).
const std::set<std::string>& payload_free_ops() {
    static const std::set<std::string> ops = {"Plus",
                                              "Minus",
                                              "ElementTimes",
                                              "ElementDivide",
                                              "Scale",
                                              "RectifiedLinear",
                                              "Sigmoid",
                                              "Tanh",
                                              "Exp",
                                              "Log",
                                              "Sqrt",
                                              "Abs",
                                              "Negate",
                                              "Reciprocal",
                                              "Floor",
                                              "Softmax",
                                              "LogSoftmax",
                                              "SquareError",
                                              "CrossEntropyWithSoftmax",
                                              "ClassificationError",
                                              "ErrorPrediction",
                                              "Logistic",
                                              "Pass",
                                              "Hardmax",
                                              "Cosine",
                                              "Sin",
                                              "LogPlus",
                                              "Clip",
                                              "StableSigmoid",
                                              "PerDimMeanVarNormalization",
                                              "LabelsToGraph",
                                              "If",
                                              "DiagTimes",
                                              "SumColumnElements",
                                              "SumElements",
                                              "CosDistance"};
    return ops;
}

void read_payload(ByteReader& r, Node& n, uint64_t version) {
    const std::string& op = n.op;
    if (payload_free_ops().count(op)) return;
    if (op == "LearnableParameter") {
        n.learning_rate_multiplier = r.f32("learning-rate multiplier");
        const size_t at = r.pos();
        n.dims = r.tensor_shape("parameter shape");
        check_shape(r, n.dims, n, "parameter shape", at);
        read_matrix(r, n);
        if (product(n.dims) != n.rows * n.cols)
            r.fail(detail::concat("parameter '", n.name, "' has shape of ", product(n.dims), " values but a ",
                                  n.rows, " x ", n.cols, " matrix"),
                   at);
        return;
    }
    if (op == "InputValue" || op == "SparseInputValue") {
        const uint64_t rows = r.u64("input rows");
        r.u64("input cols");
        const size_t at = r.pos();
        n.dims = r.tensor_shape("input shape", /*accept_legacy=*/true);
        // Old files stored the row count; CNTK trusts it over an inconsistent layout.
        if (rows != 0 && static_cast<int64_t>(rows) != product(n.dims)) {
            if (rows > std::numeric_limits<uint32_t>::max()) r.fail("input row count too large");
            n.dims = {static_cast<int64_t>(rows)};
        }
        check_shape(r, n.dims, n, "input shape", at);
        if (version >= 8) {
            const size_t at = r.pos();
            const uint32_t axes = r.u32("input dynamic axis count");
            if (axes > 1) r.fail(detail::concat("input '", n.name, "' has ", axes, " dynamic axes"), at);
            if (axes == 1) n.dynamic_axis = r.wstring("input dynamic axis");
        }
        if (version >= 10) n.learning_rate_multiplier = r.f32("input learning-rate multiplier");
        return;
    }
    if (op == "Mean" || op == "InvStdDev") {
        r.boolean("precomputed flag");
        read_matrix(r, n);
        return;
    }
    if (op == "ReduceElements") {
        n.reduce_axis = r.i32("ReduceElements axis");
        n.reduce_op = r.wstring("ReduceElements operation");
        // Before version 24 the node kept the reduced dims (CNTK's default for files without the flag).
        n.keep_dims = version >= 24 ? r.boolean("ReduceElements keepDimensions") : true;
        return;
    }
    if (op == "Times" || op == "TransposeTimes") {  // both TimesNodeBase: the same payload
        const size_t at = r.pos();
        const uint64_t rank = r.u64("Times output rank");
        if (rank > kMaxRank) r.fail(detail::concat("Times output rank ", rank, " too large"), at);
        n.output_rank = static_cast<int64_t>(rank);
        if (version >= 12) n.infer_input_rank = r.i32("Times inferInputRankToMap");
        return;
    }
    if (op == "Convolution" || op == "Pooling") {
        ConvGeometry& g = n.conv;
        const size_t at = r.pos();
        g.kernel = r.tensor_shape("kernel shape");
        g.map_count = r.tensor_shape("map count");
        g.strides = r.tensor_shape("strides");
        g.sharing = r.bool_list("sharing");
        g.auto_pad = r.bool_list("autoPad");
        g.lower_pad = r.tensor_shape("lowerPad");
        g.upper_pad = r.tensor_shape("upperPad");
        check_geometry(r, g.kernel, n, "kernel shape", at);
        check_geometry(r, g.map_count, n, "map count", at);
        check_geometry(r, g.strides, n, "strides", at);
        check_geometry(r, g.lower_pad, n, "lowerPad", at, /*zero_ok=*/true);
        check_geometry(r, g.upper_pad, n, "upperPad", at, /*zero_ok=*/true);
        g.pool_kind = r.i32("pool kind");
        g.image_layout = r.i32("image layout");
        r.u64("maxTempMemSizeInSamples");
        if (version >= 9) g.transpose = r.boolean("transpose");
        if (version >= 20) g.output_shape = r.tensor_shape("output shape");
        check_geometry(r, g.output_shape, n, "output shape", at, /*zero_ok=*/true);
        if (version >= 21) g.ceil_out_dim = r.boolean("ceilOutDim");
        if (version >= 23) g.include_pad = r.boolean("includePad");
        if (op == "Convolution") {
            g.convolution_2d = r.boolean("convolution2D");
            const size_t dilation_at = r.pos();
            if (version >= 18) g.dilation = r.tensor_shape("dilation");
            check_geometry(r, g.dilation, n, "dilation", dilation_at);
        }
        return;
    }
    if (op == "TransposeDimensions" || op == "Transpose") {
        if (version >= 3) {
            n.axis1 = r.i32("transpose axis 1");
            n.axis2 = r.i32("transpose axis 2");
        }
        // Version 25 added a permutation after two zero axes; its layout is not known well enough to read.
        if (n.axis1 == 0 && n.axis2 == 0)
            CTK_THROW(NotImplementedError, "CNTK v1 model '", r.path(), "': TransposeDimensions '", n.name,
                      "' stores a permutation (model version 25+), which ctk's v1 reader does not read");
        return;
    }
    if (op == "RowStack") {
        if (version >= 3) n.axis1 = r.i32("splice axis");
        return;
    }
    if (op == "Slice" || op == "RowSlice") {
        const size_t at = r.pos();
        const int32_t count = version >= 22 ? r.i32("slice axis count") : 1;
        if (count < 1 || count > 64) r.fail(detail::concat("Slice '", n.name, "' has ", count, " axes"), at);
        for (int32_t i = 0; i < count; ++i) {
            Node::SliceAxis a;
            a.begin = static_cast<int64_t>(r.u64("slice begin"));
            const int64_t length = static_cast<int64_t>(r.u64("slice length"));
            if (__builtin_add_overflow(a.begin, length, &a.end))
                r.fail(detail::concat("Slice '", n.name, "' has begin ", a.begin, " and length ", length,
                                      ", whose end overflows"),
                       at);
            if (version >= 3) a.axis = r.i32("slice axis");
            n.slices.push_back(a);
        }
        return;
    }
    if (op == "Reshape") {
        n.reshape_begin = r.i32("reshape begin axis");
        n.reshape_end = r.i32("reshape end axis");
        const size_t at = r.pos();
        n.reshape_dims = r.tensor_shape("reshape shape");
        // One dim may be 0: CNTK infers it from the operand's size.
        ColDims known;
        for (int64_t d : n.reshape_dims)
            if (d != 0) known.push_back(d);
        if (n.reshape_dims.size() - known.size() > 1)
            r.fail(
                detail::concat("reshape shape of node '", n.name, "' has more than one dimension to infer"),
                at);
        check_shape(r, known, n, "reshape shape", at);
        return;
    }
    if (op == "PastValue" || op == "FutureValue") {
        n.time_step = r.i32("time step");
        if (version > 3) {
            r.tensor_shape("delay shape");
        } else {
            r.u64("delay rows");
            r.u64("delay cols");
        }
        if (version >= 2)
            n.initial_value = n.precision == "double" ? r.f64("initial value") : r.f32("initial value");
        return;
    }
    if (op == "Dropout") {
        // The seed and offset of CNTK's random stream; inference does not drop.
        r.u64("dropout seed");
        r.u64("dropout offset");
        return;
    }
    if (op == "BatchNormalization") {
        BatchNormSettings& b = n.bn;
        uint64_t minibatch_count = 0;
        if (version >= 6) {
            b.spatial = r.boolean("spatial");
            b.normalization_time_constant = r.f64("normalizationTimeConstant");
            b.blend_time_constant = r.f64("blendTimeConstant");
            b.image_layout = r.i32("image layout");
            if (version >= 19) {
                r.boolean("runCountIsZero");
            } else if (version >= 13) {
                b.sample_count = r.u64("run sample count");
                b.has_sample_count = true;
            } else {
                minibatch_count = r.u64("run minibatch count");
            }
            b.epsilon = r.f64("epsilon");
            r.boolean("useCntkEngine");
        } else {
            // The node's own version pair (0x00010001..0x00010004), then the fields that version had.
            const size_t at = r.pos();
            const int32_t written = r.i32("batch norm version written"),
                          readable = r.i32("batch norm version readable");
            if (readable > written || written < 0x00010001 || readable > 0x00010004)
                r.fail(detail::concat("BatchNormalization '", n.name, "' has node version ", written, "/",
                                      readable),
                       at);
            r.boolean("eval");
            b.spatial = r.boolean("spatial");
            b.normalization_time_constant =
                r.f64(written >= 0x00010004 ? "normalizationTimeConstant" : "expAvgFactor");
            if (written < 0x00010004)
                b.normalization_time_constant = 0;  // an old factor, not a time constant
            if (written >= 0x00010002) {
                b.image_layout = r.i32("image layout");
                minibatch_count = r.u64("run minibatch count");
            }
            if (written >= 0x00010003) {
                b.epsilon = r.f64("epsilon");
                r.boolean("useCntkEngine");
            }
        }
        if (version < 13) {
            // CNTK approximates the samples seen as 16 per minibatch, and the variance from the stored
            // inverse standard deviation (BatchNormalizationNode::Load and Validate).
            b.sample_count = 16 * minibatch_count;
            b.has_sample_count = true;
            b.inverse_std_dev = true;
        }
        return;
    }
    CTK_THROW(NotImplementedError, "CNTK v1 model '", r.path(), "': node type '", op, "' (node '", n.name,
              "') is not supported by ctk's v1 reader");
}

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
        if (n.precision != "float" && n.precision != "double")
            r.fail(detail::concat("unknown precision tag '", n.precision, "'"), n.offset);
        n.op = r.wstring("node operation");
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
