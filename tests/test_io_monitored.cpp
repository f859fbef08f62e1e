// tf::train::monitored_session: restore at start, saving by step count, time
// and at a clean exit (not while an exception unwinds), hooks, the NaN/Inf
// guard, and the resume test: K steps in a child process that then exits,
// K more after a restart, bit for bit equal to 2K uninterrupted steps.
#include <catch2/catch.hpp>

#include "io_support.hpp"

#include <typeflow/train/monitored_session.hpp>
#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace tf = typeflow;

namespace {
const tf::placeholder<"x", float, tf::shape<tf::dyn, 4>> X;
const tf::placeholder<"y", float, tf::shape<tf::dyn, 1>> Y;

// A small MLP trained with Adam; every variable starts from seeded values.
struct model {
    tf::variable<"W1", float, tf::shape<4, 8>> W1{tf::init::glorot_uniform{}};
    tf::variable<"b1", float, tf::shape<8>> b1;
    tf::variable<"W2", float, tf::shape<8, 1>> W2{tf::init::glorot_uniform{}};
    tf::variable<"b2", float, tf::shape<1>> b2;
    tf::variable<"global_step", std::int64_t, tf::shape<>> step;
};
auto build(model& m) {
    auto h = tf::relu(tf::matmul(X, m.W1) + m.b1);
    auto loss = tf::mean(tf::square(tf::matmul(h, m.W2) + m.b2 - Y));
    auto lr = tf::train::exponential_decay(0.05f, m.step, 50, 0.5);
    auto train = tf::train::adam(lr).minimize(loss, tf::train::global_step(m.step));
    return std::pair{loss, train};
}
// The batch of run number s: a deterministic function of s (poisoned with a NaN when asked).
std::pair<tf::tensor<float>, tf::tensor<float>> batch(std::int64_t s, bool nan = false) {
    tf::tensor<float> x({8, 4}), y({8, 1});
    for (int i = 0; i < 8; ++i) {
        float t = 0;
        for (int j = 0; j < 4; ++j) {
            x(i, j) = std::sin(0.37f * static_cast<float>(s * 8 + i) + static_cast<float>(j));
            t += static_cast<float>(j + 1) * x(i, j);
        }
        y(i, 0) = std::tanh(t);
    }
    if (nan) x(3, 2) = std::nanf("");
    return {x, y};
}
// Every tensor a saver holds, as bytes (slots and step included).
std::vector<std::pair<std::string, std::string>> state_of(const tf::io::saver& s) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& t : s.tensors())
        out.push_back({t.name, std::string(static_cast<const char*>(t.data),
                                           static_cast<std::size_t>(t.shape.numel()) * tf::dtype_size(t.dtype))});
    return out;
}
// Trains with a monitored session on dir until the global step reaches last.
void train_monitored(const std::string& dir, std::int64_t last, tf::io::saver* out_saver = nullptr, model* out = nullptr) {
    model local;
    model& m = out ? *out : local;
    auto [loss, train] = build(m);
    tf::train::monitored_session ms({.checkpoint_dir = dir, .save_every_steps = 7}, tf::io::saver(train), m.step,
                                    tf::train::stop_at_step_hook(last), tf::train::nan_guard_hook());
    while (!ms.should_stop()) {
        auto [x, y] = batch(ms.step());
        ms.run(tf::train::fetch_names{"loss", "train"}, tf::fetch(loss, train), tf::feed(X, x), tf::feed(Y, y));
    }
    ms.close();
    if (out_saver) *out_saver = ms.saver();
}
}  // namespace

