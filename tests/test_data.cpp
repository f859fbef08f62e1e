// tf::data input pipelines: sources (tensors, range, IDX, CSV, the
// Fashion-MNIST files when installed), every transformation and its
// cardinality, shuffle's permutation and reproducibility, cache, prefetch's
// overlap, errors and shutdown, storage reuse, every kind of corrupt IDX and
// CSV input, and a training loop that feeds batches to placeholders.
#include <catch2/catch.hpp>

#include <typeflow/data.hpp>
#include <typeflow/typeflow.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

namespace tf = typeflow;
namespace data = typeflow::data;

namespace {

using i32 = std::int32_t;
using i64 = std::int64_t;

// A fresh directory under the system's temporary directory, removed with
// everything in it when the object goes.
struct temp_dir {
    std::filesystem::path path;
    temp_dir() {
        static std::atomic<int> n{0};
        path = std::filesystem::temp_directory_path() /
               ("typeflow_test_data_" + std::to_string(::getpid()) + "_" + std::to_string(n++));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~temp_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string file(const std::string& name) const { return (path / name).string(); }
};

void write_bytes(const std::string& path, const std::vector<unsigned char>& b) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    REQUIRE(f.good());
}
void write_text(const std::string& path, const std::string& s) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f << s;
    REQUIRE(f.good());
}

// An IDX header: magic (0, 0, code, rank) and big-endian extents.
std::vector<unsigned char> idx_header_bytes(unsigned code, std::vector<std::uint32_t> ext) {
    std::vector<unsigned char> b = {0, 0, static_cast<unsigned char>(code), static_cast<unsigned char>(ext.size())};
    for (std::uint32_t e : ext)
        for (int k = 3; k >= 0; --k) b.push_back(static_cast<unsigned char>(e >> (8 * k)));
    return b;
}

// Runs f, which must throw tf::error; returns the message.
template <class F>
std::string error_of(F f) {
    try {
        f();
    } catch (const tf::error& e) {
        return e.what();
    }
    FAIL("expected a tf::error");
    return {};
}

// The int64 scalars of a one-component dataset, in order (one pass).
std::vector<i64> values(const data::dataset<i64>& ds) {
    std::vector<i64> v;
    for (auto& [x] : ds) v.push_back(x.item());
    return v;
}

std::vector<i64> iota(i64 n) {
    std::vector<i64> v(static_cast<std::size_t>(n));
    std::iota(v.begin(), v.end(), i64{0});
    return v;
}

