// Session semantics: CSE, partial execution, assign ordering, feeds and their
// errors, dyn binding, identity by name, results.
#include <catch2/catch.hpp>

#include <typeflow/typeflow.hpp>

#include <vector>

namespace tf = typeflow;

TEST_CASE("a node reachable twice is computed once per run", "[session][cse]") {
    tf::placeholder<"x", float, tf::shape<2, 3>> x;
    tf::variable<"W", float, tf::shape<3, 3>> W{tf::init::ones{}};
    tf::tensor<float> xb({2, 3}, {1, 2, 3, 4, 5, 6});
    tf::session s;

    SECTION("one object used twice") {
        auto m = tf::matmul(x, W);
        auto y = m + m;
        auto r = s.run(y, tf::feed(x, xb));
        CHECK(r(0, 0) == 12.f);
        CHECK(r(1, 2) == 30.f);
        CHECK(s.stats().evaluations == 2);  // matmul once, then the fused add
    }
    SECTION("two separately built nodes of one type are one node") {
        auto y = tf::sum(tf::matmul(x, W)) + tf::sum(tf::matmul(x, W));
        auto r = s.run(y, tf::feed(x, xb));
        CHECK(r.item() == 2 * (6 * 3 + 15 * 3));
        CHECK(s.stats().evaluations == 3);  // matmul, sum, add
    }
    SECTION("fetching a node and its consumer computes the node once") {
        auto m = tf::matmul(x, W);
        auto [mv, sv] = s.run(tf::fetch(m, tf::sum(m)), tf::feed(x, xb));
        CHECK(mv(1, 0) == 15.f);
        CHECK(sv.item() == 63.f);
        CHECK(s.stats().evaluations == 2);
    }
    SECTION("subtrees holding different anonymous constants are not merged") {
        auto y = tf::sum(x * 2.0f) + tf::sum(x * 3.0f);
        auto r = s.run(y, tf::feed(x, xb));
        CHECK(r.item() == Approx(21 * 2 + 21 * 3));
    }
    SECTION("the same anonymous constant subtree used twice is computed once") {
        auto t = tf::sum(x * 2.0f);
        auto r = s.run(t * t, tf::feed(x, xb));
        CHECK(r.item() == Approx(42.f * 42.f));
        CHECK(s.stats().evaluations == 3);  // x * 2 (a reduction's input is materialised), sum, the product
    }
}

TEST_CASE("only the fetched subgraph runs", "[session][partial]") {
    tf::placeholder<"a", float, tf::shape<2>> a;
    tf::placeholder<"unfed", float, tf::shape<2>> unfed;
    auto used = a * 2.0f;
    auto unused_branch = unfed + 1.0f;
    (void)unused_branch;
    tf::session s;
    auto r = s.run(used, tf::feed(a, std::vector<float>{1, 2}));
    CHECK(r[0] == 2.f);
    CHECK(r[1] == 4.f);
    // the unfetched branch needs a feed only when it is fetched
    CHECK_THROWS_AS(s.run(unused_branch, tf::feed(a, std::vector<float>{1, 2})), tf::error);
}

TEST_CASE("feed errors name the placeholder and both shapes", "[session][feed]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;
    tf::variable<"W", float, tf::shape<3, 2>> W{tf::init::ones{}};
    auto y = tf::matmul(x, W);
    tf::session s;
    SECTION("missing feed") {
        try {
            s.run(y);
            FAIL("no error");
        } catch (const tf::error& e) {
            CHECK_THAT(e.what(), Catch::Contains("'x'") && Catch::Contains("[?,3]") && Catch::Contains("fed"));
        }
    }
    SECTION("wrong static extent") {
        tf::tensor<float> bad({4, 2});
        try {
            s.run(y, tf::feed(x, bad));
            FAIL("no error");
        } catch (const tf::error& e) {
            CHECK_THAT(e.what(), Catch::Contains("'x'") && Catch::Contains("[?,3]") && Catch::Contains("[4,2]"));
        }
    }
    SECTION("wrong rank") {
        tf::tensor<float> bad({12});
        CHECK_THROWS_WITH(s.run(y, tf::feed(x, bad)), Catch::Contains("[?,3]") && Catch::Contains("[12]"));
    }
    SECTION("a vector of the wrong size for a static placeholder") {
        tf::placeholder<"v", float, tf::shape<2, 2>> v;
        CHECK_THROWS_WITH(tf::feed(v, std::vector<float>{1, 2, 3}), Catch::Contains("'v'") && Catch::Contains("[2,2]"));
    }
    SECTION("a failed run leaves the session usable and the plan intact") {
        tf::tensor<float> good({2, 3}, {1, 1, 1, 2, 2, 2});
        CHECK(s.run(y, tf::feed(x, good))(1, 1) == 6.f);
        CHECK_THROWS_AS(s.run(y, tf::feed(x, tf::tensor<float>({2, 4}))), tf::error);
        CHECK(s.run(y, tf::feed(x, good))(0, 0) == 3.f);
    }
}

