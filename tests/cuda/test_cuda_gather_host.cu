// The CUDA backend's gather, indexed_slices and sparse_apply kernels, tested
// without a GPU: a test device in host memory runs the very kernels of
// backend/cuda/ops/gather.hpp with an executor that runs their element
// functions on the host one element after another, and sorts with
// std::stable_sort where the GPU uses CUB's radix sort (stable too); every
// other op runs the reference backend. Lookups, gathers and the table
// trained by SGD and Adam must match the CPU backend's; a bad index must be
// the CPU's tf::error, and a sparse update given one must write no row.
#include <catch2/catch.hpp>

#include "../support.hpp"
#include "compare.hpp"
#include "graphs.hpp"

#include <typeflow/typeflow.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace tftest {
/// Host memory; gather, indexed_slices and sparse_apply through the GPU kernels with gather_exec.
struct gathered {
    static constexpr int index = -9;
    static std::string name() { return "gathered"; }
};
/// The GPU kernels' element functions, one element after another on the host.
struct gather_exec {
    struct scratch {
        std::vector<std::uint64_t> mem;
    };
    static inline bool defer = false;  // leave reports in the error word, as a GPU does until its work is done
    static inline int sorts = 0, bad_bits = 0;
    template <class F>
    static void each(tf::index_t n, const F& f, std::string_view) {
        for (tf::index_t e = 0; e < n; ++e) f(e);
    }
    static void* reserve(scratch& s, std::size_t bytes, std::string_view) {
        if (s.mem.size() * 8 < bytes) s.mem.resize((bytes + 7) / 8);
        return s.mem.data();
    }
    static void zero(void* p, std::size_t bytes, std::string_view) { std::memset(p, 0, bytes); }
    static std::size_t sort_bytes(tf::index_t, int, std::string_view) { return 8; }
    static void sort(void*, std::size_t, const tf::cuda::gather::key_t* kin, tf::cuda::gather::key_t* kout, const tf::index_t* vin,
                     tf::index_t* vout, tf::index_t m, int bits, std::string_view) {
        ++sorts;
        std::vector<tf::index_t> p(static_cast<std::size_t>(m));
        std::iota(p.begin(), p.end(), tf::index_t{0});
        std::stable_sort(p.begin(), p.end(), [&](tf::index_t a, tf::index_t b) { return kin[a] < kin[b]; });
        for (tf::index_t i = 0; i < m; ++i) {
            bad_bits += bits < 64 && kin[i] >> bits != 0;  // the GPU sorts on the low `bits` bits alone
            kout[i] = kin[p[static_cast<std::size_t>(i)]];
            vout[i] = vin[p[static_cast<std::size_t>(i)]];
        }
    }
    static tf::cuda::error_word* err() {
        static tf::cuda::error_word e;
        return &e;
    }
    static tf::cuda::error_word take() {
        const tf::cuda::error_word e = *err();
        *err() = tf::cuda::error_word{};
        return e;
    }
    static void reported() {
        if (defer || err()->code == 0) return;
        tf::cuda::raise_error(take(), -1);
    }
};
}  // namespace tftest

namespace typeflow {
template <>
inline constexpr bool is_device_v<tftest::gathered> = true;
template <>
struct fused<tftest::gathered> : fused<reference> {};
template <class Op>
struct kernel<tftest::gathered, Op> : kernel<reference, Op> {};
template <int Axis>
struct kernel<tftest::gathered, op::gather<Axis>> : cuda::gather::gather_kernel<tftest::gather_exec, Axis> {};
template <int Axis>
struct kernel<tftest::gathered, op::indexed_slices<Axis>> : cuda::gather::slices_kernel<tftest::gather_exec, Axis> {};
template <class Rule, std::size_t R, std::size_t P>
struct kernel<tftest::gathered, op::sparse_apply<Rule, R, P>> : cuda::gather::sparse_kernel<tftest::gather_exec, Rule, R, P> {};
}  // namespace typeflow