TEST_CASE("monitored_session: resuming from a checkpoint equals an uninterrupted run bit for bit", "[io][monitored]") {
    constexpr std::int64_t K = 40;
    // Uninterrupted: 2K steps in a plain session.
    model ref;
    auto [rloss, rtrain] = build(ref);
    tf::session s;
    for (std::int64_t i = 0; i < 2 * K; ++i) {
        auto [x, y] = batch(i);
        s.run(rtrain, tf::feed(X, x), tf::feed(Y, y));
    }
    REQUIRE(ref.step.value()[0] == 2 * K);
    const auto want = state_of(tf::io::saver(rtrain));
    REQUIRE(want.size() == 1 + 4 * 4);  // 4 variables with m, v, t; the global step

    iotest::temp_dir dir;
    // First K steps in a child process, which then exits: only the checkpoint carries the state.
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int rc = 1;
        try {
            train_monitored(dir.path, K);
            rc = 0;
        } catch (...) {
        }
        ::_exit(rc);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFEXITED(status));
    REQUIRE(WEXITSTATUS(status) == 0);
    CHECK(tf::io::latest_checkpoint(dir.path) == dir.path + "/ckpt-" + std::to_string(K) + ".tfckpt");

    // Restart: fresh variables (seeded initial values), restored, trained to 2K.
    tf::io::saver resumed;
    model m;
    train_monitored(dir.path, 2 * K, &resumed, &m);
    CHECK(m.step.value()[0] == 2 * K);
    const auto got = state_of(resumed);
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        INFO("tensor " << want[i].first);
        CHECK(got[i].first == want[i].first);
        CHECK(got[i].second == want[i].second);  // bit for bit
    }
    // Control: without the restore the result differs (the test can fail).
    model cold;
    auto [closs, ctrain] = build(cold);
    tf::session cs;
    for (std::int64_t i = K; i < 2 * K; ++i) {
        auto [x, y] = batch(i);
        cs.run(ctrain, tf::feed(X, x), tf::feed(Y, y));
    }
    CHECK(state_of(tf::io::saver(ctrain)) != want);
}

TEST_CASE("monitored_session: saves every N steps, every T seconds and at a clean exit, restores at start", "[io][monitored]") {
    iotest::temp_dir dir;
    const auto steps_in = [](const std::string& d) {
        std::vector<std::int64_t> s;
        for (const auto& c : tf::io::list_checkpoints(d)) s.push_back(c.step);
        return s;
    };
    {
        model m;
        auto [loss, train] = build(m);
        std::ostringstream log;
        tf::train::monitored_session ms({.checkpoint_dir = dir.path, .save_every_steps = 3}, tf::io::saver(train),
                                        m.step, tf::train::stop_at_step_hook(10), tf::train::logging_hook(4, log));
        CHECK_FALSE(ms.restored_from());
        int runs = 0;
        while (!ms.should_stop()) {
            auto [x, y] = batch(ms.step());
            ms.run(tf::train::fetch_names{"loss"}, tf::fetch(loss, train), tf::feed(X, x), tf::feed(Y, y));
            ++runs;
        }
        CHECK(runs == 10);
        CHECK(steps_in(dir.path) == std::vector<std::int64_t>{3, 6, 9});
        // the logging hook wrote steps 4 and 8 with the loss
        const auto text = log.str();
        CHECK_THAT(text, Catch::Contains("step 4, loss = ") && Catch::Contains("step 8, loss = "));
        CHECK(std::count(text.begin(), text.end(), '\n') == 2);
    }  // destroyed without close(), no exception: a clean exit saves step 10
    CHECK(steps_in(dir.path) == std::vector<std::int64_t>{3, 6, 9, 10});
    {
        model m;
        auto [loss, train] = build(m);
        tf::train::monitored_session ms({.checkpoint_dir = dir.path}, tf::io::saver(train), m.step,
                                        tf::train::stop_at_step_hook(10));
        CHECK(ms.restored_from() == dir.path + "/ckpt-10.tfckpt");
        CHECK(ms.step() == 10);
        CHECK(ms.should_stop());  // already at the last step
    }
    // Every T seconds (a tiny T: after every step), keeping the last 5.
    iotest::temp_dir dir2;
    {
        model m;
        auto [loss, train] = build(m);
        tf::train::monitored_session ms({.checkpoint_dir = dir2.path, .save_every_seconds = 1e-9, .save_at_end = false},
                                        tf::io::saver(train), m.step, tf::train::stop_at_step_hook(8));
        while (!ms.should_stop()) {
            auto [x, y] = batch(ms.step());
            ms.run(tf::fetch(train), tf::feed(X, x), tf::feed(Y, y));
        }
    }
    CHECK(steps_in(dir2.path) == std::vector<std::int64_t>{4, 5, 6, 7, 8});
    // An exception unwinding through the session: no save at exit.
    iotest::temp_dir dir3;
    try {
        model m;
        auto [loss, train] = build(m);
        tf::train::monitored_session ms({.checkpoint_dir = dir3.path}, tf::io::saver(train), m.step);
        auto [x, y] = batch(0);
        ms.run(tf::fetch(train), tf::feed(X, x), tf::feed(Y, y));
        throw std::runtime_error("job dies");
    } catch (const std::runtime_error&) {
    }
    CHECK(steps_in(dir3.path).empty());
}

