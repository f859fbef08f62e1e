// typeflow/backend/eigen/ops/rnn.hpp — CPU kernels of the fused LSTM
// recurrence (expr/ops/rnn.hpp).
//
// A row of the batch depends only on its own earlier steps, so the batch is
// split into blocks of rows (multiples of gemm_row_align, so a result is the
// same for every thread count) and each thread runs every step of its block:
// one fork-join per sequence, not per step. Each step is one GEMM of the
// block's h_{t-1} with the recurrent kernel, for the four gates at once,
// written straight into the state's gate columns, then the gates' element-wise
// work on Eigen arrays (vectorised sigmoid and tanh).
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>

#include <Eigen/Core>

#include <typeflow/backend/eigen/ops/matmul.hpp>
#include <typeflow/core/shape.hpp>
#include <typeflow/expr/ops/rnn.hpp>
#include <typeflow/kernel/kernel.hpp>

namespace typeflow::backend::eigen::detail {

/// Splits the batch rows [0, b) into blocks of whole gemm_row_align units
/// over par's threads (one block per thread, as the work allows) and calls
/// f(b0, b1) for each.
template <class F>
void for_row_blocks(const parallel_ctx& par, index_t b, index_t work, F&& f) {
    const index_t units = std::max<index_t>(1, b / gemm_row_align);
    const index_t parts = std::max<index_t>(1, std::min<index_t>({par.threads, units, work / parallel_gemm_grain}));
    if (parts <= 1) return f(index_t{0}, b);
    par.for_each_task(static_cast<std::size_t>(parts), [&](std::size_t t) {
        const index_t u0 = units * static_cast<index_t>(t) / parts, u1 = units * static_cast<index_t>(t + 1) / parts;
        const index_t b0 = u0 * gemm_row_align, b1 = u1 == units ? b : u1 * gemm_row_align;
        if (b0 < b1) f(b0, b1);
    });
}

/// The forward steps of rows [b0, b1): s [T, B, 6U] from z [T, B, 4U], u
/// [U, 4U] and the mask m [T, B] (nullptr: none).
template <class T>
TYPEFLOW_NOINLINE void lstm_forward_rows(index_t steps, index_t batch, index_t units, const T* z, const T* u, const T* m, T* s,
                                         index_t b0, index_t b1) {
    using arr = Eigen::Array<T, Eigen::Dynamic, 1>;
    using map = Eigen::Map<arr>;
    using cmap = Eigen::Map<const arr>;
    const index_t U = units, G = 4 * U, S = 6 * U, rows = b1 - b0;
    for (index_t t = 0; t < steps; ++t) {
        T* st = s + (t * batch) * S;
        const T* prev = t > 0 ? s + ((t - 1) * batch) * S : nullptr;
        const T* zt = z + (t * batch) * G;
        // the gate columns: h_{t-1} U (none at t = 0), then + z_t
        if (prev) gemm_ld<T, false, false>(rows, G, U, prev + b0 * S, S, u, G, st + b0 * S + 2 * U, S);
        for (index_t b = b0; b < b1; ++b) {
            T* row = st + b * S;
            map a(row + 2 * U, G);
            if (prev) a += cmap(zt + b * G, G);
            else a = cmap(zt + b * G, G);
            map h(row, U), c(row + U, U), i(row + 2 * U, U), f(row + 3 * U, U), g(row + 4 * U, U), o(row + 5 * U, U);
            i = i.logistic();
            f = f.logistic();
            g = g.tanh();
            o = o.logistic();
            const bool keep = m && m[t * batch + b] == T(0);
            if (keep) {  // a masked step: the row keeps h and c
                if (prev) std::memcpy(row, prev + b * S, static_cast<std::size_t>(2 * U) * sizeof(T));
                else std::fill(row, row + 2 * U, T(0));
                continue;
            }
            if (prev) c = f * cmap(prev + b * S + U, U) + i * g;
            else c = i * g;
            h = o * c.tanh();
        }
    }
}

/// The backward steps of rows [b0, b1): dz [T, B, 4U] from s, its adjoint ds
/// and u; work holds 3 * (b1 - b0) * U elements.
template <class T>
TYPEFLOW_NOINLINE void lstm_backward_rows(index_t steps, index_t batch, index_t units, const T* s, const T* ds, const T* u,
                                          const T* m, T* dz, index_t b0, index_t b1, T* work) {
    using arr = Eigen::Array<T, Eigen::Dynamic, 1>;
    using map = Eigen::Map<arr>;
    using cmap = Eigen::Map<const arr>;
    const index_t U = units, G = 4 * U, S = 6 * U, rows = b1 - b0;
    T* dh_next = work;               // the adjoint of h_t from step t + 1 (rows x U)
    T* dc_next = work + rows * U;    // of c_t
    T* carried = work + 2 * rows * U;  // of masked rows' h, added after the product
    std::fill(work, work + 3 * rows * U, T(0));
    arr tc(U), dh(U), dc(U);
    for (index_t t = steps - 1; t >= 0; --t) {
        const T* st = s + (t * batch) * S;
        const T* dst = ds + (t * batch) * S;
        const T* prev = t > 0 ? s + ((t - 1) * batch) * S : nullptr;
        T* dzt = dz + (t * batch) * G;
        for (index_t b = b0; b < b1; ++b) {
            const index_t r = b - b0;
            map dhn(dh_next + r * U, U), dcn(dc_next + r * U, U);
            dh = cmap(dst + b * S, U) + dhn;
            dc = cmap(dst + b * S + U, U) + dcn;
            T* d = dzt + b * G;
            if (m && m[t * batch + b] == T(0)) {  // masked: the adjoints pass to step t - 1 unchanged
                std::fill(d, d + G, T(0));
                map(carried + r * U, U) = dh;
                dcn = dc;
                continue;
            }
            const T* row = st + b * S;
            cmap c(row + U, U), i(row + 2 * U, U), f(row + 3 * U, U), g(row + 4 * U, U), o(row + 5 * U, U);
            tc = c.tanh();
            dc += dh * o * (T(1) - tc * tc);
            map(d + 3 * U, U) = dh * tc * o * (T(1) - o);   // o
            map(d, U) = dc * g * i * (T(1) - i);            // i
            if (prev) map(d + U, U) = dc * cmap(prev + b * S + U, U) * f * (T(1) - f);  // f
            else map(d + U, U).setZero();
            map(d + 2 * U, U) = dc * i * (T(1) - g * g);    // g
            dcn = dc * f;
            if (m) map(carried + r * U, U).setZero();
        }
        if (t == 0) break;
        // dh_{t-1} = dz_t U^T (+ the carried adjoint of masked rows)
        gemm_ld<T, false, true>(rows, U, G, dzt + b0 * G, G, u, G, dh_next, U);
        if (m)
            for (index_t k = 0; k < rows * U; ++k) dh_next[k] += carried[k];
    }
}

}  // namespace typeflow::backend::eigen::detail