// A dataset of n (image [2,3] float, label [] int32) elements: image i
// holds 6i .. 6i+5, label i is i.
data::dataset<float, i32> small_images(int n) {
    tf::tensor<float> x(tf::dims{n, 2, 3});
    tf::tensor<i32> y(tf::dims{n});
    for (int i = 0; i < 6 * n; ++i) x[i] = static_cast<float>(i);
    for (int i = 0; i < n; ++i) y[i] = i;
    return data::from_tensors(x, y);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// ---------------------------------------------------------------------------
// Sources and iteration
// ---------------------------------------------------------------------------

TEST_CASE("data: from_tensors slices along the first axis, every loop is a new pass", "[data]") {
    auto ds = small_images(5);
    static_assert(std::is_same_v<decltype(ds)::element_type, std::tuple<tf::tensor<float>, tf::tensor<i32>>>);
    static_assert(std::input_iterator<decltype(ds)::iterator>);
    CHECK(ds.cardinality() == 5);
    for (int pass = 0; pass < 2; ++pass) {
        int i = 0;
        for (auto& [x, y] : ds) {
            REQUIRE(x.dims() == tf::dims{2, 3});
            REQUIRE(y.dims() == tf::dims{});
            CHECK(y.item() == i);
            for (int k = 0; k < 6; ++k) CHECK(x[k] == static_cast<float>(6 * i + k));
            ++i;
        }
        CHECK(i == 5);
    }
    // one component; a rank-1 tensor gives scalars
    CHECK(values(data::from_tensors(tf::tensor<i64>(tf::dims{3}, {7, 8, 9}))) == std::vector<i64>{7, 8, 9});
    // an empty dataset
    data::dataset<float> none;
    CHECK(none.cardinality() == 0);
    CHECK(none.begin() == none.end());
    CHECK(none.batch(4).repeat(3).cardinality() == 0);
}

TEST_CASE("data: from_tensors rejects tensors without a common first axis", "[data]") {
    const std::string m = error_of([] { data::from_tensors(tf::tensor<float>(tf::dims{4, 2}), tf::tensor<i32>(tf::dims{3})); });
    CHECK_THAT(m, Catch::Contains("component 1") && Catch::Contains("[3]") && Catch::Contains("4"));
    CHECK_THAT(error_of([] { data::from_tensors(tf::tensor<float>(tf::dims{})); }), Catch::Contains("scalar"));
}

TEST_CASE("data: range counts like Python's range", "[data]") {
    CHECK(values(data::range(4)) == std::vector<i64>{0, 1, 2, 3});
    CHECK(values(data::range(2, 11, 3)) == std::vector<i64>{2, 5, 8});
    CHECK(values(data::range(5, 0, -2)) == std::vector<i64>{5, 3, 1});
    CHECK(data::range(2, 11, 3).cardinality() == 3);
    CHECK(data::range(5, 0, -2).cardinality() == 3);
    CHECK(data::range(3, 3).cardinality() == 0);
    CHECK(values(data::range(3, 3)).empty());
}

// ---------------------------------------------------------------------------
// map and filter
// ---------------------------------------------------------------------------

TEST_CASE("data: map takes the element or its components and may change the element type", "[data]") {
    auto ds = small_images(4);
    // components in, a tuple of other types out
    auto m1 = ds.map([](const tf::tensor<float>& x, const tf::tensor<i32>& y) {
        tf::tensor<double> s(tf::dims{});
        for (tf::index_t i = 0; i < x.size(); ++i) s[0] += x[i];
        tf::tensor<i64> y2(tf::dims{});
        y2[0] = 2 * y.item();
        return std::make_tuple(s, y2);
    });
    static_assert(std::is_same_v<decltype(m1), data::dataset<double, i64>>);
    int i = 0;
    for (auto& [s, y2] : m1) {
        CHECK(s.item() == Approx(36.0 * i + 15.0));
        CHECK(y2.item() == 2 * i);
        ++i;
    }
    CHECK(i == 4);
    CHECK(m1.cardinality() == 4);
    // the whole element in, one tensor out: a one-component dataset
    auto m2 = ds.map([](const std::tuple<tf::tensor<float>, tf::tensor<i32>>& e) { return std::get<1>(e); });
    static_assert(std::is_same_v<decltype(m2), data::dataset<i32>>);
    std::vector<i32> labels;
    for (auto& [y] : m2) labels.push_back(y.item());
    CHECK(labels == std::vector<i32>{0, 1, 2, 3});
}

TEST_CASE("data: filter keeps the elements its predicate accepts, cardinality becomes unknown", "[data]") {
    auto even = data::range(10).filter([](const tf::tensor<i64>& x) { return x.item() % 2 == 0; });
    CHECK(values(even) == std::vector<i64>{0, 2, 4, 6, 8});
    CHECK(even.cardinality() == data::unknown_cardinality);
    CHECK(even.repeat(2).cardinality() == data::unknown_cardinality);
    CHECK(even.batch(2).cardinality() == data::unknown_cardinality);
    CHECK(even.take(3).cardinality() == data::unknown_cardinality);
}

// ---------------------------------------------------------------------------
// shuffle
// ---------------------------------------------------------------------------

TEST_CASE("data: shuffle is a permutation, reproducible for a seed, new every epoch", "[data][shuffle]") {
    const i64 n = 100;
    for (i64 buffer : {i64{2}, i64{7}, i64{50}, i64{1000}}) {
        INFO("buffer " << buffer);
        auto ds = data::range(n).shuffle(buffer, 42);
        CHECK(ds.cardinality() == n);
        const std::vector<i64> e1 = values(ds), e2 = values(ds);
        std::vector<i64> sorted = e1;
        std::sort(sorted.begin(), sorted.end());
        CHECK(sorted == iota(n));
        sorted = e2;
        std::sort(sorted.begin(), sorted.end());
        CHECK(sorted == iota(n));
        CHECK(e1 != iota(n));
        CHECK(e1 != e2);  // reshuffled each epoch
        // the same seed in a new dataset: the same sequence of epochs
        auto again = data::range(n).shuffle(buffer, 42);
        CHECK(values(again) == e1);
        CHECK(values(again) == e2);
        // another seed: another order
        CHECK(values(data::range(n).shuffle(buffer, 43)) != e1);
        // buffered semantics: the element at position k comes from the first k + buffer inputs
        for (std::size_t k = 0; k < e1.size(); ++k) CHECK(e1[k] < static_cast<i64>(k) + buffer);
    }
    // reshuffle_each_iteration = false: one order for every epoch
    auto fixed = data::range(n).shuffle(n, 7, false);
    CHECK(values(fixed) == values(fixed));
    // a buffer of one changes nothing
    CHECK(values(data::range(n).shuffle(1, 5)) == iota(n));
    // no seed: still a permutation
    std::vector<i64> r = values(data::range(n).shuffle(n));
    std::sort(r.begin(), r.end());
    CHECK(r == iota(n));
    CHECK_THAT(error_of([] { data::range(3).shuffle(0, 1); }), Catch::Contains("buffer_size"));
}

TEST_CASE("data: shuffle with a full buffer draws the first element uniformly", "[data][shuffle]") {
    // 4000 seeds over 8 elements: each first element about 500 times.
    std::vector<int> count(8, 0);
    for (std::uint64_t seed = 0; seed < 4000; ++seed)
        for (auto& [x] : data::range(8).shuffle(8, seed).take(1)) ++count[static_cast<std::size_t>(x.item())];
    for (int c : count) {
        CHECK(c > 400);
        CHECK(c < 600);
    }
}

TEST_CASE("data: shuffle of whole elements keeps components together", "[data][shuffle]") {
    std::set<i32> seen;
    for (auto& [x, y] : small_images(30).shuffle(10, 3)) {
        const i32 i = y.item();
        seen.insert(i);
        CHECK(x[0] == static_cast<float>(6 * i));
        CHECK(x[5] == static_cast<float>(6 * i + 5));
    }
    CHECK(seen.size() == 30);
    // batches drawn through the shuffle (the direct copy into the batch) too
    seen.clear();
    for (auto& [x, y] : small_images(30).shuffle(10, 3).batch(4)) {
        for (tf::index_t r = 0; r < y.size(); ++r) {
            seen.insert(y[r]);
            CHECK(x(r, 1, 2) == static_cast<float>(6 * y[r] + 5));
        }
    }
    CHECK(seen.size() == 30);
}

TEST_CASE("data: shuffle of stored elements (by index) gives the order of shuffle through a buffer", "[data][shuffle]") {
    // from_tensors and a filled cache are shuffled by index; after a map the
    // elements go through the buffer. The draws, hence the orders, are one.
    auto labels_of = [](const data::dataset<float, i32>& ds) {
        std::vector<i32> v;
        for (auto& [x, y] : ds) {
            CHECK(x[0] == static_cast<float>(6 * y.item()));
            v.push_back(y.item());
        }
        return v;
    };
    auto identity = [](const tf::tensor<float>& x, const tf::tensor<i32>& y) { return std::make_tuple(x, y); };
    for (i64 buffer : {i64{1}, i64{16}, i64{64}}) {
        INFO("buffer " << buffer);
        auto by_index = small_images(50).shuffle(buffer, 5);
        auto by_element = small_images(50).map(identity).shuffle(buffer, 5);
        auto cached = small_images(50).map(identity).cache().shuffle(buffer, 5);  // elements, then indices
        for (int epoch = 0; epoch < 3; ++epoch) {
            const std::vector<i32> a = labels_of(by_index);
            CHECK(labels_of(by_element) == a);
            CHECK(labels_of(cached) == a);
            CHECK(a.size() == 50);
        }
    }
}

// ---------------------------------------------------------------------------
// batch, repeat, take, skip, cardinality
// ---------------------------------------------------------------------------

TEST_CASE("data: batch stacks elements, the last batch is partial unless dropped", "[data][batch]") {
    auto ds = small_images(10);
    for (bool drop : {false, true}) {
        INFO("drop_remainder " << drop);
        auto b = ds.batch(4, drop);
        CHECK(b.cardinality() == (drop ? 2 : 3));
        std::vector<tf::index_t> sizes;
        i32 next = 0;
        for (auto& [x, y] : b) {
            sizes.push_back(y.dims()[0]);
            REQUIRE(x.dims() == tf::dims{y.dims()[0], 2, 3});
            for (tf::index_t r = 0; r < y.dims()[0]; ++r) {
                CHECK(y[r] == next);
                for (int k = 0; k < 6; ++k) CHECK(x(r, k / 3, k % 3) == static_cast<float>(6 * next + k));
                ++next;
            }
        }
        CHECK(sizes == (drop ? std::vector<tf::index_t>{4, 4} : std::vector<tf::index_t>{4, 4, 2}));
    }
    // batches of scalars are vectors; a batch larger than the data is one partial batch
    for (auto& [v] : data::range(3).batch(8)) CHECK(v.to_vector() == std::vector<i64>{0, 1, 2});
    CHECK(data::range(3).batch(8, true).cardinality() == 0);
    CHECK(data::range(3).batch(8, true).begin() == data::range(3).batch(8, true).end());
    // batches of batches
    int outer = 0;
    for (auto& [v] : data::range(12).batch(3).batch(2)) {
        REQUIRE(v.dims() == tf::dims{2, 3});
        CHECK(v(1, 2) == 6 * outer + 5);
        ++outer;
    }
    CHECK(outer == 2);
    // the progress-bar arithmetic of the usual MNIST pipeline
    auto mnist_like = data::from_tensors(tf::tensor<i32>(tf::dims{60000}));
    CHECK(mnist_like.batch(64).cardinality() == 938);
    CHECK(mnist_like.batch(64, true).cardinality() == 937);
    CHECK_THAT(error_of([] { data::range(3).batch(0); }), Catch::Contains("batch size"));
}

TEST_CASE("data: batch of elements of different shapes is an error naming the shapes", "[data][batch]") {
    auto ragged = data::range(4).map([](const tf::tensor<i64>& i) { return tf::tensor<float>(tf::dims{1 + i.item() % 2}); });
    CHECK_THAT(error_of([&] {
                   for (auto& e : ragged.batch(2)) (void)e;
               }),
               Catch::Contains("batch") && Catch::Contains("[2]") && Catch::Contains("[1]"));
}

TEST_CASE("data: repeat, take, skip and their cardinalities", "[data]") {
    CHECK(values(data::range(3).repeat(2)) == std::vector<i64>{0, 1, 2, 0, 1, 2});
    CHECK(data::range(3).repeat(2).cardinality() == 6);
    CHECK(data::range(3).repeat(0).cardinality() == 0);
    CHECK(values(data::range(3).repeat(0)).empty());
    auto forever = data::range(3).repeat();
    CHECK(forever.cardinality() == data::infinite_cardinality);
    CHECK(forever.batch(2).cardinality() == data::infinite_cardinality);
    CHECK(forever.take(7).cardinality() == 7);
    CHECK(values(forever.take(7)) == std::vector<i64>{0, 1, 2, 0, 1, 2, 0});
    CHECK(values(forever.skip(2).take(4)) == std::vector<i64>{2, 0, 1, 2});
    // repeat(-1) of an empty dataset ends
    CHECK(values(data::range(0).repeat()).empty());
    CHECK(data::range(0).repeat().cardinality() == 0);
    CHECK(values(data::range(5).take(3)) == std::vector<i64>{0, 1, 2});
    CHECK(data::range(5).take(3).cardinality() == 3);
    CHECK(data::range(5).take(30).cardinality() == 5);
    CHECK(data::range(5).take(-1).cardinality() == 5);
    CHECK(values(data::range(5).skip(3)) == std::vector<i64>{3, 4});
    CHECK(data::range(5).skip(3).cardinality() == 2);
    CHECK(data::range(5).skip(9).cardinality() == 0);
    CHECK(data::range(5).skip(-1).cardinality() == 0);
    CHECK(values(data::range(5).skip(-1)).empty());
    // epochs of a repeated, shuffled, batched pipeline
    auto epochs = small_images(10).shuffle(10, 1).batch(4).repeat(2);
    CHECK(epochs.cardinality() == 6);
    std::multiset<i32> seen;
    int batches = 0;
    for (auto& [x, y] : epochs) {
        ++batches;
        for (tf::index_t r = 0; r < y.size(); ++r) seen.insert(y[r]);
    }
    CHECK(batches == 6);
    CHECK(seen.size() == 20);
    for (i32 i = 0; i < 10; ++i) CHECK(seen.count(i) == 2);
}

// ---------------------------------------------------------------------------
// shard
// ---------------------------------------------------------------------------

TEST_CASE("data: shard gives every element to exactly one of the tasks", "[data]") {
    for (i64 n : {i64{0}, i64{1}, i64{23}, i64{24}}) {
        for (i64 k : {i64{1}, i64{3}, i64{4}}) {
            INFO("n " << n << " shards " << k);
            std::vector<i64> all;
            tf::index_t total = 0;
            for (i64 i = 0; i < k; ++i) {
                auto part = data::range(n).shard(k, i);
                const std::vector<i64> v = values(part);
                CHECK(part.cardinality() == static_cast<tf::index_t>(v.size()));
                total += part.cardinality();
                for (std::size_t j = 0; j < v.size(); ++j) CHECK(v[j] == i + static_cast<i64>(j) * k);  // TF's order
                all.insert(all.end(), v.begin(), v.end());
            }
            std::sort(all.begin(), all.end());
            CHECK(all == iota(n));
            CHECK(total == n);
        }
    }
    // sharding whole elements before a batch
    std::set<i32> labels;
    for (i64 i = 0; i < 3; ++i)
        for (auto& [x, y] : small_images(10).shard(3, i).batch(2))
            for (tf::index_t r = 0; r < y.size(); ++r) {
                CHECK(y[r] % 3 == i);
                CHECK(x(r, 0, 0) == static_cast<float>(6 * y[r]));
                labels.insert(y[r]);
            }
    CHECK(labels.size() == 10);
    CHECK_THAT(error_of([] { data::range(3).shard(2, 2); }), Catch::Contains("index 2"));
    CHECK_THAT(error_of([] { data::range(3).shard(0, 0); }), Catch::Contains("num_shards"));
}

// ---------------------------------------------------------------------------
// cache
// ---------------------------------------------------------------------------

TEST_CASE("data: cache runs the work before it once across epochs", "[data][cache]") {
    auto calls = std::make_shared<std::atomic<int>>(0);
    auto mapped = small_images(6).map([calls](const tf::tensor<float>& x, const tf::tensor<i32>& y) {
        ++*calls;
        tf::tensor<float> x2 = x.clone();
        for (tf::index_t i = 0; i < x2.size(); ++i) x2[i] *= 2;
        return std::make_tuple(x2, y);
    });
    auto cached = mapped.cache();
    CHECK(cached.cardinality() == 6);
    // an unfinished first pass caches nothing
    for (auto& [x, y] : cached)
        if (y.item() == 1) break;
    CHECK(calls->load() == 2);
    std::vector<float> first;
    for (auto& [x, y] : cached) first.push_back(x[5]);
    CHECK(calls->load() == 8);
    for (int epoch = 0; epoch < 3; ++epoch) {
        std::vector<float> again;
        for (auto& [x, y] : cached) {
            again.push_back(x[5]);
            x[5] = -1;  // writing into an element leaves the cache as it was
        }
        CHECK(again == first);
    }
    // shuffled and batched after the cache: still no more calls
    int rows = 0;
    for (int epoch = 0; epoch < 2; ++epoch)
        for (auto& [x, y] : cached.shuffle(6, 9).batch(4))
            for (tf::index_t r = 0; r < y.size(); ++r, ++rows) CHECK(x(r, 1, 2) == 2.0f * static_cast<float>(6 * y[r] + 5));
    CHECK(rows == 12);
    CHECK(calls->load() == 8);
    // without the cache every epoch runs the map again
    for (int epoch = 0; epoch < 2; ++epoch)
        for (auto& e : mapped) (void)e;
    CHECK(calls->load() == 20);
    REQUIRE(first.size() == 6);
    for (std::size_t i = 0; i < 6; ++i) CHECK(first[i] == 2.0f * static_cast<float>(6 * i + 5));
}

// ---------------------------------------------------------------------------
// prefetch
// ---------------------------------------------------------------------------

TEST_CASE("data: prefetch overlaps the producer's work with the consumer's", "[data][prefetch]") {
    using namespace std::chrono_literals;
    const int n = 20;
    const auto work = 20ms;
    auto slow = data::range(n).map([work](const tf::tensor<i64>& x) {
        std::this_thread::sleep_for(work);
        return x;
    });
    auto consume = [&](const data::dataset<i64>& ds) {
        const auto t0 = std::chrono::steady_clock::now();
        i64 expect = 0;
        for (auto& [x] : ds) {
            CHECK(x.item() == expect++);
            std::this_thread::sleep_for(work);
        }
        CHECK(expect == n);
        return seconds_since(t0);
    };
    const double sum = 2 * n * std::chrono::duration<double>(work).count();  // 0.8 s
    // the control: without prefetch, map and step run one after the other
    const double serial = consume(slow);
    CHECK(serial >= 0.95 * sum);
    // with prefetch, about max(map, step) per element: 0.4 s plus a start
    const double overlapped = consume(slow.prefetch(2));
    INFO("serial " << serial << " s, prefetched " << overlapped << " s, sum " << sum << " s");
    CHECK(overlapped < 0.8 * sum);
}

TEST_CASE("data: an exception on the prefetch thread reaches the consumer after the elements before it", "[data][prefetch]") {
    auto failing = data::range(10)
                       .map([](const tf::tensor<i64>& x) {
                           if (x.item() == 5) throw std::runtime_error("map failed at 5");
                           return x;
                       })
                       .prefetch(3);
    for (int pass = 0; pass < 2; ++pass) {
        std::vector<i64> got;
        try {
            for (auto& [x] : failing) got.push_back(x.item());
            FAIL("expected the map's exception");
        } catch (const std::runtime_error& e) {
            CHECK(std::string(e.what()) == "map failed at 5");
        }
        CHECK(got == std::vector<i64>{0, 1, 2, 3, 4});
    }
    // a tf::error (a bad batch) on the thread is a tf::error for the consumer
    auto ragged = data::range(4)
                      .map([](const tf::tensor<i64>& i) { return tf::tensor<float>(tf::dims{1 + i.item()}); })
                      .batch(2)
                      .prefetch(1);
    CHECK_THAT(error_of([&] {
                   for (auto& e : ragged) (void)e;
               }),
               Catch::Contains("data::batch"));
}

TEST_CASE("data: leaving a prefetched pass early stops its thread", "[data][prefetch]") {
    using namespace std::chrono_literals;
    // an endless input: the producer waits for room, and the iterator's end wakes it
    for (int rep = 0; rep < 20; ++rep) {
        int k = 0;
        for (auto& [x] : data::range(5).repeat().prefetch(4)) {
            CHECK(x.item() == k % 5);
            if (++k == 7) break;
        }
        CHECK(k == 7);
    }
    // a producer inside a slow map: the end waits for that element only
    auto live = std::make_shared<std::atomic<int>>(0);
    auto slow = data::range(1000)
                    .map([live](const tf::tensor<i64>& x) {
                        ++*live;
                        std::this_thread::sleep_for(10ms);
                        --*live;
                        return x;
                    })
                    .prefetch(2);
    const auto t0 = std::chrono::steady_clock::now();
    {
        auto it = slow.begin();
        CHECK(std::get<0>(*it).item() == 0);
        ++it;
        CHECK(std::get<0>(*it).item() == 1);
    }
    CHECK(live->load() == 0);  // joined: no call of the map is running
    CHECK(seconds_since(t0) < 2.0);
    // and a pass never started costs nothing
    CHECK(slow.cardinality() == 1000);
}

// ---------------------------------------------------------------------------
// storage reuse
// ---------------------------------------------------------------------------

TEST_CASE("data: a pass reuses an element's storage unless the caller keeps the tensor", "[data]") {
    auto batches = small_images(64).batch(8);
    std::set<const float*> buffers;
    for (auto& [x, y] : batches) buffers.insert(x.data());
    CHECK(buffers.size() == 1);  // every batch written into one buffer
    // a kept tensor is neither overwritten nor reused
    std::vector<tf::tensor<float>> kept;
    for (auto& [x, y] : batches) kept.push_back(x);
    std::set<const float*> distinct;
    for (std::size_t b = 0; b < kept.size(); ++b) {
        distinct.insert(kept[b].data());
        CHECK(kept[b](0, 0, 0) == static_cast<float>(6 * 8 * b));
    }
    CHECK(distinct.size() == 8);
    // the same through shuffle and prefetch: storage cycles through a few buffers
    buffers.clear();
    for (auto& [x, y] : small_images(640).shuffle(100, 1).batch(8).prefetch(2)) buffers.insert(x.data());
    CHECK(buffers.size() <= 4);
}

// ---------------------------------------------------------------------------
// IDX files
// ---------------------------------------------------------------------------

TEST_CASE("data: IDX files of every element type read back", "[data][idx]") {
    temp_dir dir;
    // u8 [3,2,2], hand-written
    auto b = idx_header_bytes(0x08, {3, 2, 2});
    for (int i = 0; i < 12; ++i) b.push_back(static_cast<unsigned char>(250 + i % 6));
    write_bytes(dir.file("u8.idx"), b);
    auto u8 = data::read_idx<float>(dir.file("u8.idx"));
    REQUIRE(u8.dims() == tf::dims{3, 2, 2});
    for (int i = 0; i < 12; ++i) CHECK(u8[i] == static_cast<float>(250 + i % 6));
    CHECK(data::read_idx<i32>(dir.file("u8.idx"))[5] == 255);
    // i8, i16, i32: signed, big-endian
    b = idx_header_bytes(0x09, {2});
    b.insert(b.end(), {0xFF, 0x7F});
    write_bytes(dir.file("i8.idx"), b);
    CHECK(data::read_idx<i32>(dir.file("i8.idx")).to_vector() == std::vector<i32>{-1, 127});
    b = idx_header_bytes(0x0B, {2});
    b.insert(b.end(), {0xFF, 0xFE, 0x01, 0x02});
    write_bytes(dir.file("i16.idx"), b);
    CHECK(data::read_idx<i64>(dir.file("i16.idx")).to_vector() == std::vector<i64>{-2, 258});
    b = idx_header_bytes(0x0C, {1, 2});
    b.insert(b.end(), {0x80, 0, 0, 0, 0, 1, 0, 0});
    write_bytes(dir.file("i32.idx"), b);
    CHECK(data::read_idx<i32>(dir.file("i32.idx")).to_vector() == std::vector<i32>{INT32_MIN, 65536});
    // f32 1.5 = 0x3FC00000, f64 -2.25 = 0xC002000000000000
    b = idx_header_bytes(0x0D, {1});
    b.insert(b.end(), {0x3F, 0xC0, 0, 0});
    write_bytes(dir.file("f32.idx"), b);
    CHECK(data::read_idx<double>(dir.file("f32.idx")).item() == 1.5);
    b = idx_header_bytes(0x0E, {1});
    b.insert(b.end(), {0xC0, 0x02, 0, 0, 0, 0, 0, 0});
    write_bytes(dir.file("f64.idx"), b);
    CHECK(data::read_idx<float>(dir.file("f64.idx")).item() == -2.25f);
    // float data is not read as integers
    CHECK_THAT(error_of([&] { data::read_idx<i32>(dir.file("f32.idx")); }),
               Catch::Contains("f32.idx") && Catch::Contains("float"));
    // an empty axis is fine
    write_bytes(dir.file("empty.idx"), idx_header_bytes(0x08, {0, 28, 28}));
    CHECK(data::read_idx<float>(dir.file("empty.idx")).dims() == tf::dims{0, 28, 28});
}

TEST_CASE("data: write_idx and read_idx round-trip", "[data][idx]") {
    temp_dir dir;
    tf::tensor<float> f(tf::dims{2, 3}, {0.5f, -1.25f, 3e38f, -0.0f, 1e-40f, 7.0f});
    data::write_idx(dir.file("f.idx"), f);
    auto f2 = data::read_idx<float>(dir.file("f.idx"));
    REQUIRE(f2.dims() == f.dims());
    for (int i = 0; i < 6; ++i) CHECK(std::memcmp(&f[i], &f2[i], 4) == 0);
    tf::tensor<double> d(tf::dims{3}, {0.1, -1e300, 2.0});
    data::write_idx(dir.file("d.idx"), d);
    CHECK(data::read_idx<double>(dir.file("d.idx")).to_vector() == d.to_vector());
    tf::tensor<i32> n(tf::dims{2, 2}, {INT32_MIN, -1, 0, INT32_MAX});
    data::write_idx(dir.file("n.idx"), n);
    CHECK(data::read_idx<i32>(dir.file("n.idx")).to_vector() == n.to_vector());
    // images stored as bytes, labels as bytes: the MNIST layout
    tf::tensor<float> img(tf::dims{4, 2, 2});
    for (int i = 0; i < 16; ++i) img[i] = static_cast<float>(i * 17);
    data::write_idx(dir.file("img.idx"), img, data::idx_type::u8);
    const auto raw = data::read_file(dir.file("img.idx"));
    REQUIRE(raw.size() == 4 + 12 + 16);
    CHECK(raw[2] == 0x08);
    CHECK(raw[3] == 3);
    CHECK(raw[4 + 12 + 15] == 255);
    tf::tensor<i32> lab(tf::dims{4}, {3, 1, 4, 1});
    data::write_idx(dir.file("lab.idx"), lab, data::idx_type::u8);
    auto ds = data::from_idx<float, i32>(dir.file("img.idx"), dir.file("lab.idx"));
    CHECK(ds.cardinality() == 4);
    std::vector<i32> labels;
    for (auto& [x, y] : ds) {
        CHECK(x(1, 1) == static_cast<float>((labels.size() * 4 + 3) * 17));
        labels.push_back(y.item());
    }
    CHECK(labels == lab.to_vector());
    // values a type cannot hold are refused, naming the element
    tf::tensor<float> big(tf::dims{3}, {1, 300, 2});
    CHECK_THAT(error_of([&] { data::write_idx(dir.file("big.idx"), big, data::idx_type::u8); }),
               Catch::Contains("element 1") && Catch::Contains("u8"));
    tf::tensor<float> frac(tf::dims{1}, {0.5f});
    CHECK_THAT(error_of([&] { data::write_idx(dir.file("frac.idx"), frac, data::idx_type::i32); }),
               Catch::Contains("element 0"));
    // files of unequal length
    CHECK_THAT(error_of([&] { data::from_idx<float>(dir.file("img.idx"), dir.file("n.idx")); }),
               Catch::Contains("img.idx") && Catch::Contains("n.idx"));
}

TEST_CASE("data: every kind of corrupt IDX file is a tf::error naming the file and the offset", "[data][idx]") {
    temp_dir dir;
    auto check = [&](const std::string& name, const std::vector<unsigned char>& bytes, std::vector<std::string> parts) {
        const std::string path = dir.file(name);
        write_bytes(path, bytes);
        const std::string m = error_of([&] { data::read_idx<float>(path); });
        INFO(m);
        CHECK_THAT(m, Catch::StartsWith("typeflow: data::read_idx: '" + path + "'"));
        for (const auto& p : parts) CHECK_THAT(m, Catch::Contains(p));
    };
    auto good = idx_header_bytes(0x08, {2, 3});
    for (int i = 0; i < 6; ++i) good.push_back(1);
    check("empty.idx", {}, {"truncated header", "byte offset 0"});
    check("short_magic.idx", {0, 0, 8}, {"truncated header", "byte offset 3"});
    auto bad = good;
    bad[0] = 0x1A;
    check("bad_magic.idx", bad, {"bad magic number", "byte offset 0", "0x1a"});
    bad = good;
    bad[2] = 0x0A;
    check("bad_type.idx", bad, {"element type code 0x0a", "byte offset 2"});
    bad = good;
    bad[3] = 9;
    check("bad_rank.idx", bad, {"rank 9", "byte offset 3"});
    check("short_header.idx", std::vector<unsigned char>(good.begin(), good.begin() + 9),
          {"truncated header", "12 header bytes", "byte offset 9"});
    check("short_data.idx", std::vector<unsigned char>(good.begin(), good.end() - 2),
          {"truncated data", "[2,3]", "6 bytes from byte offset 12", "byte offset 16"});
    bad = good;
    bad.push_back(0);
    check("trailing.idx", bad, {"1 bytes after the data", "byte offset 18"});
    check("overflow.idx", idx_header_bytes(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}), {"overflow", "extents"});
    // fits 64 bits of elements but not of bytes
    check("overflow_bytes.idx", idx_header_bytes(0x0E, {0xFFFFFFFF, 0xFFFFFFFF}), {"overflow"});
    // huge but countable: truncated, not an allocation attempt
    check("huge.idx", idx_header_bytes(0x08, {60000, 60000, 60000}), {"truncated data"});
    CHECK_THAT(error_of([&] { data::read_idx<float>(dir.file("missing.idx")); }),
               Catch::Contains("missing.idx") && Catch::Contains("cannot open"));
}

