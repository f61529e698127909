// Times ctk's convolution (forward + backward-data + backward-weights, f32) on the ResNet-20 CIFAR
// shapes at batch 128, and, for comparison, raw oneDNN primitives given plain NCHW/OIHW layouts
// directly (no reorders). Not part of CI; build by hand against a Release build:
//   g++ -O2 -std=c++20 -fopenmp -Iinclude dev/conv_timing.cpp -Lbuild-conv/src -lctk_cpu -lctk_core \
//       -ldnnl -lopenblas -o /tmp/conv_timing
//   /tmp/conv_timing THREADS [REPS]     (dev/conv_timing_torch.py times PyTorch the same way)
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "ctk/ctk.h"

namespace {

struct Shape2d {
    const char* name;
    int64_t n, c, o, hw, stride;
};

// ResNet-20 for CIFAR: 3x3 convs, pad 1, at 16/32/64 channels, and the two stride-2 transitions.
const Shape2d kShapes[] = {
    {"16->16 32x32 s1", 128, 16, 16, 32, 1}, {"32->32 16x16 s1", 128, 32, 32, 16, 1},
    {"64->64 8x8 s1", 128, 64, 64, 8, 1},    {"16->32 32x32 s2", 128, 16, 32, 32, 2},
    {"32->64 16x16 s2", 128, 32, 64, 16, 2},
};

double now_ms() {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Minimum and median over `reps` timed runs after two warm-ups.
std::pair<double, double> time_ms(const std::function<void()>& fn, int reps) {
    fn();
    fn();
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
        double start = now_ms();
        fn();
        t.push_back(now_ms() - start);
    }
    std::sort(t.begin(), t.end());
    return {t.front(), t[t.size() / 2]};
}

std::pair<double, double> time_ctk(const Shape2d& s, int reps) {
    using namespace ctk;
    Generator g(1);
    Tensor x = Tensor::empty(Shape{s.n, s.c, s.hw, s.hw}), w = Tensor::empty(Shape{s.o, s.c, 3, 3});
    g.uniform(x, -1, 1);
    g.uniform(w, -1, 1);
    ConvAttrs a;
    a.strides = {s.stride, s.stride};
    a.pad_lo = {1, 1};
    a.pad_hi = {1, 1};
    Tensor dy = Tensor::empty(convolution(x, w, Tensor(), a).shape());
    g.uniform(dy, -1, 1);
    return time_ms(
        [&] {
            Tensor y = convolution(x, w, Tensor(), a);
            Tensor dx = convolution_backward_data(dy, w, x.shape(), a);
            ConvWeightGrads gw = convolution_backward_weights(x, dy, w.shape(), a, false);
        },
        reps);
}

// The same three passes as oneDNN primitives on plain layouts, no reorders and no allocations.
std::pair<double, double> time_plain_onednn(const Shape2d& s, int reps) {
    using namespace dnnl;
    engine eng(engine::kind::cpu, 0);
    stream str(eng);
    const int64_t oh = (s.hw + 2 - 3) / s.stride + 1;
    memory::desc x_md({s.n, s.c, s.hw, s.hw}, memory::data_type::f32, memory::format_tag::nchw);
    memory::desc w_md({s.o, s.c, 3, 3}, memory::data_type::f32, memory::format_tag::oihw);
    memory::desc y_md({s.n, s.o, oh, oh}, memory::data_type::f32, memory::format_tag::nchw);
    memory::dims st = {s.stride, s.stride}, dil = {0, 0}, pad = {1, 1};
    const auto alg = algorithm::convolution_direct;
    convolution_forward::primitive_desc fwd_pd(
        {prop_kind::forward_training, alg, x_md, w_md, y_md, st, dil, pad, pad}, eng);
    convolution_backward_data::primitive_desc bd_pd({alg, x_md, w_md, y_md, st, dil, pad, pad}, eng, fwd_pd);
    convolution_backward_weights::primitive_desc bw_pd({alg, x_md, w_md, y_md, st, dil, pad, pad}, eng,
                                                       fwd_pd);
    std::printf("    plain impls: %s / %s / %s\n", fwd_pd.impl_info_str(), bd_pd.impl_info_str(),
                bw_pd.impl_info_str());
    memory x(x_md, eng), w(w_md, eng), y(y_md, eng), dx(x_md, eng), dw(w_md, eng), dy(y_md, eng);
    for (memory* m : {&x, &w, &dy}) {
        float* p = static_cast<float*>(m->get_data_handle());
        for (size_t i = 0; i < m->get_desc().get_size() / 4; ++i)
            p[i] = static_cast<float>(i % 7) * 0.1f - 0.3f;
    }
    convolution_forward fwd(fwd_pd);
    convolution_backward_data bd(bd_pd);
    convolution_backward_weights bw(bw_pd);
    return time_ms(
        [&] {
            fwd.execute(str, {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}});
            bd.execute(str, {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DIFF_SRC, dx}});
            bw.execute(str, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dw}});
            str.wait();
        },
        reps);
}

}  // namespace

int main(int argc, char** argv) {
    const int threads = argc > 1 ? std::atoi(argv[1]) : 1;
    const int reps = argc > 2 ? std::atoi(argv[2]) : 15;
    const bool plain = argc > 3 && std::string(argv[3]) == "plain";
    ctk::set_num_threads(threads);
    std::printf("ctk convolution fwd+bwd_data+bwd_weights, f32, %d thread(s), min / median of %d runs (ms)\n",
                threads, reps);
    for (const auto& s : kShapes) {
        auto [mn, med] = time_ctk(s, reps);
        std::printf("  %-18s ctk %8.2f / %8.2f\n", s.name, mn, med);
        if (plain) {
            auto [pmn, pmed] = time_plain_onednn(s, reps);
            std::printf("  %-18s plain-layout oneDNN %8.2f / %8.2f\n", s.name, pmn, pmed);
        }
    }
    return 0;
}
