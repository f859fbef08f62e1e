// Cluster spec parsing: ranks, roles, and one clear error per malformed input.
#include <typeflow/distributed/cluster_spec.hpp>

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <unistd.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

using namespace typeflow::dist;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

namespace {
const char* good = R"({"cluster": {"chief": ["127.0.0.1:5000"], "worker": ["127.0.0.1:5001", "localhost:5002"],
                        "ps": ["[::1]:5003"]},
                       "task": {"type": "worker", "index": 1}, "secret": "s3", "environment": "cloud",
                       "options": {"heartbeat_timeout_ms": 1500, "segment_bytes": 1024}})";

std::string parse_error(const std::string& json) {
    try {
        cluster_spec::parse(json, "SPEC");
    } catch (const error& e) {
        return e.what();
    }
    return "<no error>";
}
} // namespace

TEST_CASE("a well-formed spec gives ranks chief, workers, ps") {
    auto s = cluster_spec::parse(good);
    CHECK(s.size() == 4);
    CHECK(s.rank() == 2);
    CHECK(s.task.name() == "worker:1");
    CHECK(s.task_of(0).name() == "chief:0");
    CHECK(s.task_of(3).name() == "ps:0");
    CHECK(s.rank_of({role::ps, 0}) == 3);
    CHECK(s.address_of(2) == "localhost:5002");
    CHECK(s.secret == "s3");
    CHECK(s.options.heartbeat_timeout == std::chrono::milliseconds(1500));
    CHECK(s.options.segment_bytes == 1024);
    CHECK(s.options.adaptive_spin); // the default
    CHECK(s.options.spin_wait == std::chrono::microseconds(100));
    auto f = cluster_spec::parse(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0},
                                     "options": {"adaptive_spin": false, "spin_wait_us": 7}})");
    CHECK_FALSE(f.options.adaptive_spin);
    CHECK(f.options.spin_wait == std::chrono::microseconds(7));
    CHECK(split_address("[::1]:5003", "x") == std::pair<std::string, unsigned short>{"::1", 5003});
    CHECK_THROWS_WITH(s.task_of(4), Contains("rank 4 out of range"));
    CHECK_THROWS_WITH(s.rank_of({role::ps, 1}), Contains("ps:1 is not in the cluster"));
}

TEST_CASE("round trip through to_json") {
    auto s = cluster_spec::parse(good);
    auto t = cluster_spec::parse(s.to_json());
    CHECK(t.chief == s.chief);
    CHECK(t.worker == s.worker);
    CHECK(t.ps == s.ps);
    CHECK(t.task == s.task);
}

TEST_CASE("without a chief, worker 0 is rank 0") {
    auto s = cluster_spec::parse(R"({"cluster": {"worker": ["h:1", "h:2"]}, "task": {"type": "worker", "index": 0}})");
    CHECK(s.rank() == 0);
    CHECK(s.size() == 2);
}