TEST_CASE("data: gzip-compressed IDX files", "[data][idx]") {
    temp_dir dir;
    tf::tensor<i32> t(tf::dims{100, 7});
    for (int i = 0; i < 700; ++i) t[i] = i % 13;
    if constexpr (data::gzip_supported) {
        data::write_idx(dir.file("t.idx.gz"), t);
        const auto raw = data::detail::read_raw(dir.file("t.idx.gz"), "test");
        REQUIRE(raw.size() > 2);
        CHECK((raw[0] == 0x1f && raw[1] == 0x8b));
        CHECK(data::read_idx<i32>(dir.file("t.idx.gz")).to_vector() == t.to_vector());
        // a cut compressed file and a corrupt one
        write_bytes(dir.file("cut.idx.gz"), std::vector<unsigned char>(raw.begin(), raw.begin() + static_cast<long>(raw.size() / 2)));
        CHECK_THAT(error_of([&] { data::read_idx<i32>(dir.file("cut.idx.gz")); }),
                   Catch::Contains("cut.idx.gz") && Catch::Contains("truncated gzip"));
        auto corrupt = raw;
        for (std::size_t i = 12; i < corrupt.size() - 8; ++i) corrupt[i] = static_cast<unsigned char>(corrupt[i] ^ 0x5A);
        write_bytes(dir.file("corrupt.idx.gz"), corrupt);
        CHECK_THAT(error_of([&] { data::read_idx<i32>(dir.file("corrupt.idx.gz")); }),
                   Catch::Contains("corrupt.idx.gz") && Catch::Contains("gzip"));
        // a well-formed gzip of a truncated IDX: offsets are those of the decompressed data
        tf::tensor<i32> one(tf::dims{1}, {5});
        data::write_idx(dir.file("one.idx"), one);
        auto plain = data::read_file(dir.file("one.idx"));
        plain.pop_back();
        data::write_file(dir.file("short.idx.gz"), plain.data(), plain.size());
        CHECK_THAT(error_of([&] { data::read_idx<i32>(dir.file("short.idx.gz")); }),
                   Catch::Contains("short.idx.gz") && Catch::Contains("truncated data") && Catch::Contains("decompressed"));
    } else {
        write_bytes(dir.file("t.idx.gz"), {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3});
        CHECK_THAT(error_of([&] { data::read_idx<i32>(dir.file("t.idx.gz")); }),
                   Catch::Contains("t.idx.gz") && Catch::Contains("gzip"));
        WARN("gzip support not compiled in (TYPEFLOW_HAVE_ZLIB): only its absence was checked");
    }
}

