// The image reader on small lossless PNGs each test writes: map files (2 and 3 columns, "...", zip
// members, errors naming the line and the image), the output layout (BGR planes, CHW, float 0..255),
// every crop, scale and mean mode and the colour transform against values worked out here, CNTK's
// engines keyed by minibatch position, grayscale, multiview10, skipped images, Base64 == files, the
// reader's threads giving the minibatches a single thread gives, and checkpoints restoring the draws.
#include <gtest/gtest.h>
#include <zip.h>

#include <boost/random/bernoulli_distribution.hpp>
#include <boost/random/uniform_int_distribution.hpp>
#include <boost/random/uniform_real_distribution.hpp>
#include <opencv2/imgcodecs.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include "ctk/io/image.h"
#include "io/image_transforms.h"
#include "io/io_test_util.h"

namespace ctk {
namespace {

using test::error_of;
using test::TempDir;

// A rows x cols BGR image whose pixel (y, x) is (b0 + y * cols + x, 100 + y, 200 + x) modulo 256.
cv::Mat pattern(int rows, int cols, int b0 = 0) {
    cv::Mat m(rows, cols, CV_8UC3);
    for (int y = 0; y < rows; ++y)
        for (int x = 0; x < cols; ++x)
            m.at<cv::Vec3b>(y, x) =
                cv::Vec3b(uint8_t((b0 + y * cols + x) % 256), uint8_t(100 + y), uint8_t(200 + x));
    return m;
}

void write_png(const std::string& path, const cv::Mat& m) {
    ASSERT_TRUE(cv::imwrite(path, m)) << path;
}

std::string write_map(const TempDir& dir, const std::vector<std::pair<std::string, int>>& lines,
                      const std::string& name = "map.txt") {
    std::string text;
    for (const auto& [path, label] : lines) text += path + "\t" + std::to_string(label) + "\n";
    test::write_file(dir.file(name), text);
    return dir.file(name);
}

MinibatchSourceConfig source(DeserializerPtr d, bool randomize = false, bool threads = false) {
    MinibatchSourceConfig c;
    c.deserializers = {std::move(d)};
    c.randomize = randomize;
    c.multithreaded_deserializer = threads;
    c.num_reader_threads = 2;
    return c;
}

// The minibatch's image stream as floats [n, C, H, W].
Tensor images_of(std::unordered_map<std::string, MinibatchData>& mb, const std::string& stream = "features") {
    return mb.at(stream).as_batch(stream).data().contiguous();
}

// True when both hold the same shape and float values.
bool same(const Tensor& a, const Tensor& b) {
    if (a.shape().dims() != b.shape().dims()) return false;
    const Tensor ca = a.to(DataType::f32).contiguous(), cb = b.to(DataType::f32).contiguous();
    return std::equal(ca.data<float>(), ca.data<float>() + ca.numel(), cb.data<float>());
}

float at(const Tensor& t, int64_t n, int64_t c, int64_t y, int64_t x) {
    return t.data<float>()[((n * t.dim(1) + c) * t.dim(2) + y) * t.dim(3) + x];
}

ImageDeserializerConfig config_for(const std::string& map, std::vector<ImageTransform> transforms,
                                   int64_t classes = 3) {
    ImageDeserializerConfig c;
    c.map_file = map;
    c.transforms = std::move(transforms);
    c.num_classes = classes;
    return c;
}

TEST(ImageDeserializer, BgrPlanesInChwOrderAndOneHotLabels) {
    TempDir dir;
    write_png(dir.file("a.png"), pattern(4, 5));
    write_png(dir.file("b.png"), pattern(4, 5, 7));
    const std::string map = write_map(dir, {{dir.file("a.png"), 2}, {dir.file("b.png"), 0}});
    MinibatchSource src(source(image_deserializer(config_for(map, {}))));
    EXPECT_EQ(src.stream_info("features").sample_shape, (Dims{3, 4, 5}));
    EXPECT_TRUE(src.stream_info("labels").is_sparse);
    auto mb = src.next_minibatch(2);
    const Tensor t = images_of(mb);
    ASSERT_EQ(t.shape().dims(), (Dims{2, 3, 4, 5}));
    for (int n = 0; n < 2; ++n)
        for (int y = 0; y < 4; ++y)
            for (int x = 0; x < 5; ++x) {
                EXPECT_EQ(at(t, n, 0, y, x), float((n * 7 + y * 5 + x) % 256));  // blue first
                EXPECT_EQ(at(t, n, 1, y, x), float(100 + y));
                EXPECT_EQ(at(t, n, 2, y, x), float(200 + x));
            }
    const Tensor labels = mb.at("labels").as_batch().data().contiguous();
    EXPECT_EQ(labels.data<float>()[2], 1.0f);
    EXPECT_EQ(labels.data<float>()[3], 1.0f);
    EXPECT_EQ(std::count(labels.data<float>(), labels.data<float>() + labels.numel(), 1.0f), 2);
}

TEST(ImageDeserializer, MapFileColumnsDotsAndZipMembers) {
    TempDir dir;
    std::filesystem::create_directories(dir.file("img"));
    write_png(dir.file("img/a.png"), pattern(2, 2));
    // A zip holding b.png, written with libzip.
    std::vector<uchar> png;
    cv::imencode(".png", pattern(2, 2, 50), png);
    int err = 0;
    zip_t* z = zip_open(dir.file("pack.zip").c_str(), ZIP_CREATE | ZIP_TRUNCATE, &err);
    ASSERT_NE(z, nullptr);
    zip_source_t* s = zip_source_buffer(z, png.data(), png.size(), 0);
    ASSERT_GE(zip_file_add(z, "inner/b.png", s, ZIP_FL_OVERWRITE), 0);
    ASSERT_EQ(zip_close(z), 0);
    // Three columns (a key first), "..." for the map file's folder, and a zip member.
    test::write_file(dir.file("map.txt"),
                     "k1\t.../img/a.png\t1\nk2\t" + dir.file("pack.zip") + "@/inner/b.png\t2\n");
    MinibatchSource src(source(image_deserializer(config_for(dir.file("map.txt"), {}))));
    auto mb = src.next_minibatch(2);
    const Tensor t = images_of(mb);
    EXPECT_EQ(at(t, 0, 0, 1, 1), 3.0f);
    EXPECT_EQ(at(t, 1, 0, 1, 1), 53.0f);
}

TEST(ImageDeserializer, MapFileErrorsNameTheLineAndTheImage) {
    TempDir dir;
    write_png(dir.file("a.png"), pattern(2, 2));
    test::write_file(dir.file("cols.txt"), dir.file("a.png") + "\t1\n" + dir.file("a.png") + "\n");
    EXPECT_NE(error_of<IOError>([&] {
                  image_deserializer(config_for(dir.file("cols.txt"), {}));
              }).find("line 2 of map file '" + dir.file("cols.txt") + "'"),
              std::string::npos);
    test::write_file(dir.file("label.txt"), dir.file("a.png") + "\tx\n");
    EXPECT_NE(error_of<IOError>([&] {
                  image_deserializer(config_for(dir.file("label.txt"), {}));
              }).find("cannot parse the label 'x'"),
              std::string::npos);
    test::write_file(dir.file("big.txt"), dir.file("a.png") + "\t3\n");
    EXPECT_NE(error_of<IOError>([&] {
                  image_deserializer(config_for(dir.file("big.txt"), {}));
              }).find("class id 3 is not below the label dimension 3"),
              std::string::npos);
    // A missing image is found when its chunk is read: the error names the image, the line and the map.
    const std::string map = write_map(dir, {{dir.file("a.png"), 0}, {dir.file("gone.png"), 1}});
    MinibatchSource src(source(image_deserializer(config_for(map, {}))));
    const std::string e = error_of<IOError>([&] { src.next_minibatch(2); });
    EXPECT_NE(e.find("image '" + dir.file("gone.png") + "' on line 2 of map file '" + map + "'"),
              std::string::npos)
        << e;
    // A corrupt image likewise.
    test::write_file(dir.file("bad.png"), "not a png");
    const std::string map2 = write_map(dir, {{dir.file("a.png"), 0}, {dir.file("bad.png"), 1}}, "map2.txt");
    MinibatchSource src2(source(image_deserializer(config_for(map2, {}))));
    EXPECT_NE(error_of<IOError>([&] { src2.next_minibatch(2); }).find("bad.png"), std::string::npos);
}

TEST(ImageDeserializer, OnlyKnownImageSignaturesReachTheDecoders) {
    // A file with DICOM's magic at byte 128 (a fuzz finding): OpenCV would pass it to GDCM, whose reader
    // aborts the process on malformed data. It is refused as not an image, naming the file.
    TempDir dir;
    write_png(dir.file("a.png"), pattern(2, 2));
    std::string dicom(128, '\0');
    dicom += "DICM";
    dicom += std::string(16, '\x02');
    test::write_file(dir.file("scan.dcm"), dicom);
    const std::string map = write_map(dir, {{dir.file("a.png"), 0}, {dir.file("scan.dcm"), 1}});
    MinibatchSource src(source(image_deserializer(config_for(map, {}))));
    const std::string e = error_of<IOError>([&] { src.next_minibatch(2); });
    EXPECT_NE(e.find("scan.dcm"), std::string::npos) << e;
    EXPECT_NE(e.find("not a JPEG, PNG"), std::string::npos) << e;
    for (const std::string& sig :
         {std::string("\xFF\xD8\xFF"), std::string("\x89PNG\r\n\x1A\n"), std::string("BM"),
          std::string("II*\0", 4), std::string("RIFF\0\0\0\0WEBP", 12), std::string("P6")})
        EXPECT_TRUE(detail::is_decodable_image_format(std::vector<uint8_t>(sig.begin(), sig.end()))) << sig;
    EXPECT_FALSE(detail::is_decodable_image_format(std::vector<uint8_t>(dicom.begin(), dicom.end())));
    EXPECT_FALSE(detail::is_decodable_image_format({}));
}

TEST(ImageDeserializer, MaxErrorsSkipsUnreadableImagesAndCountsThem) {
    TempDir dir;
    write_png(dir.file("a.png"), pattern(2, 2));
    test::write_file(dir.file("bad.png"), "not a png");
    const std::string map =
        write_map(dir, {{dir.file("a.png"), 0}, {dir.file("bad.png"), 1}, {dir.file("a.png"), 2}});
    ImageDeserializerConfig c = config_for(map, {});
    c.max_errors = 1;
    MinibatchSourceConfig sc = source(image_deserializer(c));
    sc.max_sweeps = 1;
    MinibatchSource src(sc);
    auto mb = src.next_minibatch(3);
    EXPECT_EQ(mb.at("features").num_sequences, 2);
    EXPECT_TRUE(src.next_minibatch(3).empty());
}

TEST(ImageDeserializer, CenterCropWithSizeAndRatio) {
    TempDir dir;
    write_png(dir.file("a.png"), pattern(6, 8));
    const std::string map = write_map(dir, {{dir.file("a.png"), 0}});
    ImageCrop crop;
    crop.crop_width = 4;
    crop.crop_height = 2;
    MinibatchSource sized(source(image_deserializer(config_for(map, {crop}))));
    auto mb = sized.next_minibatch(1);
    Tensor t = images_of(mb);
    ASSERT_EQ(t.shape().dims(), (Dims{1, 3, 2, 4}));
    // window at ((8-4)/2, (6-2)/2) = (2, 2)
    EXPECT_EQ(at(t, 0, 0, 0, 0), float(2 * 8 + 2));
    EXPECT_EQ(at(t, 0, 2, 1, 3), float(200 + 5));
    // side ratio 0.5 of min(6, 8) = 3: a 3x3 window at ((8-3)/2, (6-3)/2) = (2, 1), no flip for center.
    ImageCrop side;
    side.side_ratio_min = side.side_ratio_max = 0.5;
    MinibatchSource ratio(source(image_deserializer(config_for(map, {side}))));
    mb = ratio.next_minibatch(1);
    t = images_of(mb);
    ASSERT_EQ(t.shape().dims(), (Dims{1, 3, 3, 3}));
    EXPECT_EQ(at(t, 0, 0, 0, 0), float(1 * 8 + 2));
    EXPECT_EQ(at(t, 0, 1, 2, 0), float(100 + 3));
}

// The crop CNTK drew for minibatch position j: mt19937(seed + j), a side ratio from U[lo, hi), offsets
// from uniform ints, then the flip coin (Boost.Random's distributions, as CNTK used).
struct ExpectedCrop {
    int x, y, size;
    bool flip;
};
ExpectedCrop expected_random_side(std::mt19937& rng, int rows, int cols, double lo, double hi) {
    const double ratio = boost::random::uniform_real_distribution<double>(lo, hi)(rng);
    const int size = int(std::round(std::min(rows, cols) * ratio));
    const int x = boost::random::uniform_int_distribution<int>(0, cols - size)(rng);
    const int y = boost::random::uniform_int_distribution<int>(0, rows - size)(rng);
    const bool flip = boost::random::bernoulli_distribution<>()(rng);
    return {x, y, size, flip};
}

TEST(ImageDeserializer, RandomSideCropDrawsAsCntkPerMinibatchPosition) {
    TempDir dir;
    write_png(dir.file("a.png"), pattern(20, 20));
    const std::string map =
        write_map(dir, {{dir.file("a.png"), 0}, {dir.file("a.png"), 1}, {dir.file("a.png"), 2}});
    ImageCrop crop;
    crop.crop_type = "RandomSide";
    crop.side_ratio_min = 0.3;
    crop.side_ratio_max = 0.9;
    crop.jitter_type = "uniratio";
    ImageScale scale;  // nearest to 4x4 after the crop, so every output pixel is an input pixel
    scale.width = scale.height = 4;
    scale.interpolations = "nearest";
    MinibatchSource src(source(image_deserializer(config_for(map, {crop, scale}))));
    std::vector<std::mt19937> engines{std::mt19937(0), std::mt19937(1), std::mt19937(2)};
    for (int step = 0; step < 4; ++step) {  // the engines live on across minibatches
        auto mb = src.next_minibatch(3);
        const Tensor t = images_of(mb);
        for (int j = 0; j < 3; ++j) {
            const ExpectedCrop e = expected_random_side(engines[size_t(j)], 20, 20, 0.3, 0.9);
            // Output pixel (0, 0) is input pixel (y, x) of the window (or its right edge when flipped).
            const int x0 = e.flip ? e.x + e.size - 1 : e.x;
            EXPECT_EQ(at(t, j, 0, 0, 0), float((e.y * 20 + x0) % 256))
                << "step " << step << " position " << j;
            EXPECT_EQ(at(t, j, 1, 0, 0), float(100 + e.y));
            EXPECT_EQ(at(t, j, 2, 0, 0), float(200 + x0));
        }
    }
}

TEST(ImageDeserializer, SameEnginesForTheSamePositionInTwoSources) {
    // CNTK's test_crop_dimensionality: a scale then a crop, and the crop alone on a pre-scaled copy,
    // draw the same window at the same minibatch position.
    TempDir dir;
    write_png(dir.file("a.png"), pattern(20, 40));
    const std::string map = write_map(dir, {{dir.file("a.png"), 0}});
    ImageCrop crop;
    crop.crop_type = "randomside";
    crop.crop_width = 20;
    crop.crop_height = 10;
    crop.side_ratio_min = 0.2;
    crop.side_ratio_max = 0.5;
    crop.jitter_type = "uniratio";
    ImageScale scale;
    scale.width = 40;
    scale.height = 20;
    MinibatchSource a(source(image_deserializer(config_for(map, {scale, crop}))));
    MinibatchSource b(source(image_deserializer(config_for(map, {crop}))));
    auto ma = a.next_minibatch(1), mb = b.next_minibatch(1);
    const Tensor ta = images_of(ma), tb = images_of(mb);
    ASSERT_EQ(ta.shape().dims(), (Dims{1, 3, 10, 20}));
    EXPECT_TRUE(same(ta, tb));
}

TEST(ImageDeserializer, ScaleModes) {
    TempDir dir;
    cv::Mat m(4, 4, CV_8UC3);
    for (int y = 0; y < 4; ++y)
        for (int x = 0; x < 4; ++x)
            m.at<cv::Vec3b>(y, x) = cv::Vec3b(uint8_t(20 * (2 * y + x)), 8, uint8_t(2 * x));
    write_png(dir.file("sq.png"), m);
    const std::string map = write_map(dir, {{dir.file("sq.png"), 0}});
    // fill, linear, halving: each output pixel is the mean of a 2x2 block (OpenCV's sampling at the
    // block's centre), integers here.
    ImageScale half;
    half.width = half.height = 2;
    MinibatchSource fill(source(image_deserializer(config_for(map, {half}))));
    auto mb = fill.next_minibatch(1);
    Tensor t = images_of(mb);
    for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 2; ++x)
            EXPECT_EQ(at(t, 0, 0, y, x), float(20 * (2 * (2 * y) + 2 * x) + 20 * 1 + 10)) << y << x;
    // pad: the longer side to 2 (the image is square, so 2x2), centred in 2 x 4 with pad value 9 on
    // the first channel only (CNTK passed one number; OpenCV reads it as (9, 0, 0)).
    ImageScale pad;
    pad.width = 4;
    pad.height = 2;
    pad.scale_mode = "pad";
    pad.pad_value = 9;
    pad.interpolations = "nearest";
    MinibatchSource padded(source(image_deserializer(config_for(map, {pad}))));
    mb = padded.next_minibatch(1);
    t = images_of(mb);
    ASSERT_EQ(t.shape().dims(), (Dims{1, 3, 2, 4}));
    EXPECT_EQ(at(t, 0, 0, 0, 0), 9.0f);
    EXPECT_EQ(at(t, 0, 1, 0, 0), 0.0f);
    EXPECT_EQ(at(t, 0, 2, 1, 3), 0.0f);
    EXPECT_EQ(at(t, 0, 1, 0, 1), 8.0f);  // the image itself at columns 1..2
    // crop: the shorter side to the target, the centre kept: 4x4 -> 4x4 then the centre 2 x 4.
    // crop: the shorter side (either, for a square) to the target, the centre kept: the 4x4 image
    // stays 4x4 and the 2 x 4 window starts at column 1.
    ImageScale crop;
    crop.width = 2;
    crop.height = 4;
    crop.scale_mode = "crop";
    crop.interpolations = "nearest";
    MinibatchSource cropped(source(image_deserializer(config_for(map, {crop}))));
    mb = cropped.next_minibatch(1);
    t = images_of(mb);
    ASSERT_EQ(t.shape().dims(), (Dims{1, 3, 4, 2}));
    EXPECT_EQ(at(t, 0, 0, 0, 0), 20.0f);
    EXPECT_EQ(at(t, 0, 0, 3, 1), float(20 * (6 + 2)));
    EXPECT_NE(error_of<ValueError>([&] {
                  ImageScale bad;
                  bad.width = bad.height = 2;
                  bad.scale_mode = "Fill";
                  image_deserializer(config_for(map, {bad}));
              }).find("fill, crop or pad"),
              std::string::npos);
}

TEST(ImageDeserializer, MeanFileIsReadAsInterleavedChannelsAsCntkDid) {
    TempDir dir;
    write_png(dir.file("a.png"), pattern(2, 2));
    // 2 x 2 x 3 values 0..11: CNTK reads them as rows of interleaved channels, so pixel (y, x), channel
    // c gets the value (y * 2 + x) * 3 + c, whatever order the file's writer meant.
    std::string values;
    for (int i = 0; i < 12; ++i) values += std::to_string(i) + ". ";
    test::write_file(
        dir.file("mean.xml"),
        "<?xml version=\"1.0\" ?>\n<opencv_storage>\n<Channel>3</Channel>\n<Row>2</Row>\n<Col>2</Col>\n"
        "<MeanImg type_id=\"opencv-matrix\">\n<rows>1</rows>\n<cols>12</cols>\n<dt>f</dt>\n<data>" +
            values + "</data></MeanImg>\n</opencv_storage>\n");
    const std::string map = write_map(dir, {{dir.file("a.png"), 0}});
    MinibatchSource src(source(image_deserializer(config_for(map, {ImageMean{dir.file("mean.xml")}}))));
    auto mb = src.next_minibatch(1);
    const Tensor t = images_of(mb);
    const cv::Mat p = pattern(2, 2);
    for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 2; ++x)
            for (int c = 0; c < 3; ++c)
                EXPECT_EQ(at(t, 0, c, y, x), float(p.at<cv::Vec3b>(y, x)[c]) - float((y * 2 + x) * 3 + c));
    test::write_file(
        dir.file("short.xml"),
        "<?xml version=\"1.0\" ?>\n<opencv_storage>\n<Channel>3</Channel>\n<Row>2</Row>\n<Col>3</Col>\n"
        "<MeanImg type_id=\"opencv-matrix\">\n<rows>1</rows>\n<cols>12</cols>\n<dt>f</dt>\n<data>" +
            values + "</data></MeanImg>\n</opencv_storage>\n");
    EXPECT_NE(error_of<IOError>([&] {
                  image_deserializer(config_for(map, {ImageMean{dir.file("short.xml")}}));
              }).find("invalid data in mean file"),
              std::string::npos);
}

