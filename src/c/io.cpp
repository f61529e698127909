// The C ABI's readers: CTF, CBF, IDX and image deserializers, the MinibatchSource over them, and its
// minibatches.
#include <string>
#include <vector>
#include "c/handles.h"
#include "ctk/core/error.h"
#include "ctk/formats/model.h"
#include "ctk/io/cbf.h"

using namespace ctk;        // NOLINT(google-build-using-namespace): the C entry points below
using namespace ctk::capi;  // NOLINT(google-build-using-namespace)

namespace {

ctk_deserializer_t* new_deserializer(DeserializerPtr d) {
    auto* h = new ctk_deserializer;
    h->deserializer = std::move(d);
    return h;
}

// The C stream definitions, checked.
std::vector<StreamDef> stream_defs(const ctk_stream_def* streams, int64_t n) {
    required(streams, "streams");
    std::vector<StreamDef> defs;
    for (int64_t i = 0; i < n; ++i) {
        const ctk_stream_def& s = streams[i];
        const std::string what = "streams[" + std::to_string(i) + "].name";
        StreamDef def;
        def.name = required(s.name, what.c_str());
        def.field = s.field == nullptr ? def.name : std::string(s.field);
        CTK_CHECK(s.dim >= 1, ValueError, "stream '", def.name, "': dim ", s.dim, " must be at least 1");
        def.shape = {s.dim};
        def.is_sparse = s.is_sparse != 0;
        def.defines_mb_size = s.defines_mb_size != 0;
        defs.push_back(std::move(def));
    }
    return defs;
}

MinibatchSource& source_of(const ctk_minibatch_source_t* s) {
    return *handle(s, "source").source;
}
template <typename Make>
ctk_status make_transform(const char* function, ctk_image_transform_t** out, Make&& make) {
    return guarded(function, [&] {
        required(out, "out");
        ImageTransform transform = make();  // may throw: nothing allocated yet
        auto* h = new ctk_image_transform;
        h->transform = std::move(transform);
        *out = h;
    });
}

}  // namespace