TEST_CASE("malformed specs give errors naming the source and field") {
    struct C { const char* json; const char* message; };
    const C cases[] = {
        {"", "SPEC: invalid JSON at line 1 column 1"},
        {"{\"cluster\": {\"worker\": [\"h:1\"]},\n \"task\": {\"type\": \"worker\" \"index\": 0}}", "invalid JSON at line 2 column 28"},
        {"{} x", "invalid JSON"},
        {"[]", "expected a JSON object, got an array"},
        {R"({"task": {"type": "worker", "index": 0}})", "\"cluster\" is missing"},
        {R"({"cluster": {"worker": ["h:1"]}})", "\"task\" is missing"},
        {R"({"cluster": [], "task": {"type": "worker", "index": 0}})", "\"cluster\" must be an object, got an array"},
        {R"({"cluster": {"workers": ["h:1"]}, "task": {"type": "worker", "index": 0}})", "cluster.workers: unknown role"},
        {R"({"cluster": {"worker": "h:1"}, "task": {"type": "worker", "index": 0}})", "cluster.worker: must be an array"},
        {R"({"cluster": {"worker": [5]}, "task": {"type": "worker", "index": 0}})", "cluster.worker[0]: must be a \"host:port\" string, got a number"},
        {R"({"cluster": {"worker": ["h:1", "nohost"]}, "task": {"type": "worker", "index": 0}})", "cluster.worker[1]: missing port"},
        {R"({"cluster": {"worker": [":80"]}, "task": {"type": "worker", "index": 0}})", "empty host"},
        {R"({"cluster": {"worker": ["h:0"]}, "task": {"type": "worker", "index": 0}})", "port out of range"},
        {R"({"cluster": {"worker": ["h:65536"]}, "task": {"type": "worker", "index": 0}})", "port out of range"},
        {R"({"cluster": {"worker": ["h:8x"]}, "task": {"type": "worker", "index": 0}})", "port is not a number"},
        {R"({"cluster": {"worker": ["::1:80"]}, "task": {"type": "worker", "index": 0}})", "IPv6 host must be in brackets"},
        {R"({"cluster": {"worker": ["h:1", "h:1"]}, "task": {"type": "worker", "index": 0}})", "address h:1 is used by two tasks: worker:0 (cluster.worker[0] \"h:1\") and worker:1 (cluster.worker[1] \"h:1\")"},
        {R"({"cluster": {"chief": ["h:1", "h:2"]}, "task": {"type": "chief", "index": 0}})", "cluster.chief has 2 entries"},
        {R"({"cluster": {"ps": ["h:1"]}, "task": {"type": "ps", "index": 0}})", "needs a chief or at least one worker"},
        {R"({"cluster": {}, "task": {"type": "ps", "index": 0}})", "the cluster has no tasks"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "boss", "index": 0}})", "task.type \"boss\" is not chief, worker or ps"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": -1}})", "task.index must be a non-negative integer"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 1.5}})", "task.index must be a non-negative integer"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker"}})", "task.index is missing"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"index": 0}})", "task.type is missing"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 1}})", "task worker:1 is not in the cluster (cluster.worker has 1 entries)"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "ps", "index": 0}})", "task ps:0 is not in the cluster"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0, "rank": 3}})", "task: unknown key \"rank\""},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "extra": 1})", "unknown key \"extra\""},
        {R"({"cluster": {"worker": ["h:1"]}, "cluster": {"worker": ["h:2"]}, "task": {"type": "worker", "index": 0}})", "duplicate key \"cluster\""},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "secret": 7})", "\"secret\" must be a string"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "options": {"heartbeat_timeout_ms": 0}})", "options.heartbeat_timeout_ms is 0, outside the allowed range 1..2147483647 ms"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "options": {"speed": 1}})", "options: unknown key \"speed\""},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "options": {"adaptive_spin": 1}})", "options.adaptive_spin must be true or false"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "options": {"spin_wait_us": true}})", "options.spin_wait_us must be an integer in 0..2147483647 us, got a boolean"},
        {R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "options": {"segment_bytes": 9, "max_frame_bytes": 8}})", "options.segment_bytes exceeds options.max_frame_bytes (9 > 8)"},
    };
    for (const auto& c : cases) {
        INFO(c.json);
        auto msg = parse_error(c.json);
        CHECK_THAT(msg, Contains(c.message));
        CHECK_THAT(msg, Contains("SPEC"));
    }
}

