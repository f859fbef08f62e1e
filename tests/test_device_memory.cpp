// The runtime's handling of devices with memory of their own (a GPU's), on
// the CPU: a test device whose memory space is a separate heap reached only
// through upload/download/copy (counted), with the reference backend's
// kernels. Placeholders, constants and variables get device copies, fetches
// come back through download, variables stay coherent between host and
// device, assigns commit by swapping buffers, and bad input loses nothing.
// The same graphs on tf::cpu are the reference.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "device_support.hpp"
#include "io_support.hpp"

#include <typeflow/models.hpp>
#include <typeflow/typeflow.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace tftest {
/// A device with memory of its own, emulated on the host.
struct emulated {
    static constexpr int index = -3;
    static std::string name() { return "emulated"; }
};
// What crossed between the host and the emulated device, and what is allocated there.
struct emulated_stats {
    int uploads = 0, downloads = 0, copies = 0, finishes = 0;
    std::set<void*> live;
    std::size_t fail_above = ~std::size_t{0};  // allocations larger than this fail (out of memory)
};
inline emulated_stats& em() {
    static emulated_stats s;
    return s;
}
inline void* em_allocate(std::size_t bytes) {
    if (bytes > em().fail_above) throw std::bad_alloc();
    void* p = std::malloc(bytes);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0xA5, bytes);  // never zero by accident
    em().live.insert(p);
    return p;
}
inline void em_free(void* p, std::size_t) noexcept {
    em().live.erase(p);
    std::free(p);
}
inline void em_zero(void* p, std::size_t bytes) { std::memset(p, 0, bytes); }
inline void em_upload(void* d, const void* h, std::size_t bytes) {
    ++em().uploads;
    std::memcpy(d, h, bytes);
}
inline void em_download(void* h, const void* d, std::size_t bytes) {
    ++em().downloads;
    std::memcpy(h, d, bytes);
}
inline void em_copy(void* d, const void* s, std::size_t bytes) {
    ++em().copies;
    std::memcpy(d, s, bytes);
}
inline void em_finish() { ++em().finishes; }
}  // namespace tftest

namespace typeflow {
template <>
inline constexpr bool is_device_v<tftest::emulated> = true;
template <>
inline constexpr bool host_memory_v<tftest::emulated> = false;
template <>
struct device_memory<tftest::emulated> {
    static constexpr memory_space value{"emulated", &tftest::em_allocate, &tftest::em_free, &tftest::em_zero, false,
                                        &tftest::em_upload, &tftest::em_download, &tftest::em_copy, &tftest::em_finish};
};
template <>
struct fused<tftest::emulated> : fused<reference> {};
template <class Op>
struct kernel<tftest::emulated, Op> : kernel<reference, Op> {};
template <class From>
    requires host_memory_v<From>
struct kernel<tftest::emulated, op::to<tftest::emulated, From>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto& a = n.template child<0>();
        tftest::em_upload(out, ctx.input(a), static_cast<std::size_t>(ctx.dims_of(a).numel()) * sizeof(value_type_t<N>));
    }
};
template <class To>
    requires host_memory_v<To>
struct kernel<To, op::to<To, tftest::emulated>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const auto& a = n.template child<0>();
        tftest::em_download(out, ctx.input(a), static_cast<std::size_t>(ctx.dims_of(a).numel()) * sizeof(value_type_t<N>));
    }
};
}  // namespace typeflow

using E = tftest::emulated;

namespace {
template <class D>
std::pair<std::vector<float>, std::vector<tf::tensor<float>>> train(const std::vector<tf::tensor<float>>& init, const tf::tensor<float>& xv,
                                                                    const tf::tensor<std::int32_t>& yv, int steps) {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 6>, D> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>, D> y;
    tf::variable<"W1", float, tf::shape<6, 5>, D> W1;
    tf::variable<"b1", float, tf::shape<5>, D> b1;
    tf::variable<"W2", float, tf::shape<5, 3>, D> W2;
    W1.load(init[0].view());
    b1.load(init[1].view());
    W2.load(init[2].view());
    auto logits = tf::matmul(tf::relu(tf::matmul(x, W1) + b1), W2);
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    auto step = tf::train::sgd(0.3f).minimize(loss);
    tf::session s;
    std::vector<float> losses;
    for (int i = 0; i < steps; ++i) losses.push_back(std::get<0>(s.run(tf::fetch(loss, step), tf::feed(x, xv), tf::feed(y, yv)))[0]);
    return {losses, {W1.value().clone(), b1.value().clone(), W2.value().clone()}};
}
}  // namespace

