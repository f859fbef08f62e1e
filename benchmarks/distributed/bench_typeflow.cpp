// typeflow ring all_reduce (float32 sum, in place), run under typeflow-launch.
//   bench_typeflow [min_bytes max_bytes iters segment_bytes send_thread_bytes]
// TYPEFLOW_BENCH_SPIN_US / TYPEFLOW_BENCH_ADAPTIVE_SPIN (0/1), if set,
// override the spec's spin_wait / adaptive_spin (experiments).
#include <typeflow/dist.hpp>

#include "bench_common.hpp"

namespace tfd = typeflow::dist;

int main(int argc, char** argv) {
    std::size_t lo = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4096;
    std::size_t hi = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : std::size_t{64} << 20;
    int iters = argc > 3 ? std::atoi(argv[3]) : 0;
    auto spec = tfd::cluster_spec::from_env();
    if (argc > 5 && std::atoll(argv[5]) > 0) spec.options.send_thread_bytes = std::strtoull(argv[5], nullptr, 10);
    if (const char* e = std::getenv("TYPEFLOW_BENCH_SPIN_US"); e && *e)
        spec.options.spin_wait = std::chrono::microseconds(std::atoll(e));
    if (const char* e = std::getenv("TYPEFLOW_BENCH_ADAPTIVE_SPIN"); e && *e) spec.options.adaptive_spin = std::atoi(e) != 0;
    tfd::ring_collective c(spec);
    if (argc > 4 && std::atoll(argv[4]) > 0) c.set_segment_bytes(std::strtoull(argv[4], nullptr, 10));
    int rc = bench::allreduce_sweep("typeflow", c.rank(), c.size(), lo, hi, iters,
                                    [&](float* p, std::size_t n) { c.all_reduce(p, p, n, tfd::dtype::float32, tfd::reduce_op::sum); },
                                    [&] { c.barrier(); });
    auto st = c.get_transport().stats();
    std::fprintf(stderr,
                 "typeflow rank %d: %llu data frames sent, %llu received, %llu arrived before their receive; "
                 "spin: %llu hits, %llu misses, budget now %lld us\n",
                 c.rank(), (unsigned long long)st.data_frames_sent, (unsigned long long)st.data_frames_received,
                 (unsigned long long)st.unexpected_frames, (unsigned long long)st.spin_hits,
                 (unsigned long long)st.spin_misses, (long long)st.spin_budget.count());
    return rc;
}
