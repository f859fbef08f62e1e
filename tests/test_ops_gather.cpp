// gather / embedding_lookup and indexed_slices against naive loops written
// here, on every device; their gradients against central finite differences
// in double; the sparse optimizer updates (sgd, adagrad exactly the dense
// step, momentum and adam lazy) against the update written out by hand, with
// the rows outside the batch left byte for byte and the kernels' reported row
// counts and the plan's memory showing that the table is not visited; and the
// Embedding layer.
#include <catch2/catch.hpp>

#include "grad_check.hpp"
#include "support.hpp"

#include <typeflow/models.hpp>
#include <typeflow/typeflow.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace tf = typeflow;
using namespace tftest;

namespace {

using tf::dyn;
using tf::shape;

// out[a..., j..., b...] = p[a..., ids[j...], b...], with the prefix a... the
// axes before `axis` and the suffix b... those after it, walked as flat indices.
template <class T, class I>
std::vector<double> naive_gather(const tf::tensor<T>& p, const tf::tensor<I>& ids, std::size_t axis) {
    const tf::dims pd = p.dims();
    long long before = 1, after = 1;
    for (std::size_t a = 0; a < axis; ++a) before *= pd.d[a];
    for (std::size_t a = axis + 1; a < pd.rank; ++a) after *= pd.d[a];
    std::vector<double> out;
    for (long long a = 0; a < before; ++a)
        for (long long j = 0; j < ids.size(); ++j)
            for (long long b = 0; b < after; ++b)
                out.push_back(static_cast<double>(p[(a * pd.d[axis] + static_cast<long long>(ids[j])) * after + b]));
    return out;
}
// zeros of p's extents with v's slices added at ids along axis
template <class T, class I>
std::vector<double> naive_scatter(const tf::dims& pd, const tf::tensor<T>& v, const tf::tensor<I>& ids, std::size_t axis) {
    long long before = 1, after = 1;
    for (std::size_t a = 0; a < axis; ++a) before *= pd.d[a];
    for (std::size_t a = axis + 1; a < pd.rank; ++a) after *= pd.d[a];
    std::vector<double> out(static_cast<std::size_t>(pd.numel()), 0.0);
    long long k = 0;
    for (long long a = 0; a < before; ++a)
        for (long long j = 0; j < ids.size(); ++j)
            for (long long b = 0; b < after; ++b)
                out[static_cast<std::size_t>((a * pd.d[axis] + static_cast<long long>(ids[j])) * after + b)] +=
                    static_cast<double>(v[k++]);
    return out;
}

std::vector<long long> gather_extents(const tf::dims& p, const tf::dims& i, std::size_t axis) {
    std::vector<long long> e;
    for (std::size_t a = 0; a < axis; ++a) e.push_back(p.d[a]);
    for (std::size_t a = 0; a < i.rank; ++a) e.push_back(i.d[a]);
    for (std::size_t a = axis + 1; a < p.rank; ++a) e.push_back(p.d[a]);
    return e;
}

// gather<Axis> and indexed_slices<Axis> of a params [4, 5, 3] on device D at
// indices of dtype I and static shape IS (fed with extents id), every index
// in range with repeats.
template <class D, int Axis, class I, class IS>
void check_gather(std::uint32_t seed, tf::dims id = IS::value) {
    constexpr std::size_t axis = Axis < 0 ? 3 + Axis : Axis;
    using PS = shape<4, 5, 3>;
    tf::placeholder<"p", float, PS, D> p;
    tf::placeholder<"i", I, IS, D> i;
    const auto y = tf::gather<Axis>(p, i);
    using YS = tf::shape_t<decltype(y)>;
    tf::placeholder<"v", float, YS, D> v;
    const auto z = tf::indexed_slices<Axis>(p, v, i);
    rng_t r(seed);
    const tf::tensor<float> tp = uniform_tensor<float>(r, PS::value, 0, 0, -2, 2);
    const tf::tensor<I> ti = uniform_tensor<I>(r, id, 0, PS::value.d[axis] - 1, 0, 0);
    const tf::dims yd = [&] {
        tf::dims d;
        for (long long e : gather_extents(PS::value, id, axis)) d.d[d.rank++] = e;
        return d;
    }();
    const tf::tensor<float> tv = uniform_tensor<float>(r, yd, 0, 0, -2, 2);
    tf::session s;
    auto [ty, tz] = s.run(tf::fetch(y, z), tf::feed(p, tp), tf::feed(i, ti), tf::feed(v, tv));
    const std::string what = "axis " + std::to_string(Axis) + ", indices " + tf::to_string(id) +
                             (std::is_same_v<I, std::int32_t> ? " int32" : " int64");
    expect_values("gather " + what, ty, gather_extents(PS::value, id, axis), naive_gather(tp, ti, axis));
    expect_values("indexed_slices " + what, tz, PS::value, naive_scatter(PS::value, tv, ti, axis), 1e-6, 1e-6);
}

// the message of the tf::error that f throws ("" when it throws none)
template <class F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const tf::error& e) {
        return e.what();
    }
    return "";
}

