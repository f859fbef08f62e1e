// benchmarks/conv_candidates.cpp — the CPU conv2d candidates, forward and
// both gradients, timed in one run (benchmarks/conv_candidates.md):
//   im2col   im2col + typeflow's matmul GEMM (Eigen's gebp), the kernels for many taps
//   direct   typeflow's direct kernels (backend/eigen/ops/conv_direct.hpp), the kernels for few taps
//   eigen_tensor  Eigen's Tensor module on a ThreadPoolDevice, TensorFlow's portable CPU formulation:
//                 extract_image_patches + contraction (forward, filter gradient), the input gradient
//                 as the patches of the padded dy contracted with the flipped filter (stride 1 only)
//                 — when <unsupported/Eigen/CXX11/Tensor> is there
//   onednn   oneDNN's convolution primitives (nhwc / hwio memory; Debian's libdnnl 2.6 uses OpenMP)
//            — only when built with -DTYPEFLOW_BENCH_ONEDNN ... -ldnnl -fopenmp
// Prints `<candidate> shape=<x>x<w> op=<fwd|dfilter|dinput|all> threads=<n> us=<median>`.
// BENCH_ROUNDS / BENCH_MIN_SECONDS as in bench_util.hpp; argv[1] limits to
// one shape index (0: the lecture CNN's first layer; -1: all), argv[2] to
// some candidates (comma-separated names). The direct kernels are timed up to
// conv_direct_tap_capacity taps, beyond the K where conv2d takes them.
#if __has_include(<unsupported/Eigen/CXX11/Tensor>)
#define EIGEN_USE_THREADS
#define TYPEFLOW_BENCH_EIGEN_TENSOR 1
#include <unsupported/Eigen/CXX11/Tensor>
#endif
#if defined(TYPEFLOW_BENCH_ONEDNN)
#include <dnnl.hpp>
#include <omp.h>
#endif

#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <typeflow/backend/eigen/ops/conv.hpp>
#include <typeflow/runtime/thread_pool.hpp>

#include "bench_util.hpp"

namespace be = typeflow::backend::eigen::detail;
using typeflow::index_t;

namespace {

struct conv_shape {
    index_t n, h, w, c, k, co;
    std::string name() const {
        return std::to_string(n) + "," + std::to_string(h) + "," + std::to_string(w) + "," + std::to_string(c) + "x" +
               std::to_string(k) + "," + std::to_string(k) + "," + std::to_string(c) + "," + std::to_string(co);
    }
};

// stride 1, VALID
typeflow::detail::conv2d_geometry geometry_of(const conv_shape& s) {
    return typeflow::detail::conv2d_geometry_of(typeflow::dims{s.n, s.h, s.w, s.c}, typeflow::dims{s.k, s.k, s.c, s.co}, 1, 1, false,
                                                1, 1);
}

std::vector<float> random_vector(std::size_t n, std::mt19937& rng) {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> v(n);
    for (auto& e : v) e = u(rng);
    return v;
}

double max_rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double m = 0, s = 0;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, double(std::abs(a[i] - b[i]))), s = std::max(s, double(std::abs(b[i])));
    return s > 0 ? m / s : m;
}

struct buffers {
    std::vector<float> x, w, dy, y, dx, dw;
};

// One candidate: fwd, dfilter, dinput into the buffers.
struct candidate {
    std::string name;
    std::function<void(buffers&)> fwd, dfilter, dinput;
};

