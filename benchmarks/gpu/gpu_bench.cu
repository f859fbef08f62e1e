// benchmarks/gpu/gpu_bench.cu — typeflow on a GPU against its peers, in one
// program (run by scripts/gpu_check.sh on a machine with a CUDA device):
//
//   copy            cudaMemcpyAsync device to device of 2^26 floats (the
//                   device's own bandwidth: bytes read + written / time)
//   fused_chain_gpu out = sigmoid(a*x + b)*z + x*x over 2^26 floats, as a
//                   typeflow step (group(assign(out, chain)) on gpu<0>
//                   variables) and as a hand-written float4 CUDA kernel; the
//                   ratio is typeflow's bandwidth (3 x 2^28 bytes / time) over
//                   the copy's (2 x 2^28 bytes / time)
//   gemm_gpu        the MLP's GEMM shapes through a typeflow step
//                   (group(matmul(A, B))) against cublasSgemm called directly
//                   and synchronised, both per call
//   mlp_step_gpu    one SGD step of the 784-256-128-10 MLP (batch 256, 4096)
//   cnn_step_gpu    one Adam step of the lectures' CNN (Conv2D(32, 3, relu),
//                   MaxPooling2D, Dense(64, relu), Dense(10); batch 64)
//                   as a typeflow session run fetching the loss, with the
//                   work items typeflow queued per step (kernels, cuBLAS calls,
//                   copies, CUDA graph launches), once with the step recorded
//                   as a CUDA graph and replayed (replay=1, the default) and
//                   once without (replay=0); PyTorch's figures come from
//                   torch_mlp_step.py in the same script
//
// Times are medians over rounds of host wall-clock per iteration (each
// typeflow run ends synchronised: its fetch is on the host), and CUDA events
// for the device-only peers. Results are checked against a CPU reference;
// a mismatch exits 1.
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <utility>
#include <vector>

#include <typeflow/typeflow.hpp>

namespace tf = typeflow;
using G = tf::gpu<0>;

