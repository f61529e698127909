// The byte layer of CNTK v1 model files (cntk.exe / BrainScript `.dnn`, `.cmf`): a bounds-checked parse
// of the marker-delimited stream into nodes, their payloads, the input relation and the node groups.
// Every count and size is checked against the bytes left; nothing here builds graph objects.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ctk/core/tensor.h"

namespace ctk::detail::cntk_v1 {

// The model versions this reader knows (CNTK_MODEL_VERSION_7 added the per-node precision tag; 31, the
// Cast node's two-type tag, is the newest CNTK wrote).
inline constexpr uint64_t kMinVersion = 7;
inline constexpr uint64_t kMaxVersion = 31;

// A TensorShape as stored: column-major (first dim fastest).
using ColDims = std::vector<int64_t>;

// Convolution and Pooling geometry (ConvolutionNodeBase's fields), all column-major.
struct ConvGeometry {
    ColDims kernel, map_count, strides, lower_pad, upper_pad, output_shape, dilation;
    std::vector<bool> sharing, auto_pad;
    int32_t pool_kind = 0;     // 0 none (convolution), 1 max, 2 average
    int32_t image_layout = 1;  // 0 HWC (legacy), 1 CHW
    bool transpose = false, ceil_out_dim = false, include_pad = false, convolution_2d = false;
};

struct BatchNormSettings {
    bool spatial = false;
    double normalization_time_constant = 0, blend_time_constant = 0, epsilon = 0;
    int32_t image_layout = 1;
    uint64_t sample_count = 0;  // before version 19 the running count lived in the node
    bool has_sample_count = false;
    // Before version 13 the fifth input held the running inverse standard deviation, not the variance.
    bool inverse_std_dev = false;
};

// The legacy MaxPooling / AveragePooling nodes: a window and subsampling over width and height, no padding.
struct LegacyPooling {
    int64_t window_width = 0, window_height = 0, horizontal_stride = 0, vertical_stride = 0;
    int32_t image_layout = 0;  // 0 HWC, 1 CHW
};

// OptimizedRNNStack's RnnAttributes.
struct RnnStack {
    bool bidirectional = false;
    int64_t num_layers = 0, hidden_size = 0;
    std::string recurrent_op;  // lstm, gru, rnnReLU, rnnTanh
    int32_t axis = -1;
};

struct Node {
    std::string precision;  // "float", "double" or "half"; Cast: its input's ("float" of "double,float")
    std::string output_precision;  // Cast only: the output's
    std::string op, name;
    uint64_t offset = 0;  // where the node's entry starts (its precision tag)

    // LearnableParameter, Mean, InvStdDev: the stored value (shape from `dims`, or [rows x cols]).
    float learning_rate_multiplier = 0;
    ColDims dims;  // LearnableParameter and InputValue sample layout
    Tensor value;
    int64_t rows = 0, cols = 0;
    // InputValue / SparseInputValue
    std::string dynamic_axis;
    // Times
    int64_t output_rank = 1;
    int32_t infer_input_rank = -1;
    ConvGeometry conv;
    BatchNormSettings bn;
    // TransposeDimensions: the two swapped axes; RowStack: axis1 is the splice axis (1-based, column-major)
    int32_t axis1 = 1, axis2 = 2;
    // TransposeDimensions with both axes 0 (version 25+): out dim i is in dim permutation[i] (0-based,
    // column-major)
    std::vector<int64_t> permutation;
    // Slice: per axis (1-based, column-major) begin and end (end <= 0 counts from the end, as CNTK's node)
    struct SliceAxis {
        int64_t begin = 0, end = 0;
        int32_t axis = 1;
        int32_t stride = 1;  // version 27+
    };

    std::vector<SliceAxis> slices;
    // Reshape: the replaced column-major axes [begin, end) (0: open) and their new dims
    int32_t reshape_begin = 0, reshape_end = 0;
    ColDims reshape_dims;
    // PastValue / FutureValue: the time step and the initial value of the first (last) frames
    int32_t time_step = 1;
    double initial_value = 0.1;
    // ReduceElements: the operation ("Sum", "Mean", ...), the axis (1-based column-major; 0 all static
    // axes, -1 all axes, -2 the sequence axis) and whether the reduced axes stay as dims of 1
    std::string reduce_op;
    std::vector<int32_t> reduce_axes{0};  // one axis before version 27
    bool keep_dims = true;
    // LegacyReshape: the target row count and image layout (column-major; empty: just the rows)
    int64_t target_rows = 0;
    ColDims target_layout;
    LegacyPooling legacy_pool;
    // Crop: the offsets along the first two column-major axes (DBL_MAX: found from the graph)
    double crop_x = 0, crop_y = 0;
    // ROIPooling: the output [width x height] per region, the pool kind and the coordinates' scale
    ColDims roi_shape;
    int32_t roi_pool_kind = 1;
    double spatial_scale = 1.0 / 16;
    int64_t repeats = 1;  // RowRepeat
    RnnStack rnn;         // OptimizedRNNStack
    // RandomSample / RandomSampleInclusionFrequency
    bool allow_duplicates = false;
    int64_t num_samples = 0;
    // ForwardBackward (CTC)
    int32_t delay_constraint = -1;
    int64_t blank_token = 0;
    // EditDistanceError
    float substitution_penalty = 1, deletion_penalty = 1, insertion_penalty = 1;
    bool squash_inputs = false;
    std::vector<int64_t> tokens_to_ignore;
    std::string text;  // EnvironmentInput's property

    std::vector<size_t> inputs;  // indices into Network::nodes, from the BRelation section
};

struct Network {
    std::string path;
    uint64_t version = 0;
    std::vector<Node> nodes;  // file order
    std::map<std::string, size_t> by_name;
    std::vector<size_t> features, labels, criteria, evaluation, outputs;
};

// Parses the file at `path`. Throws IOError (path and byte offset) for a truncated or corrupt file and
// NotImplementedError (node type and name) for node types or versions whose layout ctk does not know.
Network read_network(const std::string& path);

// The element type of a precision tag ("float", "double", "half").
DataType precision_dtype(const std::string& precision);

}  // namespace ctk::detail::cntk_v1
