// The arena planner: buffers live at the same time never overlap; buffers
// whose lifetimes are disjoint share memory.
#include <random>

#include <catch2/catch.hpp>

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
