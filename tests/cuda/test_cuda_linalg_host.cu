// The CUDA backend's linear algebra, tested without a GPU: the determinant
// the GPU computes from cuBLAS's factors (cuda::linalg::det_of, a
// host-and-device function) against the CPU backend's matrix_determinant and
// log_determinant, with the factors made here as cuBLAS documents them (LU
// with partial pivoting of the column-major matrix, 1-based interchanges),
// and the singular-matrix report against the CPU's error.
#include <catch2/catch.hpp>

#include "../support.hpp"

#include <typeflow/typeflow.hpp>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace {
// getrf of the column-major n x n matrix a (in place) and its interchanges.
std::vector<int> lu_in_place(std::vector<double>& a, tf::index_t n) {
    std::vector<int> piv(static_cast<std::size_t>(n));
    const auto at = [&](tf::index_t i, tf::index_t j) -> double& { return a[static_cast<std::size_t>(j * n + i)]; };
    for (tf::index_t j = 0; j < n; ++j) {
        tf::index_t p = j;
        for (tf::index_t i = j + 1; i < n; ++i)
            if (std::abs(at(i, j)) > std::abs(at(p, j))) p = i;
        piv[static_cast<std::size_t>(j)] = static_cast<int>(p) + 1;
        if (p != j)
            for (tf::index_t k = 0; k < n; ++k) std::swap(at(j, k), at(p, k));
        if (at(j, j) == 0.0) continue;
        for (tf::index_t i = j + 1; i < n; ++i) at(i, j) /= at(j, j);
        for (tf::index_t i = j + 1; i < n; ++i)
            for (tf::index_t k = j + 1; k < n; ++k) at(i, k) -= at(i, j) * at(j, k);
    }
    return piv;
}

std::pair<double, double> cpu_dets(const std::vector<double>& a, tf::index_t n) {
    tf::placeholder<"a", double, tf::shape<tf::dyn, tf::dyn>> x;
    tf::session s;
    auto [d, l] = s.run(tf::fetch(tf::matrix_determinant(x), tf::log_determinant(x)), tf::feed(x, tf::view(a, tf::dims{n, n})));
    return {d[0], l[0]};
}
}  // namespace

TEST_CASE("cuda linalg: the determinant from the factors matches the cpu", "[host]") {
    rng_t r(53);
    for (tf::index_t n : {1, 2, 4, 7}) {
        INFO(n << " x " << n);
        const auto t = uniform_tensor<double>(r, tf::dims{n, n}, 0, 0, -1, 1);
        const std::vector<double> a = t.to_vector();
        std::vector<double> lu = a;  // row-major A is column-major A^T, whose determinant is A's
        const std::vector<int> piv = lu_in_place(lu, n);
        const auto [det, logdet] = cpu_dets(a, n);
        CHECK(tf::cuda::linalg::det_of<false>(lu.data(), piv.data(), n) == Approx(det).epsilon(1e-12));
        CHECK(tf::cuda::linalg::det_of<true>(lu.data(), piv.data(), n) == Approx(logdet).epsilon(1e-12));
    }
    // rows that need interchanges (a zero leading element) and a singular matrix
    const std::vector<double> swapped{0, 2, 1, 3, 0, 1, 1, 1, 5};
    std::vector<double> lu = swapped;
    auto piv = lu_in_place(lu, 3);
    CHECK(tf::cuda::linalg::det_of<false>(lu.data(), piv.data(), 3) == Approx(cpu_dets(swapped, 3).first).epsilon(1e-12));
    const std::vector<double> singular{1, 2, 3, 2, 4, 6, 1, 0, 1};
    lu = singular;
    piv = lu_in_place(lu, 3);
    CHECK(tf::cuda::linalg::det_of<false>(lu.data(), piv.data(), 3) == 0.0);
    CHECK(std::isinf(tf::cuda::linalg::det_of<true>(lu.data(), piv.data(), 3)));
    CHECK(std::isinf(cpu_dets(singular, 3).second));
}

TEST_CASE("cuda linalg: a singular matrix's report is the cpu's error", "[host]") {
    const std::vector<double> singular{1, 2, 2, 4};
    std::string cpu_error, gpu_error;
    try {
        tf::placeholder<"a", double, tf::shape<2, 2>> x;
        tf::session s;
        s.run(tf::matrix_inverse(x), tf::feed(x, tf::view(singular, tf::dims{2, 2})));
    } catch (const tf::error& e) {
        cpu_error = e.what();
    }
    tf::cuda::error_word w;
    w.code = tf::cuda::error_singular;
    w.a = 2;
    constexpr std::string_view name = tf::op::matrix_inverse::name;
    w.what = name.data();
    w.what_len = static_cast<long long>(name.size());
    try {
        tf::cuda::raise_error(w, 0);
    } catch (const tf::error& e) {
        gpu_error = e.what();
    }
    CHECK(cpu_error.find("singular") != std::string::npos);
    CHECK(gpu_error == cpu_error);
}