TEST_CASE("dyn extents are bound per run and checked across feeds", "[session][dyn]") {
    tf::placeholder<"a", float, tf::shape<tf::dyn>> a;
    tf::placeholder<"b", float, tf::shape<tf::dyn>> b;
    auto y = a * b;
    tf::session s;
    CHECK(s.run(y, tf::feed(a, std::vector<float>{1, 2, 3}.data() ? tf::tensor<float>({3}, {1, 2, 3}) : tf::tensor<float>()),
                tf::feed(b, tf::tensor<float>({3}, {4, 5, 6})))[2] == 18.f);
    // a different batch size re-plans
    auto r = s.run(y, tf::feed(a, tf::tensor<float>({2}, {1, 2})), tf::feed(b, tf::tensor<float>({2}, {3, 4})));
    CHECK(r.size() == 2);
    CHECK(r[1] == 8.f);
    // an extent of 1 broadcasts, as in numpy
    r = s.run(y, tf::feed(a, tf::tensor<float>({1}, {2})), tf::feed(b, tf::tensor<float>({3}, {1, 2, 3})));
    CHECK(r.size() == 3);
    CHECK(r[2] == 6.f);
    // inconsistent extents: an error naming the op and both shapes
    try {
        s.run(y, tf::feed(a, tf::tensor<float>({3})), tf::feed(b, tf::tensor<float>({2})));
        FAIL("no error");
    } catch (const tf::error& e) {
        CHECK_THAT(e.what(), Catch::Contains("mul") && Catch::Contains("[3]") && Catch::Contains("[2]"));
    }
    // and the session still works with the earlier binding
    r = s.run(y, tf::feed(a, tf::tensor<float>({2}, {1, 2})), tf::feed(b, tf::tensor<float>({2}, {3, 4})));
    CHECK(r[0] == 3.f);

    tf::placeholder<"x", float, tf::shape<tf::dyn, 2>> x;
    tf::placeholder<"w", float, tf::shape<tf::dyn, 3>> w;
    CHECK_THROWS_WITH(s.run(tf::matmul(x, w), tf::feed(x, tf::tensor<float>({4, 2})), tf::feed(w, tf::tensor<float>({5, 3}))),
                      Catch::Contains("matmul") && Catch::Contains("[4,2]") && Catch::Contains("[5,3]"));
}

TEST_CASE("assign ops: reads see the value at the start of the run", "[session][assign]") {
    tf::variable<"v", float, tf::shape<2>> v{tf::init::constant{1.0}};
    tf::session s;

    SECTION("assign_add returns the new value and writes it") {
        auto r = s.run(tf::assign_add(v, 2.0f));
        CHECK(r[0] == 3.f);
        CHECK(v.value()[1] == 3.f);
        s.run(tf::assign_add(v, 2.0f));
        CHECK(v.value()[0] == 5.f);
    }
    SECTION("a read fetched beside a write sees the old value") {
        auto [old, upd] = s.run(tf::fetch(v * 1.0f, tf::assign(v, v * 10.0f)));
        CHECK(old[0] == 1.f);
        CHECK(upd[0] == 10.f);
        CHECK(v.value()[0] == 10.f);
    }
    SECTION("assign_sub and assign with broadcasting") {
        s.run(tf::assign_sub(v, 0.5f));
        CHECK(v.value()[0] == 0.5f);
        tf::variable<"m", float, tf::shape<2, 2>> m;
        tf::placeholder<"row", float, tf::shape<2>> row;
        s.run(tf::assign(m, row), tf::feed(row, std::vector<float>{7, 8}));
        CHECK(m.value()(1, 0) == 7.f);
        CHECK(m.value()(1, 1) == 8.f);
    }
    SECTION("a control dependency orders a read after a write") {
        auto write = tf::assign(v, 4.0f);
        auto read_after = tf::with_dependencies(v * 1.0f, write);
        auto [r, w] = s.run(tf::fetch(read_after, v * 1.0f));
        CHECK(r[0] == 4.f);  // after the write
        (void)w;
        CHECK(v.value()[0] == 4.f);
    }
    SECTION("writes to a variable that feeds its own update use the old value everywhere") {
        // v <- v + sum(v): both reads see the value before the write
        auto r = s.run(tf::assign(v, v + tf::sum(v)));
        CHECK(r[0] == 3.f);
        CHECK(v.value()[1] == 3.f);
    }
    SECTION("a dyn-shaped value that does not fit the variable is an error and changes nothing") {
        tf::placeholder<"d", float, tf::shape<tf::dyn>> d;
        CHECK_THROWS_WITH(s.run(tf::assign(v, d), tf::feed(d, tf::tensor<float>({3}))),
                          Catch::Contains("'v'") && Catch::Contains("[3]") && Catch::Contains("[2]"));
        CHECK(v.value()[0] == 1.f);
    }
}

