// benchmarks/fused_chain.cpp — a fused element-wise chain
//
//     out = sigmoid(a*x + b) * z + x*x        over n = 2^24 floats
//
// (x, z: placeholders of shape [dyn]; a, b: rank-0 placeholders) computed by
// a typeflow session, against
//
//   eigen   the same chain written by hand as ONE Eigen array expression,
//           evaluated into a preallocated Eigen::ArrayXf:
//               out = (a*X + b).logistic() * Z + X*X;
//   memcpy  std::memcpy of the output's size (n floats = 64 MiB) from a
//           preallocated source to a preallocated destination: 64 MiB read +
//           64 MiB written, whereas the chain reads 2 x 64 MiB (x, z) and
//           writes 64 MiB. The line "memcpy_traffic" copies 1.5 x 64 MiB
//           instead, i.e. the same total traffic as the chain (192 MiB).
//
// typeflow runs twice, in a session of 1 thread and one of 2
// (session_options{.threads}); the other contenders run single-threaded
// (Eigen on 2 threads needs OpenMP, Eigen::setNbThreads, which this build
// does not use; the chain is bandwidth-bound anyway). The typeflow
// result tensor is released before the next run, so the session reuses its
// buffer and no iteration allocates (a result still held by the caller would
// make the session allocate a fresh one: copy on write). The typeflow result
// must equal Eigen's within a relative 1e-5 (else exit 1).
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>

#include <Eigen/Core>
#include <typeflow/typeflow.hpp>

#include "bench_util.hpp"

namespace tf = typeflow;

int main() {
    constexpr long n = 1L << 24;

    tf::placeholder<"x", float, tf::shape<tf::dyn>> x;
    tf::placeholder<"z", float, tf::shape<tf::dyn>> z;
    tf::placeholder<"a", float, tf::shape<>> a;
    tf::placeholder<"b", float, tf::shape<>> b;
    auto chain = tf::sigmoid(a * x + b) * z + x * x;

    Eigen::ArrayXf X(n), Z(n), E(n);
    {
        std::mt19937 rng(42);
        std::uniform_real_distribution<float> u(-3.f, 3.f);
        for (long i = 0; i < n; ++i) X[i] = u(rng), Z[i] = u(rng);
    }
    float av = 0.75f, bv = -0.25f;
    const tf::tensor_view<const float> xv{X.data(), tf::dims{n}}, zv{Z.data(), tf::dims{n}};
    const tf::tensor_view<const float> avv{&av, tf::dims{}}, bvv{&bv, tf::dims{}};

    tf::session s{tf::session_options{.threads = 1}}, s2{tf::session_options{.threads = 2}};
    auto run_tf = [&] { return s.run(chain, tf::feed(x, xv), tf::feed(z, zv), tf::feed(a, avv), tf::feed(b, bvv)); };
    auto run_tf2 = [&] { return s2.run(chain, tf::feed(x, xv), tf::feed(z, zv), tf::feed(a, avv), tf::feed(b, bvv)); };
    auto run_eigen = [&] { E = (av * X + bv).logistic() * Z + X * X; };

    // correctness
    run_eigen();
    {
        const tf::tensor<float> t = run_tf();
        if (t.size() != n) {
            std::fprintf(stderr, "fused_chain: typeflow result has %ld elements, expected %ld\n",
                         static_cast<long>(t.size()), n);
            return 1;
        }
        const double w = bench::tolerance_ratio(t.data(), E.data(), n, 1e-5, 1e-6);
        if (w > 1) {
            std::fprintf(stderr, "fused_chain: typeflow differs from Eigen (worst error %.3g x tolerance)\n", w);
            return 1;
        }
        std::fprintf(stderr, "fused_chain: typeflow == eigen within tolerance (worst %.3g of it); arena %zu bytes\n",
                     w, s.stats().arena_bytes);
        const tf::tensor<float> t2 = run_tf2();
        if (std::memcmp(t2.data(), t.data(), sizeof(float) * static_cast<std::size_t>(n)) != 0) {
            std::fprintf(stderr, "fused_chain: typeflow at 2 threads differs from 1 thread\n");
            return 1;
        }
    }

    std::unique_ptr<float[]> src(new float[n + n / 2]), dst(new float[n + n / 2]);
    std::memset(src.get(), 1, sizeof(float) * static_cast<std::size_t>(n + n / 2));
    std::memset(dst.get(), 0, sizeof(float) * static_cast<std::size_t>(n + n / 2));

    double sink = 0;
    long k = 0;
    std::vector<bench::contender> cs{
        {"typeflow",
         [&] {
             const tf::tensor<float> t = run_tf();  // released at once: the next run reuses its buffer
             sink += t[(k++ * 9973) & (n - 1)];
         }},
        {"eigen",
         [&] {
             run_eigen();
             bench::do_not_optimize(E.data());
             sink += E[(k++ * 9973) & (n - 1)];
         }},
        {"typeflow_2t",
         [&] {
             const tf::tensor<float> t = run_tf2();
             sink += t[(k++ * 9973) & (n - 1)];
         }},
        {"memcpy",
         [&] {
             std::memcpy(dst.get(), src.get(), sizeof(float) * static_cast<std::size_t>(n));
             bench::do_not_optimize(dst.get());
             sink += dst[(k++ * 9973) & (n - 1)];
         }},
        {"memcpy_traffic",
         [&] {
             std::memcpy(dst.get(), src.get(), sizeof(float) * static_cast<std::size_t>(n + n / 2));
             bench::do_not_optimize(dst.get());
             sink += dst[(k++ * 9973) & (n - 1)];
         }},
    };
    bench::measure(cs);
    if (s.stats().rebinds != 1 || s.stats().plans_built != 1 || s2.stats().plans_built != 1) {
        std::fprintf(stderr, "fused_chain: the session re-planned (%zu plans, %zu rebinds)\n", s.stats().plans_built,
                     s.stats().rebinds);
        return 1;
    }
    bench::report_threads("fused_chain", cs[0], cs[1], cs[2], 2);
    bench::report("fused_chain", cs[0], cs[3]);  // typeflow= 1 thread
    bench::report("fused_chain", cs[0], cs[4]);
    std::fprintf(stderr, "  (checksum %g)\n", sink);
    return 0;
}
