// dist::nccl_collective and dist::device_collective: the mapping of dtypes
// and reductions to NCCL's and the choice between NCCL and staging, on the
// host; on a GPU, every collective of a one-task NCCL communicator (NCCL
// refuses two ranks on one device, and the test machines have one GPU),
// bootstrapped over a host collective, against its contract.
#include <catch2/catch.hpp>

#include <typeflow/distributed/nccl_collective.hpp>
#include <typeflow/typeflow.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <vector>

namespace tf = typeflow;
namespace dist = typeflow::dist;

TEST_CASE("nccl: dtypes and reductions map to NCCL's, integer means are sums then a division", "[host]") {
    using dist::nccl_detail::allowed;
    using dist::nccl_detail::native;
    using dist::nccl_detail::op_of;
    using dist::nccl_detail::type_of;
    STATIC_REQUIRE(type_of(tf::dtype::float32) == ncclFloat32);
    STATIC_REQUIRE(type_of(tf::dtype::float64) == ncclFloat64);
    STATIC_REQUIRE(type_of(tf::dtype::int32) == ncclInt32);
    STATIC_REQUIRE(type_of(tf::dtype::int64) == ncclInt64);
    STATIC_REQUIRE(type_of(tf::dtype::boolean) == ncclUint8);
    STATIC_REQUIRE(op_of(dist::reduce_op::sum) == ncclSum);
    STATIC_REQUIRE(op_of(dist::reduce_op::mean) == ncclAvg);
    STATIC_REQUIRE(op_of(dist::reduce_op::max) == ncclMax);
    STATIC_REQUIRE(op_of(dist::reduce_op::min) == ncclMin);
    // bool reduces with max (any) and min (all) only, as the ring's contract says
    CHECK(allowed(tf::dtype::boolean, dist::reduce_op::max));
    CHECK(allowed(tf::dtype::boolean, dist::reduce_op::min));
    CHECK_FALSE(allowed(tf::dtype::boolean, dist::reduce_op::sum));
    CHECK_FALSE(allowed(tf::dtype::boolean, dist::reduce_op::mean));
    CHECK(native(tf::dtype::float32, dist::reduce_op::mean));
    CHECK_FALSE(native(tf::dtype::int32, dist::reduce_op::mean));
    CHECK_FALSE(native(tf::dtype::int64, dist::reduce_op::mean));
    CHECK(native(tf::dtype::int64, dist::reduce_op::sum));
}

TEST_CASE("nccl: NCCL only when no two tasks share a GPU", "[host]") {
    using dist::nccl_detail::distinct_devices;
    std::array<std::uint8_t, 16> a{}, b{}, c{};
    a[0] = 1, b[0] = 2, c[15] = 2;
    CHECK(distinct_devices({a}));
    CHECK(distinct_devices({a, b, c}));
    CHECK_FALSE(distinct_devices({a, b, a}));  // tasks 0 and 2 on one GPU: staged through the host
}

namespace {
// A host collective of one task (what bootstraps a one-task communicator).
class solo final : public dist::collective {
public:
    int rank() const noexcept override { return 0; }
    int size() const noexcept override { return 1; }
    void all_reduce(const void* in, void* out, std::size_t n, dist::dtype t, dist::reduce_op) override { copy(in, out, n, t); }
    void broadcast(void*, std::size_t, dist::dtype, int) override {}
    void all_gather(const void* in, void* out, std::size_t n, dist::dtype t) override { copy(in, out, n, t); }
    void reduce_scatter(const void* in, void* out, std::size_t n, dist::dtype t, dist::reduce_op) override { copy(in, out, n, t); }
    void barrier() override {}
    void set_timeout(std::chrono::milliseconds) override {}

private:
    static void copy(const void* in, void* out, std::size_t n, dist::dtype t) {
        if (in != out) std::memcpy(out, in, n * tf::dtype_size(t));
    }
};

template <class T>
std::vector<T> on_host(const void* d, std::size_t n) {
    std::vector<T> v(n);
    REQUIRE(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
}
template <class T>
void* on_device(const std::vector<T>& v) {
    void* p = nullptr;
    REQUIRE(cudaMalloc(&p, v.size() * sizeof(T)) == cudaSuccess);
    REQUIRE(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
    return p;
}
}  // namespace

TEST_CASE("nccl: a one-task communicator runs every collective on device buffers", "[cuda]") {
    solo host;
    auto c = dist::device_collective<0>(host);  // one task: no GPU shared, so NCCL
    REQUIRE(dynamic_cast<dist::nccl_collective<0>*>(c.get()) != nullptr);
    CHECK(c->rank() == 0);
    CHECK(c->size() == 1);

    const std::vector<float> xf{1.5f, -2.0f, 3.25f};
    void* f = on_device(xf);
    c->all_reduce(f, f, 3, tf::dtype::float32, dist::reduce_op::sum);
    CHECK(on_host<float>(f, 3) == xf);
    c->all_reduce(f, f, 3, tf::dtype::float32, dist::reduce_op::mean);
    CHECK(on_host<float>(f, 3) == xf);
    const std::vector<std::int32_t> xi{7, -9, 4};
    void* i = on_device(xi);
    c->all_reduce(i, i, 3, tf::dtype::int32, dist::reduce_op::mean);  // a sum, then / 1
    CHECK(on_host<std::int32_t>(i, 3) == xi);
    const std::vector<std::uint8_t> xb{1, 0, 1};
    void* b = on_device(xb);
    c->all_reduce(b, b, 3, tf::dtype::boolean, dist::reduce_op::max);
    CHECK(on_host<std::uint8_t>(b, 3) == xb);
    CHECK_THROWS_WITH(c->all_reduce(b, b, 3, tf::dtype::boolean, dist::reduce_op::sum), Catch::Contains("cannot reduce bool with sum"));

    void* g = nullptr;
    REQUIRE(cudaMalloc(&g, 3 * sizeof(float)) == cudaSuccess);
    c->all_gather(f, g, 3, tf::dtype::float32);
    CHECK(on_host<float>(g, 3) == xf);
    c->reduce_scatter(f, g, 3, tf::dtype::float32, dist::reduce_op::max);
    CHECK(on_host<float>(g, 3) == xf);
    c->broadcast(f, 3, tf::dtype::float32, 0);
    CHECK(on_host<float>(f, 3) == xf);
    CHECK_THROWS_WITH(c->broadcast(f, 3, tf::dtype::float32, 1), Catch::Contains("root 1 is not a rank"));
    c->barrier();
    CHECK_THROWS_WITH(c->set_timeout(std::chrono::milliseconds(0)), Catch::Contains("outside 1 ms"));
    for (void* p : {f, i, b, g}) cudaFree(p);
}
