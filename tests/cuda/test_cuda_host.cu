// The CUDA backend's host-side lowering, tested without a GPU: a test device
// in host memory whose fused regions are lowered into the flat plan the GPU
// kernels read (cuda::lower) and evaluated by the same element functions on
// the host (cuda::eval_on_host, vector path included), with the reference
// kernels for everything else. Graphs on it must match the CPU backend.
#include <catch2/catch.hpp>

#include "../support.hpp"

#include <typeflow/typeflow.hpp>

#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace tftest {
/// Host memory; fused regions through the CUDA backend's lowering and evaluator.
struct lowered {
    static constexpr int index = -4;
    static std::string name() { return "lowered"; }
    static inline int vector_regions = 0, strided_regions = 0;  // which path the regions took
};
}  // namespace tftest

namespace typeflow {
template <>
inline constexpr bool is_device_v<tftest::lowered> = true;
template <>
struct fused<tftest::lowered> {
    template <class Form, class T>
    static void eval(const region::layout& lay, const void* const* base, void* out, const parallel_ctx&) {
        using Canon = typename cuda::detail::respell<Form>::type;
        constexpr std::size_t K = cuda::detail::slot_count<Canon>::value;
        REQUIRE(lay.operands.size() == K);
        const cuda::region_plan<K> p = cuda::lower<K>(lay, base);
        if (cuda::takes_vector_path<Canon, T, K>(p, out)) ++tftest::lowered::vector_regions;
        else ++tftest::lowered::strided_regions;
        cuda::eval_on_host<Canon, T, K>(p, static_cast<T*>(out));
    }
};
template <class Op>
struct kernel<tftest::lowered, Op> : kernel<reference, Op> {};
}  // namespace typeflow

using L = tftest::lowered;

namespace {
template <class T>
void expect_same(const std::string& what, const tf::tensor<T>& got, const tf::tensor<T>& want, double rtol) {
    INFO(what);
    REQUIRE(extents(got.dims()) == extents(want.dims()));
    for (tf::index_t i = 0; i < got.size(); ++i) {
        const double a = static_cast<double>(got[i]), b = static_cast<double>(want[i]);
        if (!(a == b || std::abs(a - b) <= rtol * std::max({std::abs(a), std::abs(b), 1.0}))) {
            FAIL_CHECK(what << ": element " << i << ": lowered " << a << ", cpu " << b);
            return;
        }
    }
}

template <class D, class T>
std::vector<tf::tensor<T>> regions_on(const tf::tensor<T>& xa, const tf::tensor<T>& xb, const tf::tensor<T>& xc, const tf::tensor<T>& xf) {
    tf::placeholder<"a", T, tf::shape<tf::dyn, 5, 7>, D> a;
    tf::placeholder<"b", T, tf::shape<5, 1>, D> b;
    tf::placeholder<"c", T, tf::shape<7>, D> c;
    tf::placeholder<"f", T, tf::shape<tf::dyn>, D> f;
    tf::session s;
    auto run = [&](const auto& y) { return s.run(y, tf::feed(a, xa), tf::feed(b, xb), tf::feed(c, xc), tf::feed(f, xf)); };
    return {run(tf::where(a > b, tf::tanh(a) * c + T(1), tf::exp(-tf::abs(a)))),  // broadcasting on two axes
            run(a * b + c),                                                      // strided operands
            run(tf::sigmoid(T(1.5) * f + T(0.25)) * f + f * f),                  // contiguous: the vector path
            run(tf::maximum(f, T(0)) - T(2) * f),                                // contiguous with scalars
            run(tf::transpose<0, 2, 1>(a) + T(1)),                               // a kernel's output as an operand
            run(tf::sum<1>(a * b) * c)};                                         // a region after a reduction
}

// The I-th leaf of a many-operand region: a placeholder named "pII".
template <std::size_t I>
constexpr tf::fixed_string<4> leaf_name() {
    return tf::fixed_string<4>({'p', static_cast<char>('0' + I / 10), static_cast<char>('0' + I % 10), 0});
}
template <class D, std::size_t... I>
tf::tensor<float> many_on(const tf::tensor<float>& x, std::index_sequence<I...>) {
    std::tuple<tf::placeholder<leaf_name<I>(), float, tf::shape<3, 4>, D>...> ps;
    tf::session s;
    auto y = ((std::get<I>(ps) * float(I + 1)) + ...);
    return s.run(y, tf::feed(std::get<I>(ps), x)...);
}
}  // namespace