namespace typeflow {

template <bool Masked>
struct kernel<cpu, op::lstm_sequence<Masked>> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const dims z = ctx.dims_of(n.template child<0>());
        const index_t steps = z.d[0], batch = z.d[1], units = z.d[2] / 4;
        const T* m = nullptr;
        if constexpr (Masked) m = ctx.input(n.template child<2>());
        const T* pz = ctx.input(n.template child<0>());
        const T* pu = ctx.input(n.template child<1>());
        backend::eigen::detail::for_row_blocks(ctx.par, batch, steps * batch * 4 * units * units, [&](index_t b0, index_t b1) {
            backend::eigen::detail::lstm_forward_rows<T>(steps, batch, units, pz, pu, m, out, b0, b1);
        });
    }
};

template <bool Masked>
struct kernel<cpu, op::lstm_sequence_grad<Masked>> {
    template <class Ctx>
    static std::size_t workspace_bytes(const Ctx& ctx) {  // 3 B U elements of up to 8 bytes
        const dims& s = *ctx.in_dims[0];
        return static_cast<std::size_t>(3 * s.d[1] * (s.d[2] / 6)) * sizeof(double);
    }
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* dz) {
        using T = value_type_t<N>;
        const dims s = ctx.dims_of(n.template child<0>());
        const index_t steps = s.d[0], batch = s.d[1], units = s.d[2] / 6;
        const T* m = nullptr;
        if constexpr (Masked) m = ctx.input(n.template child<3>());
        const T* ps = ctx.input(n.template child<0>());
        const T* pds = ctx.input(n.template child<1>());
        const T* pu = ctx.input(n.template child<2>());
        T* work = static_cast<T*>(ctx.workspace());
        backend::eigen::detail::for_row_blocks(ctx.par, batch, steps * batch * 4 * units * units, [&](index_t b0, index_t b1) {
            backend::eigen::detail::lstm_backward_rows<T>(steps, batch, units, ps, pds, pu, m, dz, b0, b1,
                                                          work + 3 * b0 * units);
        });
    }
};

template <>
struct kernel<cpu, op::lstm_recurrent_grad> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* du) {
        using T = value_type_t<N>;
        const dims s = ctx.dims_of(n.template child<0>());
        const index_t steps = s.d[0], batch = s.d[1], U = s.d[2] / 6, G = 4 * U;
        const T* ps = ctx.input(n.template child<0>());
        const T* pdz = ctx.input(n.template child<1>());
        if (steps <= 1 || batch == 0) return std::fill(du, du + U * G, T(0));
        // du = H_prev^T dZ over steps 1..T-1: h_{t-1} are rows of s (6U apart)
        const index_t k = (steps - 1) * batch;
        const index_t units = std::max<index_t>(1, U / backend::eigen::detail::gemm_row_align);
        const index_t parts = std::max<index_t>(
            1, std::min<index_t>({ctx.par.threads, units, U * G * k / backend::eigen::detail::parallel_gemm_grain}));
        ctx.par.for_each_task(static_cast<std::size_t>(parts), [&](std::size_t t) {
            const index_t u0 = units * static_cast<index_t>(t) / parts, u1 = units * static_cast<index_t>(t + 1) / parts;
            const index_t r0 = u0 * backend::eigen::detail::gemm_row_align,
                          r1 = u1 == units ? U : u1 * backend::eigen::detail::gemm_row_align;
            if (r0 < r1)
                backend::eigen::detail::gemm_ld<T, true, false>(r1 - r0, G, k, ps + r0, 6 * U, pdz + batch * G, G, du + r0 * G, G);
        });
    }
};

}  // namespace typeflow
