// tf::io checkpoints: CRC-32C against published check values, round trips of
// every dtype in binary and JSON, dyn-bound shapes, sharding, rotation and
// latest_checkpoint, and every kind of bad input (each error names the file
// and the variable, and leaves every variable as it was).
#include <catch2/catch.hpp>

#include "io_support.hpp"

#include <typeflow/core/json_depth.hpp>
#include <typeflow/io/events.hpp>
#include <typeflow/io/saver.hpp>
#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

namespace tf = typeflow;
using iotest::same_bits;

namespace {
// Bit-at-a-time CRC-32C (reflected 0x82F63B78): the textbook definition, an
// independent reference for the table-driven / hardware version.
std::uint32_t crc32c_bitwise(const unsigned char* p, std::size_t n) {
    std::uint32_t c = 0xFFFFFFFFu;
    for (std::size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

// A model with one variable of every dtype, special values included.
struct all_dtypes {
    tf::variable<"f32", float, tf::shape<2, 3>> f32;
    tf::variable<"f64", double, tf::shape<4>> f64;
    tf::variable<"i32", std::int32_t, tf::shape<3>> i32;
    tf::variable<"i64", std::int64_t, tf::shape<>> i64;
    tf::variable<"flag", bool, tf::shape<2, 2>> flag;
    tf::variable<"empty", float, tf::shape<0, 3>> empty;

    void fill(int seed) {
        std::mt19937 g(static_cast<unsigned>(seed));
        std::uniform_real_distribution<double> u(-10, 10);
        for (int i = 0; i < 6; ++i) f32.value()[i] = static_cast<float>(u(g));
        f32.value()[1] = std::numeric_limits<float>::quiet_NaN();
        f32.value()[2] = -0.0f;
        f32.value()[3] = std::numeric_limits<float>::denorm_min();
        f64.value()[0] = std::numeric_limits<double>::infinity();
        f64.value()[1] = -std::numeric_limits<double>::infinity();
        f64.value()[2] = 0.1 + seed;
        f64.value()[3] = std::numeric_limits<double>::max();
        i32.value()[0] = std::numeric_limits<std::int32_t>::min();
        i32.value()[1] = std::numeric_limits<std::int32_t>::max();
        i32.value()[2] = seed;
        i64.value()[0] = std::numeric_limits<std::int64_t>::min() + seed;
        for (int i = 0; i < 4; ++i) flag.value()[i] = ((seed >> i) & 1) != 0;
    }
    tf::io::saver saver(tf::io::saver_options o = {}) { return tf::io::saver(o, f32, f64, i32, i64, flag, empty); }
};

struct snapshot {
    tf::tensor<float> f32;
    tf::tensor<double> f64;
    tf::tensor<std::int32_t> i32;
    tf::tensor<std::int64_t> i64;
    tf::tensor<bool> flag;
    explicit snapshot(const all_dtypes& m)
        : f32(m.f32.value().clone()), f64(m.f64.value().clone()), i32(m.i32.value().clone()),
          i64(m.i64.value().clone()), flag(m.flag.value().clone()) {}
    bool equals(const all_dtypes& m) const {
        return same_bits(f32, m.f32.value()) && same_bits(f64, m.f64.value()) && same_bits(i32, m.i32.value()) &&
               same_bits(i64, m.i64.value()) && same_bits(flag, m.flag.value());
    }
};

// Runs f, which must throw tf::error; returns the message.
template <class F>
std::string error_of(F f) {
    try {
        f();
    } catch (const tf::error& e) {
        return e.what();
    }
    FAIL("no tf::error was thrown");
    return {};
}
}  // namespace

TEST_CASE("io: crc32c matches the iSCSI (RFC 3720) check values and a bitwise reference", "[io]") {
    CHECK(tf::io::crc32c(std::string_view("123456789")) == 0xE3069283u);
    unsigned char buf[32];
    std::memset(buf, 0, 32);
    CHECK(tf::io::crc32c(buf, 32) == 0x8A9136AAu);
    std::memset(buf, 0xFF, 32);
    CHECK(tf::io::crc32c(buf, 32) == 0x62A8AB43u);
    for (int i = 0; i < 32; ++i) buf[i] = static_cast<unsigned char>(i);
    CHECK(tf::io::crc32c(buf, 32) == 0x46DD794Eu);
    for (int i = 0; i < 32; ++i) buf[i] = static_cast<unsigned char>(31 - i);
    CHECK(tf::io::crc32c(buf, 32) == 0x113FDB5Cu);

    std::mt19937 g(7);
    std::vector<unsigned char> data(300);
    for (auto& b : data) b = static_cast<unsigned char>(g());
    for (std::size_t off = 0; off < 9; ++off)
        for (std::size_t n = 0; n + off <= data.size(); n += 13) {
            INFO("offset " << off << " length " << n);
            const auto want = crc32c_bitwise(data.data() + off, n);
            REQUIRE(tf::io::crc32c(data.data() + off, n) == want);
            const std::size_t cut = n / 3;
            REQUIRE(tf::io::crc32c_extend(tf::io::crc32c(data.data() + off, cut), data.data() + off + cut, n - cut) == want);
        }
    // The mask is a rotation by 15 plus a constant, and unmask inverts it.
    CHECK(tf::io::mask_crc(0x00000001u) == (0x00020000u + 0xa282ead8u));
    CHECK(tf::io::mask_crc(0x00008000u) == (0x00000001u + 0xa282ead8u));
    for (std::uint32_t v : {0u, 1u, 0xE3069283u, 0xFFFFFFFFu, 0x12345678u})
        CHECK(tf::io::unmask_crc(tf::io::mask_crc(v)) == v);
}

TEST_CASE("io checkpoint: every dtype round-trips bit for bit, JSON and binary give the same values", "[io][checkpoint]") {
    iotest::temp_dir dir;
    all_dtypes m;
    m.fill(3);
    const snapshot saved(m);
    auto bin = m.saver();
    auto json = m.saver({.file_format = tf::io::format::json});
    bin.write(dir / "a.tfckpt");
    json.write(dir / "a.json");
    REQUIRE(iotest::read_file(dir / "a.json").front() == '{');
    REQUIRE(iotest::read_file(dir / "a.tfckpt").front() != '{');

    // Both files list the same tensors with the same CRC of their bytes.
    tf::io::checkpoint_reader rb(dir / "a.tfckpt"), rj(dir / "a.json");
    REQUIRE(rb.file_format() == tf::io::format::binary);
    REQUIRE(rj.file_format() == tf::io::format::json);
    REQUIRE(rb.tensors().size() == 6);
    REQUIRE(rj.tensors().size() == 6);
    for (std::size_t i = 0; i < 6; ++i) {
        INFO(rb.tensors()[i].name);
        CHECK(rb.tensors()[i].name == rj.tensors()[i].name);
        CHECK(rb.tensors()[i].dtype == rj.tensors()[i].dtype);
        CHECK(rb.tensors()[i].shape == rj.tensors()[i].shape);
        CHECK(rb.tensors()[i].crc32c == rj.tensors()[i].crc32c);
    }
    const auto i64 = rb.find("i64");
    REQUIRE(i64);
    CHECK(rb.tensors()[*i64].dtype == tf::dtype::int64);
    CHECK(rb.tensors()[*i64].shape.rank == 0);

    for (const char* file : {"a.tfckpt", "a.json"}) {
        INFO(file);
        m.fill(99);
        REQUIRE_FALSE(saved.equals(m));
        bin.restore(dir / file);  // the format is read from the file
        CHECK(saved.equals(m));
    }

    // A fresh program (new variable objects, same names) restores the same values.
    all_dtypes fresh;
    auto s = fresh.saver();
    s.restore(dir / "a.json");
    CHECK(saved.equals(fresh));
}

TEST_CASE("io checkpoint: tensors with dyn-bound extents round-trip and are checked against their pattern", "[io][checkpoint]") {
    iotest::temp_dir dir;
    tf::tensor<float> emb({5, 4});
    for (tf::index_t i = 0; i < emb.size(); ++i) emb[i] = 0.25f * static_cast<float>(i) - 1.0f;
    tf::tensor<std::int64_t> ids({7});
    for (tf::index_t i = 0; i < 7; ++i) ids[i] = 1000000000000LL * i;
    const auto emb0 = emb.clone();
    const auto ids0 = ids.clone();
    for (auto f : {tf::io::format::binary, tf::io::format::json}) {
        tf::io::saver s({.file_format = f});
        s.add("emb", emb, tf::dims{tf::dyn, 4}).add("ids", ids, tf::dims{tf::dyn});
        const auto path = s.save(dir.path, f == tf::io::format::json ? 2 : 1);
        emb = tf::tensor<float>({2, 4});  // rebound to other extents
        ids = tf::tensor<std::int64_t>({1});
        s.restore(path);
        CHECK(same_bits(emb, emb0));
        CHECK(same_bits(ids, ids0));

        // Extents that do not fit the pattern: an error naming the file, the tensor and both shapes.
        tf::tensor<float> other({3, 3});
        tf::tensor<std::int64_t> ids2({2});
        tf::io::saver wrong;
        wrong.add("emb", other, tf::dims{tf::dyn, 3}).add("ids", ids2, tf::dims{tf::dyn});
        const auto msg = error_of([&] { wrong.restore(path); });
        CHECK_THAT(msg, Catch::Contains(path) && Catch::Contains("'emb'") && Catch::Contains("[?,3]") &&
                            Catch::Contains("[5,4]"));
        CHECK(other.dims() == tf::dims{3, 3});
        CHECK(ids2.dims() == tf::dims{2});
    }
}

TEST_CASE("io checkpoint: a saver built from a train op holds the optimizer slots, names must be unique", "[io][checkpoint]") {
    tf::placeholder<"x", double, tf::shape<tf::dyn, 2>> x;
    tf::variable<"W", double, tf::shape<2, 1>> W;
    tf::variable<"b", double, tf::shape<1>> b;
    tf::variable<"step", std::int64_t, tf::shape<>> step;
    auto loss = tf::mean(tf::square(tf::matmul(x, W) + b));
    auto adam = tf::train::adam(0.1).minimize(loss, tf::train::global_step(step));
    CHECK(tf::io::saver(adam).names() ==
          std::vector<std::string>{"W", "W/m", "W/t", "W/v", "b", "b/m", "b/t", "b/v", "step"});
    auto mom = tf::train::momentum(0.1).minimize(loss);
    CHECK(tf::io::saver(mom).names() == std::vector<std::string>{"W", "W/momentum", "b", "b/momentum"});
    // A variable given twice (directly and through the loss) is one entry.
    CHECK(tf::io::saver(W, loss, W).names() == std::vector<std::string>{"W", "b"});
    // Two different variables named "W": refused.
    tf::variable<"W", double, tf::shape<2, 1>> W2;
    const auto msg = error_of([&] { tf::io::saver s(W, W2); });
    CHECK_THAT(msg, Catch::Contains("'W'"));
}

TEST_CASE("io checkpoint: bad input gives one error naming the file and the variable, variables stay untouched", "[io][checkpoint]") {
    iotest::temp_dir dir;
    all_dtypes m;
    m.fill(1);
    tf::variable<"z_big", double, tf::shape<64, 64>> big{tf::init::uniform{}};
    auto s = m.saver();
    s.add(big);
    const auto bin = s.save(dir.path, 1);
    s.options().file_format = tf::io::format::json;
    const auto json = s.save(dir.path, 2);
    const auto bin_bytes = iotest::read_file(bin);
    const auto json_bytes = iotest::read_file(json);

    // The values now in the variables; no failed restore may change them.
    m.fill(5);
    big.value()[0] = 12345;
    const snapshot before(m);
    const auto big_before = big.value().clone();
    const auto untouched = [&] { return before.equals(m) && same_bits(big_before, big.value()); };
    const std::string tmp = dir / "bad.tfckpt";
    const auto expect = [&](const std::string& file, std::initializer_list<const char*> parts,
                            const tf::io::restore_options& ro = {}) {
        const auto msg = error_of([&] { s.restore(file, ro); });
        INFO(msg);
        CHECK_THAT(msg, Catch::Contains(file));
        for (const char* p : parts) CHECK_THAT(msg, Catch::Contains(p));
        CHECK(untouched());
    };

    SECTION("truncated inside a tensor's bytes") {
        iotest::write_file(tmp, bin_bytes.substr(0, bin_bytes.size() - 100));
        expect(tmp, {"'z_big'", "truncated", "no variable was changed"});
    }
    SECTION("truncated in the table of contents") {
        iotest::write_file(tmp, bin_bytes.substr(0, 120));
        expect(tmp, {"truncated", "table of contents", "'z_big'", "'f32'"});
    }
    SECTION("truncated by one byte (end marker)") {
        iotest::write_file(tmp, bin_bytes.substr(0, bin_bytes.size() - 1));
        expect(tmp, {"end marker", "truncated"});
    }
    SECTION("truncated JSON") {
        const std::string jt = dir / "bad.json";
        const auto at = json_bytes.find("\"z_big\"");
        REQUIRE(at != std::string::npos);
        iotest::write_file(jt, json_bytes.substr(0, at + 200));
        expect(jt, {"'z_big'", "JSON"});
    }
    SECTION("an empty file") {
        iotest::write_file(tmp, "");
        expect(tmp, {"empty", "'z_big'"});
    }
    SECTION("flipped bytes in a tensor's data") {
        std::string b = bin_bytes;
        b[b.size() - 31 - 10] = static_cast<char>(b[b.size() - 31 - 10] ^ 0x40);  // before the 31-byte end marker
        iotest::write_file(tmp, b);
        expect(tmp, {"'z_big'", "checksum mismatch"});
    }
    SECTION("a flipped byte in a tensor's record (its name)") {
        std::string b = bin_bytes;
        const auto at = b.find("i64");
        REQUIRE(at != std::string::npos);
        b[at + 1] = '7';
        iotest::write_file(tmp, b);
        expect(tmp, {"'i74'", "record", "corrupt"});
    }
    SECTION("a changed number in a JSON file") {
        std::string j = json_bytes;
        const auto at = j.find("\"values\"", j.find("\"i32\""));
        REQUIRE(at != std::string::npos);
        const auto digit = j.find_first_of("0123456789", j.find('[', at));
        j[digit] = j[digit] == '1' ? '2' : '1';
        const std::string jt = dir / "bad.json";
        iotest::write_file(jt, j);
        expect(jt, {"'i32'", "checksum mismatch"});
    }
    SECTION("a wrong format version") {
        std::string b = bin_bytes;
        // endianness byte, 8-byte length, "typeflow-checkpoint", then the uint32 version
        REQUIRE(b.substr(9, 19) == "typeflow-checkpoint");
        REQUIRE(b[28] == 1);
        b[28] = 7;
        iotest::write_file(tmp, b);
        expect(tmp, {"format version 7", "reads version 1", "'z_big'"});
        std::string j = json_bytes;
        const auto at = j.find("\"version\": 1");
        REQUIRE(at != std::string::npos);
        j[at + 11] = '9';
        const std::string jt = dir / "bad.json";
        iotest::write_file(jt, j);
        expect(jt, {"format version 9", "'f32'"});
    }
    SECTION("not a checkpoint at all") {
        iotest::write_file(tmp, std::string("\x01hello, this is not a checkpoint at all", 40));
        expect(tmp, {"'z_big'"});
    }
    SECTION("a missing file") {
        expect(dir / "nope.tfckpt", {"cannot open", "'z_big'"});
    }
    SECTION("a variable missing from the checkpoint; a subset restore is an explicit opt-in") {
        tf::variable<"extra", float, tf::shape<2>> extra{tf::init::constant{7}};
        auto s2 = m.saver();
        s2.add(big).add(extra);
        const auto msg = error_of([&] { s2.restore(bin); });
        CHECK_THAT(msg, Catch::Contains(bin) && Catch::Contains("'extra'") && Catch::Contains("missing"));
        CHECK(untouched());
        CHECK(extra.value()[0] == 7.0f);
        s2.restore(bin, {.allow_missing = true});  // fine-tuning: the rest is restored
        CHECK_FALSE(untouched());
        CHECK(extra.value()[0] == 7.0f);
        m.fill(1);
        CHECK(before.equals(m) == false);
    }
    SECTION("a checkpoint tensor no variable takes; ignoring it is an explicit opt-in") {
        tf::io::saver s2(m.f32, m.f64);
        const auto msg = error_of([&] { s2.restore(bin); });
        CHECK_THAT(msg, Catch::Contains(bin) && Catch::Contains("'z_big'") && Catch::Contains("matches no variable"));
        CHECK(untouched());
        s2.restore(bin, {.allow_unused = true});
        CHECK_FALSE(same_bits(before.f32, m.f32.value()));
        CHECK(same_bits(before.i32, m.i32.value()));  // not in s2: unchanged
    }
    SECTION("shape and dtype mismatches are all reported in one error") {
        // The same names with another shape and another dtype.
        tf::variable<"f32", float, tf::shape<3, 2>> f32b{tf::init::constant{3}};
        tf::variable<"f64", float, tf::shape<4>> f64b{tf::init::constant{4}};
        tf::io::saver s2(f32b, f64b, m.i32, m.i64, m.flag, m.empty, big);
        for (const auto& file : {bin, json}) {
            const auto msg = error_of([&] { s2.restore(file); });
            INFO(msg);
            CHECK_THAT(msg, Catch::Contains(file));
            CHECK_THAT(msg, Catch::Contains("variable 'f32': shape [3,2] in the program, [2,3] in the checkpoint"));
            CHECK_THAT(msg, Catch::Contains("variable 'f64': dtype float32 in the program, float64 in the checkpoint"));
            CHECK(untouched());
            CHECK(f32b.value()[0] == 3.0f);
            CHECK(f64b.value()[0] == 4.0f);
        }
    }
    // Whatever failed above, the good files still restore.
    s.restore(bin);
    all_dtypes ref;
    ref.fill(1);
    CHECK(snapshot(ref).equals(m));
}

TEST_CASE("io checkpoint: sharded save writes one file per shard and an index, restore reads them back", "[io][checkpoint]") {
    iotest::temp_dir dir;
    all_dtypes m;
    m.fill(2);
    const snapshot saved(m);
    for (auto f : {tf::io::format::binary, tf::io::format::json}) {
        INFO((f == tf::io::format::json ? "json" : "binary"));
        auto s = m.saver({.file_format = f, .shards = 3});
        const auto step = f == tf::io::format::json ? 20 : 10;
        const auto index = s.save(dir.path, step);
        CHECK(index == dir.path + "/ckpt-" + std::to_string(step) + ".index");
        // Every shard is a complete checkpoint of its own; together they hold each tensor once.
        tf::io::checkpoint_reader ir(index);
        REQUIRE(ir.is_index());
        REQUIRE(ir.shards().size() == 3);
        std::vector<std::string> seen;
        for (const auto& sh : ir.shards()) {
            tf::io::checkpoint_reader r(dir / sh);
            CHECK_FALSE(r.is_index());
            for (const auto& t : r.tensors()) seen.push_back(t.name);
        }
        std::sort(seen.begin(), seen.end());
        CHECK(seen == s.names());
        m.fill(77);
        s.restore(index);
        CHECK(saved.equals(m));
        CHECK(tf::io::latest_checkpoint(dir.path) == index);
    }
    // Shards written separately (as parameter servers would), then the index.
    auto s = m.saver({.shards = 2});
    const std::string prefix = dir / "ckpt-30";
    std::thread t0([&] { s.write_shard(prefix, 0); }), t1([&] { s.write_shard(prefix, 1); });
    t0.join();
    t1.join();
    CHECK(tf::io::latest_checkpoint(dir.path) == dir.path + "/ckpt-20.index");  // no index yet: incomplete
    s.write_index(prefix);
    CHECK(tf::io::latest_checkpoint(dir.path) == dir.path + "/ckpt-30.index");

    // A lost shard: not complete, and a restore names the shard and its variables.
    const auto shard1 = prefix + ".shard-00001-of-00002.tfckpt";
    const auto shard1_bytes = iotest::read_file(shard1);
    std::filesystem::remove(shard1);
    CHECK(tf::io::latest_checkpoint(dir.path) == dir.path + "/ckpt-20.index");
    m.fill(5);
    const snapshot before(m);
    const auto msg = error_of([&] { s.restore(prefix + ".index"); });
    CHECK_THAT(msg, Catch::Contains(shard1));
    tf::io::checkpoint_reader ir(prefix + ".index");
    for (const auto& t : ir.tensors())
        if (t.shard == 1) CHECK_THAT(msg, Catch::Contains("'" + t.name + "'"));
    CHECK(before.equals(m));
    // A corrupt shard: the same.
    std::string bad = shard1_bytes;
    bad[bad.size() - 40] = static_cast<char>(bad[bad.size() - 40] ^ 1);
    iotest::write_file(shard1, bad);
    CHECK_THAT(error_of([&] { s.restore(prefix + ".index"); }), Catch::Contains("checksum mismatch"));
    CHECK(before.equals(m));
    iotest::write_file(shard1, shard1_bytes);
    s.restore(prefix + ".index");
    CHECK(saved.equals(m));
}

TEST_CASE("io checkpoint: save keeps the last N, latest_checkpoint skips incomplete files", "[io][checkpoint]") {
    iotest::temp_dir dir;
    tf::variable<"v", std::int64_t, tf::shape<3>> v;
    tf::io::saver s({.max_to_keep = 3}, v);
    CHECK_FALSE(tf::io::latest_checkpoint(dir.path));
    CHECK_FALSE(tf::io::latest_checkpoint(dir / "does-not-exist"));
    // A path that exists but cannot be listed is an error naming it, never an
    // empty list (a resume would start over).
    iotest::write_file(dir / "a-file", "x");
    REQUIRE_THROWS_WITH(tf::io::list_checkpoints(dir / "a-file"),
                        Catch::Contains("cannot list directory '" + (dir / "a-file") + "'"));
    REQUIRE_THROWS_AS(tf::io::latest_checkpoint(dir / "a-file"), tf::error);
    for (int step = 1; step <= 7; ++step) {
        v.value()[0] = step;
        s.save(dir.path, step * 10);
    }
    std::vector<std::int64_t> steps;
    for (const auto& c : tf::io::list_checkpoints(dir.path)) steps.push_back(c.step);
    CHECK(steps == std::vector<std::int64_t>{50, 60, 70});
    CHECK(tf::io::latest_checkpoint(dir.path) == dir.path + "/ckpt-70.tfckpt");

    // A temporary file of a dead writer and a truncated newer file are not checkpoints.
    iotest::write_file(dir / ".ckpt-80.tfckpt.tmp.999999999", "partial");
    iotest::write_file(dir / "ckpt-90.tfckpt", iotest::read_file(dir / "ckpt-70.tfckpt").substr(0, 60));
    CHECK(tf::io::latest_checkpoint(dir.path) == dir.path + "/ckpt-70.tfckpt");
    s.restore(*tf::io::latest_checkpoint(dir.path));
    CHECK(v.value()[0] == 7);
    // The next save clears the dead writer's temporary file.
    s.save(dir.path, 100);
    CHECK_FALSE(std::filesystem::exists(dir / ".ckpt-80.tfckpt.tmp.999999999"));
    // max_to_keep = 0 keeps everything; another basename is another series.
    tf::io::saver all({.max_to_keep = 0, .basename = "model"}, v);
    for (int step = 1; step <= 6; ++step) all.save(dir.path, step);
    CHECK(tf::io::list_checkpoints(dir.path, "model").size() == 6);
    CHECK(tf::io::latest_checkpoint(dir.path, "model") == dir.path + "/model-6.tfckpt");
}

// ---------------------------------------------------------------------------
// Bad input: byte counts that overflow, deep JSON, RapidJSON's zero numbers,
// directories, shard names.
// ---------------------------------------------------------------------------
namespace {
// A binary checkpoint (Cereal portable binary: a little-endian flag byte, then
// little-endian values) built by hand, so records can hold what the writer
// refuses to write.
std::string le(std::uint64_t v, int n) {
    std::string s;
    for (int k = 0; k < n; ++k) s.push_back(static_cast<char>((v >> (8 * k)) & 0xFF));
    return s;
}
std::string bin_string(std::string_view s) { return le(s.size(), 8) + std::string(s); }
std::string binary_checkpoint(const std::vector<tf::io::tensor_info>& infos, const std::string& data,
                              const std::vector<std::string>& shards = {},
                              std::string_view magic = tf::io::detail::checkpoint_magic) {
    std::string b(1, '\x01');
    b += bin_string(magic) + le(tf::io::checkpoint_format_version, 4) + le(shards.size(), 8);
    for (const auto& s : shards) b += bin_string(s);
    b += le(infos.size(), 8);
    for (const auto& t : infos) {
        b += bin_string(t.name) + le(static_cast<std::uint8_t>(t.dtype), 1) + le(t.shape.rank, 4);
        for (std::size_t i = 0; i < t.shape.rank; ++i) b += le(static_cast<std::uint64_t>(t.shape.d[i]), 8);
        b += le(t.bytes, 8) + le(t.crc32c, 4) + le(t.shard, 4) + le(tf::io::detail::record_crc(t), 4);
    }
    return b + data + bin_string(tf::io::detail::end_marker);
}
// A JSON checkpoint with one tensor whose fields are given as JSON text.
std::string json_checkpoint(const std::string& name, const std::string& dtype, const std::string& shape,
                            std::uint64_t bytes, std::uint32_t crc, const std::string& values) {
    return R"({"format": "typeflow-checkpoint", "version": 1, "shards": [], "tensors": [{"name": ")" + name +
           R"(", "dtype": ")" + dtype + R"(", "shape": )" + shape + R"(, "bytes": )" + std::to_string(bytes) +
           R"(, "crc32c": )" + std::to_string(crc) + R"(, "shard": 0, "values": )" + values +
           R"(}], "end": "typeflow-checkpoint-end"})";
}
constexpr tf::index_t two_pow(int k) { return tf::index_t{1} << k; }
}  // namespace