TEST_CASE("one name means one variable", "[session][identity]") {
    tf::variable<"w", float, tf::shape<2>> a{tf::init::ones{}};
    tf::variable<"w", float, tf::shape<2>> b{tf::init::ones{}};
    auto copy = a;  // copies share storage: the same variable
    tf::session s;
    CHECK(s.run(a + copy)[0] == 2.f);
    CHECK_THROWS_WITH(s.run(a + b), Catch::Contains("'w'"));
}

TEST_CASE("results are tensors the caller may keep", "[session][results]") {
    tf::variable<"c", float, tf::shape<3>> c{tf::init::constant{1.0}};
    tf::session s;
    auto step = tf::assign_add(c, 1.0f);
    auto first = s.run(step);
    auto second = s.run(step);
    CHECK(first[0] == 2.f);  // not overwritten by the second run
    CHECK(second[0] == 3.f);
    auto [p, q] = s.run(tf::fetch(c * 2.0f, c * 2.0f));
    CHECK(p[1] == 6.f);
    CHECK(q[1] == 6.f);
    // fetching a leaf returns a copy of its value
    auto leaf = s.run(c);
    leaf[0] = 100.f;
    CHECK(c.value()[0] == 3.f);
}

TEST_CASE("int, double and bool graphs run", "[session][dtypes]") {
    tf::placeholder<"i", std::int64_t, tf::shape<3>> i;
    tf::placeholder<"d", double, tf::shape<3>> d;
    tf::session s;
    auto [isum, mask, dd] = s.run(tf::fetch(tf::sum(i * 2), d > 0.5, tf::cast<double>(i) / d),
                                  tf::feed(i, std::vector<std::int64_t>{1, 2, 3}),
                                  tf::feed(d, std::vector<double>{0.25, 1.0, 2.0}));
    CHECK(isum.item() == 12);
    CHECK(!mask[0]);
    CHECK(mask[2]);
    CHECK(dd[0] == 4.0);
}

TEST_CASE("to_dot writes one node per op with shape, dtype and device", "[dot]") {
    tf::placeholder<"b", float, tf::shape<>> b;
    tf::placeholder<"c", float, tf::shape<>> c;
    auto d = b + c;
    auto e = c + 2.0f;
    auto a = d * e;
    const std::string dot = tf::to_dot(a);
    CHECK_THAT(dot, Catch::StartsWith("digraph typeflow {"));
    CHECK_THAT(dot, Catch::Contains("placeholder \\\"b\\\"") && Catch::Contains("float32 [] @cpu"));
    CHECK_THAT(dot, Catch::Contains("add") && Catch::Contains("mul") && Catch::Contains("constant"));
    // b, c, d, the constant 2, e, a: six nodes and six edges
    std::size_t nodes = 0, edges = 0;
    for (std::size_t p = dot.find("[label"); p != std::string::npos; p = dot.find("[label", p + 1)) ++nodes;
    for (std::size_t p = dot.find("->"); p != std::string::npos; p = dot.find("->", p + 1)) ++edges;
    CHECK(nodes == 6);
    CHECK(edges == 6);
}