TEST_CASE("device memory: a training run on a device of its own memory follows the cpu", "[device_memory]") {
    rng_t r(3);
    const std::vector<tf::tensor<float>> init{uniform_tensor<float>(r, tf::dims{6, 5}, 0, 0, -0.5, 0.5),
                                              uniform_tensor<float>(r, tf::dims{5}, 0, 0, -0.1, 0.1),
                                              uniform_tensor<float>(r, tf::dims{5, 3}, 0, 0, -0.5, 0.5)};
    const auto xv = uniform_tensor<float>(r, tf::dims{16, 6}, 0, 0, -1, 1);
    const auto yv = uniform_tensor<std::int32_t>(r, tf::dims{16}, 0, 2, 0, 0);
    em() = {};
    const auto [le, we] = train<E>(init, xv, yv, 12);
    const auto [lc, wc] = train<tf::cpu>(init, xv, yv, 12);
    REQUIRE(le.size() == lc.size());
    for (std::size_t i = 0; i < le.size(); ++i) {
        INFO("step " << i);
        CHECK(std::abs(le[i] - lc[i]) <= 1e-5f * std::max(1.0f, std::abs(lc[i])));
    }
    for (std::size_t i = 0; i < we.size(); ++i) expect_values("weights " + std::to_string(i), we[i], wc[i].dims(), [&] {
            std::vector<double> v;
            for (tf::index_t k = 0; k < wc[i].size(); ++k) v.push_back(wc[i][k]);
            return v;
        }(), 1e-4, 1e-6);
    // the variables' updates commit by swapping buffers: no device-to-device copies
    CHECK(em().copies == 0);
    CHECK(em().finishes >= 12);
    CHECK(em().live.empty());  // every device buffer was freed with its session and variables
}

TEST_CASE("device memory: variables stay coherent between the host and the device", "[device_memory]") {
    em() = {};
    {
        tf::variable<"v", float, tf::shape<3>, E> v;
        tf::session s;
        auto inc = tf::assign_add(v, 1.0f);
        s.run(inc);
        s.run(inc);
        expect_values("after two increments", v.value(), tf::dims{3}, {2, 2, 2});
        const int downloads = em().downloads;
        (void)static_cast<const decltype(v)&>(v).value();  // a second read: nothing to download
        CHECK(em().downloads == downloads);
        v.value()[1] = 10.0f;  // a host write reaches the next run
        s.run(inc);
        expect_values("after a host write", v.value(), tf::dims{3}, {3, 11, 3});
        const std::vector<float> nv{5, 6, 7};
        v.load(tf::view(nv));
        expect_values("read through the graph", s.run(v * 2.0f), tf::dims{3}, {10, 12, 14});
        expect_values("the variable fetched", s.run(v), tf::dims{3}, {5, 6, 7});
        // the value of an assign is the new value; reads in the same run see the old one
        auto [nvv, old] = s.run(tf::fetch(tf::assign(v, v * 3.0f), v + 0.0f));
        expect_values("the assign's value", nvv, tf::dims{3}, {15, 18, 21});
        expect_values("a read beside it", old, tf::dims{3}, {5, 6, 7});
        expect_values("after it", v.value(), tf::dims{3}, {15, 18, 21});
    }
    CHECK(em().live.empty());
}

TEST_CASE("device memory: constants scalars views and transfers", "[device_memory]") {
    em() = {};
    tf::placeholder<"x", float, tf::shape<2, 3>, E> x;
    tf::placeholder<"h", float, tf::shape<2, 3>> h;  // on the host
    auto c = tf::constant<tf::shape<3>, E>({1.f, 2.f, 3.f});
    tf::scalar<float, E> k(2.0f);
    tf::session s;
    const std::vector<float> xv{1, 2, 3, 4, 5, 6};
    auto [y, rs, back] = s.run(tf::fetch(x * k + c, tf::reshape<3, 2>(x), tf::to<tf::cpu>(x) + h), tf::feed(x, xv), tf::feed(h, xv));
    expect_values("x * k + c", y, tf::dims{2, 3}, {3, 6, 9, 9, 12, 15});
    expect_values("a view fetched", rs, tf::dims{3, 2}, {1, 2, 3, 4, 5, 6});
    expect_values("to<cpu>", back, tf::dims{2, 3}, {2, 4, 6, 8, 10, 12});
    // a plan sends its constants once and its feeds at every run
    auto y1 = x * k + c;
    (void)s.run(y1, tf::feed(x, xv));
    const int up = em().uploads;
    const auto y2 = s.run(y1, tf::feed(x, xv));
    expect_values("again", y2, tf::dims{2, 3}, {3, 6, 9, 9, 12, 15});
    CHECK(em().uploads - up == 1);  // the feed alone
    // host to device and back inside one graph
    auto z = tf::to<tf::cpu>(tf::to<E>(h) * 2.0f);
    expect_values("round trip", s.run(z, tf::feed(h, xv)), tf::dims{2, 3}, {2, 4, 6, 8, 10, 12});
}

