// Queues as graph ops (data/queue_ops.hpp): dequeue_many inside session::run
// in each queue's order, enqueue and enqueue_many of computed values, the end
// of the data as tf::out_of_range_error, close() releasing a blocked run, back
// pressure on an enqueue op, shape checks, and a model trained on batches a
// background thread feeds through a queue.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <optional>
#include <random>
#include <thread>

#include <typeflow/data.hpp>
#include <typeflow/typeflow.hpp>

namespace tf = typeflow;
using namespace std::chrono_literals;

TEST_CASE("dequeue_many inside run takes a fifo queue's elements in order, then fails at the end", "[queue][ops]") {
    tf::fifo_queue<float, std::int32_t> q(100, {tf::dims{2}, tf::dims{}});
    for (int i = 0; i < 30; ++i) q.enqueue(tf::tensor<float>({2}, {float(i), float(-i)}), tf::tensor<std::int32_t>({}, {i}));
    q.close();
    auto [x, y] = tf::dequeue_many<10>(q, tf::shape<2>{}, tf::shape<>{});
    static_assert(std::is_same_v<tf::shape_t<decltype(x)>, tf::shape<10, 2>>);
    static_assert(std::is_same_v<tf::value_type_t<decltype(y)>, std::int32_t>);
    tf::session s;
    for (int b = 0; b < 3; ++b) {
        auto [xv, yv, total] = s.run(tf::fetch(x, y, tf::sum(x)));  // the outputs of one call share one dequeue
        REQUIRE(xv.dims() == tf::dims{10, 2});
        for (int r = 0; r < 10; ++r) {
            CHECK(yv[r] == 10 * b + r);
            CHECK(xv(r, 0) == float(10 * b + r));
            CHECK(xv(r, 1) == -float(10 * b + r));
        }
        CHECK(total.item() == 0.f);
    }
    CHECK(q.size() == 0);
    CHECK_THROWS_AS(s.run(x), tf::out_of_range_error);
    CHECK_THROWS_WITH(s.run(x), Catch::Contains("dequeue_many: the queue is closed"));
}

TEST_CASE("dequeue ops keep each queue kind's order", "[queue][ops]") {
    SECTION("priority") {
        tf::priority_queue<float> q(10, {tf::dims{}});
        for (std::int64_t p : {5, 1, 4, 2, 3}) q.enqueue(tf::tensor<std::int64_t>({}, {p}), tf::tensor<float>({}, {float(p) * 10}));
        auto [p, v] = tf::dequeue_many<5>(q, tf::shape<>{}, tf::shape<>{});
        auto [pv, vv] = tf::session{}.run(tf::fetch(p, v));
        for (int i = 0; i < 5; ++i) {
            CHECK(pv[i] == i + 1);
            CHECK(vv[i] == float(i + 1) * 10);
        }
    }
    SECTION("random shuffle, seeded: a permutation, the same for the same seed") {
        auto draw = [](std::uint64_t seed) {
            tf::random_shuffle_queue<std::int32_t> q(20, 0, seed, {tf::dims{}});
            for (int i = 0; i < 20; ++i) q.enqueue(tf::tensor<std::int32_t>({}, {i}));
            auto v = tf::dequeue_many<20>(q, tf::shape<>{});  // one component: one expression
            return tf::session{}.run(v);
        };
        const auto a = draw(3), b = draw(3), c = draw(4);
        std::vector<int> seen(20, 0);
        bool same = true, other = false;
        for (int i = 0; i < 20; ++i) {
            ++seen[static_cast<std::size_t>(a[i])];
            same = same && a[i] == b[i];
            other = other || a[i] != c[i];
        }
        CHECK(seen == std::vector<int>(20, 1));
        CHECK(same);
        CHECK(other);
    }
}

TEST_CASE("enqueue and enqueue_many ops add computed values", "[queue][ops]") {
    tf::fifo_queue<float, std::int32_t> q(10, {tf::dims{3}, tf::dims{}});
    tf::placeholder<"x", float, tf::shape<3>> x;
    tf::placeholder<"k", std::int32_t, tf::shape<>> k;
    tf::session s;
    const auto put = tf::enqueue(q, x * 2.f, k + 1);
    CHECK(s.run(put, tf::feed(x, tf::tensor<float>({3}, {1, 2, 3})), tf::feed(k, tf::tensor<std::int32_t>({}, {7}))).item());
    REQUIRE(q.size() == 1);
    auto [a, b] = q.dequeue();
    CHECK(a[0] == 2.f);
    CHECK(a[2] == 6.f);
    CHECK(b.item() == 8);

    tf::placeholder<"xs", float, tf::shape<tf::dyn, 3>> xs;
    tf::placeholder<"ks", std::int32_t, tf::shape<tf::dyn>> ks;
    s.run(tf::enqueue_many(q, tf::tanh(xs) * 0.f + xs, ks), tf::feed(xs, tf::tensor<float>({2, 3}, {1, 2, 3, 4, 5, 6})),
          tf::feed(ks, tf::tensor<std::int32_t>({2}, {10, 11})));
    REQUIRE(q.size() == 2);
    auto [r0, k0] = q.dequeue();
    auto [r1, k1] = q.dequeue();
    CHECK(r0[1] == 2.f);
    CHECK(r1[1] == 5.f);
    CHECK(k0.item() == 10);
    CHECK(k1.item() == 11);

    // rows that do not fit the queue's shapes: an error, nothing added
    tf::placeholder<"bad", float, tf::shape<tf::dyn>> bad;
    CHECK_THROWS_WITH(s.run(tf::enqueue(q, bad, k), tf::feed(bad, tf::tensor<float>({4}, {1, 2, 3, 4})),
                            tf::feed(k, tf::tensor<std::int32_t>({}, {1}))),
                      Catch::Contains("component 0 has shape [4], the queue's is [3]"));
    CHECK(q.size() == 0);
}

