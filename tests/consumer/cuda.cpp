// typeflow::cuda through an installed package (find_package(typeflow COMPONENTS
// cuda)): compiles against the CUDA runtime, cuBLAS(Lt), cuDNN and NCCL headers,
// links the libraries and asks each for its version. No GPU needed; it says
// how many it sees.
#include <cstdio>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <nccl.h>

#include <typeflow/typeflow.hpp>

int main() {
    int runtime = 0, nccl = 0, devices = 0;
    const bool ok = cudaRuntimeGetVersion(&runtime) == cudaSuccess && ncclGetVersion(&nccl) == ncclSuccess &&
                    runtime > 0 && nccl > 0 && cudnnGetVersion() > 0 && cublasLtGetVersion() > 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess) devices = 0;
    std::printf("consumer_cuda: cudart %d, cublasLt %zu, cuDNN %zu, NCCL %d, %d GPU(s) %s\n", runtime,
                cublasLtGetVersion(), cudnnGetVersion(), nccl, devices, ok ? "OK" : "FAILED");
    return ok ? 0 : 1;
}
