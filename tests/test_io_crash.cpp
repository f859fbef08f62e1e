// Crash safety of checkpoint writes: a child process killed with SIGKILL in
// the middle of a save (stopped there by the writer's test hook, or at random
// moments) leaves the previous checkpoint intact, and latest_checkpoint finds
// and loads it.
#include <catch2/catch.hpp>

#include "io_support.hpp"

#include <typeflow/io/saver.hpp>
#include <typeflow/typeflow.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

namespace tf = typeflow;

namespace {
// 4 x 4 MiB of int32 plus a double tensor: values are a function of the step.
struct big_model {
    tf::variable<"a", std::int32_t, tf::shape<1024, 1024>> a;
    tf::variable<"b", std::int32_t, tf::shape<1024, 1024>> b;
    tf::variable<"c", std::int32_t, tf::shape<1024, 1024>> c;
    tf::variable<"d", std::int32_t, tf::shape<1024, 1024>> d;
    tf::variable<"e", double, tf::shape<1000>> e;
    void set(std::int64_t step) {
        int k = 0;
        for (auto* t : {&a.value(), &b.value(), &c.value(), &d.value()}) {
            ++k;
            for (tf::index_t i = 0; i < t->size(); ++i)
                (*t)[i] = static_cast<std::int32_t>(step * 1000003 + k * 7919 + i % 65521);
        }
        for (tf::index_t i = 0; i < e.value().size(); ++i) e.value()[i] = static_cast<double>(step) + 0.001 * i;
    }
    bool is(std::int64_t step) const {
        big_model want;
        want.set(step);
        return iotest::same_bits(a.value(), want.a.value()) && iotest::same_bits(b.value(), want.b.value()) &&
               iotest::same_bits(c.value(), want.c.value()) && iotest::same_bits(d.value(), want.d.value()) &&
               iotest::same_bits(e.value(), want.e.value());
    }
    tf::io::saver saver(std::size_t keep = 5) { return tf::io::saver({.max_to_keep = keep}, a, b, c, d, e); }
};

bool wait_readable(int fd, int ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, ms) == 1;
}
}  // namespace

TEST_CASE("io crash: SIGKILL in the middle of writing a checkpoint leaves the previous one intact", "[io][checkpoint][crash]") {
    iotest::temp_dir dir;
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {  // the writer: saves step 1, then stops half-way through step 2
        ::close(fds[0]);
        try {
            big_model m;
            auto s = m.saver();
            m.set(1);
            s.save(dir.path, 1);
            tf::io::detail::write_hook() = [&](const std::string& path, std::uint64_t bytes) {
                if (path.find("ckpt-2") != std::string::npos && bytes >= (std::uint64_t{8} << 20)) {
                    const char c = 'x';
                    (void)!::write(fds[1], &c, 1);
                    for (;;) ::pause();
                }
            };
            m.set(2);
            s.save(dir.path, 2);
        } catch (...) {
        }
        ::_exit(3);  // not reached (the parent's wait sees EOF)
    }
    ::close(fds[1]);
    const bool ready = wait_readable(fds[0], 120000);
    if (!ready) ::kill(pid, SIGKILL);
    REQUIRE(ready);
    char c = 0;
    REQUIRE(::read(fds[0], &c, 1) == 1);
    ::close(fds[0]);
    // The child is inside the write of step 2: its temporary file is there and partial.
    const std::string tmp = dir / (".ckpt-2.tfckpt.tmp." + std::to_string(pid));
    REQUIRE(std::filesystem::exists(tmp));
    const auto partial = std::filesystem::file_size(tmp);
    const auto full = std::filesystem::file_size(dir / "ckpt-1.tfckpt");
    CHECK(partial >= (std::uint64_t{8} << 20));
    CHECK(partial < full);
    REQUIRE(::kill(pid, SIGKILL) == 0);
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    REQUIRE(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGKILL);

    CHECK_FALSE(std::filesystem::exists(dir / "ckpt-2.tfckpt"));
    const auto last = tf::io::latest_checkpoint(dir.path);
    REQUIRE(last == dir.path + "/ckpt-1.tfckpt");
    big_model m;
    m.set(9);
    auto s = m.saver();
    s.restore(*last);
    CHECK(m.is(1));
    // The next save removes the dead writer's temporary file.
    m.set(3);
    s.save(dir.path, 3);
    CHECK_FALSE(std::filesystem::exists(tmp));
    CHECK(tf::io::latest_checkpoint(dir.path) == dir.path + "/ckpt-3.tfckpt");
}