TEST_CASE("device memory: bad input loses nothing", "[device_memory]") {
    em() = {};
    tf::placeholder<"x", float, tf::shape<tf::dyn, 2>, E> x;
    tf::variable<"v", float, tf::shape<2>, E> v;
    const std::vector<float> one{1, 1};
    v.load(tf::view(one));
    tf::session s;
    auto step = tf::assign_add(v, tf::sum<0>(x));
    const tf::tensor<float> wrong(tf::dims{2, 3});
    CHECK_THROWS_WITH(s.run(step, tf::feed(x, wrong)), Catch::Contains("'x'"));
    expect_values("after a bad feed", v.value(), tf::dims{2}, {1, 1});
    // out of device memory: a tf::error naming the node and the bytes; the session runs on
    em().fail_above = 1 << 20;
    const tf::tensor<float> big(tf::dims{1 << 18, 2});
    try {
        s.run(step, tf::feed(x, big));
        FAIL("no error");
    } catch (const tf::error& e) {
        const std::string m = e.what();
        INFO(m);
        CHECK(m.find("2097152") != std::string::npos);
        CHECK(m.find("'x'") != std::string::npos);
    }
    em().fail_above = ~std::size_t{0};
    expect_values("after running out of memory", v.value(), tf::dims{2}, {1, 1});
    const std::vector<float> xs{1, 2, 3, 4};
    s.run(step, tf::feed(x, tf::view(xs, {2, 2})));
    expect_values("a good run after both", v.value(), tf::dims{2}, {5, 7});
}

TEST_CASE("device memory: control flow on such a device is refused with a clear error", "[device_memory]") {
    tf::placeholder<"p", bool, tf::shape<>, E> p;
    tf::placeholder<"x", float, tf::shape<2>, E> x;
    tf::session s;
    auto y = tf::cond(p, [&] { return x * 2.0f; }, [&] { return x; });
    const bool pv = true;
    CHECK_THROWS_WITH(s.run(y, tf::feed(p, tf::tensor_view<const bool>{&pv, tf::dims{}}), tf::feed(x, std::vector<float>{1, 2})),
                      Catch::Contains("runs on host devices only"));
}


TEST_CASE("device memory: optimizers with slots update on such a device as on the cpu", "[device_memory]") {
    rng_t r(4);
    const auto w0 = uniform_tensor<float>(r, tf::dims{3, 2}, 0, 0, -1, 1);
    const auto xv = uniform_tensor<float>(r, tf::dims{4, 3}, 0, 0, -1, 1);
    em() = {};
    const auto e = optimize_on<E>(w0, xv);
    const auto c = optimize_on<tf::cpu>(w0, xv);
    REQUIRE(e.size() == c.size());
    for (std::size_t i = 0; i < e.size(); ++i) {
        INFO("value " << i);
        CHECK(std::abs(e[i] - c[i]) <= 1e-5f * std::max(1.0f, std::abs(c[i])));
    }
    CHECK(em().copies > 0);  // an update of a variable and its slots is written by copies
    for (std::size_t i = 0; i < c.size(); ++i) CHECK(c[i] != w0[static_cast<tf::index_t>(i % 6)]);  // every optimizer moved w
}

