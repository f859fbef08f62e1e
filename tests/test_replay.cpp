// Recording a run's device work once and replaying it (what a GPU does with a
// CUDA graph), on the CPU: the taped test device (taped_device.hpp) records
// its queued work into a tape while the runtime records, and its replay does
// the tape again with the pointers and arguments it recorded. A replay that read
// stale pointers or extents would compute wrong values, so every run here is
// compared with the same graph on the same device with replay off.
#include <catch2/catch.hpp>

#include "support.hpp"
#include "taped_device.hpp"

#include <typeflow/typeflow.hpp>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <utility>
#include <algorithm>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

using P = tftest::taped;

namespace {
struct mlp_result {
    std::vector<float> losses;
    std::vector<tf::tensor<float>> weights;
    tf::run_stats stats;
};
// An MLP trained for `steps` steps on batches cycling through `xs`/`ys` (rows
// of 6 features, labels in [0, 3)), with `opt` (sgd: variables updated by a
// swap of buffers; adam: copied with their slots).
template <class Opt>
mlp_result train(Opt opt, bool replay, const std::vector<tf::tensor<float>>& xs, const std::vector<tf::tensor<std::int32_t>>& ys,
                 int steps) {
    rng_t r(11);
    tf::placeholder<"x", float, tf::shape<tf::dyn, 6>, P> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>, P> y;
    tf::variable<"W1", float, tf::shape<6, 5>, P> W1;
    tf::variable<"b1", float, tf::shape<5>, P> b1;
    tf::variable<"W2", float, tf::shape<5, 3>, P> W2;
    W1.load(uniform_tensor<float>(r, tf::dims{6, 5}, 0, 0, -0.5, 0.5).view());
    b1.load(uniform_tensor<float>(r, tf::dims{5}, 0, 0, -0.1, 0.1).view());
    W2.load(uniform_tensor<float>(r, tf::dims{5, 3}, 0, 0, -0.5, 0.5).view());
    auto logits = tf::matmul(tf::relu(tf::matmul(x, W1) + b1), W2);
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    auto step = opt.minimize(loss);
    tf::session s(tf::session_options{.threads = 1, .replay = replay});
    mlp_result out;
    for (int i = 0; i < steps; ++i) {
        const std::size_t b = static_cast<std::size_t>(i) % xs.size();
        out.losses.push_back(std::get<0>(s.run(tf::fetch(loss, step), tf::feed(x, xs[b]), tf::feed(y, ys[b])))[0]);
    }
    out.weights = {W1.value().clone(), b1.value().clone(), W2.value().clone()};
    out.stats = s.stats();
    return out;
}
void expect_same(const mlp_result& a, const mlp_result& b) {
    REQUIRE(a.losses.size() == b.losses.size());
    for (std::size_t i = 0; i < a.losses.size(); ++i) {
        INFO("step " << i);
        CHECK(a.losses[i] == b.losses[i]);  // the same kernels on the same values: bit for bit
    }
    for (std::size_t w = 0; w < a.weights.size(); ++w)
        for (tf::index_t k = 0; k < a.weights[w].size(); ++k) {
            INFO("weight " << w << " element " << k);
            CHECK(a.weights[w][k] == b.weights[w][k]);
        }
}
struct batches {
    std::vector<tf::tensor<float>> xs;
    std::vector<tf::tensor<std::int32_t>> ys;
};
batches make_batches(std::initializer_list<tf::index_t> rows) {
    rng_t r(5);
    batches b;
    for (tf::index_t n : rows) {
        b.xs.push_back(uniform_tensor<float>(r, tf::dims{n, 6}, 0, 0, -1, 1));
        b.ys.push_back(uniform_tensor<std::int32_t>(r, tf::dims{n}, 0, 2, 0, 0));
    }
    return b;
}
}  // namespace

