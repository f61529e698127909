/* The C ABI's graphs and values: variables, parameters, ops, evaluation of batches, sequences, one-hot and
 * sparse data (copied and borrowed), saving and loading (file and memory), cloning, and the values
 * checked against hand-computed results. Usage: graph_test <scratch folder> */
#include "check.h"

/* Evaluates f's single output for one input and copies `count` floats of the result into `out`. */
static void eval1(const ctk_function_t* f, const ctk_variable_t* in, const ctk_value_t* value, float* out,
                  int64_t count) {
    ctk_variable_t* output = NULL;
    OK(ctk_function_output(f, &output));
    const ctk_variable_t* ins[1] = {in};
    const ctk_value_t* vals[1] = {value};
    const ctk_variable_t* outs[1] = {output};
    ctk_value_t* result = NULL;
    OK(ctk_function_evaluate(f, ins, vals, 1, outs, 1, kCpu, &result));
    OK(ctk_value_copy_data(result, CTK_FLOAT32, out, count));
    ctk_value_release(result);
    ctk_variable_release(output);
}

static void check_floats(const float* got, const float* want, int n, const char* what) {
    for (int i = 0; i < n; ++i)
        if (fabs(got[i] - want[i]) > 1e-5) {
            fprintf(stderr, "%s[%d] = %g, want %g\n", what, i, got[i], want[i]);
            ++g_failures;
        }
}

