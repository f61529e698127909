// CNTK's image transforms, step by step as CNTK 2.5's ImageTransformers ran them (docs/images.md):
// the same window arithmetic, the same order of random draws and Boost.Random's distributions (CNTK
// drew from them; libstdc++'s map engine words to values differently), OpenCV's resize and colour
// conversions, and CNTK's quirks (the mean file read as HWC, the pad value on the first channel only).
#include "io/image_transforms.h"

#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

#include "ctk/core/error.h"

namespace ctk::detail {
namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

double uniform_real(double lo, double hi, TransformEngine& rng) {
    return boost::random::uniform_real_distribution<double>(lo, hi)(rng);
}
int uniform_int(int lo, int hi, TransformEngine& rng) {
    return boost::random::uniform_int_distribution<int>(lo, hi)(rng);
}
bool coin(TransformEngine& rng) {
    return boost::random::bernoulli_distribution<>()(rng);
}

void to_float(cv::Mat& m) {
    if (m.depth() != CV_32F) m.convertTo(m, CV_32F);
}

}  // namespace

ImagePipeline::ImagePipeline(const std::vector<ImageTransform>& transforms, std::string who)
    : who_(std::move(who)) {
    for (const ImageTransform& t : transforms) {
        Step s{};
        if (const auto* c = std::get_if<ImageCrop>(&t)) {
            s.kind = Step::Kind::crop;
            s.crop = *c;
            const std::string type = lower(c->crop_type);
            if (type.empty() || type == "center") {
                s.crop_kind = 0;
            } else if (type == "randomside" || type == "randomarea" || type == "random") {
                s.crop_kind = 1;  // CNTK: both random types take whichever ratio is given
            } else if (type == "multiview10") {
                s.crop_kind = 2;
            } else {
                CTK_THROW(ValueError, who_, ": invalid crop type '", c->crop_type,
                          "'; it must be center, randomside, randomarea or multiview10");
            }
            CTK_CHECK(c->crop_width >= 0 && c->crop_height >= 0, ValueError, who_, ": invalid crop_size (",
                      c->crop_width, ", ", c->crop_height, "); it must be >= 0");
            const bool side = !(c->side_ratio_min == 0 && c->side_ratio_max == 0);
            const bool area = !(c->area_ratio_min == 0 && c->area_ratio_max == 0);
            CTK_CHECK(!side || (c->side_ratio_min > 0 && c->side_ratio_max <= 1 &&
                                c->side_ratio_min <= c->side_ratio_max),
                      ValueError, who_, ": invalid side_ratio (", c->side_ratio_min, ", ", c->side_ratio_max,
                      "); it must be > 0 and <= 1, min <= max");
            CTK_CHECK(!area || (c->area_ratio_min > 0 && c->area_ratio_max <= 1 &&
                                c->area_ratio_min <= c->area_ratio_max),
                      ValueError, who_, ": invalid area_ratio (", c->area_ratio_min, ", ", c->area_ratio_max,
                      "); it must be > 0 and <= 1, min <= max");
            CTK_CHECK(!(side && area), ValueError, who_,
                      ": side_ratio and area_ratio cannot be specified simultaneously");
            CTK_CHECK(c->aspect_ratio_min > 0 && c->aspect_ratio_min <= c->aspect_ratio_max, ValueError, who_,
                      ": invalid aspect_ratio (", c->aspect_ratio_min, ", ", c->aspect_ratio_max,
                      "); it must be > 0, min <= max");
            const std::string jitter = lower(c->jitter_type);
            CTK_CHECK(jitter.empty() || jitter == "none" || jitter == "uniratio", ValueError, who_,
                      ": invalid jitter type '", c->jitter_type, "'; it must be none or uniratio");
            s.crop.jitter_type = jitter == "uniratio" ? "uniratio" : "none";
            s.hflip = s.crop_kind == 2 ? false : c->hflip.value_or(s.crop_kind == 1);
            s.engine = num_engines_++;
        } else if (const auto* sc = std::get_if<ImageScale>(&t)) {
            s.kind = Step::Kind::scale;
            s.scale = *sc;
            CTK_CHECK(sc->width > 0 && sc->height > 0 && sc->channels > 0 && sc->width <= (1 << 20) &&
                          sc->height <= (1 << 20) && sc->channels <= 4,
                      ValueError, who_, ": invalid image dimensions for scale (width ", sc->width,
                      ", height ", sc->height, ", channels ", sc->channels, ")");
            CTK_CHECK(sc->scale_mode == "fill" || sc->scale_mode == "crop" || sc->scale_mode == "pad",
                      ValueError, who_, ": invalid scale_mode '", sc->scale_mode,
                      "'; it must be fill, crop or pad (all lower case)");
            CTK_CHECK(sc->pad_value >= -1, ValueError, who_, ": invalid pad_value ", sc->pad_value,
                      "; it must be -1 (replicate the border) or >= 0 (a constant)");
            const std::string interp = lower(sc->interpolations);
            if (interp == "nearest")
                s.interpolation = cv::INTER_NEAREST;
            else if (interp == "linear")
                s.interpolation = cv::INTER_LINEAR;
            else if (interp == "cubic")
                s.interpolation = cv::INTER_CUBIC;
            else if (interp == "lanczos")
                s.interpolation = cv::INTER_LANCZOS4;
            else
                CTK_THROW(ValueError, who_, ": invalid interpolations '", sc->interpolations,
                          "'; it must be nearest, linear, cubic or lanczos");
        } else if (const auto* mn = std::get_if<ImageMean>(&t)) {
            s.kind = Step::Kind::mean;
            s.mean_file = mn->mean_file;
            if (!mn->mean_file.empty()) {
                cv::FileStorage fs;
                try {
                    fs.open(mn->mean_file, cv::FileStorage::READ);
                } catch (const cv::Exception& e) {
                    CTK_THROW(IOError, who_, ": mean file '", mn->mean_file,
                              "' is not an OpenCV XML/YAML file (", e.what(), ")");
                }
                CTK_CHECK(fs.isOpened(), IOError, who_, ": cannot open mean file '", mn->mean_file, "'");
                cv::Mat mean;
                int channels = 0, rows = 0, cols = 0;
                try {
                    fs["MeanImg"] >> mean;
                    fs["Channel"] >> channels;
                    fs["Row"] >> rows;
                    fs["Col"] >> cols;
                } catch (const cv::Exception& e) {
                    CTK_THROW(IOError, who_, ": mean file '", mn->mean_file, "' cannot be read (", e.what(),
                              ")");
                }
                CTK_CHECK(
                    !mean.empty() && channels > 0 && rows > 0 && cols > 0 &&
                        int64_t(channels) * rows * cols == int64_t(mean.channels()) * mean.rows * mean.cols,
                    IOError, who_, ": invalid data in mean file '", mn->mean_file, "' (Channel ", channels,
                    ", Row ", rows, ", Col ", cols, ", MeanImg of ",
                    int64_t(mean.channels()) * mean.rows * mean.cols, " values)");
                // CNTK read the values as rows of interleaved channels (HWC), whatever order they were
                // written in: kept, because CNTK's CIFAR-10 mean file depends on it (docs/images.md).
                mean = mean.clone().reshape(channels, rows);
                mean.convertTo(s.mean, CV_32F);
            }
        } else {
            const auto& co = std::get<ImageColor>(t);
            s.kind = Step::Kind::color;
            s.color = co;
            for (const auto& [name, v] : {std::pair{"brightness_radius", co.brightness_radius},
                                          std::pair{"contrast_radius", co.contrast_radius},
                                          std::pair{"saturation_radius", co.saturation_radius}})
                CTK_CHECK(v >= 0 && v <= 1, ValueError, who_, ": ", name, " must be >= 0.0 and <= 1.0 (got ",
                          v, ")");
            s.engine = num_engines_++;
        }
        steps_.push_back(std::move(s));
    }
}

