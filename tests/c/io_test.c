/* The C ABI's readers: a CTF file and IDX files written here, read in order through a minibatch source,
 * fed to a trainer, resumed from a saved position, and broken files refused by name.
 * Usage: io_test <scratch folder> */
#include "check.h"

static void write_file(const char* path, const void* bytes, size_t n) {
    FILE* f = fopen(path, "wb");
    CHECK(f != NULL);
    if (f == NULL) exit(1);
    fwrite(bytes, 1, n, f);
    fclose(f);
}

static ctk_minibatch_source_t* ctf_source(const char* path, int64_t sweeps) {
    ctk_stream_def streams[2] = {{"features", "x", 2, 0, 0}, {"labels", "y", 3, 1, 0}};
    ctk_deserializer_t* d;
    OK(ctk_ctf_deserializer(path, streams, 2, &d));
    ctk_source_config config;
    OK(ctk_source_config_default(&config));
    CHECK(config.max_sweeps == CTK_INFINITELY_REPEAT && config.randomize == 1);
    config.randomize = 0;
    config.max_sweeps = sweeps;
    ctk_minibatch_source_t* source;
    OK(ctk_minibatch_source_create((const ctk_deserializer_t* const*)&d, 1, &config, &source));
    ctk_deserializer_release(d); /* the source keeps what it needs */
    return source;
}

static void read_features(ctk_minibatch_t* mb, float* out, int64_t n, int32_t* sweep_end) {
    ctk_value_t* v;
    int64_t samples = 0, sequences = 0;
    OK(ctk_minibatch_stream(mb, "features", &v, &samples, &sequences, sweep_end));
    CHECK(samples == n / 2 && sequences == n / 2);
    OK(ctk_value_copy_data(v, CTK_FLOAT32, out, n));
    ctk_value_release(v);
}

