// The CUDA tests' main: without a CUDA device the program reports itself
// skipped (exit code 77, CTest's SKIP_RETURN_CODE), never passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <cstdio>

int main(int argc, char** argv) {
    int n = 0;
    const cudaError_t st = cudaGetDeviceCount(&n);
    if (st != cudaSuccess || n == 0) {
        std::printf("typeflow_cuda_tests: skipped: no CUDA device (%s)\n", st != cudaSuccess ? cudaGetErrorString(st) : "none found");
        return 77;
    }
    return Catch::Session().run(argc, argv);
}
