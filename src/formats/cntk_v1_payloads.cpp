// CNTK v1 model files: each known node type's payload, as the node's Load() reads it in a file of a given
// model version (CNTK's ComputationNetworkLib headers; the layouts are described beside each read).
#include <map>
#include <set>

#include "ctk/core/dictionary.h"
#include "formats/cntk_v1_bytes.h"

namespace ctk::detail::cntk_v1 {
namespace {

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
    const uint64_t want = static_cast<uint64_t>(size_of(precision_dtype(n.precision)));
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
    const DataType dtype = precision_dtype(n.precision);
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
    static const std::set<std::string> ops = {
        "Plus", "Minus", "ElementTimes", "ElementDivide", "Scale", "RectifiedLinear", "Sigmoid", "Tanh",
        "Exp", "Log", "Sqrt", "Abs", "Negate", "Reciprocal", "Floor", "Softmax", "LogSoftmax", "SquareError",
        "CrossEntropyWithSoftmax", "ClassificationError", "ErrorPrediction", "Logistic", "Pass", "Hardmax",
        "Cosine", "Sin", "LogPlus", "Clip", "StableSigmoid", "PerDimMeanVarNormalization", "LabelsToGraph",
        "If", "DiagTimes", "SumColumnElements", "SumElements", "CosDistance",
        // CNTK 2.x's own nodes, written by SaveAsLegacyModel too
        "Acos", "Asin", "Atan", "Tan", "Cosh", "Sinh", "Asinh", "Atanh", "ExponentialLinearUnit",
        "StraightThrough", "StopGradient", "Equal", "NotEqual", "Less", "LessEqual", "Greater",
        "GreaterEqual", "Pow", "Cast", "CrossEntropy", "MatrixL1Reg", "MatrixL2Reg", "LookupTable",
        "PerDimMeanVarDeNormalization", "ReconcileDynamicAxis", "PackedIndex", "GatherPacked",
        "ScatterPacked", "CosDistanceWithNegativeSamples", "LambdaRank", "NDCG1Eval",
        // read so that the stream can be walked; not mapped
        "ClassBasedCrossEntropyWithSoftmax", "SequenceWithSoftmax", "DummyCriterion", "KhatriRaoProduct",
        "Diagonal", "Assign", "EpochAccumulator", "TopK"};
    return ops;
}

// RngUser's state (Dropout, RandomSample): nothing before version 16; from 17 a uint64 seed and offset.
// Version 16 wrote the seed as an unsigned long, 4 bytes on Windows and 8 on Linux: not decidable.
void read_random_state(ByteReader& r, const Node& n, uint64_t version) {
    if (version < 16) return;
    if (version == 16)
        CTK_THROW(NotImplementedError, "CNTK v1 model '", r.path(), "': node '", n.name, "' (", n.op,
                  ") of model version 16 stores its random seed in a platform-dependent size; resave the "
                  "model with a newer CNTK");
    r.u64("random seed");
    r.u64("random offset");
}

}  // namespace