template <class T>
bool same_bytes(const T* a, const T* b, long long n) {
    return std::memcmp(a, b, static_cast<std::size_t>(n) * sizeof(T)) == 0;
}

}  // namespace

// ---------------------------------------------------------------------------
// gather: shapes, values, errors
// ---------------------------------------------------------------------------

TEST_CASE("gather: result shapes follow tf.gather", "[ops][gather]") {
    tf::placeholder<"p", float, shape<7, 5, 3>> p;
    tf::placeholder<"i", std::int32_t, shape<dyn, 2>> i;
    tf::placeholder<"j", std::int64_t, shape<>> j;
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::gather(p, i))>, shape<dyn, 2, 5, 3>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::gather<1>(p, i))>, shape<7, dyn, 2, 3>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::gather<2>(p, i))>, shape<7, 5, dyn, 2>>);
    STATIC_REQUIRE(std::is_same_v<decltype(tf::gather<-1>(p, i)), decltype(tf::gather<2>(p, i))>);  // normalised
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::gather(p, j))>, shape<5, 3>>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::gather<1>(p, j))>, shape<7, 3>>);
    STATIC_REQUIRE(std::is_same_v<decltype(tf::embedding_lookup(p, i)), decltype(tf::gather<0>(p, i))>);
    STATIC_REQUIRE(std::is_same_v<tf::value_type_t<decltype(tf::gather(p, i))>, float>);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(tf::indexed_slices(p, tf::gather(p, i), i))>, shape<7, 5, 3>>);
}

TEMPLATE_TEST_CASE("gather: a worked example on each axis", "[ops][gather]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"p", double, shape<3, 4>, D> p;
    tf::placeholder<"i", std::int32_t, shape<2, 2>, D> i;
    tf::tensor<double> tp({3, 4});
    for (tf::index_t k = 0; k < 12; ++k) tp[k] = double(k);  // p[r][c] = 4 r + c
    tf::tensor<std::int32_t> ti({2, 2}, {2, 0, 1, 1});
    tf::session s;
    auto [rows, cols] = s.run(tf::fetch(tf::gather(p, i), tf::gather<1>(p, i)), tf::feed(p, tp), tf::feed(i, ti));
    expect_values("rows", rows, tf::dims{2, 2, 4}, {8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 4, 5, 6, 7});
    expect_values("columns", cols, tf::dims{3, 2, 2}, {2, 0, 1, 1, 6, 4, 5, 5, 10, 8, 9, 9});
}

TEMPLATE_TEST_CASE("gather: every axis, indices of rank 0 to 2, int32 and int64, against naive loops", "[ops][gather]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    check_gather<D, 0, std::int32_t, shape<>>(1);
    check_gather<D, 0, std::int32_t, shape<9>>(2);
    check_gather<D, 0, std::int64_t, shape<3, 4>>(3);
    check_gather<D, 0, std::int64_t, shape<dyn, 3>>(4, tf::dims{5, 3});
    check_gather<D, 1, std::int64_t, shape<>>(5);
    check_gather<D, 1, std::int32_t, shape<8>>(6);
    check_gather<D, 1, std::int32_t, shape<2, 6>>(7);
    check_gather<D, 2, std::int64_t, shape<>>(8);
    check_gather<D, 2, std::int64_t, shape<7>>(9);
    check_gather<D, -1, std::int32_t, shape<3, 3>>(10);
}

TEST_CASE("gather: large gathers and scatters split over threads equal one thread's", "[ops][gather]") {
    tf::placeholder<"p", float, shape<3000, 40>> p;
    tf::placeholder<"i", std::int32_t, shape<dyn>> i;
    tf::placeholder<"q", float, shape<6, 500, 30>> q;
    rng_t r(11);
    const auto tp = uniform_tensor<float>(r, tf::dims{3000, 40}, 0, 0, -1, 1);
    const auto ti = uniform_tensor<std::int32_t>(r, tf::dims{5000}, 0, 2999, 0, 0);
    const auto tq = uniform_tensor<float>(r, tf::dims{6, 500, 30}, 0, 0, -1, 1);
    const auto tj = uniform_tensor<std::int32_t>(r, tf::dims{800}, 0, 499, 0, 0);
    tf::placeholder<"j", std::int32_t, shape<800>> j;
    const auto y = tf::gather(p, i);
    const auto z = tf::gather<1>(q, j);
    const auto back = tf::indexed_slices<1>(q, z, j);  // the scatter, split over the outer axis
    tf::session s(tf::session_options{.threads = 4});
    REQUIRE(s.threads() == 4);
    auto [ty, tz, tb] = s.run(tf::fetch(y, z, back), tf::feed(p, tp), tf::feed(i, ti), tf::feed(q, tq), tf::feed(j, tj));
    expect_values("gather axis 0, 4 threads", ty, tf::dims{5000, 40}, naive_gather(tp, ti, 0));
    expect_values("gather axis 1, 4 threads", tz, tf::dims{6, 800, 30}, naive_gather(tq, tj, 1));
    expect_values("indexed_slices axis 1, 4 threads", tb, tf::dims{6, 500, 30},
                  naive_scatter(tf::dims{6, 500, 30}, tz, tj, 1), 1e-6, 1e-6);
}

