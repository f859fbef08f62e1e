// benchmarks/compile/mlp_eigen.cpp — compile-time subject (see
// ../compile_time.sh): the model of mlp_typeflow.cpp written by hand in
// Eigen (row-major matrices, preallocated outputs, Glorot-uniform weights).
// A complete program: builds the model, runs it a few times and prints a
// checksum of the logits.
#include <cmath>
#include <cstdio>
#include <random>

#include <Eigen/Core>

using mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using rowvec = Eigen::Matrix<float, 1, Eigen::Dynamic>;

static mat glorot(long rows, long cols, std::mt19937_64& rng) {
    const float l = std::sqrt(6.0f / static_cast<float>(rows + cols));
    std::uniform_real_distribution<float> u(-l, l);
    mat m(rows, cols);
    for (long i = 0; i < m.size(); ++i) m.data()[i] = u(rng);
    return m;
}

int main() {
    constexpr long batch = 256;
    std::mt19937_64 wrng(1);
    const mat W1 = glorot(784, 256, wrng), W2 = glorot(256, 128, wrng), W3 = glorot(128, 10, wrng);
    const rowvec b1 = rowvec::Zero(256), b2 = rowvec::Zero(128), b3 = rowvec::Zero(10);

    mat X(batch, 784);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> u(0.f, 1.f);
    for (long i = 0; i < X.size(); ++i) X.data()[i] = u(rng);

    mat H1(batch, 256), H2(batch, 128), L(batch, 10);
    double sum = 0;
    for (int it = 0; it < 5; ++it) {
        H1.noalias() = X * W1;
        H1 = (H1.rowwise() + b1).cwiseMax(0.f);
        H2.noalias() = H1 * W2;
        H2 = (H2.rowwise() + b2).cwiseMax(0.f);
        L.noalias() = H2 * W3;
        L.rowwise() += b3;
        sum += static_cast<double>(L.sum());
    }
    std::printf("checksum %.6f\n", sum);
    return 0;
}
