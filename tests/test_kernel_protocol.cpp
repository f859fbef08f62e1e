// The kernel protocol beyond one output: a kernel with several outputs, a
// workspace the plan reserves, state kept across runs; kernels found by
// device (the same op on cpu and reference), and one arena per memory space.
#include <catch2/catch.hpp>

#include <typeflow/typeflow.hpp>

#include <cstdint>
#include <cmath>
#include <cstring>
#include <new>
#include <string>

namespace tf = typeflow;

namespace tftest_kp {
int g_workspace_calls = 0;

/// row_stats(x) for x of shape [n, k]: output 0 the row sums ([n], x's
/// dtype), output 1 the count of positive elements per row ([n], int64).
struct row_stats {
    static constexpr tf::op_kind kind = tf::op_kind::kernel;
    static constexpr std::string_view name = "row_stats";
    static constexpr std::size_t outputs = 2;
    template <class A>
    struct traits {
        using S = tf::shape<tf::shape_t<A>::value.d[0]>;
        using value_type = tf::value_type_t<A>;
        using shape_type = S;
        using device = tf::device_t<A>;
        using outputs_list = tf::meta::list<tf::result_traits<value_type, S, device>,
                                            tf::result_traits<std::int64_t, S, device>>;
    };
    static tf::dims infer(const tf::dims& a) { return tf::dims{a.d[0]}; }
    static tf::dims infer_output(std::size_t, const tf::dims& a) { return tf::dims{a.d[0]}; }
};
/// State kept per node across runs: how many times the kernel ran.
struct run_counter {
    int runs = 0;
};
/// run_count(x): how many times this node has run in its plan (int64 scalar).
struct run_count {
    static constexpr tf::op_kind kind = tf::op_kind::kernel;
    static constexpr std::string_view name = "run_count";
    template <class A>
    using traits = tf::result_traits<std::int64_t, tf::shape<>, tf::device_t<A>>;
    static tf::dims infer(const tf::dims&) { return tf::dims{}; }
};
}  // namespace tftest_kp

namespace tftest_kp {
/// A device of this test: the reference backend's kernels over a memory
/// space of its own that counts its allocations.
struct counting_device {
    static constexpr int index = -3;
    static std::string name() { return "counting"; }
};
std::size_t g_allocs = 0, g_frees = 0;
bool g_fail = false;  // the next allocation throws, as when the device is out of memory
void* counting_allocate(std::size_t bytes) {
    if (g_fail) throw std::bad_alloc();
    ++g_allocs;
    return tf::detail::allocate_buffer(bytes);
}
void counting_free(void* p, std::size_t bytes) noexcept {
    ++g_frees;
    tf::detail::free_buffer(p, bytes);
}
void counting_zero(void* p, std::size_t bytes) { std::memset(p, 0, bytes); }
}  // namespace tftest_kp

namespace typeflow {
template <>
inline constexpr bool is_device_v<tftest_kp::counting_device> = true;
template <>
struct device_memory<tftest_kp::counting_device> {
    static constexpr memory_space value{"counting", &tftest_kp::counting_allocate, &tftest_kp::counting_free,
                                        &tftest_kp::counting_zero};
};
template <>
struct fused<tftest_kp::counting_device> : fused<reference> {};
template <class Op>
    requires has_kernel<reference, Op>
struct kernel<tftest_kp::counting_device, Op> : kernel<reference, Op> {};

// one kernel for every host-memory device (cpu and reference)
template <class D>
    requires host_memory_v<D>
struct kernel<D, tftest_kp::row_stats> {
    using state = tftest_kp::run_counter;
    template <class Ctx>
    static std::size_t workspace_bytes(const Ctx& ctx) {
        ++tftest_kp::g_workspace_calls;
        return static_cast<std::size_t>(ctx.in_dims[0]->d[1]) * sizeof(double);
    }
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* sums) {
        const auto& a = n.template child<0>();
        const dims d = ctx.dims_of(a);
        const auto* x = ctx.input(a);
        auto* pos = static_cast<std::int64_t*>(ctx.output(1));
        auto* scratch = static_cast<double*>(ctx.workspace());  // a row, copied through the workspace
        for (index_t i = 0; i < d.d[0]; ++i) {
            for (index_t j = 0; j < d.d[1]; ++j) scratch[j] = static_cast<double>(x[i * d.d[1] + j]);
            double s = 0;
            std::int64_t p = 0;
            for (index_t j = 0; j < d.d[1]; ++j) {
                s += scratch[j];
                p += scratch[j] > 0;
            }
            sums[i] = static_cast<value_type_t<N>>(s);
            pos[i] = p;
        }
        ++ctx.template state<tftest_kp::run_counter>().runs;
    }
};
template <class D>
    requires host_memory_v<D>