TEST_CASE("io checkpoint: the binary test helper writes what write_checkpoint writes", "[io][checkpoint]") {
    iotest::temp_dir dir;
    const double v[2] = {1.5, -2.25};
    tf::io::write_checkpoint(dir / "a.tfckpt", {{"v", tf::dtype::float64, tf::dims{2}, v}});
    const std::string data(reinterpret_cast<const char*>(v), sizeof v);
    const tf::io::tensor_info t{"v", tf::dtype::float64, tf::dims{2}, 16, tf::io::crc32c(v, sizeof v), 0};
    CHECK(iotest::read_file(dir / "a.tfckpt") == binary_checkpoint({t}, data));
}

TEST_CASE("io checkpoint: byte counts past 2^63 - 1 and extents whose product overflows are refused", "[io][checkpoint]") {
    using tf::io::detail::byte_count;
    // float64 with 2^61 + 1 elements: 2^64 + 8 bytes, which wraps to 8 in 64 bits
    CHECK_FALSE(byte_count(tf::dtype::float64, tf::dims{two_pow(61) + 1}));
    CHECK_FALSE(byte_count(tf::dtype::float64, tf::dims{two_pow(60)}));  // 2^63 bytes
    CHECK(byte_count(tf::dtype::float64, tf::dims{two_pow(60) - 1}) == (std::uint64_t{1} << 63) - 8);
    CHECK(byte_count(tf::dtype::boolean, tf::dims{std::numeric_limits<tf::index_t>::max()}) ==
          static_cast<std::uint64_t>(std::numeric_limits<tf::index_t>::max()));
    // the element count itself wraps (2^64 elements), with or without a later zero extent
    CHECK_FALSE(byte_count(tf::dtype::boolean, tf::dims{two_pow(32), two_pow(32)}));
    CHECK_FALSE(byte_count(tf::dtype::int32, tf::dims{two_pow(32), two_pow(32), 0}));
    CHECK_FALSE(byte_count(tf::dtype::int32, tf::dims{3, two_pow(62)}));
    CHECK(byte_count(tf::dtype::int32, tf::dims{0, two_pow(40), two_pow(20)}) == 0u);
    CHECK_FALSE(byte_count(tf::dtype::int32, tf::dims{2, -1}));
    CHECK(byte_count(tf::dtype::int32, tf::dims{}) == 4u);

    iotest::temp_dir dir;
    const double one = 1.5;
    SECTION("the writer refuses such a tensor, naming the file and the tensor") {
        for (const tf::dims& d : {tf::dims{two_pow(61) + 1}, tf::dims{two_pow(32), two_pow(32), 0}, tf::dims{-2}}) {
            const std::string path = dir / "w.tfckpt";
            const auto msg = error_of([&] { tf::io::write_checkpoint(path, {{"huge", tf::dtype::float64, d, &one}}); });
            INFO(msg);
            CHECK_THAT(msg, Catch::Contains(path) && Catch::Contains("'huge'") && Catch::Contains("cannot be written"));
            CHECK_FALSE(std::filesystem::exists(path));
            const auto imsg = error_of([&] {
                tf::io::write_checkpoint_index(dir / "w.index", {"s.tfckpt"}, {{"huge", tf::dtype::float64, d, 0, 0, 0}});
            });
            CHECK_THAT(imsg, Catch::Contains(dir / "w.index") && Catch::Contains("'huge'"));
        }
        const auto msg = error_of([&] { tf::io::write_checkpoint(dir / "n.tfckpt", {{"null", tf::dtype::float64, tf::dims{1}, nullptr}}); });
        CHECK_THAT(msg, Catch::Contains("'null'") && Catch::Contains("no data"));
    }
    SECTION("the reader refuses a record whose byte count wrapped, and a restore changes nothing") {
        const std::string data(reinterpret_cast<const char*>(&one), 8);
        const tf::io::tensor_info wrapped{"x", tf::dtype::float64, tf::dims{two_pow(61) + 1}, 8, tf::io::crc32c(&one, 8), 0};
        const std::string bin = dir / "wrapped.tfckpt", json = dir / "wrapped.json";
        iotest::write_file(bin, binary_checkpoint({wrapped}, data));
        iotest::write_file(json, json_checkpoint("x", "float64", "[2305843009213693953]", 8, wrapped.crc32c, "[1.5]"));
        // the element count wraps: 2^32 x 2^32 int32 (0 elements, 0 bytes when it wraps)
        const std::string bin2 = dir / "wrapped2.tfckpt", json2 = dir / "wrapped2.json";
        iotest::write_file(bin2, binary_checkpoint({{"x", tf::dtype::int32, tf::dims{two_pow(32), two_pow(32)}, 0, 0, 0}}, ""));
        iotest::write_file(json2, json_checkpoint("x", "int32", "[4294967296, 4294967296]", 0, 0, "[]"));
        for (const auto& file : {bin, json, bin2, json2}) {
            INFO(file);
            const auto rmsg = error_of([&] { tf::io::checkpoint_reader r(file); });
            CHECK_THAT(rmsg, Catch::Contains(file) && Catch::Contains("tensor 'x'") && Catch::Contains("exceeds"));
            CHECK_FALSE(tf::io::is_complete_checkpoint(file));
            tf::tensor<double> t({1}, {7.0});
            tf::tensor<std::int32_t> i({1}, {7});
            tf::io::saver s;
            if (file == bin || file == json) s.add("x", t, tf::dims{tf::dyn});
            else s.add("x", i, tf::dims{tf::dyn, tf::dyn});
            const auto msg = error_of([&] { s.restore(file); });
            CHECK_THAT(msg, Catch::Contains(file) && Catch::Contains("'x'") && Catch::Contains("no variable was changed"));
            CHECK(t.dims() == tf::dims{1});
            CHECK(t[0] == 7.0);
            CHECK(i.dims() == tf::dims{1});
        }
    }
}

