// Summaries and TensorBoard event files: the protobuf bytes of an Event
// against a hand encoding from the wire-format spec, TFRecord framing against
// a bitwise CRC, the writer read back by the project's reader (and every CRC
// checked), corruption detected, and the CSV / JSON-lines files parsed with
// RapidJSON and by hand.
#include <catch2/catch.hpp>

#include "io_support.hpp"

#include <typeflow/io/summary.hpp>

#include <rapidjson/document.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace tf = typeflow;

namespace {
std::uint32_t crc_ref(const std::string& s) {  // bit-at-a-time CRC-32C
    std::uint32_t c = 0xFFFFFFFFu;
    for (unsigned char b : s) {
        c ^= b;
        for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}
std::uint32_t masked_ref(std::uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }
std::string le(std::uint64_t v, int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return s;
}
std::string bytes(std::initializer_list<int> b) {
    std::string s;
    for (int x : b) s.push_back(static_cast<char>(x));
    return s;
}
std::vector<std::string> lines_of(const std::string& p) {
    std::istringstream in(iotest::read_file(p));
    std::vector<std::string> out;
    for (std::string l; std::getline(in, l);) out.push_back(l);
    return out;
}
std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::string cur;
    for (char c : s) {
        if (c == sep) {
            out.push_back(cur);
            cur.clear();
        } else cur += c;
    }
    out.push_back(cur);
    return out;
}
std::string only_event_file(const std::string& dir) {
    std::string found;
    for (const auto& de : std::filesystem::directory_iterator(dir))
        if (de.path().filename().string().rfind("events.out.tfevents.", 0) == 0) {
            REQUIRE(found.empty());
            found = de.path().string();
        }
    REQUIRE_FALSE(found.empty());
    return found;
}
}  // namespace

TEST_CASE("io events: Event protobuf bytes equal a hand encoding of the wire format", "[io][summary]") {
    tf::io::event e;
    e.wall_time = 1.5;
    e.step = 3;
    e.summary.push_back({"a", 2.0f, std::nullopt});
    // Event: field 1 fixed64 (tag 0x09) 1.5; field 2 varint (0x10) 3; field 5 bytes (0x2A) Summary
    // Summary: field 1 bytes (0x0A) Value; Value: tag (0x0A 0x01 'a'), simple_value fixed32 (0x15) 2.0f
    const std::string want = bytes({0x09, 0, 0, 0, 0, 0, 0, 0xF8, 0x3F, 0x10, 0x03, 0x2A, 0x0A, 0x0A, 0x08, 0x0A, 0x01,
                                    'a', 0x15, 0, 0, 0, 0x40});
    CHECK(tf::io::encode_event(e) == want);

    tf::io::event v;
    v.wall_time = 0;
    v.step = 300;  // varint 0xAC 0x02
    v.file_version = "brain.Event:2";
    const std::string vb = tf::io::encode_event(v);
    CHECK(vb == bytes({0x09, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0xAC, 0x02, 0x1A, 13}) + "brain.Event:2");

    tf::io::event h;
    h.wall_time = 2;
    h.summary.push_back({"h", std::nullopt, tf::io::histogram_data{1, 2, 3, 4, 5, {1.5, 2}, {1, 2}}});
    const auto d = [](double x) {
        std::uint64_t b;
        std::memcpy(&b, &x, 8);
        return le(b, 8);
    };
    std::string histo = "\x09" + d(1) + "\x11" + d(2) + "\x19" + d(3) + "\x21" + d(4) + "\x29" + d(5) + "\x32\x10" +
                        d(1.5) + d(2) + "\x3A\x10" + d(1) + d(2);
    std::string value = bytes({0x0A, 0x01, 'h', 0x2A, static_cast<int>(histo.size())}) + histo;
    std::string summary = bytes({0x0A, static_cast<int>(value.size())}) + value;
    CHECK(tf::io::encode_event(h) == "\x09" + d(2) + bytes({0x2A, static_cast<int>(summary.size())}) + summary);

    // and the decoder inverts the encoder
    const auto back = tf::io::decode_event(tf::io::encode_event(h));
    REQUIRE(back.summary.size() == 1);
    REQUIRE(back.summary[0].histo);
    CHECK(back.summary[0].histo->bucket_limit == std::vector<double>{1.5, 2});
    CHECK(back.summary[0].histo->bucket == std::vector<double>{1, 2});
    CHECK(back.summary[0].histo->sum_squares == 5);
    CHECK(tf::io::decode_event(vb).step == 300);
    CHECK_THROWS_AS(tf::io::decode_event(want.substr(0, want.size() - 2)), tf::error);
}

