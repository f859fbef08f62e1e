// Checkpoint throughput: tf::io::saver writing and restoring ~105 MB of float
// variables (4 x [6400, 1024]) in binary, against the ceiling of the same
// bytes moved with raw POSIX calls: write() + fsync() for a save, read() into
// one buffer for a restore (page cache warm for both).
//   ./build/benchmarks/bench_io_checkpoint [dir]     (default: $TMPDIR or /tmp)
// Prints `<workload> typeflow=<us> <peer>=<us> ratio=<peer/typeflow>`.
#include "bench_util.hpp"

#include <typeflow/io.hpp>
#include <typeflow/typeflow.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

namespace tf = typeflow;

int main(int argc, char** argv) {
    const char* env = std::getenv("TMPDIR");
    const std::string dir = std::string(argc > 1 ? argv[1] : (env && *env ? env : "/tmp")) + "/typeflow_bench_io";
    std::filesystem::create_directories(dir);

    tf::variable<"w0", float, tf::shape<6400, 1024>> w0{tf::init::uniform{}};
    tf::variable<"w1", float, tf::shape<6400, 1024>> w1{tf::init::uniform{}};
    tf::variable<"w2", float, tf::shape<6400, 1024>> w2{tf::init::uniform{}};
    tf::variable<"w3", float, tf::shape<6400, 1024>> w3{tf::init::uniform{}};
    tf::io::saver saver(w0, w1, w2, w3);
    const std::vector<const tf::tensor<float>*> ts{&w0.value(), &w1.value(), &w2.value(), &w3.value()};
    std::size_t bytes = 0;
    for (auto* t : ts) bytes += static_cast<std::size_t>(t->size()) * sizeof(float);
    const double mb = static_cast<double>(bytes) / 1e6;

    const std::string ckpt = dir + "/bench.tfckpt", raw = dir + "/bench.raw";
    const auto raw_write = [&] {
        const int fd = ::open(raw.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        for (auto* t : ts) {
            const char* p = reinterpret_cast<const char*>(t->data());
            std::size_t n = static_cast<std::size_t>(t->size()) * sizeof(float);
            while (n) {
                const ssize_t w = ::write(fd, p, n);
                if (w <= 0) std::abort();
                p += w;
                n -= static_cast<std::size_t>(w);
            }
        }
        if (::fsync(fd) != 0) std::abort();
        ::close(fd);
    };
    std::unique_ptr<char[]> buf(new char[bytes]);
    const auto raw_read = [&] {
        const int fd = ::open(raw.c_str(), O_RDONLY);
        std::size_t done = 0;
        while (done < bytes) {
            const ssize_t r = ::read(fd, buf.get() + done, bytes - done);
            if (r <= 0) std::abort();
            done += static_cast<std::size_t>(r);
        }
        ::close(fd);
        bench::do_not_optimize(buf[bytes / 2]);
    };
    raw_write();
    saver.write(ckpt);

    // The restore must give back what was saved.
    const float probe = w2.value()[12345];
    w2.value()[12345] = -1;
    saver.restore(ckpt);
    if (w2.value()[12345] != probe) {
        std::fprintf(stderr, "restore gave wrong values\n");
        return 1;
    }

    const int rounds = bench::env_int("BENCH_ROUNDS", 5);
    std::vector<bench::contender> save{{"typeflow", [&] { saver.write(ckpt); }}, {"raw_write_fsync", raw_write}};
    bench::measure(save, rounds, 0.05);
    std::vector<bench::contender> load{{"typeflow", [&] { saver.restore(ckpt); }}, {"raw_read", raw_read}};
    bench::measure(load, rounds, 0.05);

    char name[96];
    std::snprintf(name, sizeof name, "save_binary_%.0fMB", mb);
    bench::report(name, save[0], save[1]);
    std::snprintf(name, sizeof name, "restore_binary_%.0fMB", mb);
    bench::report(name, load[0], load[1]);
    std::printf("throughput MB/s: save typeflow %.0f raw %.0f; restore typeflow %.0f raw %.0f\n",
                mb / save[0].median() * 1e6, mb / save[1].median() * 1e6, mb / load[0].median() * 1e6,
                mb / load[1].median() * 1e6);
    std::filesystem::remove_all(dir);
    return 0;
}
