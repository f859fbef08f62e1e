// The 8x8 digits of tests/data/digits.csv (see tests/data/README.md) as
// batches for the model tests: pixels / 16 ([n, 8, 8, 1] float), labels
// int32. Every fifth row (0, 5, 10, ...; 360 rows) is the test split, the
// others (1437) the training split.
#pragma once
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <typeflow/core/tensor.hpp>

namespace tftest {

using digits_batch = std::pair<typeflow::tensor<float>, typeflow::tensor<std::int32_t>>;

/// The split in batches of `size`; `limit` keeps the first batches only.
inline std::vector<digits_batch> digits(bool test_split, int size, std::size_t limit = 1000) {
    std::ifstream f(TYPEFLOW_TEST_DATA_DIR "/digits.csv");
    REQUIRE(f.good());
    std::vector<std::vector<int>> rows;
    std::string line;
    int index = 0;
    while (std::getline(f, line)) {
        std::vector<int> r;
        std::stringstream ss(line);
        std::string cell;
        while (std::getline(ss, cell, ',')) r.push_back(std::stoi(cell));
        REQUIRE(r.size() == 65);
        if ((index++ % 5 == 0) == test_split) rows.push_back(r);
    }
    REQUIRE(index == 1797);
    std::vector<digits_batch> out;
    const int total = static_cast<int>(rows.size());
    for (int b = 0; b < total && out.size() < limit; b += size) {
        const int n = std::min(size, total - b);
        typeflow::tensor<float> x({n, 8, 8, 1});
        typeflow::tensor<std::int32_t> y({n});
        for (int i = 0; i < n; ++i) {
            for (int p = 0; p < 64; ++p) x[i * 64 + p] = static_cast<float>(rows[b + i][p]) / 16.0f;
            y[i] = rows[b + i][64];
        }
        out.emplace_back(std::move(x), std::move(y));
    }
    return out;
}

}  // namespace tftest