std::vector<uint32_t> ImagePipeline::engine_seeds() const {
    std::vector<uint32_t> seeds;
    for (const Step& s : steps_) {
        if (s.kind == Step::Kind::crop) seeds.push_back(s.crop.seed);
        if (s.kind == Step::Kind::color) seeds.push_back(s.color.seed);
    }
    return seeds;
}

std::optional<cv::Size> ImagePipeline::crop_size(const Step& s, int rows, int cols,
                                                 TransformEngine* rng) const {
    const ImageCrop& c = s.crop;
    if (c.crop_width > 0 && c.crop_height > 0)
        return cv::Size(std::min<int>(cols, int(c.crop_width)), std::min<int>(rows, int(c.crop_height)));
    const bool side = !(c.side_ratio_min == 0 && c.side_ratio_max == 0);
    const bool area = !(c.area_ratio_min == 0 && c.area_ratio_max == 0);
    bool drew = false;
    auto jitter = [&](double lo, double hi) {
        if (c.jitter_type == "none" || lo == hi) return lo;
        drew = true;
        return rng ? uniform_real(lo, hi, *rng) : lo;
    };
    // CNTK's loop: up to ten tries; when no ratio is given, a try starts from the last one's window.
    int w = cols, h = rows;
    for (int attempt = 0; attempt < 10; ++attempt) {
        if (side) {
            w = h = static_cast<int>(
                std::round(std::min(rows, cols) * jitter(c.side_ratio_min, c.side_ratio_max)));
        } else if (area) {
            w = h = static_cast<int>(
                std::round(std::sqrt(double(rows) * cols * jitter(c.area_ratio_min, c.area_ratio_max))));
        }
        const double aspect = jitter(c.aspect_ratio_min, c.aspect_ratio_max);
        if (aspect != 1.0) {
            drew = true;
            if (!rng) return std::nullopt;
            const double a = double(w) * h;
            if (coin(*rng)) {
                w = static_cast<int>(std::sqrt(a * aspect));
                h = static_cast<int>(std::sqrt(a / aspect));
            } else {
                h = static_cast<int>(std::sqrt(a * aspect));
                w = static_cast<int>(std::sqrt(a / aspect));
            }
        }
        if (drew && !rng) return std::nullopt;
        if (w <= cols && h <= rows) return cv::Size(w, h);
    }
    return cv::Size(cols, rows);  // CNTK's fallback: the whole image
}