TEST_CASE("a run blocked in a dequeue is released by close() within 100 ms", "[queue][ops]") {
    tf::fifo_queue<float> q(4, {tf::dims{}});
    auto x = tf::dequeue_many<2>(q, tf::shape<>{});
    tf::session s;
    std::atomic<bool> started{false};
    auto blocked = std::async(std::launch::async, [&] {
        started = true;
        s.run(x);
    });
    while (!started) std::this_thread::yield();
    std::this_thread::sleep_for(50ms);
    CHECK(blocked.wait_for(0ms) == std::future_status::timeout);  // waiting for elements
    q.enqueue(tf::tensor<float>({}, {1.f}));                      // one of two: still waiting
    const auto t0 = std::chrono::steady_clock::now();
    q.close();
    REQUIRE(blocked.wait_for(100ms) == std::future_status::ready);
    CHECK(std::chrono::steady_clock::now() - t0 < 100ms);
    CHECK_THROWS_AS(blocked.get(), tf::out_of_range_error);
    CHECK(q.size() == 1);  // the element it could not use stays in the queue
}

TEST_CASE("an enqueue op blocks while the queue is full, and fails once it is closed", "[queue][ops]") {
    tf::fifo_queue<float> q(2, {tf::dims{}});
    tf::placeholder<"v", float, tf::shape<>> v;
    const auto put = tf::enqueue(q, v);
    tf::session s;
    const auto one = tf::tensor<float>({}, {1.f});
    s.run(put, tf::feed(v, one));
    s.run(put, tf::feed(v, one));
    auto third = std::async(std::launch::async, [&] { s.run(put, tf::feed(v, one)); });
    CHECK(third.wait_for(50ms) == std::future_status::timeout);  // back pressure
    q.dequeue();
    REQUIRE(third.wait_for(1s) == std::future_status::ready);  // room made: it completes
    third.get();
    CHECK(q.size() == 2);
    auto fourth = std::async(std::launch::async, [&] { s.run(put, tf::feed(v, one)); });
    CHECK(fourth.wait_for(50ms) == std::future_status::timeout);
    q.close();
    REQUIRE(fourth.wait_for(100ms) == std::future_status::ready);
    CHECK_THROWS_AS(fourth.get(), tf::cancelled_error);
}

TEST_CASE("a dequeue op needs the queue to declare the shapes it names", "[queue][ops][errors]") {
    tf::fifo_queue<float> undeclared(4);
    CHECK_THROWS_WITH(tf::dequeue_many<2>(undeclared, tf::shape<3>{}),
                      Catch::Contains("dequeue_many: queue 'fifo_queue' component 0 has no declared shape"));
    tf::fifo_queue<float> other(4, {tf::dims{4}});
    CHECK_THROWS_WITH(tf::dequeue(other, tf::shape<3>{}),
                      Catch::Contains("dequeue: queue 'fifo_queue' component 0 has the declared shape [4], the op's is [3]"));
}

TEST_CASE("a model trains on batches that a background thread feeds through a queue", "[queue][ops][train]") {
    // y = 1 when 2 x0 - x1 > 0.5; 50 batches of 32 from a producer thread
    constexpr int batches = 50, batch = 32;
    tf::fifo_queue<float, std::int32_t> q(64, {tf::dims{2}, tf::dims{}});
    std::mt19937 rng(11);
    std::normal_distribution<float> nd;
    int made = 0;
    tf::queue_runner runner(q, [&]() -> std::optional<tf::fifo_queue<float, std::int32_t>::element> {
        if (made == batches * batch) return std::nullopt;
        ++made;
        const float a = nd(rng), b = nd(rng);
        return std::make_tuple(tf::tensor<float>({2}, {a, b}), tf::tensor<std::int32_t>({}, {2 * a - b > 0.5f ? 1 : 0}));
    });
    auto [x, y] = tf::dequeue_many<batch>(q, tf::shape<2>{}, tf::shape<>{});
    tf::variable<"w", float, tf::shape<2, 2>> w{tf::init::zeros{}};
    tf::variable<"b", float, tf::shape<2>> b{tf::init::zeros{}};
    const auto logits = tf::matmul(x, w) + b;
    const auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    const auto step = tf::train::adam(0.05f).minimize(loss);
    tf::session s;
    int steps = 0;
    try {
        for (;;) {
            s.run(step);
            ++steps;
        }
    } catch (const tf::out_of_range_error&) {
    }
    runner.join();
    CHECK(steps == batches);  // every element used once
    // held-out points against the learned boundary
    tf::placeholder<"p", float, tf::shape<tf::dyn, 2>> p;
    tf::tensor<float> pv({200, 2});
    std::vector<int> want(200);
    for (int i = 0; i < 200; ++i) {
        pv[2 * i] = nd(rng);
        pv[2 * i + 1] = nd(rng);
        want[static_cast<std::size_t>(i)] = 2 * pv[2 * i] - pv[2 * i + 1] > 0.5f ? 1 : 0;
    }
    auto pred = s.run(tf::argmax<1>(tf::matmul(p, w) + b), tf::feed(p, pv));
    int right = 0;
    for (int i = 0; i < 200; ++i) right += pred[i] == want[static_cast<std::size_t>(i)];
    INFO("held-out accuracy " << right / 200.0);
    CHECK(right >= 188);
}