TEMPLATE_TEST_CASE("gather: an index out of range is a tf::error naming the op, the index and the extent", "[ops][gather]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    tf::placeholder<"p", float, shape<5, 2>, D> p;
    tf::placeholder<"i", std::int32_t, shape<dyn>, D> i;
    tf::placeholder<"j", std::int64_t, shape<3>, D> j;
    const tf::tensor<float> tp({5, 2});
    tf::session s;
    CHECK(error_of([&] { s.run(tf::gather(p, i), tf::feed(p, tp), tf::feed(i, tf::tensor<std::int32_t>({3}, {0, -1, 2}))); }) ==
          "typeflow: gather: indices[1] = -1 is not in [0, 5)");
    CHECK(error_of([&] { s.run(tf::gather(p, i), tf::feed(p, tp), tf::feed(i, tf::tensor<std::int32_t>({2}, {4, 5}))); }) ==
          "typeflow: gather: indices[1] = 5 is not in [0, 5)");
    CHECK(error_of([&] { s.run(tf::gather<1>(p, j), tf::feed(p, tp), tf::feed(j, tf::tensor<std::int64_t>({3}, {1, 0, 2}))); }) ==
          "typeflow: gather: indices[2] = 2 is not in [0, 2)");
    CHECK(error_of([&] { s.run(tf::gather(p, i), tf::feed(p, tp), tf::feed(i, tf::tensor<std::int32_t>({3}, {4, 0, 3}))); }).empty());
    tf::placeholder<"v", float, shape<3, 2>, D> v;
    CHECK(error_of([&] {
              s.run(tf::indexed_slices(p, v, j), tf::feed(p, tp), tf::feed(v, tf::tensor<float>({3, 2})),
                    tf::feed(j, tf::tensor<std::int64_t>({3}, {0, 7, 1})));
          }) == "typeflow: indexed_slices: indices[1] = 7 is not in [0, 5)");
    // values whose dyn extent does not fit the indices'
    tf::placeholder<"w", float, shape<dyn, 2>, D> w;
    CHECK(error_of([&] {
              s.run(tf::indexed_slices(p, w, i), tf::feed(p, tp), tf::feed(w, tf::tensor<float>({2, 2})),
                    tf::feed(i, tf::tensor<std::int32_t>({3}, {0, 1, 2})));
          }).find("indexed_slices: values [2,2] do not fit params [5,2] and indices [3]") != std::string::npos);
}

// ---------------------------------------------------------------------------
// The sparse gradient
// ---------------------------------------------------------------------------

TEST_CASE("gather: the gradient of params is an indexed_slices, sparse for a table used twice", "[ops][gather][grad]") {
    tf::variable<"T", double, shape<6, 3>> t;
    tf::variable<"ids", std::int32_t, shape<2, 3>> ids;
    tf::variable<"ids2", std::int64_t, shape<4>> ids2;
    const auto a = tf::gather(t, ids);
    const auto b = tf::embedding_lookup(t, ids2);
    using T = decltype(t);
    using once = decltype(tf::grad(tf::sum(tf::square(a)), t));
    using twice = decltype(tf::grad(tf::sum(tf::square(a)) + tf::sum(b), t));
    using mixed = decltype(tf::grad(tf::sum(tf::square(a)) + tf::sum(tf::square(t)), t));
    using axis1 = decltype(tf::grad(tf::sum(tf::gather<1>(t, ids)), t));
    STATIC_REQUIRE(tf::is_indexed_slices_of<once, T>::value);
    STATIC_REQUIRE(tf::meta::children_t<once>::size == 3);  // params, values, indices
    STATIC_REQUIRE(tf::is_indexed_slices_of<twice, T>::value);
    STATIC_REQUIRE(tf::meta::children_t<twice>::size == 5);  // the two (values, indices) pairs
    STATIC_REQUIRE(!tf::is_indexed_slices_of<mixed, T>::value);  // dense: the indexed_slices is densified and added
    STATIC_REQUIRE(!tf::is_indexed_slices_of<axis1, T>::value);  // dense along axis 1
    STATIC_REQUIRE(!tf::is_indexed_slices_of<once, decltype(ids)>::value);
}