int main(int argc, char** argv) {
    const char* dir = argc > 1 ? argv[1] : "/tmp";
    char path[1024];
    snprintf(path, sizeof path, "%s/io_test.ctf", dir);
    const char ctf[] = "0 |x 1 2 |y 0:1\n1 |x 3 4 |y 2:1\n2 |x 5 6 |y 1:1\n3 |x 7 8 |y 0:1\n";
    write_file(path, ctf, sizeof ctf - 1);

    ctk_minibatch_source_t* source = ctf_source(path, 1);
    int64_t count = 0;
    OK(ctk_minibatch_source_stream_count(source, &count));
    CHECK(count == 2);
    for (int64_t i = 0; i < count; ++i) {
        const char* name;
        int64_t dims[2];
        int32_t rank, dtype, sparse;
        OK(ctk_minibatch_source_stream_info(source, i, &name, dims, 2, &rank, &dtype, &sparse));
        CHECK(rank == 1 && dtype == CTK_FLOAT32);
        CHECK(strcmp(name, "features") == 0 ? dims[0] == 2 && !sparse : dims[0] == 3 && sparse);
    }
    FAILS(ctk_minibatch_source_stream_info(source, 2, NULL, NULL, 0, NULL, NULL, NULL), CTK_ERROR_INDEX, "stream 2");

    /* Two minibatches of two samples, in file order, then nothing. */
    ctk_minibatch_t* mb;
    float x[4];
    int32_t sweep_end = -1;
    OK(ctk_minibatch_source_next(source, 2, 1, 0, kCpu, &mb));
    read_features(mb, x, 4, &sweep_end);
    CHECK(x[0] == 1 && x[1] == 2 && x[2] == 3 && x[3] == 4 && sweep_end == 0);
    ctk_value_t* labels;
    OK(ctk_minibatch_stream(mb, "labels", &labels, NULL, NULL, NULL));
    int32_t one_hot = 0;
    OK(ctk_value_is_one_hot(labels, &one_hot));
    CHECK(one_hot == 1);
    float dense_labels[6];
    OK(ctk_value_copy_data(labels, CTK_FLOAT32, dense_labels, 6));
    CHECK(dense_labels[0] == 1 && dense_labels[5] == 1 && dense_labels[1] == 0);
    FAILS(ctk_minibatch_stream(mb, "label", NULL, NULL, NULL, NULL), CTK_ERROR_VALUE, "'features'");

    /* Reader values go to a trainer as they are: one-sample sequences become a batch for its inputs. */
    {
        int64_t two[1] = {2}, three[1] = {3}, w_shape[2] = {2, 3};
        ctk_variable_t *in_x, *in_y, *w, *z_out;
        ctk_initializer_t* init;
        OK(ctk_initializer_create(CTK_INIT_UNIFORM, 0.1, CTK_SENTINEL_RANK, CTK_SENTINEL_RANK, 3, &init));
        OK(ctk_input_variable(two, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "x", &in_x));
        OK(ctk_input_variable(three, 1, CTK_FLOAT32, CTK_AXES_BATCH, 1, 0, "y", &in_y));
        OK(ctk_parameter(w_shape, 2, CTK_FLOAT32, init, "W", &w));
        ctk_function_t *z, *ce;
        OK(ctk_times(in_x, w, 1, -1, "z", &z));
        OK(ctk_function_output(z, &z_out));
        OK(ctk_binary("cross_entropy_with_softmax", z_out, in_y, NULL, &ce));
        double rate = 0.1;
        ctk_schedule_t* lr;
        OK(ctk_schedule_create(&rate, NULL, 1, 0, 0, &lr));
        ctk_learner_t* sgd;
        OK(ctk_learner_sgd((const ctk_variable_t* const*)&w, 1, lr, NULL, &sgd));
        ctk_trainer_t* t;
        OK(ctk_trainer_create(z, ce, NULL, (const ctk_learner_t* const*)&sgd, 1, 0, &t));
        ctk_value_t* features;
        OK(ctk_minibatch_stream(mb, "features", &features, NULL, NULL, NULL));
        const ctk_variable_t* ins[2] = {in_x, in_y};
        const ctk_value_t* vals[2] = {features, labels};
        OK(ctk_trainer_train_minibatch(t, ins, vals, 2, 0, kCpu, NULL));
        int64_t samples = 0;
        OK(ctk_trainer_previous_minibatch_sample_count(t, &samples));
        CHECK(samples == 2);
        ctk_value_release(features);
        ctk_trainer_release(t);
        ctk_learner_release(sgd);
        ctk_schedule_release(lr);
        ctk_function_release(ce);
        ctk_function_release(z);
        ctk_variable_release(z_out);
        ctk_variable_release(w);
        ctk_variable_release(in_y);
        ctk_variable_release(in_x);
        ctk_initializer_release(init);
    }
    ctk_value_release(labels);
    ctk_minibatch_release(mb);

    OK(ctk_minibatch_source_next(source, 2, 1, 0, kCpu, &mb));
    read_features(mb, x, 4, &sweep_end);
    CHECK(x[0] == 5 && x[3] == 8 && sweep_end == 1);
    ctk_minibatch_release(mb);
    OK(ctk_minibatch_source_next(source, 2, 1, 0, kCpu, &mb));
    OK(ctk_minibatch_stream_count(mb, &count));
    CHECK(count == 0); /* one sweep asked for, one sweep given */
    FAILS(ctk_minibatch_stream(mb, "features", NULL, NULL, NULL, NULL), CTK_ERROR_VALUE, "exhausted");
    ctk_minibatch_release(mb);
    ctk_minibatch_source_release(source);

    /* Resuming: the position saved after the first minibatch gives the second one again. */
    source = ctf_source(path, CTK_INFINITELY_REPEAT);
    OK(ctk_minibatch_source_next(source, 2, 1, 0, kCpu, &mb));
    ctk_minibatch_release(mb);
    int64_t size = 0;
    OK(ctk_minibatch_source_get_state(source, NULL, 0, &size));
    char* state = (char*)malloc((size_t)size);
    OK(ctk_minibatch_source_get_state(source, state, size, &size));
    float second[4], again[4];
    OK(ctk_minibatch_source_next(source, 2, 1, 0, kCpu, &mb));
    read_features(mb, second, 4, &sweep_end);
    ctk_minibatch_release(mb);
    OK(ctk_minibatch_source_next(source, 2, 1, 0, kCpu, &mb));
    ctk_minibatch_release(mb);
    OK(ctk_minibatch_source_set_state(source, state, size));
    OK(ctk_minibatch_source_next(source, 2, 1, 0, kCpu, &mb));
    read_features(mb, again, 4, &sweep_end);
    ctk_minibatch_release(mb);
    CHECK(memcmp(second, again, sizeof second) == 0);
    FAILS(ctk_minibatch_source_set_state(source, "garbage", 7), CTK_ERROR_IO, "<state>");
    free(state);
    ctk_minibatch_source_release(source);

    /* A broken CTF file is refused naming the file. */
    snprintf(path, sizeof path, "%s/io_test_broken.ctf", dir);
    const char broken[] = "0 |x 1 2 |y 0:1\n1 |x 3 oops |y 2:1\n";
    write_file(path, broken, sizeof broken - 1);
    source = ctf_source(path, 1);
    ctk_minibatch_t* none = NULL;
    FAILS(ctk_minibatch_source_next(source, 2, 1, 0, kCpu, &none), CTK_ERROR_IO, "io_test_broken.ctf");
    CHECK(none == NULL);
    ctk_minibatch_source_release(source);

    /* IDX images and labels: two 2x2 images of classes 3 and 1. */
    unsigned char images[16 + 8] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0, 2, 0, 64, 128, 255, 1, 2, 3, 4};
    unsigned char idx_labels[8 + 2] = {0, 0, 8, 1, 0, 0, 0, 2, 3, 1};
    char images_path[1024], labels_path[1024];
    snprintf(images_path, sizeof images_path, "%s/io_test-images-idx3-ubyte", dir);
    snprintf(labels_path, sizeof labels_path, "%s/io_test-labels-idx1-ubyte", dir);
    write_file(images_path, images, sizeof images);
    write_file(labels_path, idx_labels, sizeof idx_labels);
    ctk_deserializer_t* idx;
    OK(ctk_idx_deserializer(images_path, labels_path, 10, &idx));
    ctk_source_config config;
    OK(ctk_source_config_default(&config));
    config.randomize = 0;
    OK(ctk_minibatch_source_create((const ctk_deserializer_t* const*)&idx, 1, &config, &source));
    OK(ctk_minibatch_source_next(source, 2, 1, 0, kCpu, &mb));
    ctk_value_t* v;
    OK(ctk_minibatch_stream(mb, "features", &v, NULL, NULL, NULL));
    float pixels[8];
    OK(ctk_value_copy_data(v, CTK_FLOAT32, pixels, 8));
    CHECK(pixels[1] == 64 && pixels[3] == 255 && pixels[7] == 4);
    ctk_value_release(v);
    OK(ctk_minibatch_stream(mb, "labels", &v, NULL, NULL, NULL));
    float onehot[20];
    OK(ctk_value_copy_data(v, CTK_FLOAT32, onehot, 20));
    CHECK(onehot[3] == 1 && onehot[11] == 1 && onehot[0] == 0);
    ctk_value_release(v);
    ctk_minibatch_release(mb);
    ctk_minibatch_source_release(source);
    ctk_deserializer_release(idx);
    images[2] = 9; /* a bad magic number */
    write_file(images_path, images, sizeof images);
    FAILS(ctk_idx_deserializer(images_path, labels_path, 10, &idx), CTK_ERROR_IO, "io_test-images-idx3-ubyte");

    /* CNTK's image reader: two 2x2 grey images (PGM, which OpenCV decodes), a map file, scaled to 2x2x1. */
    {
        char map[1024], img[1024];
        snprintf(map, sizeof map, "%s/io_test_map.txt", dir);
        FILE* m = fopen(map, "w");
        CHECK(m != NULL);
        for (int k = 0; k < 2; ++k) {
            snprintf(img, sizeof img, "%s/io_test_image%d.pgm", dir, k);
            const unsigned char pgm[] = {'P', '5', '\n', '2', ' ', '2', '\n', '2', '5', '5', '\n',
                                         (unsigned char)(10 + k), 20, 30, (unsigned char)(40 + k)};
            write_file(img, pgm, sizeof pgm);
            if (m) fprintf(m, "%s\t%d\n", img, k + 1);
        }
        if (m) fclose(m);
        ctk_image_transform_t* scale;
        OK(ctk_image_scale(2, 2, 1, NULL, NULL, -1, &scale));
        ctk_image_transform_t* bad = NULL;
        FAILS(ctk_image_scale(0, 2, 1, NULL, NULL, -1, &bad), CTK_ERROR_VALUE, "sizes must be positive");
        FAILS(ctk_image_crop("center", 0, 0, 0, 0, 0, 0, 1, 1, NULL, 2, 0, &bad), CTK_ERROR_VALUE, "hflip 2");
        ctk_deserializer_t* images;
        OK(ctk_image_deserializer(map, "labels", 3, "features", (const ctk_image_transform_t* const*)&scale, 1, 1, 0,
                                  &images));
        ctk_source_config config;
        OK(ctk_source_config_default(&config));
        config.randomize = 0;
        config.max_sweeps = 1;
        OK(ctk_minibatch_source_create((const ctk_deserializer_t* const*)&images, 1, &config, &source));
        OK(ctk_minibatch_source_next(source, 2, 1, 0, kCpu, &mb));
        ctk_value_t* v;
        OK(ctk_minibatch_stream(mb, "features", &v, NULL, NULL, NULL));
        float px[8];
        OK(ctk_value_copy_data(v, CTK_FLOAT32, px, 8));
        CHECK(px[0] == 10 && px[1] == 20 && px[2] == 30 && px[3] == 40 && px[4] == 11 && px[7] == 41);
        ctk_value_release(v);
        OK(ctk_minibatch_stream(mb, "labels", &v, NULL, NULL, NULL));
        float lab[6];
        OK(ctk_value_copy_data(v, CTK_FLOAT32, lab, 6));
        CHECK(lab[1] == 1 && lab[5] == 1 && lab[0] == 0);
        ctk_value_release(v);
        ctk_minibatch_release(mb);
        ctk_minibatch_source_release(source);
        ctk_deserializer_release(images);
        snprintf(map, sizeof map, "%s/no_such_map.txt", dir);
        FAILS(ctk_image_deserializer(map, "labels", 3, "features", NULL, 0, 0, 0, &images), CTK_ERROR_IO,
              "no_such_map.txt");
        ctk_image_transform_release(scale);
    }

    /* CNTK's binary format: a file CNTK's ctf2bin wrote (10 sequences, 100 samples of 5 dims), one sweep. */
    {
        ctk_deserializer_t* cbf;
        OK(ctk_cbf_deserializer(CTK_TEST_DATA_DIR "/cntk/cbf/10x10_dense.bin", NULL, 0, &cbf));
        ctk_source_config config;
        OK(ctk_source_config_default(&config));
        config.randomize = 0;
        config.max_sweeps = 1;
        OK(ctk_minibatch_source_create((const ctk_deserializer_t* const*)&cbf, 1, &config, &source));
        const char* name;
        int64_t dims[2];
        int32_t rank, dtype, sparse;
        OK(ctk_minibatch_source_stream_info(source, 0, &name, dims, 2, &rank, &dtype, &sparse));
        CHECK(strcmp(name, "features") == 0 && rank == 1 && dims[0] == 5 && !sparse);
        int64_t total = 0;
        for (;;) {
            OK(ctk_minibatch_source_next(source, 32, 1, 0, kCpu, &mb));
            OK(ctk_minibatch_stream_count(mb, &count));
            int64_t samples = 0;
            if (count > 0) OK(ctk_minibatch_stream(mb, "features", NULL, &samples, NULL, NULL));
            ctk_minibatch_release(mb);
            if (count == 0) break;
            total += samples;
        }
        CHECK(total == 100);
        ctk_minibatch_source_release(source);
        ctk_deserializer_release(cbf);
        FAILS(ctk_cbf_deserializer(CTK_TEST_DATA_DIR "/cntk/cbf/none.bin", NULL, 0, &cbf), CTK_ERROR_IO, "none.bin");
    }
    return finish("io_test");
}