TEST_CASE("monitored_session: the NaN guard stops with an error naming the step and the tensor", "[io][monitored]") {
    iotest::temp_dir dir;
    for (bool fetch_loss : {true, false}) {
        INFO((fetch_loss ? "loss fetched" : "only the train op fetched"));
        std::error_code ec;
        std::filesystem::remove_all(dir.path, ec);
        model m;
        auto [loss, train] = build(m);
        {
            tf::train::monitored_session ms({.checkpoint_dir = dir.path, .save_every_steps = 2}, tf::io::saver(train),
                                            m.step, tf::train::nan_guard_hook());
            std::string msg;
            try {
                for (std::int64_t i = 0; i < 10; ++i) {
                    auto [x, y] = batch(i, i == 4);  // the 5th run sees a NaN
                    if (fetch_loss)
                        ms.run(tf::train::fetch_names{"loss", "train"}, tf::fetch(loss, train), tf::feed(X, x),
                               tf::feed(Y, y));
                    else ms.run(tf::fetch(train), tf::feed(X, x), tf::feed(Y, y));
                }
            } catch (const tf::error& e) {
                msg = e.what();
            }
            INFO(msg);
            CHECK_THAT(msg, Catch::Contains("nan_guard: step 5"));
            if (fetch_loss) CHECK_THAT(msg, Catch::Contains("fetched tensor 'loss' has NaN"));
            else CHECK_THAT(msg, Catch::Contains("variable 'W1") && Catch::Contains("has NaN"));
            CHECK(ms.should_stop());
            auto [x, y] = batch(5);
            CHECK_THROWS_AS(ms.run(tf::fetch(train), tf::feed(X, x), tf::feed(Y, y)), tf::error);
        }  // a failed session does not save its poisoned variables
        const auto last = tf::io::latest_checkpoint(dir.path);
        CHECK(last == dir.path + "/ckpt-4.tfckpt");
        model fresh;
        auto [l2, t2] = build(fresh);
        tf::io::saver s(t2);
        s.restore(*last);
        for (const auto& t : s.tensors())
            if (t.dtype == tf::dtype::float32)
                for (tf::index_t i = 0; i < t.shape.numel(); ++i) CHECK(std::isfinite(static_cast<const float*>(t.data)[i]));
    }
}

TEST_CASE("monitored_session: the summary hook writes fetched scalars and variable histograms", "[io][monitored]") {
    iotest::temp_dir dir;
    model m;
    auto [loss, train] = build(m);
    std::string events;
    {
        tf::io::summary_writer w(dir / "logs", {.csv = false, .jsonl = false});
        tf::train::monitored_session ms({}, tf::io::saver(train), m.step, tf::train::summary_hook(w, 2),
                                        tf::train::stop_at_step_hook(4));
        std::vector<float> losses;
        while (!ms.should_stop()) {
            auto [x, y] = batch(ms.step());
            auto [l, t] = ms.run(tf::train::fetch_names{"loss", "train"}, tf::fetch(loss, train), tf::feed(X, x),
                                 tf::feed(Y, y));
            losses.push_back(l.item());
        }
        events = w.event_file();
        ms.close();
        const auto ev = tf::io::read_events(events);
        std::vector<std::pair<std::int64_t, float>> seen;
        std::size_t histos = 0;
        for (const auto& e : ev)
            for (const auto& v : e.summary) {
                if (v.tag == "loss" && v.simple_value) seen.push_back({e.step, *v.simple_value});
                if (v.tag == "W1" && v.histo) {
                    ++histos;
                    CHECK(v.histo->num == 32);
                }
            }
        REQUIRE(seen.size() == 2);
        CHECK(seen[0] == std::pair<std::int64_t, float>{2, losses[1]});
        CHECK(seen[1] == std::pair<std::int64_t, float>{4, losses[3]});
        CHECK(histos == 2);
    }
}
