// Gloo AllreduceRing (float32 sum) over Gloo's TCP transport with FileStore
// rendezvous, run under typeflow-launch (rank and size from TYPEFLOW_CONFIG).
//   bench_gloo STORE_DIR [min_bytes max_bytes iters]
#include <typeflow/distributed/cluster_spec.hpp>

#include <gloo/allreduce_ring.h>
#include <gloo/barrier_all_to_all.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include "bench_common.hpp"

#include <map>
#include <memory>

int main(int argc, char** argv) {
    if (argc < 2) return 2;
    std::size_t lo = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 4096;
    std::size_t hi = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : std::size_t{64} << 20;
    int iters = argc > 4 ? std::atoi(argv[4]) : 0;
    auto spec = typeflow::dist::cluster_spec::from_env();
    const int rank = spec.rank(), size = spec.size();
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    gloo::rendezvous::FileStore store(argv[1]);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
    ctx->connectFullMesh(store, dev);
    gloo::BarrierAllToAll barrier(ctx);
    // Gloo algorithms bind to a buffer at construction: keep one per (pointer, count).
    std::map<std::pair<float*, std::size_t>, std::unique_ptr<gloo::AllreduceRing<float>>> algs;
    return bench::allreduce_sweep("gloo", rank, size, lo, hi, iters,
                                  [&](float* p, std::size_t n) {
                                      auto& a = algs[{p, n}];
                                      if (!a) a = std::make_unique<gloo::AllreduceRing<float>>(ctx, std::vector<float*>{p}, static_cast<int>(n));
                                      a->run();
                                  },
                                  [&] { barrier.run(); });
}