struct kernel<D, tftest_kp::run_count> {
    using state = tftest_kp::run_counter;
    template <class N, class Ctx>
    static void run(const N&, const Ctx& ctx, std::int64_t* out) {
        *out = ++ctx.template state<tftest_kp::run_counter>().runs;
    }
};
}  // namespace typeflow

namespace {
template <class D>
void check_row_stats() {
    tf::placeholder<"x", double, tf::shape<tf::dyn, 3>, D> x;
    auto [sums, pos] = tf::make_outputs<tftest_kp::row_stats>(x * 2.0);
    auto total = tf::sum(sums) + tf::cast<double>(tf::sum(pos));  // both outputs read by later nodes
    tf::session s;
    tf::tensor<double> xv({2, 3}, {1, -2, 3, -4, -5, 6});
    auto [sv, pv, tv] = s.run(tf::fetch(sums, pos, total), tf::feed(x, xv));
    REQUIRE(sv.dims() == tf::dims{2});
    CHECK(sv[0] == 4.0);   // 2 * (1 - 2 + 3)
    CHECK(sv[1] == -6.0);  // 2 * (-4 - 5 + 6)
    REQUIRE(pv.dims() == tf::dims{2});
    CHECK(pv[0] == 2);
    CHECK(pv[1] == 1);
    CHECK(tv.item() == 4.0 - 6.0 + 3.0);
    // a new dyn extent re-plans: the workspace is asked again, outputs follow the feed
    const int calls = tftest_kp::g_workspace_calls;
    tf::tensor<double> xw({3, 3}, {1, 1, 1, 0, 0, 0, -1, 2, -3});
    auto [sw, pw, tw] = s.run(tf::fetch(sums, pos, total), tf::feed(x, xw));
    CHECK(tftest_kp::g_workspace_calls > calls);
    REQUIRE(sw.dims() == tf::dims{3});
    CHECK(sw[0] == 6.0);
    CHECK(sw[2] == -4.0);
    CHECK(pw[0] == 3);
    CHECK(pw[1] == 0);
    CHECK(pw[2] == 1);
    CHECK(tw.item() == 2.0 + 4.0);
}
}  // namespace

TEST_CASE("kernel protocol: a kernel with two outputs of different dtypes, on cpu and reference", "[kernel]") {
    check_row_stats<tf::cpu>();
    check_row_stats<tf::reference>();
}

TEST_CASE("kernel protocol: kernel state persists across runs of one plan and is per node", "[kernel]") {
    tf::placeholder<"x", float, tf::shape<2>> x;
    auto a = tf::make_node<tftest_kp::run_count>(x);
    auto b = tf::make_node<tftest_kp::run_count>(x + 1.0f);  // another node: its own state
    tf::session s;
    tf::tensor<float> xv({2}, {1, 2});
    for (std::int64_t r = 1; r <= 3; ++r) {
        auto [av, bv] = s.run(tf::fetch(a, b), tf::feed(x, xv));
        CHECK(av.item() == r);
        CHECK(bv.item() == r);
    }
    CHECK(s.run(b, tf::feed(x, xv)).item() == 1);  // another fetch list: another plan, fresh state
    tf::session t;
    CHECK(t.run(a, tf::feed(x, xv)).item() == 1);
}

TEST_CASE("kernel protocol: fetching a multi-output node itself is an error naming it", "[kernel]") {
    tf::placeholder<"x", double, tf::shape<2, 3>> x;
    auto n = tf::make_node<tftest_kp::row_stats>(x);
    tf::session s;
    try {
        s.run(n, tf::feed(x, tf::tensor<double>({2, 3})));
        FAIL("no error");
    } catch (const tf::error& e) {
        CHECK(std::string(e.what()).find("'row_stats' has 2 outputs; fetch them with tf::output<K>") != std::string::npos);
    }
}