TEST_CASE("replay: a training step recorded once and replayed follows the runs it replaces", "[replay]") {
    // three different batches of one shape: a replay reads each run's feed
    const batches b = make_batches({16, 16, 16});
    SECTION("sgd: variables swap buffers, so two pointer sets alternate and each is recorded") {
        reset_taped();
        const mlp_result on = train(tf::train::sgd(0.3f), true, b.xs, b.ys, 9);
        CHECK(tp().recordings == 2);  // runs 3 and 4, after each pointer set was met once
        CHECK(on.stats.recordings == 2);
        CHECK(tp().replays == 7);  // runs 3..9
        CHECK(on.stats.replays == 7);
        const mlp_result off = train(tf::train::sgd(0.3f), false, b.xs, b.ys, 9);
        CHECK(off.stats.replays == 0);
        CHECK(tp().recordings == 2);
        expect_same(on, off);
        // the losses move: the replays computed and updated, they did not repeat a result
        CHECK(on.losses[8] < on.losses[0]);
    }
    SECTION("adam: variables, slots and step counters are copied (one apply node's outputs): one pointer set") {
        reset_taped();
        const mlp_result on = train(tf::train::adam(0.05f), true, b.xs, b.ys, 8);
        CHECK(on.stats.recordings == 1);  // run 2, after its one pointer set was met once
        CHECK(on.stats.replays == 7);     // runs 2..8
        const mlp_result off = train(tf::train::adam(0.05f), false, b.xs, b.ys, 8);
        expect_same(on, off);
        CHECK(on.losses[7] < on.losses[0]);
    }
    CHECK(tp().live_tapes == 0);  // every recording was dropped with its plan
    CHECK(tp().live.empty());
    CHECK(tp().entered == 0);
}

TEST_CASE("replay: a new batch size re-plans and records again", "[replay]") {
    // batches of 16, 9 and 12 rows; the 12-row binding's arena reuses the 16-row one's addresses, so
    // only dropping recordings at a re-plan keeps the 16-row recording from replaying on 12 rows
    const batches b = make_batches({16, 16, 16, 9, 12, 12, 12, 12});
    reset_taped();
    const mlp_result on = train(tf::train::adam(0.05f), true, b.xs, b.ys, 8);
    const mlp_result off = train(tf::train::adam(0.05f), false, b.xs, b.ys, 8);
    expect_same(on, off);
    // one pointer set per binding (adam's update copies its outputs): a binding's second run is the
    // first recorded, and the 9-row binding, run once, is never recorded
    CHECK(on.stats.rebinds == 3);
    CHECK(on.stats.recordings == 2);  // runs 2 and 6
    CHECK(on.stats.replays == 5);     // runs 2, 3 and 6..8
    CHECK(tp().dropped == 2);  // one at the re-plan for 9 rows, one with the plan
}

TEST_CASE("replay: a re-plan drops the recordings even when its buffers come back at the same addresses", "[replay]") {
    reset_taped();
    tf::placeholder<"x", float, tf::shape<tf::dyn>, P> x;
    tf::session s;
    auto y = tf::sum(x * x);
    const auto fill = [](tf::index_t n, float v) {
        tf::tensor<float> t(tf::dims{n});
        for (tf::index_t i = 0; i < n; ++i) t[i] = v;
        return t;
    };
    CHECK(s.run(y, tf::feed(x, fill(16, 1)))[0] == 16.0f);
    CHECK(s.run(y, tf::feed(x, fill(16, 1)))[0] == 16.0f);  // recorded
    CHECK(s.stats().recordings == 1);
    CHECK(s.run(y, tf::feed(x, fill(13, 1)))[0] == 13.0f);  // a second arena
    // the first arena's block again, and the same offsets in it: the pointers of the 16-element
    // recording, which must not replay on 12 elements
    CHECK(s.run(y, tf::feed(x, fill(12, 2)))[0] == 48.0f);
    CHECK(s.run(y, tf::feed(x, fill(12, 2)))[0] == 48.0f);
    CHECK(s.stats().recordings == 2);
    CHECK(s.stats().replays == 2);
}

