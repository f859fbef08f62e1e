// Crash safety of checkpoint writes: a child process killed with SIGKILL in
// the middle of a save (stopped there by the writer's test hook, or at random
// moments) leaves the previous checkpoint intact, and latest_checkpoint finds
// and loads it.
#include <catch2/catch.hpp>

#include "io_support.hpp"

#include <typeflow/io/saver.hpp>
#include <typeflow/typeflow.hpp>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <random>
#include <string>
#include <thread>

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
        ::_exit(3);  // not reached
    }
    ::close(fds[1]);
    REQUIRE(wait_readable(fds[0], 60000));
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

TEST_CASE("io crash: writers killed at random moments never leave a newest checkpoint that fails to load", "[io][checkpoint][crash]") {
    iotest::temp_dir dir;
    std::mt19937 rng(12345);
    std::int64_t next = 1;
    int killed_mid_write = 0;
    for (int round = 0; round < 6; ++round) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {  // saves step after step until killed
            big_model m;
            auto s = m.saver(3);
            for (std::int64_t step = next;; ++step) {
                m.set(step);
                s.save(dir.path, step);
            }
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20 + rng() % 120));
        REQUIRE(::kill(pid, SIGKILL) == 0);
        int status = 0;
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        REQUIRE(WIFSIGNALED(status));
        for (const auto& de : std::filesystem::directory_iterator(dir.path))
            if (de.path().filename().string().find(".tmp.") != std::string::npos) ++killed_mid_write;

        const auto last = tf::io::latest_checkpoint(dir.path);
        if (!last) continue;  // killed before the first save finished
        const auto entries = tf::io::list_checkpoints(dir.path);
        REQUIRE_FALSE(entries.empty());
        CHECK(*last == entries.back().path);  // every renamed file is complete
        const std::int64_t step = entries.back().step;
        big_model m;
        auto s = m.saver();
        s.restore(*last);
        INFO("round " << round << ", step " << step);
        CHECK(m.is(step));
        next = step + 1;
    }
    CHECK(next > 1);
    WARN("writers killed while a temporary file was open: " << killed_mid_write << " of 6");
}
