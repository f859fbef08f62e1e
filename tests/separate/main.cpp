// tests/separate/main.cpp — typeflow built with TYPEFLOW_SEPARATE_COMPILATION:
// two translation units run sessions over the runtime compiled once in
// src.cpp. Checks results against a naive loop and that a bad feed still
// raises tf::error from the out-of-line code. Exits non-zero on any failure.
#include <cmath>
#include <cstdio>
#include <string>

#include <typeflow/typeflow.hpp>

namespace tf = typeflow;

tf::tensor<float> relu_layer(const tf::tensor<float>& xb);

int main() {
#if !defined(TYPEFLOW_SEPARATE_COMPILATION)
    std::puts("FAIL: built without TYPEFLOW_SEPARATE_COMPILATION");
    return 1;
#endif
    int failures = 0;
    tf::tensor<float> xb({4, 3});
    for (long i = 0; i < xb.size(); ++i) xb[i] = 0.25f * static_cast<float>(i) - 1.0f;

    // relu(x W + b) with W = 0.5 everywhere and b = -1: naive reference
    const tf::tensor<float> out = relu_layer(xb);
    for (long r = 0; r < 4; ++r)
        for (long c = 0; c < 2; ++c) {
            float acc = -1.0f;
            for (long k = 0; k < 3; ++k) acc += 0.5f * xb[r * 3 + k];
            const float want = acc > 0 ? acc : 0.0f;
            if (std::abs(out[r * 2 + c] - want) > 1e-6f) {
                std::printf("FAIL: out[%ld,%ld] = %g, want %g\n", r, c, out[r * 2 + c], want);
                ++failures;
            }
        }

    // this translation unit's own session: x * x + 1 over the same feed
    tf::placeholder<"x", float, tf::shape<tf::dyn, 3>> x;
    tf::session s;
    const tf::tensor<float> sq = s.run(x * x + 1.0f, tf::feed(x, xb));
    for (long i = 0; i < xb.size(); ++i)
        if (sq[i] != xb[i] * xb[i] + 1.0f) {
            std::printf("FAIL: sq[%ld] = %g\n", i, sq[i]);
            ++failures;
        }

    // a wrong feed shape is a tf::error naming the placeholder and both shapes
    tf::tensor<float> bad({4, 5});
    try {
        (void)s.run(x * x, tf::feed(x, bad));
        std::puts("FAIL: a [4,5] feed for a [?,3] placeholder did not throw");
        ++failures;
    } catch (const tf::error& e) {
        const std::string m = e.what();
        if (m.find("'x'") == std::string::npos || m.find("[?,3]") == std::string::npos ||
            m.find("[4,5]") == std::string::npos) {
            std::printf("FAIL: unexpected message: %s\n", m.c_str());
            ++failures;
        }
    }
    if (failures == 0) std::puts("separate compilation: OK");
    return failures == 0 ? 0 : 1;
}