TEST_CASE("feeding one placeholder twice in one run is a tf::error naming it", "[session][feed]") {
    tf::placeholder<"x", float, tf::shape<tf::dyn>> x;
    tf::placeholder<"u", float, tf::shape<2>> u;  // not read by the fetched node
    auto y = tf::sum(x);
    tf::tensor<float> a({2}, {1, 2}), b({2}, {3, 4});
    tf::session s;
    // without the check the first feed won silently (y was 3)
    CHECK_THROWS_WITH(s.run(y, tf::feed(x, a), tf::feed(x, b)),
                      Catch::Contains("placeholder 'x'") && Catch::Contains("fed twice"));
    CHECK_THROWS_WITH(s.run(y, tf::feed(x, a), tf::feed(u, a), tf::feed(u, b)),
                      Catch::Contains("placeholder 'u'") && Catch::Contains("fed twice"));
    // the session runs on
    CHECK(s.run(y, tf::feed(x, b)).item() == 7.f);
    CHECK(s.run(y, tf::feed(x, a), tf::feed(u, b)).item() == 3.f);
}

// Extents that a run computes from its feeds are checked before anything is
// sized: four vectors of 2^16 broadcast into a rank-4 block of 2^64 elements,
// whose count wrapped to 0; and a feed whose own extents wrap.
TEST_CASE("a run whose extents overflow is a tf::error naming the node and the shape", "[session][dyn][memory]") {
    tf::placeholder<"a", float, tf::shape<tf::dyn, 1, 1, 1>> a;
    tf::placeholder<"b", float, tf::shape<1, tf::dyn, 1, 1>> b;
    tf::placeholder<"c", float, tf::shape<1, 1, tf::dyn, 1>> c;
    tf::placeholder<"d", float, tf::shape<1, 1, 1, tf::dyn>> d;
    auto total = tf::sum(a * b * c * d);
    const long n = 1L << 16;
    const tf::tensor<float> va({n, 1, 1, 1}), vb({1, n, 1, 1}), vc({1, 1, n, 1}), vd({1, 1, 1, n});
    const tf::tensor<float> sa({2, 1, 1, 1}, {1, 2}), sb({1, 1, 1, 1}, {3}), sc({1, 1, 2, 1}, {1, 1}), sd({1, 1, 1, 1}, {2});
    tf::session s;
    CHECK(s.run(total, tf::feed(a, sa), tf::feed(b, sb), tf::feed(c, sc), tf::feed(d, sd)).item() == 36.f);
    CHECK_THROWS_WITH(s.run(total, tf::feed(a, va), tf::feed(b, vb), tf::feed(c, vc), tf::feed(d, vd)),
                      Catch::Contains("mul") && Catch::Contains("[65536,65536,65536,65536]") &&
                          Catch::Contains("overflows"));
    CHECK(s.run(total, tf::feed(a, sa), tf::feed(b, sb), tf::feed(c, sc), tf::feed(d, sd)).item() == 36.f);

    // a view whose extents wrap (to 0 elements) is not a feed
    tf::placeholder<"x", float, tf::shape<tf::dyn, 4>> x;
    const float one = 1.f;
    const tf::tensor_view<const float> lie{&one, tf::dims{1LL << 62, 4}};
    CHECK_THROWS_WITH(s.run(tf::sum(x), tf::feed(x, lie)),
                      Catch::Contains("placeholder 'x'") && Catch::Contains("[4611686018427387904,4]"));
    CHECK(s.run(tf::sum(x), tf::feed(x, tf::tensor<float>({1, 4}, {1, 2, 3, 4}))).item() == 10.f);

    // the check every computed extent goes through: negative extents and overflows name the op
    CHECK_NOTHROW(tf::runtime::check_extents("tile", tf::dtype::float32, 4, tf::dims{0, 1LL << 62, 4}));
    CHECK_THROWS_WITH(tf::runtime::check_extents("tile", tf::dtype::float32, 4, tf::dims{2, -3}),
                      Catch::Contains("tile") && Catch::Contains("[2,-3]") && Catch::Contains(">= 0"));
    CHECK_THROWS_WITH(tf::runtime::check_extents("tile", tf::dtype::float64, 8, tf::dims{1LL << 60, 8}),
                      Catch::Contains("tile") && Catch::Contains("[1152921504606846976,8]") &&
                          Catch::Contains("float64"));
}