TEMPLATE_TEST_CASE("gather: gradients against central finite differences", "[ops][gather][grad]", tf::cpu, tf::reference) {
    using D = TestType;
    rng_t r(21);
    tf::variable<"T", double, shape<6, 3>, D> t;
    tf::variable<"C", double, shape<2, 3, 3>, D> c;
    tf::variable<"V", double, shape<6, 3>, D> vals;
    tf::variable<"ids", std::int32_t, shape<2, 3>, D> ids;     // repeats row 4
    tf::variable<"ids2", std::int64_t, shape<4>, D> ids2;      // repeats row 1, shares row 4
    tf::variable<"cols", std::int32_t, shape<2, 2>, D> cols;   // repeats column 2
    t.load(uniform_tensor<double>(r, tf::dims{6, 3}, 0, 0, -1, 1));
    c.load(uniform_tensor<double>(r, tf::dims{2, 3, 3}, 0, 0, -1, 1));
    vals.load(uniform_tensor<double>(r, tf::dims{6, 3}, 0, 0, -1, 1));
    ids.load(tf::tensor<std::int32_t>({2, 3}, {4, 0, 4, 2, 4, 5}));
    ids2.load(tf::tensor<std::int64_t>({4}, {1, 4, 1, 3}));
    cols.load(tf::tensor<std::int32_t>({2, 2}, {2, 0, 2, 2}));
    const auto g = tf::gather(t, ids);
    TFTEST_CHECK_GRAD("repeated rows", tf::sum(tf::square(g) * c), t);
    TFTEST_CHECK_GRAD("a table used twice", tf::sum(tf::square(g) * c) + tf::sum(tf::exp(tf::embedding_lookup(t, ids2))), t);
    TFTEST_CHECK_GRAD("gather and a dense use", tf::sum(tf::square(g) * c) + tf::sum(tf::sin(t)), t);
    TFTEST_CHECK_GRAD("along axis 1", tf::sum(tf::square(tf::gather<1>(t, cols))), t);
    TFTEST_CHECK_GRAD("a scalar index", tf::sum(tf::exp(tf::gather(t, tf::gather(ids2, tf::literal<std::int32_t, 1, 1, D>{})))), t);
    // the gradient of the densify op itself (linear in its values), and of a gather of a product
    TFTEST_CHECK_GRAD("indexed_slices", tf::sum(tf::square(tf::indexed_slices(vals, g, ids)) * vals), t);
    TFTEST_CHECK_GRAD("indexed_slices along axis 1", tf::sum(tf::square(tf::indexed_slices<1>(t, tf::gather<1>(t, cols), cols)) * vals), t);
    TFTEST_CHECK_GRAD("params an expression", tf::sum(tf::square(tf::gather(t * t, ids2))), t);
    // second order: the gradient of <grad_T loss, T> flows through indexed_slices back into gather
    const auto loss = tf::sum(tf::square(g) * c);
    TFTEST_CHECK_GRAD("second order", tf::sum(tf::grad(loss, t) * t), t);
}

TEMPLATE_TEST_CASE("gather: a fetched sparse gradient is its dense value", "[ops][gather][grad]", tf::cpu, tf::reference) {
    using D = TestType;
    tf::variable<"T", float, shape<5, 2>, D> t;
    tf::placeholder<"ids", std::int32_t, shape<dyn>, D> ids;
    const auto gt = tf::grad(tf::sum(tf::embedding_lookup(t, ids)) + tf::sum(tf::embedding_lookup(t, ids) * 2.0f), t);
    tf::session s;
    const auto got = s.run(gt, tf::feed(ids, tf::tensor<std::int32_t>({4}, {3, 0, 3, 3})));
    expect_values("dense gradient", got, tf::dims{5, 2}, {3, 3, 0, 0, 0, 0, 9, 9, 0, 0});
}

// ---------------------------------------------------------------------------
// Sparse optimizer updates
// ---------------------------------------------------------------------------