TEST_CASE("deeply nested JSON is refused before it is parsed, and a zero with an exponent parses") {
    // 100,000 levels would overflow RapidJSON's recursive parser's stack
    const std::string deep = R"({"cluster": )" + std::string(100000, '[') + std::string(100000, ']') + "}";
    CHECK_THAT(parse_error(deep), Contains("SPEC: JSON nested more than 64 levels deep"));
    // 65 levels: refused; the limit counts arrays and objects, not brackets in strings
    CHECK_THAT(parse_error(std::string(65, '[') + std::string(65, ']')), Contains("nested more than 64"));
    CHECK_THAT(parse_error(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker[[[[", "index": 0}})"),
               !Contains("nested"));
    // "0E050" once reached undefined behaviour in RapidJSON's full-precision mode
    CHECK_THAT(parse_error(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0E050}})"),
               Contains("index"));
    // strict JSON whatever the translation unit included before the parser:
    // Cereal's JSON archive makes RapidJSON's default flags accept NaN and
    // Infinity (and parse in full precision), and the tests' separate build
    // compiles the library's code after <cereal/archives/json.hpp>
    for (const char* bad : {"NaN", "Infinity", "-Infinity"}) {
        INFO(bad);
        CHECK_THAT(parse_error(std::string(R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": )") +
                               bad + "}}"),
                   Contains("SPEC: invalid JSON at line 1 column "));
    }
}

TEST_CASE("from_env and from_file") {
    ::unsetenv("TYPEFLOW_CONFIG");
    ::unsetenv("TYPEFLOW_CONFIG_FILE");
    CHECK_THROWS_WITH(cluster_spec::from_env(), Contains("TYPEFLOW_CONFIG"));
    ::setenv("TYPEFLOW_CONFIG", good, 1);
    CHECK(cluster_spec::from_env().rank() == 2);
    ::setenv("TYPEFLOW_CONFIG", "{oops", 1);
    CHECK_THROWS_WITH(cluster_spec::from_env(), Contains("TYPEFLOW_CONFIG: invalid JSON"));
    ::unsetenv("TYPEFLOW_CONFIG");
    char path[] = "/tmp/typeflow-spec-XXXXXX";
    int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    ::close(fd);
    { std::ofstream(path) << good; }
    ::setenv("TYPEFLOW_CONFIG_FILE", path, 1);
    CHECK(cluster_spec::from_env().task.name() == "worker:1");
    { std::ofstream(path) << "{\"cluster\": 1}"; }
    CHECK_THROWS_WITH(cluster_spec::from_env(), Contains(std::string(path) + ": \"cluster\" must be an object"));
    std::remove(path);
    CHECK_THROWS_WITH(cluster_spec::from_file(path), Contains("cannot open cluster spec file"));
    ::unsetenv("TYPEFLOW_CONFIG_FILE");
    ::setenv("TYPEFLOW_SECRET", "env-secret", 1);
    CHECK(cluster_spec::parse(good).effective_secret() == "env-secret");
    ::unsetenv("TYPEFLOW_SECRET");
    CHECK(cluster_spec::parse(good).effective_secret() == "s3");
}

namespace {
std::string with_options(const std::string& options) {
    return R"({"cluster": {"worker": ["h:1"]}, "task": {"type": "worker", "index": 0}, "options": )" + options + "}";
}
} // namespace

TEST_CASE("every integer option is range-checked at both bounds when parsed") {
    // Values near INT64_MAX used to overflow the conversion to nanoseconds
    // (the transport then reported "timed out after -1 ms").
    struct O { const char* key; std::string min, max, below, above, range; };
    const std::string dmax = "2147483647", bmax = "1099511627776", smax = "18446744073709551615";
    const O opts[] = {
        {"heartbeat_timeout_ms", "1", dmax, "0", "2147483648", "1..2147483647 ms"},
        {"connect_timeout_ms", "1", dmax, "0", "2147483648", "1..2147483647 ms"},
        {"handshake_timeout_ms", "1", dmax, "0", "2147483648", "1..2147483647 ms"},
        {"op_timeout_ms", "1", dmax, "0", "2147483648", "1..2147483647 ms"},
        {"spin_wait_us", "0", dmax, "-1", "2147483648", "0..2147483647 us"},
        {"max_frame_bytes", "1", bmax, "0", "1099511627777", "1..1099511627776 bytes"},
        {"segment_bytes", "1", bmax, "0", "1099511627777", "1..1099511627776 bytes"},
        {"max_unexpected_bytes", "1", bmax, "0", "1099511627777", "1..1099511627776 bytes"},
        {"caller_read_bytes", "1", smax, "0", "18446744073709551616", "1..18446744073709551615 bytes"},
        {"send_thread_bytes", "1", smax, "0", "18446744073709551616", "1..18446744073709551615 bytes"},
    };
    for (const auto& o : opts) {
        INFO(o.key);
        const std::string k = std::string("\"") + o.key + "\": ";
        // segment_bytes may not exceed max_frame_bytes: move the other one along
        const std::string extra = std::string(o.key) == "segment_bytes"     ? ", \"max_frame_bytes\": " + bmax
                                  : std::string(o.key) == "max_frame_bytes" ? ", \"segment_bytes\": 1"
                                                                            : "";
        for (const auto& v : {o.min, o.max}) {
            const auto opt = cluster_spec::parse(with_options("{" + k + v + extra + "}")).options;
            const std::uint64_t want = std::stoull(v);
            const std::string key = o.key;
            if (key == "heartbeat_timeout_ms") CHECK(static_cast<std::uint64_t>(opt.heartbeat_timeout.count()) == want);
            if (key == "connect_timeout_ms") CHECK(static_cast<std::uint64_t>(opt.connect_timeout.count()) == want);
            if (key == "handshake_timeout_ms") CHECK(static_cast<std::uint64_t>(opt.handshake_timeout.count()) == want);
            if (key == "op_timeout_ms") CHECK(static_cast<std::uint64_t>(opt.op_timeout.count()) == want);
            if (key == "spin_wait_us") CHECK(static_cast<std::uint64_t>(opt.spin_wait.count()) == want);
            if (key == "max_frame_bytes") CHECK(opt.max_frame_bytes == want);
            if (key == "segment_bytes") CHECK(opt.segment_bytes == want);
            if (key == "max_unexpected_bytes") CHECK(opt.max_unexpected_bytes == want);
            if (key == "caller_read_bytes") CHECK(opt.caller_read_bytes == want);
            if (key == "send_thread_bytes") CHECK(opt.send_thread_bytes == want);
            CHECK_NOTHROW(check_options(opt, "parsed"));
        }
        const std::string name = std::string("SPEC: options.") + o.key;
        CHECK_THAT(parse_error(with_options("{" + k + o.below + "}")), EndsWith(name + " is " + o.below + ", outside the allowed range " + o.range));
        const std::string above = parse_error(with_options("{" + k + o.above + "}"));
        if (o.max == smax) // beyond 64 bits: RapidJSON reads it as a double
            CHECK_THAT(above, EndsWith(name + " is 1.8446744073709552e+19, outside the allowed range " + o.range));
        else
            CHECK_THAT(above, EndsWith(name + " is " + o.above + ", outside the allowed range " + o.range));
        if (o.max != smax) {
            CHECK_THAT(parse_error(with_options("{" + k + "9223372036854775807}")), EndsWith(name + " is 9223372036854775807, outside the allowed range " + o.range));
            CHECK_THAT(parse_error(with_options("{" + k + "18446744073709551615}")), EndsWith(name + " is 18446744073709551615, outside the allowed range " + o.range));
        }
        CHECK_THAT(parse_error(with_options("{" + k + "-9223372036854775808}")), EndsWith(name + " is -9223372036854775808, outside the allowed range " + o.range));
        CHECK_THAT(parse_error(with_options("{" + k + "1e300}")), EndsWith(name + " is 1.0000000000000001e+300, outside the allowed range " + o.range));
        CHECK_THAT(parse_error(with_options("{" + k + "1.5}")), EndsWith(name + " must be an integer in " + o.range + ", got 1.5"));
        CHECK_THAT(parse_error(with_options("{" + k + "1e3}")), EndsWith(name + " must be an integer in " + o.range + ", got 1000 (written with a fraction or exponent)"));
        CHECK_THAT(parse_error(with_options("{" + k + "\"5\"}")), EndsWith(name + " must be an integer in " + o.range + ", got a string"));
        CHECK_THAT(parse_error(with_options("{" + k + "null}")), EndsWith(name + " must be an integer in " + o.range + ", got null"));
    }
    CHECK_THAT(parse_error(with_options(R"({"segment_bytes": 1099511627776})")), EndsWith("SPEC: options.segment_bytes exceeds options.max_frame_bytes (1099511627776 > 67108864)"));
}

TEST_CASE("options set in code are held to the same ranges") {
    using std::chrono::milliseconds;
    using std::chrono::microseconds;
    CHECK_NOTHROW(check_options(transport_options{}, "defaults"));
    auto refused = [](void (*set)(transport_options&)) {
        transport_options o;
        set(o);
        try {
            check_options(o, "worker:0");
        } catch (const error& e) {
            std::string w = e.what(); // without typeflow::error's "typeflow: "
            return w.substr(w.find("worker:0"));
        }
        return std::string("<no error>");
    };
    CHECK(refused([](transport_options& o) { o.op_timeout = milliseconds::max(); }) ==
          "worker:0: transport_options.op_timeout is 9223372036854775807, outside the allowed range 1..2147483647 ms");
    CHECK(refused([](transport_options& o) { o.op_timeout = milliseconds(2147483648); }) ==
          "worker:0: transport_options.op_timeout is 2147483648, outside the allowed range 1..2147483647 ms");
    CHECK(refused([](transport_options& o) { o.heartbeat_timeout = milliseconds(0); }) ==
          "worker:0: transport_options.heartbeat_timeout is 0, outside the allowed range 1..2147483647 ms");
    CHECK(refused([](transport_options& o) { o.connect_timeout = milliseconds(-5); }) ==
          "worker:0: transport_options.connect_timeout is -5, outside the allowed range 1..2147483647 ms");
    CHECK(refused([](transport_options& o) { o.handshake_timeout = milliseconds::min(); }) ==
          "worker:0: transport_options.handshake_timeout is -9223372036854775808, outside the allowed range 1..2147483647 ms");
    CHECK(refused([](transport_options& o) { o.spin_wait = microseconds(-1); }) ==
          "worker:0: transport_options.spin_wait is -1, outside the allowed range 0..2147483647 us");
    CHECK(refused([](transport_options& o) { o.spin_wait = microseconds::max(); }) ==
          "worker:0: transport_options.spin_wait is 9223372036854775807, outside the allowed range 0..2147483647 us");
    CHECK(refused([](transport_options& o) { o.max_frame_bytes = 0; }) ==
          "worker:0: transport_options.max_frame_bytes is 0, outside the allowed range 1..1099511627776 bytes");
    CHECK(refused([](transport_options& o) { o.max_frame_bytes = std::numeric_limits<std::size_t>::max(); }) ==
          "worker:0: transport_options.max_frame_bytes is 18446744073709551615, outside the allowed range 1..1099511627776 bytes");
    CHECK(refused([](transport_options& o) { o.max_unexpected_bytes = (std::size_t{1} << 40) + 1; }) ==
          "worker:0: transport_options.max_unexpected_bytes is 1099511627777, outside the allowed range 1..1099511627776 bytes");
    CHECK(refused([](transport_options& o) { o.segment_bytes = 0; }) ==
          "worker:0: transport_options.segment_bytes is 0, outside the allowed range 1..1099511627776 bytes");
    CHECK(refused([](transport_options& o) { o.segment_bytes = o.max_frame_bytes + 1; }) ==
          "worker:0: transport_options.segment_bytes exceeds transport_options.max_frame_bytes (67108865 > 67108864)");
    CHECK(refused([](transport_options& o) { o.caller_read_bytes = 0; }) ==
          "worker:0: transport_options.caller_read_bytes is 0, outside the allowed range 1..18446744073709551615 bytes");
    CHECK(refused([](transport_options& o) { o.send_thread_bytes = 0; }) ==
          "worker:0: transport_options.send_thread_bytes is 0, outside the allowed range 1..18446744073709551615 bytes");
    // The bounds themselves are accepted.
    CHECK(refused([](transport_options& o) {
              o.op_timeout = o.heartbeat_timeout = o.connect_timeout = o.handshake_timeout = milliseconds(2147483647);
              o.spin_wait = microseconds(0);
              o.max_frame_bytes = o.segment_bytes = o.max_unexpected_bytes = std::size_t{1} << 40;
              o.caller_read_bytes = o.send_thread_bytes = std::numeric_limits<std::size_t>::max();
          }) == "<no error>");
}

TEST_CASE("addresses are normalised: one endpoint spelled two ways is one address") {
    CHECK(split_address("h:05000", "x").second == 5000);
    CHECK(split_address("h:0000000080", "x").second == 80); // leading zeros, however many
    CHECK_THROWS_WITH(split_address("h:000000", "x"), Contains("port out of range"));
    CHECK_THROWS_WITH(split_address("h:0065536", "x"), Contains("port out of range"));
    CHECK(canonical_address("127.0.0.1:05000", "x") == "127.0.0.1:5000");
    CHECK(canonical_address("127.000.000.001:80", "x") == "127.0.0.1:80"); // as the resolver (inet_aton) reads it
    CHECK(canonical_address("127.1:80", "x") == "127.0.0.1:80");
    CHECK(canonical_address("0x7f.0.0.1:80", "x") == "127.0.0.1:80");
    CHECK(canonical_address("[0:0:0:0:0:0:0:1]:80", "x") == "[::1]:80");
    CHECK(canonical_address("[FE80::0001]:80", "x") == "[fe80::1]:80");
    CHECK(canonical_address("[::ffff:127.0.0.1]:80", "x") == "127.0.0.1:80"); // IPv4-mapped: the same socket
    CHECK(canonical_address("Node-7.Example.COM.:080", "x") == "node-7.example.com:80");
    CHECK(canonical_address("deadbeef:80", "x") == "deadbeef:80"); // a name, not a number
    // localhost: the address the transport binds and connects to first.
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    addrinfo* res = nullptr;
    REQUIRE(::getaddrinfo("localhost", nullptr, &hints, &res) == 0);
    char buf[INET6_ADDRSTRLEN] = {};
    std::string lh;
    if (res->ai_family == AF_INET) {
        ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(res->ai_addr)->sin_addr, buf, sizeof buf);
        lh = buf;
    } else {
        ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(res->ai_addr)->sin6_addr, buf, sizeof buf);
        lh = "[" + std::string(buf) + "]";
    }
    ::freeaddrinfo(res);
    INFO("localhost resolves first to " << lh);
    CHECK(canonical_address("LocalHost:05000", "x") == lh + ":5000");

    auto spec = [](const std::string& cluster) { return "{\"cluster\": {" + cluster + "}, \"task\": {\"type\": \"worker\", \"index\": 0}}"; };
    struct C { std::string cluster, message; };
    const C refused[] = {
        {R"("worker": ["localhost:5000", ")" + lh + R"(:05000"])",
         "SPEC: address " + lh + ":5000 is used by two tasks: worker:0 (cluster.worker[0] \"localhost:5000\") and worker:1 "
         "(cluster.worker[1] \"" + lh + ":05000\")"},
        {R"("chief": ["127.0.0.1:5000"], "worker": ["127.0.0.1:5001"], "ps": ["127.0.0.1:5000"])",
         "SPEC: address 127.0.0.1:5000 is used by two tasks: chief:0 (cluster.chief[0] \"127.0.0.1:5000\") and ps:0 "
         "(cluster.ps[0] \"127.0.0.1:5000\")"},
        {R"("worker": ["Host.Example:7", "h:1", "host.example.:0007"])",
         "SPEC: address host.example:7 is used by two tasks: worker:0 (cluster.worker[0] \"Host.Example:7\") and worker:2 "
         "(cluster.worker[2] \"host.example.:0007\")"},
        {R"("worker": ["[::1]:7", "[0::1]:7"])",
         "SPEC: address [::1]:7 is used by two tasks: worker:0 (cluster.worker[0] \"[::1]:7\") and worker:1 (cluster.worker[1] \"[0::1]:7\")"},
        {R"("worker": ["127.0.0.1:7", "[::ffff:127.0.0.1]:7"])",
         "SPEC: address 127.0.0.1:7 is used by two tasks: worker:0 (cluster.worker[0] \"127.0.0.1:7\") and worker:1 "
         "(cluster.worker[1] \"[::ffff:127.0.0.1]:7\")"},
        {R"("worker": ["127.1:7", "127.0.0.1:7"])",
         "SPEC: address 127.0.0.1:7 is used by two tasks: worker:0 (cluster.worker[0] \"127.1:7\") and worker:1 (cluster.worker[1] \"127.0.0.1:7\")"},
    };
    for (const auto& c : refused) {
        INFO(c.cluster);
        CHECK_THAT(parse_error(spec(c.cluster)), EndsWith(c.message));
    }
    // Distinct endpoints stay distinct.
    for (const std::string cluster : {R"("worker": ["127.0.0.1:5000", "127.0.0.2:5000", "[::1]:5000", "127.0.0.1:5001"])",
                                      R"("worker": ["a.example:1", "b.example:1", "a.example:2"])"}) {
        INFO(cluster);
        CHECK_NOTHROW(cluster_spec::parse(spec(cluster)));
    }
    // The address is kept as written (the transport resolves it).
    CHECK(cluster_spec::parse(spec(R"("worker": ["127.0.0.1:05000"])")).worker[0] == "127.0.0.1:05000");
}

