// The arena planner: buffers live at the same time never overlap; buffers
// whose lifetimes are disjoint share memory.
#include <algorithm>
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <typeflow/core/error.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/runtime/memory_plan.hpp>

using typeflow::runtime::buffer_request;
using typeflow::runtime::plan_memory;

namespace {
bool overlap(const buffer_request& a, const buffer_request& b) {
    const bool live_together = !(a.last < b.first || b.last < a.first);
    const bool bytes_overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
    return live_together && bytes_overlap && a.bytes > 0 && b.bytes > 0;
}
}  // namespace

TEST_CASE("memory plan: a chain reuses memory", "[memory_plan]") {
    // 0 -> 1 -> 2 -> 3, each buffer read only by the next step
    std::vector<buffer_request> r{{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
    const std::size_t total = plan_memory(r.data(), r.size());
    CHECK(total == 2 * 1024);  // two 64-byte-aligned buffers suffice
    for (std::size_t i = 0; i < r.size(); ++i) {
        CHECK(r[i].offset % 64 == 0);
        for (std::size_t j = 0; j < i; ++j) CHECK_FALSE(overlap(r[i], r[j]));
    }
}

TEST_CASE("memory plan: random lifetimes never overlap", "[memory_plan]") {
    std::mt19937 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
        std::vector<buffer_request> r(1 + rng() % 40);
        std::size_t sum = 0;
        for (auto& b : r) {
            b.bytes = rng() % 5000;
            b.first = rng() % 30;
            b.last = b.first + rng() % 10;
            sum += (b.bytes + 63) / 64 * 64;
        }
        const std::size_t total = plan_memory(r.data(), r.size());
        REQUIRE(total <= sum);
        for (std::size_t i = 0; i < r.size(); ++i) {
            REQUIRE(r[i].offset + r[i].bytes <= total);
            for (std::size_t j = 0; j < i; ++j) REQUIRE_FALSE(overlap(r[i], r[j]));
        }
    }
}

namespace {
// The greedy placement written with the standard library: the planner (plain
// code with its own sort) must give the same offsets.
std::size_t plan_naive(std::vector<buffer_request>& r) {
    const auto padded = [](std::size_t b) { return (b + 63) / 64 * 64; };
    std::vector<std::size_t> order(r.size());
    for (std::size_t i = 0; i < r.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return r[a].bytes > r[b].bytes; });
    std::vector<std::size_t> placed;
    std::size_t total = 0;
    for (std::size_t i : order) {
        std::vector<std::size_t> live;
        for (std::size_t j : placed)
            if (!(r[j].last < r[i].first || r[i].last < r[j].first)) live.push_back(j);
        std::stable_sort(live.begin(), live.end(), [&](std::size_t a, std::size_t b) { return r[a].offset < r[b].offset; });
        std::size_t off = 0;
        for (std::size_t j : live) {
            if (r[j].offset >= off + padded(r[i].bytes)) break;
            off = std::max(off, r[j].offset + padded(r[j].bytes));
        }
        r[i].offset = off;
        total = std::max(total, off + padded(r[i].bytes));
        placed.push_back(i);
    }
    return total;
}
}  // namespace

TEST_CASE("memory plan: offsets equal a reference greedy placement", "[memory_plan]") {
    std::mt19937 rng(11);
    for (int trial = 0; trial < 60; ++trial) {
        // short lifetimes over many steps (a deep chain), some long ones, some empty buffers
        const std::size_t n = 1 + rng() % 3000, steps = 1 + rng() % 5000;
        std::vector<buffer_request> r(n);
        for (auto& b : r) {
            b.bytes = rng() % 7 == 0 ? 0 : rng() % 20000;
            b.first = rng() % steps;
            b.last = b.first + (rng() % 13 == 0 ? rng() % steps : rng() % 4);
        }
        std::vector<buffer_request> ref = r;
        const std::size_t total = plan_memory(r.data(), r.size());
        REQUIRE(total == plan_naive(ref));
        for (std::size_t i = 0; i < n; ++i) REQUIRE(r[i].offset == ref[i].offset);
    }
}

// Sizes near the top of size_t: padding a buffer, or placing two side by
// side, used to wrap around to a small arena.
TEST_CASE("memory plan: buffers that do not fit one arena are a tf::error, not a wrapped size", "[memory_plan]") {
    const std::size_t half = ~std::size_t{0} / 2 + 64;  // two side by side end past 2^64
    std::vector<buffer_request> both = {{half, 0, 1, 0}, {half, 1, 2, 0}};  // live together at step 1
    CHECK_THROWS_AS(plan_memory(both.data(), both.size()), typeflow::error);
    const std::size_t big = typeflow::max_tensor_bytes / 2 + 64;  // side by side: more than any object
    both = {{big, 0, 1, 0}, {big, 1, 2, 0}};
    CHECK_THROWS_AS(plan_memory(both.data(), both.size()), typeflow::error);
    std::vector<buffer_request> one = {{~std::size_t{0} - 10, 0, 0, 0}};  // padding alone wraps
    CHECK_THROWS_AS(plan_memory(one.data(), one.size()), typeflow::error);
    std::vector<buffer_request> fits = {{std::size_t{1} << 40, 0, 1, 0}, {std::size_t{1} << 40, 1, 2, 0}};
    CHECK(plan_memory(fits.data(), fits.size()) == std::size_t{1} << 41);
}