TEST_CASE("io events: TFRecord framing is length, masked CRC of the length, data, masked CRC of the data", "[io][summary]") {
    const std::string data = "hello, tensorboard";
    const std::string len = le(data.size(), 8);
    const std::string want = len + le(masked_ref(crc_ref(len)), 4) + data + le(masked_ref(crc_ref(data)), 4);
    CHECK(tf::io::tfrecord_frame(data) == want);
    CHECK(tf::io::tfrecord_frame("") == le(0, 8) + le(masked_ref(crc_ref(le(0, 8))), 4) + le(masked_ref(crc_ref("")), 4));
}

TEST_CASE("io summary: scalars and histograms go to an event file, CSV and JSON lines that read back", "[io][summary]") {
    iotest::temp_dir dir;
    std::vector<double> values;
    for (int i = 0; i < 100; ++i) values.push_back(0.1 * i);
    std::string event_path;
    {
        tf::io::summary_writer w(dir.path, {.histogram_buckets = 10});
        for (int step = 0; step < 10; ++step) w.scalar("loss", std::pow(0.5, step), step);
        w.scalar("odd,tag \"q\"", -1.25, 4);
        w.histogram("weights", values, 3);
        tf::tensor<float> t({2, 2}, {1, 2, 2, 3});
        w.histogram("tensor", t, 7);
        w.flush();
        event_path = w.event_file();
    }
    CHECK(event_path == only_event_file(dir.path));
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    CHECK_THAT(event_path, Catch::EndsWith(std::string(".") + host));

    // The project's reader: every CRC checked, the file version first.
    const auto events = tf::io::read_events(event_path);
    REQUIRE(events.size() == 1 + 10 + 1 + 2);
    CHECK(events[0].file_version == "brain.Event:2");
    CHECK(events[0].summary.empty());
    for (int step = 0; step < 10; ++step) {
        const auto& e = events[static_cast<std::size_t>(1 + step)];
        CHECK(e.step == step);
        CHECK(e.wall_time > 1.6e9);
        REQUIRE(e.summary.size() == 1);
        CHECK(e.summary[0].tag == "loss");
        REQUIRE(e.summary[0].simple_value);
        CHECK(*e.summary[0].simple_value == static_cast<float>(std::pow(0.5, step)));
    }
    const auto& he = events[12];
    CHECK(he.step == 3);
    REQUIRE(he.summary.size() == 1);
    CHECK(he.summary[0].tag == "weights");
    REQUIRE(he.summary[0].histo);
    const auto& h = *he.summary[0].histo;
    CHECK(h.num == 100);
    CHECK(h.min == 0);
    CHECK(h.max == Approx(9.9));
    CHECK(h.sum == Approx(495.0));
    CHECK(h.sum_squares == Approx(3283.5));  // sum of (0.1 i)^2, i < 100
    REQUIRE(h.bucket.size() == 10);
    for (double c : h.bucket) CHECK(c == 10);
    CHECK(h.bucket_limit.back() == h.max);
    const auto& te = *events[13].summary[0].histo;
    CHECK(te.num == 4);
    CHECK(te.sum == 8);

    // CSV: a header, one row per scalar; a tag with a comma and quotes is quoted.
    const auto rows = lines_of(dir / "scalars.csv");
    REQUIRE(rows.size() == 12);
    CHECK(rows[0] == "wall_time,step,tag,value");
    const auto r3 = split(rows[4], ',');
    REQUIRE(r3.size() == 4);
    CHECK(r3[1] == "3");
    CHECK(r3[2] == "loss");
    CHECK(std::stod(r3[3]) == 0.125);
    CHECK_THAT(rows[11], Catch::EndsWith(",4,\"odd,tag \"\"q\"\"\",-1.25"));
    const auto hrows = lines_of(dir / "histograms.csv");
    REQUIRE(hrows.size() == 3);
    const auto hr = split(hrows[1], ',');
    REQUIRE(hr.size() == 10);
    CHECK(hr[2] == "weights");
    CHECK(std::stod(hr[5]) == 100);
    CHECK(split(hr[9], ' ') == std::vector<std::string>(10, "10"));

    // JSON lines, parsed by RapidJSON.
    const auto jl = lines_of(dir / "summaries.jsonl");
    REQUIRE(jl.size() == 13);
    rapidjson::Document d;
    d.Parse(jl[2].c_str());
    REQUIRE_FALSE(d.HasParseError());
    CHECK(d["step"].GetInt64() == 2);
    CHECK(std::string(d["tag"].GetString()) == "loss");
    CHECK(d["value"].GetDouble() == 0.25);
    d.Parse(jl[10].c_str());
    REQUIRE_FALSE(d.HasParseError());
    CHECK(std::string(d["tag"].GetString()) == "odd,tag \"q\"");
    d.Parse(jl[11].c_str());
    REQUIRE_FALSE(d.HasParseError());
    REQUIRE(d.HasMember("histogram"));
    CHECK(d["histogram"]["num"].GetDouble() == 100);
    CHECK(d["histogram"]["bucket"].Size() == 10);
    CHECK(d["histogram"]["sum"].GetDouble() == Approx(495.0));

    // A resumed job appends to the CSV and JSON lines (one header) and starts a new event file.
    {
        tf::io::summary_writer w(dir.path);
        w.scalar("loss", std::nan(""), 10);
        w.flush();
        CHECK(w.event_file() != event_path);
    }
    const auto rows2 = lines_of(dir / "scalars.csv");
    REQUIRE(rows2.size() == 13);
    CHECK_THAT(rows2[12], Catch::EndsWith(",10,loss,nan"));
    const auto jl2 = lines_of(dir / "summaries.jsonl");
    d.Parse(jl2.back().c_str());
    REQUIRE_FALSE(d.HasParseError());
    CHECK(std::string(d["value"].GetString()) == "NaN");

    // A NaN in a histogram is an error naming the tag and the step.
    tf::io::summary_writer w2(dir / "other", {.tensorboard = false});
    CHECK_THROWS_WITH(w2.histogram("grad", std::vector<double>{1.0, std::nan("")}, 5),
                      Catch::Contains("'grad'") && Catch::Contains("step 5"));
}

TEST_CASE("io events: a corrupt or truncated event file is an error naming the file and the offset", "[io][summary]") {
    iotest::temp_dir dir;
    std::string path;
    {
        tf::io::event_file_writer w(dir.path);
        w.add_scalar("x", 1.0f, 1);
        w.add_scalar("x", 2.0f, 2);
        path = w.path();
    }
    const auto good = iotest::read_file(path);
    REQUIRE(tf::io::read_events(path).size() == 3);
    const std::size_t second = tf::io::tfrecord_frame(tf::io::encode_event(tf::io::read_events(path)[0])).size();
    iotest::flip_byte(path, second + 14);  // inside the second record's data
    CHECK_THROWS_WITH(tf::io::read_events(path), Catch::Contains(path) && Catch::Contains("byte " + std::to_string(second)) &&
                                                     Catch::Contains("data CRC"));
    iotest::write_file(path, good);
    iotest::flip_byte(path, second + 2);  // its length
    CHECK_THROWS_WITH(tf::io::read_events(path), Catch::Contains("length CRC"));
    iotest::write_file(path, good.substr(0, good.size() - 3));
    CHECK_THROWS_WITH(tf::io::read_events(path), Catch::Contains(path) && Catch::Contains("truncated"));
}