// An intermediate or a result too large to allocate is a tf::error naming the
// node and the bytes (it was std::bad_alloc), and the session runs on with
// smaller feeds. Three vectors of 2^16 broadcast into a [2^16, 2^16, 2^16]
// block: 2^48 floats, 1 PiB, more than any address space holds.
TEST_CASE("a run whose buffers cannot be allocated is a tf::error naming the node and the bytes", "[session][memory]") {
    tf::placeholder<"a", float, tf::shape<tf::dyn, 1, 1>> a;
    tf::placeholder<"b", float, tf::shape<1, tf::dyn, 1>> b;
    tf::placeholder<"c", float, tf::shape<1, 1, tf::dyn>> c;
    auto block = a * b * c;
    auto total = tf::sum(block);  // the block is an intermediate, in the run's arena
    const long n = 1L << 16;
    const tf::tensor<float> va({n, 1, 1}), vb({1, n, 1}), vc({1, 1, n});
    const tf::tensor<float> sa({2, 1, 1}, {1, 2}), sb({1, 3, 1}, {1, 2, 3}), sc({1, 1, 2}, {1, 10});
    tf::session s;
    const auto error_of = [&](auto&& fetched) -> std::string {
        try {
            s.run(fetched, tf::feed(a, va), tf::feed(b, vb), tf::feed(c, vc));
        } catch (const tf::error& e) {
            return e.what();
        }
        return "no tf::error";
    };
    const std::string arena = error_of(total);
    CHECK_THAT(arena, Catch::Contains("cannot allocate") && Catch::Contains("'mul'") &&
                          Catch::Contains("[65536,65536,65536]") && Catch::Contains("1125899906842624 bytes"));
    CHECK(s.run(total, tf::feed(a, sa), tf::feed(b, sb), tf::feed(c, sc)).item() == 198.f);  // 3 * 6 * 11
    // the block fetched: its result tensor
    const std::string result = error_of(block);
    CHECK_THAT(result, Catch::Contains("cannot allocate") && Catch::Contains("result of fetch 'mul'") &&
                           Catch::Contains("[65536,65536,65536]") && Catch::Contains("1125899906842624 bytes"));
    const tf::tensor<float> small = s.run(block, tf::feed(a, sa), tf::feed(b, sb), tf::feed(c, sc));
    CHECK(small.dims() == tf::dims{2, 3, 2});
    CHECK(small(1, 2, 1) == 60.f);
    // both in one plan: its first run fails, the next one runs
    const auto both = tf::fetch(total, block);
    CHECK_THAT(error_of(both), Catch::Contains("cannot allocate") && Catch::Contains("'mul'"));
    const auto [t2, b2] = s.run(both, tf::feed(a, sa), tf::feed(b, sb), tf::feed(c, sc));
    CHECK(t2.item() == 198.f);
    CHECK(b2(1, 2, 1) == 60.f);
}

TEST_CASE("run_streaming reports each fetch once, as soon as its value is final", "[session][streaming]") {
    tf::placeholder<"x", float, tf::shape<2, 3>> x;
    tf::variable<"W", float, tf::shape<3, 3>> W{tf::init::ones{}};
    tf::variable<"V", float, tf::shape<2, 3>> V{tf::init::zeros{}};
    tf::tensor<float> xb({2, 3}, {1, 2, 3, 4, 5, 6});
    tf::session s(tf::session_options{.threads = 1});
    auto m = tf::matmul(x, W);          // [[6,6,6],[15,15,15]]
    auto late = tf::matmul(m, W) * 2.0f; // needs m first
    struct report {
        std::size_t k;
        std::vector<float> values;
        std::size_t evaluations;  // nodes computed when it came
    };
    std::vector<report> seen;
    auto record = [&](std::size_t k, const void* data) {
        const auto* p = static_cast<const float*>(data);
        const std::size_t n = k == 2 ? 9 : 6;
        seen.push_back({k, std::vector<float>(p, p + n), s.stats().evaluations});
    };
    // the fetch list's order sets the node order: the early fetch comes first
    // even when listed after the one that needs it; the variable (a leaf) last
    auto [lv, mv, wv, m2] = s.run_streaming(tf::fetch(late, m, W, m), record, tf::feed(x, xb));
    REQUIRE(seen.size() == 4);
    CHECK(seen[0].k == 1);  // m, and its second fetch at once
    CHECK(seen[1].k == 3);
    CHECK(seen[0].evaluations == 1);  // before `late` ran
    CHECK(seen[2].k == 0);
    CHECK(seen[2].evaluations == 3);  // m, the matmul, the product
    CHECK(seen[3].k == 2);
    for (const report& r : seen) {
        const tf::tensor<float>& t = r.k == 0 ? lv : r.k == 1 ? mv : r.k == 3 ? m2 : wv;
        REQUIRE(static_cast<std::size_t>(t.size()) == r.values.size());
        for (std::size_t i = 0; i < r.values.size(); ++i) CHECK(r.values[i] == t[static_cast<tf::index_t>(i)]);
    }
    CHECK(lv(1, 2) == 2.f * 45.f);
    CHECK(wv(2, 2) == 1.f);

    SECTION("an exception from the callback ends the run before any write") {
        auto write = tf::assign(V, m);
        CHECK_THROWS_WITH(s.run_streaming(tf::fetch(m, write), [](std::size_t, const void*) { throw std::runtime_error("stop"); },
                                          tf::feed(x, xb)),
                          "stop");
        CHECK(s.run(V)[0] == 0.f);
        s.run(tf::fetch(m, write), tf::feed(x, xb));
        CHECK(s.run(V)[0] == 6.f);
    }
    SECTION("a plain run of the same fetches reports nothing and gives the same values") {
        auto [l2, m3, w2, m4] = s.run(tf::fetch(late, m, W, m), tf::feed(x, xb));
        CHECK(l2(0, 0) == lv(0, 0));
        CHECK(m3(1, 1) == 15.f);
    }
}