namespace {
// loss = sum((T[ids] - C)^2) + sum(T[ids2] * C2): per occurrence the
// gradient row is 2 (T[r] - C[j]) or C2[j]; the dense gradient is their sum per row.
constexpr long long rows = 10, width = 4;
const std::vector<std::int32_t> ids_a = {3, 1, 3, 7, 3, 0};
const std::vector<std::int32_t> ids_b = {8, 1, 1, 9, 2, 2};
const std::vector<std::int64_t> ids2_a = {7, 5};

std::vector<double> table0() {
    std::vector<double> t(rows * width);
    for (long long k = 0; k < rows * width; ++k) t[static_cast<std::size_t>(k)] = 0.1 * double(k % 7) - 0.25;
    return t;
}
std::vector<double> c_values(long long n, double scale) {
    std::vector<double> c(static_cast<std::size_t>(n));
    for (long long k = 0; k < n; ++k) c[static_cast<std::size_t>(k)] = scale * std::sin(double(k) + 1);
    return c;
}

// The dense gradient by hand, and whether each row is present.
struct dense_grad {
    std::vector<double> g;
    std::vector<bool> present;
};
dense_grad by_hand(const std::vector<double>& t, const std::vector<std::int32_t>& ids, const std::vector<double>& c,
                   const std::vector<std::int64_t>* ids2 = nullptr, const std::vector<double>* c2 = nullptr) {
    dense_grad d{std::vector<double>(t.size(), 0.0), std::vector<bool>(rows, false)};
    for (std::size_t j = 0; j < ids.size(); ++j) {
        d.present[static_cast<std::size_t>(ids[j])] = true;
        for (long long w = 0; w < width; ++w) {
            const std::size_t at = static_cast<std::size_t>(ids[j] * width + w);
            d.g[at] += 2 * (t[at] - c[j * width + static_cast<std::size_t>(w)]);
        }
    }
    if (ids2)
        for (std::size_t j = 0; j < ids2->size(); ++j) {
            d.present[static_cast<std::size_t>((*ids2)[j])] = true;
            for (long long w = 0; w < width; ++w)
                d.g[static_cast<std::size_t>((*ids2)[j] * width + w)] += (*c2)[j * width + static_cast<std::size_t>(w)];
        }
    return d;
}

// Compares the table with the expected values: rows outside the batch byte for byte.
void expect_table(const std::string& what, const tf::tensor<double>& got, const std::vector<double>& want,
                  const std::vector<double>& before, const std::vector<bool>& present) {
    INFO(what);
    for (long long r = 0; r < rows; ++r) {
        INFO("row " << r);
        if (!present[static_cast<std::size_t>(r)]) {
            CHECK(same_bytes(got.data() + r * width, before.data() + r * width, width));
        } else {
            for (long long w = 0; w < width; ++w)
                CHECK(got[r * width + w] == Approx(want[static_cast<std::size_t>(r * width + w)]).epsilon(1e-12).margin(1e-15));
        }
    }
}

// The problem on device D: a table, ids [2, 3] (int32), constants C [2, 3, width].
template <class D>
struct problem {
    tf::variable<"T", double, shape<rows, width>, D> t;
    tf::variable<"ids", std::int32_t, shape<2, 3>, D> ids;
    tf::non_trainable_variable<"C", double, shape<2, 3, width>, D> c{tf::init::zeros{}};
    std::vector<double> cv = c_values(2 * 3 * width, 0.5);
    problem() {
        t.load(tf::view(table0(), {rows, width}));
        ids.load(tf::view(ids_a, {2, 3}));
        c.load(tf::view(cv, {2, 3, width}));
    }
    auto loss() const { return tf::sum(tf::square(tf::gather(t, ids) - c)); }
    std::vector<double> table() const { return std::vector<double>(t.value().data(), t.value().data() + rows * width); }
};
}  // namespace

TEMPLATE_TEST_CASE("sparse sgd: the dense step, touching only the rows in the batch", "[ops][gather][train]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    problem<D> p;
    tf::variable<"ids2", std::int64_t, shape<2>, D> ids2;
    tf::non_trainable_variable<"C2", double, shape<2, width>, D> c2;
    const std::vector<double> c2v = c_values(2 * width, 0.7);
    ids2.load(tf::view(ids2_a, {2}));
    c2.load(tf::view(c2v, {2, width}));
    const auto loss = p.loss() + tf::sum(tf::embedding_lookup(p.t, ids2) * c2);  // the table used twice
    const auto step = tf::train::sgd(0.1).minimize(loss);
    using G = decltype(tf::grad(loss, p.t));
    STATIC_REQUIRE(tf::is_indexed_slices_of<G, decltype(p.t)>::value);
    const auto update = step.template child<0>();  // the sparse_apply node: its value is the rows it updated
    STATIC_REQUIRE(std::is_same_v<tf::value_type_t<decltype(update)>, std::int64_t>);
    tf::session s;
    for (int k = 0; k < 3; ++k) {
        const std::vector<double> before = p.table();
        const dense_grad d = by_hand(before, ids_a, p.cv, &ids2_a, &c2v);
        std::vector<double> want = before;
        for (std::size_t i = 0; i < want.size(); ++i) want[i] -= 0.1 * d.g[i];
        const auto touched = s.run(update);
        CHECK(touched[0] == 5);  // rows 0, 1, 3, 5, 7 of 10
        expect_table("sgd step " + std::to_string(k), p.t.value(), want, before, d.present);
    }
}

TEMPLATE_TEST_CASE("sparse adagrad: the dense step, and the dense optimizer's result", "[ops][gather][train]", tf::cpu,
                   tf::reference) {
    using D = TestType;
    problem<D> p;
    const auto step = tf::train::adagrad(0.3).minimize(p.loss());
    // a copy of the table updated by the dense path (the gradient times one is not an indexed_slices)
    tf::variable<"U", double, shape<rows, width>, D> u;
    u.load(tf::view(table0(), {rows, width}));
    const auto lu = tf::sum(tf::square(tf::gather(u, p.ids) - p.c));
    const auto gu = tf::grad(lu, u) * tf::literal<double, 1, 1, D>{};
    using GU = std::remove_cvref_t<decltype(gu)>;
    STATIC_REQUIRE(!tf::is_indexed_slices_of<GU, decltype(u)>::value);
    const auto dense_step = tf::train::adagrad(0.3).apply_gradients(
        tf::train::grads_and_vars<tf::train::grad_and_var<GU, decltype(u)>>(tf::train::grad_and_var<GU, decltype(u)>{gu, u}));
    tf::session s;
    std::vector<double> acc(rows * width, 0.1);
    for (int k = 0; k < 3; ++k) {
        if (k == 2) p.ids.load(tf::view(ids_b, {2, 3}));  // another batch
        const std::vector<double> before = p.table();
        const dense_grad d = by_hand(before, k == 2 ? ids_b : ids_a, p.cv);
        std::vector<double> want = before;
        for (std::size_t i = 0; i < want.size(); ++i) {
            acc[i] += d.g[i] * d.g[i];
            want[i] -= 0.3 * d.g[i] / std::sqrt(acc[i]);
        }
        s.run(step);
        s.run(dense_step);
        expect_table("adagrad step " + std::to_string(k), p.t.value(), want, before, d.present);
        for (long long i = 0; i < rows * width; ++i) CHECK(p.t.value()[i] == Approx(u.value()[i]).epsilon(1e-13));
    }
}

