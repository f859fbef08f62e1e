// tf::io checkpoints: CRC-32C against published check values, round trips of
// every dtype in binary and JSON, dyn-bound shapes, sharding, rotation and
// latest_checkpoint, and every kind of bad input (each error names the file
// and the variable, and leaves every variable as it was).
#include <catch2/catch.hpp>

#include "io_support.hpp"

#include <typeflow/io/saver.hpp>
#include <typeflow/typeflow.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>

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
