// The CUDA backend's dropout masks, tested without a GPU: the GPU kernel's
// element function (cuda::random::mask_at) and parameters, computed on the
// host, against the CPU's masks bit for bit, and the run counter's rule (run
// k of a node draws stream random_stream(seed, k)) against a CPU session.
#include <catch2/catch.hpp>

#include "../support.hpp"

#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace {
template <class T>
void check_masks(double rate, std::uint64_t seed, std::uint64_t run) {
    INFO("rate " << rate << " seed " << seed << " run " << run << (sizeof(T) == 4 ? " float" : " double"));
    constexpr tf::index_t n = 1000;
    const std::uint64_t stream = tf::detail::random_stream(seed, run);
    std::vector<T> cpu(n);
    tf::detail::dropout_mask_range(cpu.data(), 0, n, tf::detail::dropout_threshold(rate), tf::detail::dropout_scale<T>(rate), stream);
    const auto p = tf::cuda::random::params_of<T>(rate);
    CHECK(p.threshold == tf::detail::dropout_threshold(rate));
    CHECK(p.scale == tf::detail::dropout_scale<T>(rate));
    int kept = 0;
    for (tf::index_t i = 0; i < n; ++i) {
        const T g = tf::cuda::random::mask_at(stream, i, p);
        CHECK(std::memcmp(&g, &cpu[static_cast<std::size_t>(i)], sizeof(T)) == 0);
        kept += g != T(0);
    }
    CHECK(std::abs(kept - (1.0 - rate) * n) < 5 * std::sqrt(n * rate * (1 - rate)) + 1);  // binomial, 5 sigma
}
}  // namespace

TEST_CASE("cuda dropout: the GPU kernel's mask elements, on the host, equal the cpu's", "[host]") {
    for (double rate : {0.0, 0.1, 0.5, 0.9, 0.999})
        for (std::uint64_t seed : {std::uint64_t{0}, std::uint64_t{7}, std::uint64_t{1} << 40})
            for (std::uint64_t run : {0, 1, 5}) {
                check_masks<float>(rate, seed, run);
                check_masks<double>(rate, seed, run);
            }
    // the rates the kernel refuses are those the cpu refuses
    for (double rate : {-0.0, 0.0, 0.5, 1.0 - 1e-16, 1.0, -1e-300, 2.0, std::numeric_limits<double>::quiet_NaN()}) {
        bool cpu_ok = true;
        try {
            tf::detail::check_dropout_rate(rate);
        } catch (const tf::error&) {
            cpu_ok = false;
        }
        CHECK(tf::cuda::random::rate_ok(rate) == cpu_ok);
    }
}

TEST_CASE("cuda dropout: a node's run k draws the stream of (seed, k), as the GPU's counter does", "[host]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn>> x;
    tf::scalar<float> rate(0.3f);
    tf::session s;
    const tf::tensor<float> xv(tf::dims{257});
    auto fixed = tf::dropout_mask<0.25, 9>(x);
    auto fed = tf::dropout_mask(x, rate, 11);
    for (std::uint64_t run = 0; run < 4; ++run) {
        INFO("run " << run);
        auto [a, b] = s.run(tf::fetch(fixed, fed), tf::feed(x, xv));
        const auto pa = tf::cuda::random::params_of<float>(0.25);
        const auto pb = tf::cuda::random::params_of<float>(static_cast<double>(0.3f));
        for (tf::index_t i = 0; i < 257; ++i) {
            CHECK(a[i] == tf::cuda::random::mask_at(tf::detail::random_stream(9, run), i, pa));
            CHECK(b[i] == tf::cuda::random::mask_at(tf::detail::random_stream(11, run), i, pb));
        }
    }
}