TEST_CASE("replay: host values read by the graph reach a replay", "[replay]") {
    reset_taped();
    tf::placeholder<"x", float, tf::shape<4>, P> x;
    tf::variable<"v", float, tf::shape<4>, P> v;
    tf::scalar<float, P> k(2.0f);
    const std::vector<float> zero{0, 0, 0, 0};
    v.load(tf::view(zero));
    tf::session s;
    auto out = tf::exp(x * k) + v * 3.0f;
    const auto eval = [&](std::vector<float> xv) { return s.run(out, tf::feed(x, xv)).to_vector(); };
    (void)eval({0, 0, 0, 0});
    (void)eval({0, 0, 0, 0});  // recorded
    REQUIRE(s.stats().recordings == 1);
    // a new feed, then a host write of the variable: the replays see both
    std::vector<float> got = eval({0.5f, 1, 0, -1});
    CHECK(s.stats().replays == 2);
    for (int i = 0; i < 4; ++i) CHECK(got[i] == std::exp(std::vector<float>{0.5f, 1, 0, -1}[i] * 2.0f));
    v.value()[2] = 1.0f;
    got = eval({0, 0, 0, 0});
    CHECK(s.stats().replays == 3);
    CHECK(got == std::vector<float>{1, 1, 4, 1});
}

TEST_CASE("replay: runs that cannot be recorded run as before", "[replay]") {
    const batches b = make_batches({16, 16, 16});
    SECTION("the device refuses to record") {
        reset_taped();
        tp().refuse = true;
        const mlp_result on = train(tf::train::adam(0.05f), true, b.xs, b.ys, 6);
        const mlp_result off = train(tf::train::adam(0.05f), false, b.xs, b.ys, 6);
        CHECK(on.stats.replays == 0);
        expect_same(on, off);
    }
    SECTION("a recording fails: the run is done as usual, and the plan records no more") {
        reset_taped();
        tp().fail_end = true;
        const mlp_result on = train(tf::train::adam(0.05f), true, b.xs, b.ys, 6);
        CHECK(tp().live_tapes == 0);
        CHECK(on.stats.replays == 0);
        CHECK(on.stats.recordings == 0);
        tp().fail_end = false;
        const mlp_result off = train(tf::train::adam(0.05f), false, b.xs, b.ys, 6);
        expect_same(on, off);
    }
    SECTION("a graph that reads host memory between kernels (a transfer from the host)") {
        reset_taped();
        tf::placeholder<"h", float, tf::shape<3>> h;  // on the host
        tf::session s;
        auto y = tf::to<P>(h) * 2.0f + 1.0f;
        const std::vector<float> hv{1, 2, 3};
        for (int i = 0; i < 4; ++i) CHECK(s.run(y, tf::feed(h, hv)).to_vector() == std::vector<float>{3, 5, 7});
        CHECK(s.stats().recordings == 0);
        CHECK(tp().replays == 0);
    }
    SECTION("a run that reports fetches as they become final (run_streaming)") {
        reset_taped();
        tf::placeholder<"x", float, tf::shape<3>, P> x;
        tf::session s;
        auto y = x * 2.0f;
        const std::vector<float> xv{1, 2, 3};
        for (int i = 0; i < 4; ++i) {
            std::vector<float> seen;
            s.run_streaming(tf::fetch(y), [&](std::size_t, const void* d) {
                seen.assign(static_cast<const float*>(d), static_cast<const float*>(d) + 3);
            }, tf::feed(x, xv));
            CHECK(seen == std::vector<float>{2, 4, 6});
        }
        CHECK(s.stats().replays == 0);
    }
    CHECK(tp().entered == 0);
}

TEST_CASE("replay: runs on one device do not interleave, and bad input leaves nothing held", "[replay]") {
    reset_taped();
    tf::placeholder<"x", float, tf::shape<tf::dyn>, P> x;
    tf::session s;
    auto y = tf::sum(x * x);
    const tf::tensor<float> wrong(tf::dims{2, 3});
    CHECK_THROWS_WITH(s.run(y, tf::feed(x, wrong)), Catch::Contains("'x'"));
    CHECK(tp().entered == 0);
    // two threads running plans of one session on the device: each run holds it alone
    const tf::tensor<float> xv = [] {
        tf::tensor<float> t(tf::dims{1000});
        for (tf::index_t i = 0; i < 1000; ++i) t[i] = 0.5f;
        return t;
    }();
    std::vector<float> got(2);
    std::thread t([&] {
        for (int i = 0; i < 50; ++i) got[0] = s.run(y, tf::feed(x, xv))[0];
    });
    for (int i = 0; i < 50; ++i) got[1] = s.run(y, tf::feed(x, xv))[0];
    t.join();
    CHECK(got[0] == 250.0f);
    CHECK(got[1] == 250.0f);
    CHECK(tp().max_entered == 1);
    CHECK(tp().entered == 0);
    CHECK(s.stats().replays > 0);
}