TEST_CASE("io checkpoint: JSON nested deeper than max_json_depth is refused before parsing, latest_checkpoint skips it", "[io][checkpoint]") {
    iotest::temp_dir dir;
    tf::variable<"v", std::int64_t, tf::shape<3>> v;
    v.value()[0] = 11;
    tf::io::saver s(v);
    const auto good = s.save(dir.path, 1);
    // 300,000 levels (a 300 KB file) overflowed the stack in RapidJSON's
    // recursive parser; 150,000 levels ended on an assertion: either killed
    // every process that looked for its latest checkpoint.
    iotest::write_file(dir / "ckpt-2.json", R"({"format": )" + std::string(150000, '[') + std::string(150000, ']') + "}");
    iotest::write_file(dir / "ckpt-3.json", R"({"format": )" + std::string(300000, '['));
    for (const char* f : {"ckpt-2.json", "ckpt-3.json"}) {
        const auto msg = error_of([&] { tf::io::checkpoint_reader r(dir / f); });
        CHECK_THAT(msg, Catch::Contains(dir / f) && Catch::Contains("nested more than 64 levels"));
        CHECK_FALSE(tf::io::is_complete_checkpoint(dir / f));
    }
    CHECK(tf::io::list_checkpoints(dir.path).size() == 3);  // listed (complete or not), never parsed
    CHECK(tf::io::latest_checkpoint(dir.path) == good);
    v.value()[0] = 5;
    CHECK_THAT(error_of([&] { s.restore(dir / "ckpt-3.json"); }), Catch::Contains("nested") && Catch::Contains("'v'"));
    CHECK(v.value()[0] == 5);
    s.restore(*tf::io::latest_checkpoint(dir.path));
    CHECK(v.value()[0] == 11);

    // The limit itself: 64 levels get to the parser (and fail as no checkpoint), 65 do not.
    const auto at_limit = R"({"format": )" + std::string(63, '[') + std::string(63, ']') + "}";
    REQUIRE(typeflow::detail::json_nesting_depth(at_limit) == 64);
    iotest::write_file(dir / "limit.json", at_limit);
    const auto msg64 = error_of([&] { tf::io::checkpoint_reader r(dir / "limit.json"); });
    CHECK_THAT(msg64, Catch::Contains(dir / "limit.json") && !Catch::Contains("nested"));
    iotest::write_file(dir / "limit.json", R"({"format": )" + std::string(64, '[') + std::string(64, ']') + "}");
    CHECK_THAT(error_of([&] { tf::io::checkpoint_reader r(dir / "limit.json"); }), Catch::Contains("nested"));
}