TEMPLATE_TEST_CASE("sparse momentum and adam are lazy: rows outside the batch keep their slots", "[ops][gather][train]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    for (bool nesterov : {false, true}) {
        problem<D> p;
        const auto step = tf::train::momentum(0.1, {.momentum = 0.8, .nesterov = nesterov}).minimize(p.loss());
        tf::session s;
        std::vector<double> a(rows * width, 0.0);
        for (int k = 0; k < 3; ++k) {
            const auto& ids = k == 1 ? ids_b : ids_a;
            p.ids.load(tf::view(ids, {2, 3}));
            const std::vector<double> before = p.table();
            const dense_grad d = by_hand(before, ids, p.cv);
            std::vector<double> want = before;
            for (std::size_t i = 0; i < want.size(); ++i) {
                if (!d.present[i / width]) continue;  // lazy: neither a nor the row moves
                a[i] = 0.8 * a[i] + d.g[i];
                want[i] -= nesterov ? 0.1 * (0.8 * a[i] + d.g[i]) : 0.1 * a[i];
            }
            s.run(step);
            expect_table(std::string(nesterov ? "nesterov" : "momentum") + " step " + std::to_string(k), p.t.value(), want,
                         before, d.present);
        }
    }
    for (double wd : {0.0, 0.01}) {
        problem<D> p;
        const auto step = tf::train::adamw(0.05, wd, {.beta1 = 0.8, .beta2 = 0.95}).minimize(p.loss());
        tf::session s;
        std::vector<double> m(rows * width, 0.0), v(rows * width, 0.0);
        for (int k = 1; k <= 3; ++k) {
            const auto& ids = k == 2 ? ids_b : ids_a;
            p.ids.load(tf::view(ids, {2, 3}));
            const std::vector<double> before = p.table();
            const dense_grad d = by_hand(before, ids, p.cv);
            std::vector<double> want = before;
            for (std::size_t i = 0; i < want.size(); ++i) {
                if (!d.present[i / width]) continue;  // LazyAdam: m, v and the row stay
                m[i] = 0.8 * m[i] + 0.2 * d.g[i];
                v[i] = 0.95 * v[i] + 0.05 * d.g[i] * d.g[i];
                const double mh = m[i] / (1 - std::pow(0.8, k)), vh = v[i] / (1 - std::pow(0.95, k));
                want[i] -= 0.05 * (mh / (std::sqrt(vh) + 1e-8) + wd * before[i]);
            }
            s.run(step);
            expect_table("lazy adam step " + std::to_string(k), p.t.value(), want, before, d.present);
        }
    }
}

TEMPLATE_TEST_CASE("sparse gradients: rmsprop and a table also used densely take the dense value", "[ops][gather][train]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    {
        problem<D> p;
        const auto step = tf::train::rmsprop(0.01, {.rho = 0.9}).minimize(p.loss());
        tf::session s;
        const std::vector<double> before = p.table();
        const dense_grad d = by_hand(before, ids_a, p.cv);
        std::vector<double> want = before;
        for (std::size_t i = 0; i < want.size(); ++i) {
            const double ms = 0.9 * 1.0 + 0.1 * d.g[i] * d.g[i];
            want[i] -= 0.01 * d.g[i] / std::sqrt(ms + 1e-10);
        }
        s.run(step);
        expect_table("rmsprop", p.t.value(), want, before, std::vector<bool>(rows, true));
    }
    {
        problem<D> p;
        const auto loss = p.loss() + tf::sum(tf::square(p.t));  // the second use is dense
        const auto step = tf::train::sgd(0.1).minimize(loss);
        tf::session s;
        const std::vector<double> before = p.table();
        const dense_grad d = by_hand(before, ids_a, p.cv);
        std::vector<double> want = before;
        for (std::size_t i = 0; i < want.size(); ++i) want[i] -= 0.1 * (d.g[i] + 2 * before[i]);
        s.run(step);
        expect_table("sgd, sparse + dense", p.t.value(), want, before, std::vector<bool>(rows, true));
    }
}

