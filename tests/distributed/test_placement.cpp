// Variable placement on parameter-server tasks (distributed/placement.hpp),
// against tables computed by hand: round-robin, greedy by bytes, fixed-size
// and min/max partitioners; independence of the order variables are listed
// in; the fingerprint.
#include <catch2/catch.hpp>

#include <typeflow/typeflow.hpp>
#include <typeflow/distributed/placement.hpp>

namespace tf = typeflow;
namespace tfd = typeflow::dist;

namespace {
// 256,000 + 32,768 + 512 + 10,240 + 80 = 299,600 bytes
using emb = tf::variable<"emb", float, tf::shape<1000, 64>>;  // 256 bytes a row
using w1 = tf::variable<"w1", float, tf::shape<64, 128>>;     // 512 bytes a row
using b1 = tf::variable<"b1", float, tf::shape<128>>;         // 4 bytes a row
using w2 = tf::variable<"w2", double, tf::shape<128, 10>>;    // 80 bytes a row
using b2 = tf::variable<"b2", double, tf::shape<10>>;

template <class P>
std::vector<int> ps_list() {
    std::vector<int> out;
    for (const tfd::placed_shard& s : P::shards) out.push_back(s.ps);
    return out;
}
template <class P>
std::vector<std::size_t> loads() {
    return {P::load_bytes.begin(), P::load_bytes.end()};
}
}  // namespace

