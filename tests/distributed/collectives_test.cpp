// Multi-process collectives test, run under typeflow-launch with 2, 3, 4 tasks.
// Every task generates every task's input from a hash of (task, index, salt),
// so it can compute the expected result locally: in the documented reduction
// order (element of chunk c: x[c+1], x[c+2], ..., x[c]) with its own reduction
// functions, compared bit for bit (small all_reduce: recursive doubling's
// order when the task count is a power of two, else rank order).
//
//   collectives_test [--large] [--staged]
//     --large adds the 64 MiB cases; --staged runs every collective through a
//     staged_collective over a memory space of its own (an emulated device:
//     separate buffers reached only through upload/download), so the buffers
//     the test passes are the "device" ones.
#include <typeflow/dist.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace tfd = typeflow::dist;
using tfd::dtype;
using tfd::reduce_op;

namespace {

std::uint64_t mix(std::uint64_t x) { // splitmix64
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

template <class T> T value(int rank, std::size_t i, std::uint64_t salt) {
    const std::uint64_t h = mix(salt * 1000003u ^ mix(static_cast<std::uint64_t>(rank) << 40 ^ i));
    if constexpr (std::is_same_v<T, float>) {
        if (salt % 5 == 0 && rank == 1 && i % 997 == 5) return std::nanf("");
        return static_cast<float>(static_cast<double>(h >> 40) / double(1 << 24) * 2.0 - 1.0) * 3.0f;
    } else if constexpr (std::is_same_v<T, double>) {
        return static_cast<double>(h >> 11) * 0x1p-53 * 2.0 - 1.0;
    } else if constexpr (std::is_same_v<T, std::int32_t>) {
        return static_cast<std::int32_t>(h % (1u << 28)) - (1 << 27);
    } else if constexpr (std::is_same_v<T, std::int64_t>) {
        return static_cast<std::int64_t>(h % (1ull << 58)) - (1ll << 57);
    } else {
        static_assert(std::is_same_v<T, bool>);
        return (h >> 17) & 1;
    }
}

/// The elements of a test buffer: std::vector<T>, but an array of bool
/// (not a bit set) for bool.
template <class T> class buffer {
public:
    explicit buffer(std::size_t n, T fill = T{}) : n_(n), p_(new T[n]) { std::fill_n(p_.get(), n, fill); }
    buffer(const buffer& o) : buffer(o.n_) { std::copy_n(o.p_.get(), n_, p_.get()); }
    T* data() noexcept { return p_.get(); }
    const T* data() const noexcept { return p_.get(); }
    std::size_t size() const noexcept { return n_; }
    T& operator[](std::size_t i) noexcept { return p_[i]; }

private:
    std::size_t n_;
    std::unique_ptr<T[]> p_;
};

template <class T> bool is_nan(T v) {
    if constexpr (std::is_floating_point_v<T>) return std::isnan(v);
    else return false;
}

// The reference reductions, written independently of the library's kernel.
template <class T> T ref_op(reduce_op op, T acc, T x) {
    switch (op) {
    case reduce_op::sum:
    case reduce_op::mean: return static_cast<T>(acc + x);
    case reduce_op::max:
        if (is_nan(acc)) return acc;
        if (is_nan(x)) return x;
        return acc > x ? acc : x;
    case reduce_op::min:
        if (is_nan(acc)) return acc;
        if (is_nan(x)) return x;
        return acc < x ? acc : x;
    }
    return acc;
}

/// Expected reduction of element i, whose chunk is c, over n tasks (c = -1:
/// the one-hop order x[0], x[1], ..., x[n-1]).
template <class T> T expected(reduce_op op, int n, int c, std::size_t i, std::uint64_t salt) {
    T acc = value<T>((c + 1) % n, i, salt);
    for (int k = 2; k <= n; ++k) acc = ref_op(op, acc, value<T>((c + k) % n, i, salt));
    if (op == reduce_op::mean) acc = static_cast<T>(acc / static_cast<T>(n));
    return acc;
}

/// Expected reduction of element i by recursive doubling over n tasks (n a
/// power of two): pairs, then pairs of pairs, each (lower) op (upper).
template <class T> T expected_doubling(reduce_op op, int n, std::size_t i, std::uint64_t salt) {
    buffer<T> v(static_cast<std::size_t>(n));
    for (int k = 0; k < n; ++k) v[static_cast<std::size_t>(k)] = value<T>(k, i, salt);
    for (int w = 1; w < n; w *= 2)
        for (int k = 0; k < n; k += 2 * w)
            v[static_cast<std::size_t>(k)] = ref_op(op, v[static_cast<std::size_t>(k)], v[static_cast<std::size_t>(k + w)]);
    if (op == reduce_op::mean) v[0] = static_cast<T>(v[0] / static_cast<T>(n));
    return v[0];
}

template <class T> bool same_bits(T a, T b) {
    if (is_nan(a) && is_nan(b)) return true;
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

int failures = 0;
long checks = 0;
std::size_t segment_bytes = 0; // the collective's current segment size

template <class T> std::string show(T v) {
    if constexpr (std::is_floating_point_v<T>) {
        char b[64];
        std::snprintf(b, sizeof b, "%.9g", static_cast<double>(v));
        return b;
    } else {
        return std::to_string(static_cast<long long>(v));
    }
}

template <class T> void verify(const std::string& what, const T* got, std::size_t n, auto want) {
    ++checks;
    for (std::size_t i = 0; i < n; ++i) {
        const T w = want(i);
        if (!same_bits(got[i], w)) {
            std::printf("FAIL %s: element %zu of %zu: got %s, expected %s\n", what.c_str(), i, n, show(got[i]).c_str(),
                        show(w).c_str());
            ++failures;
            return;
        }
    }
}

tfd::ring_collective* ring = nullptr;  // the host collective (its direct_bytes sets the reduction order)

// The emulated device of --staged: host memory, reached through copies that are counted.
std::size_t staged_copies = 0;
void* em_alloc(std::size_t b) { return ::operator new(b); }
void em_free(void* p, std::size_t) noexcept { ::operator delete(p); }
void em_zero(void* p, std::size_t b) { std::memset(p, 0, b); }
void em_copy(void* d, const void* s, std::size_t b) {
    ++staged_copies;
    std::memmove(d, s, b);
}
constexpr typeflow::memory_space emulated{"emulated", &em_alloc, &em_free, &em_zero, false, &em_copy, &em_copy, &em_copy, nullptr};

std::string name(const char* coll, std::size_t n, dtype t, const char* extra, bool in_place) {
    return std::string(coll) + "(" + std::string(typeflow::dtype_name(t)) + "[" + std::to_string(n) + "]" + extra +
           (in_place ? ", in place)" : ", out of place)");
}

template <class T> void test_all_reduce(tfd::collective& c, std::size_t n, reduce_op op, bool in_place, std::uint64_t salt) {
    const int N = c.size(), r = c.rank();
    buffer<T> in(n), out(n, T(7));
    for (std::size_t i = 0; i < n; ++i) in[i] = value<T>(r, i, salt);
    const buffer<T> in_copy = in;
    if (in_place) c.all_reduce(in.data(), in.data(), n, tfd::dtype_of<T>, op);
    else c.all_reduce(in.data(), out.data(), n, tfd::dtype_of<T>, op);
    const auto& res = in_place ? in : out;
    std::string extra = ", " + std::string(tfd::name_of(op));
    (void)c;
    auto& rc = *ring;
    const bool direct = n * sizeof(T) <= rc.direct_bytes() && n * sizeof(T) <= segment_bytes;
    int chunk = 0;
    verify<T>(name("all_reduce", n, tfd::dtype_of<T>, extra.c_str(), in_place), res.data(), n, [&](std::size_t i) {
        if (direct) return (N & (N - 1)) == 0 ? expected_doubling<T>(op, N, i, salt) : expected<T>(op, N, -1, i, salt);
        while (i >= n * static_cast<std::size_t>(chunk + 1) / static_cast<std::size_t>(N)) ++chunk;
        return expected<T>(op, N, chunk, i, salt);
    });
    if (!in_place && std::memcmp(in.data(), in_copy.data(), n * sizeof(T)) != 0) {
        std::printf("FAIL all_reduce out of place modified its input\n");
        ++failures;
    }
}

template <class T> void test_reduce_scatter(tfd::collective& c, std::size_t n, reduce_op op, bool in_place, std::uint64_t salt) {
    const int N = c.size(), r = c.rank();
    buffer<T> in(n * static_cast<std::size_t>(N)), out(n, T(7));
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = value<T>(r, i, salt);
    T* dst = in_place ? in.data() + static_cast<std::size_t>(r) * n : out.data();
    c.reduce_scatter(in.data(), dst, n, tfd::dtype_of<T>, op);
    std::string extra = ", " + std::string(tfd::name_of(op));
    verify<T>(name("reduce_scatter", n, tfd::dtype_of<T>, extra.c_str(), in_place), dst, n,
              [&](std::size_t i) { return expected<T>(op, N, r, static_cast<std::size_t>(r) * n + i, salt); });
}

template <class T> void test_all_gather(tfd::collective& c, std::size_t n, bool in_place, std::uint64_t salt) {
    const int N = c.size(), r = c.rank();
    buffer<T> out(n * static_cast<std::size_t>(N), T(7)), in(n);
    for (std::size_t i = 0; i < n; ++i) in[i] = value<T>(r, i, salt);
    if (in_place) {
        std::memcpy(out.data() + static_cast<std::size_t>(r) * n, in.data(), n * sizeof(T));
        c.all_gather(out.data() + static_cast<std::size_t>(r) * n, out.data(), n, tfd::dtype_of<T>);
    } else {
        c.all_gather(in.data(), out.data(), n, tfd::dtype_of<T>);
    }
    verify<T>(name("all_gather", n, tfd::dtype_of<T>, "", in_place), out.data(), out.size(),
              [&](std::size_t i) { return value<T>(static_cast<int>(i / n), i % n, salt); });
}

template <class T> void test_broadcast(tfd::collective& c, std::size_t n, int root, std::uint64_t salt) {
    const int r = c.rank();
    buffer<T> buf(n);
    for (std::size_t i = 0; i < n; ++i) buf[i] = value<T>(r, i, salt);
    c.broadcast(buf.data(), n, tfd::dtype_of<T>, root);
    std::string extra = ", root " + std::to_string(root);
    verify<T>(name("broadcast", n, tfd::dtype_of<T>, extra.c_str(), true), buf.data(), n,
              [&](std::size_t i) { return value<T>(root, i, salt); });
}

template <class T> void small_suite(tfd::collective& c, std::size_t n, std::uint64_t& salt) {
    for (auto op : {reduce_op::sum, reduce_op::mean, reduce_op::max, reduce_op::min})
        for (bool ip : {true, false}) {
            if (std::is_same_v<T, bool> && (op == reduce_op::sum || op == reduce_op::mean)) continue; // test_bool_sum
            test_all_reduce<T>(c, n, op, ip, ++salt);
            test_reduce_scatter<T>(c, n, op, ip, ++salt);
        }
    for (bool ip : {true, false}) test_all_gather<T>(c, n, ip, ++salt);
    for (int root = 0; root < c.size(); ++root) test_broadcast<T>(c, n, root, ++salt);
}

void test_barrier(tfd::collective& c) {
    // Task k enters 40*k ms late; nobody may leave before the last one entered.
    using namespace std::chrono;
    std::this_thread::sleep_for(milliseconds(40 * c.rank()));
    const std::int64_t entered = duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
    c.barrier();
    const std::int64_t left = duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
    std::vector<std::int64_t> all(static_cast<std::size_t>(c.size()));
    c.all_gather(&entered, all.data(), 1, dtype::int64);
    ++checks;
    for (auto e : all)
        if (left < e) {
            std::printf("FAIL barrier: left at %lld before a task entered at %lld\n", (long long)left, (long long)e);
            ++failures;
        }
}

/// Sum and mean of bool are refused on every task before anything is sent;
/// the collective goes on working.
void test_bool_sum(tfd::collective& c) {
    bool b[3] = {true, false, c.rank() == 0};
    for (auto op : {reduce_op::sum, reduce_op::mean}) {
        ++checks;
        try {
            c.all_reduce(b, b, 3, dtype::boolean, op);
            std::printf("FAIL all_reduce(bool, %s) did not throw\n", std::string(tfd::name_of(op)).c_str());
            ++failures;
        } catch (const tfd::error& e) {
            if (!std::strstr(e.what(), "of bool is not defined")) {
                std::printf("FAIL all_reduce(bool, %s): unexpected message: %s\n", std::string(tfd::name_of(op)).c_str(),
                            e.what());
                ++failures;
            }
        }
    }
    c.all_reduce(b, b, 3, dtype::boolean, reduce_op::max);
    ++checks;
    if (!b[0] || b[1] || !b[2]) {
        std::printf("FAIL all_reduce(bool, max) after the refusals: %d %d %d\n", b[0], b[1], b[2]);
        ++failures;
    }
}

} // namespace

int main(int argc, char** argv) {
    bool large = false, staged = false;
    for (int i = 1; i < argc; ++i) {
        large = large || std::string(argv[i]) == "--large";
        staged = staged || std::string(argv[i]) == "--staged";
    }
    try {
        auto spec = tfd::cluster_spec::from_env();
        spec.options.op_timeout = std::chrono::seconds(60);
        tfd::ring_collective rc(spec);
        ring = &rc;
        tfd::staged_collective sc(rc, emulated);
        struct facade : tfd::collective {  // the ring's segment setting, with the chosen collective's operations
            tfd::collective& op;
            tfd::ring_collective& r;
            facade(tfd::collective& o, tfd::ring_collective& rr) : op(o), r(rr) {}
            int rank() const noexcept override { return op.rank(); }
            int size() const noexcept override { return op.size(); }
            void all_reduce(const void* in, void* out, std::size_t n, dtype t, reduce_op o) override { op.all_reduce(in, out, n, t, o); }
            void broadcast(void* b, std::size_t n, dtype t, int root) override { op.broadcast(b, n, t, root); }
            void all_gather(const void* in, void* out, std::size_t n, dtype t) override { op.all_gather(in, out, n, t); }
            void reduce_scatter(const void* in, void* out, std::size_t n, dtype t, reduce_op o) override {
                op.reduce_scatter(in, out, n, t, o);
            }
            void barrier() override { op.barrier(); }
            void set_timeout(std::chrono::milliseconds t) override { op.set_timeout(t); }
            void set_segment_bytes(std::size_t b) { r.set_segment_bytes(b); }
        } c(staged ? static_cast<tfd::collective&>(sc) : rc, rc);
        std::uint64_t salt = 1;
        const auto t0 = std::chrono::steady_clock::now();
        test_barrier(c);
        test_bool_sum(c);
        for (std::size_t seg : {std::size_t{256} << 10, std::size_t{1000}}) {
            c.set_segment_bytes(seg);
            segment_bytes = seg;
            for (std::size_t n : {1, 2, 3, 5, 7, 64, 1000, 4097}) {
                small_suite<float>(c, n, salt);
                small_suite<double>(c, n, salt);
                small_suite<std::int32_t>(c, n, salt);
                small_suite<std::int64_t>(c, n, salt);
                small_suite<bool>(c, n, salt);
            }
            for (std::size_t n : {65537, 262147}) small_suite<float>(c, n, salt);
        }
        c.set_segment_bytes(std::size_t{256} << 10);
        segment_bytes = std::size_t{256} << 10;
        for (std::size_t n : {std::size_t{1} << 20 | 3}) {
            for (bool ip : {true, false}) test_all_reduce<float>(c, n, reduce_op::sum, ip, ++salt);
            test_all_reduce<double>(c, n, reduce_op::mean, true, ++salt);
            test_reduce_scatter<float>(c, n / 4, reduce_op::max, false, ++salt);
            test_all_gather<float>(c, n / 4, false, ++salt);
            test_broadcast<float>(c, n, c.size() - 1, ++salt);
        }
        if (large) {
            const std::size_t n = std::size_t{16} << 20; // 64 MiB of float32
            for (bool ip : {true, false}) test_all_reduce<float>(c, n, reduce_op::sum, ip, ++salt);
            test_all_reduce<float>(c, n + 5, reduce_op::mean, true, ++salt);
            test_broadcast<float>(c, n, 0, ++salt);
            test_all_gather<float>(c, n / static_cast<std::size_t>(c.size()), true, ++salt);
            test_reduce_scatter<float>(c, n / static_cast<std::size_t>(c.size()), reduce_op::sum, true, ++salt);
        }
        test_barrier(c);
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (staged && staged_copies == 0) {
            std::printf("FAIL --staged: no copy went through the emulated device\n");
            ++failures;
        }
        std::printf("%s: %ld checks, %d failures, %.2f s%s\n", failures ? "FAILED" : "PASSED", checks, failures, secs,
                    staged ? " (staged through an emulated device)" : "");
        return failures ? 1 : 0;
    } catch (const std::exception& e) {
        std::printf("FAILED with exception: %s\n", e.what());
        return 1;
    }
}