namespace {
namespace L = tf::layers;
// A small CNN of the lectures' kind, its input (and so its variables and ops) on device D.
template <class D>
using small_cnn = tf::models::sequential<L::input_on<D, float, 8, 8, 1>, L::conv2d<4, 3, L::relu>, L::max_pool2d<2>, L::flatten,
                                         L::dense<3>>;
template <class M>
std::vector<tf::tensor<float>> weights_of(const M& m) {
    return {m.template layer<0>().kernel.value().clone(), m.template layer<0>().bias.value().clone(),
            m.template layer<3>().kernel.value().clone(), m.template layer<3>().bias.value().clone()};
}
template <class M>
void load_weights_into(const M& m, const std::vector<tf::tensor<float>>& w) {
    // a variable's copies share its storage
    auto k0 = m.template layer<0>().kernel;
    auto b0 = m.template layer<0>().bias;
    auto k3 = m.template layer<3>().kernel;
    auto b3 = m.template layer<3>().bias;
    k0.load(w[0].view()), b0.load(w[1].view()), k3.load(w[2].view()), b3.load(w[3].view());
}
}  // namespace

TEST_CASE("device memory: a sequential model on such a device trains with fit and saves as on the cpu", "[device_memory][models]") {
    using ce = tf::losses::sparse_categorical_crossentropy<tf::losses::from_logits>;
    STATIC_REQUIRE(std::is_same_v<small_cnn<E>::device, E>);
    STATIC_REQUIRE(std::is_same_v<tf::device_t<std::tuple_element_t<0, decltype(small_cnn<E>{}.outputs(tf::training))>>, E>);
    // batches of 8x8 images: class k has a bright 2x2 block in quadrant k (of 3)
    std::mt19937 r(5);
    std::vector<std::pair<tf::tensor<float>, tf::tensor<std::int32_t>>> ds;
    for (int b = 0; b < 4; ++b) {
        tf::tensor<float> x(tf::dims{12, 8, 8, 1});
        tf::tensor<std::int32_t> y(tf::dims{12});
        for (int i = 0; i < 12; ++i) {
            const int k = (i + b) % 3;
            y[i] = k;
            for (int p = 0; p < 64; ++p) x[i * 64 + p] = 0.2f * static_cast<float>(r() % 5) / 5.0f;
            for (int a = 0; a < 2; ++a)
                for (int c = 0; c < 2; ++c) x[i * 64 + (1 + 4 * (k % 2) + a) * 8 + 1 + 4 * (k / 2) + c] = 1.0f;
        }
        ds.emplace_back(std::move(x), std::move(y));
    }
    auto on_cpu = small_cnn<tf::cpu>{}.compile(ce{}, tf::optimizers::adam{.learning_rate = 0.02}, tf::metrics::accuracy{});
    auto on_dev = small_cnn<E>{}.compile(ce{}, tf::optimizers::adam{.learning_rate = 0.02}, tf::metrics::accuracy{});
    load_weights_into(on_dev.model(), weights_of(on_cpu.model()));
    em() = {};
    const auto hc = on_cpu.fit(ds, {.epochs = 6, .verbose = 0});
    const auto hd = on_dev.fit(ds, {.epochs = 6, .verbose = 0});
    CHECK(em().uploads > 0);  // the batches went to the device
    for (std::size_t e = 0; e < 6; ++e) {
        INFO("epoch " << e);
        CHECK(std::abs(hd["loss"][e] - hc["loss"][e]) <= 1e-4 * std::max(1.0, std::abs(hc["loss"][e])));
    }
    CHECK(hd["loss"].back() < 0.5 * hd["loss"].front());  // it learns
    const auto wc = weights_of(on_cpu.model()), wd = weights_of(on_dev.model());
    for (std::size_t i = 0; i < wc.size(); ++i)
        for (tf::index_t j = 0; j < wc[i].size(); ++j) REQUIRE(std::abs(wd[i][j] - wc[i][j]) <= 1e-3f * std::max(1.0f, std::abs(wc[i][j])));
    CHECK(on_dev.evaluate(ds).at("accuracy") == on_cpu.evaluate(ds).at("accuracy"));
    // weights saved from the device model load bit-exactly into a cpu model
    iotest::temp_dir dir;
    const auto path = dir / "weights.tfckpt";
    on_dev.save_weights(path);
    auto again = small_cnn<tf::cpu>{}.compile(ce{}, tf::optimizers::adam{}, tf::metrics::accuracy{});
    again.load_weights(path);
    const auto wa = weights_of(again.model());
    for (std::size_t i = 0; i < wa.size(); ++i) CHECK(std::memcmp(wa[i].data(), wd[i].data(), wa[i].size() * sizeof(float)) == 0);
}