TEST_CASE("io checkpoint: rewrite_zero_numbers turns zeros with an exponent into 0.0 and -0.0, nothing else", "[io][checkpoint]") {
    std::string t = R"([0e50, -0.000E+9, 0.0, -0.0, 0, -0, 10e5, 0.5e3, 1.0e-400, 00e5, "0e50", "a\"0e5\\", -Infinity, NaN, 0e, 0.e5, 0E-0])";
    CHECK(tf::io::detail::rewrite_zero_numbers(t) == 4);
    CHECK(t == R"([0.0 , -0.0     , 0.0, -0.0, 0, -0, 10e5, 0.5e3, 1.0e-400, 00.0, "0e50", "a\"0e5\\", -Infinity, NaN, 0e, 0.e5, 0.0 ])");
    std::string f = "[0.000000000000000000000000000000]";  // 30 zeros: 10^-30 x 0 goes the same way
    CHECK(tf::io::detail::rewrite_zero_numbers(f) == 1);
    CHECK(f == "[0.0" + std::string(29, ' ') + "]");
    // What the writer writes never changes: saved checkpoints round-trip bit for bit.
    iotest::temp_dir dir;
    all_dtypes m;
    m.fill(4);
    m.saver({.file_format = tf::io::format::json}).write(dir / "a.json");
    std::string text = iotest::read_file(dir / "a.json");
    const std::string before = text;
    CHECK(tf::io::detail::rewrite_zero_numbers(text) == 0);
    CHECK(text == before);
}