// ---------------------------------------------------------------------------
// CSV files
// ---------------------------------------------------------------------------

TEST_CASE("data: CSV files with and without a header", "[data][csv]") {
    temp_dir dir;
    write_text(dir.file("iris.csv"),
               "sepal_length, sepal_width,petal_length,\"species\"\r\n"
               "5.1,3.5,1.4,0\r\n"
               "\r\n"
               "  6.2 , 2.9 ,4.3, 1 \r\n"
               "7.7,3.0,6.1,+2\n"
               "-1e-3,nan,inf,2");
    data::csv_options o;
    o.header = true;
    o.label = "species";
    auto t = data::read_csv<float>(dir.file("iris.csv"), o);
    REQUIRE(t.features.dims() == tf::dims{4, 3});
    REQUIRE(t.labels.dims() == tf::dims{4});
    CHECK(t.feature_names == std::vector<std::string>{"sepal_length", "sepal_width", "petal_length"});
    CHECK(t.labels.to_vector() == std::vector<i32>{0, 1, 2, 2});
    CHECK(t.features(1, 0) == 6.2f);
    CHECK(t.features(2, 2) == 6.1f);
    CHECK(t.features(3, 0) == -1e-3f);
    CHECK(std::isnan(t.features(3, 1)));
    CHECK(std::isinf(t.features(3, 2)));
    // chosen feature columns, by name and index, in the order given
    o.features = {"petal_length", 0};
    auto sel = data::read_csv<double, i64>(dir.file("iris.csv"), o);
    REQUIRE(sel.features.dims() == tf::dims{4, 2});
    CHECK(sel.features(2, 0) == 6.1);
    CHECK(sel.features(2, 1) == 7.7);
    // a dataset of (features, label)
    o.features.clear();
    auto ds = data::from_csv<float>(dir.file("iris.csv"), o);
    static_assert(std::is_same_v<decltype(ds), data::dataset<float, i32>>);
    CHECK(ds.cardinality() == 4);
    for (auto& [x, y] : ds.batch(4)) {
        CHECK(x.dims() == tf::dims{4, 3});
        CHECK(y.to_vector() == std::vector<i32>{0, 1, 2, 2});
    }
    // no header; the label by index; semicolons
    write_text(dir.file("plain.csv"), "1;2;3\n4;5;6\n");
    data::csv_options p;
    p.delimiter = ';';
    p.label = 0;
    auto q = data::read_csv<i32>(dir.file("plain.csv"), p);
    CHECK(q.features.to_vector() == std::vector<i32>{2, 3, 5, 6});
    CHECK(q.labels.to_vector() == std::vector<i32>{1, 4});
    CHECK(q.feature_names == std::vector<std::string>{"column 1", "column 2"});
    // features only
    auto f = data::read_csv<double>(dir.file("plain.csv"), data::csv_options{.delimiter = ';'});
    CHECK(f.features.dims() == tf::dims{2, 3});
    CHECK(f.labels.empty());
}