extern "C" {

ctk_status ctk_ctf_deserializer(const char* path, const ctk_stream_def* streams, int64_t n,
                                ctk_deserializer_t** out) {
    return guarded(__func__, [&] {
        const std::string file = required(path, "path");
        required(out, "out");
        CTK_CHECK(n >= 1, ValueError, "a CTF deserializer needs at least one stream, not ", n);
        required(streams, "streams");
        const std::vector<StreamDef> defs = stream_defs(streams, n);
        *out = new_deserializer(ctf_deserializer(file, defs));
    });
}

ctk_status ctk_cbf_deserializer(const char* path, const ctk_stream_def* streams, int64_t n,
                                ctk_deserializer_t** out) {
    return guarded(__func__, [&] {
        const std::string file = required(path, "path");
        required(out, "out");
        CTK_CHECK(n >= 0, ValueError, "stream count ", n, " is negative");
        *out = new_deserializer(
            cbf_deserializer(file, n == 0 ? std::vector<StreamDef>{} : stream_defs(streams, n)));
    });
}

ctk_status ctk_idx_deserializer(const char* images_path, const char* labels_path, int64_t num_classes,
                                ctk_deserializer_t** out) {
    return guarded(__func__, [&] {
        const std::string images = required(images_path, "images_path");
        const std::string labels = required(labels_path, "labels_path");
        required(out, "out");
        *out = new_deserializer(mnist_idx_deserializer(images, labels, num_classes));
    });
}

ctk_status ctk_image_crop(const char* crop_type, int64_t width, int64_t height, double side_ratio_min,
                          double side_ratio_max, double area_ratio_min, double area_ratio_max,
                          double aspect_ratio_min, double aspect_ratio_max, const char* jitter_type,
                          int32_t hflip, uint32_t seed, ctk_image_transform_t** out) {
    return make_transform(__func__, out, [&] {
        ImageCrop c;
        c.crop_type = required(crop_type, "crop_type");
        CTK_CHECK(width >= 0 && height >= 0, ValueError, "crop size ", width, "x", height, " is negative");
        c.crop_width = width;
        c.crop_height = height;
        c.side_ratio_min = side_ratio_min;
        c.side_ratio_max = side_ratio_max;
        c.area_ratio_min = area_ratio_min;
        c.area_ratio_max = area_ratio_max;
        c.aspect_ratio_min = aspect_ratio_min;
        c.aspect_ratio_max = aspect_ratio_max;
        c.jitter_type = jitter_type == nullptr ? std::string("none") : std::string(jitter_type);
        CTK_CHECK(hflip >= -1 && hflip <= 1, ValueError, "hflip ", hflip, " is not -1, 0 or 1");
        if (hflip >= 0) c.hflip = hflip == 1;
        c.seed = seed;
        return ImageTransform(c);
    });
}

ctk_status ctk_image_scale(int64_t width, int64_t height, int64_t channels, const char* interpolations,
                           const char* scale_mode, int64_t pad_value, ctk_image_transform_t** out) {
    return make_transform(__func__, out, [&] {
        CTK_CHECK(width > 0 && height > 0 && (channels == 1 || channels == 3), ValueError, "scale to ", width,
                  "x", height, "x", channels, ": sizes must be positive and channels 1 or 3");
        ImageScale sc;
        sc.width = width;
        sc.height = height;
        sc.channels = channels;
        if (interpolations != nullptr) sc.interpolations = interpolations;
        if (scale_mode != nullptr) sc.scale_mode = scale_mode;
        sc.pad_value = pad_value;
        return ImageTransform(sc);
    });
}

ctk_status ctk_image_mean(const char* mean_file, ctk_image_transform_t** out) {
    return make_transform(__func__, out,
                          [&] { return ImageTransform(ImageMean{required(mean_file, "mean_file")}); });
}

ctk_status ctk_image_color(double brightness_radius, double contrast_radius, double saturation_radius,
                           uint32_t seed, ctk_image_transform_t** out) {
    return make_transform(__func__, out, [&] {
        ImageColor c;
        c.brightness_radius = brightness_radius;
        c.contrast_radius = contrast_radius;
        c.saturation_radius = saturation_radius;
        c.seed = seed;
        return ImageTransform(c);
    });
}

void ctk_image_transform_release(ctk_image_transform_t* t) {
    release(t);
}

ctk_status ctk_image_deserializer(const char* map_file, const char* label_stream, int64_t num_classes,
                                  const char* image_stream, const ctk_image_transform_t* const* transforms,
                                  int64_t n, int32_t grayscale, int32_t base64, ctk_deserializer_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        ImageDeserializerConfig c;
        c.map_file = required(map_file, "map_file");
        c.label_stream = required(label_stream, "label_stream");
        c.image_stream = required(image_stream, "image_stream");
        CTK_CHECK(num_classes >= 1, ValueError, "num_classes ", num_classes, " must be at least 1");
        c.num_classes = num_classes;
        CTK_CHECK(n >= 0, ValueError, "transform count ", n, " is negative");
        if (n > 0) required(transforms, "transforms");
        for (int64_t i = 0; i < n; ++i) {
            const std::string what = "transforms[" + std::to_string(i) + "]";
            c.transforms.push_back(handle(transforms[i], what.c_str()).transform);
        }
        c.grayscale = grayscale != 0;
        *out = new_deserializer(base64 != 0 ? base64_image_deserializer(c) : image_deserializer(c));
    });
}

void ctk_deserializer_release(ctk_deserializer_t* d) {
    release(d);
}

ctk_status ctk_source_config_default(ctk_source_config* config) {
    return guarded(__func__, [&] {
        ctk_source_config& c = *required(config, "config");
        const MinibatchSourceConfig d;
        c.max_samples = d.max_samples;
        c.max_sweeps = d.max_sweeps;
        c.randomize = d.randomize ? 1 : 0;
        c.randomization_window_in_chunks = d.randomization_window_in_chunks;
        c.randomization_window_in_samples = d.randomization_window_in_samples;
        c.randomization_seed = d.randomization_seed;
        c.num_reader_threads = d.num_reader_threads;
    });
}

ctk_status ctk_minibatch_source_create(const ctk_deserializer_t* const* deserializers, int64_t n,
                                       const ctk_source_config* config, ctk_minibatch_source_t** out) {
    return guarded(__func__, [&] {
        required(out, "out");
        CTK_CHECK(n >= 1, ValueError, "a minibatch source needs at least one deserializer, not ", n);
        required(deserializers, "deserializers");
        MinibatchSourceConfig c;
        for (int64_t i = 0; i < n; ++i) {
            const std::string what = "deserializers[" + std::to_string(i) + "]";
            c.deserializers.push_back(handle(deserializers[i], what.c_str()).deserializer);
        }
        if (config != nullptr) {
            CTK_CHECK(config->max_samples >= 0 && config->max_sweeps >= 0, ValueError,
                      "max_samples and max_sweeps must not be negative");
            c.max_samples = config->max_samples;
            c.max_sweeps = config->max_sweeps;
            c.randomize = config->randomize != 0;
            c.randomization_window_in_chunks = config->randomization_window_in_chunks;
            c.randomization_window_in_samples = config->randomization_window_in_samples;
            c.randomization_seed = config->randomization_seed;
            c.num_reader_threads = config->num_reader_threads;
        }
        auto source = std::make_unique<MinibatchSource>(std::move(c));
        auto* h = new ctk_minibatch_source;
        h->source = std::move(source);
        *out = h;
    });
}