std::optional<ImageSize> ImagePipeline::output_size(ImageSize in) const {
    bool known = true;  // a random crop leaves the size open until a scale fixes it
    for (const Step& s : steps_) {
        if (s.kind == Step::Kind::crop && known) {
            const auto size = crop_size(s, in.rows, in.cols, nullptr);
            known = size.has_value();
            if (known) in.cols = size->width, in.rows = size->height;
        } else if (s.kind == Step::Kind::scale) {
            in.cols = int(s.scale.width);
            in.rows = int(s.scale.height);
            in.channels = int(s.scale.channels);
            known = true;
        }
    }
    if (!known) return std::nullopt;
    return in;
}

bool ImagePipeline::has_scale() const {
    return std::any_of(steps_.begin(), steps_.end(),
                       [](const Step& s) { return s.kind == Step::Kind::scale; });
}

void ImagePipeline::apply_crop(const Step& s, cv::Mat& m, int copy_id, TransformEngine& rng) const {
    const cv::Size size = *crop_size(s, m.rows, m.cols, &rng);
    int x = (m.cols - size.width) / 2, y = (m.rows - size.height) / 2;
    const int view = s.crop_kind == 2 ? copy_id % 10 : 0;
    if (s.crop_kind == 1) {
        x = uniform_int(0, m.cols - size.width, rng);
        y = uniform_int(0, m.rows - size.height, rng);
    } else if (s.crop_kind == 2) {
        switch (view % 5) {
            case 0:
                x = 0, y = 0;
                break;  // top left
            case 1:
                x = m.cols - size.width, y = 0;
                break;  // top right
            case 2:
                x = 0, y = m.rows - size.height;
                break;  // bottom left
            case 3:
                x = m.cols - size.width, y = m.rows - size.height;
                break;  // bottom right
            default:
                break;  // centre
        }
    }
    m = m(cv::Rect(x, y, size.width, size.height));
    if ((s.hflip && coin(rng)) || view >= 5) {
        cv::Mat flipped;  // never in place: `m` may still be the decoded image, which the cache keeps
        cv::flip(m, flipped, 1);
        m = flipped;
    }
}