TEST_CASE("run_first computes what the first fetches need with the plan of them all, and applies no other update",
          "[session][partial]") {
    tf::placeholder<"x", double, tf::shape<tf::dyn, 3>> x;
    tf::variable<"w", double, tf::shape<3>> w{tf::init::ones{}};
    auto out = tf::sum<1>(x * w);  // [batch]
    auto loss = tf::mean(tf::square(out));
    auto step = tf::train::sgd(0.1).minimize(loss);
    tf::tensor<double> xb({2, 3}, {1, 2, 3, 4, 5, 6});
    tf::session s;
    const auto f = tf::fetch(loss, out, step);
    // the whole list: a training step (w moves)
    auto [l0, o0, done] = s.run(f, tf::feed(x, xb));
    REQUIRE(s.stats().plans_built == 1);
    const std::size_t full = s.stats().evaluations;
    CHECK(o0[0] == 6.0);
    CHECK(o0[1] == 15.0);
    CHECK(l0[0] == Approx((36.0 + 225.0) / 2));
    const std::vector<double> w1(w.value().data(), w.value().data() + 3);
    CHECK(w1[0] != 1.0);
    // the first two alone: same plan, no update, the step's result empty, fewer nodes computed
    for (int k = 0; k < 2; ++k) {
        auto [l, o, none] = s.run_first(2, f, tf::feed(x, xb));
        CHECK(s.stats().plans_built == 1);
        CHECK(s.stats().evaluations < full);
        CHECK(none.size() == 0);
        double ref_out[2], ref_loss = 0;
        for (int b = 0; b < 2; ++b) {
            ref_out[b] = 0;
            for (int j = 0; j < 3; ++j) ref_out[b] += xb[b * 3 + j] * w1[static_cast<std::size_t>(j)];
            ref_loss += ref_out[b] * ref_out[b] / 2;
            CHECK(o[b] == Approx(ref_out[b]).epsilon(1e-14));
        }
        CHECK(l[0] == Approx(ref_loss).epsilon(1e-14));
        for (tf::index_t j = 0; j < 3; ++j) CHECK(w.value()[j] == w1[static_cast<std::size_t>(j)]);
    }
    // k past the list is the whole list: w moves again
    s.run_first(5, f, tf::feed(x, xb));
    CHECK(w.value()[0] != w1[0]);
    // a skipped fetch that a kept one reads is computed, its result empty
    auto [l2, o2, none2] = s.run_first(1, tf::fetch(loss, out, step), tf::feed(x, xb));
    CHECK(o2.size() == 0);
    CHECK(none2.size() == 0);
    CHECK(l2.size() == 1);
    // run_first(0) runs nothing and writes nothing
    const double w_now = w.value()[0];
    auto [a, b, c] = s.run_first(0, f, tf::feed(x, xb));
    CHECK((a.size() == 0 && b.size() == 0 && c.size() == 0));
    CHECK(w.value()[0] == w_now);
    // a missing feed is still an error, and changes nothing
    CHECK_THROWS_WITH(s.run_first(2, f), Catch::Contains("x"));
    CHECK(w.value()[0] == w_now);
}