namespace {
// Seconds the two parts of one step of the random-kill writer below take on
// this machine now (set, then save with its rotation): medians of three. The
// kill moments are placed by them, so the test means the same on an idle
// machine, a loaded one and under a sanitizer.
struct step_timing {
    double set = 0, save = 0;
};
step_timing measure_step() {
    iotest::temp_dir scratch;
    big_model m;
    auto s = m.saver(3);
    std::vector<double> set, save;
    const auto since = [](std::chrono::steady_clock::time_point t0) {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    };
    for (std::int64_t step = 1; step <= 3; ++step) {
        auto t0 = std::chrono::steady_clock::now();
        m.set(step);
        set.push_back(since(t0));
        t0 = std::chrono::steady_clock::now();
        s.save(scratch.path, step);
        save.push_back(since(t0));
    }
    std::sort(set.begin(), set.end());
    std::sort(save.begin(), save.end());
    return {set[1], save[1]};
}
// Reads what the pipe holds until EOF (the writer is dead): one byte per completed save.
int count_bytes(int fd) {
    int n = 0;
    char buf[64];
    for (ssize_t r; (r = ::read(fd, buf, sizeof buf)) != 0;) {
        if (r < 0) {
            if (errno == EINTR) continue;
            break;
        }
        n += static_cast<int>(r);
    }
    return n;
}
}  // namespace

TEST_CASE("io crash: writers killed at random moments never leave a newest checkpoint that fails to load", "[io][checkpoint][crash]") {
    iotest::temp_dir dir;
    const step_timing step = measure_step();
    const auto us = [](double seconds) { return std::chrono::microseconds(static_cast<long long>(seconds * 1e6)); };
    std::mt19937 rng(12345);
    std::uniform_real_distribution<double> u(0, 1);
    std::int64_t next = 1;  // the step the next writer starts at
    int killed_mid_write = 0, killed_before_first_save = 0;
    const int rounds = 8;
    for (int round = 0; round < rounds; ++round) {
        int fds[2];
        REQUIRE(::pipe(fds) == 0);
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {  // saves step after step until killed; one byte down the pipe per completed save
            ::close(fds[0]);
            try {
                big_model m;
                auto s = m.saver(3);
                for (std::int64_t k = next;; ++k) {
                    m.set(k);
                    s.save(dir.path, k);
                    const char c = 's';
                    if (::write(fds[1], &c, 1) != 1) ::_exit(4);
                }
            } catch (...) {
            }
            ::_exit(3);  // a save failed: the parent sees no SIGKILL
        }
        ::close(fds[1]);
        if (round % 2 == 0) {
            // Even rounds: once the writer has completed a save, kill it at a
            // random moment of its next save (the file's bytes, its fsync, the
            // rename, the rotation), give or take a fifth of a save.
            const bool saved = wait_readable(fds[0], 120000);
            if (!saved) ::kill(pid, SIGKILL);
            REQUIRE(saved);
            std::this_thread::sleep_for(us(step.set + step.save * (1.4 * u(rng) - 0.2)));
        } else {
            // Odd rounds: a random moment of the first two steps after the
            // fork; the kill may come before the first save completes.
            std::this_thread::sleep_for(us(2.0 * (step.set + step.save) * u(rng)));
        }
        REQUIRE(::kill(pid, SIGKILL) == 0);
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        INFO("round " << round << ", set " << step.set << " s, save " << step.save << " s, exit status " << status);
        REQUIRE(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == SIGKILL);
        const int saves = count_bytes(fds[0]);
        ::close(fds[0]);
        if (saves == 0) ++killed_before_first_save;
        const std::string own_tmp = ".tmp." + std::to_string(pid);  // this writer's temporary file
        for (const auto& de : std::filesystem::directory_iterator(dir.path)) {
            const std::string f = de.path().filename().string();
            if (f.size() > own_tmp.size() && f.compare(f.size() - own_tmp.size(), own_tmp.size(), own_tmp) == 0)
                ++killed_mid_write;
        }

        // Every save that returned is durable: the newest complete checkpoint
        // is the last one saved (or one the writer renamed just before it died).
        const auto last = tf::io::latest_checkpoint(dir.path);
        if (next == 1 && saves == 0 && !last) continue;  // killed before any save ever completed
        REQUIRE(last);
        const auto entries = tf::io::list_checkpoints(dir.path);
        REQUIRE_FALSE(entries.empty());
        CHECK(*last == entries.back().path);  // every renamed file is complete
        const std::int64_t got = entries.back().step;
        INFO("newest checkpoint: step " << got << ", this writer started at step " << next << " and completed "
                                        << saves << " saves");
        CHECK(got >= next - 1 + saves);
        CHECK(got <= next + saves);
        big_model m;
        auto s = m.saver();
        s.restore(*last);
        CHECK(m.is(got));
        next = got + 1;
    }
    CHECK(next > rounds / 2);  // every even round completed a save
    WARN("a step's set takes " << step.set << " s, its save " << step.save << " s; of " << rounds << " writers, "
                               << killed_mid_write << " were killed while a temporary file was open, "
                               << killed_before_first_save << " before their first save completed");
}
