// A new op end to end (docs/ops.md shows this file between its markers):
// row_norm(x) = sqrt(sum_j x[i, j]^2) for each row i of a matrix x, with its
// shape rule, gradient rule, a CPU kernel and a reference kernel. It checks
// itself: both devices against a naive loop, and the gradient against
// central finite differences in double precision. Exits 1 on a mismatch.
#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdio>

namespace tf = typeflow;

// readme-begin
namespace my {
// 1. The op tag: kind, name, and its shape and dtype rule (with a readable
//    first error line when misused).
struct row_norm {
    static constexpr tf::op_kind kind = tf::op_kind::kernel;
    static constexpr std::string_view name = "row_norm";
    template <class A>
    static constexpr auto rule() {
        tf::check::floating<row_norm, tf::value_type_t<A>>();
        constexpr bool ok = tf::shape_t<A>::rank == 2;
        if constexpr (!ok) {
            tf::diagnostic::rank_too_small<row_norm, tf::shape_t<A>> error;
        }
        static_assert(ok, "row_norm: the input must be a matrix");
        using S = tf::shape<tf::shape_t<A>::value.d[0]>;
        return tf::result_traits<tf::value_type_t<A>, S, tf::device_t<A>>{};
    }
    template <class A>
    using traits = decltype(rule<A>());
    // run-time extents of the result from the input's
    static tf::dims infer(const tf::dims& a) { return tf::dims{a.d[0]}; }
};

// 2. The function users call.
template <tf::expression A>
auto row_norm_of(const A& a) {
    return tf::make_node<row_norm>(a);
}
}  // namespace my

namespace typeflow {
// 3. The gradient rule: d|x_i| / dx_ij = x_ij / |x_i|, times the row's adjoint.
template <>
struct gradient<my::row_norm> {
    template <std::size_t I, class N, class G>
    static auto vjp(const N& n, const G& g) {
        return n.template child<0>() * expand_dims<1>(g / n);
    }
};

// 4. A kernel per device: the CPU's with Eigen, the reference one a naive loop.
template <>
struct kernel<cpu, my::row_norm> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        using T = value_type_t<N>;
        const dims d = ctx.dims_of(n.template child<0>());
        using rows = Eigen::Array<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
        Eigen::Map<const rows> x(ctx.input(n.template child<0>()), d.d[0], d.d[1]);
        Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>(out, d.d[0]) = x.square().rowwise().sum().sqrt();
    }
};
template <>
struct kernel<reference, my::row_norm> {
    template <class N, class Ctx>
    static void run(const N& n, const Ctx& ctx, value_type_t<N>* out) {
        const dims d = ctx.dims_of(n.template child<0>());
        const auto* x = ctx.input(n.template child<0>());
        for (index_t i = 0; i < d.d[0]; ++i) {
            value_type_t<N> s = 0;
            for (index_t j = 0; j < d.d[1]; ++j) s += x[i * d.d[1] + j] * x[i * d.d[1] + j];
            out[i] = std::sqrt(s);
        }
    }
};
}  // namespace typeflow
// readme-end

namespace {
int failures = 0;
void expect_near(double got, double want, double tol, const char* what) {
    if (!(std::abs(got - want) <= tol * std::max(1.0, std::abs(want)))) {
        std::printf("MISMATCH %s: got %.12g, want %.12g\n", what, got, want);
        ++failures;
    }
}

// 5. Tests: the op on a device against a naive loop, and its gradient
//    against central finite differences.
template <class D>
void check_on() {
    tf::variable<"x", double, tf::shape<3, 4>, D> x{tf::init::uniform{-2.0, 2.0, 7}};
    auto y = my::row_norm_of(x);
    auto cost = tf::sum(y * y * y);  // a cost whose gradient is not trivially x
    auto dx = tf::grad(cost, x);
    tf::session s;
    auto [yv, gv] = s.run(tf::fetch(y, dx));
    auto& xv = x.value();
    for (tf::index_t i = 0; i < 3; ++i) {
        double n = 0;
        for (tf::index_t j = 0; j < 4; ++j) n += xv[i * 4 + j] * xv[i * 4 + j];
        expect_near(yv[i], std::sqrt(n), 1e-12, "row_norm value");
    }
    for (tf::index_t k = 0; k < xv.size(); ++k) {
        const double x0 = xv[k], h = 1e-6 * std::max(1.0, std::abs(x0));
        xv[k] = x0 + h;
        const double up = s.run(cost).item();
        xv[k] = x0 - h;
        const double down = s.run(cost).item();
        xv[k] = x0;
        expect_near(gv[k], (up - down) / (2 * h), 1e-7, "row_norm gradient");
    }
    std::printf("row_norm on %s: values and gradient match\n", D::name().c_str());
}
}  // namespace

int main() {
    check_on<tf::cpu>();
    check_on<tf::reference>();
    return failures == 0 ? 0 : 1;
}
