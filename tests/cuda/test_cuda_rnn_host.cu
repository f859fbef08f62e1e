// The GPU's fused LSTM recurrence (backend/cuda/ops/rnn.hpp) without a GPU:
// a test device in host memory runs the GPU kernels' step order
// (cuda::lstm::forward, backward, recurrent_grad) and cell functions with
// host primitives (row copies, a naive GEMM, loops over the cells); its values
// and gradients must match the CPU backend's, masked and not, over 0, 1 and
// 7 steps. On a GPU (tag [cuda]) the same graph runs on gpu<0>.
#include <catch2/catch.hpp>

#include "../support.hpp"
#include "compare.hpp"

#include <typeflow/typeflow.hpp>

#include <string>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace tftest {
/// Host memory; the LSTM ops through the GPU kernels' step order and cells.
struct rnn_lowered {
    static constexpr int index = -6;
    static std::string name() { return "rnn_lowered"; }
};
// The primitives cuda::lstm's step order asks for, on the host.
template <class T>
struct host_ops {
    void copy_rows(T* dst, tf::index_t dp, const T* src, tf::index_t sp, tf::index_t rows, tf::index_t cols) {
        for (tf::index_t r = 0; r < rows; ++r)
            for (tf::index_t c = 0; c < cols; ++c) dst[r * dp + c] = src[r * sp + c];
    }
    void gemm_acc(bool ta, bool tb, tf::index_t m, tf::index_t n, tf::index_t k, const T* a, tf::index_t lda, const T* b, tf::index_t ldb,
                  T* c, tf::index_t ldc) {
        for (tf::index_t i = 0; i < m; ++i)
            for (tf::index_t j = 0; j < n; ++j) {
                T acc = T(0);
                for (tf::index_t p = 0; p < k; ++p) acc += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
                c[i * ldc + j] += acc;
            }
    }
    void zero(T* p, tf::index_t n) {
        for (tf::index_t i = 0; i < n; ++i) p[i] = T(0);
    }
    void forward_cells(T* s, const T* m, tf::cuda::lstm::extents e, tf::index_t t) {
        for (tf::index_t b = 0; b < e.batch; ++b)
            for (tf::index_t j = 0; j < e.units; ++j) tf::cuda::lstm::cell_forward(s, m, e, t, b, j);
    }
    void backward_cells(const T* s, const T* ds, const T* m, const T* dh, T* dc, T* dh_next, T* dz, tf::cuda::lstm::extents e,
                        tf::index_t t) {
        for (tf::index_t b = 0; b < e.batch; ++b)
            for (tf::index_t j = 0; j < e.units; ++j) tf::cuda::lstm::cell_backward(s, ds, m, dh, dc, dh_next, dz, e, t, b, j);
    }
};
}  // namespace tftest

namespace typeflow {
using tftest::rnn_lowered;
template <>
inline constexpr bool is_device_v<rnn_lowered> = true;
template <>
struct fused<rnn_lowered> : fused<reference> {};
template <class Op>
struct kernel<rnn_lowered, Op> : kernel<reference, Op> {};
template <bool Masked>
struct kernel<rnn_lowered, op::lstm_sequence<Masked>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* s) {
        const dims zd = ctx.dims_of(n.template child<0>());
        const value_type_t<N>* m = nullptr;
        if constexpr (Masked) m = ctx.input(n.template child<2>());
        tftest::host_ops<value_type_t<N>> ops;
        cuda::lstm::forward(ops, {zd.d[0], zd.d[1], zd.d[2] / 4}, ctx.input(n.template child<0>()), ctx.input(n.template child<1>()), m, s);
    }
};
template <bool Masked>
struct kernel<rnn_lowered, op::lstm_sequence_grad<Masked>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dz) {
        using T = value_type_t<N>;
        const dims sd = ctx.dims_of(n.template child<0>());
        const cuda::lstm::extents e{sd.d[0], sd.d[1], sd.d[2] / 6};
        const T* m = nullptr;
        if constexpr (Masked) m = ctx.input(n.template child<3>());
        std::vector<T> buf(static_cast<std::size_t>(3 * e.batch * e.units + 1), T(-7));  // never zero by accident
        const std::size_t row = static_cast<std::size_t>(e.batch * e.units);
        tftest::host_ops<T> ops;
        cuda::lstm::backward(ops, e, ctx.input(n.template child<0>()), ctx.input(n.template child<1>()), ctx.input(n.template child<2>()), m, dz,
                             buf.data(), buf.data() + row, buf.data() + 2 * row);
    }
};
template <>
struct kernel<rnn_lowered, op::lstm_recurrent_grad> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* du) {
        const dims sd = ctx.dims_of(n.template child<0>());
        tftest::host_ops<value_type_t<N>> ops;
        cuda::lstm::recurrent_grad(ops, {sd.d[0], sd.d[1], sd.d[2] / 6}, ctx.input(n.template child<0>()), ctx.input(n.template child<1>()), du);
    }
};
}  // namespace typeflow