TEST(ImageDeserializer, BrightnessAndContrastDrawAsCntk) {
    TempDir dir;
    write_png(dir.file("a.png"), pattern(3, 3));
    const std::string map = write_map(dir, {{dir.file("a.png"), 0}});
    ImageColor color;
    color.brightness_radius = 0.3;
    color.contrast_radius = 0.2;
    MinibatchSource src(source(image_deserializer(config_for(map, {color}))));
    auto mb = src.next_minibatch(1);
    const Tensor t = images_of(mb);
    const cv::Mat p = pattern(3, 3);
    double total = 0;
    for (int i = 0; i < 9; ++i)
        for (int c = 0; c < 3; ++c) total += p.at<cv::Vec3b>(i / 3, i % 3)[c];
    std::mt19937 rng(0);
    const float beta = float(boost::random::uniform_real_distribution<double>(-0.3, 0.3)(rng) * total / 27.0);
    const float alpha = float(1 + boost::random::uniform_real_distribution<double>(-0.2, 0.2)(rng));
    for (int y = 0; y < 3; ++y)
        for (int x = 0; x < 3; ++x)
            for (int c = 0; c < 3; ++c)
                EXPECT_FLOAT_EQ(
                    at(t, 0, c, y, x),
                    std::min(std::max(float(p.at<cv::Vec3b>(y, x)[c]) * alpha + beta, 0.0f), 255.0f));
}

