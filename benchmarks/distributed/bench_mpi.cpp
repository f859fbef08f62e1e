// Open MPI MPI_Allreduce (float32 sum, in place); run with
//   mpirun -np N --mca btl tcp,self ./bench_mpi [min_bytes max_bytes iters]
#include <mpi.h>

#include "bench_common.hpp"

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    std::size_t lo = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4096;
    std::size_t hi = argc > 2 ? std::strtoull(argv[2], nullptr, 10) : std::size_t{64} << 20;
    int iters = argc > 3 ? std::atoi(argv[3]) : 0;
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rc = bench::allreduce_sweep("openmpi", rank, size, lo, hi, iters,
                                    [&](float* p, std::size_t n) {
                                        MPI_Allreduce(MPI_IN_PLACE, p, static_cast<int>(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                                    },
                                    [&] { MPI_Barrier(MPI_COMM_WORLD); });
    MPI_Finalize();
    return rc;
}