TEST_CASE("cuda lowering: regions evaluated on the host by the device evaluator match the cpu", "[host]") {
    rng_t r(21);
    for (long long rows : {1LL, 3LL}) {
        for (long long n : {1LL, 4LL, 7LL, 1001LL}) {
            const auto xa = uniform_tensor<float>(r, tf::dims{rows, 5, 7}, 0, 0, -2, 2);
            const auto xb = uniform_tensor<float>(r, tf::dims{5, 1}, 0, 0, -2, 2);
            const auto xc = uniform_tensor<float>(r, tf::dims{7}, 0, 0, -2, 2);
            const auto xf = uniform_tensor<float>(r, tf::dims{n}, 0, 0, -2, 2);
            const auto g = regions_on<L>(xa, xb, xc, xf), h = regions_on<tf::cpu>(xa, xb, xc, xf);
            for (std::size_t i = 0; i < g.size(); ++i) expect_same("float region " + std::to_string(i), g[i], h[i], 1e-6);
            const auto da = uniform_tensor<double>(r, tf::dims{rows, 5, 7}, 0, 0, -2, 2);
            const auto db = uniform_tensor<double>(r, tf::dims{5, 1}, 0, 0, -2, 2);
            const auto dc = uniform_tensor<double>(r, tf::dims{7}, 0, 0, -2, 2);
            const auto df = uniform_tensor<double>(r, tf::dims{n}, 0, 0, -2, 2);
            const auto gd = regions_on<L>(da, db, dc, df), hd = regions_on<tf::cpu>(da, db, dc, df);
            for (std::size_t i = 0; i < gd.size(); ++i) expect_same("double region " + std::to_string(i), gd[i], hd[i], 1e-13);
        }
    }
    // both paths were taken
    CHECK(L::vector_regions > 0);
    CHECK(L::strided_regions > 0);
}

TEST_CASE("cuda lowering: a region too large for the kernel parameters lowers whole", "[host]") {
    // 56 operands: the plan exceeds the parameter space, so on a GPU it goes through device memory
    static_assert(sizeof(tf::cuda::region_plan<56>) > tf::cuda::max_param_bytes);
    rng_t r(22);
    const auto x = uniform_tensor<float>(r, tf::dims{3, 4}, 0, 0, -1, 1);
    const auto g = many_on<L>(x, std::make_index_sequence<56>{});
    std::vector<double> want;
    for (tf::index_t i = 0; i < 12; ++i) want.push_back(x[i] * (56.0 * 57.0 / 2.0));
    expect_values("sum of 56 scaled operands", g, tf::dims{3, 4}, want, 1e-5, 1e-5);
}

TEST_CASE("cuda: a gpu graph in a process without a device is a tf::error, and runs where there is one", "[host]") {
    int n = 0;
    const bool have = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    tf::placeholder<"x", float, tf::shape<3>, tf::gpu<0>> x;
    tf::session s;
    const std::vector<float> xv{1, 2, 3};
    if (!have) {
        CHECK_THROWS_WITH(s.run(x * 2.0f, tf::feed(x, xv)), Catch::Contains("gpu:0: no such CUDA device"));
        // and the session is still usable for graphs on the host
        tf::placeholder<"h", float, tf::shape<3>> h;
        expect_values("a cpu graph after it", s.run(h * 2.0f, tf::feed(h, xv)), tf::dims{3}, {2, 4, 6});
    } else {
        expect_values("on the device", s.run(x * 2.0f, tf::feed(x, xv)), tf::dims{3}, {2, 4, 6});
    }
}