namespace {
using G = tftest::gathered;
using tftest::gather_exec;

embedding_feeds feeds_for(tf::index_t n, rng_t& r) {
    embedding_feeds f;
    f.ids = uniform_tensor<std::int32_t>(r, tf::dims{n, 3}, 0, 8, 0, 0);
    f.ids[0] = 8;  // the last row, and a row met twice
    if (n > 1) f.ids[4] = f.ids[1];
    f.ids64 = tf::tensor<std::int64_t>(tf::dims{5}, {2, 8, 2, 0, 5});
    f.x = uniform_tensor<float>(r, tf::dims{n, 5, 2}, 0, 0, -1, 1);
    return f;
}

template <class Opt>
void check_training(Opt opt, const char* name) {
    rng_t r(41);
    for (tf::index_t n : {1, 2, 7}) {
        INFO(name << ", " << n << " rows of ids");
        const embedding_feeds f = feeds_for(n, r);
        gather_exec::sorts = gather_exec::bad_bits = 0;
        const auto got = embeddings_on<G>(opt, f, 3), want = embeddings_on<tf::cpu>(opt, f, 3);
        CHECK(gather_exec::sorts > 0);
        CHECK(gather_exec::bad_bits == 0);
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i) expect_close(embedding_names[i], got[i], want[i], 1e-5);
        CHECK(got[0][2] < got[0][0]);  // it trains
    }
}
}  // namespace

TEST_CASE("cuda gather: lookups, gathers and sparse updates through the GPU kernels match the cpu", "[host]") {
    check_training(tf::train::sgd(0.05f), "sgd");
    check_training(tf::train::adam(0.05f), "adam");
}

TEST_CASE("cuda gather: the gradient of a gather along an inner axis, and empty index lists", "[host]") {
    const auto run = []<class D>(D, const tf::tensor<std::int32_t>& kv) {
        tf::placeholder<"x", double, tf::shape<tf::dyn, 4, 3>, D> x;
        tf::placeholder<"k", std::int32_t, tf::shape<tf::dyn>, D> k;
        auto g = tf::gather<1>(x, k);  // [n, len(k), 3]
        auto loss = tf::sum(g * g * g);
        tf::session s;
        std::vector<double> xv(2 * 4 * 3);
        for (std::size_t i = 0; i < xv.size(); ++i) xv[i] = 0.1 * static_cast<double>(i) - 1.0;
        auto [a, d] = s.run(tf::fetch(g, tf::grad(loss, x)), tf::feed(x, tf::view(xv, tf::dims{2, 4, 3})), tf::feed(k, kv));
        return std::vector<tf::tensor<double>>{a, d};
    };
    for (const auto& kv : {tf::tensor<std::int32_t>(tf::dims{5}, {3, 1, 3, 3, 0}), tf::tensor<std::int32_t>(tf::dims{0})}) {
        INFO(kv.size() << " indices");
        const auto got = run(G{}, kv), want = run(tf::cpu{}, kv);
        for (std::size_t i = 0; i < got.size(); ++i) {
            REQUIRE(got[i].dims() == want[i].dims());
            for (tf::index_t e = 0; e < got[i].size(); ++e) CHECK(got[i][e] == want[i][e]);  // copies, and sums in the cpu's order
        }
    }
}

TEST_CASE("cuda gather: a bad index is the cpu's error, and a sparse update given one writes no row", "[host]") {
    const std::vector<std::int32_t> bad{2, 6, 1, -1};  // the first bad one is at position 1
    std::string cpu_error, gpu_error, none;
    lookup_step_on<tf::cpu>(bad, cpu_error);
    lookup_step_on<G>(bad, gpu_error);
    CHECK(cpu_error.find("indices[1] = 6 is not in [0, 6)") != std::string::npos);
    CHECK(gpu_error == cpu_error);
    // as on a GPU: every kernel runs and the first report stays; the update writes nothing
    gather_exec::defer = true;
    const auto after = lookup_step_on<G>(bad, none);
    gather_exec::defer = false;
    const tf::cuda::error_word w = gather_exec::take();
    CHECK(w.code == tf::cuda::error_index_out_of_range);
    CHECK(w.a == 1);
    CHECK(w.b == 6);
    CHECK(w.c == 6);
    CHECK(std::string(w.what, static_cast<std::size_t>(w.what_len)) == "gather");
    const auto untouched = lookup_step_on<G>({}, none);
    REQUIRE(after.size() == untouched.size());
    for (tf::index_t e = 0; e < after.size(); ++e) CHECK(after[e] == untouched[e]);
    // and good ids do update it
    const auto moved = lookup_step_on<G>({2, 2}, none);
    CHECK(none.empty());
    CHECK(moved[4] != untouched[4]);
    CHECK(moved[0] == untouched[0]);
}