TEST_CASE("data: bad CSV rows are tf::errors naming the file, the line and the column", "[data][csv]") {
    temp_dir dir;
    data::csv_options o;
    o.header = true;
    o.label = "y";
    auto check = [&](const std::string& name, const std::string& text, std::vector<std::string> parts,
                     const data::csv_options& opt) {
        const std::string path = dir.file(name);
        write_text(path, text);
        const std::string m = error_of([&] { data::read_csv<float>(path, opt); });
        INFO(m);
        CHECK_THAT(m, Catch::StartsWith("typeflow: data::read_csv: '" + path + "'"));
        for (const auto& p : parts) CHECK_THAT(m, Catch::Contains(p));
    };
    check("short_row.csv", "a,b,y\n1,2,0\n\n3,4\n", {"line 4", "2 fields", "line 1 has 3"}, o);
    check("long_row.csv", "a,b,y\n1,2,0,9\n", {"line 2", "4 fields"}, o);
    check("word.csv", "a,b,y\n1,2,0\n1,abc,1\n", {"line 3", "column 1 ('b')", "'abc'", "float32"}, o);
    check("empty_field.csv", "a,b,y\n1,,0\n", {"line 2", "column 1"}, o);
    check("float_label.csv", "a,b,y\n1,2,0.5\n", {"line 2", "column 2 ('y')", "'0.5'", "int32"}, o);
    check("huge_label.csv", "a,b,y\n1,2,99999999999\n", {"line 2", "int32"}, o);
    check("no_such_label.csv", "a,b,c\n1,2,0\n", {"no label column 'y'", "'a', 'b', 'c'"}, o);
    data::csv_options by_index;
    by_index.label = 5;
    check("bad_index.csv", "1,2,0\n", {"label column 5 does not exist", "3 fields"}, by_index);
    data::csv_options named_no_header;
    named_no_header.label = "y";
    check("named.csv", "1,2,0\n", {"no header"}, named_no_header);
    data::csv_options no_label;
    write_text(dir.file("ok.csv"), "1,2\n");
    CHECK_THAT(error_of([&] { data::from_csv<float>(dir.file("ok.csv"), no_label); }), Catch::Contains("label"));
    CHECK_THAT(error_of([&] { data::read_csv<float>(dir.file("absent.csv"), no_label); }),
               Catch::Contains("absent.csv") && Catch::Contains("cannot open"));
}

