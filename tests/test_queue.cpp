// Queues (tf::fifo_queue, tf::random_shuffle_queue, tf::priority_queue) and
// tf::queue_runner: the order of each kind against a plain model of it, back
// pressure at capacity, close() waking every waiting producer and consumer,
// 8 producers and 8 consumers exchanging 100,000 items with none lost or
// duplicated, dequeue_many/enqueue_many against element-by-element copies,
// and bad input (shapes, capacities, a closed queue) as errors that leave the
// queue as it was.
#include <catch2/catch.hpp>

#include <typeflow/data/from_tensors.hpp>
#include <typeflow/data/queue.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace tf = typeflow;

namespace {

using clock_type = std::chrono::steady_clock;
using i64 = std::int64_t;

tf::tensor<i64> scalar(i64 v) {
    tf::tensor<i64> t(tf::dims{});
    t[0] = v;
    return t;
}
tf::tensor<float> vec(std::initializer_list<float> v) {
    return tf::tensor<float>(tf::dims{static_cast<tf::index_t>(v.size())}, v);
}

// Waits up to 5 s for pred (a thread to reach a blocking call, say); false on timeout.
template <class P>
bool eventually(P pred) {
    const auto end = clock_type::now() + std::chrono::seconds(5);
    while (!pred()) {
        if (clock_type::now() > end) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

template <class Q>
std::vector<i64> drain_ids(Q& q) {
    std::vector<i64> ids;
    for (;;) {
        try {
            ids.push_back(std::get<0>(q.dequeue())[0]);
        } catch (const tf::out_of_range_error&) {
            return ids;
        }
    }
}

}  // namespace

TEST_CASE("fifo_queue hands out elements in the order they came, with their tensors", "[unit][queue]") {
    tf::fifo_queue<i64, float> q(10);
    for (i64 i = 0; i < 7; ++i) q.enqueue(scalar(i), vec({float(i), float(-i)}));
    CHECK(q.size() == 7);
    for (i64 i = 0; i < 7; ++i) {
        auto [id, v] = q.dequeue();
        CHECK(id[0] == i);
        REQUIRE(v.dims() == tf::dims{2});
        CHECK(v[0] == float(i));
        CHECK(v[1] == float(-i));
    }
    CHECK(q.size() == 0);
    CHECK(q.capacity() == 10);
}

TEST_CASE("random_shuffle_queue dequeues a permutation, reproducible for a seed", "[unit][queue]") {
    auto order = [](std::uint64_t seed) {
        tf::random_shuffle_queue<i64> q(100, 0, seed);
        for (i64 i = 0; i < 100; ++i) q.enqueue(scalar(i));
        q.close();
        return drain_ids(q);
    };
    const std::vector<i64> a = order(42), b = order(42), c = order(43);
    std::vector<i64> sorted = a;
    std::sort(sorted.begin(), sorted.end());
    std::vector<i64> all(100);
    std::iota(all.begin(), all.end(), 0);
    CHECK(sorted == all);  // a permutation
    CHECK(a == b);         // the same seed, the same order
    CHECK(a != c);
    CHECK(a != all);  // shuffled (probability 1/100! of failing)
}

TEST_CASE("random_shuffle_queue waits for more than min_after_dequeue elements until closed", "[unit][queue]") {
    tf::random_shuffle_queue<i64> q(10, 3, 7);
    for (i64 i = 0; i < 3; ++i) q.enqueue(scalar(i));
    std::atomic<int> taken{0};
    std::thread consumer([&] {
        q.dequeue();
        ++taken;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(taken == 0);  // 3 elements, min_after_dequeue 3: it waits
    q.enqueue(scalar(3));
    REQUIRE(eventually([&] { return taken == 1; }));
    consumer.join();
    CHECK(q.size() == 3);
    // closed: the rest is handed out regardless of min_after_dequeue
    q.close();
    CHECK(drain_ids(q).size() == 3);
}

TEST_CASE("priority_queue hands out the smallest priority first, equal ones in arrival order", "[unit][queue]") {
    tf::priority_queue<i64> q(20);
    const i64 prio[] = {5, -2, 7, 5, 0, -2, 9, 5};
    for (i64 i = 0; i < 8; ++i) q.enqueue(scalar(prio[i]), scalar(i));
    // the model: a stable sort by priority
    std::vector<std::pair<i64, i64>> model;
    for (i64 i = 0; i < 8; ++i) model.push_back({prio[i], i});
    std::stable_sort(model.begin(), model.end(), [](auto& x, auto& y) { return x.first < y.first; });
    for (const auto& [p, id] : model) {
        auto [pp, v] = q.dequeue();
        CHECK(pp[0] == p);
        CHECK(v[0] == id);
    }
    // the priority must be a scalar int64
    CHECK_THROWS_WITH(q.enqueue(tf::tensor<i64>(tf::dims{2}), scalar(0)),
                      Catch::Contains("component 0 has shape [2], the queue's is []"));
    CHECK(q.size() == 0);
}

TEST_CASE("a full queue blocks its producer until a consumer makes room", "[unit][queue]") {
    tf::fifo_queue<i64> q(3);
    std::atomic<int> done{0};
    std::thread producer([&] {
        for (i64 i = 0; i < 5; ++i) {
            q.enqueue(scalar(i));
            ++done;
        }
    });
    REQUIRE(eventually([&] { return done == 3; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    CHECK(done == 3);  // the fourth waits: back pressure
    CHECK(q.size() == 3);
    CHECK(std::get<0>(q.dequeue())[0] == 0);
    REQUIRE(eventually([&] { return done == 4; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    CHECK(done == 4);
    CHECK(std::get<0>(q.dequeue())[0] == 1);
    producer.join();
    CHECK(done == 5);
    q.close();
    CHECK(drain_ids(q) == std::vector<i64>{2, 3, 4});
}

TEST_CASE("close() wakes every waiting producer and consumer within 100 ms", "[unit][queue]") {
    tf::fifo_queue<i64> empty(4), full(2);
    full.enqueue(scalar(1));
    full.enqueue(scalar(2));
    constexpr int n = 4;
    std::atomic<int> waiting{0}, out_of_range{0}, cancelled{0};
    std::vector<clock_type::time_point> woke(2 * n);
    std::vector<std::thread> ts;
    for (int i = 0; i < n; ++i) {
        ts.emplace_back([&, i] {
            ++waiting;
            try {
                empty.dequeue();
            } catch (const tf::out_of_range_error&) {
                ++out_of_range;
            }
            woke[i] = clock_type::now();
        });
        ts.emplace_back([&, i] {
            ++waiting;
            try {
                full.enqueue(scalar(3));
            } catch (const tf::cancelled_error&) {
                ++cancelled;
            }
            woke[n + i] = clock_type::now();
        });
    }
    REQUIRE(eventually([&] { return waiting == 2 * n; }));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // all inside their waits
    const auto t0 = clock_type::now();
    empty.close();
    full.close();
    for (auto& t : ts) t.join();
    CHECK(out_of_range == n);
    CHECK(cancelled == n);
    for (const auto& w : woke) CHECK(std::chrono::duration_cast<std::chrono::milliseconds>(w - t0).count() < 100);
    // what was in the closed queue is still handed out, then out of range
    CHECK(drain_ids(full) == std::vector<i64>{1, 2});
    CHECK_THROWS_AS(full.enqueue(scalar(4)), tf::cancelled_error);
    CHECK_THROWS_WITH(empty.dequeue(), Catch::Contains("queue 'fifo_queue': dequeue: the queue is closed and holds 0"));
}

TEST_CASE("close(false) lets waiting enqueues complete as room frees, as TensorFlow's default", "[unit][queue]") {
    tf::fifo_queue<i64> q(1);
    q.enqueue(scalar(1));
    std::atomic<bool> finished{false};
    std::thread producer([&] {
        q.enqueue(scalar(2));
        finished = true;
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    q.close(false);
    CHECK_THROWS_AS(q.enqueue(scalar(3)), tf::cancelled_error);  // new enqueues fail
    CHECK(std::get<0>(q.dequeue())[0] == 1);
    producer.join();
    CHECK(finished);
    CHECK(drain_ids(q) == std::vector<i64>{2});
}

TEST_CASE("8 producers and 8 consumers exchange 100,000 items, none lost or duplicated", "[unit][queue]") {
    constexpr int producers = 8, consumers = 8;
    constexpr i64 per_producer = 12500;
    tf::fifo_queue<i64> q(64);
    std::vector<std::vector<i64>> got(consumers);
    std::vector<std::thread> ts;
    for (int c = 0; c < consumers; ++c)
        ts.emplace_back([&, c] {
            got[static_cast<std::size_t>(c)] = drain_ids(q);
        });
    std::vector<std::thread> ps;
    for (int p = 0; p < producers; ++p)
        ps.emplace_back([&, p] {
            for (i64 i = 0; i < per_producer; ++i) q.enqueue(scalar(p * per_producer + i));
        });
    for (auto& t : ps) t.join();
    q.close();
    for (auto& t : ts) t.join();
    std::vector<i64> all;
    for (const auto& g : got) {
        // one producer's items reach one consumer in the order they were sent
        std::map<i64, i64> last;
        for (i64 id : g) {
            const i64 p = id / per_producer;
            if (last.count(p)) CHECK(last[p] < id);
            last[p] = id;
        }
        all.insert(all.end(), g.begin(), g.end());
    }
    REQUIRE(all.size() == static_cast<std::size_t>(producers * per_producer));
    std::sort(all.begin(), all.end());
    for (std::size_t i = 0; i < all.size(); ++i)
        if (all[i] != static_cast<i64>(i)) FAIL("item " << i << " lost or duplicated (found " << all[i] << ")");
}

TEST_CASE("enqueue_many adds rows, dequeue_many stacks them, dequeue_up_to takes the rest of a closed queue",
          "[unit][queue]") {
    tf::fifo_queue<float, i64> q(10, {tf::dims{2}, tf::dims{}});
    tf::tensor<float> x(tf::dims{5, 2});
    tf::tensor<i64> y(tf::dims{5});
    for (tf::index_t i = 0; i < 10; ++i) x[i] = 0.5f * float(i);
    for (tf::index_t i = 0; i < 5; ++i) y[i] = 100 + i;
    q.enqueue_many({x, y});
    x[0] = -1;  // rows were copied
    CHECK(q.size() == 5);
    auto [a, b] = q.dequeue();
    CHECK(a.dims() == tf::dims{2});
    CHECK(a[0] == 0.0f);
    CHECK(a[1] == 0.5f);
    CHECK(b[0] == 100);
    auto [xs, ys] = q.dequeue_many(3);
    REQUIRE(xs.dims() == (tf::dims{3, 2}));
    REQUIRE(ys.dims() == tf::dims{3});
    for (tf::index_t r = 0; r < 3; ++r) {
        CHECK(xs(r, 0) == 0.5f * float(2 * (r + 1)));
        CHECK(xs(r, 1) == 0.5f * float(2 * (r + 1) + 1));
        CHECK(ys[r] == 101 + r);
    }
    q.close();
    // one left: dequeue_many(2) refuses and leaves it; dequeue_up_to(2) takes it
    CHECK_THROWS_AS(q.dequeue_many(2), tf::out_of_range_error);
    CHECK(q.size() == 1);
    auto [xr, yr] = q.dequeue_up_to(2);
    CHECK(xr.dims() == (tf::dims{1, 2}));
    CHECK(yr[0] == 104);
    CHECK_THROWS_AS(q.dequeue_up_to(2), tf::out_of_range_error);
}

TEST_CASE("queues refuse bad input with an error and stay as they were", "[unit][queue]") {
    CHECK_THROWS_WITH(tf::fifo_queue<float>(0), Catch::Contains("capacity must be at least 1, got 0"));
    CHECK_THROWS_WITH((tf::fifo_queue<float, i64>(4, {tf::dims{2}})), Catch::Contains("1 shapes given for 2 components"));
    CHECK_THROWS_WITH(tf::random_shuffle_queue<float>(4, 4), Catch::Contains("min_after_dequeue must be in [0, capacity)"));
    tf::fifo_queue<float, i64> q(4, {tf::dims{tf::dyn, 3}, tf::dims{}}, "inputs");
    q.enqueue(tf::tensor<float>(tf::dims{7, 3}), scalar(1));  // dyn matches any extent
    CHECK_THROWS_WITH(q.enqueue(tf::tensor<float>(tf::dims{2, 4}), scalar(1)),
                      Catch::Contains("queue 'inputs': enqueue: component 0 has shape [2,4], the queue's is [?,3]"));
    CHECK_THROWS_WITH(q.enqueue(tf::tensor<float>(), scalar(1)), Catch::Contains("component 0 is an empty tensor"));
    CHECK_THROWS_WITH(q.enqueue_many({tf::tensor<float>(tf::dims{2, 1, 3}), tf::tensor<i64>(tf::dims{3})}),
                      Catch::Contains("component 1 has shape [3]; every component needs the batch axis of component 0"));
    CHECK_THROWS_WITH(q.dequeue_many(0), Catch::Contains("n must be at least 1, got 0"));
    CHECK(q.size() == 1);
    // elements of different shapes cannot be stacked: an error, and they stay
    tf::fifo_queue<float> loose(4);
    loose.enqueue(tf::tensor<float>(tf::dims{2}));
    loose.enqueue(tf::tensor<float>(tf::dims{3}));
    CHECK_THROWS_WITH(loose.dequeue_many(2), Catch::Contains("component 0 has shape [3] in one element and [2]"));
    CHECK(loose.size() == 2);
    CHECK(std::get<0>(loose.dequeue()).dims() == tf::dims{2});
}

TEST_CASE("queue_runner enqueues a dataset's pass and closes the queue at its end", "[unit][queue]") {
    tf::tensor<float> x(tf::dims{10, 2});
    tf::tensor<i64> y(tf::dims{10});
    for (tf::index_t i = 0; i < 20; ++i) x[i] = float(i);
    for (tf::index_t i = 0; i < 10; ++i) y[i] = i;
    tf::fifo_queue<float, i64> q(3);  // smaller than a batch: dequeue_up_to takes elements as they come
    tf::queue_runner runner(q, tf::data::from_tensors(x, y));
    std::vector<i64> ids;
    for (;;) {
        try {
            auto [a, b] = q.dequeue_up_to(4);
            for (tf::index_t r = 0; r < b.size(); ++r) {
                CHECK(a(r, 0) == float(2 * b[r]));
                ids.push_back(b[r]);
            }
        } catch (const tf::out_of_range_error&) {
            break;
        }
    }
    runner.join();
    std::vector<i64> all(10);
    std::iota(all.begin(), all.end(), 0);
    CHECK(ids == all);
}

TEST_CASE("queue_runner with several threads, and a producer's exception reaches join()", "[unit][queue]") {
    tf::fifo_queue<i64> q(8);
    std::atomic<i64> next{0};
    {
        tf::queue_runner runner(
            q,
            [&]() -> std::optional<std::tuple<tf::tensor<i64>>> {
                const i64 i = next++;
                if (i >= 1000) return std::nullopt;
                return std::tuple{scalar(i)};
            },
            3);
        std::vector<i64> ids = drain_ids(q);
        runner.join();
        std::sort(ids.begin(), ids.end());
        REQUIRE(ids.size() == 1000);
        for (i64 i = 0; i < 1000; ++i) CHECK(ids[static_cast<std::size_t>(i)] == i);
    }
    tf::fifo_queue<i64> bad(8);
    tf::queue_runner failing(bad, [n = 0]() mutable -> std::optional<std::tuple<tf::tensor<i64>>> {
        if (n++ == 5) throw std::runtime_error("the reader broke");
        return std::tuple{scalar(n)};
    });
    CHECK(drain_ids(bad).size() == 5);  // the queue is closed after the failure
    CHECK_THROWS_WITH(failing.join(), "the reader broke");
}

TEST_CASE("destroying a queue_runner whose producer waits on a full queue returns at once", "[unit][queue]") {
    tf::fifo_queue<i64> q(2);
    const auto t0 = clock_type::now();
    {
        tf::queue_runner runner(q, []() -> std::optional<std::tuple<tf::tensor<i64>>> { return std::tuple{scalar(1)}; });
        REQUIRE(eventually([&] { return q.size() == 2; }));
    }  // stop(): closes q, cancelling the waiting enqueue, and joins
    CHECK(q.is_closed());
    CHECK(std::chrono::duration_cast<std::chrono::seconds>(clock_type::now() - t0).count() < 5);
    CHECK(drain_ids(q).size() == 2);
}

TEST_CASE("dequeue_many takes more than the capacity as elements come, and a close puts back what it took",
          "[unit][queue]") {
    tf::fifo_queue<i64> q(2);
    std::thread producer([&] {
        for (i64 i = 0; i < 6; ++i) q.enqueue(scalar(i));
    });
    auto [batch] = q.dequeue_many(5);  // capacity 2: taken as they come
    producer.join();
    REQUIRE(batch.dims() == tf::dims{5});
    for (i64 i = 0; i < 5; ++i) CHECK(batch[i] == i);
    // a dequeue_many(4) that holds 1 + 2 when the queue closes: all back, in order
    std::atomic<bool> threw{false};
    std::thread consumer([&] {
        try {
            q.dequeue_many(4);
        } catch (const tf::out_of_range_error& e) {
            threw = std::string(e.what()).find("holds 3 element(s), 4 needed") != std::string::npos;
        }
    });
    REQUIRE(eventually([&] { return q.size() == 0; }));  // it took element 5
    q.enqueue(scalar(6));
    q.enqueue(scalar(7));
    REQUIRE(eventually([&] { return q.size() == 0; }));
    q.close();
    consumer.join();
    CHECK(threw);
    CHECK(drain_ids(q) == std::vector<i64>{5, 6, 7});
}
