// The tensor API and the loss and classification ops, as docs/tensor.md shows
// them: the lines between the markers are checked to appear verbatim there
// (test docs.tensor_in_sync). The program checks every value it prints and
// exits non-zero on a mismatch.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

// readme-begin
#include <typeflow/typeflow.hpp>
namespace tf = typeflow;

static int failures = 0;
static void expect(bool ok, const char* what) {
    if (!ok) ++failures, std::printf("MISMATCH: %s\n", what);
}
static bool near(double a, double b) { return std::abs(a - b) < 1e-5; }

int main() {
    // ---- Tensors: owning, row-major, shared storage --------------------------------------
    tf::tensor<float> a({2, 3}, {1, 2, 3, 4, 5, 6});  // extents, then the elements row-major
    tf::tensor<float> z({2, 3});                       // zero-filled
    expect(a(1, 2) == 6 && a[4] == 5, "a(1, 2) is the flat element 5");
    expect(a.dims() == tf::dims{2, 3} && a.size() == 6 && a.rank() == 2, "extents, size, rank");
    tf::tensor<float> b = a;       // a copy shares the elements (like a TensorFlow or PyTorch tensor)
    tf::tensor<float> c = a.clone();  // clone() copies them
    b(0, 0) = 10;
    expect(a(0, 0) == 10 && c(0, 0) == 1, "copies share, clones do not");
    const tf::tensor<float> r = a.reshaped({3, 2});  // same elements, new extents
    expect(r(2, 1) == 6 && z.to_vector() == std::vector<float>(6, 0.f), "reshaped, to_vector");

    // ---- Feeds: tensors, views of std::vector (no copy), whole vectors ------------------
    tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;      // any number of rows, 3 columns
    tf::placeholder<"v", float, tf::shape<3>> v;               // static shape: a vector feeds it
    std::vector<float> rows = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    tf::session s;
    const auto [rs, dot] = s.run(tf::fetch(tf::sum<1>(x), tf::sum(x * v)),
                                 tf::feed(x, tf::view(rows, tf::dims{3, 3})),  // [3, 3], no copy
                                 tf::feed(v, std::vector<float>{1, 0, -1}));
    expect(rs.dims() == tf::dims{3} && rs[2] == 24, "sum<1> of the rows");
    expect(dot.rank() == 0 && dot.item() == -6, "a scalar result: rank 0, read with item()");

    // ---- Reductions: axes, keepdims, arg-reductions (int64) -----------------------------
    tf::variable<"m", float, tf::shape<2, 3>> m{tf::init::constant{0.0}};
    s.run(tf::assign(m, tf::constant<tf::shape<2, 3>>({3.f, 1.f, 2.f, -1.f, 5.f, 0.f})));
    const auto [col, kept, arg] =
        s.run(tf::fetch(tf::max<0>(m), tf::mean<1>(m, tf::keepdims), tf::argmax<1>(m)));
    expect(col.to_vector() == std::vector<float>{3, 5, 2}, "max over axis 0");
    expect(kept.dims() == tf::dims{2, 1} && near(kept(1, 0), 4.0 / 3), "keepdims keeps extent 1");
    static_assert(std::is_same_v<decltype(arg), const tf::tensor<std::int64_t>>);  // argmax is int64
    expect(arg[0] == 0 && arg[1] == 1, "argmax per row");

    // ---- matmul and its transpose flags --------------------------------------------------
    tf::variable<"w", float, tf::shape<2, 3>> w{tf::init::constant{1.0}};
    const auto [p, pt] = s.run(tf::fetch(tf::matmul(m, w, tf::transpose_b),    // m w^T: [2, 2]
                                         tf::matmul(m, w, tf::transpose_a)));  // m^T w: [3, 3]
    expect(p.dims() == tf::dims{2, 2} && p(0, 0) == 6 && p(1, 1) == 4, "matmul(m, w, transpose_b)");
    expect(pt.dims() == tf::dims{3, 3} && pt(1, 0) == 6, "matmul(m, w, transpose_a)");

    // ---- Classification and losses --------------------------------------------------------
    tf::placeholder<"logits", float, tf::shape<tf::dyn, 3>> logits;
    tf::placeholder<"labels", std::int32_t, tf::shape<tf::dyn>> labels;  // class indices
    tf::placeholder<"target", float, tf::shape<tf::dyn, 3>> target;      // probabilities or 0/1
    const tf::tensor<float> zs({2, 3}, {2, 1, 0, 0, 0, 0});
    const tf::tensor<std::int32_t> ys({2}, {0, 2});
    const tf::tensor<float> ts({2, 3}, {1, 0, 0, 0, 0, 1});
    const auto [sm, lsm, oh, ce, sce, bce, mse] =
        s.run(tf::fetch(tf::softmax(logits), tf::log_softmax(logits), tf::one_hot<3>(labels),
                        tf::softmax_cross_entropy(logits, target),       // per example: [2]
                        tf::sparse_softmax_cross_entropy(logits, labels),  // the same from indices
                        tf::sigmoid_cross_entropy(logits, target),       // per element: [2, 3]
                        tf::mean_squared_error(tf::softmax(logits), target)),  // a scalar
              tf::feed(logits, zs), tf::feed(labels, ys), tf::feed(target, ts));
    const double e = std::exp(1.0), z0 = e * e + e + 1;  // softmax of (2, 1, 0)
    expect(near(sm(0, 0), e * e / z0) && near(sm(1, 2), 1.0 / 3), "softmax along the last axis");
    expect(near(lsm(0, 2), -std::log(z0)), "log_softmax");
    expect(oh.to_vector() == std::vector<float>{1, 0, 0, 0, 0, 1}, "one_hot<3>");
    expect(near(ce[0], std::log(z0) - 2) && near(ce[1], std::log(3.0)), "softmax_cross_entropy");
    expect(near(sce[0], ce[0]) && near(sce[1], ce[1]), "sparse_softmax_cross_entropy");
    expect(bce.dims() == tf::dims{2, 3} && near(bce(0, 0), std::log1p(std::exp(-2.0))), "sigmoid_cross_entropy");
    expect(mse.rank() == 0 && mse.item() > 0, "mean_squared_error");

    // ---- Initialisers and devices ----------------------------------------------------------
    tf::variable<"k", double, tf::shape<4, 4>> k{tf::init::glorot_uniform{}};  // U(-l, l), l = sqrt(6/8)
    tf::variable<"ref", float, tf::shape<2>, tf::reference> on_ref{tf::init::ones{}};  // the naive-loop device
    const auto [kv, rv] = s.run(tf::fetch(k, on_ref * 2.0f));
    bool in_range = true;
    for (double x : kv.to_vector()) in_range = in_range && std::abs(x) <= std::sqrt(6.0 / 8);
    expect(in_range && rv.to_vector() == std::vector<float>{2, 2}, "glorot_uniform's range; the reference device");

    std::printf("tensor API: %s\n", failures ? "MISMATCH" : "all values as expected");
    return failures ? 1 : 0;
}
// readme-end
