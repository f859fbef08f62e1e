// The tensor type, views, Eigen interop and initialisers.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

TEST_CASE("tensor: row-major storage, element access, shared copies", "[tensor]") {
    tf::tensor<float> t({2, 3}, {1, 2, 3, 4, 5, 6});
    CHECK(t.rank() == 2);
    CHECK(t.size() == 6);
    CHECK(t(1, 0) == 4.f);
    CHECK(t[5] == 6.f);
    auto shared = t;
    shared(0, 0) = 9.f;
    CHECK(t(0, 0) == 9.f);  // copies share elements
    auto deep = t.clone();
    deep(0, 0) = 1.f;
    CHECK(t(0, 0) == 9.f);
    CHECK(tf::tensor<int>({2, 2}).to_vector() == std::vector<int>{0, 0, 0, 0});
    CHECK_THROWS_AS(tf::tensor<float>({2}, {1, 2, 3}), tf::error);
    CHECK_THROWS_AS(t.item(), tf::error);
    CHECK(t.reshaped({3, 2})(2, 1) == 6.f);
    CHECK_THROWS_AS(t.reshaped({4, 2}), tf::error);
    CHECK(reinterpret_cast<std::uintptr_t>(t.data()) % 64 == 0);
}

// Buffers of 64 KiB and more start on a page (see detail::buffer_alignment):
// tensors, and the intermediates and results a session makes.
TEST_CASE("tensor: storage of 64 KiB and more is page-aligned, smaller 64-byte aligned", "[tensor]") {
    const auto offset = [](const void* p, std::uintptr_t a) { return reinterpret_cast<std::uintptr_t>(p) % a; };
    for (int k = 0; k < 4; ++k) {  // several blocks: malloc'ed ones of this size start 16 bytes into a page
        const tf::tensor<float> big({16384});  // 64 KiB
        CHECK(offset(big.data(), 4096) == 0);
        const tf::tensor<float> below({16383});
        CHECK(offset(below.data(), 64) == 0);
        const tf::tensor<bool> small({100});
        CHECK(offset(small.data(), 64) == 0);
    }
    CHECK(tf::detail::buffer_alignment(65535) == 64);
    CHECK(tf::detail::buffer_alignment(65536) == 4096);
    // the plan's arena comes from allocate_buffer
    void* block = tf::detail::allocate_buffer(std::size_t{1} << 20);
    CHECK(offset(block, 4096) == 0);
    tf::detail::free_buffer(block, std::size_t{1} << 20);

    tf::placeholder<"x", float, tf::shape<tf::dyn>> x;
    tf::tensor<float> xv({1 << 16});
    for (long i = 0; i < xv.size(); ++i) xv[i] = static_cast<float>(i % 7);
    tf::session s;
    // exp(x) * 2 is materialised in the arena (a reduction reads it); exp(x) + 1 is a result
    auto y = tf::sum(tf::exp(x) * 2.0f) + tf::sum(x);
    auto [r, e] = s.run(tf::fetch(y, tf::exp(x) + 1.0f), tf::feed(x, xv));
    CHECK(offset(e.data(), 4096) == 0);
    CHECK(s.stats().arena_bytes >= std::size_t{1} << 18);
    double want = 0;
    for (long i = 0; i < xv.size(); ++i) want += 2.0 * std::exp(static_cast<double>(xv[i])) + xv[i];
    CHECK(r.item() == Approx(want).epsilon(1e-4));  // float sums of 2^16 terms
}

TEST_CASE("tensor: zero-copy views from std::vector and Eigen", "[tensor][interop]") {
    std::vector<float> v{1, 2, 3, 4};
    auto view = tf::view(v, {2, 2});
    CHECK(view.data == v.data());
    CHECK_THROWS_AS(tf::view(v, {3, 2}), tf::error);

    tf::row_matrix<float> m(2, 3);
    m << 1, 2, 3, 4, 5, 6;
    auto mv = tf::view(m);
    CHECK(mv.data == m.data());
    CHECK(mv.dims == tf::dims{2, 3});

    tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;
    tf::session s;
    auto r = s.run(x * 2.0f, tf::feed(x, tf::view(m)));
    auto rm = tf::as_matrix(r);  // a map over the result, no copy
    CHECK(rm.data() == r.data());
    CHECK(rm(1, 2) == 12.f);
    Eigen::VectorXd ev(3);
    ev << 1, 2, 3;
    CHECK(tf::view(ev).dims == tf::dims{3});
}

