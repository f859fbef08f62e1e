// typeflow/expr/ops/matmul.hpp — matrix product, 2-D and batched, with
// transpose flags.
#pragma once
#include <string>

#include <typeflow/core/error.hpp>
#include <typeflow/expr/elementwise.hpp>
#include <typeflow/expr/gradient.hpp>
#include <typeflow/core/message.hpp>

namespace typeflow {

/// Transpose flags for matmul: transpose_a, transpose_b, transpose_ab.
template <bool A, bool B>
struct transpose_flags {};
inline constexpr transpose_flags<true, false> transpose_a{};
inline constexpr transpose_flags<false, true> transpose_b{};
inline constexpr transpose_flags<true, true> transpose_ab{};

namespace detail {
struct matmul_dims {
    dims out;
    bool inner_ok = true, batch_ok = true, rank_ok = true;
};
// [..., m, k] x [..., k, n] -> [..., m, n]; batch extents equal, or one side rank 2.
constexpr matmul_dims matmul_shape(dims a, dims b, bool ta, bool tb) {
    matmul_dims r;
    if (a.rank < 2 || b.rank < 2) {
        r.rank_ok = false;
        return r;
    }
    const index_t m = ta ? a.d[a.rank - 1] : a.d[a.rank - 2];
    const index_t ka = ta ? a.d[a.rank - 2] : a.d[a.rank - 1];
    const index_t kb = tb ? b.d[b.rank - 1] : b.d[b.rank - 2];
    const index_t n = tb ? b.d[b.rank - 2] : b.d[b.rank - 1];
    if (ka != kb && ka != dyn && kb != dyn) r.inner_ok = false;
    const dims& batch = a.rank >= b.rank ? a : b;
    if (a.rank > 2 && b.rank > 2) {
        if (a.rank != b.rank) r.batch_ok = false;
        else
            for (std::size_t i = 0; i + 2 < a.rank; ++i)
                if (a.d[i] != b.d[i] && a.d[i] != dyn && b.d[i] != dyn) r.batch_ok = false;
    }
    for (std::size_t i = 0; i + 2 < batch.rank; ++i) r.out.d[r.out.rank++] = batch.d[i];
    r.out.d[r.out.rank++] = m;
    r.out.d[r.out.rank++] = n;
    return r;
}
}  // namespace detail

namespace op {
template <bool TA, bool TB>
struct matmul {
    static constexpr op_kind kind = op_kind::kernel;
    static constexpr std::string_view name = "matmul";
    static constexpr bool transpose_a = TA, transpose_b = TB;
    /// The products of a node with operands of extents a and b: `batches`
    /// products C_i (m x n) = op(A_i) (m x k) op(B_i) (k x n), row-major; A_i
    /// `sa` elements apart, B_i `sb` apart (0: a 2-D operand serves every
    /// batch); lda and ldb are A's and B's row lengths as stored.
    struct sizes {
        index_t m = 0, n = 0, k = 0, batches = 1, sa = 0, sb = 0, lda = 0, ldb = 0;
    };
    static constexpr sizes sizes_of(dims a, dims b) noexcept {
        sizes z;
        const index_t ar = a.d[a.rank - 2], ac = a.d[a.rank - 1];
        const index_t br = b.d[b.rank - 2], bc = b.d[b.rank - 1];
        z.m = TA ? ac : ar;
        z.k = TA ? ar : ac;
        z.n = TB ? br : bc;
        const dims& big = a.rank >= b.rank ? a : b;
        for (std::size_t i = 0; i + 2 < big.rank; ++i) z.batches *= big.d[i];
        z.sa = a.rank > 2 ? ar * ac : 0;
        z.sb = b.rank > 2 ? br * bc : 0;
        z.lda = ac;
        z.ldb = bc;
        return z;
    }
    template <class A, class B>
    static constexpr auto rule() {
        constexpr detail::matmul_dims r = detail::matmul_shape(shape_t<A>::value, shape_t<B>::value, TA, TB);
        using failure = require::first_failure_t<
            require::same_device<matmul, device_t<A>, device_t<B>>, require::same_dtype<matmul, value_type_t<A>, value_type_t<B>>,
            require::numeric<matmul, value_type_t<A>>,
            // operands need rank >= 2
            require::that<r.rank_ok, diagnostic::rank_too_small<matmul, shape_t<A>>>,
            // the inner dimensions (columns of a, rows of b) differ
            require::that<!r.rank_ok || r.inner_ok, diagnostic::inner_dimensions_differ<matmul, shape_t<A>, shape_t<B>>>,
            // batch dimensions differ (they must be equal, or one operand 2-D)
            require::that<!r.rank_ok || r.batch_ok, diagnostic::batch_dimensions_differ<matmul, shape_t<A>, shape_t<B>>>>;
        if constexpr (!std::is_void_v<failure>) return rule_failed<failure>{};
        else return result_traits<value_type_t<A>, shape_from_dims<r.out>, device_t<A>>{};
    }
    template <class A, class B>
    using traits = decltype(rule<operand_sig_t<A>, operand_sig_t<B>>());
    static dims infer(const dims& a, const dims& b) {
        const detail::matmul_dims r = detail::matmul_shape(a, b, TA, TB);
        if (!r.inner_ok || !r.batch_ok)
            typeflow::detail::raise(typeflow::detail::message() << "matmul: shapes " << a << " and " << b << " do not multiply"
                                                                << (TA ? " (a transposed)" : "") << (TB ? " (b transposed)" : ""));
        return r.out;
    }
};
}  // namespace op

/// Matrix product of the last two axes; leading (batch) axes must match, or
/// one operand is 2-D and is applied to every batch.
template <operand A, operand B, bool TA = false, bool TB = false>
decltype(auto) matmul(const A& a, const B& b, transpose_flags<TA, TB> = {}) {
    return make_node<op::matmul<TA, TB>>(a, b);
}

/// matmul: dA = g B^T, dB = A^T g (with the transpose flags folded in); a 2-D
/// operand of a batched product gets the sum over the batch.
template <bool TA, bool TB>
struct gradient<op::matmul<TA, TB>> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        const auto& a = n.template child<0>();
        const auto& b = n.template child<1>();
        if constexpr (I == 0) {
            if constexpr (!TA && !TB) return matmul(g, b, transpose_b);
            else if constexpr (TA && !TB) return matmul(b, g, transpose_b);
            else if constexpr (!TA && TB) return matmul(g, b);
            else return matmul(b, g, transpose_ab);
        } else {
            if constexpr (!TA && !TB) return matmul(a, g, transpose_a);
            else if constexpr (TA && !TB) return matmul(a, g);
            else if constexpr (!TA && TB) return matmul(g, a, transpose_a);
            else return matmul(g, a, transpose_ab);
        }
    }
};

}  // namespace typeflow