void time_candidate(const candidate& c, buffers& b, const conv_shape& s, int threads) {
    std::vector<bench::contender> cs{{"fwd", [&] { c.fwd(b); }},
                                     {"dfilter", [&] { c.dfilter(b); }},
                                     {"dinput", [&] { c.dinput(b); }},
                                     {"all", [&] {
                                          c.fwd(b);
                                          c.dfilter(b);
                                          c.dinput(b);
                                      }}};
    bench::measure(cs);
    for (auto& e : cs)
        std::printf("%s shape=%s op=%s threads=%d us=%.1f\n", c.name.c_str(), s.name().c_str(), e.name.c_str(), threads, e.median());
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<conv_shape> shapes{
        {64, 28, 28, 1, 3, 32},   // the lecture CNN's first layer: K = 9
        {64, 28, 28, 3, 3, 32},   // K = 27
        {32, 14, 14, 8, 3, 32},   // K = 72
        {32, 14, 14, 16, 3, 32},  // K = 144
        {16, 16, 16, 32, 3, 64},  // K = 288
    };
    const int only = argc > 1 ? std::atoi(argv[1]) : -1;
    const std::string filter = argc > 2 ? argv[2] : "";  // candidates to time, comma-separated (all when empty)
    std::mt19937 rng(3);
    for (std::size_t si = 0; si < shapes.size(); ++si) {
        if (only >= 0 && static_cast<int>(si) != only) continue;
        const conv_shape s = shapes[si];
        const auto g = geometry_of(s);
        buffers b;
        b.x = random_vector(static_cast<std::size_t>(s.n * s.h * s.w * s.c), rng);
        b.w = random_vector(static_cast<std::size_t>(s.k * s.k * s.c * s.co), rng);
        b.dy = random_vector(static_cast<std::size_t>(s.n * g.oh * g.ow * s.co), rng);
        b.y.resize(b.dy.size());
        b.dx.resize(b.x.size());
        b.dw.resize(b.w.size());
        for (int threads : {1, 2}) {
            typeflow::runtime::thread_pool pool(threads);
            const typeflow::parallel_ctx par = pool.context();
            std::vector<unsigned char> work_col(std::max(be::conv_col_bytes(g), be::conv_filter_bytes(g, threads)) + 64);
            std::vector<unsigned char> work_dir(std::max({be::conv_direct_forward_bytes<float>(g, threads),
                                                          be::conv_direct_input_bytes<float>(g, threads),
                                                          be::conv_direct_filter_bytes<float>(g, threads)}) +
                                                64);
            std::vector<candidate> cands;
            cands.push_back({"im2col", [&](buffers& q) { be::conv2d_forward_im2col(par, g, q.x.data(), q.w.data(), q.y.data(), work_col.data()); },
                             [&](buffers& q) { be::conv2d_filter_grad_im2col(par, g, q.x.data(), q.dy.data(), q.dw.data(), work_col.data()); },
                             [&](buffers& q) { be::conv2d_input_grad_im2col(par, g, q.w.data(), q.dy.data(), q.dx.data(), work_col.data()); }});
            if (be::conv_direct_possible(g))
                cands.push_back({"direct", [&](buffers& q) { be::conv2d_forward_direct(par, g, q.x.data(), q.w.data(), q.y.data(), work_dir.data()); },
                                 [&](buffers& q) { be::conv2d_filter_grad_direct(par, g, q.x.data(), q.dy.data(), q.dw.data(), work_dir.data()); },
                                 [&](buffers& q) { be::conv2d_input_grad_direct(par, g, q.w.data(), q.dy.data(), q.dx.data(), work_dir.data()); }});
#if defined(TYPEFLOW_BENCH_EIGEN_TENSOR)
            Eigen::ThreadPool epool(threads);
            Eigen::ThreadPoolDevice dev(&epool, threads);
            using T2 = Eigen::TensorMap<Eigen::Tensor<float, 2, Eigen::RowMajor>>;
            using C4 = Eigen::TensorMap<Eigen::Tensor<const float, 4, Eigen::RowMajor>>;
            const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> inner{Eigen::IndexPair<Eigen::Index>(1, 0)};
            const Eigen::array<Eigen::IndexPair<Eigen::Index>, 1> outer{Eigen::IndexPair<Eigen::Index>(0, 0)};
            const Eigen::Index P = s.n * g.oh * g.ow, K = s.k * s.k * s.c;
            // patches of x, row-major [n, oh * ow, kh, kw, c] (VALID, stride 1) as a [P, K] matrix
            const auto patches = [&](const float* x) {
                return C4(x, s.n, s.h, s.w, s.c)
                    .extract_image_patches(s.k, s.k, 1, 1, 1, 1, Eigen::PADDING_VALID)
                    .reshape(Eigen::array<Eigen::Index, 2>{P, K});
            };
            // the flipped filter for the input gradient: wf[kh, kw, co, ci] = w[K-1-kh, K-1-kw, ci, co]
            std::vector<float> wf(b.w.size());
            const auto flip = [&](const buffers& q) {
                for (index_t a = 0; a < s.k; ++a)
                    for (index_t bb = 0; bb < s.k; ++bb)
                        for (index_t ci = 0; ci < s.c; ++ci)
                            for (index_t o = 0; o < s.co; ++o)
                                wf[static_cast<std::size_t>(((a * s.k + bb) * s.co + o) * s.c + ci)] =
                                    q.w[static_cast<std::size_t>((((s.k - 1 - a) * s.k + (s.k - 1 - bb)) * s.c + ci) * s.co + o)];
            };
            cands.push_back(
                {"eigen_tensor",
                 [&](buffers& q) {
                     T2(q.y.data(), P, s.co).device(dev) =
                         patches(q.x.data()).contract(T2(q.w.data(), K, s.co), inner);
                 },
                 [&](buffers& q) {
                     T2(q.dw.data(), K, s.co).device(dev) = patches(q.x.data()).contract(T2(q.dy.data(), P, s.co), outer);
                 },
                 [&](buffers& q) {
                     flip(q);
                     const Eigen::Index pad = s.k - 1;
                     T2(q.dx.data(), s.n * s.h * s.w, s.c).device(dev) =
                         C4(q.dy.data(), s.n, g.oh, g.ow, s.co)
                             .extract_image_patches(s.k, s.k, 1, 1, 1, 1, 1, 1, pad, pad, pad, pad, 0.f)
                             .reshape(Eigen::array<Eigen::Index, 2>{s.n * s.h * s.w, s.k * s.k * s.co})
                             .contract(T2(wf.data(), s.k * s.k * s.co, s.c), inner);
                 }});
#endif
#if defined(TYPEFLOW_BENCH_ONEDNN)
            omp_set_num_threads(threads);
            using namespace dnnl;
            engine eng(engine::kind::cpu, 0);
            stream strm(eng);
            const memory::dims xd{s.n, s.c, s.h, s.w}, wd{s.co, s.c, s.k, s.k}, yd{s.n, s.co, g.oh, g.ow};
            const memory::dims st{1, 1}, pad0{0, 0};
            using tag = memory::format_tag;
            const auto dt = memory::data_type::f32;
            const memory::desc xm(xd, dt, tag::nhwc), wm(wd, dt, tag::hwio), ym(yd, dt, tag::nhwc);
            const memory::desc xa(xd, dt, tag::any), wa(wd, dt, tag::any), ya(yd, dt, tag::any);
            const convolution_forward::desc fdesc(prop_kind::forward_training, algorithm::convolution_direct, xm, wm, ym, st, pad0, pad0);
            const convolution_forward::primitive_desc fpd(fdesc, eng);
            const convolution_backward_weights::desc wdesc(algorithm::convolution_direct, xm, wm, ym, st, pad0, pad0);
            const convolution_backward_weights::primitive_desc wpd(wdesc, eng, fpd);
            const convolution_backward_data::desc ddesc(algorithm::convolution_direct, xm, wm, ym, st, pad0, pad0);
            const convolution_backward_data::primitive_desc dpd(ddesc, eng, fpd);
            std::fprintf(stderr, "onednn threads=%d: fwd %s, dfilter %s, dinput %s\n", threads, fpd.impl_info_str(),
                         wpd.impl_info_str(), dpd.impl_info_str());
            convolution_forward fprim(fpd);
            convolution_backward_weights wprim(wpd);
            convolution_backward_data dprim(dpd);
            const auto mem = [&](const memory::desc& md, const float* p) { return memory(md, eng, const_cast<float*>(p)); };
            cands.push_back({"onednn",
                             [&](buffers& q) {
                                 fprim.execute(strm, {{DNNL_ARG_SRC, mem(xm, q.x.data())}, {DNNL_ARG_WEIGHTS, mem(wm, q.w.data())},
                                                      {DNNL_ARG_DST, mem(ym, q.y.data())}});
                                 strm.wait();
                             },
                             [&](buffers& q) {
                                 wprim.execute(strm, {{DNNL_ARG_SRC, mem(xm, q.x.data())}, {DNNL_ARG_DIFF_DST, mem(ym, q.dy.data())},
                                                      {DNNL_ARG_DIFF_WEIGHTS, mem(wm, q.dw.data())}});
                                 strm.wait();
                             },
                             [&](buffers& q) {
                                 dprim.execute(strm, {{DNNL_ARG_DIFF_DST, mem(ym, q.dy.data())}, {DNNL_ARG_WEIGHTS, mem(wm, q.w.data())},
                                                      {DNNL_ARG_DIFF_SRC, mem(xm, q.dx.data())}});
                                 strm.wait();
                             }});
            (void)xa, (void)wa, (void)ya;
#endif
            // every candidate against im2col's results (max |difference| / max |value|)
            buffers want = b;
            cands[0].fwd(want), cands[0].dfilter(want), cands[0].dinput(want);
            for (std::size_t i = 1; i < cands.size(); ++i) {
                buffers got = b;
                cands[i].fwd(got), cands[i].dfilter(got), cands[i].dinput(got);
                std::fprintf(stderr, "%s shape=%s threads=%d: relative difference from im2col: y %.2g, dw %.2g, dx %.2g\n",
                             cands[i].name.c_str(), s.name().c_str(), threads, max_rel_diff(got.y, want.y),
                             max_rel_diff(got.dw, want.dw), max_rel_diff(got.dx, want.dx));
            }
            for (const auto& c : cands)
                if (filter.empty() || ("," + filter + ",").find("," + c.name + ",") != std::string::npos) time_candidate(c, b, s, threads);
        }
    }
}