// ---------------------------------------------------------------------------
// Fashion-MNIST
// ---------------------------------------------------------------------------

TEST_CASE("data: Fashion-MNIST from Debian's dataset-fashion-mnist", "[data][mnist]") {
    if (!data::fashion_mnist_available()) {
        WARN("skipped: Fashion-MNIST not readable in " << data::fashion_mnist_dir
                                                       << " (apt-get install dataset-fashion-mnist; its .gz files need "
                                                          "TYPEFLOW_HAVE_ZLIB and zlib)");
        SUCCEED("skipped");
        return;
    }
    const auto d = data::load_fashion_mnist();
    REQUIRE(d.train.images.dims() == tf::dims{60000, 28, 28, 1});
    REQUIRE(d.train.labels.dims() == tf::dims{60000});
    REQUIRE(d.test.images.dims() == tf::dims{10000, 28, 28, 1});
    REQUIRE(d.test.labels.dims() == tf::dims{10000});
    // ten balanced classes: 6000 of each in train, 1000 in test
    for (const auto* s : {&d.train, &d.test}) {
        std::map<i32, int> count;
        for (tf::index_t i = 0; i < s->labels.size(); ++i) ++count[s->labels[i]];
        REQUIRE(count.size() == 10);
        CHECK(count.begin()->first == 0);
        CHECK(count.rbegin()->first == 9);
        for (auto [label, c] : count) CHECK(c == s->labels.size() / 10);
    }
    const auto [lo, hi] = std::minmax_element(d.train.images.data(), d.train.images.data() + d.train.images.size());
    CHECK(*lo == 0.0f);
    CHECK(*hi == 1.0f);
    // raw pixels as int32, flat
    const auto raw = data::load_fashion_mnist<i32>({.scale = false, .layout = data::image_layout::flat});
    REQUIRE(raw.test.images.dims() == tf::dims{10000, 784});
    CHECK(raw.test.images[784 * 3 + 400] == static_cast<i32>(std::lround(d.test.images[784 * 3 + 400] * 255)));
    // the usual pipeline: 938 batches of 64 per epoch
    auto train = data::from_tensors(d.train.images, d.train.labels).shuffle(10000, 42).batch(64).prefetch(2);
    CHECK(train.cardinality() == 938);
    tf::index_t rows = 0, batches = 0;
    for (auto& [x, y] : train) {
        ++batches;
        rows += y.size();
        REQUIRE(x.dims()[0] == y.dims()[0]);
    }
    CHECK(batches == 938);
    CHECK(rows == 60000);
}

