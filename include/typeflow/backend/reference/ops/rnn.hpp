// typeflow/backend/reference/ops/rnn.hpp — reference kernels of the fused
// LSTM recurrence: scalar loops, one element at a time.
#pragma once
#include <cmath>
#include <vector>

#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/rnn.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow {

namespace detail {
template <class T>
T reference_sigmoid(T x) {
    return T(1) / (T(1) + std::exp(-x));
}
}  // namespace detail

template <bool Masked>
struct kernel<reference, op::lstm_sequence<Masked>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* s) {
        using T = value_type_t<N>;
        const dims zd = ctx.dims_of(n.template child<0>());
        const index_t steps = zd.d[0], batch = zd.d[1], U = zd.d[2] / 4;
        const T* z = ctx.input(n.template child<0>());
        const T* u = ctx.input(n.template child<1>());
        const T* m = nullptr;
        if constexpr (Masked) m = ctx.input(n.template child<2>());
        const auto at = [&](index_t t, index_t b, index_t col) { return (t * batch + b) * 6 * U + col; };
        for (index_t t = 0; t < steps; ++t)
            for (index_t b = 0; b < batch; ++b) {
                for (index_t j = 0; j < 4 * U; ++j) {
                    T a = z[(t * batch + b) * 4 * U + j];
                    for (index_t k = 0; k < U && t > 0; ++k) a += s[at(t - 1, b, k)] * u[k * 4 * U + j];
                    s[at(t, b, 2 * U + j)] = j / U == 2 ? std::tanh(a) : detail::reference_sigmoid(a);
                }
                const bool keep = m && m[t * batch + b] == T(0);
                for (index_t j = 0; j < U; ++j) {
                    const T c_prev = t > 0 ? s[at(t - 1, b, U + j)] : T(0), h_prev = t > 0 ? s[at(t - 1, b, j)] : T(0);
                    const T i = s[at(t, b, 2 * U + j)], f = s[at(t, b, 3 * U + j)], g = s[at(t, b, 4 * U + j)],
                            o = s[at(t, b, 5 * U + j)];
                    const T c = f * c_prev + i * g;
                    s[at(t, b, U + j)] = keep ? c_prev : c;
                    s[at(t, b, j)] = keep ? h_prev : o * std::tanh(c);
                }
            }
    }
};

template <bool Masked>
struct kernel<reference, op::lstm_sequence_grad<Masked>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dz) {
        using T = value_type_t<N>;
        const dims sd = ctx.dims_of(n.template child<0>());
        const index_t steps = sd.d[0], batch = sd.d[1], U = sd.d[2] / 6;
        const T* s = ctx.input(n.template child<0>());
        const T* ds = ctx.input(n.template child<1>());
        const T* u = ctx.input(n.template child<2>());
        const T* m = nullptr;
        if constexpr (Masked) m = ctx.input(n.template child<3>());
        const auto at = [&](index_t t, index_t b, index_t col) { return (t * batch + b) * 6 * U + col; };
        std::vector<T> dh(static_cast<std::size_t>(batch * U)), dc(dh.size());  // adjoints of h_t, c_t from later steps
        for (index_t t = steps - 1; t >= 0; --t) {
            std::vector<T> dh_prev(dh.size(), T(0));
            for (index_t b = 0; b < batch; ++b) {
                T* d = dz + (t * batch + b) * 4 * U;
                const bool keep = m && m[t * batch + b] == T(0);
                for (index_t j = 0; j < U; ++j) {
                    const std::size_t r = static_cast<std::size_t>(b * U + j);
                    const T gh = ds[at(t, b, j)] + dh[r];
                    T gc = ds[at(t, b, U + j)] + dc[r];
                    if (keep) {
                        d[j] = d[U + j] = d[2 * U + j] = d[3 * U + j] = T(0);
                        dh_prev[r] += gh;
                        dc[r] = gc;
                        continue;
                    }
                    const T c = s[at(t, b, U + j)], c_prev = t > 0 ? s[at(t - 1, b, U + j)] : T(0);
                    const T i = s[at(t, b, 2 * U + j)], f = s[at(t, b, 3 * U + j)], g = s[at(t, b, 4 * U + j)],
                            o = s[at(t, b, 5 * U + j)];
                    const T tc = std::tanh(c);
                    gc += gh * o * (T(1) - tc * tc);
                    d[j] = gc * g * i * (T(1) - i);
                    d[U + j] = gc * c_prev * f * (T(1) - f);
                    d[2 * U + j] = gc * i * (T(1) - g * g);
                    d[3 * U + j] = gh * tc * o * (T(1) - o);
                    dc[r] = gc * f;
                }
                for (index_t k = 0; k < U; ++k)  // dh_{t-1} += dz_t U^T
                    for (index_t j = 0; j < 4 * U; ++j) dh_prev[static_cast<std::size_t>(b * U + k)] += d[j] * u[k * 4 * U + j];
            }
            dh = dh_prev;
        }
    }
};

template <>
struct kernel<reference, op::lstm_recurrent_grad> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* du) {
        using T = value_type_t<N>;
        const dims sd = ctx.dims_of(n.template child<0>());
        const index_t steps = sd.d[0], batch = sd.d[1], U = sd.d[2] / 6;
        const T* s = ctx.input(n.template child<0>());
        const T* dz = ctx.input(n.template child<1>());
        for (index_t k = 0; k < U; ++k)
            for (index_t j = 0; j < 4 * U; ++j) {
                T acc = T(0);
                for (index_t t = 1; t < steps; ++t)
                    for (index_t b = 0; b < batch; ++b)
                        acc += s[((t - 1) * batch + b) * 6 * U + k] * dz[(t * batch + b) * 4 * U + j];
                du[k * 4 * U + j] = acc;
            }
    }
};

}  // namespace typeflow