TEST_CASE("kernel protocol: to<D> is a copy node between devices, never fused away", "[kernel]") {
    tf::placeholder<"x", float, tf::shape<2, 2>> x;
    auto on_ref = tf::to<tf::reference>(x * 2.0f) + 1.0f;  // computed by the reference backend
    auto back = tf::to<tf::cpu>(on_ref) * 3.0f;
    tf::session s;
    tf::tensor<float> xv({2, 2}, {1, 2, 3, 4});
    auto [r, c] = s.run(tf::fetch(on_ref, back), tf::feed(x, xv));
    for (tf::index_t i = 0; i < 4; ++i) {
        CHECK(r[i] == xv[i] * 2.0f + 1.0f);
        CHECK(c[i] == (xv[i] * 2.0f + 1.0f) * 3.0f);
    }
    // x * 2, to<reference>, + 1, to<cpu>, * 3: the transfers are materialised
    CHECK(s.stats().evaluations == 5);
    // constants on a device
    auto c2 = tf::constant<tf::shape<2, 2>, tf::reference>({1.f, 2.f, 3.f, 4.f}) * tf::constant<tf::reference>(2.0f);
    auto cv = s.run(tf::to<tf::cpu>(c2 + on_ref), tf::feed(x, xv));
    for (tf::index_t i = 0; i < 4; ++i) CHECK(cv[i] == 2.0f * static_cast<float>(i + 1) + xv[i] * 2.0f + 1.0f);
}

TEST_CASE("kernel protocol: each memory space gets its own arena from its own allocator", "[kernel]") {
    using far = tftest_kp::counting_device;
    tf::placeholder<"x", float, tf::shape<4, 8>> x;
    auto on_far = tf::exp(tf::to<far>(x * 2.0f)) + 1.0f;  // two nodes computed on the device: one region, one transfer
    auto back = tf::sum(tf::to<tf::cpu>(on_far) * 3.0f);
    tftest_kp::g_allocs = tftest_kp::g_frees = 0;
    {
        tf::session s;
        tf::tensor<float> xv({4, 8});
        for (tf::index_t i = 0; i < xv.size(); ++i) xv[i] = 0.01f * static_cast<float>(i);
        const float got = s.run(back, tf::feed(x, xv)).item();
        double want = 0;
        for (tf::index_t i = 0; i < xv.size(); ++i) want += 3.0 * (std::exp(2.0 * xv[i]) + 1.0);
        CHECK(got == Approx(want).epsilon(1e-5));
        CHECK(tftest_kp::g_allocs == 1);  // one arena for the device's buffers, whatever their count
        s.run(back, tf::feed(x, xv));
        CHECK(tftest_kp::g_allocs == 1);  // steady state: no new allocation
    }
    CHECK(tftest_kp::g_frees == 1);  // given back to the device's allocator with the plan
}

TEST_CASE("kernel protocol: a device out of memory fails the run and loses nothing", "[kernel]") {
    using far = tftest_kp::counting_device;
    tf::placeholder<"x", float, tf::shape<4, 8>> x;
    tf::variable<"acc", float, tf::shape<>> acc{tf::init::constant{1.0}};
    auto on_far = tf::exp(tf::to<far>(x)) + 1.0f;
    auto step = tf::assign_add(acc, tf::sum(tf::to<tf::cpu>(on_far)));
    tf::tensor<float> xv({4, 8});
    tf::session s;
    tftest_kp::g_fail = true;
    // a tf::error that names the memory asked for and the largest buffer's node, not std::bad_alloc
    CHECK_THROWS_WITH(s.run(step, tf::feed(x, xv)), Catch::Contains("cannot allocate") && Catch::Contains("bytes") &&
                                                        Catch::Contains("'to'") && Catch::Contains("[4,8]"));
    tftest_kp::g_fail = false;
    CHECK(acc.value()[0] == 1.0f);  // the failed run wrote nothing
    s.run(step, tf::feed(x, xv));   // the same session then plans and runs
    CHECK(acc.value()[0] == Approx(1.0f + 32.0f * 2.0f));
}
