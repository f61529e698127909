// The transforms of CNTK's image reader (ReaderLib's ImageTransformers), applied to one decoded image:
// the user's crop / scale / mean / color steps in order, then the transpose from OpenCV's interleaved
// HWC to CHW float planes. Built once per deserializer and applied from many threads (every method is
// const; the random engines are the caller's).
#pragma once

#include <opencv2/core.hpp>

#include <atomic>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ctk/io/image.h"

namespace ctk::detail {

// An image's height, width and channels.
struct ImageSize {
    int rows = 0, cols = 0, channels = 0;
};

class ImagePipeline {
public:
    // `who` names the deserializer in errors ("ImageDeserializer('map.txt')"). Reads mean files.
    ImagePipeline(const std::vector<ImageTransform>& transforms, std::string who);

    // One engine per crop and per color step, in order; their CNTK seeds.
    std::vector<uint32_t> engine_seeds() const;

    // The output [C, H, W] for an input of `in`, when no random draw decides it; nullopt otherwise.
    std::optional<ImageSize> output_size(ImageSize in) const;
    // A scale transform fixes the output size whatever the input's (output_size of any input tells it).
    bool has_scale() const;

    // Transforms `image` (HWC, 8-bit or float, 1 or 3 channels) into `out` (C*H*W floats, resized by the
    // call). copy_id picks the multiview10 view. `rng` holds engine_seeds().size() engines.
    void apply(cv::Mat image, int copy_id, std::span<TransformEngine> rng, std::vector<float>& out,
               ImageSize& out_size) const;

private:
    struct Step {
        enum class Kind { crop, scale, mean, color } kind;
        ImageCrop crop;
        ImageScale scale;
        ImageColor color;
        cv::Mat mean;  // float32, rows x cols x channels (CNTK's HWC reading of the file)
        std::string mean_file;
        int engine = -1;
        int crop_kind = 0;  // 0 center, 1 random side/area, 2 multiview10
        bool hflip = false;
        int interpolation = 0;
    };
    // The crop window of `rows` x `cols`: w, h (CNTK's GetCropRectCenter); draws from `rng` unless it is
    // null, in which case nullopt when a draw would be needed.
    std::optional<cv::Size> crop_size(const Step& s, int rows, int cols, TransformEngine* rng) const;
    void apply_crop(const Step& s, cv::Mat& m, int copy_id, TransformEngine& rng) const;
    void apply_scale(const Step& s, cv::Mat& m) const;
    void apply_mean(const Step& s, cv::Mat& m) const;
    void apply_color(const Step& s, cv::Mat& m, TransformEngine& rng) const;

    std::string who_;
    std::vector<Step> steps_;
    int num_engines_ = 0;
    mutable std::atomic<bool> mean_warned_{false};
};

// Whether `bytes` start as an image format the reader decodes: JPEG, PNG, BMP, TIFF, WebP, PBM/PGM/PPM/PAM,
// Sun raster, JPEG 2000, OpenEXR or Radiance HDR (by their signatures).
bool is_decodable_image_format(const std::vector<uint8_t>& bytes);
// Decodes an encoded image of those formats (as OpenCV reads them) into 8-bit BGR (or gray). Returns an
// empty Mat when the bytes are not such an image.
cv::Mat decode_image(const std::vector<uint8_t>& bytes, bool grayscale);

}  // namespace ctk::detail