TEST_CASE("io checkpoint: a JSON checkpoint holding 0e50 restores zeros of the right sign", "[io][checkpoint]") {
    // RapidJSON 1.1.0's full-precision mode has undefined behaviour on such a
    // number (Tencent/rapidjson#1249); the reader rewrites it to 0.0 / -0.0.
    iotest::temp_dir dir;
    const double want[5] = {0.0, -0.0, 0.0, 0.0, 2.5};
    const std::string file = dir / "zeros.json";
    // the tensor's name holds a zero with an exponent too: strings are left alone
    iotest::write_file(file, json_checkpoint("0e50", "float64", "[5]", 40, tf::io::crc32c(want, sizeof want),
                                             "[0e50, -0.000E+9, 0.0e-400, 0E-0, 25e-1]"));
    tf::tensor<double> t({1}, {7.0});
    tf::io::saver s;
    s.add("0e50", t, tf::dims{tf::dyn});
    s.restore(file);
    REQUIRE(t.dims() == tf::dims{5});
    CHECK(std::memcmp(t.data(), want, sizeof want) == 0);
    CHECK(std::signbit(t[1]));
    CHECK_FALSE(std::signbit(t[0]));
    // float32 the same way; a long zero fraction without an exponent is the same case
    const float wantf[3] = {-0.0f, 0.0f, -0.0f};
    iotest::write_file(file, json_checkpoint("f", "float32", "[3]", 12, tf::io::crc32c(wantf, sizeof wantf),
                                             "[-0e99, 0e999, -0.000000000000000000000000000000]"));
    tf::tensor<float> f({1}, {7.0f});
    tf::io::saver sf;
    sf.add("f", f, tf::dims{tf::dyn});
    sf.restore(file);
    REQUIRE(f.dims() == tf::dims{3});
    CHECK(std::memcmp(f.data(), wantf, sizeof wantf) == 0);
}