namespace {

#define CK(x)                                                                                    \
    do {                                                                                         \
        cudaError_t e_ = (x);                                                                    \
        if (e_ != cudaSuccess) {                                                                 \
            std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            std::exit(2);                                                                        \
        }                                                                                        \
    } while (0)

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}
// Host wall-clock microseconds per call of f: `rounds` rounds of `reps` calls after `warm` calls.
double host_us(const std::function<void()>& f, int reps = 20, int rounds = 7, int warm = 5) {
    for (int i = 0; i < warm; ++i) f();
    std::vector<double> t;
    for (int r = 0; r < rounds; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < reps; ++i) f();
        t.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / reps);
    }
    return median(t);
}
// Device microseconds per call of f (which queues work on `st`), by events.
double device_us(cudaStream_t st, const std::function<void()>& f, int reps = 20, int rounds = 7, int warm = 5) {
    for (int i = 0; i < warm; ++i) f();
    CK(cudaStreamSynchronize(st));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<double> t;
    for (int r = 0; r < rounds; ++r) {
        CK(cudaEventRecord(a, st));
        for (int i = 0; i < reps; ++i) f();
        CK(cudaEventRecord(b, st));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(1000.0 * ms / reps);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return median(t);
}

__global__ void chain_kernel(const float4* x, const float4* z, float4* o, float a, float b, long n4) {
    for (long i = blockIdx.x * long{blockDim.x} + threadIdx.x; i < n4; i += long{gridDim.x} * blockDim.x) {
        const float4 xv = x[i], zv = z[i];
        float4 r;
        r.x = 1.f / (1.f + expf(-(a * xv.x + b))) * zv.x + xv.x * xv.x;
        r.y = 1.f / (1.f + expf(-(a * xv.y + b))) * zv.y + xv.y * xv.y;
        r.z = 1.f / (1.f + expf(-(a * xv.z + b))) * zv.z + xv.z * xv.z;
        r.w = 1.f / (1.f + expf(-(a * xv.w + b))) * zv.w + xv.w * xv.w;
        o[i] = r;
    }
}

int fused_chain() {
    constexpr long n = 1L << 26;
    std::vector<float> hx(n), hz(n);
    std::mt19937 rng(42);
    std::uniform_real_distribution<float> u(-3.f, 3.f);
    for (long i = 0; i < n; ++i) hx[i] = u(rng), hz[i] = u(rng);
    const float av = 0.75f, bv = -0.25f;

    tf::variable<"x", float, tf::shape<n>, G> x;
    tf::variable<"z", float, tf::shape<n>, G> z;
    tf::variable<"a", float, tf::shape<>, G> a;
    tf::variable<"b", float, tf::shape<>, G> b;
    tf::variable<"out", float, tf::shape<n>, G> out;
    x.load(tf::view(hx));
    z.load(tf::view(hz));
    a.load(tf::tensor_view<const float>{&av, tf::dims{}});
    b.load(tf::tensor_view<const float>{&bv, tf::dims{}});
    auto step = tf::group(tf::assign(out, tf::sigmoid(a * x + b) * z + x * x));
    tf::session s;
    s.run(step);
    // check a sample against the host
    const tf::tensor<float>& o = out.value();
    for (long i = 0; i < n; i += 9973) {
        const float want = 1.f / (1.f + std::exp(-(av * hx[i] + bv))) * hz[i] + hx[i] * hx[i];
        if (std::abs(o[i] - want) > 1e-5f * std::max(1.f, std::abs(want))) {
            std::printf("fused_chain_gpu: MISMATCH at %ld: %g vs %g\n", i, o[i], want);
            return 1;
        }
    }
    tf::cuda::device_context& c = tf::cuda::context<0>();
    const double t_tf = host_us([&] { s.run(step); });
    const double t_tf_dev = device_us(c.stream, [&] { s.run(step); });
    // peers
    float *dx, *dz, *dout;
    CK(cudaMalloc(&dx, n * sizeof(float)));
    CK(cudaMalloc(&dz, n * sizeof(float)));
    CK(cudaMalloc(&dout, n * sizeof(float)));
    CK(cudaMemcpy(dx, hx.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dz, hz.data(), n * sizeof(float), cudaMemcpyHostToDevice));
    cudaStream_t st;
    CK(cudaStreamCreate(&st));
    const double t_copy = device_us(st, [&] { CK(cudaMemcpyAsync(dout, dx, n * sizeof(float), cudaMemcpyDeviceToDevice, st)); });
    const double t_hand = device_us(st, [&] {
        chain_kernel<<<132 * 16, 256, 0, st>>>(reinterpret_cast<const float4*>(dx), reinterpret_cast<const float4*>(dz),
                                              reinterpret_cast<float4*>(dout), av, bv, n / 4);
    });
    CK(cudaGetLastError());
    const double gb = double(n) * 4 / 1e3;  // MB per array -> bytes/us = MB/s... GB/s = bytes / us / 1e3
    const double bw_copy = 2 * gb / t_copy, bw_tf = 3 * gb / t_tf, bw_tf_dev = 3 * gb / t_tf_dev, bw_hand = 3 * gb / t_hand;
    std::printf("copy n=2^26 us=%.1f GB/s=%.0f\n", t_copy, bw_copy);
    std::printf("fused_chain_gpu typeflow=%.1f copy=%.1f ratio=%.3f (bandwidth typeflow %.0f GB/s over copy %.0f GB/s)\n", t_tf, t_copy,
                bw_tf / bw_copy, bw_tf, bw_copy);
    std::printf("fused_chain_gpu typeflow_device=%.1f ratio=%.3f hand_written=%.1f ratio_hand=%.3f (typeflow over hand-written kernel: %.3f)\n",
                t_tf_dev, bw_tf_dev / bw_copy, t_hand, bw_hand / bw_copy, t_hand / t_tf);
    CK(cudaFree(dx));
    CK(cudaFree(dz));
    CK(cudaFree(dout));
    CK(cudaStreamDestroy(st));
    return 0;
}

template <long M, long K, long N>
int gemm_case(cublasHandle_t h, cudaStream_t st) {
    tf::variable<"A", float, tf::shape<M, K>, G> A;
    tf::variable<"B", float, tf::shape<K, N>, G> B;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<float> ha(M * K), hb(K * N);
    for (auto& v : ha) v = u(rng);
    for (auto& v : hb) v = u(rng);
    A.load(tf::view(ha, {M, K}));
    B.load(tf::view(hb, {K, N}));
    auto prod = tf::matmul(A, B);
    auto step = tf::group(prod);
    tf::session s;
    const tf::tensor<float> got = s.run(prod);
    // one row against the host
    for (long j = 0; j < N; ++j) {
        double want = 0;
        for (long p = 0; p < K; ++p) want += double(ha[p]) * hb[p * N + j];
        if (std::abs(got[j] - want) > 1e-4 * std::max(1.0, std::abs(want))) {
            std::printf("gemm_gpu: MISMATCH %ldx%ldx%ld at (0,%ld): %g vs %g\n", M, K, N, j, got[j], want);
            return 1;
        }
    }
    const double t_tf = host_us([&] { s.run(step); }, 50);
    float *da, *db, *dc;
    CK(cudaMalloc(&da, M * K * sizeof(float)));
    CK(cudaMalloc(&db, K * N * sizeof(float)));
    CK(cudaMalloc(&dc, M * N * sizeof(float)));
    CK(cudaMemcpy(da, ha.data(), M * K * sizeof(float), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(db, hb.data(), K * N * sizeof(float), cudaMemcpyHostToDevice));
    const float one = 1, zero = 0;
    auto call = [&] {
        if (cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, db, N, da, K, &zero, dc, N) != CUBLAS_STATUS_SUCCESS) std::exit(3);
    };
    const double t_sync = host_us([&] {
        call();
        CK(cudaStreamSynchronize(st));
    }, 50);
    const double t_dev = device_us(st, call, 50);
    std::printf("gemm_gpu m=%ld k=%ld n=%ld typeflow=%.1f cublas_sync=%.1f ratio=%.3f cublas_device=%.1f gflops_typeflow=%.0f\n", M, K,
                N, t_tf, t_sync, t_sync / t_tf, t_dev, 2.0 * M * K * N / t_tf / 1e3);
    CK(cudaFree(da));
    CK(cudaFree(db));
    CK(cudaFree(dc));
    return 0;
}

// Four batches of inputs of extents `x` drawn from `dist` and labels in
// [0, 10), which the training benchmarks rotate through.
template <class Dist>
std::pair<std::vector<tf::tensor<float>>, std::vector<tf::tensor<std::int32_t>>> random_batches(std::mt19937& rng, const tf::dims& x,
                                                                                               Dist dist) {
    std::vector<tf::tensor<float>> xs;
    std::vector<tf::tensor<std::int32_t>> ys;
    for (int k = 0; k < 4; ++k) {
        tf::tensor<float> xt(x);
        tf::tensor<std::int32_t> yt(tf::dims{x.d[0]});
        for (long i = 0; i < xt.size(); ++i) xt[i] = dist(rng);
        for (long i = 0; i < yt.size(); ++i) yt[i] = static_cast<std::int32_t>(rng() % 10);
        xs.push_back(std::move(xt));
        ys.push_back(std::move(yt));
    }
    return {std::move(xs), std::move(ys)};
}

// Times one training step `step()` (which returns its loss) of `name` in
// session `s`: the work items one step queues once the session replays its
// recording (or without replay), the host time per step, and a check that the
// loss fell.
template <class Step>
int time_step(const char* name, long batch, const tf::session& s, bool replay, Step&& step) {
    const float first = step();
    float last = first;
    for (int i = 0; i < 4; ++i) last = step();  // the step's pointer sets met, recorded
    const unsigned long long l0 = tf::cuda::launch_count().load();
    last = step();
    const unsigned long long per_step = tf::cuda::launch_count().load() - l0;
    const double t = host_us([&] { last = step(); }, 50, 7, 10);
    if (!(std::isfinite(last) && last < first)) {
        std::printf("%s: loss did not fall (%g -> %g)\n", name, first, last);
        return 1;
    }
    std::printf("%s batch=%ld replay=%d typeflow=%.1f us launches=%llu replays=%zu loss %.4f -> %.4f\n", name, batch, replay ? 1 : 0, t,
                per_step, s.stats().replays, first, last);
    return 0;
}

template <long Batch>
int mlp_step(bool replay) {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 784>, G> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>, G> y;
    tf::variable<"W1", float, tf::shape<784, 256>, G> W1{tf::init::glorot_uniform{}};
    tf::variable<"b1", float, tf::shape<256>, G> b1{tf::init::uniform{-0.1, 0.1}};
    tf::variable<"W2", float, tf::shape<256, 128>, G> W2{tf::init::glorot_uniform{}};
    tf::variable<"b2", float, tf::shape<128>, G> b2{tf::init::uniform{-0.1, 0.1}};
    tf::variable<"W3", float, tf::shape<128, 10>, G> W3{tf::init::glorot_uniform{}};
    tf::variable<"b3", float, tf::shape<10>, G> b3{tf::init::uniform{-0.1, 0.1}};
    auto h1 = tf::relu(tf::matmul(x, W1) + b1);
    auto h2 = tf::relu(tf::matmul(h1, W2) + b2);
    auto logits = tf::matmul(h2, W3) + b3;
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    auto step = tf::train::sgd(0.01f).minimize(loss);
    // four batches, rotated
    std::mt19937 rng(7);
    const auto [xs, ys] = random_batches(rng, tf::dims{Batch, 784}, std::normal_distribution<float>{});
    tf::session s(tf::session_options{.replay = replay});
    int k = 0;
    return time_step("mlp_step_gpu", Batch, s, replay, [&] {
        ++k;
        return std::get<0>(s.run(tf::fetch(loss, step), tf::feed(x, xs[k & 3]), tf::feed(y, ys[k & 3])))[0];
    });
}

// The lectures' CNN: Conv2D(32, 3, relu) on [B, 28, 28, 1], MaxPooling2D(),
// Flatten, Dense(64, relu), Dense(10), sparse softmax cross entropy, Adam.
template <long Batch>
int cnn_step(bool replay) {
    tf::placeholder<"x", float, tf::shape<tf::dyn, 28, 28, 1>, G> x;
    tf::placeholder<"y", std::int32_t, tf::shape<tf::dyn>, G> y;
    tf::variable<"k", float, tf::shape<3, 3, 1, 32>, G> k{tf::init::glorot_uniform{}};
    tf::variable<"kb", float, tf::shape<32>, G> kb;
    tf::variable<"W1", float, tf::shape<5408, 64>, G> W1{tf::init::glorot_uniform{}};
    tf::variable<"b1", float, tf::shape<64>, G> b1;
    tf::variable<"W2", float, tf::shape<64, 10>, G> W2{tf::init::glorot_uniform{}};
    tf::variable<"b2", float, tf::shape<10>, G> b2;
    auto h = tf::reshape<tf::dyn, 5408>(tf::max_pool2d<2>(tf::relu(tf::conv2d(x, k) + kb)));
    auto logits = tf::matmul(tf::relu(tf::matmul(h, W1) + b1), W2) + b2;
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    auto step = tf::train::adam(0.001f).minimize(loss);
    std::mt19937 rng(9);
    const auto [xs, ys] = random_batches(rng, tf::dims{Batch, 28, 28, 1}, std::uniform_real_distribution<float>(0.f, 1.f));
    tf::session s(tf::session_options{.replay = replay});
    int i = 0;
    return time_step("cnn_step_gpu", Batch, s, replay, [&] {
        ++i;
        return std::get<0>(s.run(tf::fetch(loss, step), tf::feed(x, xs[i & 3]), tf::feed(y, ys[i & 3])))[0];
    });
}

}  // namespace