TEST_CASE("sparse updates do work proportional to the batch, not to the table", "[ops][gather][train]") {
    // a table of 200000 x 8 doubles (12.8 MB): the sparse step makes no buffer
    // of the table's size (the plan's intermediate memory says so), reports the
    // rows it updated, and leaves every other byte alone; the same step written
    // densely needs buffers of the table's size, so the measure can fail
    constexpr long long big = 200000, w = 8;
    tf::variable<"E", double, shape<big, w>> e{tf::init::uniform{-1, 1}};
    tf::placeholder<"ids", std::int32_t, shape<dyn>> ids;
    tf::placeholder<"y", double, shape<dyn, w>> y;
    const auto loss = tf::sum(tf::square(tf::embedding_lookup(e, ids) - y));
    const tf::tensor<std::int32_t> tids({5}, {123456, 7, 199999, 7, 0});
    rng_t r(5);
    const auto ty = uniform_tensor<double>(r, tf::dims{5, w}, 0, 0, -1, 1);
    const std::size_t table_bytes = big * w * sizeof(double);
    for (int which = 0; which < 3; ++which) {
        const std::vector<double> before(e.value().data(), e.value().data() + big * w);
        tf::session s(tf::session_options{.threads = 2});
        std::int64_t touched = 0;
        if (which == 0) {
            const auto step = tf::train::adagrad(0.1).minimize(loss);
            touched = std::get<0>(s.run(tf::fetch(step.template child<0>()), tf::feed(ids, tids), tf::feed(y, ty)))[0];
        } else if (which == 1) {
            const auto step = tf::train::adam(0.1).minimize(loss);
            touched = std::get<0>(
                s.run(tf::fetch(step.template child<0>().template child<1>()), tf::feed(ids, tids), tf::feed(y, ty)))[0];
        } else {
            const auto step = tf::train::sgd(0.1).minimize(loss);
            touched = std::get<0>(s.run(tf::fetch(step.template child<0>()), tf::feed(ids, tids), tf::feed(y, ty)))[0];
        }
        INFO("optimizer " << which << ": arena " << s.stats().arena_bytes << " bytes");
        CHECK(touched == 4);
        CHECK(s.stats().arena_bytes < table_bytes / 100);
        long long changed_rows = 0;
        for (long long row = 0; row < big; ++row)
            changed_rows += !same_bytes(e.value().data() + row * w, before.data() + row * w, w);
        CHECK(changed_rows == 4);
        for (long long row : {0LL, 7LL, 123456LL, 199999LL})
            CHECK(!same_bytes(e.value().data() + row * w, before.data() + row * w, w));
    }
    // the control: the dense step of the same loss plans buffers of the table's size
    const auto dense_grad_e = tf::grad(loss, e) * tf::literal<double, 1>{};
    const auto dense_step = tf::assign_sub(e, dense_grad_e * 0.1);
    tf::session s;
    s.run(dense_step, tf::feed(ids, tids), tf::feed(y, ty));
    CHECK(s.stats().arena_bytes >= table_bytes);
}

TEST_CASE("sparse sgd split over threads equals the update by hand", "[ops][gather][train]") {
    constexpr long long n = 5000, w = 32;
    tf::variable<"E", float, shape<n, w>> e{tf::init::uniform{-1, 1}};
    tf::placeholder<"ids", std::int32_t, shape<dyn>> ids;
    tf::placeholder<"c", float, shape<dyn, w>> c;
    const auto step = tf::train::sgd(0.5f).minimize(tf::sum(tf::embedding_lookup(e, ids) * c));
    rng_t r(8);
    const auto tids = uniform_tensor<std::int32_t>(r, tf::dims{6000}, 0, n - 1, 0, 0);
    const auto tc = uniform_tensor<float>(r, tf::dims{6000, w}, 0, 0, -1, 1);
    std::vector<float> want(e.value().data(), e.value().data() + n * w);
    std::vector<double> g(static_cast<std::size_t>(n * w), 0.0);
    std::vector<bool> present(static_cast<std::size_t>(n), false);
    for (long long j = 0; j < 6000; ++j) {
        present[static_cast<std::size_t>(tids[j])] = true;
        for (long long k = 0; k < w; ++k) g[static_cast<std::size_t>(tids[j] * w + k)] += tc[j * w + k];
    }
    long long distinct = 0;
    for (bool b : present) distinct += b;
    tf::session s(tf::session_options{.threads = 4});
    const auto touched = std::get<0>(s.run(tf::fetch(step.template child<0>()), tf::feed(ids, tids), tf::feed(c, tc)));
    CHECK(touched[0] == distinct);
    long long bad = 0;
    for (long long i = 0; i < n * w; ++i) {
        const double expect = double(want[static_cast<std::size_t>(i)]) - 0.5 * g[static_cast<std::size_t>(i)];
        bad += !(std::abs(double(e.value()[i]) - expect) <= 1e-5 * (1 + std::abs(expect)));
    }
    CHECK(bad == 0);
}

TEMPLATE_TEST_CASE("sparse updates: an index out of range throws before any row is written", "[ops][gather][train]",
                   tf::cpu, tf::reference) {
    using D = TestType;
    problem<D> p;
    const auto step = tf::train::adagrad(0.1).minimize(p.loss());
    p.ids.load(tf::tensor<std::int32_t>({2, 3}, {1, 2, 3, 4, 10, 5}));
    const std::vector<double> before = p.table();
    tf::session s;
    CHECK(error_of([&] { s.run(step); }) == "typeflow: gather: indices[4] = 10 is not in [0, 10)");
    CHECK(same_bytes(p.t.value().data(), before.data(), rows * width));
}