void read_payload(ByteReader& r, Node& n, uint64_t version) {
    // Older names of the same node classes.
    static const std::map<std::string, std::string> aliases = {{"Delay", "PastValue"},
                                                               {"RNN", "OptimizedRNNStack"},
                                                               {"ReconcileMBLayout", "ReconcileDynamicAxis"},
                                                               {"ColumnElementTimes", "ElementTimes"},
                                                               {"RowElementTimes", "ElementTimes"}};
    if (auto it = aliases.find(n.op); it != aliases.end()) n.op = it->second;
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
        // Version 27 allowed several axes: a count first.
        const size_t at = r.pos();
        const int32_t count = version >= 27 ? r.i32("ReduceElements axis count") : 1;
        if (count < 1 || count > 64)
            r.fail(detail::concat("ReduceElements '", n.name, "' has ", count, " axes"), at);
        n.reduce_axes.clear();
        for (int32_t i = 0; i < count; ++i) n.reduce_axes.push_back(r.i32("ReduceElements axis"));
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
        // Version 25: two zero axes are followed by a whole permutation (size_t count, then 0-based
        // size_t entries; out dim i is in dim perm[i], column-major).
        if (n.axis1 == 0 && n.axis2 == 0) {
            if (version < 25) r.fail(detail::concat("TransposeDimensions '", n.name, "' has axes 0 and 0"));
            const size_t at = r.pos();
            const uint64_t rank = r.u64("permutation size");
            if (rank < 1 || rank > kMaxRank) r.fail(detail::concat("permutation of ", rank, " axes"), at);
            std::vector<bool> seen(rank, false);
            for (uint64_t i = 0; i < rank; ++i) {
                const uint64_t axis = r.u64("permutation entry");
                if (axis >= rank || seen[axis])
                    r.fail(detail::concat("TransposeDimensions '", n.name, "' is not a permutation"), at);
                seen[axis] = true;
                n.permutation.push_back(static_cast<int64_t>(axis));
            }
        }
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
            const size_t stride_at = r.pos();
            if (version >= 27) a.stride = r.i32("slice stride");
            if (a.stride < 1) r.fail(detail::concat("Slice '", n.name, "' has stride ", a.stride), stride_at);
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
            n.initial_value = n.precision == "double" ? r.f64("initial value")
                              : n.precision == "half"
                                  ? double(float(Half::from_bits(r.scalar<uint16_t>("initial value"))))
                                  : r.f32("initial value");
        return;
    }
    if (op == "Dropout") {  // the rate is not saved; inference does not drop
        read_random_state(r, n, version);
        return;
    }
    if (op == "RandomSample" || op == "RandomSampleInclusionFrequency") {
        n.allow_duplicates = r.boolean("allowDuplicates");
        const size_t at = r.pos();
        const uint64_t samples = r.u64("sample count");
        if (samples < 1 || samples > (uint64_t(1) << 31))
            r.fail(detail::concat(op, " '", n.name, "' draws ", samples, " samples"), at);
        n.num_samples = static_cast<int64_t>(samples);
        read_random_state(r, n, version);
        return;
    }
    if (op == "LegacyReshape") {  // the target row count, then an image layout (old W, H, C accepted)
        const size_t at = r.pos();
        const uint64_t rows = r.u64("target rows");
        if (rows < 1 || rows > uint64_t(kMaxElements)) r.fail(detail::concat("target rows ", rows), at);
        n.target_rows = static_cast<int64_t>(rows);
        n.target_layout = r.tensor_shape("target image layout", /*accept_legacy=*/true);
        check_geometry(r, n.target_layout, n, "target image layout", at, /*zero_ok=*/true);
        return;
    }
    if (op == "MaxPooling" || op == "AveragePooling") {
        // PoolingNodeBase: uint32 window width, uint32 image layout (the high word of an old size_t
        // width, so 0: HWC), then size_t window height, horizontal and vertical subsampling.
        LegacyPooling& p = n.legacy_pool;
        const size_t at = r.pos();
        p.window_width = r.u32("window width");
        p.image_layout = static_cast<int32_t>(r.u32("image layout"));
        p.window_height = static_cast<int64_t>(r.u64("window height"));
        p.horizontal_stride = static_cast<int64_t>(r.u64("horizontal subsample"));
        p.vertical_stride = static_cast<int64_t>(r.u64("vertical subsample"));
        check_geometry(r, {p.window_width, p.window_height, p.horizontal_stride, p.vertical_stride}, n,
                       "pooling", at);
        if (p.image_layout > 1) r.fail(detail::concat("image layout ", p.image_layout), at);
        return;
    }
    if (op == "Crop") {
        n.crop_x = r.f64("crop x offset");
        n.crop_y = r.f64("crop y offset");
        return;
    }
    if (op == "ROIPooling") {
        const size_t at = r.pos();
        n.roi_shape = r.tensor_shape("ROI output shape");
        check_geometry(r, n.roi_shape, n, "ROI output shape", at);
        if (version >= 26) {
            n.roi_pool_kind = r.i32("ROI pool kind");
            n.spatial_scale = r.f64("spatial scale");
        }
        return;
    }
    if (op == "RowRepeat") {
        const size_t at = r.pos();
        const uint64_t repeats = r.u64("repeat count");
        if (repeats < 1 || repeats > 65536) r.fail(detail::concat("repeat count ", repeats), at);
        n.repeats = static_cast<int64_t>(repeats);
        return;
    }
    if (op == "Where") {
        if (version >= 11) n.dynamic_axis = r.wstring("Where dynamic axis");
        return;
    }
    if (op == "OptimizedRNNStack") {  // RnnAttributes
        RnnStack& a = n.rnn;
        const size_t at = r.pos();
        const uint64_t bidirectional = r.u64("bidirectional"), layers = r.u64("layer count"),
                       hidden = r.u64("hidden size");
        if (bidirectional > 1 || layers < 1 || layers > 1024 || hidden < 1 || hidden > (1 << 24))
            r.fail(detail::concat("OptimizedRNNStack '", n.name, "' has bidirectional ", bidirectional, ", ",
                                  layers, " layers, hidden size ", hidden),
                   at);
        a.bidirectional = bidirectional == 1;
        a.num_layers = static_cast<int64_t>(layers);
        a.hidden_size = static_cast<int64_t>(hidden);
        a.recurrent_op = r.wstring("recurrent op");
        if (version >= 14) a.axis = r.i32("RNN axis");
        return;
    }
    if (op == "EnvironmentInput") {
        n.text = r.wstring("environment property");
        return;
    }
    if (op == "Trace") {  // a diagnostic printer: its settings are read and dropped
        r.wstring("trace message");
        r.u64("logFirst");
        r.u64("logFrequency");
        r.boolean("logGradientToo");
        r.boolean("isCategoryLabel");  // WriteFormattingOptions
        r.wstring("labelMappingFile");
        r.boolean("isSparse");
        r.boolean("transpose");
        for (int i = 0; i < 8; ++i) r.string("formatting string");
        r.u64("onlyUpToRow");
        r.u64("onlyUpToT");
        return;
    }
    if (op == "ForwardBackward") {  // the file order: delay constraint, then the blank token
        n.delay_constraint = r.i32("delay constraint");
        const size_t at = r.pos();
        const uint64_t blank = r.u64("blank token id");
        if (blank > (uint64_t(1) << 31)) r.fail(detail::concat("blank token id ", blank), at);
        n.blank_token = static_cast<int64_t>(blank);
        return;
    }
    if (op == "EditDistanceError") {
        n.substitution_penalty = r.f32("substitution penalty");
        n.deletion_penalty = r.f32("deletion penalty");
        n.insertion_penalty = r.f32("insertion penalty");
        n.squash_inputs = r.boolean("squashInputs");
        const size_t at = r.pos();
        const uint64_t count = r.u64("ignored token count");
        if (count > r.left() / 8) r.fail(detail::concat("ignored token count ", count), at);
        for (uint64_t i = 0; i < count; ++i)
            n.tokens_to_ignore.push_back(static_cast<int64_t>(r.u64("ignored token") & 0x7FFFFFFF));
        return;
    }
    if (op == "NoiseContrastiveEstimation") {
        // The evaluation mode (0..2); files from before the field have the next node's bytes there.
        const size_t at = r.pos();
        if (r.left() >= 4 && r.i32("NCE evaluation mode") > 2) r.rewind(at);
        return;
    }
    if (op == "LatticeSequenceWithSoftmax") {  // five paths, six numbers, two flags: not mapped
        for (int i = 0; i < 5; ++i) r.wstring("lattice path");
        for (int i = 0; i < 6; ++i) r.f64("lattice setting");
        r.boolean("seqGammarUsesMBR");
        r.boolean("doReferenceAlignment");
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

}  // namespace ctk::detail::cntk_v1