void ImagePipeline::apply_scale(const Step& s, cv::Mat& m) const {
    const int width = int(s.scale.width), height = int(s.scale.height);
    if (s.scale.scale_mode == "fill") {
        cv::resize(m, m, cv::Size(width, height), 0, 0, s.interpolation);
        return;
    }
    const bool crop = s.scale.scale_mode == "crop";
    // crop scales the shorter side to the target, pad the longer one.
    const bool scale_w = crop ? m.cols < m.rows : m.cols > m.rows;
    int tw, th;
    if (scale_w) {
        tw = width;
        th = static_cast<int>(std::round(m.rows * width / double(m.cols)));
    } else {
        th = height;
        tw = static_cast<int>(std::round(m.cols * height / double(m.rows)));
    }
    tw = std::max(tw, 1);
    th = std::max(th, 1);
    cv::resize(m, m, cv::Size(tw, th), 0, 0, s.interpolation);
    if (crop) {
        CTK_CHECK(tw >= width && th >= height, ValueError, who_, ": scale_mode crop resized a ", m.cols, "x",
                  m.rows, " image below the ", width, "x", height, " window");
        m = m(cv::Rect((tw - width) / 2, (th - height) / 2, width, height));
    } else {
        CTK_CHECK(tw <= width && th <= height, ValueError, who_, ": scale_mode pad resized an image to ", tw,
                  "x", th, ", beyond the ", width, "x", height, " target");
        const int top = (height - m.rows) / 2, left = (width - m.cols) / 2;
        // CNTK passed the pad value as one number, which OpenCV takes as (value, 0, 0, 0): only the first
        // channel (blue) gets it. Kept as CNTK did (docs/images.md).
        cv::copyMakeBorder(m, m, top, height - top - m.rows, left, width - left - m.cols,
                           s.scale.pad_value >= 0 ? cv::BORDER_CONSTANT : cv::BORDER_REPLICATE,
                           cv::Scalar(double(std::max<int64_t>(s.scale.pad_value, 0))));
    }
}

void ImagePipeline::apply_mean(const Step& s, cv::Mat& m) const {
    if (s.mean.empty()) return;
    if (s.mean.rows != m.rows || s.mean.cols != m.cols) {
        if (!mean_warned_.exchange(true))
            std::fprintf(
                stderr,
                "WARNING: %s: mean file '%s' is %dx%d but an image is %dx%d; the mean is ignored for "
                "images of another size (warned once).\n",
                who_.c_str(), s.mean_file.c_str(), s.mean.cols, s.mean.rows, m.cols, m.rows);
        return;
    }
    CTK_CHECK(s.mean.channels() == m.channels(), ShapeError, who_, ": mean file '", s.mean_file, "' has ",
              s.mean.channels(), " channels but the image has ", m.channels());
    to_float(m);
    cv::subtract(m, s.mean, m);
}

void ImagePipeline::apply_color(const Step& s, cv::Mat& m, TransformEngine& rng) const {
    const ImageColor& c = s.color;
    if (c.brightness_radius == 0 && c.contrast_radius == 0 && c.saturation_radius == 0) return;
    to_float(m);
    if (!m.isContinuous()) m = m.clone();
    if (c.brightness_radius > 0 || c.contrast_radius > 0) {
        float beta = 0, alpha = 1;
        if (c.brightness_radius > 0) {
            const cv::Scalar sums = cv::sum(m);
            const double total = sums[0] + sums[1] + sums[2] + sums[3];
            beta = static_cast<float>(uniform_real(-c.brightness_radius, c.brightness_radius, rng) * total /
                                      (double(m.rows) * m.cols * m.channels()));
        }
        if (c.contrast_radius > 0)
            alpha = static_cast<float>(1 + uniform_real(-c.contrast_radius, c.contrast_radius, rng));
        float* p = m.ptr<float>();
        const size_t n = m.total() * size_t(m.channels());
        for (size_t i = 0; i < n; ++i) p[i] = std::min(std::max(p[i] * alpha + beta, 0.0f), 255.0f);
    }
    if (c.saturation_radius > 0 && m.channels() == 3) {
        const double ratio = 1 + uniform_real(-c.saturation_radius, c.saturation_radius, rng);
        cv::Mat hsv;
        cv::cvtColor(m, hsv, cv::COLOR_BGR2HSV);
        float* p = hsv.ptr<float>();
        const size_t n = hsv.total();
        for (size_t i = 0; i < n; ++i)
            p[3 * i + 1] = std::min(static_cast<float>(p[3 * i + 1] * ratio), 1.0f);
        cv::cvtColor(hsv, m, cv::COLOR_HSV2BGR);
    }
}