TEST_CASE("io checkpoint: JSON values outside their dtype's range are refused naming the file and the tensor", "[io][checkpoint]") {
    iotest::temp_dir dir;
    const std::string file = dir / "range.json";
    iotest::write_file(file, json_checkpoint("f", "float32", "[2]", 8, 0, "[1.0, 1e300]"));
    CHECK_THAT(error_of([&] { tf::io::checkpoint_reader r(file); }),
               Catch::Contains(file) && Catch::Contains("'f'") && Catch::Contains("out of the range"));
    iotest::write_file(file, json_checkpoint("i", "int32", "[1]", 4, 0, "[4294967296]"));
    CHECK_THAT(error_of([&] { tf::io::checkpoint_reader r(file); }),
               Catch::Contains(file) && Catch::Contains("'i'") && Catch::Contains("out of the range"));
    // infinities and NaN are float32 values
    const float inf[2] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity()};
    iotest::write_file(file, json_checkpoint("f", "float32", "[2]", 8, tf::io::crc32c(inf, sizeof inf), "[Infinity, -Infinity]"));
    tf::io::checkpoint_reader r(file);
    std::vector<std::byte> got(8);
    r.read([&](std::size_t) { return got.data(); });
    CHECK(std::memcmp(got.data(), inf, 8) == 0);
}