TEST_CASE("data: MNIST-format loader checks types, extents and labels", "[data][mnist]") {
    temp_dir dir;
    tf::tensor<i32> img(tf::dims{3, 4, 5});
    for (int i = 0; i < 60; ++i) img[i] = i * 4;
    tf::tensor<i32> lab(tf::dims{3}, {9, 0, 4});
    data::write_idx(dir.file("train-images-idx3-ubyte"), img, data::idx_type::u8);
    data::write_idx(dir.file("train-labels-idx1-ubyte"), lab, data::idx_type::u8);
    data::write_idx(dir.file("t10k-images-idx3-ubyte"), img, data::idx_type::u8);
    CHECK_FALSE(data::mnist_available(dir.path.string()));
    CHECK_THAT(error_of([&] { data::load_mnist(dir.path.string()); }), Catch::Contains("t10k-labels-idx1-ubyte"));
    data::write_idx(dir.file("t10k-labels-idx1-ubyte"), lab, data::idx_type::u8);
    CHECK(data::mnist_available(dir.path.string()));
    const auto d = data::load_mnist<double>(dir.path.string(), {.layout = data::image_layout::nhw});
    REQUIRE(d.train.images.dims() == tf::dims{3, 4, 5});
    CHECK(d.train.images[59] == Approx(236.0 / 255));
    CHECK(d.test.labels.to_vector() == std::vector<i32>{9, 0, 4});
    // a label out of range names the record
    tf::tensor<i32> bad(tf::dims{3}, {1, 10, 2});
    data::write_idx(dir.file("t10k-labels-idx1-ubyte"), bad, data::idx_type::u8);
    CHECK_THAT(error_of([&] { data::load_mnist(dir.path.string()); }),
               Catch::Contains("label 10 of record 1") && Catch::Contains("byte offset 9"));
    // labels of another count
    data::write_idx(dir.file("t10k-labels-idx1-ubyte"), tf::tensor<i32>(tf::dims{2}), data::idx_type::u8);
    CHECK_THAT(error_of([&] { data::load_mnist(dir.path.string()); }), Catch::Contains("t10k-labels-idx1-ubyte"));
    // images of another type
    data::write_idx(dir.file("t10k-labels-idx1-ubyte"), lab, data::idx_type::u8);
    data::write_idx(dir.file("t10k-images-idx3-ubyte"), img, data::idx_type::i32);
    CHECK_THAT(error_of([&] { data::load_mnist(dir.path.string()); }),
               Catch::Contains("t10k-images-idx3-ubyte") && Catch::Contains("i32"));
}

