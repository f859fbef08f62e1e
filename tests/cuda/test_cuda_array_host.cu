// The CUDA backend's array-op kernels (concat, slice, split, pad in every
// mode, tile, and their adjoints), tested without a GPU: a test device in
// host memory runs the very kernels of backend/cuda/ops/array.hpp with an
// executor that evaluates their index maps on the host, element by element as
// the GPU's threads do; every other op runs the reference backend. Results,
// forward and through tf::grad, must match the CPU backend's (the copies
// exactly; the losses and gradients to rounding, since the reference
// backend's transcendental functions and reductions are not Eigen's).
#include <catch2/catch.hpp>

#include "../support.hpp"
#include "compare.hpp"
#include "graphs.hpp"

#include <typeflow/typeflow.hpp>

#include <string>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace tftest {
/// Host memory; the array ops through the GPU kernels with host_exec.
struct arrayed {
    static constexpr int index = -8;
    static std::string name() { return "arrayed"; }
};
/// The GPU kernels' maps, one element after another on the host.
struct host_exec {
    template <class T, class Map>
    static void gather(const T* src, T* out, tf::index_t n, const Map& m, const T* value, std::string_view) {
        const T v = value ? *value : T(0);
        for (tf::index_t e = 0; e < n; ++e) out[e] = tf::cuda::array::gather_at(src, m, e, v);
    }
    template <class T, std::size_t K>
    static void concat(const tf::cuda::array::detail::operand_ptrs<T, K>& in, T* out, tf::index_t n,
                       const tf::cuda::array::concat_map<K>& m, std::string_view) {
        for (tf::index_t e = 0; e < n; ++e) {
            const auto s = m.source(e);
            out[e] = in.p[s.k][s.j];
        }
    }
    template <class T, class Sum>
    static void sum(const T* g, T* out, tf::index_t n, const Sum& s, std::string_view) {
        for (tf::index_t e = 0; e < n; ++e) out[e] = s.template sum<T>(g, e);
    }
};
}  // namespace tftest

namespace typeflow {
template <>
inline constexpr bool is_device_v<tftest::arrayed> = true;
template <>
struct fused<tftest::arrayed> : fused<reference> {};
template <class Op>
struct kernel<tftest::arrayed, Op> : kernel<reference, Op> {};
using tftest::arrayed;
using tftest::host_exec;
template <index_t Axis>
struct kernel<arrayed, op::concat<Axis>> : cuda::array::concat_kernel<host_exec, Axis> {};
template <class B, class S>
struct kernel<arrayed, op::slice<B, S>> : cuda::array::window_kernel<host_exec, op::slice<B, S>> {};
template <index_t Axis, std::size_t K, class Parts>
struct kernel<arrayed, op::split_part<Axis, K, Parts>> : cuda::array::window_kernel<host_exec, op::split_part<Axis, K, Parts>> {};
template <index_t Axis, std::size_t I>
struct kernel<arrayed, op::concat_part<Axis, I>> : cuda::array::window_kernel<host_exec, op::concat_part<Axis, I>> {};
template <class P>
struct kernel<arrayed, op::unpad<P>> : cuda::array::window_kernel<host_exec, op::unpad<P>> {};
template <class W>
struct kernel<arrayed, op::place<W>> : cuda::array::place_kernel<host_exec, W> {};
template <class P, pad_mode Mode>
struct kernel<arrayed, op::pad<P, Mode>> : cuda::array::pad_kernel<host_exec, P, Mode> {};
template <class P, pad_mode Mode>
struct kernel<arrayed, op::pad_grad<P, Mode>> : cuda::array::pad_grad_kernel<host_exec, P, Mode> {};
template <index_t... M>
struct kernel<arrayed, op::tile<M...>> : cuda::array::tile_kernel<host_exec, M...> {};
template <index_t... M>
struct kernel<arrayed, op::tile_grad<M...>> : cuda::array::tile_grad_kernel<host_exec, M...> {};
}  // namespace typeflow

namespace {
using A = tftest::arrayed;

void expect_same(const std::string& what, const tf::tensor<float>& got, const tf::tensor<float>& want) {
    expect_close(what, got, want, 1e-6);
}

}  // namespace

TEST_CASE("cuda array ops: the GPU kernels' index maps, run on the host, match the cpu", "[host]") {
    rng_t r(31);
    for (tf::index_t rows : {1, 2, 5}) {
        const auto xv = uniform_tensor<float>(r, tf::dims{rows, 5, 4}, 0, 0, -1, 1);
        const auto yv = uniform_tensor<float>(r, tf::dims{rows, 3, 4}, 0, 0, -1, 1);
        const auto got = arrays_on<A>(xv, yv), want = arrays_on<tf::cpu>(xv, yv);
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < got.size(); ++i) expect_same(std::to_string(rows) + " rows: " + array_names[i], got[i], want[i]);
    }
}

TEST_CASE("cuda array ops: rank 1 and empty operands", "[host]") {
    const auto run = []<class D>(D) {
        tf::placeholder<"v", float, tf::shape<tf::dyn>, D> v;
        auto p = tf::pad<tf::paddings<tf::pad_width{2, 3}>, tf::pad_mode::reflect>(v);
        auto q = tf::pad<tf::paddings<tf::pad_width{1, 1}>, tf::pad_mode::symmetric>(v);
        auto t = tf::tile<3>(v);
        auto loss = tf::sum(p * p) + tf::sum(tf::sin(q)) + tf::sum(t * t * t);
        tf::session s;
        const std::vector<float> vv{0.5f, -1.0f, 2.0f, 0.25f};
        auto [a, b, c, g] = s.run(tf::fetch(p, q, t, tf::grad(loss, v)), tf::feed(v, tf::view(vv, tf::dims{4})));
        tf::placeholder<"e", float, tf::shape<tf::dyn, 3>, D> e;
        auto empty = s.run(tf::concat<0>(e, e) * 2.0f, tf::feed(e, tf::tensor<float>(tf::dims{0, 3})));
        return std::vector<tf::tensor<float>>{a, b, c, g, empty};
    };
    const auto got = run(A{}), want = run(tf::cpu{});
    for (std::size_t i = 0; i < got.size(); ++i) expect_same("output " + std::to_string(i), got[i], want[i]);
}