namespace {
constexpr tf::index_t units = 5;

// The fused LSTM's result over z (masked by m: h, c and the gates of every
// step), and the gradients of sum(s * w) with respect to z and the recurrent
// kernel u (the gate columns' weights have no effect: the op's gradient
// reads the h and c columns), on device D.
template <class D, class T>
std::vector<tf::tensor<T>> lstm_on(const tf::tensor<T>& zv, const tf::tensor<T>& uv, const tf::tensor<T>& mv, const tf::tensor<T>& wv) {
    constexpr tf::index_t n = units;
    tf::placeholder<"z", T, tf::shape<tf::dyn, tf::dyn, 4 * n>, D> z;
    tf::placeholder<"m", T, tf::shape<tf::dyn, tf::dyn>, D> m;
    tf::placeholder<"w", T, tf::shape<tf::dyn, tf::dyn, 6 * n>, D> w;
    tf::placeholder<"u", T, tf::shape<n, 4 * n>, D> u;
    const auto hc = tf::detail::lstm_sequence(z, u, m);
    const auto y = tf::sum(hc * w);
    tf::session s;
    auto [a, gz, gu] = s.run(tf::fetch(hc, tf::grad(y, z), tf::grad(y, u)), tf::feed(z, zv), tf::feed(u, uv), tf::feed(m, mv), tf::feed(w, wv));
    return {a, gz, gu};
}

template <class D, class T>
void check_lstm(double rtol) {
    rng_t r(61);
    for (tf::index_t steps : {tf::index_t{0}, tf::index_t{1}, tf::index_t{7}})
        for (bool masked : {false, true}) {
            const tf::index_t batch = 3;
            const auto zv = uniform_tensor<T>(r, tf::dims{steps, batch, 4 * units}, 0, 0, -1.5, 1.5);
            const auto uv = uniform_tensor<T>(r, tf::dims{units, 4 * units}, 0, 0, -0.6, 0.6);
            const auto wv = uniform_tensor<T>(r, tf::dims{steps, batch, 6 * units}, 0, 0, -1, 1);
            tf::tensor<T> mv(tf::dims{steps, batch});
            for (tf::index_t i = 0; i < mv.size(); ++i) mv[i] = masked && (i % 4 == 1) ? T(0) : T(1);
            const auto got = lstm_on<D, T>(zv, uv, mv, wv);
            const auto want = lstm_on<tf::cpu, T>(zv, uv, mv, wv);
            const std::string what = "steps " + std::to_string(steps) + (masked ? " masked" : "");
            expect_close(what + ": h, c and the gates", got[0], want[0], rtol);
            expect_close(what + ": d/dz", got[1], want[1], rtol);
            expect_close(what + ": d/du", got[2], want[2], rtol);
        }
}
}  // namespace

TEST_CASE("cuda lstm: the GPU kernels' step order and cells, run on the host, match the cpu", "[host]") {
    check_lstm<tftest::rnn_lowered, double>(1e-12);
    check_lstm<tftest::rnn_lowered, float>(1e-5);
}

TEST_CASE("cuda lstm: the fused recurrence and its gradients on gpu<0> match the cpu", "[cuda]") {
    check_lstm<tf::gpu<0>, double>(1e-11);
    check_lstm<tf::gpu<0>, float>(1e-4);
}
