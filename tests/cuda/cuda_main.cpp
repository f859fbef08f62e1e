// The CUDA tests' main: without a CUDA device the program reports itself
// skipped (exit code 77, CTest's SKIP_RETURN_CODE), never passed, unless it
// is asked for the host-side tests alone (the test spec "[host]").
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

int main(int argc, char** argv) {
    const bool host_only = argc == 2 && std::strcmp(argv[1], "[host]") == 0;
    int n = 0;
    const cudaError_t st = cudaGetDeviceCount(&n);
    if (!host_only && (st != cudaSuccess || n == 0)) {
        std::printf("typeflow_cuda_tests: skipped: no CUDA device (%s)\n", st != cudaSuccess ? cudaGetErrorString(st) : "none found");
        return 77;
    }
#if defined(TYPEFLOW_CUDA_DEVICE_TESTS_CHECK_ONLY)
    if (!host_only) {
        std::printf("typeflow_cuda_tests: test_cuda.cu and test_cuda_conv.cu were compiled as a check only "
                    "(TYPEFLOW_CUDA_DEVICE_TESTS_CHECK_ONLY=ON); reconfigure with it OFF to run the device tests\n");
        return 1;
    }
#endif
    return Catch::Session().run(argc, argv);
}