TEST_CASE("round-robin deals whole variables to the ps tasks in name order") {
    using P = tfd::placement<2, tfd::round_robin, tfd::no_partitioner, emb, w1, b1, w2, b2>;
    // by name: b1 b2 emb w1 w2 -> ps 0 1 0 1 0
    static_assert(P::ps_of<b1>() == 0 && P::ps_of<b2>() == 1 && P::ps_of<emb>() == 0 && P::ps_of<w1>() == 1 &&
                  P::ps_of<w2>() == 0);
    CHECK(ps_list<P>() == std::vector<int>{0, 1, 0, 0, 1});  // list order: emb w1 b1 w2 b2
    CHECK(loads<P>() == std::vector<std::size_t>{266'752, 32'848});
    CHECK(P::shard_count == 5);
    CHECK(P::shards[0] == tfd::placed_shard{0, 0, 0, 1000, 256'000, 0});
    CHECK(P::describe() == "emb[0, 1000) 256,000 bytes -> ps:0\nw1[0, 64) 32,768 bytes -> ps:1\n"
                           "b1[0, 128) 512 bytes -> ps:0\nw2[0, 128) 10,240 bytes -> ps:0\nb2[0, 10) 80 bytes -> ps:1\n");
}

TEST_CASE("greedy placement puts the largest variables first, each on the least loaded ps") {
    using P2 = tfd::placement<2, tfd::greedy_by_bytes, tfd::no_partitioner, emb, w1, b1, w2, b2>;
    // emb -> 0; w1 -> 1; then ps 1 stays the lighter one: w2, b1, b2 -> 1
    CHECK(ps_list<P2>() == std::vector<int>{0, 1, 1, 1, 1});
    CHECK(loads<P2>() == std::vector<std::size_t>{256'000, 43'600});
    using P3 = tfd::placement<3, tfd::greedy_by_bytes, tfd::no_partitioner, emb, w1, b1, w2, b2>;
    // emb -> 0, w1 -> 1, w2 -> 2, b1 -> 2 (10,240 < 32,768), b2 -> 2
    CHECK(ps_list<P3>() == std::vector<int>{0, 1, 2, 2, 2});
    CHECK(loads<P3>() == std::vector<std::size_t>{256'000, 32'768, 10'832});
}

TEST_CASE("a fixed-size partitioner cuts every variable into row shards, the first ones a row longer") {
    using P = tfd::placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<3>, emb, w1, b1, w2, b2>;
    CHECK(P::shard_count == 15);
    CHECK(P::shards_per_var == std::array<std::size_t, 5>{3, 3, 3, 3, 3});
    // emb: 1000 rows -> 334, 333, 333
    CHECK(P::shards[0] == tfd::placed_shard{0, 0, 0, 334, 85'504, 0});
    CHECK(P::shards[1] == tfd::placed_shard{0, 1, 334, 667, 85'248, 1});
    CHECK(P::shards[2] == tfd::placed_shard{0, 2, 667, 1000, 85'248, 1});
    // b2: 10 rows -> 4, 3, 3
    CHECK(P::shards[12].row_end == 4);
    CHECK(P::shards[14] == tfd::placed_shard{4, 2, 7, 10, 24, 0});
    // by bytes: emb/0 -> 0, emb/1 -> 1, emb/2 -> 1 (85,248 < 85,504), then all the rest -> 0
    CHECK(ps_list<P>() == std::vector<int>{0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0});
    CHECK(loads<P>() == std::vector<std::size_t>{129'104, 170'496});
    static_assert(P::ps_of<emb>(2) == 1 && P::ps_of<b2>(1) == 0);
    // never more shards than rows
    using Few = tfd::placement<1, tfd::round_robin, tfd::fixed_size_partitioner<16>, b2>;
    CHECK(Few::shard_count == 10);
}

TEST_CASE("a min/max partitioner keeps shards at least the minimum size, at most the maximum count") {
    // 64 KiB slices: emb (256 bytes a row) gets 256 rows a shard -> ceil(1000 / 256) = 4 shards of 250 rows;
    // the others are under 64 KiB: one shard each
    using P = tfd::placement<3, tfd::round_robin, tfd::min_max_partitioner<4, 65536>, emb, w1, b1, w2, b2>;
    CHECK(P::shards_per_var == std::array<std::size_t, 5>{4, 1, 1, 1, 1});
    CHECK(P::shards[1] == tfd::placed_shard{0, 1, 250, 500, 64'000, 0});
    // by name: b1 b2 emb/0 emb/1 emb/2 emb/3 w1 w2 -> ps 0 1 2 0 1 2 0 1
    CHECK(ps_list<P>() == std::vector<int>{2, 0, 1, 2, 0, 0, 1, 1});  // list order: emb/0..3 w1 b1 w2 b2
    CHECK(loads<P>() == std::vector<std::size_t>{97'280, 74'320, 128'000});
    // at most MaxPartitions
    using Capped = tfd::placement<3, tfd::round_robin, tfd::min_max_partitioner<2, 65536>, emb>;
    CHECK(Capped::shards_per_var[0] == 2);
    // a row larger than the minimum: one row a shard
    using Rows = tfd::placement<3, tfd::round_robin, tfd::min_max_partitioner<100, 100>, w1>;
    CHECK(Rows::shards_per_var[0] == 64);
}

TEST_CASE("every task derives the same placement whatever order it lists the variables in") {
    using A = tfd::placement<3, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>, emb, w1, b1, w2, b2>;
    using B = tfd::placement<3, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>, b2, w2, b1, w1, emb>;
    for (std::size_t k : {0, 1}) {
        CHECK(A::ps_of<emb>(k) == B::ps_of<emb>(k));
        CHECK(A::ps_of<w1>(k) == B::ps_of<w1>(k));
        CHECK(A::ps_of<b1>(k) == B::ps_of<b1>(k));
        CHECK(A::ps_of<w2>(k) == B::ps_of<w2>(k));
        CHECK(A::ps_of<b2>(k) == B::ps_of<b2>(k));
    }
    using C = tfd::placement<3, tfd::round_robin, tfd::no_partitioner, emb, w1, b1, w2, b2>;
    using D = tfd::placement<3, tfd::round_robin, tfd::no_partitioner, w2, emb, b2, w1, b1>;
    CHECK(C::ps_of<emb>() == D::ps_of<emb>());
    CHECK(C::ps_of<b2>() == D::ps_of<b2>());
    CHECK(C::ps_of<w2>() == D::ps_of<w2>());
}

TEST_CASE("the fingerprint tells models and placements apart") {
    using A = tfd::placement<2, tfd::greedy_by_bytes, tfd::no_partitioner, emb, w1, b1>;
    using same = tfd::placement<2, tfd::greedy_by_bytes, tfd::no_partitioner, emb, w1, b1>;
    using other_shape = tfd::placement<2, tfd::greedy_by_bytes, tfd::no_partitioner, emb, w1,
                                       tf::variable<"b1", float, tf::shape<127>>>;
    using other_dtype = tfd::placement<2, tfd::greedy_by_bytes, tfd::no_partitioner, emb, w1,
                                       tf::variable<"b1", double, tf::shape<128>>>;
    using other_ps = tfd::placement<3, tfd::greedy_by_bytes, tfd::no_partitioner, emb, w1, b1>;
    using other_parts = tfd::placement<2, tfd::greedy_by_bytes, tfd::fixed_size_partitioner<2>, emb, w1, b1>;
    static_assert(A::fingerprint == same::fingerprint);
    CHECK(A::fingerprint != other_shape::fingerprint);
    CHECK(A::fingerprint != other_dtype::fingerprint);
    CHECK(A::fingerprint != other_ps::fingerprint);
    CHECK(A::fingerprint != other_parts::fingerprint);
}