TEST_CASE("initialisers are reproducible and have the documented statistics", "[init]") {
    tf::variable<"a", float, tf::shape<200, 100>> a{tf::init::glorot_uniform{}};
    tf::variable<"a", float, tf::shape<200, 100>> a2{tf::init::glorot_uniform{}};
    tf::variable<"b", float, tf::shape<200, 100>> b{tf::init::glorot_uniform{}};
    CHECK(a.value().to_vector() == a2.value().to_vector());  // same name, same values
    CHECK(a.value().to_vector() != b.value().to_vector());   // another name, other values
    const double limit = std::sqrt(6.0 / 300.0);
    double mx = 0, sum = 0;
    for (float v : a.value().to_vector()) {
        mx = std::max(mx, std::abs(static_cast<double>(v)));
        sum += v;
    }
    CHECK(mx <= limit);
    CHECK(mx > 0.95 * limit);
    CHECK(std::abs(sum / 20000) < 0.01);

    tf::variable<"h", double, tf::shape<400, 50>> h{tf::init::he_normal{7}};
    double s2 = 0, m = 0;
    for (double v : h.value().to_vector()) {
        s2 += v * v;
        m = std::max(m, std::abs(v));
    }
    CHECK(std::sqrt(s2 / 20000) == Approx(std::sqrt(2.0 / 400)).epsilon(0.03));
    CHECK(m <= 2 * std::sqrt(2.0 / 400) / 0.87962566103423978 + 1e-12);

    tf::variable<"n", double, tf::shape<10000>> n{tf::init::normal{1.0, 2.0, 42}};
    double nm = 0, nv = 0;
    for (double v : n.value().to_vector()) nm += v;
    nm /= 10000;
    for (double v : n.value().to_vector()) nv += (v - nm) * (v - nm);
    CHECK(nm == Approx(1.0).margin(0.06));
    CHECK(std::sqrt(nv / 9999) == Approx(2.0).epsilon(0.03));

    tf::variable<"u", float, tf::shape<1000>> u{tf::init::uniform{2.0, 3.0, 1}};
    for (float v : u.value().to_vector()) REQUIRE((v >= 2.f && v < 3.f));
    tf::variable<"c", std::int32_t, tf::shape<3>> c{tf::init::constant{5}};
    CHECK(c.value().to_vector() == std::vector<std::int32_t>{5, 5, 5});
    tf::non_trainable_variable<"o", float, tf::shape<2>> o{tf::init::ones{}};
    STATIC_REQUIRE(!o.trainable());
    STATIC_REQUIRE(tf::variable<"t", float, tf::shape<2>>::trainable());
    STATIC_REQUIRE(!tf::variable<"i", int, tf::shape<2>>::trainable());
    CHECK(o.value()[1] == 1.f);
    CHECK_THROWS_AS(o.load(tf::tensor<float>({3}).view()), tf::error);
}

TEST_CASE("error messages: integers, extents, the 1 KiB cut and the thrown type", "[tensor][error]") {
    using tf::detail::message;
    message m;
    m << "a" << 0 << " " << -7 << " " << std::numeric_limits<long long>::min() << " " << std::size_t{42} << " "
      << tf::dims{2, tf::dyn, 3} << " " << tf::dims{};
    CHECK(m.view() == "a0 -7 -9223372036854775808 42 [2,?,3] []");
    CHECK(tf::to_string(tf::dims{4, tf::dyn}) == "[4,?]");
    message big;
    for (int i = 0; i < 300; ++i) big << "abcd";
    CHECK(big.view().size() == 1024);
    CHECK(big.view().substr(1020) == "abcd");
    try {
        tf::detail::raise(message() << "x " << 3 << " " << tf::dims{1});
        FAIL("raise returned");
    } catch (const tf::error& e) {
        CHECK(std::string(e.what()) == "typeflow: x 3 [1]");
    }
}