// ---------------------------------------------------------------------------
// Tasks started by Slurm's srun: recorded environments
// ---------------------------------------------------------------------------
namespace {
using env_map = std::map<std::string, std::string>;
// a reader of recorded environments (from_slurm, from_mpi) run on m
using env_reader = cluster_spec (*)(const std::function<const char*(const char*)>&);
cluster_spec from_map(env_reader read, const env_map& m) {
    return read([&](const char* k) -> const char* {
        const auto it = m.find(k);
        return it == m.end() ? nullptr : it->second.c_str();
    });
}
std::string error_of(env_reader read, const env_map& m) {
    try {
        from_map(read, m);
    } catch (const error& e) {
        return e.what();
    }
    return "no error";
}
cluster_spec slurm(const env_map& m) { return from_map(&cluster_spec::from_slurm, m); }
std::string slurm_error(const env_map& m) { return error_of(&cluster_spec::from_slurm, m); }
}  // namespace

TEST_CASE("Slurm node lists and task counts expand as Slurm writes them") {
    CHECK(expand_slurm_nodelist("node[01-04,07]") ==
          std::vector<std::string>{"node01", "node02", "node03", "node04", "node07"});
    CHECK(expand_slurm_nodelist("gpu3,cpu[9-11],login") ==
          std::vector<std::string>{"gpu3", "cpu9", "cpu10", "cpu11", "login"});
    CHECK(expand_slurm_nodelist("rack[1-2]-n[08-09]") ==
          std::vector<std::string>{"rack1-n08", "rack1-n09", "rack2-n08", "rack2-n09"});
    CHECK(expand_slurm_nodelist("c[098-101]") == std::vector<std::string>{"c098", "c099", "c100", "c101"});
    CHECK(expand_slurm_tasks_per_node("2(x3),1") == std::vector<int>{2, 2, 2, 1});
    CHECK(expand_slurm_tasks_per_node("4") == std::vector<int>{4});
    for (const char* bad : {"", "node[01-", "node01]", "node[4-2]", "node[a-b]", "n[[1]]", "[1-2]", "node[1-99999999]", "a,,b"}) {
        INFO(bad);
        if (std::string(bad) == "a,,b") {
            CHECK_THROWS_WITH(expand_slurm_nodelist(bad), Contains("empty host name"));
            continue;
        }
        CHECK_THROWS_AS(expand_slurm_nodelist(bad), error);
    }
    for (const char* bad : {"", "2(x", "2(x0)", "x", "2,", "-1"}) {
        INFO(bad);
        CHECK_THROWS_WITH(expand_slurm_tasks_per_node(bad), Contains("SLURM tasks per node"));
    }
}