// ---------------------------------------------------------------------------
// Feeding a session
// ---------------------------------------------------------------------------

TEST_CASE("data: batches feed placeholders in a training loop", "[data]") {
    // y = 1 when x0 + x1 > 0: logistic regression over shuffled batches
    const int n = 512;
    tf::tensor<float> xs(tf::dims{n, 2});
    tf::tensor<i32> ys(tf::dims{n});
    std::uint64_t s = 1;
    for (int i = 0; i < n; ++i) {
        for (int k = 0; k < 2; ++k) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            xs(i, k) = static_cast<float>(static_cast<double>(s >> 11) / 9007199254740992.0 * 2 - 1);
        }
        ys[i] = xs(i, 0) + xs(i, 1) > 0 ? 1 : 0;
    }
    tf::placeholder<"data_x", float, tf::shape<tf::dyn, 2>> x;
    tf::placeholder<"data_y", i32, tf::shape<tf::dyn>> y;
    tf::variable<"data_W", float, tf::shape<2, 2>> W;
    tf::variable<"data_b", float, tf::shape<2>> b;
    auto loss = tf::mean(tf::sparse_softmax_cross_entropy(tf::matmul(x, W) + b, y));
    auto step = tf::train::sgd(0.5f).minimize(loss);
    tf::session sess(tf::session_options{.threads = 1});
    auto train = data::from_tensors(xs, ys).shuffle(n, 3).batch(32);
    auto full_loss = [&] { return std::get<0>(sess.run(tf::fetch(loss), tf::feed(x, xs), tf::feed(y, ys))).item(); };
    const float before = full_loss();
    int steps = 0;
    for (int epoch = 0; epoch < 5; ++epoch)
        for (auto& [xb, yb] : train) {
            sess.run(step, tf::feed(x, xb), tf::feed(y, yb));
            ++steps;
        }
    CHECK(steps == 5 * 16);
    const float after = full_loss();
    CHECK(after < 0.5f * before);
}