TEST(ImageDeserializer, GrayscaleAndMultiView) {
    TempDir dir;
    cv::Mat gray(4, 4, CV_8UC1);
    for (int i = 0; i < 16; ++i) gray.at<uint8_t>(i / 4, i % 4) = uint8_t(10 * i);
    write_png(dir.file("g.png"), gray);
    const std::string map = write_map(dir, {{dir.file("g.png"), 0}});
    ImageDeserializerConfig c = config_for(map, {});
    c.grayscale = true;
    MinibatchSource g(source(image_deserializer(c)));
    EXPECT_EQ(g.stream_info("features").sample_shape, (Dims{1, 4, 4}));
    // multiview10: ten copies per image: four corners and the centre, then the same flipped.
    ImageCrop crop;
    crop.crop_type = "multiview10";
    crop.crop_width = crop.crop_height = 2;
    c.transforms = {crop};
    c.multi_view_crop = true;
    MinibatchSource mv(source(image_deserializer(c)));
    auto mb = mv.next_minibatch(10);
    const Tensor t = images_of(mb);
    ASSERT_EQ(t.dim(0), 10);
    const float top_left[10] = {0, 20, 80, 100, 50, 10, 30, 90, 110, 60};  // pixel (0, 0) of each view
    for (int v = 0; v < 10; ++v) EXPECT_EQ(at(t, v, 0, 0, 0), top_left[v]) << "view " << v;
}