namespace {
// Steps of an embedding model trained with `Opt` on device D: the table's
// and the optimizer's per-row updates are one sparse_apply, which writes the
// variable and its slots where they are (on a device: their device copies).
// The losses, then the table as the host reads it after the last step.
template <class D, class Opt>
std::vector<float> embedding_steps(Opt opt, bool replay) {
    tf::variable<"table", float, tf::shape<7, 3>, D> table;
    rng_t r(19);
    table.load(uniform_tensor<float>(r, tf::dims{7, 3}, 0, 0, -1, 1).view());
    tf::placeholder<"ids", std::int32_t, tf::shape<tf::dyn>, D> ids;
    auto e = tf::embedding_lookup(table, ids);
    auto loss = tf::sum(e * e * e);
    auto step = opt.minimize(loss);
    tf::session s(tf::session_options{.threads = 1, .replay = replay});
    std::vector<float> out;
    const std::vector<std::int32_t> batches[] = {{1, 4, 1}, {0, 6}, {4, 4, 2, 1}};
    for (int i = 0; i < 6; ++i) {
        const auto& b = batches[i % 3];
        const auto idv = tf::view(b, tf::dims{static_cast<tf::index_t>(b.size())});
        out.push_back(std::get<0>(s.run(tf::fetch(loss, step), tf::feed(ids, idv)))[0]);
        if (i == 3)  // the host reads the table between steps
            for (float v : table.value().to_vector()) out.push_back(v);
    }
    for (float v : table.value().to_vector()) out.push_back(v);
    return out;
}
}  // namespace

TEST_CASE("replay: a kernel that updates a variable where it is makes the host's copy stale", "[replay]") {
    for (bool replay : {false, true}) {
        INFO("replay " << replay);
        reset_taped();
        const auto sgd = embedding_steps<P>(tf::train::sgd(0.1f), replay);
        CHECK(sgd == embedding_steps<tf::reference>(tf::train::sgd(0.1f), false));
        const auto adam = embedding_steps<P>(tf::train::adam(0.05f), replay);
        CHECK(adam == embedding_steps<tf::reference>(tf::train::adam(0.05f), false));
    }
}

TEST_CASE("replay: a run of the first fetches neither replays nor records, and writes nothing", "[replay][partial]") {
    const batches b = make_batches({16, 16});
    reset_taped();
    rng_t r(11);
    tf::placeholder<"x", float, tf::shape<tf::dyn, 6>, P> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>, P> y;
    tf::variable<"W1", float, tf::shape<6, 3>, P> W1;
    W1.load(uniform_tensor<float>(r, tf::dims{6, 3}, 0, 0, -0.5, 0.5).view());
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(tf::matmul(x, W1), y));
    auto step = tf::train::adam(0.05f).minimize(loss);
    tf::session s;
    const auto f = tf::fetch(loss, step);
    for (int k = 0; k < 4; ++k) s.run(f, tf::feed(x, b.xs[0]), tf::feed(y, b.ys[0]));  // recorded, then replayed
    const tf::run_stats before = s.stats();
    REQUIRE(before.recordings == 1);
    const tf::tensor<float> w = W1.value().clone();
    // the loss alone, from the same plan: computed, not replayed, nothing written
    const float l = std::get<0>(s.run_first(1, f, tf::feed(x, b.xs[1]), tf::feed(y, b.ys[1])))[0];
    CHECK(s.stats().recordings == before.recordings);
    CHECK(s.stats().replays == before.replays);
    CHECK(s.stats().plans_built == before.plans_built);
    for (tf::index_t k = 0; k < w.size(); ++k) CHECK(W1.value()[k] == w[k]);
    // the same loss as a plan of the loss alone computes
    tf::session t;
    CHECK(l == std::get<0>(t.run(tf::fetch(loss), tf::feed(x, b.xs[1]), tf::feed(y, b.ys[1])))[0]);
    // and a full run after it replays the recording again, and trains
    s.run(f, tf::feed(x, b.xs[0]), tf::feed(y, b.ys[0]));
    CHECK(s.stats().replays == before.replays + 1);
    CHECK(W1.value()[0] != w[0]);
}