void ctk_minibatch_source_release(ctk_minibatch_source_t* source) {
    release(source);
}

ctk_status ctk_minibatch_source_stream_count(const ctk_minibatch_source_t* source, int64_t* count) {
    return guarded(__func__, [&] {
        const auto n = static_cast<int64_t>(source_of(source).stream_infos().size());
        *required(count, "count") = n;
    });
}

ctk_status ctk_minibatch_source_stream_info(const ctk_minibatch_source_t* source, int64_t i,
                                            const char** name, int64_t* dims, int32_t capacity, int32_t* rank,
                                            int32_t* dtype, int32_t* is_sparse) {
    return guarded(__func__, [&] {
        const std::vector<StreamInformation>& infos = source_of(source).stream_infos();
        CTK_CHECK(i >= 0 && i < static_cast<int64_t>(infos.size()), IndexError, "stream ", i,
                  " is outside the source's ", infos.size(), " streams");
        const StreamInformation& info = infos[static_cast<size_t>(i)];
        if (rank != nullptr) write_dims(info.sample_shape, dims, capacity, rank);
        if (name != nullptr) *name = info.name.c_str();
        if (dtype != nullptr) *dtype = static_cast<int32_t>(info.dtype);
        if (is_sparse != nullptr) *is_sparse = info.is_sparse ? 1 : 0;
    });
}

ctk_status ctk_minibatch_source_next(ctk_minibatch_source_t* source, int64_t samples, int64_t num_partitions,
                                     int64_t partition_index, ctk_device device, ctk_minibatch_t** out) {
    return guarded(__func__, [&] {
        MinibatchSource& s = source_of(source);
        required(out, "out");
        CTK_CHECK(samples >= 1, ValueError, "a minibatch needs at least 1 sample, not ", samples);
        auto mb = s.next_minibatch(samples, num_partitions, partition_index, device_arg(device));
        auto* h = new ctk_minibatch;
        h->streams = std::move(mb);
        *out = h;
    });
}

ctk_status ctk_minibatch_source_get_state(const ctk_minibatch_source_t* source, void* buf, int64_t capacity,
                                          int64_t* size) {
    return guarded(__func__, [&] {
        const std::string bytes = cntk_dictionary_bytes(source_of(source).checkpoint_state());
        write_bytes(bytes, buf, capacity, size, "the state");
    });
}

ctk_status ctk_minibatch_source_set_state(ctk_minibatch_source_t* source, const void* bytes, int64_t size) {
    return guarded(__func__, [&] {
        MinibatchSource& s = source_of(source);
        required(bytes, "bytes");
        CTK_CHECK(size > 0, ValueError, "size ", size, " is not positive");
        const std::string data(static_cast<const char*>(bytes), static_cast<size_t>(size));
        s.restore_from_checkpoint(cntk_dictionary_from_bytes(data, "<state>"));
    });
}

void ctk_minibatch_release(ctk_minibatch_t* mb) {
    release(mb);
}

ctk_status ctk_minibatch_stream_count(const ctk_minibatch_t* mb, int64_t* count) {
    return guarded(__func__, [&] {
        const auto n = static_cast<int64_t>(handle(mb, "mb").streams.size());
        *required(count, "count") = n;
    });
}

ctk_status ctk_minibatch_stream(const ctk_minibatch_t* mb, const char* stream, ctk_value_t** value,
                                int64_t* num_samples, int64_t* num_sequences, int32_t* sweep_end) {
    return guarded(__func__, [&] {
        const ctk_minibatch& m = handle(mb, "mb");
        const std::string name = required(stream, "stream");
        auto it = m.streams.find(name);
        if (it == m.streams.end()) {
            std::string known;
            for (const auto& [k, d] : m.streams) known += (known.empty() ? "'" : ", '") + k + "'";
            CTK_THROW(ValueError, "the minibatch has no stream '", name, "'; its streams are ",
                      known.empty() ? std::string("none (the source is exhausted)") : known);
        }
        const MinibatchData& d = it->second;
        if (value != nullptr) {
            auto reader_form = std::make_shared<MinibatchData>(d);
            ctk_value_t* v = new_value(d.data);
            v->from_reader = std::move(reader_form);
            v->stream = name;
            *value = v;
        }
        if (num_samples != nullptr) *num_samples = d.num_samples;
        if (num_sequences != nullptr) *num_sequences = d.num_sequences;
        if (sweep_end != nullptr) *sweep_end = d.sweep_end ? 1 : 0;
    });
}

}  // extern "C"