TEST(ImageDeserializer, Base64GivesWhatTheFilesGive) {
    TempDir dir;
    std::string b64_text;
    std::vector<std::pair<std::string, int>> lines;
    for (int i = 0; i < 5; ++i) {
        const std::string path = dir.file(std::to_string(i) + ".png");
        write_png(path, pattern(6, 5, i * 11));
        lines.push_back({path, i % 3});
        std::vector<uchar> png;
        cv::imencode(".png", pattern(6, 5, i * 11), png);
        static const char* a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        std::string enc;
        for (size_t k = 0; k < png.size(); k += 3) {
            const uint32_t v = (uint32_t(png[k]) << 16) |
                               (k + 1 < png.size() ? uint32_t(png[k + 1]) << 8 : 0) |
                               (k + 2 < png.size() ? uint32_t(png[k + 2]) : 0);
            enc += a[(v >> 18) & 63];
            enc += a[(v >> 12) & 63];
            enc += k + 1 < png.size() ? a[(v >> 6) & 63] : '=';
            enc += k + 2 < png.size() ? a[v & 63] : '=';
        }
        b64_text += std::to_string(i % 3) + "\t" + enc + "\n";
    }
    test::write_file(dir.file("b64.txt"), b64_text);
    ImageScale scale;
    scale.width = 7;
    scale.height = 5;
    const std::string map = write_map(dir, lines);
    MinibatchSource files(source(image_deserializer(config_for(map, {scale}))));
    MinibatchSource b64(source(base64_image_deserializer(config_for(dir.file("b64.txt"), {scale}))));
    auto a = files.next_minibatch(5), b = b64.next_minibatch(5);
    EXPECT_TRUE(same(images_of(a), images_of(b)));
    EXPECT_TRUE(same(a.at("labels").as_batch().data(), b.at("labels").as_batch().data()));
    test::write_file(dir.file("bad64.txt"), "1\tiVBOR!!\n");
    EXPECT_NE(error_of<IOError>([&] {
                  base64_image_deserializer(config_for(dir.file("bad64.txt"), {}));
              }).find("line 1 of '" + dir.file("bad64.txt") + "'"),
              std::string::npos);
    // The lines are read from the file when their chunk is read (the file is not held in memory): a file
    // cut short after indexing is an error naming it, not stale data.
    test::write_file(dir.file("cut64.txt"), b64_text);
    auto cut = base64_image_deserializer(config_for(dir.file("cut64.txt"), {scale}));
    test::write_file(dir.file("cut64.txt"), b64_text.substr(0, 40));
    const std::string msg = error_of<IOError>([&] { cut->read_chunk(0); });
    EXPECT_NE(msg.find("cut64.txt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("got shorter"), std::string::npos) << msg;
}

// A file the Base64 reader refuses while it is being made (no lines, a bad first line) leaves no file
// descriptor open: a fuzz run of such files ran out of descriptors after about 46,000 of them.
TEST(ImageDeserializer, RefusedBase64FilesCloseTheirDescriptors) {
    TempDir dir;
    test::write_file(dir.file("empty64.txt"), "");
    test::write_file(dir.file("bad64.txt"), "1\tiVBOR!!\n");
    auto open_descriptors = [] {
        return std::distance(std::filesystem::directory_iterator("/proc/self/fd"),
                             std::filesystem::directory_iterator());
    };
    const auto before = open_descriptors();
    for (int i = 0; i < 200; ++i)
        for (const char* name : {"empty64.txt", "bad64.txt"})
            EXPECT_THROW(base64_image_deserializer(config_for(dir.file(name), {})), IOError);
    EXPECT_EQ(open_descriptors(), before);
}

TEST(ImageDeserializer, JoinedByKeyWithDeserializersOfOtherChunking) {
    // CNTK's composition: an image map file (one chunk an image; keys are its first column, or its line
    // numbers) beside a CTF file of one chunk (keys are its sequence ids, or ordinals): the same key is
    // the same sample, whatever the order of either file.
    TempDir dir;
    std::string map, ctf;
    for (int i = 0; i < 6; ++i) {
        const std::string path = dir.file(std::to_string(i) + ".png");
        write_png(path, pattern(2, 2, 10 * i));
        map += std::to_string(100 + i) + "\t" + path + "\t" + std::to_string(i % 3) + "\n";
    }
    for (int i = 5; i >= 0; --i) ctf += std::to_string(100 + i) + " |v " + std::to_string(10 * i) + "\n";
    test::write_file(dir.file("map.txt"), map);
    test::write_file(dir.file("v.ctf"), ctf);
    for (bool image_first : {true, false}) {
        SCOPED_TRACE(image_first);
        auto image = image_deserializer(config_for(dir.file("map.txt"), {}));
        auto text = ctf_deserializer(dir.file("v.ctf"), {StreamDef{"v", "v", {1}, false, false}});
        MinibatchSourceConfig c = source(image, true, true);
        c.deserializers = image_first ? std::vector<DeserializerPtr>{image, text}
                                      : std::vector<DeserializerPtr>{text, image};
        c.max_sweeps = 1;
        MinibatchSource src(c);
        int seen = 0;
        for (auto mb = src.next_minibatch(4); !mb.empty(); mb = src.next_minibatch(4)) {
            const Tensor t = images_of(mb), v = mb.at("v").as_batch().data().contiguous();
            for (int64_t n = 0; n < t.dim(0); ++n, ++seen) EXPECT_EQ(at(t, n, 0, 0, 0), v.data<float>()[n]);
        }
        EXPECT_EQ(seen, 6);
    }
    // A key the other file lacks drops that sample; deserializers without keys cannot be joined.
    test::write_file(dir.file("short.ctf"), "100 |v 0\n101 |v 10\n");
    MinibatchSourceConfig c = source(image_deserializer(config_for(dir.file("map.txt"), {})));
    c.deserializers.push_back(
        ctf_deserializer(dir.file("short.ctf"), {StreamDef{"v", "v", {1}, false, false}}));
    c.max_sweeps = 1;
    MinibatchSource src(c);
    EXPECT_EQ(src.next_minibatch(10).at("v").num_sequences, 2);
}

// Twelve 12x12 images with a random crop, scale and colour: the minibatches of a source read on the
// reader's threads (the next minibatch prepared ahead) equal those of one thread, also when the
// request changes and a prepared minibatch is dropped; a checkpoint restores the draws.
class ImagePipelineTest : public ::testing::Test {
protected:
    void SetUp() override {
        std::vector<std::pair<std::string, int>> lines;
        for (int i = 0; i < 12; ++i) {
            const std::string path = dir.file(std::to_string(i) + ".png");
            write_png(path, pattern(12, 12, i * 13));
            lines.push_back({path, i % 3});
        }
        map = write_map(dir, lines);
    }
    MinibatchSourceConfig make(bool threads) {
        ImageCrop crop;
        crop.crop_type = "randomarea";
        crop.area_ratio_min = 0.3;
        crop.area_ratio_max = 1.0;
        crop.aspect_ratio_min = 0.75;
        crop.aspect_ratio_max = 1.25;
        crop.jitter_type = "uniratio";
        ImageColor color;
        color.brightness_radius = color.contrast_radius = color.saturation_radius = 0.4;
        ImageScale scale;
        scale.width = scale.height = 6;
        MinibatchSourceConfig c =
            source(image_deserializer(config_for(map, {crop, color, scale})), true, threads);
        c.randomization_seed = 5;
        return c;
    }
    TempDir dir;
    std::string map;
};

TEST_F(ImagePipelineTest, ThreadsChangeNothing) {
    MinibatchSource one(make(false)), many(make(true));
    const int64_t sizes[] = {5, 5, 3, 5, 7, 7, 2, 5};
    for (int64_t size : sizes) {
        auto a = one.next_minibatch(size), b = many.next_minibatch(size);
        ASSERT_TRUE(same(images_of(a), images_of(b))) << "size " << size;
    }
}

TEST_F(ImagePipelineTest, CheckpointRestoresPositionAndDraws) {
    MinibatchSource a(make(true));
    for (int i = 0; i < 3; ++i) a.next_minibatch(5);
    const Dictionary state = a.checkpoint_state();
    auto expected = a.next_minibatch(5);
    MinibatchSource b(make(true));
    b.restore_from_checkpoint(state);
    auto got = b.next_minibatch(5);
    EXPECT_TRUE(same(images_of(expected), images_of(got)));
}

TEST(ImageDeserializer, AWorkerDecodesOnlyItsOwnShare) {
    // Two partitions of one global minibatch: images 0 and 2 are worker 0's, 1 and 3 worker 1's. Image 1
    // is not an image: only worker 1, which decodes it, fails, naming it; worker 0 never decodes it.
    TempDir dir;
    std::vector<std::pair<std::string, int>> lines;
    for (int i = 0; i < 4; ++i) {
        const std::string path = dir.file(std::to_string(i) + ".png");
        if (i == 1) {
            test::write_file(path, "not a png");
        } else {
            write_png(path, pattern(3, 4, i));
        }
        lines.push_back({path, i % 3});
    }
    ImageScale scale;
    scale.width = 4;
    scale.height = 3;
    const std::string map = write_map(dir, lines);
    for (bool threads : {false, true}) {
        MinibatchSource zero(source(image_deserializer(config_for(map, {scale})), false, threads));
        auto mb = zero.next_minibatch(4, 2, 0);
        EXPECT_EQ(mb.at("features").num_sequences, 2);
        MinibatchSource one(source(image_deserializer(config_for(map, {scale})), false, threads));
        const std::string msg = error_of<IOError>([&] { one.next_minibatch(4, 2, 1); });
        EXPECT_NE(msg.find("cannot decode image '" + dir.file("1.png") + "' on line 2"), std::string::npos)
            << msg;
    }
}

}  // namespace
}  // namespace ctk