// ---------------------------------------------------------------------------
// The Embedding layer
// ---------------------------------------------------------------------------

TEST_CASE("layers::embedding: variable, shapes and parameters as Keras", "[layers][gather]") {
    using spec = tf::layers::embedding<50, 8>;
    using B = spec::bind<"emb", tf::dims{dyn, 4}, std::int32_t, tf::cpu>;
    STATIC_REQUIRE(B::params == 400);
    STATIC_REQUIRE(B::trainable_params == 400);
    STATIC_REQUIRE(B::output == tf::dims{dyn, 4, 8});
    STATIC_REQUIRE(spec::kind.view() == "embedding");
    STATIC_REQUIRE(spec::class_name == "Embedding");
    STATIC_REQUIRE(spec::accepts(tf::dims{dyn}) && spec::accepts(tf::dims{dyn, 3, 2}));
    STATIC_REQUIRE(std::is_same_v<decltype(B::embeddings), tf::variable<"emb/embeddings", float, shape<50, 8>>>);
    STATIC_REQUIRE(std::is_same_v<B::weight_type, float>);
    STATIC_REQUIRE(std::is_same_v<spec::bind<"e", tf::dims{dyn, 4}, double, tf::cpu>::weight_type, double>);
    B b;
    int vars = 0;
    b.for_each_variable([&](const auto& v) {
        ++vars;
        CHECK(v.name() == "emb/embeddings");
    });
    CHECK(vars == 1);
    const auto& t = b.embeddings.value();
    double lo = 1, hi = -1;
    for (tf::index_t i = 0; i < t.size(); ++i) lo = std::min<double>(lo, t[i]), hi = std::max<double>(hi, t[i]);
    CHECK(lo >= -0.05);
    CHECK(hi < 0.05);
    CHECK(hi - lo > 0.05);  // spread over the interval, not constant

    tf::layers::layer<"emb", spec> emb;
    tf::placeholder<"ids", std::int32_t, shape<dyn, 4>> ids;
    const auto y = emb(ids, tf::inference);
    STATIC_REQUIRE(std::is_same_v<tf::shape_t<decltype(y)>, shape<dyn, 4, 8>>);
    STATIC_REQUIRE(std::is_same_v<tf::value_type_t<decltype(y)>, float>);
    tf::session s;
    const auto got = s.run(y, tf::feed(ids, tf::tensor<std::int32_t>({1, 4}, {0, 49, 0, 3})));
    REQUIRE(got.dims() == tf::dims{1, 4, 8});
    using trainable = tf::train::trainable_variables_t<decltype(tf::sum(y))>;
    STATIC_REQUIRE(trainable::size == 1);
    STATIC_REQUIRE(std::is_same_v<trainable, tf::meta::list<decltype(B::embeddings)>>);
    CHECK(error_of([&] { s.run(y, tf::feed(ids, tf::tensor<std::int32_t>({1, 4}, {0, 50, 0, 3}))); }) ==
          "typeflow: gather: indices[1] = 50 is not in [0, 50)");
}

TEST_CASE("layers::embedding: a small model with an embedding trains", "[layers][gather][train]") {
    // each sequence of 4 ids in [0, 20) is labelled by whether its first id is below 10
    tf::layers::layer<"emb", tf::layers::embedding<20, 8>> emb;
    tf::layers::layer<"out", tf::layers::dense<2>> out;
    tf::placeholder<"ids", std::int32_t, shape<dyn, 4>> ids;
    tf::placeholder<"y", std::int32_t, shape<dyn>> y;
    const auto logits = out(tf::reshape<-1, 32>(emb(ids, tf::training)), tf::training);
    const auto loss = tf::mean(tf::sparse_softmax_cross_entropy(logits, y));
    using vars = tf::train::trainable_variables_t<decltype(loss)>;
    STATIC_REQUIRE(vars::size == 3);  // the table, the kernel and the bias
    const auto step = tf::train::adam(0.05f).minimize(loss);
    rng_t r(3);
    const auto tids = uniform_tensor<std::int32_t>(r, tf::dims{64, 4}, 0, 19, 0, 0);
    tf::tensor<std::int32_t> ty({64});
    for (tf::index_t i = 0; i < 64; ++i) ty[i] = tids[i * 4] < 10 ? 1 : 0;
    tf::session s;
    const float first = s.run(loss, tf::feed(ids, tids), tf::feed(y, ty))[0];
    for (int k = 0; k < 60; ++k) s.run(step, tf::feed(ids, tids), tf::feed(y, ty));
    const float last = s.run(loss, tf::feed(ids, tids), tf::feed(y, ty))[0];
    INFO("loss " << first << " -> " << last);
    CHECK(first > 0.6f);
    CHECK(last < 0.05f);
}
