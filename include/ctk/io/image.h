// CNTK's image reader: ImageDeserializer (a map file of image paths and class labels) and its
// transforms (crop, scale, mean, color), with CNTK's parameter names, order and random draws. Images
// are decoded and resized with OpenCV, as CNTK did, and come out as CNTK delivered them: float32 planes
// in CHW order with the channels Blue, Green, Red (OpenCV's order), values 0..255 (minus the mean).
// See docs/images.md for the semantics, the quirks kept on purpose and the threading.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ctk/io/minibatch_source.h"

namespace ctk {

// crop(crop_type, crop_size, side_ratio, area_ratio, aspect_ratio, jitter_type). crop_type is center,
// randomside, randomarea or multiview10 (any case); crop_width/height > 0 fix the window (ratios are
// then ignored); a ratio range (min, max) of (0, 0) means "not given". Horizontal flips are on for
// the random types unless hflip says otherwise (never for multiview10).
struct ImageCrop {
    std::string crop_type = "center";
    int64_t crop_width = 0, crop_height = 0;
    double side_ratio_min = 0, side_ratio_max = 0;
    double area_ratio_min = 0, area_ratio_max = 0;
    double aspect_ratio_min = 1, aspect_ratio_max = 1;
    std::string jitter_type = "none";  // none | uniratio
    std::optional<bool> hflip;
    uint32_t seed = 0;  // CNTK's config key `seed`: engine j starts as mt19937(seed + j)
};

// scale(width, height, channels, interpolations, scale_mode, pad_value). `channels` declares the output
// shape only (CNTK converted no colours). scale_mode: fill | crop | pad (lower case, as CNTK).
struct ImageScale {
    int64_t width = 0, height = 0, channels = 3;
    std::string interpolations = "linear";  // nearest | linear | cubic | lanczos
    std::string scale_mode = "fill";
    int64_t pad_value = -1;  // -1 replicates the border
};

// mean(filename): an OpenCV FileStorage file (XML or YAML) with MeanImg, Channel, Row and Col.
struct ImageMean {
    std::string mean_file;
};

// color(brightness_radius, contrast_radius, saturation_radius), each in [0, 1].
struct ImageColor {
    double brightness_radius = 0, contrast_radius = 0, saturation_radius = 0;
    uint32_t seed = 0;
};

using ImageTransform = std::variant<ImageCrop, ImageScale, ImageMean, ImageColor>;

struct ImageDeserializerConfig {
    std::string map_file;
    std::string image_stream = "features";
    std::vector<ImageTransform> transforms;  // applied in order, then the transpose to CHW
    // The label stream (one-hot of num_classes); an empty name reads the labels but exposes no stream
    // (CNTK then checked them against 2 classes, a quirk kept).
    std::string label_stream = "labels";
    int64_t num_classes = 0;
    bool grayscale = false;        // decode as one channel
    bool multi_view_crop = false;  // CNTK's multiViewCrop: ten copies of each image (multiview10)
    // CNTK stopped at the first image it could not read. With max_errors > 0 such an image is skipped
    // with a warning naming it, until more than max_errors were skipped.
    int64_t max_errors = 0;
};

// The deserializer over a map file: lines "path<TAB>label" or "key<TAB>path<TAB>label". A path starting
// with "..." is relative to the map file's folder, other relative paths to the working directory (as
// CNTK); "archive.zip@/member.png" reads a member of a zip file. Each image is a chunk of one sequence
// of one sample, as CNTK's. Errors name the map file, the line and the image.
DeserializerPtr image_deserializer(const ImageDeserializerConfig& config);

// CNTK's Base64ImageDeserializer: lines "[key<TAB>]label<TAB>base64 of the image file", chunked like
// CTF text; the same streams and transforms.
DeserializerPtr base64_image_deserializer(const ImageDeserializerConfig& config);

// CIFAR-10's binary batches (data_batch_1..5.bin, test_batch.bin in in_dir, plain or .gz) in CNTK's image
// layout, as its install_cifar10.py left it: train/00000.png .. (40x40: each image padded by 4 pixels of
// 128), test/00000.png .. (32x32), train_map.txt and test_map.txt (absolute path, tab, label),
// train_regrLabels.txt and test_regrLabels.txt, CIFAR-10_mean.xml (the mean of the unpadded training
// images, in CIFAR's red-green-blue CHW order, as CNTK wrote it) and Train_cntk_text.txt /
// Test_cntk_text.txt. Returns the number of (train, test) images.
std::pair<int64_t, int64_t> convert_cifar10_to_images(const std::string& in_dir, const std::string& out_dir);

// An IDX image set (MNIST, Fashion-MNIST: train-images-idx3-ubyte, ... in in_dir) in one of CNTK's image
// layouts. "cifar": as convert_cifar10_to_images, the 28x28 gray images padded with their background to
// 32x32, one value in all three channels. "imagenet": train/<class>/<i>.jpg and val/<class>/<i>.jpg of
// size x size (resized with cubic interpolation), train_map.txt, val_map.txt and ImageNet1K_mean.xml
// (224x224, interleaved B, G, R, as CNTK's ImageNet scripts read it). limit > 0 keeps the first `limit`
// images of each split. Returns the number of (train, test) images.
std::pair<int64_t, int64_t> convert_idx_to_images(const std::string& in_dir, const std::string& out_dir,
                                                  const std::string& layout, int64_t size = 64,
                                                  int64_t limit = 0);

}  // namespace ctk