TEST_CASE("a task started by srun gets the cluster from the Slurm environment") {
    // srun -N 3 -n 5 on node[07-08],gpu1: 2, 2, 1 tasks, block placement (the default)
    env_map e{{"SLURM_PROCID", "3"},
              {"SLURM_NTASKS", "5"},
              {"SLURM_JOB_NODELIST", "node[07-08],gpu1"},
              {"SLURM_TASKS_PER_NODE", "2(x2),1"},
              {"TYPEFLOW_PORT", "6000"}};
    cluster_spec s = slurm(e);
    CHECK(s.worker == std::vector<std::string>{"node07:6000", "node07:6001", "node08:6000", "node08:6001", "gpu1:6000"});
    CHECK(s.chief.empty());
    CHECK(s.rank() == 3);
    CHECK(s.task == task_id{role::worker, 3});
    // the step's own list wins over the job's; cyclic placement deals ranks out host by host
    e["SLURM_STEP_NODELIST"] = "node[07-08],gpu1";
    e["SLURM_STEP_TASKS_PER_NODE"] = "2(x2),1";
    e["SLURM_DISTRIBUTION"] = "cyclic:block";
    e["SLURM_JOB_NODELIST"] = "ignored[1-9]";
    s = slurm(e);
    CHECK(s.worker == std::vector<std::string>{"node07:6000", "node08:6000", "gpu1:6000", "node07:6001", "node08:6001"});
    // the default port, and one task
    s = slurm({{"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "1"}, {"SLURM_JOB_NODELIST", "n1"}, {"SLURM_TASKS_PER_NODE", "1"}});
    CHECK(s.worker == std::vector<std::string>{"n1:29500"});
}

TEST_CASE("a Slurm environment that is missing or inconsistent is an error naming the variable") {
    const env_map ok{{"SLURM_PROCID", "1"},
                     {"SLURM_NTASKS", "4"},
                     {"SLURM_JOB_NODELIST", "node[1-2]"},
                     {"SLURM_TASKS_PER_NODE", "2(x2)"}};
    CHECK_NOTHROW(slurm(ok));
    auto with = [&](const char* k, const char* v) {
        env_map m = ok;
        if (v) m[k] = v;
        else m.erase(k);
        return slurm_error(m);
    };
    CHECK_THAT(with("SLURM_NTASKS", nullptr), Contains("SLURM_NTASKS is not set"));
    CHECK_THAT(with("SLURM_PROCID", "four"), Contains("SLURM_PROCID is \"four\""));
    CHECK_THAT(with("SLURM_PROCID", "4"), Contains("SLURM_PROCID 4 is not below SLURM_NTASKS 4"));
    CHECK_THAT(with("SLURM_JOB_NODELIST", nullptr), Contains("SLURM_JOB_NODELIST is not set"));
    CHECK_THAT(with("SLURM_TASKS_PER_NODE", "2(x3)"), Contains("gives 3 hosts, SLURM_JOB_NODELIST \"node[1-2]\" 2"));
    CHECK_THAT(with("SLURM_TASKS_PER_NODE", "3,2"), Contains("places 5 tasks, SLURM_NTASKS is 4"));
    CHECK_THAT(with("SLURM_DISTRIBUTION", "plane=2"), Contains("only block and cyclic"));
    CHECK_THAT(with("TYPEFLOW_PORT", "0"), Contains("TYPEFLOW_PORT is \"0\""));
    CHECK_THAT(with("TYPEFLOW_PORT", "65535"), Contains("past port 65535"));
    // one host listed twice puts two tasks on one endpoint: the spec's own check refuses it
    CHECK_THAT(with("SLURM_JOB_NODELIST", "node[1,1]"), Contains("Slurm environment"));
}

// ---------------------------------------------------------------------------
// Tasks started by Open MPI's mpirun, and addresses reported at join ("*")
// ---------------------------------------------------------------------------
namespace {
cluster_spec mpi(const env_map& m) { return from_map(&cluster_spec::from_mpi, m); }
std::string mpi_error(const env_map& m) { return error_of(&cluster_spec::from_mpi, m); }
}  // namespace

TEST_CASE("a task started by mpirun gets the cluster from the Open MPI environment and MASTER_ADDR") {
    // mpirun -np 4 -x MASTER_ADDR=node07 -x MASTER_PORT=29400, as rank 2 sees it
    const env_map e{{"OMPI_COMM_WORLD_RANK", "2"},
                    {"OMPI_COMM_WORLD_SIZE", "4"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", "2"},
                    {"MASTER_ADDR", "node07"},
                    {"MASTER_PORT", "29400"}};
    cluster_spec s = mpi(e);
    CHECK(s.worker == std::vector<std::string>{"node07:29400", "*", "*", "*"});
    CHECK(s.task == task_id{role::worker, 2});
    CHECK(s.rank() == 2);
    CHECK(s.size() == 4);
    // an IPv6 MASTER_ADDR gets its brackets
    env_map v6 = e;
    v6["MASTER_ADDR"] = "fd00::7";
    CHECK(mpi(v6).worker[0] == "[fd00::7]:29400");
    // one task: only the chief
    CHECK(mpi({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "1"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", "5"}})
              .worker == std::vector<std::string>{"127.0.0.1:5"});
}

TEST_CASE("an Open MPI environment that is missing or malformed is an error naming the variable") {
    const env_map ok{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "29400"}};
    CHECK_NOTHROW(mpi(ok));
    auto with = [&](const char* k, const char* v) {
        env_map m = ok;
        if (v) m[k] = v;
        else m.erase(k);
        return mpi_error(m);
    };
    CHECK_THAT(with("MASTER_ADDR", nullptr), Contains("MASTER_ADDR is not set") && Contains("mpirun -x MASTER_ADDR"));
    CHECK_THAT(with("MASTER_PORT", nullptr), Contains("MASTER_PORT is not set"));
    CHECK_THAT(with("MASTER_PORT", "0"), Contains("MASTER_PORT is \"0\", not a port"));
    CHECK_THAT(with("MASTER_PORT", "70000"), Contains("MASTER_PORT is \"70000\""));
    CHECK_THAT(with("OMPI_COMM_WORLD_SIZE", nullptr), Contains("OMPI_COMM_WORLD_SIZE is not set"));
    CHECK_THAT(with("OMPI_COMM_WORLD_RANK", "x"), Contains("OMPI_COMM_WORLD_RANK is \"x\""));
    CHECK_THAT(with("OMPI_COMM_WORLD_RANK", "2"), Contains("OMPI_COMM_WORLD_RANK 2 is not below OMPI_COMM_WORLD_SIZE 2"));
    CHECK_THAT(with("MASTER_ADDR", "a:b:c]"), Contains("Open MPI environment"));
}

TEST_CASE("\"*\" addresses: any task but the chief, and never counted as a shared endpoint") {
    auto s = cluster_spec::parse(R"({"cluster": {"worker": ["127.0.0.1:5000", "*", "*"], "ps": ["*"]},
                                     "task": {"type": "ps", "index": 0}})");
    CHECK(s.address_of(3) == "*");
    CHECK(s.rank() == 3);
    CHECK_THROWS_WITH(cluster_spec::parse(R"({"cluster": {"worker": ["*", "127.0.0.1:5000"]}, "task": {"type": "worker", "index": 1}})"),
                      Contains("cluster.worker[0] is \"*\", but the chief's address must be given"));
    CHECK_THROWS_WITH(cluster_spec::parse(R"({"cluster": {"chief": ["*"], "worker": ["*"]}, "task": {"type": "worker", "index": 0}})"),
                      Contains("cluster.chief[0] is \"*\""));
    CHECK_THROWS_WITH(cluster_spec::parse(R"({"cluster": {"worker": ["h:1", "**"]}, "task": {"type": "worker", "index": 0}})"),
                      Contains("cluster.worker[1]"));
}