TEST_CASE("io checkpoint: every reader error names the file, a directory is reported as one", "[io][checkpoint]") {
    iotest::temp_dir dir;
    tf::variable<"v", float, tf::shape<2>> v{tf::init::constant{3}};
    tf::io::saver s(v);
    const auto good = s.save(dir.path, 1);
    const auto bytes = iotest::read_file(good);

    // a corrupt string length (the format tag's), read before any record
    std::string b = bytes;
    b[1] = static_cast<char>(0xE8);  // 1000 instead of 19
    b[2] = 0x03;
    iotest::write_file(dir / "len.tfckpt", b);
    CHECK_THAT(error_of([&] { tf::io::checkpoint_reader r(dir / "len.tfckpt"); }),
               Catch::Contains(dir / "len.tfckpt") && Catch::Contains("1000 bytes"));
    // a corrupt name length inside a record
    const auto at = bytes.find(std::string("\x01\0\0\0\0\0\0\0v", 9));
    REQUIRE(at != std::string::npos);
    b = bytes;
    b[at + 6] = 0x10;  // 2^48 bytes
    iotest::write_file(dir / "name.tfckpt", b);
    CHECK_THAT(error_of([&] { tf::io::checkpoint_reader r(dir / "name.tfckpt"); }),
               Catch::Contains(dir / "name.tfckpt") && Catch::Contains("corrupt length"));

    // a directory where a checkpoint file should be: said so, not "empty"
    std::filesystem::create_directory(dir / "ckpt-2.tfckpt");
    const auto msg = error_of([&] { tf::io::checkpoint_reader r(dir / "ckpt-2.tfckpt"); });
    CHECK_THAT(msg, Catch::Contains(dir / "ckpt-2.tfckpt") && Catch::Contains("is a directory") && !Catch::Contains("empty"));
    CHECK_THAT(error_of([&] { s.restore(dir / "ckpt-2.tfckpt"); }), Catch::Contains("is a directory") && Catch::Contains("'v'"));
    CHECK(tf::io::latest_checkpoint(dir.path) == good);
    // the same for event files
    CHECK_THAT(error_of([&] { tf::io::read_events(dir / "ckpt-2.tfckpt"); }), Catch::Contains("is a directory"));
}

