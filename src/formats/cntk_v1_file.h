// The byte layer of CNTK v1 model files (cntk.exe / BrainScript `.dnn`, `.cmf`): a bounds-checked parse
// of the marker-delimited stream into nodes, their payloads, the input relation and the node groups.
// Every count and size is checked against the bytes left; nothing here builds graph objects.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ctk/tensor.h"

namespace ctk::detail::cntk_v1 {

// The model versions this reader knows (CNTK_MODEL_VERSION_7 added the per-node precision tag; 25 is the
// newest layout of the nodes ctk maps).
inline constexpr uint64_t kMinVersion = 7;
inline constexpr uint64_t kMaxVersion = 25;

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

struct Node {
    std::string precision;  // "float" or "double"
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
    // Slice: per axis (1-based, column-major) begin and end (end <= 0 counts from the end, as CNTK's node)
    struct SliceAxis {
        int64_t begin = 0, end = 0;
        int32_t axis = 1;
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
    int32_t reduce_axis = 0;
    bool keep_dims = true;

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

}  // namespace ctk::detail::cntk_v1