int main(int argc, char** argv) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        std::printf("gpu_bench: skipped: no CUDA device\n");
        return 77;
    }
    const std::string only = argc > 1 ? argv[1] : "";
    int rc = 0;
    try {
        if (only.empty() || only == "fused") rc |= fused_chain();
        if (only.empty() || only == "gemm") {
            cublasHandle_t h;
            cudaStream_t st;
            CK(cudaStreamCreate(&st));
            if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 3;
            cublasSetStream(h, st);
            rc |= gemm_case<256, 784, 256>(h, st);
            rc |= gemm_case<256, 256, 128>(h, st);
            rc |= gemm_case<256, 128, 10>(h, st);
            rc |= gemm_case<4096, 784, 256>(h, st);
            rc |= gemm_case<4096, 256, 128>(h, st);
            rc |= gemm_case<4096, 128, 10>(h, st);
            cublasDestroy(h);
        }
        if (only.empty() || only == "mlp") {
            for (bool replay : {true, false}) {
                rc |= mlp_step<256>(replay);
                rc |= mlp_step<4096>(replay);
            }
        }
        if (only.empty() || only == "cnn")
            for (bool replay : {true, false}) rc |= cnn_step<64>(replay);
    } catch (const tf::error& e) {
        std::printf("gpu_bench: error: %s\n", e.what());
        return 1;
    }
    return rc;
}
