// The runtime's growable array of trivially copyable elements
// (core/pod_vector.hpp), against std::vector as the reference.
#include <random>
#include <vector>

#include <catch2/catch.hpp>

#include <typeflow/core/pod_vector.hpp>

using typeflow::detail::pod_vector;

namespace {
struct item {
    long a;
    double b;
};
template <class T>
bool same(const pod_vector<T>& p, const std::vector<T>& v) {
    if (p.size() != v.size()) return false;
    for (std::size_t i = 0; i < v.size(); ++i)
        if (p[i] != v[i]) return false;
    return true;
}
}  // namespace

TEST_CASE("pod_vector: random push_back, resize, assign, append match std::vector", "[pod_vector]") {
    std::mt19937 rng(11);
    pod_vector<long> p;
    std::vector<long> v;
    for (int step = 0; step < 5000; ++step) {
        switch (rng() % 6) {
        case 0:
        case 1: {
            const long x = static_cast<long>(rng() % 1000);
            p.push_back(x);
            v.push_back(x);
            break;
        }
        case 2: {
            const std::size_t n = rng() % 300;
            p.resize(n);
            v.resize(n);  // value-initialised: zero, as pod_vector's zero bytes
            break;
        }
        case 3: {
            const std::size_t n = rng() % 50;
            const long x = static_cast<long>(rng() % 7);
            p.assign(n, x);
            v.assign(n, x);
            break;
        }
        case 4: {
            const long src[3] = {1, 2, 3};
            p.append(src, 3);
            v.insert(v.end(), src, src + 3);
            break;
        }
        case 5:
            if (!v.empty()) {  // push_back of an element of the array itself, at full capacity
                const long x = v.front();
                p.push_back(p[0]);
                v.push_back(x);
            }
            break;
        }
        REQUIRE(same(p, v));
    }
}

TEST_CASE("pod_vector: copies are independent, moves take the elements", "[pod_vector]") {
    pod_vector<item> a;
    for (long i = 0; i < 100; ++i) a.push_back({i, 0.5 * static_cast<double>(i)});
    pod_vector<item> b = a;
    b[3].a = -1;
    CHECK(a[3].a == 3);
    CHECK(b.size() == 100);
    pod_vector<item> c = static_cast<pod_vector<item>&&>(b);
    CHECK(b.empty());
    CHECK(c.size() == 100);
    CHECK(c[3].a == -1);
    CHECK(c[99].b == 49.5);
    a = c;
    CHECK(a[3].a == -1);
    a = pod_vector<item>(7);
    CHECK(a.size() == 7);
    CHECK(a[6].a == 0);
    CHECK(a[6].b == 0.0);
}

TEST_CASE("pointer_set: insert reports new pointers once, across growth", "[pod_vector]") {
    typeflow::detail::pointer_set s;
    std::vector<long> storage(5000);
    std::mt19937 rng(3);
    std::vector<bool> in(storage.size(), false);
    std::size_t distinct = 0;
    for (int step = 0; step < 20000; ++step) {
        const std::size_t i = rng() % storage.size();
        const bool fresh = s.insert(&storage[i]);
        REQUIRE(fresh == !in[i]);
        if (fresh) ++distinct;
        in[i] = true;
        REQUIRE(s.size() == distinct);
    }
}

TEST_CASE("key_map: one pointer under several indices, across growth", "[pod_vector]") {
    typeflow::detail::key_map m;
    std::vector<long> storage(300);
    for (std::size_t p = 0; p < storage.size(); ++p)
        for (std::size_t i = 0; i < 3; ++i) {
            REQUIRE(m.find(&storage[p], i) == typeflow::detail::key_map::none);
            m.insert(&storage[p], i, static_cast<std::uint32_t>(10 * p + i));
        }
    REQUIRE(m.size() == 900);
    for (std::size_t p = 0; p < storage.size(); ++p)
        for (std::size_t i = 0; i < 3; ++i) REQUIRE(m.find(&storage[p], i) == 10 * p + i);
    REQUIRE(m.find(&storage[0], 3) == typeflow::detail::key_map::none);
    // set replaces one value and leaves the others
    for (std::size_t p = 0; p < storage.size(); p += 7) m.set(&storage[p], 1, static_cast<std::uint32_t>(p));
    for (std::size_t p = 0; p < storage.size(); ++p) {
        REQUIRE(m.find(&storage[p], 1) == (p % 7 == 0 ? p : 10 * p + 1));
        REQUIRE(m.find(&storage[p], 2) == 10 * p + 2);
    }
    REQUIRE(m.size() == 900);
}