TEST_CASE("io checkpoint: a shard name must be a plain file name in the index's directory", "[io][checkpoint]") {
    iotest::temp_dir dir;
    all_dtypes m;
    m.fill(6);
    const snapshot saved(m);
    auto s = m.saver({.file_format = tf::io::format::json, .shards = 2});
    const auto index = s.save(dir.path, 5);
    const auto text = iotest::read_file(index);
    const std::string shard0 = "ckpt-5.shard-00000-of-00002.json";
    REQUIRE(text.find(shard0) != std::string::npos);
    const std::string base = dir.path.substr(dir.path.find_last_of('/') + 1);
    m.fill(8);
    const snapshot before(m);
    // each one names a file that exists (the shard itself, through another path): still refused
    std::filesystem::create_directory(dir / "sub");
    std::filesystem::copy_file(dir / shard0, dir / ("sub/" + shard0));
    for (const std::string& bad : {"../" + base + "/" + shard0, dir.path + "/" + shard0, "sub/" + shard0, std::string(".."),
                                   std::string("."), std::string("")}) {
        INFO(bad);
        std::string t = text;
        t.replace(t.find(shard0), shard0.size(), bad);
        const std::string file = dir / "ckpt-6.index";
        iotest::write_file(file, t);
        const auto msg = error_of([&] { tf::io::checkpoint_reader r(file); });
        CHECK_THAT(msg, Catch::Contains(file) && Catch::Contains("'" + bad + "'") && Catch::Contains("plain file name"));
        CHECK(tf::io::latest_checkpoint(dir.path) == index);
        CHECK_THAT(error_of([&] { s.restore(file); }), Catch::Contains(file) && Catch::Contains("plain file name"));
        CHECK(before.equals(m));
        // the writer refuses such a name too
        CHECK_THAT(error_of([&] { tf::io::write_checkpoint_index(dir / "w.index", {bad}, {}); }),
                   Catch::Contains(dir / "w.index") && Catch::Contains("plain file name"));
        std::filesystem::remove(file);
    }
    // the binary index the same
    const std::string file = dir / "ckpt-7.index";
    iotest::write_file(file, binary_checkpoint({}, "", {"../" + base + "/x.tfckpt"}, tf::io::detail::index_magic));
    CHECK_THAT(error_of([&] { tf::io::checkpoint_reader r(file); }),
               Catch::Contains(file) && Catch::Contains("'../" + base + "/x.tfckpt'") && Catch::Contains("plain file name"));
    CHECK(tf::io::latest_checkpoint(dir.path) == index);
    s.restore(index);
    CHECK(saved.equals(m));
}

TEST_CASE("io checkpoint: a restore allocates a sharded tensor's buffer only once its shard is open", "[io][checkpoint]") {
    // An index (which holds no bytes) claims a 4 TiB tensor in a shard that is
    // missing, or that holds another shape: a tf::error, nothing allocated for it.
    iotest::temp_dir dir;
    const tf::io::tensor_info huge{"x", tf::dtype::float32, tf::dims{two_pow(40)}, std::uint64_t{4} << 40, 0, 0};
    const std::string index = dir / "ckpt-1.index";
    iotest::write_file(index, binary_checkpoint({huge}, "", {"ckpt-1.shard-00000-of-00001.tfckpt"}, tf::io::detail::index_magic));
    tf::tensor<float> t({2}, {1.0f, 2.0f});
    tf::io::saver s;
    s.add("x", t, tf::dims{tf::dyn});
    CHECK_THAT(error_of([&] { s.restore(index); }),
               Catch::Contains(index) && Catch::Contains("ckpt-1.shard-00000-of-00001.tfckpt") && Catch::Contains("'x'"));
    const float two[2] = {3.0f, 4.0f};
    tf::io::write_checkpoint(dir / "ckpt-1.shard-00000-of-00001.tfckpt", {{"x", tf::dtype::float32, tf::dims{2}, two}});
    CHECK_THAT(error_of([&] { s.restore(index); }), Catch::Contains("disagrees with the index"));
    CHECK(t.dims() == tf::dims{2});
    CHECK(t[0] == 1.0f);
}