// Every step writes into a new buffer, never into `image` (the decoded image the chunk cache holds).
void ImagePipeline::apply(cv::Mat image, int copy_id, std::span<TransformEngine> rng, std::vector<float>& out,
                          ImageSize& out_size) const {
    CTK_CHECK(rng.size() == size_t(num_engines_), ValueError, who_, ": ", rng.size(),
              " random engines given for ", num_engines_, " random transforms");
    cv::Mat m = image;
    for (const Step& s : steps_) {
        switch (s.kind) {
            case Step::Kind::crop:
                apply_crop(s, m, copy_id, rng[size_t(s.engine)]);
                break;
            case Step::Kind::scale:
                apply_scale(s, m);
                break;
            case Step::Kind::mean:
                apply_mean(s, m);
                break;
            case Step::Kind::color:
                apply_color(s, m, rng[size_t(s.engine)]);
                break;
        }
    }
    // Transpose: interleaved HWC (OpenCV's B, G, R) into planes, as floats.
    if (m.depth() != CV_8U && m.depth() != CV_32F) m.convertTo(m, CV_32F);
    out_size = ImageSize{m.rows, m.cols, m.channels()};
    const size_t plane = size_t(m.rows) * size_t(m.cols);
    const int channels = m.channels();
    out.resize(plane * size_t(channels));
    for (int r = 0; r < m.rows; ++r) {
        const size_t row = size_t(r) * size_t(m.cols);
        if (m.depth() == CV_8U) {
            const uint8_t* src = m.ptr<uint8_t>(r);
            for (int x = 0; x < m.cols; ++x)
                for (int ch = 0; ch < channels; ++ch)
                    out[size_t(ch) * plane + row + size_t(x)] = float(src[x * channels + ch]);
        } else {
            const float* src = m.ptr<float>(r);
            for (int x = 0; x < m.cols; ++x)
                for (int ch = 0; ch < channels; ++ch)
                    out[size_t(ch) * plane + row + size_t(x)] = src[x * channels + ch];
        }
    }
}

namespace {
bool starts_with(const std::vector<uint8_t>& b, std::initializer_list<uint8_t> sig, size_t at = 0) {
    if (b.size() < at + sig.size()) return false;
    return std::equal(sig.begin(), sig.end(), b.begin() + static_cast<std::ptrdiff_t>(at));
}
}  // namespace

bool is_decodable_image_format(const std::vector<uint8_t>& b) {
    return starts_with(b, {0xFF, 0xD8, 0xFF}) ||                                                 // JPEG
           starts_with(b, {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A}) ||                      // PNG
           starts_with(b, {'B', 'M'}) ||                                                         // BMP
           starts_with(b, {'I', 'I', 0x2A, 0x00}) || starts_with(b, {'M', 'M', 0x00, 0x2A}) ||   // TIFF
           (starts_with(b, {'R', 'I', 'F', 'F'}) && starts_with(b, {'W', 'E', 'B', 'P'}, 8)) ||  // WebP
           (b.size() >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7') ||  // PBM/PGM/PPM/PAM
           starts_with(b, {0x59, 0xA6, 0x6A, 0x95}) ||                      // Sun raster
           starts_with(b, {0x00, 0x00, 0x00, 0x0C, 'j', 'P', ' ', ' '}) ||  // JPEG 2000 (JP2)
           starts_with(b, {0xFF, 0x4F, 0xFF, 0x51}) ||                      // JPEG 2000 codestream
           starts_with(b, {0x76, 0x2F, 0x31, 0x01}) ||                      // OpenEXR
           starts_with(b, {'#', '?'});                                      // Radiance HDR
}

cv::Mat decode_image(const std::vector<uint8_t>& bytes, bool grayscale) {
    // Only the image formats listed: OpenCV hands any other bytes to every codec it was built with, and
    // Debian's links GDCM, whose DICOM reader aborts the process on a malformed file.
    if (bytes.empty() || !is_decodable_image_format(bytes)) return {};
    try {
        const cv::Mat raw(1, static_cast<int>(bytes.size()), CV_8U, const_cast<uint8_t*>(bytes.data()));
        return cv::imdecode(raw, grayscale ? cv::IMREAD_GRAYSCALE : cv::IMREAD_COLOR);
    } catch (const cv::Exception&) {
        return {};
    }
}

}  // namespace ctk::detail