// Extents whose element count, or its size in bytes, does not fit are refused
// before anything is allocated: without the check (2^61 + 1) doubles asked for
// 8 bytes (the byte count wrapped) and [2^62, 4] made a tensor of size 0.
TEST_CASE("tensor: extents whose element count or size in bytes overflows are a tf::error naming them", "[tensor][error]") {
    const auto error_of = [](auto&& make) -> std::string {
        try {
            make();
        } catch (const tf::error& e) {
            return e.what();
        }
        return "no tf::error";
    };
    // the count fits, count * 8 bytes wraps
    CHECK_THAT(error_of([] { tf::tensor<double> t(tf::dims{(1LL << 61) + 1}); }),
               Catch::Contains("[2305843009213693953]") && Catch::Contains("float64") && Catch::Contains("overflows"));
    // the count itself wraps (to 0)
    CHECK_THAT(error_of([] { tf::tensor<double> t(tf::dims{1LL << 62, 4}); }),
               Catch::Contains("[4611686018427387904,4]") && Catch::Contains("overflows"));
    CHECK_THAT(error_of([] { tf::tensor<float> t(tf::dims{1LL << 31, 1LL << 31, 1LL << 31}); }),
               Catch::Contains("[2147483648,2147483648,2147483648]"));
    CHECK_THAT(error_of([] { tf::tensor<bool> t(tf::dims{1LL << 32, 1LL << 31}); }),  // 2^63 bytes
               Catch::Contains("[4294967296,2147483648]"));
    // negative extents
    CHECK_THAT(error_of([] { tf::tensor<float> t(tf::dims{2, -3}); }), Catch::Contains("[2,-3]"));
    // a zero extent makes the others harmless: the tensor is empty
    CHECK(tf::tensor<float>(tf::dims{0, 1LL << 62, 4}).size() == 0);
    // views and reshapes compare element counts that must not wrap either
    const tf::tensor<float> empty(tf::dims{0});
    CHECK_THROWS_AS(empty.reshaped(tf::dims{1LL << 62, 4}), tf::error);
    std::vector<float> none;
    CHECK_THROWS_AS(tf::view(none, tf::dims{1LL << 62, 4}), tf::error);
    // the checked count
    static_assert(tf::count_elements(tf::dims{2, 3}, 4).ok && tf::count_elements(tf::dims{2, 3}, 4).bytes == 24);
    static_assert(tf::count_elements(tf::dims{}, 8).numel == 1);
    static_assert(!tf::count_elements(tf::dims{(1LL << 61) + 1}, 8).ok);
    static_assert(tf::count_elements(tf::dims{(1LL << 61) + 1}, 2).ok);
    static_assert(!tf::count_elements(tf::dims{1LL << 62, 4}, 1).ok);
    static_assert(!tf::count_elements(tf::dims{3, tf::dyn}, 4).ok);
    static_assert(!tf::count_elements(tf::dims{1LL << 62, 4, 0}, 1).ok);  // an overflow before a zero extent
    static_assert(tf::count_elements(tf::dims{3, 0, 1LL << 62}, 8).ok);   // empty: nothing after the zero overflows
}

// Memory that cannot be had is a tf::error that names the shape and the bytes,
// not std::bad_alloc. 2^46 floats are 256 TiB: more than a 47-bit user address
// space holds, so the allocation fails on any machine, whatever its overcommit policy.
TEST_CASE("tensor: memory that cannot be allocated is a tf::error naming the shape and the bytes", "[tensor][error]") {
    try {
        tf::tensor<float> t(tf::dims{1LL << 46});
        FAIL("allocated " << t.size() << " floats");
    } catch (const tf::error& e) {
        CHECK_THAT(e.what(), Catch::Contains("cannot allocate") && Catch::Contains("281474976710656 bytes") &&
                                 Catch::Contains("[70368744177664]") && Catch::Contains("float32"));
    }
    tf::tensor<float> fine({2}, {1, 2});
    CHECK(fine[1] == 2.f);
}