int main(int argc, char** argv) {
    const char* dir = argc > 1 ? argv[1] : "/tmp";
    char path[1024];

    /* r = relu(x W + b), x [2], W [2, 3], b [3]. */
    int64_t two[1] = {2}, three[1] = {3}, w_shape[2] = {2, 3};
    float w_data[6] = {1, 2, 3, 4, 5, 6}, b_data[3] = {0.5f, -10, 1};
    ctk_variable_t *x, *w, *b;
    OK(ctk_input_variable(two, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "x", &x));
    OK(ctk_parameter_from_data(w_shape, 2, CTK_FLOAT32, w_data, "W", &w));
    OK(ctk_constant_from_data(three, 1, CTK_FLOAT32, b_data, "b", &b));
    ctk_function_t *xw, *z, *r;
    OK(ctk_times(x, w, 1, -1, NULL, &xw));
    ctk_variable_t* xw_out;
    OK(ctk_function_output(xw, &xw_out));
    OK(ctk_binary("plus", xw_out, b, NULL, &z));
    ctk_variable_t* z_out;
    OK(ctk_function_output(z, &z_out));
    OK(ctk_unary("relu", z_out, "r", &r));

    /* Variable facts. */
    int32_t kind = -1, dtype = -1, rank = -1, axes = -1;
    int64_t dims[4];
    OK(ctk_variable_kind(w, &kind));
    CHECK(kind == CTK_KIND_PARAMETER);
    OK(ctk_variable_shape(w, dims, 4, &rank));
    CHECK(rank == 2 && dims[0] == 2 && dims[1] == 3);
    OK(ctk_variable_dtype(x, &dtype));
    CHECK(dtype == CTK_FLOAT32);
    OK(ctk_variable_dynamic_axes(x, &axes));
    CHECK(axes == CTK_AXES_BATCH);
    const char* name = NULL;
    OK(ctk_variable_name(w, &name));
    CHECK(strcmp(name, "W") == 0);
    OK(ctk_function_name(r, &name));
    CHECK(strcmp(name, "r") == 0);
    OK(ctk_function_op_name(r, &name));
    CHECK(strcmp(name, "ReLU") == 0);
    ctk_variable_t* r_out;
    OK(ctk_function_output(r, &r_out));
    ctk_function_t* owner = NULL;
    OK(ctk_variable_owner(r_out, &owner));
    CHECK(owner != NULL);
    ctk_function_t* no_owner = owner;
    OK(ctk_variable_owner(x, &no_owner));
    CHECK(no_owner == NULL); /* an input has no owner */
    int64_t count = 0;
    OK(ctk_function_variables(r, CTK_VARS_PARAMETERS, NULL, 0, &count));
    CHECK(count == 1);
    ctk_variable_t* args[4];
    OK(ctk_function_variables(r, CTK_VARS_ARGUMENTS, args, 4, &count));
    CHECK(count == 1);
    int32_t same = 0;
    OK(ctk_variable_equals(args[0], x, &same));
    CHECK(same == 1);
    ctk_variable_release(args[0]);

    /* A batch of two samples: [1, 1] and [2, -1]. */
    float x_data[4] = {1, 1, 2, -1};
    int64_t x_shape[2] = {2, 2};
    ctk_value_t *copied, *borrowed;
    OK(ctk_value_create(CTK_FLOAT32, x_shape, 2, x_data, CTK_COPY, kCpu, &copied));
    OK(ctk_value_create(CTK_FLOAT32, x_shape, 2, x_data, CTK_BORROW, kCpu, &borrowed));
    const float want[6] = {5.5f, 0, 10, 0, 0, 1};
    float got[6];
    eval1(r, x, copied, got, 6);
    check_floats(got, want, 6, "relu(xW+b)");
    eval1(r, x, borrowed, got, 6);
    check_floats(got, want, 6, "relu(xW+b) of borrowed data");
    x_data[0] = 0; /* a borrowed value reads the caller's memory: x0 = [0, 1] -> [4.5, -5, 7] */
    eval1(r, x, borrowed, got, 6);
    NEAR(got[0], 4.5, 1e-6);
    NEAR(got[2], 7.0, 1e-6);
    x_data[0] = 1;

    /* A preallocated output: the caller's borrowed buffer receives the result. */
    {
        float out_buffer[6] = {0};
        int64_t out_shape[2] = {2, 3};
        ctk_value_t *target, *result;
        OK(ctk_value_create(CTK_FLOAT32, out_shape, 2, out_buffer, CTK_BORROW, kCpu, &target));
        const ctk_variable_t* ins[1] = {x};
        const ctk_value_t* vals[1] = {copied};
        const ctk_variable_t* outs[1] = {r_out};
        OK(ctk_function_evaluate(r, ins, vals, 1, outs, 1, kCpu, &result));
        OK(ctk_value_assign(target, result));
        check_floats(out_buffer, want, 6, "assigned into the caller's buffer");
        FAILS(ctk_value_assign(target, copied), CTK_ERROR_SHAPE, "dst has shape [2, 3]");
        ctk_value_release(result);
        ctk_value_release(target);
    }

    /* Gradients (CNTK's Function.grad): d sum(relu(xW + b)) / dW = x^T (z > 0). */
    {
        ctk_value_t* g = NULL;
        const ctk_variable_t* ins[1] = {x};
        const ctk_value_t* vals[1] = {copied};
        const ctk_variable_t* wrt[1] = {w};
        OK(ctk_function_grad(r, ins, vals, 1, wrt, 1, NULL, kCpu, &g));
        float dw[6];
        OK(ctk_value_copy_data(g, CTK_FLOAT32, dw, 6));
        const float want_dw[6] = {1, 0, 3, 1, 0, 0};
        check_floats(dw, want_dw, 6, "dW");
        ctk_value_release(g);
        FAILS(ctk_function_grad(r, ins, vals, 1, NULL, 0, NULL, kCpu, &g), CTK_ERROR_VALUE, "no variables");
    }

    /* Slices over several axes, pooling with a ceiling, all functions of one name. */
    {
        const int32_t axes[2] = {0, 1};
        const int64_t begin[2] = {1, 0}, end[2] = {2, 2};
        ctk_function_t* cut;
        OK(ctk_slice(w, axes, begin, end, NULL, 2, "cut", &cut));
        ctk_variable_t* cut_out;
        OK(ctk_function_output(cut, &cut_out));
        ctk_value_t* cut_value;
        OK(ctk_function_evaluate(cut, NULL, NULL, 0, (const ctk_variable_t* const*)&cut_out, 1, kCpu, &cut_value));
        float cut_data[2];
        OK(ctk_value_copy_data(cut_value, CTK_FLOAT32, cut_data, 2));
        NEAR(cut_data[0], 4, 0);
        NEAR(cut_data[1], 5, 0);
        ctk_value_release(cut_value);
        ctk_variable_release(cut_out);

        int64_t img_shape[3] = {1, 3, 3}, window[2] = {2, 2}, stride[2] = {2, 2};
        ctk_variable_t* img;
        OK(ctk_input_variable(img_shape, 3, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "img", &img));
        ctk_function_t *floor_pool, *ceil_pool;
        OK(ctk_pooling(img, CTK_POOL_MAX, window, 2, stride, 2, NULL, 0, 0, 0, NULL, &floor_pool));
        OK(ctk_pooling(img, CTK_POOL_MAX, window, 2, stride, 2, NULL, 0, 1, 0, "dup", &ceil_pool));
        ctk_variable_t *fo, *co;
        OK(ctk_function_output(floor_pool, &fo));
        OK(ctk_function_output(ceil_pool, &co));
        int64_t d[4];
        int32_t rk;
        OK(ctk_variable_shape(fo, d, 4, &rk));
        CHECK(rk == 3 && d[1] == 1 && d[2] == 1);
        OK(ctk_variable_shape(co, d, 4, &rk));
        CHECK(rk == 3 && d[1] == 2 && d[2] == 2);
        ctk_function_t* twice;
        OK(ctk_unary("relu", co, "dup", &twice));
        ctk_function_t* found_all[4];
        int64_t n_found = 0;
        OK(ctk_function_find_all_with_name(twice, "dup", 0, found_all, 4, &n_found));
        CHECK(n_found == 2);
        for (int64_t k = 0; k < n_found && k < 4; ++k) ctk_function_release(found_all[k]);
        ctk_function_release(twice);
        ctk_variable_release(fo);
        ctk_variable_release(co);
        ctk_function_release(floor_pool);
        ctk_function_release(ceil_pool);
        ctk_variable_release(img);
        ctk_function_release(cut);
    }

    /* Save into a folder that does not exist yet, load, evaluate. */
    snprintf(path, sizeof path, "%s/graph_test_models/sub/r.model", dir);
    OK(ctk_function_save(r, path, CTK_FORMAT_CNTK_V2));
    ctk_function_t* loaded;
    OK(ctk_function_load(path, CTK_FORMAT_AUTO, &loaded));
    ctk_variable_t* loaded_x;
    OK(ctk_function_variables(loaded, CTK_VARS_ARGUMENTS, &loaded_x, 1, &count));
    CHECK(count == 1);
    OK(ctk_variable_name(loaded_x, &name));
    CHECK(strcmp(name, "x") == 0);
    eval1(loaded, loaded_x, copied, got, 6);
    check_floats(got, want, 6, "loaded model");
    /* ONNX too. */
    snprintf(path, sizeof path, "%s/graph_test_models/r.onnx", dir);
    OK(ctk_function_save(r, path, CTK_FORMAT_ONNX));
    ctk_function_t* from_onnx;
    OK(ctk_function_load(path, CTK_FORMAT_ONNX, &from_onnx));
    ctk_variable_t* onnx_x;
    OK(ctk_function_variables(from_onnx, CTK_VARS_ARGUMENTS, &onnx_x, 1, &count));
    eval1(from_onnx, onnx_x, copied, got, 6);
    check_floats(got, want, 6, "ONNX model");
    /* And through memory. */
    int64_t size = 0;
    OK(ctk_function_save_buffer(r, NULL, 0, &size));
    CHECK(size > 0);
    char* bytes = (char*)malloc((size_t)size);
    int64_t too_small = size - 1;
    FAILS(ctk_function_save_buffer(r, bytes, too_small, &size), CTK_ERROR_BUFFER_TOO_SMALL, "needs");
    OK(ctk_function_save_buffer(r, bytes, size, &size));
    ctk_function_t* from_bytes;
    OK(ctk_function_load_buffer(bytes, size, &from_bytes));
    free(bytes);
    ctk_variable_t* bytes_x;
    OK(ctk_function_variables(from_bytes, CTK_VARS_ARGUMENTS, &bytes_x, 1, &count));
    eval1(from_bytes, bytes_x, copied, got, 6);
    check_floats(got, want, 6, "model from memory");

    /* find_by_name, clone, freeze, then a new parameter value. */
    ctk_function_t* found = NULL;
    OK(ctk_function_find_by_name(r, "r", 0, &found));
    CHECK(found != NULL);
    ctk_function_release(found);
    OK(ctk_function_find_by_name(r, "no such node", 1, &found));
    CHECK(found == NULL);
    ctk_function_t *cloned, *shared, *frozen;
    OK(ctk_function_clone(r, CTK_CLONE, NULL, NULL, 0, &cloned));
    OK(ctk_function_clone(r, CTK_SHARE, NULL, NULL, 0, &shared));
    OK(ctk_function_clone(r, CTK_FREEZE, NULL, NULL, 0, &frozen));
    OK(ctk_function_variables(frozen, CTK_VARS_PARAMETERS, NULL, 0, &count));
    CHECK(count == 0);
    float w_back[6];
    OK(ctk_variable_get_value(w, CTK_FLOAT32, w_back, 6));
    check_floats(w_back, w_data, 6, "W");
    double zeros[6] = {0, 0, 0, 0, 0, 0};
    OK(ctk_variable_set_value(w, CTK_FLOAT64, zeros, 6));
    FAILS(ctk_variable_set_value(w, CTK_FLOAT64, zeros, 5), CTK_ERROR_SHAPE, "has 6 elements");
    const float relu_b[6] = {0.5f, 0, 1, 0.5f, 0, 1};
    eval1(r, x, copied, got, 6);
    check_floats(got, relu_b, 6, "after set_value");
    eval1(shared, x, copied, got, 6); /* shares W */
    check_floats(got, relu_b, 6, "shared clone");
    ctk_variable_t* clone_x;
    OK(ctk_function_variables(cloned, CTK_VARS_ARGUMENTS, &clone_x, 1, &count));
    eval1(cloned, clone_x, copied, got, 6); /* its own copy of the old W */
    check_floats(got, want, 6, "cloned");
    OK(ctk_variable_set_value(w, CTK_FLOAT32, w_data, 6));

    /* Sequences: lengths {2, 1}, frames [1,2] [3,4] | [5,6]. */
    ctk_variable_t* s;
    OK(ctk_input_variable(two, 1, CTK_FLOAT32, CTK_AXES_SEQUENCE, 0, 0, "s", &s));
    ctk_function_t *ssum, *slast, *sdouble;
    OK(ctk_sequence_op("reduce_sum", s, NULL, &ssum));
    OK(ctk_sequence_op("last", s, NULL, &slast));
    OK(ctk_binary("plus", s, s, NULL, &sdouble));
    float frames[6] = {1, 2, 3, 4, 5, 6};
    int64_t lengths[2] = {2, 1};
    ctk_value_t* seqs;
    OK(ctk_value_create_sequences(CTK_FLOAT32, two, 1, frames, lengths, 2, NULL, kCpu, &seqs));
    int64_t lens_back[2];
    OK(ctk_value_sequence_lengths(seqs, lens_back, 2, &count));
    CHECK(count == 2 && lens_back[0] == 2 && lens_back[1] == 1);
    const float want_sum[4] = {4, 6, 5, 6}, want_last[4] = {3, 4, 5, 6};
    eval1(ssum, s, seqs, got, 4);
    check_floats(got, want_sum, 4, "sequence.reduce_sum");
    eval1(slast, s, seqs, got, 4);
    check_floats(got, want_last, 4, "sequence.last");
    {
        ctk_variable_t* out;
        OK(ctk_function_output(sdouble, &out));
        const ctk_variable_t* ins[1] = {s};
        const ctk_value_t* vals[1] = {seqs};
        const ctk_variable_t* outs[1] = {out};
        ctk_value_t* result;
        OK(ctk_function_evaluate(sdouble, ins, vals, 1, outs, 1, kCpu, &result));
        OK(ctk_value_shape(result, dims, 4, &rank));
        CHECK(rank == 3 && dims[0] == 2 && dims[1] == 2 && dims[2] == 2);
        int64_t nframes = 0;
        float seq1[4];
        OK(ctk_value_copy_sequence(result, 1, CTK_FLOAT32, seq1, 4, &nframes));
        CHECK(nframes == 1);
        NEAR(seq1[0], 10, 0);
        NEAR(seq1[1], 12, 0);
        FAILS(ctk_value_copy_sequence(result, 2, CTK_FLOAT32, seq1, 4, &nframes), CTK_ERROR_INDEX, "sequence 2");
        ctk_value_release(result);
        ctk_variable_release(out);
    }
    int64_t bad_lengths[2] = {2, 0};
    ctk_value_t* bad = NULL;
    FAILS(ctk_value_create_sequences(CTK_FLOAT32, two, 1, frames, bad_lengths, 2, NULL, kCpu, &bad), CTK_ERROR_VALUE,
          "lengths[1] is 0");
    CHECK(bad == NULL);

    /* One-hot and sparse inputs: times(o, W2) picks or mixes W2's rows. */
    int64_t four[1] = {4}, w2_shape[2] = {4, 2};
    float w2_data[8] = {0, 1, 10, 11, 20, 21, 30, 31};
    ctk_variable_t *o, *w2;
    OK(ctk_input_variable(four, 1, CTK_FLOAT32, CTK_AXES_BATCH, 1, 0, "o", &o));
    int32_t sparse = 0;
    OK(ctk_variable_is_sparse(o, &sparse));
    CHECK(sparse == 1);
    OK(ctk_parameter_from_data(w2_shape, 2, CTK_FLOAT32, w2_data, "W2", &w2));
    ctk_function_t* embed;
    OK(ctk_times(o, w2, 1, -1, NULL, &embed));
    int64_t hot[3] = {2, 0, -1};
    ctk_value_t* one_hot;
    OK(ctk_value_create_one_hot(4, hot, 3, NULL, 0, NULL, CTK_FLOAT32, kCpu, &one_hot));
    const float want_rows[6] = {20, 21, 0, 1, 0, 0};
    eval1(embed, o, one_hot, got, 6);
    check_floats(got, want_rows, 6, "one-hot rows");
    int64_t out_of_range[1] = {4};
    FAILS(ctk_value_create_one_hot(4, out_of_range, 1, NULL, 0, NULL, CTK_FLOAT32, kCpu, &bad), CTK_ERROR_INDEX, "outside");
    int64_t col_starts[3] = {0, 2, 3}, rows[3] = {1, 3, 0};
    float nz[3] = {1, 2, 0.5f};
    ctk_value_t* csc;
    OK(ctk_value_create_sparse_csc(CTK_FLOAT32, 4, 2, col_starts, rows, nz, NULL, 0, NULL, kCpu, &csc));
    int32_t is_hot = -1;
    OK(ctk_value_is_one_hot(csc, &is_hot));
    CHECK(is_hot == 0);
    const float want_mix[4] = {70, 73, 0, 0.5f};
    eval1(embed, o, csc, got, 4);
    check_floats(got, want_mix, 4, "sparse CSC rows");
    int64_t hot_starts[3] = {0, 1, 2}, hot_rows[2] = {3, 1};
    float ones[2] = {1, 1};
    ctk_value_t* csc_hot;
    OK(ctk_value_create_sparse_csc(CTK_FLOAT32, 4, 2, hot_starts, hot_rows, ones, NULL, 0, NULL, kCpu, &csc_hot));
    OK(ctk_value_is_one_hot(csc_hot, &is_hot));
    CHECK(is_hot == 1);
    int64_t idx[2];
    OK(ctk_value_one_hot_indices(csc_hot, idx, 2));
    CHECK(idx[0] == 3 && idx[1] == 1);
    int64_t bad_rows[3] = {1, 9, 0};
    FAILS(ctk_value_create_sparse_csc(CTK_FLOAT32, 4, 2, col_starts, bad_rows, nz, NULL, 0, NULL, kCpu, &bad),
          CTK_ERROR_INDEX, "row_indices[1] is 9");

    /* Initializers and the fixed random seed. */
    int64_t p_shape[2] = {3, 4};
    ctk_initializer_t *glorot, *quarter;
    OK(ctk_initializer_create(CTK_INIT_GLOROT_UNIFORM, 1.0, CTK_SENTINEL_RANK, CTK_SENTINEL_RANK, CTK_SENTINEL_SEED,
                              &glorot));
    OK(ctk_initializer_create(CTK_INIT_CONSTANT, 0.25, CTK_SENTINEL_RANK, CTK_SENTINEL_RANK, CTK_SENTINEL_SEED,
                              &quarter));
    ctk_variable_t *p1, *p2, *pc;
    OK(ctk_set_fixed_random_seed(7));
    OK(ctk_parameter(p_shape, 2, CTK_FLOAT32, glorot, "p1", &p1));
    OK(ctk_set_fixed_random_seed(7));
    OK(ctk_parameter(p_shape, 2, CTK_FLOAT32, glorot, "p2", &p2));
    OK(ctk_parameter(p_shape, 2, CTK_FLOAT32, quarter, "pc", &pc));
    float v1[12], v2[12], vc[12];
    OK(ctk_variable_get_value(p1, CTK_FLOAT32, v1, 12));
    OK(ctk_variable_get_value(p2, CTK_FLOAT32, v2, 12));
    OK(ctk_variable_get_value(pc, CTK_FLOAT32, vc, 12));
    CHECK(memcmp(v1, v2, sizeof v1) == 0);
    int nonzero = 0;
    for (int i = 0; i < 12; ++i) {
        CHECK(fabsf(v1[i]) <= 0.93f); /* sqrt(6 / (3 + 4)) */
        nonzero += v1[i] != 0;
        NEAR(vc[i], 0.25, 0);
    }
    CHECK(nonzero == 12);

    /* Calling a function on new arguments. */
    ctk_variable_t* x2;
    OK(ctk_input_variable(two, 1, CTK_FLOAT32, CTK_AXES_BATCH, 0, 0, "x2", &x2));
    const ctk_variable_t* call_args[1] = {x2};
    ctk_function_t* called;
    OK(ctk_function_call(r, call_args, 1, &called));
    eval1(called, x2, copied, got, 6);
    check_floats(got, want, 6, "r(x2)");

    ctk_function_t* combined;
    const ctk_variable_t* both[2] = {r_out, z_out};
    OK(ctk_combine(both, 2, "both", &combined));
    OK(ctk_function_variables(combined, CTK_VARS_OUTPUTS, NULL, 0, &count));
    CHECK(count == 2);
    ctk_variable_t* single = NULL;
    FAILS(ctk_function_output(combined, &single), CTK_ERROR_VALUE, "");

    ctk_function_release(combined);
    ctk_function_release(called);
    ctk_variable_release(x2);
    ctk_variable_release(p1);
    ctk_variable_release(p2);
    ctk_variable_release(pc);
    ctk_initializer_release(glorot);
    ctk_initializer_release(quarter);
    ctk_value_release(csc_hot);
    ctk_value_release(csc);
    ctk_value_release(one_hot);
    ctk_function_release(embed);
    ctk_variable_release(w2);
    ctk_variable_release(o);
    ctk_value_release(seqs);
    ctk_function_release(ssum);
    ctk_function_release(slast);
    ctk_function_release(sdouble);
    ctk_variable_release(s);
    ctk_variable_release(clone_x);
    ctk_function_release(cloned);
    ctk_function_release(shared);
    ctk_function_release(frozen);
    ctk_variable_release(bytes_x);
    ctk_function_release(from_bytes);
    ctk_variable_release(onnx_x);
    ctk_function_release(from_onnx);
    ctk_variable_release(loaded_x);
    ctk_function_release(loaded);
    ctk_value_release(borrowed);
    ctk_value_release(copied);
    ctk_function_release(owner);
    ctk_variable_release(r_out);
    ctk_variable_release(z_out);
    ctk_variable_release(xw_out);
    ctk_function_release(r);
    ctk_function_release(z);
    ctk_function_release(xw);
    ctk_variable_release(b);
    ctk_variable_release(w);
    ctk_variable_release(x);
    return finish("graph_test");
}
